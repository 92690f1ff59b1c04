//! What a release carries: the version, shown by `vitrina --version` and
//! `/healthz`, and one licence, MIT, said the same way everywhere.

use std::process::Command;

use crate::helpers::{TestApp, repository_file};

const VERSION: &str = env!("CARGO_PKG_VERSION");

#[test]
fn version_flag_prints_the_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_vitrina"))
        .arg("--version")
        .output()
        .expect("run vitrina --version");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("vitrina {VERSION}\n")
    );
}

#[tokio::test]
async fn healthz_names_the_version_it_runs() {
    let app = TestApp::spawn().await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), 200);
    assert_eq!(
        health.json::<serde_json::Value>().await.unwrap(),
        serde_json::json!({ "status": "ok", "version": VERSION })
    );
}

#[test]
fn the_licence_is_mit_in_every_manifest() {
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT");
    let licence = repository_file("LICENSE");
    assert!(licence.starts_with("MIT License\n"), "{licence}");
    assert!(licence.contains("The Vitrina authors"), "{licence}");
    let package: serde_json::Value =
        serde_json::from_str(&repository_file("web/package.json")).unwrap();
    assert_eq!(package["license"], "MIT");
    let lock: serde_json::Value =
        serde_json::from_str(&repository_file("web/package-lock.json")).unwrap();
    assert_eq!(lock["packages"][""]["license"], "MIT");
}

#[test]
fn the_changelog_has_an_unreleased_section_in_keep_a_changelog_form() {
    let changelog = repository_file("CHANGELOG.md");
    assert!(changelog.starts_with("# Changelog\n"), "{changelog}");
    assert!(changelog.contains("https://keepachangelog.com/en/1.1.0/"));
    assert!(changelog.contains("\n## [Unreleased]\n"), "{changelog}");
}
