//! REST v1 access and the small lookup lists: authentication, unknown paths
//! and methods, the per-minute rate limit, query-string handling, request ids
//! and compression, error bodies, and `GET /sellers`, `/categories`, `/brands`.

use chrono::{NaiveDate, TimeDelta};
use entity::Marketplace;
use reqwest::{Method, Response};
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};
use vitrina::limits::Limits;
use vitrina::text::normalize_url;

use crate::fixtures::{
    insert_brand_snapshot, insert_category_snapshot, insert_product, insert_seller, product, seller,
};
use crate::helpers::{TestApp, assert_plain_sentence, header, test_start};

const SOME_ID: &str = "00000000-0000-4000-8000-000000000001";

/// Every v1 endpoint, with whatever makes it reach its handler.
fn v1_endpoints() -> Vec<String> {
    vec![
        "/v1/products".into(),
        format!("/v1/products/{SOME_ID}"),
        format!("/v1/products/{SOME_ID}/price-history"),
        "/v1/sellers?tin=7700000000".into(),
        "/v1/categories?marketplace=ozon".into(),
        "/v1/brands".into(),
        "/v1/me/scrapes".into(),
        format!("/v1/me/scrapes/{SOME_ID}"),
        format!("/v1/me/scrapes/{SOME_ID}/products"),
    ]
}

/// Asserts the documented error (status, JSON `{"error": {"code", "message"}}`
/// and nothing else) and returns the response's headers.
async fn expect_error(response: Response, status: u16, code: &str) -> reqwest::header::HeaderMap {
    let url = response.url().to_string();
    assert_eq!(response.status(), status, "{url}");
    let content_type = header(&response, "content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{url}: JSON error body, not {content_type:?}"
    );
    let headers = response.headers().clone();
    let body: Value = response.json().await.expect("JSON error body");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(
        body,
        json!({"error": {"code": code, "message": message}}),
        "{url}"
    );
    assert_plain_sentence(message);
    headers
}

async fn get_with(app: &TestApp, path: &str, name: &str, value: &str) -> Response {
    app.client
        .get(app.url(path))
        .header(name, value)
        .send()
        .await
        .expect("request")
}

async fn send_as(app: &TestApp, method: Method, key: &str, path: &str) -> Response {
    app.client
        .request(method, app.url(path))
        .bearer_auth(key)
        .send()
        .await
        .expect("request")
}

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, d).expect("valid day")
}

