//! GraphQL (`/graphql`): the same answers as REST v1 over the same data (every
//! filter, ordering, paging edge, tenant isolation, 404s and validation
//! errors), Relay cursor paging without gaps or repeats, a constant number of
//! SQL statements per query, depth and complexity limits, the limits shared
//! with REST (rate limit, daily quota), authentication, GraphQL over HTTP
//! (media types, GET, batching), GraphiQL, and the checked-in schema.

use std::collections::BTreeSet;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use entity::{Marketplace, SubmissionStatus, TrustStatus, quota_usage, seller};
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::config::{GraphqlConfig, Settings};
use vitrina::limits::Limits;

use crate::fixtures::{
    self, Observation, ProductSpec, insert_current_price, insert_observation, insert_product,
    insert_seller, insert_session, insert_special_price, insert_submission, observation, product,
    strings,
};
use crate::helpers::{TestApp, test_start};

// ---------------------------------------------------------------- helpers

const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";

/// POSTs `query` with `variables` (as `key`, or without `Authorization` when
/// `None`); returns the HTTP status and the JSON body.
async fn post(app: &TestApp, key: Option<&str>, query: &str, variables: Value) -> (u16, Value) {
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": query, "variables": variables }));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let body = response.json().await.expect("JSON body");
    (status, body)
}

/// The `data` of a query that must succeed without errors.
async fn data(app: &TestApp, key: &str, query: &str, variables: Value) -> Value {
    let (status, body) = post(app, Some(key), query, variables).await;
    assert_eq!(status, 200, "{query}\n{body}");
    assert!(body.get("errors").is_none(), "{query}\n{body}");
    body["data"].clone()
}

/// The one error of a query that must fail during execution (HTTP 200 with
/// `application/json`); checks its message and returns `extensions.code`.
async fn error_code(app: &TestApp, key: &str, query: &str, variables: Value) -> String {
    let (status, body) = post(app, Some(key), query, variables).await;
    assert_eq!(status, 200, "{query}\n{body}");
    only_error_code(&body)
}

fn only_error_code(body: &Value) -> String {
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{body}");
    assert_plain_sentence(errors[0]["message"].as_str().expect("message"));
    errors[0]["extensions"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A message is one plain sentence and names nothing internal.
fn assert_plain_sentence(message: &str) {
    assert!(message.ends_with('.'), "one sentence: {message:?}");
    for leak in [
        "::",
        "`",
        "\n",
        "Err(",
        "Error",
        "error returned",
        "sqlx",
        "SQL",
        "SELECT",
        "table",
        "panicked",
        "serde",
    ] {
        assert!(!message.contains(leak), "{leak:?} leaks in {message:?}");
    }
}

/// The REST error code of a failed GET.
async fn rest_error(app: &TestApp, key: &str, path: &str) -> (u16, String) {
    let response = app.get_as(key, path).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("JSON error body");
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
    )
}

fn encoded(params: &[(&str, String)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())))
        .finish()
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Wire values of our enums that GraphQL writes in upper case.
const ENUM_FIELDS: &[&str] = &[
    "marketplace",
    "trust_status",
    "user_auth_status",
    "status",
    "submission_status",
];

/// REST query parameters as a GraphQL input object (camelCase names, enum
/// values upper-cased).
fn input(params: &[(&str, String)]) -> Value {
    let mut object = serde_json::Map::new();
    for (name, value) in params {
        let value = if ENUM_FIELDS.contains(name) {
            value.to_uppercase()
        } else {
            value.clone()
        };
        object.insert(camel(name), Value::String(value));
    }
    Value::Object(object)
}

/// A GraphQL answer written with REST names (aliases) in REST's form: enum
/// values lower-cased, and a product's seller code inside its seller.
fn as_rest(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(as_rest).collect()),
        Value::Object(object) => {
            let mut out = serde_json::Map::new();
            for (name, value) in object {
                let value = match value {
                    Value::String(s) if ENUM_FIELDS.contains(&name.as_str()) => {
                        Value::String(s.to_lowercase())
                    }
                    other => as_rest(other),
                };
                out.insert(name, value);
            }
            if let Some(code) = out.remove("seller_code")
                && let Some(seller) = out.get_mut("seller").and_then(Value::as_object_mut)
            {
                seller.insert("code".into(), code);
            }
            Value::Object(out)
        }
        other => other,
    }
}

/// A price observation, a product and a seller selected with REST's names.
const REST_PRICE: &str = r#"
fragment RestPrice on PriceObservation {
  country_code: countryCode region_code: regionCode user_auth_status: userAuthStatus
  price old_price: oldPrice currency stock_status: stockStatus
  stock_quantity: stockQuantity recorded_at: recordedAt
}"#;
const REST_PRODUCT: &str = r#"
fragment RestProduct on Product {
  id marketplace external_id: externalId url name brand category_path: categoryPath
  attributes image_cover: imageCover image_gallery: imageGallery video_cover: videoCover
  video_gallery: videoGallery seller { id: sellerId name } seller_code: sellerCode
  trust_status: trustStatus price_flagged: priceFlagged prices { ...RestPrice }
  special_price: specialPrices {
    country_code: countryCode region_code: regionCode user_auth_status: userAuthStatus min max
  }
  stats first_seen_language: firstSeenLanguage default_language: defaultLanguage
  translations { language name category_path: categoryPath attributes updated_at: updatedAt }
  first_seen_at: firstSeenAt last_seen_at: lastSeenAt
}"#;
const REST_SELLER: &str = r#"
fragment RestSeller on Seller {
  marketplace seller_id: sellerId name tin psrn address url
  stats { rating reg_date: regDate items_sold: itemsSold reviews_count: reviewsCount }
  product_count: productCount first_seen_at: firstSeenAt last_seen_at: lastSeenAt
}"#;

/// `query` with the REST-shaped fragments it uses (GraphQL refuses unused ones).
fn with_shapes(query: &str) -> String {
    let mut out = query.to_owned();
    if query.contains("...RestProduct") {
        out.push_str(REST_PRODUCT);
    }
    if query.contains("...RestProduct") || query.contains("...RestPrice") {
        out.push_str(REST_PRICE);
    }
    if query.contains("...RestSeller") {
        out.push_str(REST_SELLER);
    }
    out
}

fn nodes(connection: &Value) -> Vec<Value> {
    connection["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["node"].clone())
        .collect()
}

fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["id"].as_str().expect("id").to_owned())
        .collect()
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// The app over the demo dataset, with a key of the demo account.
/// This file's demo data: the same seed in every test.
async fn demo_app(products: u64) -> (TestApp, String) {
    TestApp::demo(products, 7).await
}

/// Rows charged to the daily quota so far, over every account.
async fn quota_used(app: &TestApp) -> i64 {
    quota_usage::Entity::find()
        .all(&app.db)
        .await
        .expect("quota usage")
        .iter()
        .map(|u| u.rows_used)
        .sum()
}

// ---------------------------------------------------------------- parity

const PRODUCT_IDS: &str = r#"query($filter: ProductFilterInput, $first: Int) {
  products(filter: $filter, first: $first) { pageInfo { hasNextPage } edges { node { id } } }
}"#;

/// Ids from REST `/v1/products` and from GraphQL `products` for the same filter.
async fn product_ids_both_ways(
    app: &TestApp,
    key: &str,
    params: &[(&str, String)],
) -> (Vec<String>, Vec<String>) {
    let query = encoded(params);
    let rest = app
        .json_as(key, &format!("/v1/products?{query}&page_size=500"))
        .await;
    assert_eq!(
        rest["meta"]["has_more"], false,
        "{query}: one page holds all"
    );
    let rest_ids = ids(rest["data"].as_array().expect("data"));
    let graphql = data(
        app,
        key,
        PRODUCT_IDS,
        json!({ "filter": input(params), "first": 500 }),
    )
    .await;
    assert_eq!(graphql["products"]["pageInfo"]["hasNextPage"], false);
    (rest_ids, ids(&nodes(&graphql["products"])))
}

/// The demo dataset plus products for the edge cases the generator does not
/// make (Cyrillic brands, messy URLs, translated names).
async fn parity_app() -> (TestApp, String) {
    let (app, key) = demo_app(200).await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "7001")).await;
    for (external_id, brand, status) in [
        ("milk-1", "Простоквашино", TrustStatus::Verified),
        ("milk-2", "простоквашино", TrustStatus::Unverified),
        ("milk-3", "Простоквашино Плюс", TrustStatus::Verified),
    ] {
        insert_product(
            &app.db,
            &shop,
            ProductSpec {
                marketplace: Marketplace::Ozon,
                brand: brand.into(),
                trust_status: status,
                url: format!("https://www.ozon.ru/product/{external_id}/"),
                ..product(external_id)
            },
        )
        .await;
    }
    insert_product(
        &app.db,
        &shop,
        ProductSpec {
            marketplace: Marketplace::Ozon,
            name: "Чайник электрический".into(),
            category_path: strings(&["Бытовая техника", "Чайники"]),
            translations: vec![(
                "en".into(),
                "Electric Kettle".into(),
                strings(&["Home Appliances", "Kettles"]),
            )],
            ..product("kettle")
        },
    )
    .await;
    (app, key)
}

/// A demo product with an English translation and a three-level category.
async fn translated_product(app: &TestApp, key: &str) -> Value {
    let all = app.json_as(key, "/v1/products?page_size=500").await;
    all["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|p| {
            p["category_path"].as_array().map(Vec::len) == Some(3)
                && p["translations"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["language"] == "en"))
        })
        .expect("a translated product in the demo data")
        .clone()
}

fn messy_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("absolute URL");
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    format!(
        "{}://{}/{path}/?utm_source=newsletter&b=2#reviews",
        scheme.to_uppercase(),
        host.to_uppercase()
    )
}

#[tokio::test]
async fn every_product_filter_gives_the_same_ids_in_the_same_order_as_rest() {
    let (app, key) = parity_app().await;
    let p = translated_product(&app, &key).await;
    let text = |v: &Value| v.as_str().expect("a string").to_owned();
    let en = p["translations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["language"] == "en")
        .unwrap()
        .clone();
    let marketplace = text(&p["marketplace"]);
    let code = text(&p["seller"]["code"]);
    let code_part: String = code
        .chars()
        .skip(1)
        .take(5)
        .collect::<String>()
        .to_lowercase();
    let en_word = text(&en["name"])
        .split_whitespace()
        .next()
        .unwrap()
        .to_uppercase();
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![],
        vec![("marketplace", "ozon".into())],
        vec![("marketplace", "yandex_market".into())],
        vec![("seller_id", text(&p["seller"]["id"]))],
        vec![
            ("seller_id", text(&p["seller"]["id"])),
            ("marketplace", marketplace.clone()),
        ],
        vec![("seller_code", code.clone())],
        vec![("seller_code_contains", code_part)],
        vec![("external_id", text(&p["external_id"]))],
        vec![
            ("external_id", text(&p["external_id"])),
            ("marketplace", marketplace.clone()),
        ],
        vec![("url", messy_url(&text(&p["url"])))],
        vec![(
            "url",
            "HTTPS://WWW.OZON.RU/product/milk-1/?utm=1#top".into(),
        )],
        vec![("category", text(&p["category_path"][1]))],
        vec![("category", text(&p["category_path"][0]).to_uppercase())],
        vec![("category", text(&en["category_path"][2]).to_lowercase())],
        vec![("category", "kettles".into())],
        vec![("brand", "ПРОСТОКВАШИНО".into())],
        vec![("brand", text(&p["brand"]).to_lowercase())],
        vec![("name_contains", en_word)],
        vec![("name_contains", "ELECTRIC kettle".into())],
        vec![("name_contains", "ЧАЙНИК".into())],
        vec![("trust_status", "verified".into())],
        vec![("trust_status", "flagged".into())],
        vec![("trust_status", "unverified".into())],
        vec![
            ("brand", text(&p["brand"])),
            ("trust_status", text(&p["trust_status"])),
            ("marketplace", marketplace.clone()),
        ],
        vec![
            ("brand", "простоквашино".into()),
            ("trust_status", "verified".into()),
        ],
    ];
    for params in cases {
        let (rest, graphql) = product_ids_both_ways(&app, &key, &params).await;
        assert!(!rest.is_empty(), "{params:?} matches something");
        assert_eq!(graphql, rest, "{params:?}");
    }
    let (rest, graphql) =
        product_ids_both_ways(&app, &key, &[("brand", "Простокваш".into())]).await;
    assert_eq!((rest.len(), graphql.len()), (0, 0), "no substring brands");
}

