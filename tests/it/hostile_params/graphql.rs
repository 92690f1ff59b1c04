//! The GraphQL half: the corpus, plus values only JSON can send, given to
//! every argument and input field of every field reachable from the query
//! root (found by introspection), as a variable or inline.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fmt::Write;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use vitrina::query::MAX_TEXT_LEN;

use super::{Corpus, Hostile, LONG_IN_BODY, SEED, World, corpus, report, run, world};
const INTROSPECTION: &str = r#"{ __schema { queryType { name } types { name kind
    fields { name args { name type { ...T } } type { ...T } }
    inputFields { name type { ...T } }
    enumValues { name } } } }
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }"#;

/// A type reference as GraphQL writes it (`[UUID!]!`).
fn written(t: &Value) -> String {
    match t["kind"].as_str() {
        Some("NON_NULL") => format!("{}!", written(&t["ofType"])),
        Some("LIST") => format!("[{}]", written(&t["ofType"])),
        _ => t["name"].as_str().expect("named type").to_owned(),
    }
}

fn named(t: &Value) -> &Value {
    match t["ofType"].is_object() {
        true => named(&t["ofType"]),
        false => t,
    }
}

/// An argument to aim at: `field(argument: $v)`, or
/// `field(argument: {input: $v})`, reached by `path` from the query root.
#[derive(Clone, Debug)]
struct Target {
    /// Selections down to the field's parent, e.g. `me { scrapeSessions(first: 1) { nodes {`.
    path: Vec<String>,
    field: Value,
    argument: Value,
    input: Option<Value>,
}

impl Target {
    fn name(&self) -> String {
        let mut name = format!("{}({}", self.field["name"], self.argument["name"]);
        if let Some(input) = &self.input {
            let _ = write!(name, ".{}", input["name"]);
        }
        name.replace('"', "") + ")"
    }

    /// The type the value is sent as.
    fn value_type(&self) -> &Value {
        match &self.input {
            Some(input) => &input["type"],
            None => &self.argument["type"],
        }
    }
}

/// Every argument of every field reachable from the query root by fields
/// without required arguments (connections read one row).
async fn targets(w: &World) -> (Vec<Target>, BTreeMap<String, Value>) {
    let (status, body) = graphql(w, &json!({ "query": INTROSPECTION }).to_string()).await;
    assert_eq!(status, 200, "{body}");
    let types: BTreeMap<String, Value> = body["data"]["__schema"]["types"]
        .as_array()
        .expect("types")
        .iter()
        .map(|t| (t["name"].as_str().expect("name").to_owned(), t.clone()))
        .collect();
    let root = body["data"]["__schema"]["queryType"]["name"]
        .as_str()
        .expect("query type")
        .to_owned();
    let mut targets = Vec::new();
    let mut seen = HashSet::from([root.clone()]);
    let mut queue = VecDeque::from([(root, Vec::<String>::new())]);
    while let Some((type_name, path)) = queue.pop_front() {
        for field in types[&type_name]["fields"].as_array().into_iter().flatten() {
            let args = field["args"].as_array().expect("args");
            for argument in args {
                let argument_type = &types[named(&argument["type"])["name"].as_str().unwrap()];
                let inputs = argument_type["inputFields"].as_array();
                match inputs {
                    Some(inputs) => targets.extend(inputs.iter().map(|input| Target {
                        path: path.clone(),
                        field: field.clone(),
                        argument: argument.clone(),
                        input: Some(input.clone()),
                    })),
                    None => targets.push(Target {
                        path: path.clone(),
                        field: field.clone(),
                        argument: argument.clone(),
                        input: None,
                    }),
                }
            }
            let next = named(&field["type"]);
            let next_name = next["name"].as_str().unwrap_or_default().to_owned();
            let required = args.iter().any(|a| a["type"]["kind"] == "NON_NULL");
            if next["kind"] == "OBJECT" && !required && seen.insert(next_name.clone()) {
                let name = field["name"].as_str().expect("field name");
                let first = args.iter().any(|a| a["name"] == "first");
                let mut path = path.clone();
                path.push(match first {
                    true => format!("{name}(first: 1) {{"),
                    false => format!("{name} {{"),
                });
                queue.push_back((next_name, path));
            }
        }
    }
    (targets, types)
}