/// `(marketplace, seller_id)` of each record, in response order.
fn seller_keys(body: &Value) -> Vec<(String, String)> {
    body["data"]
        .as_array()
        .expect("data array")
        .iter()
        .map(|s| {
            (
                s["marketplace"].as_str().unwrap_or_default().to_owned(),
                s["seller_id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

fn encoded(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

// ---------------------------------------------------------------- auth

async fn expect_unauthorized(response: Response) {
    let headers = expect_error(response, 401, "unauthorized").await;
    assert_eq!(
        headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Bearer")
    );
}

#[tokio::test]
async fn missing_authorization_header_is_unauthorized() {
    let app = TestApp::spawn().await;
    for path in v1_endpoints() {
        expect_unauthorized(app.get(&path).await).await;
    }
}

#[tokio::test]
async fn malformed_authorization_header_is_unauthorized() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for value in [
        "Basic x".to_owned(),
        format!("Basic {key}"),
        "Bearer".to_owned(),
        "Bearer    ".to_owned(),
        key.clone(),
        format!("Token {key}"),
    ] {
        expect_unauthorized(get_with(&app, "/v1/brands", "authorization", &value).await).await;
    }
}

#[tokio::test]
async fn unknown_api_key_is_unauthorized() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let unknown = format!("{}x", &key[..key.len() - 1]);
    expect_unauthorized(app.get_as(&unknown, "/v1/brands").await).await;
    expect_unauthorized(app.get_as("vtr_nope", "/v1/brands").await).await;
}

#[tokio::test]
async fn valid_api_key_is_admitted() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in [
        "/v1/products",
        "/v1/sellers?tin=7700000000",
        "/v1/categories?marketplace=ozon",
        "/v1/brands",
        "/v1/me/scrapes",
    ] {
        app.json_as(&key, path).await;
    }
}

// ------------------------------------------------------- paths, methods

#[tokio::test]
async fn unknown_path_is_not_found() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in ["/v1/nope", "/nope", "/v1/sellers/extra", "/v2/brands"] {
        expect_error(app.get(path).await, 404, "not_found").await;
        expect_error(app.get_as(&key, path).await, 404, "not_found").await;
    }
}

#[tokio::test]
async fn non_get_method_on_v1_is_method_not_allowed() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (method, path) in [
        (Method::POST, "/v1/sellers?tin=7700000000".to_owned()),
        (Method::DELETE, format!("/v1/products/{SOME_ID}")),
        (Method::PUT, "/v1/brands".to_owned()),
        (Method::PATCH, "/v1/me/scrapes".to_owned()),
        (Method::POST, "/v1/openapi.json".to_owned()),
    ] {
        let response = send_as(&app, method, &key, &path).await;
        let headers = expect_error(response, 405, "method_not_allowed").await;
        assert_eq!(
            headers.get("allow").and_then(|v| v.to_str().ok()),
            Some("GET"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_wrong_method_on_the_extension_api_is_the_same_json_error() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (method, path, allowed) in [
        (
            Method::GET,
            "/extension/v1/scrapes".to_owned(),
            vec!["POST"],
        ),
        (
            Method::PUT,
            "/extension/v1/webhooks".to_owned(),
            vec!["GET", "POST"],
        ),
        (
            Method::GET,
            format!("/extension/v1/webhooks/{SOME_ID}"),
            vec!["DELETE"],
        ),
        (
            Method::POST,
            format!("/extension/v1/webhooks/{SOME_ID}/deliveries"),
            vec!["GET"],
        ),
        (
            Method::DELETE,
            "/extension/v1/openapi.json".to_owned(),
            vec!["GET"],
        ),
    ] {
        let response = send_as(&app, method, &key, &path).await;
        let headers = expect_error(response, 405, "method_not_allowed").await;
        let allow: Vec<String> = headers
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .split(',')
            .map(|m| m.trim().to_owned())
            .collect();
        for method in allowed {
            assert!(allow.iter().any(|m| m == method), "{path}: Allow {allow:?}");
        }
    }
}

// ------------------------------------------------------------ rate limit

const THREE_A_MINUTE: Limits = Limits {
    rate_per_minute: 3,
    daily_quota: 10_000,
    db_time_per_minute_ms: 0,
    db_time_burst_ms: 1,
};

/// `X-RateLimit-Limit`, `-Remaining`, `-Reset` of a response.
fn rate_headers(headers: &reqwest::header::HeaderMap) -> [Option<String>; 3] {
    [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ]
    .map(|name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    })
}

fn expected_rate(limit: u32, remaining: u32, reset_at: i64) -> [Option<String>; 3] {
    [
        Some(limit.to_string()),
        Some(remaining.to_string()),
        Some(reset_at.to_string()),
    ]
}

#[tokio::test]
async fn responses_carry_rate_limit_headers() {
    let app = TestApp::spawn_with(THREE_A_MINUTE).await;
    let key = app.key("acme").await;
    let window_end = test_start().timestamp() + 60;
    let ok = app.get_as(&key, "/v1/brands").await;
    assert_eq!(ok.status(), 200);
    assert_eq!(rate_headers(ok.headers()), expected_rate(3, 2, window_end));
    // A refused parameter is still a counted request with the headers.
    let bad = app.get_as(&key, "/v1/categories").await;
    let headers = expect_error(bad, 400, "missing_parameter").await;
    assert_eq!(rate_headers(&headers), expected_rate(3, 1, window_end));
}

#[tokio::test]
async fn request_over_the_per_minute_limit_is_rate_limited() {
    let app = TestApp::spawn_with(THREE_A_MINUTE).await;
    let key = app.key("acme").await;
    for path in [
        "/v1/brands",
        "/v1/categories?marketplace=ozon",
        "/v1/brands",
    ] {
        assert_eq!(app.get_as(&key, path).await.status(), 200, "{path}");
    }
    app.clock.advance(TimeDelta::seconds(45));
    let refused = app.get_as(&key, "/v1/categories?marketplace=ozon").await;
    let headers = expect_error(refused, 429, "rate_limited").await;
    assert_eq!(
        headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("15"),
        "seconds until the minute's window ends"
    );
    let window_end = test_start().timestamp() + 60;
    assert_eq!(rate_headers(&headers), expected_rate(3, 0, window_end));
}

#[tokio::test]
async fn rate_limit_retry_after_is_at_least_one_second() {
    let app = TestApp::spawn_with(THREE_A_MINUTE).await;
    let key = app.key("acme").await;
    for _ in 0..3 {
        assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 200);
    }
    app.clock.advance(TimeDelta::milliseconds(59_900));
    let headers = expect_error(app.get_as(&key, "/v1/brands").await, 429, "rate_limited").await;
    assert_eq!(
        headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("1")
    );
}

#[tokio::test]
async fn rate_limit_window_resets_after_a_minute() {
    let app = TestApp::spawn_with(THREE_A_MINUTE).await;
    let key = app.key("acme").await;
    for _ in 0..3 {
        assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 200);
    }
    assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 429);
    app.clock.advance(TimeDelta::seconds(61));
    let again = app.get_as(&key, "/v1/brands").await;
    assert_eq!(again.status(), 200);
    let window_end = test_start().timestamp() + 120;
    assert_eq!(
        rate_headers(again.headers()),
        expected_rate(3, 2, window_end)
    );
}