#[tokio::test]
async fn products_are_the_same_objects_as_on_rest() {
    let (app, key) = parity_app().await;
    let query = with_shapes(
        "query($filter: ProductFilterInput) { products(filter: $filter, first: 100) { edges { node { ...RestProduct } } } }",
    );
    for params in [
        vec![],
        vec![("brand", "ПРОСТОКВАШИНО".to_owned())],
        vec![("name_contains", "kettle".to_owned())],
    ] {
        let rest = app
            .json_as(
                &key,
                &format!("/v1/products?{}&page_size=100", encoded(&params)),
            )
            .await;
        let graphql = data(&app, &key, &query, json!({ "filter": input(&params) })).await;
        assert!(!rest["data"].as_array().unwrap().is_empty());
        assert_eq!(
            as_rest(Value::Array(nodes(&graphql["products"]))),
            rest["data"],
            "{params:?}"
        );
    }
    let one = translated_product(&app, &key).await;
    let id = one["id"].as_str().unwrap();
    let by_id = data(
        &app,
        &key,
        &with_shapes("query($id: UUID!) { product(id: $id) { ...RestProduct } }"),
        json!({ "id": id }),
    )
    .await;
    let rest = app.json_as(&key, &format!("/v1/products/{id}")).await;
    assert_eq!(as_rest(by_id["product"].clone()), rest["data"]);
}

/// A page reads the JSON documents of its products (category path,
/// attributes, galleries, stats) only when its query shows them, and never
/// the search keys; asked through fragments and aliases, each is the one
/// REST shows.
#[tokio::test]
async fn a_page_reads_only_the_documents_its_query_shows() {
    let (app, key) = demo_app(60).await;
    let rest = app.json_as(&key, "/v1/products?page_size=100").await;
    let rest = rest["data"].as_array().unwrap();

    let from = app.statements();
    data(
        &app,
        &key,
        "{ products(first: 100) { nodes { id name } } }",
        json!({}),
    )
    .await;
    let texts = app.statement_texts(from);
    let page = texts
        .iter()
        .find(|s| s.contains("FROM \"products\""))
        .unwrap();
    let columns = &page[..page.find(" FROM ").unwrap()];
    for column in [
        "category_path",
        "attributes",
        "image_gallery",
        "video_gallery",
        "stats",
        "brand_key",
        "seller_code_key",
        "name_search",
    ] {
        let read = format!("\"products\".\"{column}\"");
        assert!(!columns.contains(&read), "{column} read: {columns}");
    }

    let shown = data(
        &app,
        &key,
        "query { products(first: 100) { edges { node { id ... on Product { categoryPath } ...Docs } } } }
         fragment Docs on Product { attrs: attributes imageGallery videoGallery stats }",
        json!({}),
    )
    .await;
    let shown = nodes(&shown["products"]);
    assert_eq!(shown.len(), rest.len());
    assert!(
        rest.iter().any(|p| p["stats"].is_object()),
        "stats to compare"
    );
    for (node, rest) in shown.iter().zip(rest) {
        assert_eq!(node["id"], rest["id"]);
        for (graphql, rest_name) in [
            ("categoryPath", "category_path"),
            ("attrs", "attributes"),
            ("imageGallery", "image_gallery"),
            ("videoGallery", "video_gallery"),
            ("stats", "stats"),
        ] {
            assert_eq!(
                node[graphql], rest[rest_name],
                "{graphql} of {}",
                rest["id"]
            );
        }
    }
}

/// The LIMITs of the page statement run since `from`, values written in:
/// its own (last), and its latest prices' first when it reads them.
fn page_limits(app: &TestApp, from: usize) -> (String, Option<String>) {
    let texts = app.statements_with_values(from);
    let page = texts
        .iter()
        .find(|s| s.contains("FROM \"products\""))
        .expect("page statement");
    let mut limits: Vec<String> = page
        .match_indices("LIMIT ")
        .map(|(at, _)| {
            let digits = page[at + 6..].chars().take_while(char::is_ascii_digit);
            format!("LIMIT {}", digits.collect::<String>())
        })
        .collect();
    let outer = limits.pop().expect("page limit");
    (outer, limits.first().cloned())
}

/// A connection reads the row past its page only when the query asks
/// whether more follow (`pageInfo { hasNextPage }`, or `hasPreviousPage`
/// with `last`): a dashboard that never pages reads just its rows. The
/// rows are the same either way, and the flags true where more follow.
#[tokio::test]
async fn a_page_reads_the_row_past_it_only_when_asked_whether_more_follow() {
    let (app, key) = demo_app(40).await;
    let query = |info: &str| {
        format!(
            "{{ products(first: 3) {{ {info} nodes {{ id \
             priceHistory(first: 2) {{ {info} nodes {{ price recordedAt }} }} }} }} }}"
        )
    };
    let from = app.statements();
    let bare = data(&app, &key, &query(""), json!({})).await;
    assert_eq!(
        page_limits(&app, from),
        ("LIMIT 3".into(), Some("LIMIT 2".into()))
    );

    let from = app.statements();
    let asked = data(&app, &key, &query("pageInfo { hasNextPage }"), json!({})).await;
    assert_eq!(
        page_limits(&app, from),
        ("LIMIT 4".into(), Some("LIMIT 3".into()))
    );
    let (bare, asked) = (&bare["products"]["nodes"], &asked["products"]);
    assert_eq!(
        asked["pageInfo"]["hasNextPage"], true,
        "40 products, 3 shown"
    );
    let asked_nodes = asked["nodes"].as_array().unwrap();
    assert_eq!(asked_nodes.len(), 3);
    for (shown, bare) in asked_nodes.iter().zip(bare.as_array().unwrap()) {
        assert_eq!(shown["id"], bare["id"]);
        let history = &shown["priceHistory"];
        assert_eq!(history["nodes"], bare["priceHistory"]["nodes"]);
        let path = format!(
            "/v1/products/{}/price-history",
            shown["id"].as_str().unwrap()
        );
        let total = app.json_as(&key, &path).await["meta"]["total"]
            .as_u64()
            .unwrap();
        assert_eq!(history["pageInfo"]["hasNextPage"], total > 2, "{path}");
    }

    // Two aliases of one list, one asking: one statement serves both.
    let from = app.statements();
    let mixed = data(
        &app,
        &key,
        "{ products(first: 3) { nodes { id
            plain: priceHistory(first: 2) { nodes { price recordedAt } }
            paged: priceHistory(first: 2) { pageInfo { hasNextPage } nodes { price recordedAt } } } } }",
        json!({}),
    )
    .await;
    let (_, inner) = page_limits(&app, from);
    assert_eq!(inner.as_deref(), Some("LIMIT 3"));
    assert_eq!(app.statements() - from, 2, "the key and the page");
    for (node, shown) in mixed["products"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(asked_nodes)
    {
        assert_eq!(node["plain"]["nodes"], shown["priceHistory"]["nodes"]);
        assert_eq!(node["paged"], shown["priceHistory"]);
    }

    // Backwards: `last` reads the row before its page only for hasPreviousPage.
    let last = |info: &str| format!("{{ products(last: 3) {{ {info} nodes {{ id }} }} }}");
    let from = app.statements();
    let bare = data(&app, &key, &last(""), json!({})).await;
    assert_eq!(page_limits(&app, from).0, "LIMIT 3");
    let asked = data(&app, &key, &last("pageInfo { hasPreviousPage }"), json!({})).await;
    assert_eq!(asked["products"]["pageInfo"]["hasPreviousPage"], true);
    assert_eq!(asked["products"]["nodes"], bare["products"]["nodes"]);
}

/// A seller's products, batched across sellers by their loader, read the
/// row past the page only when asked whether more follow, as other lists.
#[tokio::test]
async fn a_sellers_products_read_the_row_past_them_only_when_asked() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "9")).await;
    for (n, name) in ["a", "b", "c"].into_iter().enumerate() {
        let spec = ProductSpec {
            marketplace: Marketplace::Ozon,
            first_seen_at: test_start() - TimeDelta::days(n as i64),
            ..product(name)
        };
        insert_product(&app.db, &shop, spec).await;
    }
    let query = |first: u32, info: &str| {
        format!(
            "{{ sellers(lookup: {{ marketplace: OZON, sellerId: \"9\" }}) \
             {{ products(first: {first}) {{ {info} nodes {{ externalId }} }} }} }}"
        )
    };
    let mut shown = Vec::new();
    for (first, info, limit, more) in [
        (2, "", "LIMIT 2)", None),
        (2, "pageInfo { hasNextPage }", "LIMIT 3)", Some(true)),
        (3, "pageInfo { hasNextPage }", "LIMIT 4)", Some(false)),
    ] {
        let from = app.statements();
        let d = data(&app, &key, &query(first, info), json!({})).await;
        let products = &d["sellers"][0]["products"];
        let texts = app.statement_texts(from);
        assert!(
            texts.iter().any(|t| t.contains(limit)),
            "{limit} in {texts:?}"
        );
        assert_eq!(products["pageInfo"]["hasNextPage"].as_bool(), more);
        shown.push(products["nodes"].clone());
    }
    assert_eq!(
        shown[0],
        json!([{ "externalId": "a" }, { "externalId": "b" }])
    );
    assert_eq!(shown[1], shown[0]);
    assert_eq!(shown[2][2], json!({ "externalId": "c" }));
}

/// What a page statement reads of child table `table`: the aggregate of
/// its JSON column, up to the subquery of its rows.
fn child_list<'a>(page: &'a str, table: &str) -> &'a str {
    let end = page
        .find(&format!(" FROM (SELECT * FROM {table} WHERE"))
        .unwrap_or_else(|| panic!("{table} not read: {page}"));
    let start = page[..end].rfind("(SELECT json_").expect("aggregate");
    &page[start..end]
}

/// The columns of child row `t` a list reads, in the order first read.
fn list_columns(list: &str) -> Vec<&str> {
    let mut columns: Vec<&str> = Vec::new();
    for (at, _) in list.match_indices("t.") {
        let name = list[at + 2..]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default();
        if !columns.contains(&name) {
            columns.push(name);
        }
    }
    columns
}

/// A page reads the columns of its products' child lists (translations,
/// prices, special prices, latest price history) that its query shows, and
/// each list shows what the same list shows when asked for every field.
#[tokio::test]
async fn a_page_reads_only_the_child_columns_its_query_shows() {
    let (app, key) = demo_app(40).await;
    // Rows whose order needs columns the query below does not ask for: two
    // regions inserted out of order, and observations newest first by time
    // but not by id.
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "9")).await;
    let sorted = insert_product(&app.db, &shop, product("sorted")).await;
    for (region, price) in [("b", 2.0), ("a", 1.0)] {
        let at = Observation {
            region_code: Some(region),
            ..observation(price, test_start())
        };
        insert_current_price(&app.db, sorted.id, at).await;
    }
    for hours in [0, 1] {
        let at = test_start() - TimeDelta::hours(hours);
        insert_observation(&app.db, sorted.id, observation(10.0 - hours as f64, at)).await;
    }
    let some = "{ products(first: 100) { edges { node { id
        translations { name }
        prices { price }
        specialPrices { max }
        priceHistory(first: 3) { edges { node { price } } nodes { stockQuantity } } } } } }";
    let from = app.statements();
    let partial = data(&app, &key, some, json!({})).await;
    let texts = app.statement_texts(from);
    let page = texts
        .iter()
        .find(|s| s.contains("FROM \"products\""))
        .unwrap();
    // Each list reads what it shows and what it is sorted by, nothing
    // else: no placeholders for the columns left out either.
    for (table, expected) in [
        ("product_translations", &["language", "name"][..]),
        (
            "current_prices",
            &[
                "id",
                "country_code",
                "region_code",
                "user_auth_status",
                "price",
            ][..],
        ),
        ("special_prices", &["id", "max"][..]),
        (
            "price_observations",
            &["id", "price", "stock_quantity", "recorded_at"][..],
        ),
    ] {
        let list = child_list(page, table);
        assert_eq!(list_columns(list), expected, "{table}: {list}");
        for placeholder in ["0000", "1970", "'[]'", ", 0"] {
            assert!(!list.contains(placeholder), "{table}: {list}");
        }
    }
    // REST shows every column but the parent's id, which nothing reads.
    let from = app.statements();
    app.json_as(&key, "/v1/products?page_size=100").await;
    let texts = app.statement_texts(from);
    let page = texts
        .iter()
        .find(|s| s.contains("FROM \"products\""))
        .unwrap();
    assert!(
        page.contains("t.attributes") && !page.contains("t.product_id"),
        "{page}"
    );

    let every = "{ products(first: 100) { edges { node { id
        translations { language name categoryPath attributes updatedAt }
        prices { countryCode regionCode userAuthStatus price oldPrice currency stockStatus stockQuantity recordedAt }
        specialPrices { countryCode regionCode userAuthStatus min max }
        priceHistory(first: 3) { edges { node { price stockQuantity recordedAt } } } } } } }";
    let full = data(&app, &key, every, json!({})).await;
    let (partial, full) = (nodes(&partial["products"]), nodes(&full["products"]));
    assert_eq!(partial.len(), full.len());
    let pick = |list: &Value, field: &str| -> Vec<Value> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|row| row[field].clone())
            .collect()
    };
    let mut stocked = 0;
    for (partial, full) in partial.iter().zip(&full) {
        assert_eq!(
            pick(&partial["translations"], "name"),
            pick(&full["translations"], "name")
        );
        assert_eq!(
            pick(&partial["prices"], "price"),
            pick(&full["prices"], "price")
        );
        assert_eq!(
            pick(&partial["specialPrices"], "max"),
            pick(&full["specialPrices"], "max")
        );
        let history = Value::Array(nodes(&full["priceHistory"]));
        let shown = Value::Array(nodes(&partial["priceHistory"]));
        assert_eq!(pick(&shown, "price"), pick(&history, "price"));
        let quantities = pick(&partial["priceHistory"]["nodes"], "stockQuantity");
        assert_eq!(quantities, pick(&history, "stockQuantity"));
        stocked += quantities.iter().filter(|q| q.is_number()).count();
    }
    assert!(stocked > 0, "stock quantities to compare");
}

