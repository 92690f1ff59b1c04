//! The `vitrina` binary, run as a user would.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::helpers::TestDb;

pub fn vitrina(db_url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vitrina"))
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run vitrina")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn assert_clean_failure(out: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(expected),
        "{stderr}"
    );
}

#[tokio::test]
async fn migrate_command_is_rerunnable() {
    let db = TestDb::new().await;
    for _ in 0..2 {
        let out = vitrina(&db.url, &["migrate"]);
        assert!(out.status.success(), "{out:?}");
        assert!(stdout(&out).contains("up to date"));
    }
}

#[tokio::test]
async fn keys_create_list_and_revoke() {
    let db = TestDb::new().await;
    let out = vitrina(&db.url, &["keys", "create", "--account", "acme"]);
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    let secret = printed
        .lines()
        .find(|l| l.starts_with("vtr_"))
        .expect("key printed")
        .to_owned();
    let id = printed
        .split_whitespace()
        .nth(3)
        .expect("id printed")
        .to_owned();

    let list = stdout(&vitrina(&db.url, &["keys", "list"]));
    let row = list.lines().find(|l| l.starts_with(&id)).expect("listed");
    assert!(row.contains("acme") && row.contains("active") && row.contains(&secret[..12]));
    assert!(!list.contains(&secret), "the full key is never listed");

    let out = vitrina(&db.url, &["keys", "revoke", &id]);
    assert!(out.status.success(), "{out:?}");
    let list = stdout(&vitrina(&db.url, &["keys", "list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with(&id) && l.contains("revoked"))
    );

    let conn = db.connect().await;
    let caller = vitrina::accounts::authenticate(&conn, &secret, chrono::Utc::now())
        .await
        .unwrap();
    assert!(caller.is_none(), "a revoked key no longer authenticates");
}

#[tokio::test]
async fn revoking_an_unknown_key_fails_cleanly() {
    let db = TestDb::new().await;
    let out = vitrina(
        &db.url,
        &["keys", "revoke", &uuid::Uuid::new_v4().to_string()],
    );
    assert_clean_failure(&out, "no API key");
}

#[tokio::test]
async fn seed_command_prints_a_report_and_a_demo_key() {
    let db = TestDb::new().await;
    let out = vitrina(
        &db.url,
        &["seed", "--demo", "--products", "50", "--seed", "3"],
    );
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    assert!(printed.contains("seeded 50 products"), "{printed}");
    assert!(
        printed.contains("demo API key (shown once): vtr_"),
        "{printed}"
    );
    let again = vitrina(&db.url, &["seed", "--products", "50"]);
    assert_clean_failure(&again, "empty database");
}

#[tokio::test]
async fn a_bad_database_url_fails_with_one_clear_line() {
    assert_clean_failure(
        &vitrina("mysql://nobody@localhost/x", &["migrate"]),
        "invalid DATABASE_URL",
    );
    assert_clean_failure(
        &vitrina("postgres://postgres@127.0.0.1:1/none", &["migrate"]),
        "cannot connect to the database",
    );
}

#[tokio::test]
async fn serve_with_demo_data_answers_health_and_prints_a_key() {
    let db = TestDb::new().await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_vitrina"))
        .args(["serve", "--demo", "--bind", "127.0.0.1:0"])
        .env("DATABASE_URL", &db.url)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut base = None;
    let mut key = None;
    let mut printed = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        printed.push(line.clone());
        if let Some(addr) = line.strip_prefix("listening on ") {
            base = Some(addr.to_owned());
        }
        if let Some(k) = line.strip_prefix("demo API key: ") {
            key = Some(k.to_owned());
        }
        if line.starts_with("GraphiQL: ") {
            break;
        }
    }
    let base = base.expect("serve prints its address");
    assert!(
        printed
            .iter()
            .any(|l| l.starts_with("try: curl -H 'Authorization: Bearer vtr_")),
        "{printed:?}"
    );
    assert!(
        printed
            .iter()
            .any(|l| l.starts_with(&format!("GraphiQL: {base}/graphql"))),
        "{printed:?}"
    );
    assert!(key.expect("serve --demo prints a key").starts_with("vtr_"));

    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let health = client.get(format!("{base}/healthz")).send().await.unwrap();
    let ready = client.get(format!("{base}/readyz")).send().await.unwrap();
    child.kill().ok();
    child.wait().ok();
    assert_eq!(health.status(), 200);
    assert_eq!(ready.status(), 200);

    let conn = db.connect().await;
    assert!(
        !vitrina::seed::is_empty(&conn).await.unwrap(),
        "demo data was loaded"
    );
}

#[tokio::test]
async fn jobs_run_once_merges_pending_submissions_and_makes_todays_snapshot() {
    let db = TestDb::new().await;
    assert!(
        vitrina(&db.url, &["seed", "--demo", "--products", "30"])
            .status
            .success()
    );
    let out = vitrina(&db.url, &["jobs", "run-once"]);
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    assert!(
        printed.contains("merged 4,") && printed.contains("snapshot made: yes"),
        "{printed}"
    );
    let again = stdout(&vitrina(&db.url, &["jobs", "run-once"]));
    assert!(
        again.contains("merged 0,") && again.contains("snapshot made: no"),
        "{again}"
    );
}