#[tokio::test]
async fn rate_limit_is_per_account() {
    let app = TestApp::spawn_with(THREE_A_MINUTE).await;
    let (first, same_account, other_account) = (
        app.key("acme").await,
        app.key("acme").await,
        app.key("globex").await,
    );
    for _ in 0..3 {
        assert_eq!(app.get_as(&first, "/v1/brands").await.status(), 200);
    }
    expect_error(app.get_as(&first, "/v1/brands").await, 429, "rate_limited").await;
    expect_error(
        app.get_as(&same_account, "/v1/brands").await,
        429,
        "rate_limited",
    )
    .await;
    let other = app.get_as(&other_account, "/v1/brands").await;
    assert_eq!(other.status(), 200);
    assert_eq!(
        header(&other, "x-ratelimit-remaining"),
        Some("2"),
        "another account has its own window"
    );
}

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

// --------------------------------------------------------------- sellers

#[tokio::test]
async fn sellers_without_an_identifying_parameter_is_missing_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "1")).await;
    for path in [
        "/v1/sellers",
        "/v1/sellers?name=x",
        "/v1/sellers?tin=&psrn=",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "missing_parameter").await;
    }
}

#[tokio::test]
async fn sellers_marketplace_or_seller_id_alone_is_missing_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "1")).await;
    for path in [
        "/v1/sellers?marketplace=ozon",
        "/v1/sellers?seller_id=1",
        "/v1/sellers?marketplace=ozon&seller_id=",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "missing_parameter").await;
    }
}

#[tokio::test]
async fn sellers_unknown_marketplace_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in [
        "/v1/sellers?marketplace=amazon&seller_id=1",
        "/v1/sellers?marketplace=Ozon&seller_id=1",
        "/v1/sellers?tin=7700000000&marketplace=amazon",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "invalid_parameter").await;
    }
}

#[tokio::test]
async fn sellers_by_tin_returns_every_marketplace_ordered_by_marketplace_then_seller_id() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (marketplace, id) in [
        (Marketplace::Wildberries, "b"),
        (Marketplace::Ozon, "z"),
        (Marketplace::YandexMarket, "y"),
        (Marketplace::Ozon, "a"),
        (Marketplace::Megamarket, "m"),
    ] {
        let s = seller(marketplace, id);
        insert_seller(
            &app.db,
            entity::seller::Model {
                tin: "7701234567".into(),
                ..s
            },
        )
        .await;
    }
    insert_seller(&app.db, seller(Marketplace::Ozon, "other")).await;
    let body = app.json_as(&key, "/v1/sellers?tin=7701234567").await;
    assert_eq!(
        seller_keys(&body),
        pairs(&[
            ("megamarket", "m"),
            ("ozon", "a"),
            ("ozon", "z"),
            ("wildberries", "b"),
            ("yandex_market", "y"),
        ])
    );
}

#[tokio::test]
async fn sellers_by_psrn() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let s = seller(Marketplace::Megamarket, "42");
    insert_seller(
        &app.db,
        entity::seller::Model {
            psrn: "304770000012345".into(),
            ..s
        },
    )
    .await;
    insert_seller(&app.db, seller(Marketplace::Megamarket, "43")).await;
    let body = app.json_as(&key, "/v1/sellers?psrn=304770000012345").await;
    assert_eq!(seller_keys(&body), pairs(&[("megamarket", "42")]));
}