/// A product's seller, read with its page, is the seller REST's lookup
/// finds, field for field; asked for one stat, it is that stat.
#[tokio::test]
async fn a_products_seller_is_the_seller_the_lookup_finds() {
    let (app, key) = demo_app(30).await;
    let full = data(
        &app,
        &key,
        &with_shapes(
            "{ products(first: 30) { edges { node { marketplace seller { ...RestSeller } } } } }",
        ),
        json!({}),
    )
    .await;
    let one = data(
        &app,
        &key,
        "{ products(first: 30) { edges { node { seller { stats { regDate } } } } } }",
        json!({}),
    )
    .await;
    let (full, one) = (nodes(&full["products"]), nodes(&one["products"]));
    assert_eq!(full.len(), 30);
    let mut dated = 0;
    for (node, one) in full.iter().zip(&one) {
        let seller = as_rest(node["seller"].clone());
        let path = format!(
            "/v1/sellers?marketplace={}&seller_id={}",
            seller["marketplace"].as_str().unwrap(),
            seller["seller_id"].as_str().unwrap()
        );
        let found = app.json_as(&key, &path).await;
        assert_eq!(found["data"][0], seller, "{path}");
        assert_eq!(
            one["seller"]["stats"]["regDate"],
            seller["stats"]["reg_date"]
        );
        dated += usize::from(one["seller"]["stats"]["regDate"].is_string());
    }
    assert!(dated > 0, "registration dates to compare");
}

const PRICE_HISTORY: &str = r#"query($id: UUID!, $filter: PriceHistoryFilterInput) {
  priceHistory(productId: $id, filter: $filter, first: 100) {
    totalCount pageInfo { hasNextPage } edges { node { ...RestPrice } }
  }
  product(id: $id) {
    priceHistory(filter: $filter, first: 100) { totalCount edges { node { ...RestPrice } } }
  }
}"#;

#[tokio::test]
async fn price_history_is_the_same_as_rest_with_every_filter() {
    let (app, key) = demo_app(40).await;
    let products = app.json_as(&key, "/v1/products?page_size=100").await;
    // The product with the most price variants: the filters have something to split.
    let p = products["data"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|p| p["prices"].as_array().map(Vec::len))
        .unwrap();
    let id = p["id"].as_str().unwrap();
    let full = app
        .json_as(
            &key,
            &format!("/v1/products/{id}/price-history?page_size=500"),
        )
        .await;
    let times: Vec<&str> = full["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["recorded_at"].as_str().unwrap())
        .collect();
    assert!(times.len() >= 6, "enough history to filter");
    let country = p["prices"][0]["country_code"].as_str().unwrap();
    let (newer, older) = (times[1].to_owned(), times[times.len() - 2].to_owned());
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![],
        vec![("country_code", country.to_uppercase())],
        vec![("country_code", country.to_lowercase())],
        vec![("user_auth_status", "anonymous".into())],
        vec![("from", older.clone())],
        vec![("to", newer.clone())],
        vec![("from", older.clone()), ("to", newer.clone())],
        vec![
            ("from", older),
            ("to", newer),
            ("country_code", country.to_uppercase()),
        ],
    ];
    let query = with_shapes(PRICE_HISTORY);
    for params in cases {
        let rest = app
            .json_as(
                &key,
                &format!(
                    "/v1/products/{id}/price-history?{}&page_size=100",
                    encoded(&params)
                ),
            )
            .await;
        // Without any filter GraphQL takes its batched path; with `{}` its keyset path.
        let filters = if params.is_empty() {
            vec![Value::Null, json!({})]
        } else {
            vec![input(&params)]
        };
        for filter in filters {
            let graphql = data(&app, &key, &query, json!({ "id": id, "filter": filter })).await;
            for connection in [
                &graphql["priceHistory"],
                &graphql["product"]["priceHistory"],
            ] {
                assert_eq!(
                    as_rest(Value::Array(nodes(connection))),
                    rest["data"],
                    "{params:?} {filter}"
                );
                assert_eq!(connection["totalCount"], rest["meta"]["total"]);
            }
        }
    }
}

#[tokio::test]
async fn sellers_are_the_same_as_rest_for_every_lookup() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (marketplace, id, products) in [
        (Marketplace::Wildberries, "b", 1),
        (Marketplace::Ozon, "z", 3),
        (Marketplace::YandexMarket, "y", 0),
        (Marketplace::Ozon, "a", 2),
        (Marketplace::Megamarket, "m", 4),
    ] {
        let shop = insert_seller(
            &app.db,
            seller::Model {
                tin: "7701234567".into(),
                url: vitrina::text::normalize_url(&format!("https://Shop.example/Store-{id}")),
                ..fixtures::seller(marketplace, id)
            },
        )
        .await;
        for n in 0..products {
            insert_product(&app.db, &shop, product(&format!("{id}-{n}"))).await;
        }
    }
    insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "other")).await;
    let query = with_shapes(
        "query($lookup: SellerLookupInput!) { sellers(lookup: $lookup) { ...RestSeller } }",
    );
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![("tin", "7701234567".into())],
        vec![("psrn", "1027700000000".into())],
        vec![("url", "HTTPS://SHOP.EXAMPLE/Store-z/?utm=1#x".into())],
        vec![("marketplace", "ozon".into()), ("seller_id", "a".into())],
        vec![("tin", "7701234567".into()), ("marketplace", "ozon".into())],
        vec![("tin", "0000000000".into())],
    ];
    for params in cases {
        let rest = app
            .json_as(&key, &format!("/v1/sellers?{}", encoded(&params)))
            .await;
        let graphql = data(&app, &key, &query, json!({ "lookup": input(&params) })).await;
        assert_eq!(
            as_rest(graphql["sellers"].clone()),
            rest["data"],
            "{params:?}"
        );
    }
    let by_tin = app.json_as(&key, "/v1/sellers?tin=7701234567").await;
    let order: Vec<(&str, &str)> = by_tin["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["marketplace"].as_str().unwrap(),
                s["seller_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("megamarket", "m"),
            ("ozon", "a"),
            ("ozon", "z"),
            ("wildberries", "b"),
            ("yandex_market", "y")
        ],
        "several marketplaces, by marketplace then seller id"
    );
}

#[tokio::test]
async fn categories_and_brands_are_the_same_as_rest() {
    let (app, key) = demo_app(120).await;
    for marketplace in ["wildberries", "ozon", "yandex_market", "megamarket"] {
        let rest = app
            .json_as(&key, &format!("/v1/categories?marketplace={marketplace}"))
            .await;
        let graphql = data(
            &app,
            &key,
            "query($m: Marketplace!) { categories(marketplace: $m) { category_path: categoryPath product_count: productCount } }",
            json!({ "m": marketplace.to_uppercase() }),
        )
        .await;
        assert!(
            !rest["data"].as_array().unwrap().is_empty(),
            "{marketplace}"
        );
        assert_eq!(graphql["categories"], rest["data"], "{marketplace}");
    }
    let brands =
        "query($m: Marketplace) { brands(marketplace: $m) { brand product_count: productCount } }";
    for marketplace in [None, Some("ozon"), Some("megamarket")] {
        let rest = match marketplace {
            Some(m) => {
                app.json_as(&key, &format!("/v1/brands?marketplace={m}"))
                    .await
            }
            None => app.json_as(&key, "/v1/brands").await,
        };
        let graphql = data(
            &app,
            &key,
            brands,
            json!({ "m": marketplace.map(str::to_uppercase) }),
        )
        .await;
        assert!(!rest["data"].as_array().unwrap().is_empty());
        assert_eq!(graphql["brands"], rest["data"], "{marketplace:?}");
    }
}

const SESSIONS: &str = r#"query {
  me { scrapeSessions(first: 100) { totalCount edges { node {
    id status stats { total pending processing merged rejected flagged }
    metadata { source_type: sourceType intent url_count: urlCount }
    created_at: createdAt updated_at: updatedAt
  } } } }
}"#;

#[tokio::test]
async fn scrape_sessions_are_the_same_as_rest_and_only_the_callers() {
    let (app, key) = demo_app(30).await;
    let other = app.key("someone-else").await;
    let theirs = insert_session(&app.db, &other, test_start()).await;
    insert_submission(&app.db, theirs.id, SubmissionStatus::Pending, None).await;

    let rest = app.json_as(&key, "/v1/me/scrapes").await;
    let graphql = data(&app, &key, SESSIONS, json!({})).await;
    let sessions = &graphql["me"]["scrapeSessions"];
    assert_eq!(
        rest["data"].as_array().unwrap().len(),
        4,
        "the demo sessions"
    );
    assert_eq!(as_rest(Value::Array(nodes(sessions))), rest["data"]);
    assert_eq!(sessions["totalCount"], rest["meta"]["total"]);

    let graphql = data(&app, &other, SESSIONS, json!({})).await;
    let sessions = nodes(&graphql["me"]["scrapeSessions"]);
    assert_eq!(
        ids(&sessions),
        [theirs.id.to_string()],
        "only the caller's own"
    );
}

#[tokio::test]
async fn session_submissions_are_the_same_as_rest() {
    let (app, key) = demo_app(30).await;
    let query = with_shapes(
        r#"query($id: UUID!) { me { scrapeSession(id: $id) {
          submissions(first: 100) { totalCount edges { node {
            submission_status: status product { ...RestProduct }
          } } }
        } } }"#,
    );
    let sessions = app.json_as(&key, "/v1/me/scrapes").await;
    let mut with_and_without = BTreeSet::new();
    for session in sessions["data"].as_array().unwrap() {
        let id = session["id"].as_str().unwrap();
        let rest = app
            .json_as(&key, &format!("/v1/me/scrapes/{id}/products"))
            .await;
        let graphql = data(&app, &key, &query, json!({ "id": id })).await;
        let submissions = &graphql["me"]["scrapeSession"]["submissions"];
        assert_eq!(
            as_rest(Value::Array(nodes(submissions))),
            rest["data"],
            "{id}"
        );
        assert_eq!(submissions["totalCount"], rest["meta"]["total"]);
        for entry in rest["data"].as_array().unwrap() {
            with_and_without.insert(entry["product"].is_null());
        }
    }
    assert_eq!(
        with_and_without.len(),
        2,
        "merged and unmerged rows both compared"
    );
}

#[tokio::test]
async fn unknown_ids_and_other_accounts_sessions_are_not_found_as_on_rest() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let other = app.key("someone-else").await;
    let theirs = insert_session(&app.db, &other, test_start()).await;
    let unknown = Uuid::new_v4();

    for query in [
        "query($id: UUID!) { product(id: $id) { id } }",
        "query($id: UUID!) { priceHistory(productId: $id) { totalCount } }",
    ] {
        let code = error_code(&app, &key, query, json!({ "id": unknown })).await;
        assert_eq!(code, "NOT_FOUND", "{query}");
    }
    assert_eq!(
        rest_error(&app, &key, &format!("/v1/products/{unknown}")).await,
        (404, "not_found".to_owned())
    );

    let session =
        "query($id: UUID!) { me { scrapeSession(id: $id) { id submissions { totalCount } } } }";
    let (_, for_theirs) = post(&app, Some(&key), session, json!({ "id": theirs.id })).await;
    let (_, for_unknown) = post(&app, Some(&key), session, json!({ "id": unknown })).await;
    assert_eq!(only_error_code(&for_theirs), "NOT_FOUND");
    assert_eq!(
        for_theirs, for_unknown,
        "indistinguishable from an unknown id"
    );
    for id in [theirs.id, unknown] {
        assert_eq!(
            rest_error(&app, &key, &format!("/v1/me/scrapes/{id}")).await,
            (404, "not_found".to_owned())
        );
    }
    let owner = data(&app, &other, session, json!({ "id": theirs.id })).await;
    assert_eq!(owner["me"]["scrapeSession"]["id"], theirs.id.to_string());
}

