//! A watch-list: GraphQL `products(filter: { ids })` (issue 29, item 3)
//! answers exactly the products named, in the list's order, with an exact
//! `totalCount`, alone or with other filters; at most 500 ids.

use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::helpers::graphql::{data, demo_app, nodes, post};

const LISTED: &str = "query($filter: ProductFilterInput) {
    products(first: 50, filter: $filter) {
        totalCount totalCountIsExact edges { node { id marketplace } }
    }
}";

/// The products of `filter`: ids in order, total, whether exact.
async fn listed(app: &TestApp, key: &str, filter: Value) -> (Vec<String>, u64, bool) {
    let d = data(app, key, LISTED, json!({ "filter": filter })).await;
    let products = &d["products"];
    let ids = nodes(products)
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect();
    let total = products["totalCount"].as_u64().unwrap();
    (ids, total, products["totalCountIsExact"].as_bool().unwrap())
}

#[tokio::test]
async fn the_products_named_are_listed_in_order_and_counted_exactly() {
    let (app, key) = demo_app(40).await;
    let all = app.json_as(&key, "/v1/products?page_size=500").await;
    let all = all["data"].as_array().unwrap();
    let id = |i: usize| all[i]["id"].as_str().unwrap().to_owned();
    let unknown = uuid::Uuid::new_v4().to_string();

    let (ids, total, exact) = listed(
        &app,
        &key,
        json!({ "ids": [id(20), id(1), unknown, id(5)] }),
    )
    .await;
    assert_eq!(
        ids,
        [id(1), id(5), id(20)],
        "newest first, the unknown id left out"
    );
    assert_eq!((total, exact), (3, true));

    let marketplace = all[1]["marketplace"].as_str().unwrap();
    let same: Vec<String> = [1, 5, 20]
        .into_iter()
        .filter(|&i| all[i]["marketplace"] == marketplace)
        .map(id)
        .collect();
    let filter =
        json!({ "ids": [id(20), id(1), id(5)], "marketplace": marketplace.to_uppercase() });
    let (ids, total, _) = listed(&app, &key, filter).await;
    assert_eq!(ids, same, "both filters hold");
    assert_eq!(total, same.len() as u64);

    let (ids, total, exact) = listed(&app, &key, json!({ "ids": [] })).await;
    assert_eq!(
        (ids.len(), total, exact),
        (0, 0, true),
        "an empty list names nothing"
    );
}

#[tokio::test]
async fn a_list_of_more_than_500_ids_is_refused_naming_the_limit() {
    let (app, key) = demo_app(5).await;
    let ids =
        |n: usize| -> Vec<String> { (0..n).map(|_| uuid::Uuid::new_v4().to_string()).collect() };
    let (_, total, _) = listed(&app, &key, json!({ "ids": ids(500) })).await;
    assert_eq!(total, 0);
    let (status, body) = post(
        &app,
        Some(&key),
        LISTED,
        json!({ "filter": { "ids": ids(501) } }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let error = &body["errors"][0];
    assert_eq!(error["extensions"]["code"], "INVALID_PARAMETER", "{body}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("500") && message.contains("501"),
        "{message}"
    );
}