/// A valid value of a required argument not under test.
fn required_value(
    w: &World,
    field: &Value,
    argument: &Value,
    types: &BTreeMap<String, Value>,
) -> String {
    let t = named(&argument["type"]);
    let name = t["name"].as_str().unwrap_or_default();
    match t["kind"].as_str() {
        Some("ENUM") => types[name]["enumValues"][0]["name"]
            .as_str()
            .expect("a value")
            .to_owned(),
        Some("INPUT_OBJECT") => "{}".into(),
        _ if name == "UUID" && named(&field["type"])["name"] == "ScrapeSession" => {
            format!("\"{}\"", w.session)
        }
        _ if name == "UUID" => format!("\"{}\"", w.product),
        _ if name == "String" && argument["name"] == "currency" => "\"RUB\"".into(),
        _ if name == "DateTime" => "\"2026-01-01T00:00:00Z\"".into(),
        _ => panic!("a required argument this test cannot fill: {argument}"),
    }
}

/// A hostile GraphQL value: JSON text for a variable, the literal to write
/// it inline (when it has one), and whether it is text no database may be
/// asked to compare.
#[derive(Clone, Debug)]
struct GqlValue {
    json: String,
    literal: Option<String>,
    unstorable: bool,
}

impl GqlValue {
    fn text(text: &str) -> GqlValue {
        GqlValue {
            json: serde_json::to_string(text).expect("a string"),
            literal: (text.len() < 1024).then(|| graphql_string(text)),
            unstorable: text.contains('\0') || text.chars().count() > MAX_TEXT_LEN,
        }
    }

    /// JSON text, written the same way inline when `inline`.
    fn json(json: &str, inline: bool) -> GqlValue {
        GqlValue {
            json: json.into(),
            literal: inline.then(|| json.into()),
            unstorable: false,
        }
    }
}

