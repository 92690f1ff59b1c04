//! The browser pages: the assets of GraphiQL and of the API reference come
//! from the binary, pinned with Subresource Integrity (or from a CDN at the
//! same versions and hashes), the demo key and the demo dashboard appear
//! only under `serve --demo`.
//! What the pages do in a browser is tested in `web/tests` (real Chromium).

use base64::Engine as _;
use sha2::{Digest, Sha384};
use vitrina::config::Settings;

use crate::helpers::TestApp;
use crate::playground_cdn::start_up_log;

pub async fn page(app: &TestApp, path: &str) -> String {
    let response = app
        .client
        .get(app.url(path))
        .header("accept", "text/html")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200, "GET {path}");
    response.text().await.expect("page")
}

/// Every `src`/`href` of the page with the `integrity` that follows it.
pub fn pinned_urls(page: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for tag in page.split('<').filter(|t| t.contains("integrity=")) {
        let attr = |name: &str| {
            let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
            Some(tag[start..].split('"').next()?.to_owned())
        };
        let url = attr("src").or_else(|| attr("href")).expect("a pinned URL");
        found.push((url, attr("integrity").expect("integrity")));
    }
    found
}

fn sri(body: &[u8]) -> String {
    format!(
        "sha384-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha384::digest(body))
    )
}

#[tokio::test]
async fn graphiql_loads_every_asset_from_the_binary_as_pinned() {
    let app = TestApp::spawn().await;
    let page = page(&app, "/graphql").await;
    let pinned = pinned_urls(&page);
    let names: Vec<&str> = pinned.iter().map(|(url, _)| url.as_str()).collect();
    for package in [
        "react@",
        "react-dom@",
        "graphiql@",
        "@graphiql/plugin-explorer@",
    ] {
        assert!(
            names
                .iter()
                .any(|url| url.contains(&format!("/assets/{package}"))),
            "{package} in {names:?}"
        );
    }
    assert!(
        !names.iter().any(|url| url.contains("swagger")),
        "{names:?}"
    );
    assert_served_as_pinned(&app, &page).await;
    let script = app.get("/graphiql/vitrina-graphiql.js").await;
    assert_eq!(script.status(), 200);
    assert!(script.text().await.unwrap().contains("explorerPlugin"));
    // Only the table's files exist: no other version, no path out of it.
    let long = format!("/graphiql/assets/{}", "a/".repeat(4000));
    for path in [
        "/graphiql/assets/graphiql@0.0.1/graphiql.min.js",
        "/graphiql/assets/graphiql@3.9.0/../../../Cargo.toml",
        "/graphiql/assets/%2e%2e/%2e%2e/Cargo.toml",
        "/graphiql/assets/graphiql@3.9.0/package.json",
        long.as_str(),
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), 404, "{path}");
    }
}

/// The page names no other origin, and each file it pins is served by the
/// binary, once and for good, with the bytes its integrity hash names.
async fn assert_served_as_pinned(app: &TestApp, page: &str) {
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "{page}"
    );
    for (url, integrity) in &pinned_urls(page) {
        assert!(url.starts_with("/graphiql/assets/"), "{url}");
        let response = app.get(url).await;
        assert_eq!(response.status(), 200, "{url}");
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            kind.starts_with(if url.ends_with(".css") {
                "text/css"
            } else {
                "text/javascript"
            }),
            "{url}: {kind}"
        );
        assert!(
            response.headers()["cache-control"]
                .to_str()
                .unwrap()
                .contains("immutable"),
            "{url}"
        );
        let body = response.bytes().await.unwrap();
        assert!(body.len() > 1000, "{url}");
        assert_eq!(&sri(&body), integrity, "{url}");
    }
}

