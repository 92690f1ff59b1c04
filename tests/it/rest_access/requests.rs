//! How a REST v1 request is read and answered: unknown and repeated query
//! parameters, request ids, gzip for large responses, and error messages
//! without internals.

use entity::Marketplace;
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};

use super::{day, expect_error, get_with};
use crate::fixtures::{insert_brand_snapshot, insert_category_snapshot};
use crate::helpers::{TestApp, header};
// ---------------------------------------------------------- query string

#[tokio::test]
async fn unknown_query_parameters_are_ignored() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_category_snapshot(&app.db, day(19), Marketplace::Ozon, &["Дом"], 4).await;
    let body = app
        .json_as(&key, "/v1/categories?marketplace=ozon&colour=red&api_key=x")
        .await;
    assert_eq!(
        body,
        json!({"data": [{"category_path": ["Дом"], "product_count": 4}]})
    );
}

#[tokio::test]
async fn repeated_parameter_counts_only_its_first_occurrence() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_category_snapshot(&app.db, day(19), Marketplace::Ozon, &["Дом"], 4).await;
    insert_category_snapshot(&app.db, day(19), Marketplace::Wildberries, &["Авто"], 2).await;
    let body = app
        .json_as(&key, "/v1/categories?marketplace=ozon&marketplace=nope")
        .await;
    assert_eq!(
        body,
        json!({"data": [{"category_path": ["Дом"], "product_count": 4}]})
    );
    let body = app
        .json_as(
            &key,
            "/v1/categories?marketplace=ozon&marketplace=wildberries",
        )
        .await;
    assert_eq!(body["data"][0]["category_path"], json!(["Дом"]));
    let reversed = app
        .get_as(&key, "/v1/categories?marketplace=nope&marketplace=ozon")
        .await;
    expect_error(reversed, 400, "invalid_parameter").await;
}

// ------------------------------------------------ request ids, compression

#[tokio::test]
async fn every_response_has_a_request_id() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let mut ids = Vec::new();
    for response in [
        app.get_as(&key, "/v1/brands").await,
        app.get_as(&key, "/v1/categories").await,
        app.get("/v1/brands").await,
        app.get("/nope").await,
        app.get("/healthz").await,
    ] {
        let id = header(&response, "x-request-id").map(str::to_owned);
        assert!(
            id.as_deref().is_some_and(|id| !id.is_empty()),
            "{} has no x-request-id",
            response.url()
        );
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "each request gets its own id");
}

#[tokio::test]
async fn client_request_id_is_echoed() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let ok = app
        .client
        .get(app.url("/v1/brands"))
        .bearer_auth(&key)
        .header("x-request-id", "client-trace-42")
        .send()
        .await
        .expect("request");
    assert_eq!(ok.status(), 200);
    assert_eq!(header(&ok, "x-request-id"), Some("client-trace-42"));
    let refused = get_with(&app, "/v1/brands", "x-request-id", "client-trace-43").await;
    assert_eq!(refused.status(), 401);
    assert_eq!(header(&refused, "x-request-id"), Some("client-trace-43"));
}

#[tokio::test]
async fn large_responses_are_gzipped_when_the_client_accepts_gzip() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for i in 0..40 {
        insert_brand_snapshot(&app.db, day(19), None, &format!("Brand {i:02}"), 10).await;
    }
    let gzipped = app
        .client
        .get(app.url("/v1/brands"))
        .bearer_auth(&key)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("request");
    assert_eq!(gzipped.status(), 200);
    assert_eq!(header(&gzipped, "content-encoding"), Some("gzip"));
    let bytes = gzipped.bytes().await.expect("body");
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "a gzip stream");

    let plain = app.get_as(&key, "/v1/brands").await;
    assert_eq!(header(&plain, "content-encoding"), None);
    let body: Value = plain.json().await.expect("JSON");
    assert_eq!(body["data"].as_array().map(Vec::len), Some(40));
}

// ---------------------------------------------------------------- errors

#[tokio::test]
async fn bad_request_messages_are_one_sentence_without_internals() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (path, code) in [
        ("/v1/sellers", "missing_parameter"),
        ("/v1/categories", "missing_parameter"),
        ("/v1/brands?marketplace=amazon", "invalid_parameter"),
        ("/v1/sellers?marketplace=amazon", "invalid_parameter"),
        ("/v1/products/not-a-uuid", "invalid_parameter"),
        ("/v1/me/scrapes/not-a-uuid", "invalid_parameter"),
    ] {
        // expect_error checks the message: one sentence, nothing internal.
        expect_error(app.get_as(&key, path).await, 400, code).await;
    }
}

#[tokio::test]
async fn undecodable_path_id_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in [
        "/v1/products/%FF",
        "/v1/products/%FF/price-history",
        "/v1/me/scrapes/%FF",
        "/v1/me/scrapes/%FF/products",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "invalid_parameter").await;
    }
}

#[tokio::test]
async fn unexpected_failure_is_internal_error_without_internals() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    app.db
        .execute_unprepared("DROP TABLE brand_snapshots")
        .await
        .expect("drop table");
    let response = app.get_as(&key, "/v1/brands").await;
    let headers = expect_error(response, 500, "internal_error").await;
    assert!(headers.get("x-request-id").is_some());
}