#[tokio::test]
async fn invalid_and_missing_parameters_are_refused_with_the_rest_codes() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let p = insert_product(&app.db, &shop, product("p")).await;
    let long = "я".repeat(201);
    let (from, to) = (iso(test_start()), iso(test_start() - TimeDelta::hours(1)));

    let products = "query($filter: ProductFilterInput) { products(filter: $filter) { edges { node { id } } } }";
    for (name, rest_name) in [
        ("nameContains", "name_contains"),
        ("sellerCodeContains", "seller_code_contains"),
    ] {
        let code = error_code(&app, &key, products, json!({ "filter": { name: long } })).await;
        assert_eq!(code, "INVALID_PARAMETER", "{name}");
        let rest = rest_error(&app, &key, &format!("/v1/products?{rest_name}={long}")).await;
        assert_eq!(rest, (400, "invalid_parameter".to_owned()));
    }
    let ok = json!({ "filter": { "nameContains": "я".repeat(200) } });
    data(&app, &key, products, ok).await;

    let sellers = "query($lookup: SellerLookupInput!) { sellers(lookup: $lookup) { sellerId } }";
    for lookup in [
        json!({}),
        json!({ "marketplace": "OZON" }),
        json!({ "sellerId": "1" }),
        json!({ "tin": "" }),
    ] {
        let code = error_code(&app, &key, sellers, json!({ "lookup": lookup })).await;
        assert_eq!(code, "MISSING_PARAMETER", "{lookup}");
    }
    assert_eq!(
        rest_error(&app, &key, "/v1/sellers?marketplace=ozon").await,
        (400, "missing_parameter".to_owned())
    );

    let range = json!({ "id": p.id, "filter": { "from": from, "to": to } });
    for query in [
        "query($id: UUID!, $filter: PriceHistoryFilterInput) { priceHistory(productId: $id, filter: $filter) { totalCount } }",
        "query($id: UUID!, $filter: PriceHistoryFilterInput) { product(id: $id) { priceHistory(filter: $filter) { totalCount } } }",
    ] {
        let code = error_code(&app, &key, query, range.clone()).await;
        assert_eq!(code, "INVALID_PARAMETER", "{query}");
    }
    let rest = rest_error(
        &app,
        &key,
        &format!(
            "/v1/products/{}/price-history?{}",
            p.id,
            encoded(&[("from", from), ("to", to)])
        ),
    )
    .await;
    assert_eq!(rest, (400, "invalid_parameter".to_owned()));
}

#[tokio::test]
async fn internal_failures_are_internal_error_without_internals() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let p = insert_product(&app.db, &shop, product("p")).await;
    let session = insert_session(&app.db, &key, test_start()).await;
    insert_submission(&app.db, session.id, SubmissionStatus::Merged, Some(p.id)).await;
    let cases = [
        ("brand_snapshots", "{ brands { brand } }".to_owned()),
        (
            "product_translations",
            "{ products { edges { node { translations { name } } } } }".to_owned(),
        ),
        (
            "quota_usage",
            format!(
                "{{ me {{ scrapeSession(id: \"{}\") {{ submissions {{ totalCount }} }} }} }}",
                session.id
            ),
        ),
    ];
    for (table, query) in cases {
        data(&app, &key, &query, json!({})).await;
        app.db
            .execute_unprepared(&format!("DROP TABLE {table}"))
            .await
            .expect("drop table");
        let code = error_code(&app, &key, &query, json!({})).await;
        assert_eq!(code, "INTERNAL_ERROR", "without {table}");
    }
}

// ---------------------------------------------------------------- cursor paging

/// Nodes of the connection at `at` (a JSON pointer into `data`), walked
/// forwards with `first: page` until `hasNextPage` is false.
async fn walk_forwards(
    app: &TestApp,
    key: &str,
    query: &str,
    variables: Value,
    at: &str,
    page: i64,
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = Value::Null;
    for _ in 0..200 {
        let mut v = variables.clone();
        v["first"] = json!(page);
        v["after"] = after;
        let d = data(app, key, query, v).await;
        let connection = d.pointer(at).expect("connection");
        let got = nodes(connection);
        assert!(got.len() as i64 <= page, "a page holds at most `first`");
        out.extend(got);
        let info = &connection["pageInfo"];
        if info["hasNextPage"] == false {
            return out;
        }
        after = info["endCursor"].clone();
        assert!(after.is_string(), "a next page has a cursor: {info}");
    }
    panic!("the forward walk did not end");
}

/// The same, walked backwards from the end with `last: page` and `before`.
async fn walk_backwards(
    app: &TestApp,
    key: &str,
    query: &str,
    variables: Value,
    at: &str,
    page: i64,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut before = Value::Null;
    for _ in 0..200 {
        let mut v = variables.clone();
        v["last"] = json!(page);
        v["before"] = before;
        let d = data(app, key, query, v).await;
        let connection = d.pointer(at).expect("connection");
        let got = nodes(connection);
        assert!(got.len() as i64 <= page, "a page holds at most `last`");
        out.splice(0..0, got);
        let info = &connection["pageInfo"];
        if info["hasPreviousPage"] == false {
            return out;
        }
        before = info["startCursor"].clone();
        assert!(before.is_string(), "a previous page has a cursor: {info}");
    }
    panic!("the backward walk did not end");
}

/// Both walks, at several page sizes, give exactly `expected`.
async fn assert_walks(
    app: &TestApp,
    key: &str,
    query: &str,
    variables: Value,
    at: &str,
    expected: &[Value],
) {
    for page in [1, 2, 3, 100] {
        let forwards = walk_forwards(app, key, query, variables.clone(), at, page).await;
        assert_eq!(forwards, expected, "forwards, pages of {page}");
        let backwards = walk_backwards(app, key, query, variables.clone(), at, page).await;
        assert_eq!(backwards, expected, "backwards, pages of {page}");
    }
}

const PRODUCT_PAGES: &str = r#"query($filter: ProductFilterInput, $first: Int, $after: String, $last: Int, $before: String) {
  products(filter: $filter, first: $first, after: $after, last: $last, before: $before) {
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { node { id firstSeenAt } }
  }
}"#;

#[tokio::test]
async fn products_page_forwards_and_backwards_without_gaps_or_repeats_even_on_ties() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let tie = test_start() - TimeDelta::days(3);
    for (i, age) in [1, 3, 3, 5, 3, 2, 3, 7, 5].into_iter().enumerate() {
        insert_product(
            &app.db,
            &shop,
            ProductSpec {
                first_seen_at: test_start() - TimeDelta::days(age),
                ..product(&format!("p{i}"))
            },
        )
        .await;
    }
    let rest = app.json_as(&key, "/v1/products").await;
    let expected: Vec<Value> = rest["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| json!({ "id": p["id"], "firstSeenAt": p["first_seen_at"] }))
        .collect();
    assert_eq!(expected.len(), 9);
    // Newest first, ties by id (descending).
    let keys: Vec<(String, String)> = expected
        .iter()
        .map(|p| (p["firstSeenAt"].to_string(), p["id"].to_string()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(keys, sorted);
    assert_eq!(
        expected
            .iter()
            .filter(|p| p["firstSeenAt"] == iso(tie))
            .count(),
        4,
        "four products share one first_seen_at"
    );
    assert_walks(&app, &key, PRODUCT_PAGES, json!({}), "/products", &expected).await;
    let filtered: Vec<Value> = {
        let rest = app.json_as(&key, "/v1/products?seller_id=1").await;
        rest["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| json!({ "id": p["id"], "firstSeenAt": p["first_seen_at"] }))
            .collect()
    };
    let with_filter = json!({ "filter": { "sellerId": "1" } });
    assert_walks(
        &app,
        &key,
        PRODUCT_PAGES,
        with_filter,
        "/products",
        &filtered,
    )
    .await;
}

#[tokio::test]
async fn price_history_pages_forwards_and_backwards_without_gaps_or_repeats_even_on_ties() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let p = insert_product(&app.db, &shop, product("p")).await;
    for (i, hours) in [5, 10, 10, 1, 10, 20, 10, 3].into_iter().enumerate() {
        let at = test_start() - TimeDelta::hours(hours);
        insert_observation(&app.db, p.id, observation(100.0 + i as f64, at)).await;
    }
    let rest = app
        .json_as(&key, &format!("/v1/products/{}/price-history", p.id))
        .await;
    let expected: Vec<Value> = rest["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| json!({ "price": o["price"], "recordedAt": o["recorded_at"] }))
        .collect();
    assert_eq!(expected.len(), 8);
    let query = r#"query($id: UUID!, $filter: PriceHistoryFilterInput, $first: Int, $after: String, $last: Int, $before: String) {
      product(id: $id) { priceHistory(filter: $filter, first: $first, after: $after, last: $last, before: $before) {
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
        edges { node { price recordedAt } }
      } }
    }"#;
    let at = "/product/priceHistory";
    assert_walks(&app, &key, query, json!({ "id": p.id }), at, &expected).await;
    let with_filter = json!({ "id": p.id, "filter": { "countryCode": "RU" } });
    assert_walks(&app, &key, query, with_filter, at, &expected).await;
}

#[tokio::test]
async fn scrape_sessions_page_forwards_and_backwards_without_gaps_or_repeats_even_on_ties() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let other = app.key("someone-else").await;
    for hours in [1, 4, 4, 2, 4, 6, 4] {
        insert_session(&app.db, &key, test_start() - TimeDelta::hours(hours)).await;
    }
    insert_session(&app.db, &other, test_start() - TimeDelta::hours(4)).await;
    let rest = app.json_as(&key, "/v1/me/scrapes").await;
    let expected: Vec<Value> = rest["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!({ "id": s["id"] }))
        .collect();
    assert_eq!(expected.len(), 7);
    let query = r#"query($first: Int, $after: String, $last: Int, $before: String) {
      me { scrapeSessions(first: $first, after: $after, last: $last, before: $before) {
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
        edges { node { id } }
      } }
    }"#;
    assert_walks(
        &app,
        &key,
        query,
        json!({}),
        "/me/scrapeSessions",
        &expected,
    )
    .await;
}

#[tokio::test]
async fn invalid_cursor_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for cursor in ["not-a-cursor", "eyJhIjoxfQ", "", "%%%"] {
        for (first, last, direction) in [(Some(2), None, "after"), (None, Some(2), "before")] {
            let mut v = json!({ "first": first, "last": last });
            v[direction] = json!(cursor);
            let code = error_code(&app, &key, PRODUCT_PAGES, v).await;
            assert_eq!(code, "INVALID_PARAMETER", "{direction} {cursor:?}");
        }
    }
}

#[tokio::test]
async fn a_cursor_of_one_list_is_refused_by_another_of_the_same_shape() {
    let (app, key) = demo_app(3).await;
    insert_session(&app.db, &key, test_start()).await;
    // Both lists order by a time and an id.
    let sessions = "query($first: Int, $after: String) { me { scrapeSessions(first: $first, after: $after) { totalCount pageInfo { endCursor } } } }";
    let products = "query($first: Int, $after: String) { products(first: $first, after: $after) { totalCount pageInfo { endCursor } } }";
    let first = json!({ "first": 1 });
    let d = data(&app, &key, sessions, first.clone()).await;
    let session_cursor = d["me"]["scrapeSessions"]["pageInfo"]["endCursor"].clone();
    let d = data(&app, &key, products, first).await;
    let product_cursor = d["products"]["pageInfo"]["endCursor"].clone();

    // Each list takes its own cursor ...
    let own = json!({ "first": 1, "after": product_cursor });
    assert_eq!(
        data(&app, &key, products, own).await["products"]["totalCount"],
        3
    );
    let own = json!({ "first": 1, "after": session_cursor });
    data(&app, &key, sessions, own).await;
    // ... and not the other's.
    let other = json!({ "first": 1, "after": session_cursor });
    assert_eq!(
        error_code(&app, &key, products, other).await,
        "INVALID_PARAMETER"
    );
    let other = json!({ "first": 1, "after": product_cursor });
    assert_eq!(
        error_code(&app, &key, sessions, other).await,
        "INVALID_PARAMETER"
    );
}

#[tokio::test]
async fn page_size_over_500_or_negative_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for v in [
        json!({ "first": 501 }),
        json!({ "last": 501 }),
        json!({ "first": -1 }),
        json!({ "last": -1 }),
    ] {
        let code = error_code(&app, &key, PRODUCT_PAGES, v.clone()).await;
        assert_eq!(code, "INVALID_PARAMETER", "{v}");
    }
    let sessions = "query($first: Int) { me { scrapeSessions(first: $first) { totalCount } } }";
    let code = error_code(&app, &key, sessions, json!({ "first": 501 })).await;
    assert_eq!(code, "INVALID_PARAMETER");
    data(&app, &key, PRODUCT_PAGES, json!({ "first": 500 })).await;
}

