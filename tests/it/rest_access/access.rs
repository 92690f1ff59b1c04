//! Who gets through to REST v1: API keys (missing, malformed, unknown,
//! valid), unknown paths and wrong methods, and the per-minute rate limit
//! with its headers.

use chrono::TimeDelta;
use reqwest::{Method, Response};
use vitrina::limits::Limits;

use super::{expect_error, expect_unauthorized, get_with};
use crate::helpers::{TestApp, header, test_start};
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
async fn send_as(app: &TestApp, method: Method, key: &str, path: &str) -> Response {
    app.client
        .request(method, app.url(path))
        .bearer_auth(key)
        .send()
        .await
        .expect("request")
}

// ---------------------------------------------------------------- auth

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
