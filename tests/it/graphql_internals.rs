//! The async-graphql internals Vitrina's GraphQL layer relies on, each
//! checked through the real endpoint, so that an upgrade which changes one
//! fails here by name. async-graphql is pinned exactly in `Cargo.toml`,
//! whose comment lists the same files:
//! - `graphql/schema/inline.rs` reads the schema registry's `implements` (a
//!   doc-hidden field) to apply a fragment on an interface;
//! - `graphql/request/error_codes.rs` codes validation errors by the position each points
//!   at, in the order validation reports them;
//! - `graphql/request/field_order.rs` puts an answer's fields back in the query's order,
//!   which async-graphql gives up when a field waits.

use serde_json::{Value, json};

use crate::helpers::graphql::{data, demo_app, post};

#[tokio::test]
async fn a_fragment_on_an_interface_applies_to_the_objects_that_implement_it() {
    let (app, key) = demo_app(3).await;
    let query =
        "{ products(first: 1) { nodes { id ...Identified ... on Node { viaInline: globalId } } } }
                 fragment Identified on Node { globalId }";
    let d = data(&app, &key, query, json!({})).await;
    let node = &d["products"]["nodes"][0];
    assert!(
        node["globalId"].is_string(),
        "inline.rs: a spread on Node: {d}"
    );
    assert_eq!(
        node["viaInline"], node["globalId"],
        "an inline fragment on Node: {d}"
    );
}

#[tokio::test]
async fn validation_errors_are_coded_by_where_they_point_in_the_order_reported() {
    let (app, key) = demo_app(3).await;
    // A value that is not an Int, an unknown field, and the cost function
    // of the first field, which reads that value and cannot.
    let query = "{ a: products(first: \"x\") { nodes { id } } c: nothing }";
    let (status, body) = post(&app, Some(&key), query, json!({})).await;
    assert_eq!(status, 200, "{body}");
    let coded: Vec<(&Value, &Value)> = body["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| (&e["extensions"]["code"], &e["locations"][0]["column"]))
        .collect();
    let want = [
        (json!("INVALID_PARAMETER"), json!(15)),
        (json!("GRAPHQL_VALIDATION_FAILED"), json!(44)),
        (json!("INVALID_PARAMETER"), json!(3)),
    ];
    let want: Vec<(&Value, &Value)> = want.iter().map(|(c, at)| (c, at)).collect();
    assert_eq!(coded, want, "codes.rs: {body}");
}

#[tokio::test]
async fn an_answer_keeps_the_query_order_when_an_earlier_field_waits() {
    let (app, key) = demo_app(3).await;
    let query =
        "{ products(first: 1) { nodes { priceHistory(first: 1) { totalCount } name id } } }";
    let response = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(&key)
        .json(&json!({ "query": query }))
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    let at = |key: &str| text.find(&format!("\"{key}\"")).expect(key);
    assert!(
        at("priceHistory") < at("name") && at("name") < at("id"),
        "order.rs: {text}"
    );
}