#[tokio::test]
async fn first_and_last_together_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let code = error_code(&app, &key, PRODUCT_PAGES, json!({ "first": 2, "last": 2 })).await;
    assert_eq!(code, "INVALID_PARAMETER");
    let sessions = "{ me { scrapeSessions(first: 1, last: 1) { totalCount } } }";
    assert_eq!(
        error_code(&app, &key, sessions, json!({})).await,
        "INVALID_PARAMETER"
    );
}

// ---------------------------------------------------------------- statements

/// The GraphiQL example: a brand's products with their seller, translations,
/// current prices and latest price history.
const DASHBOARD: &str = r#"query($first: Int) {
  products(filter: { brand: "Samsung" }, first: $first) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node {
      id name marketplace
      seller { name tin productCount }
      translations { language name }
      prices { countryCode price currency }
      priceHistory(first: 5) { edges { node { price recordedAt } } }
    } }
  }
}"#;

async fn statements_for(app: &TestApp, key: &str, query: &str, variables: Value) -> (usize, Value) {
    let before = app.statements();
    let d = data(app, key, query, variables).await;
    (app.statements() - before, d)
}

/// Three sellers and `n` products spread over them (the first 105 of brand
/// Samsung), each with a translation, two current prices and six price
/// observations.
async fn rich_catalog(app: &TestApp, n: usize) -> Vec<Uuid> {
    let mut shops = Vec::new();
    for (marketplace, id) in [
        (Marketplace::Wildberries, "1"),
        (Marketplace::Ozon, "2"),
        (Marketplace::Megamarket, "3"),
    ] {
        shops.push(insert_seller(&app.db, fixtures::seller(marketplace, id)).await);
    }
    let mut ids = Vec::new();
    for i in 0..n {
        let shop = &shops[i % shops.len()];
        let p = insert_product(
            &app.db,
            shop,
            ProductSpec {
                marketplace: shop.marketplace,
                brand: if i < 105 { "Samsung" } else { "Other" }.into(),
                first_seen_at: test_start() - TimeDelta::minutes(i as i64),
                translations: vec![("en".into(), format!("Phone {i}"), strings(&["Phones"]))],
                ..product(&format!("s{i}"))
            },
        )
        .await;
        for (country, price) in [("ru", 100.0), ("kz", 530.0)] {
            let current = Observation {
                country_code: country,
                ..observation(price, test_start())
            };
            insert_current_price(&app.db, p.id, current).await;
        }
        for h in 0..6 {
            let at = test_start() - TimeDelta::hours(h);
            insert_observation(&app.db, p.id, observation(90.0 + h as f64, at)).await;
        }
        ids.push(p.id);
    }
    ids
}

// On several worker threads, as in production: the dataloaders' time window
// then races the resolvers for real.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_query_runs_the_same_few_statements_for_10_and_100_products() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    rich_catalog(&app, 111).await;
    // The first request of a key stamps its last use; measure after it.
    data(&app, &key, "{ __typename }", json!({})).await;

    let (ten, small) = statements_for(&app, &key, DASHBOARD, json!({ "first": 10 })).await;
    let (hundred, large) = statements_for(&app, &key, DASHBOARD, json!({ "first": 100 })).await;
    let edges = nodes(&large["products"]);
    assert_eq!((nodes(&small["products"]).len(), edges.len()), (10, 100));
    assert_eq!(large["products"]["totalCount"], 105);
    for node in &edges {
        assert_eq!(node["seller"]["productCount"], 37, "{node}");
        assert_eq!(node["translations"].as_array().map(Vec::len), Some(1));
        assert_eq!(node["prices"].as_array().map(Vec::len), Some(2));
        assert_eq!(nodes(&node["priceHistory"]).len(), 5);
    }
    assert_eq!(ten, hundred, "statements must not grow with the page");
    // The key; the page with its sellers, translations, prices, latest
    // history and total; then the sellers' product counts.
    assert_eq!(
        hundred, 3,
        "one statement per nesting level, none per product"
    );
}

#[tokio::test]
async fn every_product_page_counts_the_whole_list_and_shows_each_products_own_seller() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    rich_catalog(&app, 7).await;
    let page = "query($after: String, $brand: String) {
      products(filter: { brand: $brand }, first: 3, after: $after) {
        totalCount pageInfo { hasNextPage endCursor } nodes { id seller { name } }
      }
    }";
    let single = "query($id: UUID!) { product(id: $id) { seller { name } } }";
    let (mut after, mut seen) = (Value::Null, 0);
    loop {
        let d = data(
            &app,
            &key,
            page,
            json!({ "after": after, "brand": "Samsung" }),
        )
        .await;
        let products = &d["products"];
        assert_eq!(
            products["totalCount"], 7,
            "every page counts the whole list"
        );
        for node in products["nodes"].as_array().unwrap() {
            let alone = data(&app, &key, single, json!({ "id": node["id"] })).await;
            assert_eq!(node["seller"], alone["product"]["seller"], "{node}");
            seen += 1;
        }
        after = products["pageInfo"]["endCursor"].clone();
        if products["pageInfo"]["hasNextPage"] != true {
            break;
        }
    }
    assert_eq!(seen, 7);

    // Past the last row and on an empty list, nothing carries the count.
    let past = data(
        &app,
        &key,
        page,
        json!({ "after": after, "brand": "Samsung" }),
    )
    .await;
    assert_eq!(past["products"]["nodes"], json!([]));
    assert_eq!(past["products"]["totalCount"], 7);
    let none = data(&app, &key, page, json!({ "brand": "Nokia" })).await;
    assert_eq!(none["products"]["totalCount"], 0);
    // Without sellers asked for, the page reads products alone.
    let bare = "{ products(filter: { brand: \"Samsung\" }, last: 2) { totalCount edges { node { id } } } }";
    let d = data(&app, &key, bare, json!({})).await;
    assert_eq!(
        (
            d["products"]["totalCount"].clone(),
            nodes(&d["products"]).len()
        ),
        (json!(7), 2)
    );
}

#[tokio::test]
async fn batched_first_n_lists_match_the_head_of_the_full_list() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let ids = rich_catalog(&app, 7).await;
    // Ties on the time: the id decides among them.
    for price in [501.0, 502.0, 503.0] {
        insert_observation(&app.db, ids[0], observation(price, test_start())).await;
    }
    let query = r#"{
      products(first: 10) { edges { node { id short: priceHistory(first: 4) { edges { node { price recordedAt } } } } } }
      sellers(lookup: { marketplace: OZON, sellerId: "2" }) { products(first: 1) { edges { node { id } } } }
    }"#;
    let d = data(&app, &key, query, json!({})).await;
    for node in nodes(&d["products"]) {
        let full = data(
            &app,
            &key,
            "query($id: UUID!) { priceHistory(productId: $id, first: 100) { edges { node { price recordedAt } } } }",
            json!({ "id": node["id"] }),
        )
        .await;
        let head: Vec<Value> = nodes(&full["priceHistory"]).into_iter().take(4).collect();
        assert_eq!(nodes(&node["short"]), head, "{}", node["id"]);
    }
    let newest = data(
        &app,
        &key,
        "{ products(filter: { marketplace: OZON, sellerId: \"2\" }, first: 1) { edges { node { id } } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        nodes(&d["sellers"][0]["products"]),
        nodes(&newest["products"])
    );
}

/// PostgreSQL gets each list of ids as one array parameter: pages of
/// different sizes send the same statements, so they share prepared
/// statements and plans (an `IN` list would be a new statement per length).
#[tokio::test]
async fn pages_of_any_size_send_the_same_statements_on_postgres() {
    let app = TestApp::spawn().await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        return; // SQLite has no arrays; its IN lists follow the page size
    }
    let key = app.key("acme").await;
    rich_catalog(&app, 7).await;
    let query = format!(
        "query($n: Int!) {{ products(first: $n) {{ edges {{ node {{ {NODE} }} }} }} \
         sellers(lookup: {{ marketplace: OZON, sellerId: \"2\" }}) {{ products(first: 2) {{ edges {{ node {{ id }} }} }} }} }}"
    );
    // The key's first use also records when it was used; not part of a page.
    data(&app, &key, &query, json!({ "n": 1 })).await;
    let mut sent = Vec::new();
    for n in [3, 7] {
        let before = app.statements();
        let d = data(&app, &key, &query, json!({ "n": n })).await;
        assert_eq!(nodes(&d["products"]).len(), n);
        let mut texts = app.statement_texts(before);
        texts.sort();
        sent.push(texts);
    }
    assert!(sent[0].len() > 3, "{:?}", sent[0]);
    let differing: Vec<&String> = sent[0].iter().filter(|t| !sent[1].contains(t)).collect();
    assert!(differing.is_empty(), "sent at 3 rows only: {differing:#?}");
    assert_eq!(sent[0], sent[1]);
}

/// A page reads its products' translations in its own statement (a JSON
/// column); other lists load them apart. Both give the same translations,
/// by language, with their JSON and sub-second times intact, and REST the same.
#[tokio::test]
async fn translations_read_with_a_page_equal_those_loaded_apart() {
    use entity::product_translation;
    use sea_orm::{ActiveModelTrait, ActiveValue::Set, IntoActiveModel};

    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "77")).await;
    let spec = |id: &str, translations| ProductSpec {
        marketplace: Marketplace::Ozon,
        translations,
        ..product(id)
    };
    let none = insert_product(&app.db, &shop, spec("bare", vec![])).await;
    let both = insert_product(
        &app.db,
        &shop,
        spec(
            "two",
            vec![
                ("kk".into(), "Құлаққап".into(), strings(&["Электроника"])),
                (
                    "en".into(),
                    "Headphones".into(),
                    strings(&["Audio", "In-ear"]),
                ),
            ],
        ),
    )
    .await;
    let mut kk = product_translation::Entity::find_by_id((both.id, "kk".to_owned()))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
        .into_active_model();
    kk.attributes =
        Set(json!({ "түсі": "қара \"матовый\"", "size": [1, 2.5], "nested": { "ok": true } }));
    kk.updated_at = Set(test_start() + TimeDelta::microseconds(123_456));
    kk.update(&app.db).await.unwrap();

    let fields = "language name categoryPath attributes updatedAt";
    let paged = data(
        &app,
        &key,
        &format!("{{ products(first: 10) {{ nodes {{ id translations {{ {fields} }} }} }} }}"),
        json!({}),
    )
    .await;
    let apart = data(
        &app,
        &key,
        &format!(
            "{{ sellers(lookup: {{ marketplace: OZON, sellerId: \"77\" }}) \
             {{ products(first: 10) {{ nodes {{ id translations {{ {fields} }} }} }} }} }}"
        ),
        json!({}),
    )
    .await;
    let of = |list: &Value, id: Uuid| -> Value {
        list["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == json!(id))
            .unwrap()["translations"]
            .clone()
    };
    for id in [none.id, both.id] {
        assert_eq!(
            of(&paged["products"], id),
            of(&apart["sellers"][0]["products"], id)
        );
    }
    assert_eq!(of(&paged["products"], none.id), json!([]));
    let two = of(&paged["products"], both.id);
    assert_eq!(
        two,
        json!([
            { "language": "en", "name": "Headphones", "categoryPath": ["Audio", "In-ear"],
              "attributes": { "color": "black" },
              "updatedAt": both.first_seen_at.to_rfc3339_opts(SecondsFormat::AutoSi, true) },
            { "language": "kk", "name": "Құлаққап", "categoryPath": ["Электроника"],
              // Attributes show as strings; other JSON values as their JSON text.
              "attributes": { "түсі": "қара \"матовый\"", "size": "[1,2.5]", "nested": "{\"ok\":true}" },
              "updatedAt": (test_start() + TimeDelta::microseconds(123_456))
                  .to_rfc3339_opts(SecondsFormat::AutoSi, true) },
        ])
    );
    let rest = app
        .json_as(&key, &format!("/v1/products/{}", both.id))
        .await;
    let rest: Vec<Value> = rest["data"]["translations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!([
                t["language"],
                t["name"],
                t["category_path"],
                t["attributes"],
                t["updated_at"]
            ])
        })
        .collect();
    let graphql: Vec<Value> = two
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!([
                t["language"],
                t["name"],
                t["categoryPath"],
                t["attributes"],
                t["updatedAt"]
            ])
        })
        .collect();
    assert_eq!(rest, graphql);
}

