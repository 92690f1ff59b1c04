//! REST v1 access and the small lookup lists: authentication, unknown paths
//! and methods, the per-minute rate limit, query-string handling, request ids
//! and compression, error bodies, and `GET /sellers`, `/categories`, `/brands`.
//!
//! This module holds the documented-error check and request helpers the others
//! share; `access` tests who gets through (keys, paths, methods, the rate
//! limit), `requests` how a request is read and answered, `lookups` the lists.

use chrono::NaiveDate;
use reqwest::Response;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_plain_sentence, header};

mod access;
mod lookups;
mod requests;
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

/// Asserts the documented refusal of a missing, malformed, unknown or revoked
/// key: 401 `unauthorized` with `WWW-Authenticate: Bearer`.
pub(crate) async fn expect_unauthorized(response: Response) {
    let headers = expect_error(response, 401, "unauthorized").await;
    assert_eq!(
        headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Bearer")
    );
}

async fn get_with(app: &TestApp, path: &str, name: &str, value: &str) -> Response {
    app.client
        .get(app.url(path))
        .header(name, value)
        .send()
        .await
        .expect("request")
}
fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, d).expect("valid day")
}