#[tokio::test]
async fn sellers_by_url_ignore_query_fragment_host_case_and_trailing_slash() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let url = Some(normalize_url("https://shop.example/Store-42"));
    let s = seller(Marketplace::Ozon, "42");
    insert_seller(&app.db, entity::seller::Model { url, ..s }).await;
    // The path keeps its case: this is another storefront.
    let s = seller(Marketplace::Ozon, "43");
    let other = Some(normalize_url("https://shop.example/store-42"));
    insert_seller(&app.db, entity::seller::Model { url: other, ..s }).await;
    let messy = encoded("HTTPS://Shop.EXAMPLE/Store-42/?utm_source=x&b=2#reviews");
    let body = app.json_as(&key, &format!("/v1/sellers?url={messy}")).await;
    assert_eq!(seller_keys(&body), pairs(&[("ozon", "42")]));
}

#[tokio::test]
async fn sellers_by_marketplace_and_seller_id() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "42")).await;
    insert_seller(&app.db, seller(Marketplace::Wildberries, "42")).await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "43")).await;
    let body = app
        .json_as(&key, "/v1/sellers?marketplace=ozon&seller_id=42")
        .await;
    assert_eq!(seller_keys(&body), pairs(&[("ozon", "42")]));
}

#[tokio::test]
async fn sellers_with_no_match_return_an_empty_list() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "42")).await;
    let body = app.json_as(&key, "/v1/sellers?tin=0000000000").await;
    assert_eq!(body, json!({"data": []}));
}

#[tokio::test]
async fn seller_record_has_every_documented_field() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let mine = insert_seller(&app.db, seller(Marketplace::Ozon, "S-1")).await;
    let theirs = insert_seller(&app.db, seller(Marketplace::Ozon, "S-2")).await;
    for (owner, sku) in [(&mine, "p1"), (&mine, "p2"), (&theirs, "p3")] {
        let spec = product(sku);
        let spec = crate::fixtures::ProductSpec {
            marketplace: Marketplace::Ozon,
            ..spec
        };
        insert_product(&app.db, owner, spec).await;
    }
    let body = app
        .json_as(&key, "/v1/sellers?marketplace=ozon&seller_id=S-1")
        .await;
    assert_eq!(
        body,
        json!({"data": [{
            "marketplace": "ozon",
            "seller_id": "S-1",
            "name": "Seller S-1",
            "tin": "7700000000",
            "psrn": "1027700000000",
            "address": "г. Москва, ул. Ленина, д. 1",
            "url": "https://shop.example/S-1",
            "stats": {"rating": 4.5, "reg_date": "2020-01-02", "items_sold": 100, "reviews_count": 10},
            "product_count": 2,
            "first_seen_at": "2026-08-12T12:00:00Z",
            "last_seen_at": "2026-11-19T12:00:00Z",
        }]})
    );
}

// ------------------------------------------------------------ categories

#[tokio::test]
async fn categories_without_marketplace_is_missing_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in ["/v1/categories", "/v1/categories?marketplace="] {
        expect_error(app.get_as(&key, path).await, 400, "missing_parameter").await;
    }
}

#[tokio::test]
async fn categories_unknown_marketplace_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in [
        "/v1/categories?marketplace=amazon",
        "/v1/categories?marketplace=OZON",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "invalid_parameter").await;
    }
}

#[tokio::test]
async fn categories_come_from_the_latest_snapshot_of_the_marketplace() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let db = &app.db;
    insert_category_snapshot(db, day(17), Marketplace::Ozon, &["Старое"], 100).await;
    insert_category_snapshot(db, day(18), Marketplace::Ozon, &["Дом"], 7).await;
    insert_category_snapshot(db, day(18), Marketplace::Ozon, &["Авто"], 3).await;
    // Another marketplace's newer day decides nothing for ozon.
    insert_category_snapshot(db, day(19), Marketplace::Wildberries, &["Одежда"], 9).await;
    let body = app.json_as(&key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        body,
        json!({"data": [
            {"category_path": ["Дом"], "product_count": 7},
            {"category_path": ["Авто"], "product_count": 3},
        ]})
    );
}