#[tokio::test]
async fn the_api_reference_shows_both_documents_from_the_binary_as_pinned() {
    let app = TestApp::spawn().await;
    let page = page(&app, "/docs").await;
    let pinned = pinned_urls(&page);
    assert_eq!(pinned.len(), 3, "{pinned:?}");
    assert!(
        pinned
            .iter()
            .all(|(url, _)| url.contains("/assets/swagger-ui-dist@")),
        "{pinned:?}"
    );
    assert_served_as_pinned(&app, &page).await;
    for document in ["/v1/openapi.json", "/extension/v1/openapi.json"] {
        assert!(page.contains(&format!(r#""url":"{document}""#)), "{page}");
        assert_eq!(app.get(document).await.status(), 200, "{document}");
    }
    let script = app.get("/docs/vitrina-docs.js").await;
    assert_eq!(script.status(), 200);
    let script = script.text().await.unwrap();
    // Swagger UI would otherwise send each document to its public validator.
    assert!(script.contains("validatorUrl: null"), "{script}");
}

#[tokio::test]
async fn with_its_own_copy_neither_the_page_nor_the_log_names_a_cdn() {
    let page = page(&TestApp::spawn().await, "/graphql").await;
    assert!(!page.contains("<p id=\"vitrina-assets-notice\">"), "{page}");
    assert!(page.contains(r#""builtIn":true"#), "{page}");
    let log = start_up_log(&[]).await;
    let summary = log
        .iter()
        .find(|l| l.contains("vitrina started"))
        .expect("the summary");
    assert!(summary.contains("graphiql_assets=built-in"), "{summary}");
    assert!(
        !log.iter().any(|l| l.contains("not built into")),
        "{log:#?}"
    );
}

#[tokio::test]
async fn the_licences_of_the_built_in_packages_are_served() {
    let app = TestApp::spawn().await;
    let response = app.get("/graphiql/assets/LICENSES.txt").await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let page = page(&app, "/graphql").await;
    for (url, _) in pinned_urls(&page) {
        // "/graphiql/assets/<package>@<version>/<file>" -> "<package>@<version>"
        let path = url.trim_start_matches("/graphiql/assets/");
        let cut = path[1..].find('@').unwrap() + 1;
        let version_end = cut + path[cut..].find('/').unwrap();
        let package = &path[..version_end];
        assert!(text.contains(&format!("==== {package} (MIT)")), "{package}");
    }
    assert!(text.contains("Permission is hereby granted"));
}

#[tokio::test]
async fn a_cdn_serves_the_same_versions_under_the_same_hashes() {
    let built_in = pinned_urls(&page(&TestApp::spawn().await, "/graphql").await);
    let mut settings = Settings::default();
    settings.graphql.graphiql_assets = Some("https://cdn.example/npm/".into());
    let app = TestApp::spawn_with_settings(settings).await;
    let from_cdn = pinned_urls(&page(&app, "/graphql").await);
    assert_eq!(from_cdn.len(), built_in.len());
    for ((cdn_url, cdn_hash), (url, hash)) in from_cdn.iter().zip(&built_in) {
        let path = url.trim_start_matches("/graphiql/assets/");
        assert_eq!(cdn_url, &format!("https://cdn.example/npm/{path}"));
        assert_eq!(cdn_hash, hash);
    }
}

#[tokio::test]
async fn the_demo_key_and_the_dashboard_are_there_only_under_demo() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let page_without = page(&app, "/graphql").await;
    assert!(page_without.contains(r#""demoKey":null"#), "{page_without}");
    assert!(!page_without.contains(&key));
    assert_eq!(app.get("/dashboard").await.status(), 404);
    assert_eq!(app.get("/dashboard/dashboard.js").await.status(), 404);

    let demo = TestApp::spawn_demo_pages("vk_demo_secret_for_the_page").await;
    let graphiql = page(&demo, "/graphql").await;
    assert!(
        graphiql.contains(r#""demoKey":"vk_demo_secret_for_the_page""#),
        "{graphiql}"
    );
    assert!(
        graphiql.contains(r#"Bearer vk_demo_secret_for_the_page"#),
        "{graphiql}"
    );
    let dashboard = page(&demo, "/dashboard").await;
    assert!(
        dashboard.contains(r#"{"apiKey": "vk_demo_secret_for_the_page"}"#),
        "{dashboard}"
    );
    for (path, kind) in [
        ("/dashboard/dashboard.js", "text/javascript"),
        ("/dashboard/dashboard.css", "text/css"),
    ] {
        let response = demo.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
    }
}