/// A page reads its products' current prices, special prices and latest
/// observations in its own statement (JSON columns); a seller's products
/// load them apart, as does a page whose price histories differ in size.
/// All give the same lists in the same order, and REST the same prices.
#[tokio::test]
async fn prices_read_with_a_page_equal_those_loaded_apart() {
    use entity::UserAuthStatus::{Anonymous, Authenticated};

    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "77")).await;
    let spec = |id: &str, minutes| ProductSpec {
        marketplace: Marketplace::Ozon,
        first_seen_at: test_start() - TimeDelta::minutes(minutes),
        ..product(id)
    };
    let bare = insert_product(&app.db, &shop, spec("bare", 0)).await;
    let priced = insert_product(&app.db, &shop, spec("priced", 1)).await;
    let at = test_start() + TimeDelta::microseconds(654_321);
    for (country_code, region_code, user_auth_status, price) in [
        ("ru", Some("msk"), Authenticated, 101.5),
        ("ru", None, Anonymous, 99.0),
        ("kz", None, Authenticated, 530.25),
    ] {
        let variant = Observation {
            country_code,
            region_code,
            user_auth_status,
            price,
            recorded_at: at,
        };
        insert_current_price(&app.db, priced.id, variant).await;
    }
    insert_special_price(&app.db, priced.id, "msk").await;
    insert_special_price(&app.db, priced.id, "").await;
    // Seven observations; the first two share a time (the later id is newer).
    for (i, hours) in [0, 0, 1, 2, 3, 4, 5].into_iter().enumerate() {
        let o = observation(90.0 + i as f64, at - TimeDelta::hours(hours));
        insert_observation(&app.db, priced.id, o).await;
    }

    let prices = "prices { countryCode regionCode userAuthStatus price oldPrice currency \
                  stockStatus stockQuantity recordedAt } \
                  specialPrices { countryCode regionCode userAuthStatus min max }";
    let history = |first: u32| {
        format!(
            "priceHistory(first: {first}) {{ pageInfo {{ hasNextPage }} edges {{ node {{ \
             price oldPrice currency stockStatus stockQuantity recordedAt }} }} }}"
        )
    };
    let node = format!("id {prices} {}", history(3));
    let paged = data(
        &app,
        &key,
        &format!("{{ products(first: 10) {{ nodes {{ {node} }} }} }}"),
        json!({}),
    )
    .await;
    let apart = data(
        &app,
        &key,
        &format!(
            "{{ sellers(lookup: {{ marketplace: OZON, sellerId: \"77\" }}) \
             {{ products(first: 10) {{ nodes {{ {node} }} }} }} }}"
        ),
        json!({}),
    )
    .await;
    let two_sizes = data(
        &app,
        &key,
        &format!(
            "{{ products(first: 10) {{ nodes {{ {node} more: {} }} }} }}",
            history(10)
        ),
        json!({}),
    )
    .await;
    let of = |list: &Value, id: Uuid| -> Value {
        let node = list["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == json!(id))
            .unwrap()
            .clone();
        json!([node["prices"], node["specialPrices"], node["priceHistory"]])
    };
    for id in [bare.id, priced.id] {
        let expected = of(&paged["products"], id);
        assert_eq!(of(&apart["sellers"][0]["products"], id), expected);
        assert_eq!(of(&two_sizes["products"], id), expected);
    }

    let bare = of(&paged["products"], bare.id);
    assert_eq!(
        bare,
        json!([[], [], { "pageInfo": { "hasNextPage": false }, "edges": [] }])
    );
    let shown = of(&paged["products"], priced.id);
    let variants: Vec<Value> = shown[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            json!([
                p["countryCode"],
                p["regionCode"],
                p["price"],
                p["recordedAt"]
            ])
        })
        .collect();
    let time = at.to_rfc3339_opts(SecondsFormat::AutoSi, true);
    assert_eq!(
        variants,
        [
            json!(["kz", null, 530.25, time]),
            json!(["ru", null, 99.0, time]),
            json!(["ru", "msk", 101.5, time]),
        ]
    );
    assert_eq!(shown[1].as_array().map(Vec::len), Some(2));
    let latest: Vec<Value> = nodes(&shown[2])
        .iter()
        .map(|n| n["price"].clone())
        .collect();
    assert_eq!(latest, [json!(91.0), json!(90.0), json!(92.0)]);
    assert_eq!(shown[2]["pageInfo"]["hasNextPage"], true);
    assert_eq!(nodes(&shown[2])[0]["recordedAt"], json!(time));
    let more = two_sizes["products"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == json!(priced.id))
        .unwrap()["more"]
        .clone();
    assert_eq!(nodes(&more).len(), 7);
    assert_eq!(more["pageInfo"]["hasNextPage"], false);

    let rest = app
        .json_as(&key, &format!("/v1/products/{}", priced.id))
        .await;
    let rest_variants: Vec<Value> = rest["data"]["prices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            json!([
                p["country_code"],
                p["region_code"],
                p["price"],
                p["recorded_at"]
            ])
        })
        .collect();
    assert_eq!(rest_variants, variants);
}

#[tokio::test]
async fn a_products_seller_counts_its_products_as_the_seller_lookup_does() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // Seven products over three sellers: the first seller has products 0, 3 and 6.
    let ids = rich_catalog(&app, 7).await;
    let d = data(
        &app,
        &key,
        r#"query($id: UUID!) {
          product(id: $id) { seller { productCount } }
          sellers(lookup: { marketplace: WILDBERRIES, sellerId: "1" }) { productCount }
        }"#,
        json!({ "id": ids[0] }),
    )
    .await;
    assert_eq!(d["product"]["seller"]["productCount"], 3);
    assert_eq!(d["sellers"][0]["productCount"], 3);
}

/// What a product node shows in the pages below.
const NODE: &str = "id seller { name productCount } translations { name } prices { price } priceHistory(first: 3) { edges { node { price } } }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_seller_product_pages_run_the_same_statements_for_10_and_100_rows() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = insert_session(&app.db, &key, test_start()).await;
    for id in rich_catalog(&app, 111).await {
        insert_submission(&app.db, session.id, SubmissionStatus::Merged, Some(id)).await;
    }
    data(&app, &key, "{ __typename }", json!({})).await;

    let submissions = format!(
        "query($id: UUID!, $first: Int) {{ me {{ scrapeSession(id: $id) {{ submissions(first: $first) {{ edges {{ node {{ status product {{ {NODE} }} }} }} }} }} }} }}"
    );
    let sellers = format!(
        "query($first: Int) {{ sellers(lookup: {{ marketplace: OZON, sellerId: \"2\" }}) {{ products(first: $first) {{ edges {{ node {{ {NODE} }} }} }} }} }}"
    );
    // The seller has 37 products; the session has 111 merged ones.
    for (query, at, sizes) in [
        (submissions, "/me/scrapeSession/submissions", [10, 100]),
        (sellers, "/sellers/0/products", [10, 36]),
    ] {
        let mut counts = Vec::new();
        for first in sizes {
            let vars = json!({ "id": session.id, "first": first });
            let (statements, d) = statements_for(&app, &key, &query, vars).await;
            let rows = nodes(d.pointer(at).expect("connection"));
            assert_eq!(rows.len(), first, "{at}");
            counts.push(statements);
        }
        assert_eq!(
            counts[0], counts[1],
            "{at}: statements must not grow with the page"
        );
        // Key, session (twice: the field and the tenant check of its
        // submissions), total, page, quota (limit, charge), then one per
        // relation: products, sellers and their counts, translations, prices,
        // latest history.
        assert!(counts[1] <= 13, "{at}: {counts:?}");
    }
}

// ---------------------------------------------------------------- limits of a query

