//! Every field of every object type, asked alone, answers what it answers
//! among all the fields of its type. A page statement reads only the
//! columns its query shows (`query::children::Shows`); a field declared
//! with the wrong columns would answer a placeholder when asked alone.
//! The fields, their types and the paths to them come from the schema's
//! introspection, not from a list kept here: only the values of required
//! arguments do.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use vitrina::limits::Limits;
use vitrina::seed::SeedOptions;

use crate::helpers::TestApp;
use crate::helpers::graphql;

/// Object fields followed from the root, at most; deep enough for a
/// seller's products under a session's submissions.
const MAX_DEPTH: usize = 7;

const SCHEMA: &str = r#"{ __schema { queryType { name } subscriptionType { name } types { name kind
  fields { name args { name type { ...T } } type { ...T } } } } }
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }"#;

/// An object type's fields: leaves (scalars and enums) and objects.
#[derive(Default)]
struct Object {
    leaves: Vec<String>,
    /// (field, its object type, its arguments to pass)
    objects: Vec<(String, String, Option<String>)>,
}

/// A path from the root: each step a field with its arguments.
type Path = Vec<(String, Option<String>)>;

#[tokio::test]
async fn every_field_asked_alone_answers_as_among_all_fields_of_its_type() {
    let app = TestApp::spawn_with(Limits {
        rate_per_minute: u32::MAX,
        daily_quota: i64::MAX,
        db_time_per_minute_ms: 0,
        db_time_burst_ms: 1,
    })
    .await;
    let options = SeedOptions {
        demo: true,
        products: 12,
        seed: 7,
    };
    vitrina::seed::seed(&app.db, &options).await.expect("seed");
    let key = app.key(vitrina::seed::DEMO_ACCOUNT).await;

    let arguments = required_arguments(&app, &key).await;
    let schema = graphql::data(&app, &key, SCHEMA, json!({})).await;
    let (root, objects) = object_types(&schema["__schema"], &arguments);

    let mut paths = Vec::new();
    walk(&objects, &root, &mut vec![(root.clone(), None)], &mut paths);
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut shown: BTreeSet<(String, String)> = BTreeSet::new();
    for (path, type_name) in &paths {
        let leaves = &objects[type_name].leaves;
        if leaves.is_empty() {
            continue;
        }
        let all = graphql::data(&app, &key, &document(path, leaves), json!({})).await;
        let found = instances(&all, &steps(path));
        if found.is_empty() {
            continue;
        }
        reached.insert(type_name);
        for leaf in leaves {
            if found.iter().any(|object| !empty(&object[leaf])) {
                shown.insert((type_name.clone(), leaf.clone()));
            }
            let alone = graphql::data(
                &app,
                &key,
                &document(path, std::slice::from_ref(leaf)),
                json!({}),
            )
            .await;
            assert_eq!(
                alone,
                only(&all, &steps(path), leaf),
                "{type_name}.{leaf} asked alone at {}",
                document(path, std::slice::from_ref(leaf))
            );
        }
    }

    // The test proves something only where the data shows values.
    let unreached: Vec<&String> = objects
        .iter()
        .filter(|(name, object)| !object.leaves.is_empty() && !reached.contains(name.as_str()))
        .map(|(name, _)| name)
        .collect();
    assert!(unreached.is_empty(), "no instance reached of {unreached:?}");
    let never_shown: Vec<String> = objects
        .iter()
        .flat_map(|(name, object)| object.leaves.iter().map(move |l| (name.clone(), l.clone())))
        .filter(|field| !shown.contains(field))
        .map(|(name, leaf)| format!("{name}.{leaf}"))
        .collect();
    assert!(
        never_shown.iter().all(|f| RARELY_SET.contains(&f.as_str())),
        "fields never answered with a value: {never_shown:?}"
    );
}

