//! GraphQL over HTTP for tests: requests, their data and errors, connection
//! nodes, and GraphQL answers written in REST's shape, so a test can compare
//! the two surfaces over the same data.

use serde_json::{Value, json};

use super::{TestApp, assert_plain_sentence};

/// The GraphQL-over-HTTP media type of responses.
pub const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";

/// POSTs `query` with `variables` (as `key`, or without `Authorization` when
/// `None`); returns the HTTP status and the JSON body.
pub async fn post(app: &TestApp, key: Option<&str>, query: &str, variables: Value) -> (u16, Value) {
    let body = json!({ "query": query, "variables": variables });
    post_body(app, key, &body).await
}

/// POSTs `body` (a request, a batch, or anything) to `/graphql` as [`post`]
/// does; returns the HTTP status and the JSON body.
pub async fn post_body(app: &TestApp, key: Option<&str>, body: &Value) -> (u16, Value) {
    let mut request = app.client.post(app.url("/graphql")).json(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let body = response.json().await.expect("JSON body");
    (status, body)
}

/// POSTs `query` as `key` and hands back the response, for tests of its
/// headers.
pub async fn post_response(app: &TestApp, key: &str, query: &str) -> reqwest::Response {
    app.client
        .post(app.url("/graphql"))
        .bearer_auth(key)
        .json(&json!({ "query": query }))
        .send()
        .await
        .expect("request")
}

/// The `data` of a query that must succeed without errors.
pub async fn data(app: &TestApp, key: &str, query: &str, variables: Value) -> Value {
    let (status, body) = post(app, Some(key), query, variables).await;
    assert_eq!(status, 200, "{query}\n{body}");
    assert!(body.get("errors").is_none(), "{query}\n{body}");
    body["data"].clone()
}

/// The one error of a query that must fail during execution (HTTP 200 with
/// `application/json`); checks its message and returns `extensions.code`.
pub async fn error_code(app: &TestApp, key: &str, query: &str, variables: Value) -> String {
    let (status, body) = post(app, Some(key), query, variables).await;
    assert_eq!(status, 200, "{query}\n{body}");
    only_error_code(&body)
}

/// The `extensions.code` of the one error of `body`, whose message is a
/// plain sentence.
pub fn only_error_code(body: &Value) -> String {
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{body}");
    assert_plain_sentence(errors[0]["message"].as_str().expect("message"));
    errors[0]["extensions"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The statements a query runs, and its data.
pub async fn statements_for(
    app: &TestApp,
    key: &str,
    query: &str,
    variables: Value,
) -> (usize, Value) {
    let before = app.statements();
    let d = data(app, key, query, variables).await;
    (app.statements() - before, d)
}

/// The app over the demo dataset, with a key of the demo account: the same
/// seed in every GraphQL test.
pub async fn demo_app(products: u64) -> (TestApp, String) {
    TestApp::demo(products, 7).await
}

/// The nodes of a connection's edges.
pub fn nodes(connection: &Value) -> Vec<Value> {
    connection["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["node"].clone())
        .collect()
}

// ---------------------------------------------------------------- REST's shape

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
pub fn input(params: &[(&str, String)]) -> Value {
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
pub fn as_rest(value: Value) -> Value {
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
pub fn with_shapes(query: &str) -> String {
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