#[tokio::test]
async fn categories_are_ordered_by_product_count_desc_then_path() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (path, count) in [
        (&["Дом"][..], 5),
        (&["Электроника"][..], 9),
        (&["Электроника", "Наушники"][..], 5),
        (&["Авто"][..], 5),
        (&["Дом", "Кухня"][..], 1),
        (&["Дом", "Декор"][..], 1),
    ] {
        insert_category_snapshot(&app.db, day(19), Marketplace::Ozon, path, count).await;
    }
    let body = app.json_as(&key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        body,
        json!({"data": [
            {"category_path": ["Электроника"], "product_count": 9},
            {"category_path": ["Авто"], "product_count": 5},
            {"category_path": ["Дом"], "product_count": 5},
            {"category_path": ["Электроника", "Наушники"], "product_count": 5},
            {"category_path": ["Дом", "Декор"], "product_count": 1},
            {"category_path": ["Дом", "Кухня"], "product_count": 1},
        ]})
    );
}

#[tokio::test]
async fn categories_empty_path_is_an_entry_of_its_own() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_category_snapshot(&app.db, day(19), Marketplace::Ozon, &["Дом"], 2).await;
    insert_category_snapshot(&app.db, day(19), Marketplace::Ozon, &[], 2).await;
    let body = app.json_as(&key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        body,
        json!({"data": [
            {"category_path": [], "product_count": 2},
            {"category_path": ["Дом"], "product_count": 2},
        ]})
    );
}

// ---------------------------------------------------------------- brands

#[tokio::test]
async fn brands_without_marketplace_cover_all_marketplaces() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_brand_snapshot(&app.db, day(19), None, "Acme", 12).await;
    insert_brand_snapshot(&app.db, day(19), Some(Marketplace::Ozon), "Acme", 5).await;
    insert_brand_snapshot(&app.db, day(19), Some(Marketplace::Ozon), "OnlyOzon", 50).await;
    let body = app.json_as(&key, "/v1/brands").await;
    assert_eq!(
        body,
        json!({"data": [{"brand": "Acme", "product_count": 12}]})
    );
}

#[tokio::test]
async fn brands_with_marketplace_are_that_marketplace_only() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_brand_snapshot(&app.db, day(19), None, "Acme", 12).await;
    insert_brand_snapshot(&app.db, day(19), Some(Marketplace::Ozon), "Acme", 5).await;
    insert_brand_snapshot(&app.db, day(19), Some(Marketplace::Wildberries), "Acme", 7).await;
    let body = app.json_as(&key, "/v1/brands?marketplace=ozon").await;
    assert_eq!(
        body,
        json!({"data": [{"brand": "Acme", "product_count": 5}]})
    );
}

#[tokio::test]
async fn brands_come_from_the_latest_snapshot() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let db = &app.db;
    insert_brand_snapshot(db, day(18), None, "Old", 100).await;
    insert_brand_snapshot(db, day(19), None, "New", 1).await;
    insert_brand_snapshot(db, day(17), Some(Marketplace::Ozon), "OldOzon", 100).await;
    insert_brand_snapshot(db, day(18), Some(Marketplace::Ozon), "NewOzon", 1).await;
    let all = app.json_as(&key, "/v1/brands").await;
    assert_eq!(all, json!({"data": [{"brand": "New", "product_count": 1}]}));
    // Ozon's latest day is its own, older than the all-marketplaces one.
    let ozon = app.json_as(&key, "/v1/brands?marketplace=ozon").await;
    assert_eq!(
        ozon,
        json!({"data": [{"brand": "NewOzon", "product_count": 1}]})
    );
}

#[tokio::test]
async fn brands_are_ordered_by_product_count_desc_then_brand() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (brand, count) in [("Zeta", 3), ("Бренд", 7), ("Acme", 3), ("Mid", 5)] {
        insert_brand_snapshot(&app.db, day(19), None, brand, count).await;
    }
    let body = app.json_as(&key, "/v1/brands").await;
    assert_eq!(
        body,
        json!({"data": [
            {"brand": "Бренд", "product_count": 7},
            {"brand": "Mid", "product_count": 5},
            {"brand": "Acme", "product_count": 3},
            {"brand": "Zeta", "product_count": 3},
        ]})
    );
}

#[tokio::test]
async fn brands_unknown_marketplace_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    expect_error(
        app.get_as(&key, "/v1/brands?marketplace=amazon").await,
        400,
        "invalid_parameter",
    )
    .await;
}