/// Fields the demo data leaves empty everywhere: flags it never raises,
/// and the first pages this test reads. Every other field is seen with a
/// value.
const RARELY_SET: &[&str] = &[
    "PageInfo.hasPreviousPage",
    "Product.priceFlagged",
    "SessionStats.rejected",
    "SessionStats.flagged",
];

/// Values for the required arguments, by `Type.field.argument`: rows of the
/// seeded data rich enough to show every field.
async fn required_arguments(app: &TestApp, key: &str) -> BTreeMap<String, String> {
    let found = graphql::data(
        app,
        key,
        "{ products(first: 100) { nodes { id globalId marketplace specialPrices { min }
           translations { language } priceHistory(first: 1) { nodes { price } }
           seller { sellerId } } }
           me { scrapeSessions(first: 100) { nodes { id stats { merged } } } } }",
        json!({}),
    )
    .await;
    let products = found["products"]["nodes"].as_array().expect("products");
    let product = products
        .iter()
        .find(|p| {
            [
                &p["specialPrices"],
                &p["translations"],
                &p["priceHistory"]["nodes"],
            ]
            .iter()
            .all(|list| !empty(list))
        })
        .expect("a product with special prices, translations and history");
    let sessions = found["me"]["scrapeSessions"]["nodes"]
        .as_array()
        .expect("sessions");
    let session = sessions
        .iter()
        .find(|s| s["stats"]["merged"].as_i64() > Some(0))
        .expect("a session with merged products");
    let (id, marketplace) = (&product["id"], &product["marketplace"]);
    let seller = &product["seller"]["sellerId"];
    let marketplace = marketplace.as_str().expect("marketplace");
    [
        ("QueryRoot.product.id", id.to_string()),
        ("QueryRoot.priceHistory.productId", id.to_string()),
        (
            "QueryRoot.sellers.lookup",
            format!("{{ marketplace: {marketplace}, sellerId: {seller} }}"),
        ),
        ("QueryRoot.categories.marketplace", marketplace.to_owned()),
        ("Me.scrapeSession.id", session["id"].to_string()),
        ("QueryRoot.node.id", product["globalId"].to_string()),
        ("QueryRoot.nodes.ids", format!("[{}]", product["globalId"])),
        ("Product.priceSeries.currency", "\"RUB\"".to_owned()),
        ("Product.priceSeries.bucket", "DAY".to_owned()),
        ("QueryRoot.productStats.currency", "\"RUB\"".to_owned()),
        ("QueryRoot.priceIndex.currency", "\"RUB\"".to_owned()),
        ("QueryRoot.priceIndex.bucket", "DAY".to_owned()),
        ("QueryRoot.priceMovers.currency", "\"RUB\"".to_owned()),
        // Before every observation: each product moved from its first price.
        (
            "QueryRoot.priceMovers.since",
            "\"2000-01-01T00:00:00Z\"".to_owned(),
        ),
        ("QueryRoot.priceMovers.direction", "DROP".to_owned()),
    ]
    .into_iter()
    .map(|(at, value)| (at.to_owned(), value))
    .collect()
}

/// The caller's limits (`rateLimit`, `quota`): no columns, and values that
/// every request changes, so never the same asked twice.
const BUDGET: &str = "Allowance";

