//! Cross-origin calls (issue 29, item 1): the origins of
//! `VITRINA_CORS_ORIGINS` may call `/graphql` and `/v1` from a browser;
//! with none set, nothing about CORS is answered. Chromium itself is driven
//! in web/tests/cors.test.mjs.

use reqwest::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ORIGIN, VARY,
};
use reqwest::{Method, Response};
use vitrina::config::{CorsOrigin, HttpConfig, Settings};

use crate::helpers::{TestApp, header};

const DASHBOARD: &str = "http://127.0.0.1:5173";
const STRANGER: &str = "http://127.0.0.1:6666";

async fn spawn(origins: &[&str]) -> TestApp {
    let cors_origins = origins
        .iter()
        .map(|o| match *o {
            "*" => CorsOrigin::Any,
            exact => CorsOrigin::Exact(exact.parse().unwrap()),
        })
        .collect();
    TestApp::spawn_with_settings(Settings {
        http: HttpConfig {
            cors_origins,
            ..HttpConfig::default()
        },
        ..Settings::default()
    })
    .await
}

/// A browser's preflight of a keyed JSON POST (or GET) from `origin`.
async fn preflight(app: &TestApp, path: &str, origin: &str, method: &str) -> Response {
    app.client
        .request(Method::OPTIONS, app.url(path))
        .header(ORIGIN, origin)
        .header("access-control-request-method", method)
        .header(
            "access-control-request-headers",
            "authorization,content-type,if-none-match",
        )
        .send()
        .await
        .unwrap()
}

/// A header's comma-separated values, in lower case.
fn listed(response: &Response, name: impl reqwest::header::AsHeaderName) -> Vec<String> {
    response
        .headers()
        .get_all(name)
        .iter()
        .flat_map(|v| v.to_str().unwrap().split(','))
        .map(|v| v.trim().to_ascii_lowercase())
        .collect()
}

#[tokio::test]
async fn a_listed_origin_is_allowed_with_the_keyed_headers_and_sees_etag_and_limits() {
    let app = spawn(&[DASHBOARD]).await;
    let key = app.key("dashboards").await;
    for (path, method) in [
        ("/graphql", "POST"),
        ("/graphql", "GET"),
        ("/graphql/ws", "GET"),
        ("/v1/products", "GET"),
    ] {
        let answer = preflight(&app, path, DASHBOARD, method).await;
        assert_eq!(answer.status(), 204, "{method} {path}");
        assert_eq!(
            header(&answer, "access-control-allow-origin"),
            Some(DASHBOARD)
        );
        assert!(
            listed(&answer, ACCESS_CONTROL_ALLOW_METHODS).contains(&method.to_ascii_lowercase())
        );
        let headers = listed(&answer, ACCESS_CONTROL_ALLOW_HEADERS);
        for needed in ["authorization", "content-type", "if-none-match"] {
            assert!(
                headers.contains(&needed.to_owned()),
                "{needed} in {headers:?}"
            );
        }
        assert!(listed(&answer, VARY).contains(&"origin".to_owned()));
    }

    for (method, path) in [(Method::GET, "/v1/products"), (Method::POST, "/graphql")] {
        let answer = app
            .client
            .request(method.clone(), app.url(path))
            .header(ORIGIN, DASHBOARD)
            .bearer_auth(&key)
            .json(&serde_json::json!({ "query": "{ products(first: 1) { totalCount } }" }))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{method} {path}");
        assert_eq!(
            header(&answer, "access-control-allow-origin"),
            Some(DASHBOARD)
        );
        assert!(listed(&answer, VARY).contains(&"origin".to_owned()));
        let exposed = listed(&answer, ACCESS_CONTROL_EXPOSE_HEADERS);
        for needed in [
            "etag",
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
            "retry-after",
        ] {
            assert!(
                exposed.contains(&needed.to_owned()),
                "{needed} in {exposed:?}"
            );
        }
    }

    // A refusal is readable by the page too, or it could not say why.
    let refused = app
        .client
        .get(app.url("/v1/products"))
        .header(ORIGIN, DASHBOARD)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(
        header(&refused, "access-control-allow-origin"),
        Some(DASHBOARD)
    );
}

#[tokio::test]
async fn an_origin_not_listed_gets_no_allowance() {
    let app = spawn(&[DASHBOARD]).await;
    let answer = preflight(&app, "/graphql", STRANGER, "POST").await;
    assert!(answer.headers().get(ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    let key = app.key("strangers").await;
    let read = app
        .client
        .get(app.url("/v1/products"))
        .header(ORIGIN, STRANGER)
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert!(read.headers().get(ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
}

#[tokio::test]
async fn a_star_allows_every_origin() {
    let app = spawn(&["*"]).await;
    let answer = preflight(&app, "/v1/products", STRANGER, "GET").await;
    assert_eq!(answer.status(), 204);
    assert_eq!(header(&answer, "access-control-allow-origin"), Some("*"));
}

#[tokio::test]
async fn by_default_only_the_service_s_own_origin_is_served() {
    let app = spawn(&[]).await;
    for path in ["/graphql", "/v1/products"] {
        let answer = preflight(&app, path, DASHBOARD, "POST").await;
        // Refused as any OPTIONS is there: 405 for GraphQL, 401 (no key) for REST.
        assert!(
            answer.status().is_client_error(),
            "{path}: {}",
            answer.status()
        );
        assert!(answer.headers().get(ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    }
}

#[tokio::test]
async fn only_the_api_answers_preflights() {
    let app = spawn(&[DASHBOARD]).await;
    for path in ["/extension/v1/sessions", "/healthz"] {
        let answer = preflight(&app, path, DASHBOARD, "POST").await;
        assert!(
            answer.headers().get(ACCESS_CONTROL_ALLOW_ORIGIN).is_none(),
            "{path}"
        );
    }
}
