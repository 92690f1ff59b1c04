//! Relay connections: cursor paging forwards and backwards without gaps or
//! repeats even on ties, and the cursors and page sizes refused.

use chrono::TimeDelta;
use entity::Marketplace;
use serde_json::{Value, json};

use crate::fixtures::{
    self, ProductSpec, insert_observation, insert_product, insert_seller, insert_session,
    observation, product,
};
use crate::helpers::graphql::{data, demo_app, error_code, nodes};
use crate::helpers::{TestApp, iso, test_start};

/// A way through a connection: its page-size and cursor arguments, the
/// `pageInfo` fields that say whether and where it goes on.
#[derive(Debug, Clone, Copy)]
enum Walk {
    /// `first: page`, `after` the `endCursor`, while `hasNextPage`.
    Forwards,
    /// `last: page`, `before` the `startCursor`, while `hasPreviousPage`.
    Backwards,
}

impl Walk {
    /// The page size and cursor arguments, the `pageInfo` flag and cursor.
    fn names(self) -> [&'static str; 4] {
        match self {
            Walk::Forwards => ["first", "after", "hasNextPage", "endCursor"],
            Walk::Backwards => ["last", "before", "hasPreviousPage", "startCursor"],
        }
    }
}

/// Nodes of the connection at `at` (a JSON pointer into `data`), walked
/// `way` with pages of `page` until the last page, in the list's order.
async fn walk(
    app: &TestApp,
    key: &str,
    query: &str,
    variables: Value,
    at: &str,
    (way, page): (Walk, i64),
) -> Vec<Value> {
    let [size, cursor_arg, goes_on, cursor] = way.names();
    let mut out: Vec<Value> = Vec::new();
    let mut from = Value::Null;
    for _ in 0..200 {
        let mut v = variables.clone();
        v[size] = json!(page);
        v[cursor_arg] = from;
        let d = data(app, key, query, v).await;
        let connection = d.pointer(at).expect("connection");
        let got = nodes(connection);
        assert!(got.len() as i64 <= page, "a page holds at most `{size}`");
        match way {
            Walk::Forwards => out.extend(got),
            Walk::Backwards => {
                out.splice(0..0, got);
            }
        }
        let info = &connection["pageInfo"];
        if info[goes_on] == false {
            return out;
        }
        from = info[cursor].clone();
        assert!(
            from.is_string(),
            "a page after this one has a cursor: {info}"
        );
    }
    panic!("the {way:?} walk did not end");
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
        for way in [Walk::Forwards, Walk::Backwards] {
            let walked = walk(app, key, query, variables.clone(), at, (way, page)).await;
            assert_eq!(walked, expected, "{way:?}, pages of {page}");
        }
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
