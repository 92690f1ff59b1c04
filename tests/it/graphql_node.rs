//! Global object identification: products, sellers and scrape sessions
//! come back by their `globalId` through `node` and `nodes`, with the
//! permissions of their own queries, in a number of statements that does
//! not grow with the ids.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::helpers::graphql::{data, demo_app, error_code, post, statements_for};

const GLOBAL_IDS: &str = r#"{
  products(first: 5) { nodes { id globalId seller { globalId sellerId } } }
  me { scrapeSessions(first: 5) { nodes { id globalId } } }
}"#;

const NODE: &str = r#"query($id: ID!) { node(id: $id) {
  __typename globalId
  ... on Product { id externalId }
  ... on Seller { sellerId }
  ... on ScrapeSession { id }
} }"#;

const NODES: &str = r#"query($ids: [ID!]!) { nodes(ids: $ids) {
  __typename globalId
  ... on Product { id seller { sellerId productCount } }
  ... on Seller { sellerId productCount }
  ... on ScrapeSession { id stats { total } }
} }"#;

/// Global ids of the demo data: (products, sellers, sessions), each with
/// what its own query answers.
async fn global_ids(app: &TestApp, key: &str) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    let found = data(app, key, GLOBAL_IDS, json!({})).await;
    let products = found["products"]["nodes"].as_array().expect("products");
    let sellers = products.iter().map(|p| p["seller"].clone()).collect();
    let sessions = found["me"]["scrapeSessions"]["nodes"]
        .as_array()
        .expect("sessions");
    (products.clone(), sellers, sessions.clone())
}

/// A well-formed global id of this server's, for an object that may not exist.
fn global_id(kind: &str, id: uuid::Uuid) -> String {
    URL_SAFE_NO_PAD.encode(format!("{kind}:{id}"))
}

#[tokio::test]
async fn each_type_round_trips_through_node() {
    let (app, key) = demo_app(5).await;
    let (products, sellers, sessions) = global_ids(&app, &key).await;

    let product = &products[0];
    let found = data(&app, &key, NODE, json!({ "id": product["globalId"] })).await;
    assert_eq!(found["node"]["__typename"], "Product");
    assert_eq!(found["node"]["id"], product["id"]);
    assert_eq!(found["node"]["globalId"], product["globalId"]);

    let seller = &sellers[0];
    let found = data(&app, &key, NODE, json!({ "id": seller["globalId"] })).await;
    assert_eq!(found["node"]["__typename"], "Seller");
    assert_eq!(found["node"]["sellerId"], seller["sellerId"]);

    let session = &sessions[0];
    let found = data(&app, &key, NODE, json!({ "id": session["globalId"] })).await;
    assert_eq!(found["node"]["__typename"], "ScrapeSession");
    assert_eq!(found["node"]["id"], session["id"]);

    // The global id is opaque and names the type: never the bare UUID.
    assert_ne!(product["globalId"], product["id"]);
}

#[tokio::test]
async fn nodes_answers_mixed_types_in_the_order_asked() {
    let (app, key) = demo_app(5).await;
    let (products, sellers, sessions) = global_ids(&app, &key).await;
    let asked = [
        &sessions[0],
        &products[0],
        &sellers[0],
        &products[1],
        &products[0],
    ];
    let ids: Vec<&Value> = asked.iter().map(|o| &o["globalId"]).collect();
    let found = data(&app, &key, NODES, json!({ "ids": ids })).await;
    let nodes = found["nodes"].as_array().expect("nodes");
    let types: Vec<&str> = nodes
        .iter()
        .map(|n| n["__typename"].as_str().expect("typename"))
        .collect();
    assert_eq!(
        types,
        ["ScrapeSession", "Product", "Seller", "Product", "Product"]
    );
    for (node, object) in nodes.iter().zip(asked) {
        assert_eq!(node["globalId"], object["globalId"]);
    }
    assert_eq!(nodes[1]["id"], products[0]["id"]);
    assert_eq!(nodes[2]["sellerId"], sellers[0]["sellerId"]);
    assert!(nodes[2]["productCount"].as_i64() > Some(0));
}

