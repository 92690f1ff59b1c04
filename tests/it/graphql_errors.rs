//! GraphQL's errors and access: not found, invalid and missing parameters
//! and internal failures with REST's codes, a key required as on REST, and
//! the per-minute rate limit shared with REST.

use std::time::Duration;

use chrono::TimeDelta;
use entity::{Marketplace, SubmissionStatus};
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::limits::Limits;

use crate::fixtures::{
    self, insert_product, insert_seller, insert_session, insert_submission, product,
};
use crate::helpers::graphql::{data, error_code, only_error_code, post};
use crate::helpers::{TestApp, encoded, eventually, iso, rest_error, test_start};

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
    let (_, mut for_theirs) = post(&app, Some(&key), session, json!({ "id": theirs.id })).await;
    let (_, mut for_unknown) = post(&app, Some(&key), session, json!({ "id": unknown })).await;
    // The budget left differs by the request between them.
    for body in [&mut for_theirs, &mut for_unknown] {
        body["extensions"]["cost"]["rateLimit"]["remaining"].take();
    }
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
    // Tables dropped past the app: uncached, each query runs into it.
    let app = TestApp::spawn_uncached().await;
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
    // Within a second: the server may have remembered the key.
    let query = json!({ "query": "{ brands { brand } }" });
    eventually(
        Duration::from_secs(1),
        Duration::from_millis(20),
        || async {
            let request = app
                .client
                .post(app.url("/graphql"))
                .bearer_auth(&new.secret);
            match request.json(&query).send().await.unwrap().status().as_u16() {
                401 => Ok(()),
                other => Err(format!("HTTP {other}")),
            }
        },
    )
    .await;
    expect_unauthorized(&app, Some(&new.secret)).await;
    let get = app
        .get("/graphql?query=%7B%20brands%20%7B%20brand%20%7D%20%7D")
        .await;
    assert_eq!(get.status(), 401, "GET queries need a key too");
}

#[tokio::test]
async fn graphql_requests_count_against_the_same_per_minute_limit_as_rest() {
    let app = TestApp::spawn_with(Limits {
        rate_per_minute: 3,
        daily_quota: 10_000,
        ..Limits::default()
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