async fn limited_app() -> (TestApp, String) {
    let app = TestApp::spawn_with_settings(Settings {
        graphql: GraphqlConfig {
            max_depth: 5,
            max_complexity: 60,
            ..GraphqlConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    insert_product(&app.db, &shop, product("p")).await;
    // Stamps the key's last use, so later requests cost only the key lookup.
    data(&app, &key, "{ __typename }", json!({})).await;
    (app, key)
}

/// Statements of a request that resolves nothing: the key lookup only.
async fn admission_cost(app: &TestApp, key: &str) -> usize {
    statements_for(app, key, "{ __typename }", json!({}))
        .await
        .0
}

/// A query refused before execution: one clear error, no data, and no
/// statement beyond the key lookup.
async fn assert_refused(app: &TestApp, key: &str, query: &str, variables: Value, words: &str) {
    let admission = admission_cost(app, key).await;
    let before = app.statements();
    let (status, body) = post(app, Some(key), query, variables).await;
    assert_eq!(app.statements() - before, admission, "nothing executed");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.get("data").is_none(),
        "never executed, so no data: {body}"
    );
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{body}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains(words), "{message:?} says {words:?}");
    assert_eq!(
        errors[0]["extensions"]["code"], "QUERY_TOO_COMPLEX",
        "{body}"
    );
}

#[tokio::test]
async fn too_deep_query_is_refused_before_execution() {
    let (app, key) = limited_app().await;
    let deep = "{ products(first: 1) { edges { node { seller { products(first: 1) { totalCount } } } } } }";
    let words = "nests its fields 6 levels deep; the limit is 5 (VITRINA_GRAPHQL_MAX_DEPTH)";
    assert_refused(&app, &key, deep, json!({}), words).await;
    let at_limit = "{ products(first: 1) { edges { node { seller { name } } } } }";
    let d = data(&app, &key, at_limit, json!({})).await;
    assert_eq!(nodes(&d["products"]).len(), 1);
}

#[tokio::test]
async fn too_complex_query_is_refused_before_execution() {
    let (app, key) = limited_app().await;
    // 30 products x (edges + node + id + name) + 1 = 121 > 60.
    let wide = "{ products(first: 30) { edges { node { id name } } } }";
    let words = "complexity is 121 (each field 1, a connection's fields times its page size); \
                 the limit is 60 (VITRINA_GRAPHQL_MAX_COMPLEXITY)";
    assert_refused(&app, &key, wide, json!({}), words).await;
    let through_variable = "query($n: Int) { products(first: $n) { edges { node { id name } } } }";
    assert_refused(&app, &key, through_variable, json!({ "n": 30 }), words).await;
    let without_size = "{ products { edges { node { id } } } }";
    assert_refused(&app, &key, without_size, json!({}), "the limit is 60").await;
    data(
        &app,
        &key,
        "{ products(first: 10) { edges { node { id name } } } }",
        json!({}),
    )
    .await;
}

#[tokio::test]
async fn refused_query_is_http_400_with_the_graphql_response_media_type() {
    let (app, key) = limited_app().await;
    let wide = "{ products(first: 30) { edges { node { id name } } } }";
    let response = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(&key)
        .header("accept", GRAPHQL_RESPONSE)
        .json(&json!({ "query": wide }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "QUERY_TOO_COMPLEX");
}

#[tokio::test]
async fn each_query_reports_its_complexity_and_depth() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let query = "{ products(first: 2) { totalCount edges { node { id } } } }";
    let (status, body) = post(&app, Some(&key), query, json!({})).await;
    assert_eq!(status, 200);
    // products: 2 x (totalCount 1 + edges 1 + node 1 + id 1) + 1.
    assert_eq!(
        body["extensions"]["analyzer"],
        json!({ "complexity": 9, "depth": 4 }),
        "{body}"
    );
    let (_, body) = post(&app, Some(&key), "{ brands { brand } }", json!({})).await;
    assert_eq!(
        body["extensions"]["analyzer"],
        json!({ "complexity": 2, "depth": 2 })
    );
}

#[tokio::test]
async fn one_query_text_sent_again_is_priced_for_its_own_operation_and_variables() {
    let app = TestApp::spawn_with_settings(Settings {
        graphql: GraphqlConfig {
            max_complexity: 50,
            ..GraphqlConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    // The server keeps the cost of requests it priced: a page size, an
    // operation or a value that no longer fits its type must be priced anew.
    let send = |query: &'static str, operation: &'static str, variables: Value| {
        let body = json!({ "query": query, "operationName": operation, "variables": variables });
        let (app, key) = (&app, &key);
        async move {
            let response = app.post_as(key, "/graphql", &body).await;
            response.json::<Value>().await.unwrap()
        }
    };
    let page = "query Page($n: Int!) { products(first: $n) { edges { node { id } } } }";
    // products: n x (edges 1 + node 1 + id 1) + 1.
    for (n, complexity) in [(2, 7), (5, 16), (2, 7)] {
        for _ in 0..2 {
            let body = send(page, "Page", json!({ "n": n })).await;
            assert!(body.get("errors").is_none(), "{body}");
            let analyzer = &body["extensions"]["analyzer"];
            assert_eq!(analyzer["complexity"], json!(complexity), "n = {n}: {body}");
        }
    }
    let body = send(page, "Page", json!({ "n": 20 })).await;
    assert_eq!(only_error_code(&body), "QUERY_TOO_COMPLEX", "{body}");

    let two = "query One($id: UUID!) { product(id: $id) { id } } query Brands { brands { brand } }";
    for _ in 0..2 {
        let body = send(two, "One", json!({ "id": Uuid::nil() })).await;
        assert_eq!(only_error_code(&body), "NOT_FOUND", "{body}");
        let body = send(two, "Brands", json!({})).await;
        assert_eq!(body["data"], json!({ "brands": [] }), "{body}");
    }
    let body = send(two, "One", json!({ "id": "not a uuid" })).await;
    assert_eq!(body["data"], Value::Null, "{body}");
    let code = &body["errors"][0]["extensions"]["code"];
    assert_eq!(code, "INVALID_PARAMETER", "{body}");
    let body = send(two, "Neither", json!({})).await;
    assert!(body.get("data").is_none(), "{body}");
    assert!(
        body["errors"].as_array().is_some_and(|e| !e.is_empty()),
        "{body}"
    );
}

// ---------------------------------------------------------------- daily quota

const SUBMISSIONS: &str = r#"query($id: UUID!, $first: Int) {
  me { scrapeSession(id: $id) { submissions(first: $first) {
    totalCount edges { node { status product { id } } }
  } } }
}"#;

/// A session of `key` with `merged` merged products followed by `pending`
/// pending placeholders.
async fn session_with(app: &TestApp, key: &str, merged: usize, pending: usize) -> Uuid {
    let session = insert_session(&app.db, key, test_start()).await;
    let shop = insert_seller(
        &app.db,
        fixtures::seller(Marketplace::Wildberries, &session.id.to_string()),
    )
    .await;
    for i in 0..merged {
        let p = insert_product(&app.db, &shop, product(&format!("m{i}-{}", session.id))).await;
        insert_submission(&app.db, session.id, SubmissionStatus::Merged, Some(p.id)).await;
    }
    for _ in 0..pending {
        insert_submission(&app.db, session.id, SubmissionStatus::Pending, None).await;
    }
    session.id
}

fn quota(limit: i64) -> Limits {
    Limits {
        rate_per_minute: 600,
        daily_quota: limit,
    }
}

#[tokio::test]
async fn session_products_read_through_graphql_are_charged_like_rest() {
    let app = TestApp::spawn_with(quota(10)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 2).await;
    let vars = json!({ "id": session, "first": 100 });

    let d = data(&app, &key, SUBMISSIONS, vars.clone()).await;
    assert_eq!(nodes(&d["me"]["scrapeSession"]["submissions"]).len(), 5);
    assert_eq!(quota_used(&app).await, 3, "merged rows only");
    // Not selecting the product does not make the rows free.
    let bare = "query($id: UUID!) { me { scrapeSession(id: $id) { submissions { totalCount } } } }";
    data(&app, &key, bare, json!({ "id": session })).await;
    assert_eq!(quota_used(&app).await, 6);
    // The same quota as REST.
    let rest = app
        .get_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    assert_eq!(
        rest.headers()["x-quota-remaining"].to_str().unwrap(),
        "1",
        "10 - 3 - 3 - 3"
    );
    // Pending placeholders stay free when the quota is nearly used up.
    let pending = session_with(&app, &key, 0, 4).await;
    data(&app, &key, SUBMISSIONS, json!({ "id": pending })).await;
    assert_eq!(quota_used(&app).await, 9);
}

#[tokio::test]
async fn graphql_page_passing_the_quota_fails_whole_and_charges_nothing() {
    let app = TestApp::spawn_with(quota(5)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 1).await;
    let vars = json!({ "id": session, "first": 100 });
    data(&app, &key, SUBMISSIONS, vars.clone()).await;
    assert_eq!(quota_used(&app).await, 3);

    let (status, body) = post(&app, Some(&key), SUBMISSIONS, vars).await;
    assert_eq!(status, 200);
    assert_eq!(only_error_code(&body), "QUOTA_EXCEEDED");
    let served = body.pointer("/data/me/scrapeSession/submissions");
    assert!(served.is_none_or(Value::is_null), "no rows served: {body}");
    assert_eq!(quota_used(&app).await, 3, "the refusal charged nothing");

    let smaller = json!({ "id": session, "first": 2 });
    let d = data(&app, &key, SUBMISSIONS, smaller).await;
    assert_eq!(nodes(&d["me"]["scrapeSession"]["submissions"]).len(), 2);
    assert_eq!(quota_used(&app).await, 5);
    let rest = rest_error(&app, &key, &format!("/v1/me/scrapes/{session}/products")).await;
    assert_eq!(
        rest,
        (429, "quota_exceeded".to_owned()),
        "one quota for both"
    );
}

#[tokio::test]
async fn a_request_reading_several_metered_lists_is_charged_once_or_refused_whole() {
    let app = TestApp::spawn_with(quota(5)).await;
    let key = app.key("alpha").await;
    let (a, b) = (
        session_with(&app, &key, 2, 0).await,
        session_with(&app, &key, 3, 1).await,
    );
    let query = r#"query($a: UUID!, $b: UUID!, $first: Int) { me {
      a: scrapeSession(id: $a) { submissions(first: $first) { edges { node { product { id } } } } }
      b: scrapeSession(id: $b) { products(first: $first) { edges { node { id } } } }
      again: scrapeSession(id: $a) { products(first: $first) { totalCount } }
    } }"#;
    // A row with a product from each list: within the quota of 5, charged together.
    let within = json!({ "a": a, "b": b, "first": 1 });
    let response = app
        .post_as(
            &key,
            "/graphql",
            &json!({ "query": query, "variables": within }),
        )
        .await;
    assert_eq!(response.headers()["x-quota-remaining"], "2");
    let body: Value = response.json().await.unwrap();
    assert!(body.get("errors").is_none(), "{body}");
    assert_eq!(quota_used(&app).await, 3);

    // Three more would pass it, though each list alone would not: refused
    // whole, no data, nothing charged.
    let (status, body) = post(&app, Some(&key), query, within).await;
    assert_eq!(status, 200);
    assert_eq!(only_error_code(&body), "QUOTA_EXCEEDED", "{body}");
    let at = &body["errors"][0]["path"];
    let lists = [
        json!(["me", "a", "submissions"]),
        json!(["me", "b", "products"]),
        json!(["me", "again", "products"]),
    ];
    assert!(lists.contains(at), "at one of the metered lists: {body}");
    assert_eq!(body["data"], Value::Null, "no rows served: {body}");
    assert_eq!(quota_used(&app).await, 3, "the refusal charged nothing");

    // What fits is still served.
    let one = json!({ "a": a, "first": 1 });
    let single = "query($a: UUID!, $first: Int) { me { scrapeSession(id: $a) { products(first: $first) { totalCount } } } }";
    let d = data(&app, &key, single, one).await;
    assert_eq!(d["me"]["scrapeSession"]["products"]["totalCount"], 2);
    assert_eq!(quota_used(&app).await, 4);
}

// ---------------------------------------------------------------- access

async fn expect_unauthorized(app: &TestApp, key: Option<&str>) {
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": "{ brands { brand } }" }));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 401, "{key:?}");
    assert_eq!(
        response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap()),
        Some("Bearer")
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(only_error_code(&body), "UNAUTHORIZED", "{key:?}");
    assert!(body.get("data").is_none_or(Value::is_null), "{body}");
}

#[tokio::test]
async fn missing_unknown_or_revoked_key_is_401_unauthorized() {
    let app = TestApp::spawn().await;
    expect_unauthorized(&app, None).await;
    expect_unauthorized(&app, Some("vtr_nope")).await;
    let new = vitrina::accounts::create_key(&app.db, "acme", app.clock.now())
        .await
        .unwrap();
    data(&app, &new.secret, "{ brands { brand } }", json!({})).await;
    // A query the server has answered before is priced while the key is
    // checked, and refused all the same.
    expect_unauthorized(&app, None).await;
    expect_unauthorized(&app, Some("vtr_nope")).await;
    vitrina::accounts::revoke_key(&app.db, new.key.id, app.clock.now())
        .await
        .unwrap();
    expect_unauthorized(&app, Some(&new.secret)).await;
    let get = app
        .get("/graphql?query=%7B%20brands%20%7B%20brand%20%7D%20%7D")
        .await;
    assert_eq!(get.status(), 401, "GET queries need a key too");
}

#[tokio::test]
async fn graphiql_page_loads_without_a_key() {
    let app = TestApp::spawn().await;
    let response = app
        .client
        .get(app.url("/graphql"))
        .header("accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let media = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(media.starts_with("text/html"), "{media}");
    let page = response.text().await.unwrap();
    for part in [
        "GraphiQL",
        "query Dashboard",
        "products(filter:",
        "\"defaultHeaders\"",
        "Authorization",
    ] {
        assert!(page.contains(part), "the page has {part:?}");
    }
}

#[tokio::test]
async fn graphql_requests_count_against_the_same_per_minute_limit_as_rest() {
    let app = TestApp::spawn_with(Limits {
        rate_per_minute: 3,
        daily_quota: 10_000,
    })
    .await;
    let key = app.key("acme").await;
    let query = json!({ "query": "{ brands { brand } }" });
    let send = || {
        app.client
            .post(app.url("/graphql"))
            .bearer_auth(&key)
            .json(&query)
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-ratelimit-limit"], "3");
    assert_eq!(first.headers()["x-ratelimit-remaining"], "2");
    assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 200);
    assert_eq!(send().await.unwrap().status(), 200);

    app.clock.advance(TimeDelta::seconds(45));
    let refused = send().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "15");
    assert_eq!(refused.headers()["x-ratelimit-remaining"], "0");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(only_error_code(&body), "RATE_LIMITED");
    assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 429);

    app.clock.advance(TimeDelta::seconds(15));
    assert_eq!(send().await.unwrap().status(), 200, "a new minute");
}

// ---------------------------------------------------------------- GraphQL over HTTP

async fn post_accepting(
    app: &TestApp,
    key: &str,
    accept: Option<&str>,
    query: &str,
) -> (u16, String, Value) {
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(key)
        .json(&json!({ "query": query }));
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let media = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (status, media, response.json().await.unwrap())
}

#[tokio::test]
async fn one_query_text_sent_again_is_answered_for_its_own_variables_and_operation() {
    let (app, key) = demo_app(3).await;
    // The server keeps parsed documents by query text: what a request's
    // variables and operation name select must still be per request.
    let query = "query Named($with: Boolean!) { products(first: 1) { edges { node { id name @include(if: $with) } } } }
                 query Count { products(first: 1) { totalCount } }";
    let send = |operation: &'static str, variables: Value| {
        let app = &app;
        let key = &key;
        async move {
            let body =
                json!({ "query": query, "operationName": operation, "variables": variables });
            let body: Value = app
                .post_as(key, "/graphql", &body)
                .await
                .json()
                .await
                .unwrap();
            assert!(body.get("errors").is_none(), "{body}");
            body["data"]["products"].clone()
        }
    };
    for with in [true, false, true] {
        let products = send("Named", json!({ "with": with })).await;
        let node = &products["edges"][0]["node"];
        assert!(node["id"].is_string(), "{products}");
        assert_eq!(node.get("name").is_some(), with, "{products}");
    }
    let products = send("Count", json!({})).await;
    assert_eq!(products, json!({ "totalCount": 3 }));
}