#[tokio::test]
async fn unknown_ids_are_not_found_and_malformed_ones_invalid() {
    let (app, key) = demo_app(3).await;
    let (products, _, _) = global_ids(&app, &key).await;
    let unknown = global_id("Product", uuid::Uuid::new_v4());

    let (status, body) = post(&app, Some(&key), NODE, json!({ "id": unknown })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["node"], Value::Null);
    assert_eq!(body["errors"][0]["extensions"]["code"], "NOT_FOUND");

    // One unknown id of several: null in its place, the others answered.
    let ids = json!([products[0]["globalId"], unknown]);
    let (_, body) = post(&app, Some(&key), NODES, json!({ "ids": ids })).await;
    assert_eq!(body["data"]["nodes"][0]["id"], products[0]["id"]);
    assert_eq!(body["data"]["nodes"][1], Value::Null);
    let error = &body["errors"][0];
    assert_eq!(error["extensions"]["code"], "NOT_FOUND");
    assert_eq!(error["path"], json!(["nodes", 1]));

    let uuid = products[0]["id"].as_str().expect("uuid");
    for malformed in [
        "not a global id".to_owned(),
        uuid.to_owned(),
        global_id("Account", uuid::Uuid::new_v4()),
        URL_SAFE_NO_PAD.encode("Product:42"),
    ] {
        let code = error_code(&app, &key, NODE, json!({ "id": malformed })).await;
        assert_eq!(code, "INVALID_PARAMETER", "{malformed}");
        let ids = json!([products[0]["globalId"], malformed]);
        let code = error_code(&app, &key, NODES, json!({ "ids": ids })).await;
        assert_eq!(code, "INVALID_PARAMETER", "{malformed}");
    }
}

#[tokio::test]
async fn another_accounts_session_is_not_found() {
    let (app, key) = demo_app(3).await;
    let (_, _, sessions) = global_ids(&app, &key).await;
    let other = app.key("someone-else").await;
    let id = &sessions[0]["globalId"];

    let code = error_code(&app, &other, NODE, json!({ "id": id })).await;
    assert_eq!(code, "NOT_FOUND");
    let (_, body) = post(&app, Some(&other), NODES, json!({ "ids": [id] })).await;
    assert_eq!(body["data"]["nodes"], json!([null]));
    assert_eq!(body["errors"][0]["extensions"]["code"], "NOT_FOUND");
}

#[tokio::test]
async fn nodes_runs_as_many_statements_for_many_ids_as_for_few() {
    let (app, key) = demo_app(12).await;
    let (products, sellers, sessions) = global_ids(&app, &key).await;
    let of = |n: usize| -> Vec<Value> {
        let each = [&products, &sellers, &sessions];
        each.iter()
            .flat_map(|objects| objects.iter().take(n).map(|o| o["globalId"].clone()))
            .collect()
    };
    let (few, found) = statements_for(&app, &key, NODES, json!({ "ids": of(1) })).await;
    assert_eq!(found["nodes"].as_array().expect("nodes").len(), 3);
    let (many, found) = statements_for(&app, &key, NODES, json!({ "ids": of(4) })).await;
    assert!(found["nodes"].as_array().expect("nodes").len() > 3);
    assert_eq!(few, many, "statements for 3 ids and for more");
}

#[tokio::test]
async fn a_hostile_list_of_ids_is_refused_before_any_statement() {
    let (app, key) = demo_app(1).await;
    let ids: Vec<String> = (0..501)
        .map(|_| global_id("Product", uuid::Uuid::new_v4()))
        .collect();
    // What any request runs (admission), and no id fetched.
    let (none, _) = statements_for(&app, &key, NODES, json!({ "ids": [] })).await;
    let from = app.statements();
    let (status, body) = post(&app, Some(&key), NODES, json!({ "ids": ids })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID_PARAMETER");
    assert!(app.statements() - from <= none, "no statement for the ids");
}