/// The root's name and every object type's fields, from introspection
/// (the subscription root aside, its fields are streams; and the budget).
fn object_types(
    schema: &Value,
    arguments: &BTreeMap<String, String>,
) -> (String, BTreeMap<String, Object>) {
    let root = schema["queryType"]["name"]
        .as_str()
        .expect("root")
        .to_owned();
    let mut objects = BTreeMap::new();
    for t in schema["types"].as_array().expect("types") {
        let name = t["name"].as_str().expect("type name");
        if t["kind"] != "OBJECT"
            || name.starts_with("__")
            || schema["subscriptionType"]["name"] == name
            || name == BUDGET
        {
            continue;
        }
        let mut object = Object::default();
        for field in t["fields"].as_array().expect("fields") {
            let field_name = field["name"].as_str().expect("field name").to_owned();
            let (kind, type_name) = named(&field["type"]);
            if type_name == BUDGET {
                continue;
            }
            let mut args = Vec::new();
            for arg in field["args"].as_array().expect("args") {
                let arg_name = arg["name"].as_str().expect("arg name");
                let at = format!("{name}.{field_name}.{arg_name}");
                match (
                    arguments.get(&at),
                    arg["type"]["kind"] == "NON_NULL",
                    arg_name,
                ) {
                    (Some(value), _, _) => args.push(format!("{arg_name}: {value}")),
                    (None, true, _) => panic!("give {at} a value in required_arguments"),
                    // Connections read a short page, the shape dashboards ask.
                    (None, false, "first") => args.push("first: 2".into()),
                    (None, false, _) => {}
                }
            }
            let args = (!args.is_empty()).then(|| args.join(", "));
            match kind.as_str() {
                "SCALAR" | "ENUM" if args.is_none() => object.leaves.push(field_name),
                "OBJECT" => object.objects.push((field_name, type_name, args)),
                _ => {}
            }
        }
        objects.insert(name.to_owned(), object);
    }
    (root, objects)
}

/// The kind and name of a type reference, through lists and non-nulls.
fn named(t: &Value) -> (String, String) {
    match t["name"].as_str() {
        Some(name) => (
            t["kind"].as_str().expect("kind").to_owned(),
            name.to_owned(),
        ),
        None => named(&t["ofType"]),
    }
}

/// Every path from `at` within [`MAX_DEPTH`] (a field name at most twice
/// on one path: a product's seller's products, not further), with its type.
fn walk(
    objects: &BTreeMap<String, Object>,
    at: &str,
    path: &mut Path,
    out: &mut Vec<(Path, String)>,
) {
    if path.len() > MAX_DEPTH {
        return;
    }
    for (field, type_name, args) in &objects[at].objects {
        let seen = path.iter().filter(|(f, _)| f == field).count();
        if seen >= 2 {
            continue;
        }
        path.push((field.clone(), args.clone()));
        out.push((path.clone(), type_name.clone()));
        walk(objects, type_name, path, out);
        path.pop();
    }
}

/// The field names of a path below the root.
fn steps(path: &Path) -> Vec<&str> {
    path[1..].iter().map(|(f, _)| f.as_str()).collect()
}

/// The query of `leaves` at the end of `path`.
fn document(path: &Path, leaves: &[String]) -> String {
    let mut text = String::from("{ ");
    for (field, args) in &path[1..] {
        text.push_str(field);
        if let Some(args) = args {
            text.push_str(&format!("({args})"));
        }
        text.push_str(" { ");
    }
    text.push_str(&leaves.join(" "));
    text.push_str(&" }".repeat(path.len()));
    text
}

/// Every object at the end of `path` in an answer.
fn instances<'a>(value: &'a Value, path: &[&str]) -> Vec<&'a Value> {
    match (value, path) {
        (Value::Array(items), _) => items.iter().flat_map(|v| instances(v, path)).collect(),
        (Value::Null, _) => Vec::new(),
        (_, []) => vec![value],
        (_, [first, rest @ ..]) => instances(&value[first], rest),
    }
}

/// The answer to `path { leaf }` within the answer to `path { all leaves }`.
fn only(value: &Value, path: &[&str], leaf: &str) -> Value {
    match (value, path) {
        (Value::Array(items), _) => items.iter().map(|v| only(v, path, leaf)).collect(),
        (Value::Null, _) => Value::Null,
        (_, []) => json!({ leaf: value[leaf] }),
        (_, [first, rest @ ..]) => json!({ *first: only(&value[first], rest, leaf) }),
    }
}

/// Whether a value is one a placeholder would also give.
fn empty(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => {
            s.is_empty()
                || s == "00000000-0000-0000-0000-000000000000"
                || s.starts_with("1970-01-01T00:00:00")
        }
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        Value::Bool(true) => false,
    }
}
