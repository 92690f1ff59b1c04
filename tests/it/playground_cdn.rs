//! The pages' packages loaded from a CDN: GraphiQL and the API reference
//! pin each of their files of the committed manifest
//! (`web/graphiql/pinned-assets.json`) by version and Subresource Integrity
//! hash, and the pages and the start-up log say where the files come from. The last test needs a binary built without npm;
//! `.ci/run` builds one with npm hidden from the PATH and runs this module
//! there with `--include-ignored`.

use std::time::Duration;

use vitrina::config::Settings;

use crate::helpers::{TestApp, TestDb};
use crate::playground::{page, pinned_urls};
use crate::serve::Serve;

/// The pages, by their path and their name in the manifest.
const PAGES: [(&str, &str); 2] = [("/graphql", "graphiql"), ("/docs", "docs")];

/// (URL under `base`, integrity) of each file of the committed manifest
/// that `page` loads, in the order it must load them: stylesheets first,
/// then scripts.
fn manifest_urls(base: &str, page: &str) -> Vec<(String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/web/graphiql/pinned-assets.json"
    );
    let text = std::fs::read_to_string(path).expect("the manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let assets: Vec<_> = manifest["assets"]
        .as_array()
        .expect("an assets list")
        .iter()
        .filter(|a| a["page"] == page)
        .collect();
    assert!(!assets.is_empty(), "{page} loads files");
    let url = |a: &serde_json::Value| {
        (
            format!("{base}/{}@{}/{}", a["package"], a["version"], a["file"]).replace('"', ""),
            a["integrity"].as_str().expect("integrity").to_owned(),
        )
    };
    let is_css = |a: &&serde_json::Value| a["contentType"] == "text/css";
    let styles = assets.iter().copied().filter(is_css).map(url);
    let scripts = assets.iter().copied().filter(|a| !is_css(a)).map(url);
    styles.chain(scripts).collect()
}

/// The text of the page's notice about where its packages load from.
fn notice(page: &str) -> Option<&str> {
    let start = page.find("<p id=\"vitrina-assets-notice\">")?;
    let text = &page[start..];
    Some(&text[text.find('>')? + 1..text.find("</p>")?])
}

/// Every pinned tag of the page loads across origins with the integrity check on.
fn assert_each_tag_is_cross_origin(page: &str) {
    for tag in page.split('<').filter(|t| t.contains("integrity=")) {
        assert!(tag.contains("crossorigin=\"anonymous\""), "{tag}");
    }
}

/// Starts `serve` with `env`, waits until it is ready, stops it; its log.
pub async fn start_up_log(env: &[(&str, &str)]) -> Vec<String> {
    let db = TestDb::new().await;
    let mut served = Serve::start(&db.url, &[], env);
    let ready = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
        .get(format!("{}/readyz", served.base))
        .send()
        .await
        .expect("readyz answers");
    assert_eq!(ready.status(), 200);
    served.wait_for_log("vitrina started");
    served.kill()
}

#[tokio::test]
async fn a_configured_cdn_page_pins_every_file_of_the_manifest() {
    let mut settings = Settings::default();
    settings.graphql.graphiql_assets = Some("https://cdn.example/npm/".into());
    let app = TestApp::spawn_with_settings(settings).await;
    for (path, name) in PAGES {
        let page = page(&app, path).await;
        assert_eq!(
            pinned_urls(&page),
            manifest_urls("https://cdn.example/npm", name)
        );
        assert_each_tag_is_cross_origin(&page);
        assert!(!page.contains("=\"/graphiql/assets/"), "{page}");
        let notice = notice(&page).expect("a notice on the page");
        assert!(notice.contains("https://cdn.example/npm"), "{notice}");
        assert!(notice.contains("VITRINA_GRAPHIQL_ASSETS"), "{notice}");
        assert!(notice.contains("Subresource Integrity"), "{notice}");
    }
}

#[tokio::test]
async fn serve_names_a_configured_cdn_in_its_start_up_summary() {
    let log = start_up_log(&[("VITRINA_GRAPHIQL_ASSETS", "https://cdn.example/npm/")]).await;
    let summary = log
        .iter()
        .find(|l| l.contains("vitrina started"))
        .expect("the summary");
    // The base as the page uses it: without the trailing slash.
    assert!(
        summary.contains("graphiql_assets=https://cdn.example/npm")
            && !summary.contains("cdn.example/npm/"),
        "{summary}"
    );
    assert!(
        !log.iter().any(|l| l.contains("not built into")),
        "{log:#?}"
    );
}

#[tokio::test]
#[ignore = "needs a binary built without npm: .ci/run builds one and runs it"]
async fn built_without_npm_graphiql_loads_from_the_default_cdn_and_says_so() {
    let app = TestApp::spawn().await;
    for (path, name) in PAGES {
        let page = page(&app, path).await;
        assert_eq!(pinned_urls(&page), manifest_urls("https://unpkg.com", name));
        assert_each_tag_is_cross_origin(&page);
        let notice = notice(&page).expect("a notice on the page");
        assert!(notice.contains("built without npm"), "{notice}");
        assert!(notice.contains("https://unpkg.com"), "{notice}");
    }
    let page = page(&app, "/graphql").await;
    assert!(page.contains(r#""builtIn":false"#), "{page}");

    // No copy to serve, and no licence texts of packages it does not carry.
    let (first, _) = &manifest_urls("/graphiql/assets", "graphiql")[0];
    assert_eq!(app.get(first).await.status(), 404, "{first}");
    let licences = app.get("/graphiql/assets/LICENSES.txt").await;
    assert_eq!(licences.status(), 200);
    let licences = licences.text().await.expect("text");
    assert!(
        licences.contains("built without the browser packages of GraphiQL and the API"),
        "{licences}"
    );
    assert!(
        licences.contains("react@18.3.1/umd/react.production.min.js (MIT)"),
        "{licences}"
    );

    let log = start_up_log(&[]).await;
    let warning: Vec<_> = log
        .iter()
        .filter(|l| l.contains("WARN") && l.contains("not built into this binary"))
        .collect();
    assert_eq!(warning.len(), 1, "{log:#?}");
    assert!(warning[0].contains("https://unpkg.com"), "{}", warning[0]);
    assert!(
        warning[0].contains("npm could not be started"),
        "{}",
        warning[0]
    );
    let summary = log
        .iter()
        .find(|l| l.contains("vitrina started"))
        .expect("the summary");
    assert!(
        summary.contains("graphiql_assets=https://unpkg.com"),
        "{summary}"
    );
}