#[tokio::test]
async fn fields_are_answered_in_the_order_the_query_asks_for_them() {
    let (app, key) = demo_app(3).await;
    // Neither alphabetical nor declaration order, so only the query's order passes.
    let query =
        "{ products(first: 2) { edges { node { name id marketplace brand } } totalCount } }";
    let text = app
        .post_as(&key, "/graphql", &json!({ "query": query }))
        .await
        .text()
        .await
        .unwrap();
    let node = text.find(r#""node":{"#).expect(&text);
    let at = |field: &str| text[node..].find(&format!(r#""{field}":"#)).expect(field);
    assert!(
        at("name") < at("id") && at("id") < at("marketplace") && at("marketplace") < at("brand"),
        "{text}"
    );
    assert!(
        text.find(r#""edges""#) < text.find(r#""totalCount""#),
        "{text}"
    );

    // Fields that wait for the database ahead of ones that do not: at the
    // root, and inside a node behind a fragment.
    let waiting = "fragment F on Product { translations { language } id }
        { a: products(first: 1) { nodes { ...F } } b: __typename }";
    let text = app
        .post_as(&key, "/graphql", &json!({ "query": waiting }))
        .await
        .text()
        .await
        .unwrap();
    let at = |field: &str| text.find(&format!(r#""{field}":"#)).expect(field);
    assert!(at("a") < at("b"), "{text}");
    assert!(at("translations") < at("id"), "{text}");

    // The same for the named operation of a document that holds two.
    let named = json!({
        "query": "query One { __typename } query Two { a: products(first: 1) { totalCount } b: __typename }",
        "operationName": "Two",
    });
    let text = app
        .post_as(&key, "/graphql", &named)
        .await
        .text()
        .await
        .unwrap();
    assert!(text.find(r#""a":"#) < text.find(r#""b":"#), "{text}");
}

/// Objects are answered as the query selects their fields: aliases,
/// `__typename`, fragments, a key asked twice merged at its first place,
/// `@skip` and `@include`, in the query's order.
#[tokio::test]
async fn an_objects_fields_are_answered_as_the_query_selects_them() {
    let (app, key) = demo_app(3).await;
    let query = "query($no: Boolean!) { products(first: 2) { edges { node {
          __typename id ident: id
          seller { name }
          seller { tin __typename }
          ... on Product { brand }
          ...More
          name @skip(if: true)
          marketplace @include(if: $no)
          priceHistory(first: 2) { edges { node { __typename p: price } } }
        } } } }
        fragment More on Product { seller { sellerId } url }";
    let body = app
        .post_as(
            &key,
            "/graphql",
            &json!({ "query": query, "variables": { "no": false } }),
        )
        .await;
    let text = body.text().await.unwrap();
    let answer: Value = serde_json::from_str(&text).unwrap();
    let plain = data(
        &app,
        &key,
        "{ products(first: 2) { edges { node { id brand url
           seller { name tin sellerId } priceHistory(first: 2) { edges { node { price } } } } } } }",
        json!({}),
    )
    .await;
    let (got, want) = (
        nodes(&answer["data"]["products"]),
        nodes(&plain["products"]),
    );
    assert_eq!(got.len(), 2, "{text}");
    // In query order: the first node's text.
    let first = &text[text.find(r#""node":{"#).unwrap()..text.find(r#"}},{"node""#).unwrap()];
    let at = |key: &str| {
        first
            .find(key)
            .unwrap_or_else(|| panic!("{key} in {first}"))
    };
    let order = [
        r#""__typename":"Product""#,
        r#""id":"#,
        r#""ident":"#,
        r#""seller":{"name":"#,
        r#""tin":"#,
        r#""__typename":"Seller""#,
        r#""sellerId":"#,
        r#""brand":"#,
        r#""url":"#,
        r#""priceHistory":"#,
    ];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{first}");
    for (node, want) in got.iter().zip(&want) {
        let keys: Vec<&str> = node
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "__typename",
                "brand",
                "id",
                "ident",
                "priceHistory",
                "seller",
                "url"
            ],
            "{text}"
        );
        assert_eq!(node["__typename"], "Product");
        assert_eq!((&node["id"], &node["ident"]), (&want["id"], &want["id"]));
        let seller: Vec<&str> = node["seller"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(seller, ["__typename", "name", "sellerId", "tin"]);
        for field in ["name", "tin", "sellerId"] {
            assert_eq!(node["seller"][field], want["seller"][field], "{field}");
        }
        assert_eq!(node["seller"]["__typename"], "Seller");
        assert_eq!(
            (&node["brand"], &node["url"]),
            (&want["brand"], &want["url"])
        );
        let prices = nodes(&node["priceHistory"]);
        let wanted = nodes(&want["priceHistory"]);
        assert_eq!(prices.len(), wanted.len());
        for (price, wanted) in prices.iter().zip(&wanted) {
            assert_eq!(
                price,
                &json!({ "__typename": "PriceObservation", "p": wanted["price"] })
            );
        }
    }
}

#[tokio::test]
async fn graphql_response_media_type_is_used_when_accepted_and_json_otherwise() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let ok = "{ brands { brand } }";
    let unknown_field = "{ brands { nope } }";
    let not_found = format!("{{ product(id: \"{}\") {{ id }} }}", Uuid::new_v4());

    let (status, media, body) = post_accepting(&app, &key, Some(GRAPHQL_RESPONSE), ok).await;
    assert_eq!((status, media.as_str()), (200, GRAPHQL_RESPONSE));
    assert_eq!(body["data"], json!({ "brands": [] }));
    let both = "application/graphql-response+json, application/json;q=0.9";
    let (_, media, _) = post_accepting(&app, &key, Some(both), ok).await;
    assert_eq!(media, GRAPHQL_RESPONSE);

    // A request that fails validation never executes: 400 in the new media type.
    let (status, media, body) =
        post_accepting(&app, &key, Some(GRAPHQL_RESPONSE), unknown_field).await;
    assert_eq!((status, media.as_str()), (400, GRAPHQL_RESPONSE), "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("nope")
    );
    assert!(
        body.get("data").is_none(),
        "never executed, so no data: {body}"
    );
    // An error during execution is still a 200: the request itself was fine.
    let (status, _, body) = post_accepting(&app, &key, Some(GRAPHQL_RESPONSE), &not_found).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(only_error_code(&body), "NOT_FOUND");
    assert_eq!(body["data"], Value::Null, "executed: data is present");
    assert!(body.get("data").is_some());

    for accept in [None, Some("application/json"), Some("*/*")] {
        let (status, media, body) = post_accepting(&app, &key, accept, unknown_field).await;
        assert_eq!(
            (status, media.as_str()),
            (200, "application/json"),
            "{accept:?}"
        );
        assert!(body["errors"].is_array());
        assert!(body.get("data").is_none(), "{body}");
        let (status, media, _) = post_accepting(&app, &key, accept, ok).await;
        assert_eq!(
            (status, media.as_str()),
            (200, "application/json"),
            "{accept:?}"
        );
    }
}

#[tokio::test]
async fn get_runs_queries_from_the_query_string() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let p = insert_product(&app.db, &shop, product("p")).await;
    let params = encoded(&[
        (
            "query",
            "query($id: UUID!) { product(id: $id) { externalId } }".to_owned(),
        ),
        ("variables", json!({ "id": p.id }).to_string()),
    ]);
    let response = app.get_as(&key, &format!("/graphql?{params}")).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["data"], json!({ "product": { "externalId": "p" } }));
}

#[tokio::test]
async fn an_unreadable_body_is_a_graphql_error_in_json() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (content_type, body) in [
        ("application/json", "{ not json"),
        ("application/json", r#"{"query": 42}"#),
        ("application/json", r#"{"foo": 1}"#),
        ("application/json", "{}"),
        ("application/json", "[]"),
        (
            "application/json; charset=utf-8",
            r#"[{"query": "{ __typename }"}, {}]"#,
        ),
    ] {
        let response = app
            .client
            .post(app.url("/graphql"))
            .bearer_auth(&key)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let reply: Value = response.json().await.expect("a JSON body");
        assert_eq!(only_error_code(&reply), "BAD_REQUEST", "{body}: {reply}");
    }
}

#[tokio::test]
async fn a_method_graphql_does_not_take_is_a_graphql_error_naming_those_it_does() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (method, path, allow) in [
        (reqwest::Method::PUT, "/graphql", "GET, POST"),
        (reqwest::Method::DELETE, "/graphql", "GET, POST"),
        (reqwest::Method::POST, "/graphql/ws", "GET"),
    ] {
        let response = app
            .client
            .request(method.clone(), app.url(path))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method} {path}");
        assert_eq!(
            response
                .headers()
                .get("allow")
                .and_then(|v| v.to_str().ok()),
            Some(allow),
            "{method} {path}"
        );
        let reply: Value = response.json().await.expect("a JSON body");
        assert_eq!(only_error_code(&reply), "METHOD_NOT_ALLOWED", "{reply}");
    }
}

/// An app with batched requests enabled.
async fn batching_app() -> TestApp {
    TestApp::spawn_with_settings(Settings {
        graphql: GraphqlConfig {
            batching: true,
            ..GraphqlConfig::default()
        },
        ..Settings::default()
    })
    .await
}

#[tokio::test]
async fn batching_is_refused_unless_enabled() {
    let batch = json!([
        { "query": "{ brands { brand } }" },
        { "query": "{ me { id } }" }
    ]);
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let refused = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(&key)
        .json(&batch)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    let message = body["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("Batch"), "{message}");
    // Without a key, the key is what is refused.
    let keyless = app
        .client
        .post(app.url("/graphql"))
        .json(&batch)
        .send()
        .await
        .unwrap();
    assert_eq!(keyless.status(), 401);
    let body: Value = keyless.json().await.unwrap();
    assert_eq!(only_error_code(&body), "UNAUTHORIZED");

    let app = batching_app().await;
    let key = app.key("acme").await;
    let accepted = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(&key)
        .json(&batch)
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 200);
    let body: Value = accepted.json().await.unwrap();
    let answers = body.as_array().expect("one answer per operation");
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0]["data"], json!({ "brands": [] }));
    assert!(answers[1]["data"]["me"]["id"].is_string());
}

#[tokio::test]
async fn each_operation_of_a_batch_is_priced_and_answered_on_its_own() {
    let app = batching_app().await;
    let key = app.key("acme").await;
    let batch = json!([
        { "query": "{ brands { brand } }" },
        { "query": "{ brands { nope } }" }
    ]);
    let response = app.post_as(&key, "/graphql", &batch).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let answers = body.as_array().expect("one answer per operation");
    assert_eq!(answers[0]["data"], json!({ "brands": [] }), "{body}");
    assert_eq!(
        answers[0]["extensions"]["analyzer"],
        json!({ "complexity": 2, "depth": 2 }),
        "{body}"
    );
    assert!(answers[1].get("data").is_none(), "never executed: {body}");
    assert_eq!(
        answers[1]["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{body}"
    );
}

#[tokio::test]
async fn schema_graphql_is_the_schema_the_server_runs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema.graphql");
    let checked_in = std::fs::read_to_string(path).expect("schema.graphql at the repo root");
    assert!(
        checked_in == vitrina::graphql::sdl(),
        "schema.graphql is stale: run `cargo run -- schema --out schema.graphql`"
    );
}

// ---------------------------------------------------------------- metering and codes

#[tokio::test]
async fn metered_graphql_responses_carry_the_quota_headers_and_refusals_a_retry_after() {
    let app = TestApp::spawn_with(quota(4)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 1).await;
    let request = || {
        app.client
            .post(app.url("/graphql"))
            .bearer_auth(&key)
            .json(&json!({ "query": SUBMISSIONS, "variables": { "id": session, "first": 100 } }))
    };
    let served = request().send().await.unwrap();
    let header = |r: &reqwest::Response, name: &str| r.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(
        (
            header(&served, "x-quota-limit"),
            header(&served, "x-quota-remaining")
        ),
        ("4".into(), "1".into())
    );

    let refused = request().send().await.unwrap();
    assert_eq!(
        header(&refused, "x-quota-remaining"),
        "1",
        "nothing was charged"
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "QUOTA_EXCEEDED");
    assert_eq!(
        body["errors"][0]["extensions"]["retryAfter"], 43_200,
        "seconds to the next UTC midnight"
    );

    let unmetered = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(&key)
        .json(&json!({ "query": "{ brands { brand } }" }))
        .send()
        .await
        .unwrap();
    assert!(unmetered.headers().get("x-quota-limit").is_none());
}

#[tokio::test]
async fn malformed_arguments_are_invalid_parameter_and_other_request_errors_have_codes_too() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for query in [
        "{ product(id: \"not-a-uuid\") { id } }",
        "{ products(filter: { marketplace: AMAZON }) { totalCount } }",
    ] {
        let (_, body) = post(&app, Some(&key), query, json!({})).await;
        assert_eq!(
            body["errors"][0]["extensions"]["code"], "INVALID_PARAMETER",
            "{query}: {body}"
        );
    }
    let (_, body) = post(&app, Some(&key), "{ nope }", json!({})).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{body}"
    );
}

#[tokio::test]
async fn every_type_and_field_of_the_schema_is_described() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let query = "{ __schema { types { name kind description fields { name description } inputFields { name description } } } }";
    let d = data(&app, &key, query, json!({})).await;
    let mut missing = Vec::new();
    for t in d["__schema"]["types"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        // GraphQL's own types and scalars describe themselves; connection
        // wrappers are generated by async-graphql (their fields are described).
        if name.starts_with("__")
            || name.ends_with("Connection")
            || ["String", "Int", "Float", "Boolean", "ID"].contains(&name)
        {
            continue;
        }
        if t["description"].as_str().is_none_or(str::is_empty) {
            missing.push(name.to_owned());
        }
        for f in t["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(t["inputFields"].as_array().into_iter().flatten())
        {
            if f["description"].as_str().is_none_or(str::is_empty) {
                missing.push(format!("{name}.{}", f["name"].as_str().unwrap()));
            }
        }
    }
    assert!(missing.is_empty(), "undescribed: {missing:#?}");
}

#[tokio::test]
async fn session_products_are_its_merged_products_in_order_and_are_charged() {
    let app = TestApp::spawn_with(quota(100)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 2).await;
    let query = "query($id: UUID!) { me { scrapeSession(id: $id) { products(first: 2) { totalCount pageInfo { hasNextPage } edges { node { id } } } } } }";
    let d = data(&app, &key, query, json!({ "id": session })).await;
    let products = &d["me"]["scrapeSession"]["products"];
    assert_eq!(
        (
            products["totalCount"].as_u64(),
            products["pageInfo"]["hasNextPage"].as_bool()
        ),
        (Some(3), Some(true))
    );
    let ids: Vec<&str> = products["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["node"]["id"].as_str().unwrap())
        .collect();
    let rest = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    let rest_ids: Vec<&str> = rest["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["product"]["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        rest_ids[..2],
        "the merged products, in submission order"
    );
    assert_eq!(
        quota_used(&app).await,
        2 + 3,
        "two through GraphQL, three through REST"
    );
}
