//! The upload endpoint: an upload taken whole (up to 8 MiB) and merged into
//! what REST and GraphQL serve, its OpenAPI document, idempotency keys, and
//! bad uploads refused without storing anything.

use entity::submission;
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

use super::merge_all;
use crate::helpers::TestApp;
use crate::helpers::graphql::data;
use crate::helpers::uploads::{item, send, upload, with};
#[tokio::test]
async fn an_upload_is_merged_into_products_visible_through_rest_and_graphql() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let en = with(
        with(item("42"), &["language"], json!("en")),
        &["name"],
        json!("Kettle 42"),
    );
    let session = send(&app, &key, vec![item("42"), en]).await;
    let pending = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}"))
        .await;
    assert_eq!(pending["data"]["stats"]["pending"], 2);

    let report = merge_all(&app).await;
    assert_eq!((report.merged, report.completed_sessions), (2, 1));
    let products = app
        .json_as(&key, "/v1/products?external_id=42&marketplace=ozon")
        .await;
    let p = &products["data"][0];
    assert_eq!(p["url"], "https://www.ozon.ru/product/42");
    assert_eq!(
        p["seller"],
        json!({ "id": "s-1", "name": "ООО «Вектор»", "code": "RM-42" })
    );
    assert_eq!(p["prices"][0]["price"], 1000.0);
    assert_eq!(p["special_price"][0]["region_code"], "");
    assert_eq!(p["translations"][0]["name"], "Kettle 42");
    assert_eq!(
        app.json_as(&key, "/v1/products?name_contains=kettle").await["data"][0]["id"],
        p["id"]
    );

    let query = "{ products(filter: {externalId: \"42\"}) { edges { node { name prices { price } translations { language name } seller { tin } } } } }";
    let d = data(&app, &key, query, json!({})).await;
    let node = &d["products"]["edges"][0]["node"];
    assert_eq!(
        (node["name"].as_str(), node["seller"]["tin"].as_str()),
        (Some("Чайник 42"), Some("7701234567"))
    );
    assert_eq!(node["translations"][0]["language"], "en");

    let entries = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    assert_eq!(entries["data"][0]["product"]["id"], p["id"]);
    assert_eq!(
        app.json_as(&key, &format!("/v1/me/scrapes/{session}"))
            .await["data"]["status"],
        "completed"
    );
}

#[tokio::test]
async fn the_extension_document_describes_the_upload_and_the_item_format() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let doc: Value = app
        .get("/extension/v1/openapi.json")
        .await
        .json()
        .await
        .unwrap();
    let schema = &doc["components"]["schemas"]["ScrapedItem"];
    for field in [
        "marketplace",
        "external_id",
        "url",
        "language",
        "name",
        "seller",
    ] {
        assert!(
            schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!(field)),
            "{field} is documented as required"
        );
    }
    let response = app
        .post_as(&key, "/extension/v1/scrapes", &upload(vec![item("1")]))
        .await;
    assert_eq!(response.status(), 202);
    crate::helpers::openapi::validate_operation(
        &doc,
        "post",
        "/scrapes",
        202,
        &response.json().await.unwrap(),
    );
    let refused = app
        .post_as(&key, "/extension/v1/scrapes", &json!({ "items": [] }))
        .await;
    crate::helpers::openapi::validate_operation(
        &doc,
        "post",
        "/scrapes",
        400,
        &refused.json().await.unwrap(),
    );
}
#[tokio::test]
async fn an_idempotency_key_makes_a_retried_upload_return_the_first_session() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let post = || {
        app.client
            .post(app.url("/extension/v1/scrapes"))
            .bearer_auth(&key)
            .header("Idempotency-Key", "run-7")
            .json(&upload(vec![item("1")]))
    };
    let first: Value = post().send().await.unwrap().json().await.unwrap();
    let again = post().send().await.unwrap();
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(first["data"]["id"], again["data"]["id"]);
    assert_eq!(submission::Entity::find().count(&app.db).await.unwrap(), 1);

    let other = app.key("other").await;
    let theirs = app
        .client
        .post(app.url("/extension/v1/scrapes"))
        .bearer_auth(&other)
        .header("Idempotency-Key", "run-7")
        .json(&upload(vec![item("1")]))
        .send()
        .await
        .unwrap();
    let theirs: Value = theirs.json().await.unwrap();
    assert_ne!(
        theirs["data"]["id"], first["data"]["id"],
        "keys are per account"
    );
}

#[tokio::test]
async fn bad_uploads_are_refused_and_store_nothing() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let raw = |body: &'static str| {
        app.client
            .post(app.url("/extension/v1/scrapes"))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases: Vec<(reqwest::Response, u16, &str)> = vec![
        (raw("{not json").await.unwrap(), 400, "invalid_body"),
        (
            raw(r#"{"source_type":"page","intent":"catalog_import","items":[1]}"#)
                .await
                .unwrap(),
            400,
            "invalid_body",
        ),
        (
            raw(r#"{"source_type":"tab","intent":"catalog_import","items":[]}"#)
                .await
                .unwrap(),
            400,
            "invalid_body",
        ),
        (
            app.post_as(
                &key,
                "/extension/v1/scrapes",
                &upload(vec![json!({}); 1001]),
            )
            .await,
            400,
            "invalid_body",
        ),
        (
            app.client
                .post(app.url("/extension/v1/scrapes"))
                .bearer_auth(&key)
                .body(vec![b' '; 9 << 20])
                .send()
                .await
                .unwrap(),
            413,
            "payload_too_large",
        ),
        (
            app.client
                .post(app.url("/extension/v1/scrapes"))
                .json(&upload(vec![item("1")]))
                .send()
                .await
                .unwrap(),
            401,
            "unauthorized",
        ),
    ];
    for (response, status, code) in cases {
        assert_eq!(response.status().as_u16(), status);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{body}");
    }
    assert_eq!(
        entity::scrape_session::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0
    );
    assert_eq!(submission::Entity::find().count(&app.db).await.unwrap(), 0);
}
#[tokio::test]
async fn an_upload_of_up_to_8_mib_is_taken_whole() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // 1,000 items of about 7 KB: more than axum's own 2 MB default.
    let items: Vec<Value> = (0..1000)
        .map(|i| {
            let big = with(item(&i.to_string()), &["name"], json!("н".repeat(1000)));
            with(
                big,
                &["attributes"],
                json!({ "описание": "x".repeat(4096) }),
            )
        })
        .collect();
    let body = serde_json::to_vec(&upload(items)).unwrap();
    assert!((6 << 20..8 << 20).contains(&body.len()), "{}", body.len());
    let response = app
        .client
        .post(app.url("/extension/v1/scrapes"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let session: Value = response.json().await.unwrap();
    assert_eq!(session["data"]["stats"]["total"], 1000, "{session}");
}