/// The REST corpus's text, 64 KiB strings, and values only JSON can send.
fn gql_values(corpus: &Corpus<Hostile>) -> Corpus<GqlValue> {
    let texts = |values: &[Hostile]| -> Vec<GqlValue> {
        values
            .iter()
            .filter_map(Hostile::text)
            .map(GqlValue::text)
            .collect()
    };
    let mut core = texts(&corpus.core);
    core.push(GqlValue::text(&"a".repeat(LONG_IN_BODY)));
    core.push(GqlValue::text(&format!(
        "{}\0",
        "я".repeat(LONG_IN_BODY / 2)
    )));
    // What no string type can hold: lone surrogates.
    core.extend([r#""\ud800""#, r#""a\udbff""#].map(|j| GqlValue::json(j, true)));
    // Numbers past every edge, and shapes of every other kind.
    core.extend(
        [
            "-1",
            "1.5",
            "1e400",
            "2147483648",
            "-2147483649",
            "18446744073709551616",
        ]
        .map(|j| GqlValue::json(j, true)),
    );
    core.extend(["[\"a\\u0000\"]", "{\"a\": \"\\u0000\"}"].map(|j| GqlValue::json(j, false)));
    let mut more = texts(&corpus.more);
    more.push(GqlValue::json(r#""\udc00abc""#, true));
    more.extend(
        [
            "0",
            "-0",
            "-0.0",
            "1",
            "1e3",
            "-1e400",
            "2147483647",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615",
            "340282366920938463463374607431768211456",
        ]
        .map(|j| GqlValue::json(j, true)),
    );
    more.extend(["true", "null", "[]", "{}"].map(|j| GqlValue::json(j, false)));
    Corpus { core, more }
}

/// A GraphQL string literal.
fn graphql_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The body of one request: the value as a variable, or inline.
fn gql_body(
    w: &World,
    target: &Target,
    value: &GqlValue,
    inline: bool,
    types: &BTreeMap<String, Value>,
) -> String {
    let tested = target.argument["name"].as_str().expect("name");
    let slot = match (inline, &value.literal) {
        (true, Some(literal)) => literal.clone(),
        _ => "$v".into(),
    };
    let mut args: Vec<String> = Vec::new();
    for argument in target.field["args"].as_array().expect("args") {
        let name = argument["name"].as_str().expect("name");
        if name == tested {
            let given = match &target.input {
                Some(input) => format!("{{{}: {slot}}}", input["name"].as_str().expect("name")),
                None => slot.clone(),
            };
            args.push(format!("{name}: {given}"));
        } else if argument["type"]["kind"] == "NON_NULL" {
            args.push(format!(
                "{name}: {}",
                required_value(w, &target.field, argument, types)
            ));
        }
    }
    let field = target.field["name"].as_str().expect("name");
    let composite = matches!(
        named(&target.field["type"])["kind"].as_str(),
        Some("OBJECT" | "INTERFACE" | "UNION")
    );
    let mut selection = format!(
        "{field}({}){}",
        args.join(", "),
        if composite { " { __typename }" } else { "" }
    );
    for step in target.path.iter().rev() {
        selection = format!("{step} {selection} }}");
    }
    match slot.as_str() {
        "$v" => {
            let query = format!(
                "query Hostile($v: {}) {{ {selection} }}",
                written(target.value_type())
            );
            format!(
                "{{\"query\": {}, \"variables\": {{\"v\": {}}}}}",
                serde_json::to_string(&query).expect("a string"),
                value.json
            )
        }
        _ => json!({ "query": format!("{{ {selection} }}") }).to_string(),
    }
}

async fn graphql(w: &World, body: &str) -> (u16, Value) {
    let response = w
        .app
        .client
        .post(w.app.url("/graphql"))
        .bearer_auth(&w.key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("an answer (the connection was dropped?)");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// What is wrong with the answer, if anything.
fn check_graphql(status: u16, body: &Value, target: &Target, value: &GqlValue) -> Option<String> {
    if status >= 500 {
        return Some(format!("{status}: {body}"));
    }
    let Some(errors) = body.get("errors") else {
        return match (status, body.get("data")) {
            (200, Some(_)) if !value.unstorable || !takes_text(target) => None,
            _ => Some(format!("{status}, no errors: {body}")),
        };
    };
    let codes: Vec<&str> = errors
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            e["extensions"]["code"]
                .as_str()
                .filter(|_| e["message"].is_string())
                .unwrap_or("<none>")
        })
        .collect();
    if codes.is_empty() || codes.iter().any(|c| !DOCUMENTED_GRAPHQL_CODES.contains(c)) {
        return Some(format!("{status}, undocumented errors: {body}"));
    }
    if value.unstorable && takes_text(target) && !codes.contains(&"INVALID_PARAMETER") {
        return Some(format!("expected INVALID_PARAMETER, got {status}: {body}"));
    }
    None
}

/// Codes a GraphQL error may carry (DECISIONS, and async-graphql's own
/// refusals as `graphql/request/error_codes.rs` names them).
const DOCUMENTED_GRAPHQL_CODES: &[&str] = &[
    "INVALID_PARAMETER",
    "MISSING_PARAMETER",
    "NOT_FOUND",
    "GRAPHQL_VALIDATION_FAILED",
    "QUERY_TOO_COMPLEX",
    "BAD_REQUEST",
];

/// Whether the argument is a `String` or `ID`, which must refuse text no
/// database can take.
fn takes_text(target: &Target) -> bool {
    matches!(
        named(target.value_type())["name"].as_str(),
        Some("String" | "ID")
    )
}
// ---------------------------------------------------------------- the test

#[tokio::test]
async fn every_graphql_argument_refuses_hostile_values_with_a_documented_error() {
    let w = world().await;
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let values = gql_values(&corpus(&w, &mut rng));
    let (targets, types) = targets(&w).await;
    let root_arguments = targets.iter().filter(|t| t.path.is_empty()).count();
    assert!(root_arguments >= 20, "the query root's arguments are found");
    let mut cases = Vec::new();
    for target in &targets {
        for value in values.for_one(&mut rng) {
            let inline = value.literal.is_some() && rng.random_ratio(1, 3);
            let body = gql_body(&w, target, value, inline, &types);
            cases.push((target, value, body));
        }
    }
    let total = cases.len();
    let failures = run(cases, |(target, value, body)| {
        let w = &w;
        async move {
            let (status, answer) = graphql(w, &body).await;
            check_graphql(status, &answer, target, value).map(|failure| {
                let shown: String = value.json.chars().take(60).collect();
                format!("{} = {shown}: {failure}", target.name())
            })
        }
    })
    .await;
    report("GraphQL", total, &failures);
}
