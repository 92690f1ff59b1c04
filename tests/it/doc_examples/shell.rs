//! The shell examples, run by bash as a reader would, against a demo server
//! on loopback: `vitrina` on the `PATH`, the variables the docs use (`KEY`,
//! `PRODUCT`, `SESSION`, `WEBHOOK`, `DELIVERY`) set to real ones, the
//! upload bodies saved where the prose says, and curl failing on any 4xx or
//! 5xx. Only addresses change: the server's port and the webhook host.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{Block, Check, blocks_checked_by, upload_file};
use crate::helpers::receiver::TestReceiver;
use crate::helpers::uploads::{item, send};
use crate::helpers::{TestApp, loopback_webhooks, test_limits};
use vitrina::config::Settings;

/// The time one example may take.
const EXAMPLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The address the docs show for the server, and its other spelling.
const DOCUMENTED_SERVER: [&str; 2] = ["127.0.0.1:8080", "localhost:8080"];

/// `text` with the server's documented address replaced by `address`
/// (`host:port`).
pub fn served_at(text: &str, address: &str) -> String {
    DOCUMENTED_SERVER
        .iter()
        .fold(text.to_owned(), |text, documented| {
            text.replace(documented, address)
        })
}

/// A demo server with one of everything the examples name.
pub(super) struct Stage {
    pub app: TestApp,
    pub receiver: TestReceiver,
    /// The demo account's key.
    pub key: String,
    variables: Vec<(&'static str, String)>,
    folder: TempDir,
}

impl Stage {
    /// The server, a webhook of the demo account to a loopback receiver, and
    /// one upload merged and its session's delivery received.
    pub async fn set_up() -> Stage {
        let settings = Settings {
            limits: test_limits(),
            ..loopback_webhooks()
        };
        let app = TestApp::spawn_with_settings(settings).await;
        let options = vitrina::seed::SeedOptions {
            demo: true,
            products: 300,
            seed: 42,
        };
        vitrina::seed::seed(&app.db, &options).await.expect("seed");
        let key = app.key(vitrina::seed::DEMO_ACCOUNT).await;
        let receiver = TestReceiver::start().await;

        let first = |body: Value, what: &str| -> String {
            body["data"][0]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("no {what}: {body}"))
                .to_owned()
        };
        let product = first(
            app.json_as(&key, "/v1/products?page_size=1").await,
            "product",
        );
        let hook = json!({ "url": receiver.hook("/hook") });
        let created = app.post_as(&key, "/extension/v1/webhooks", &hook).await;
        assert_eq!(created.status(), 201);
        let created: Value = created.json().await.expect("the subscription");
        let webhook = created["data"]["id"].as_str().expect("its id").to_owned();
        // A session completed and delivered: a delivery to redeliver.
        send(&app, &key, vec![item("doc-example")]).await;
        app.jobs().tick().await.expect("merge and deliver");
        let session = first(
            app.json_as(&key, "/v1/me/scrapes?page_size=1").await,
            "session",
        );
        let deliveries = app
            .json_as(
                &key,
                &format!("/extension/v1/webhooks/{webhook}/deliveries"),
            )
            .await;
        let delivery = first(deliveries, "delivery");

        let folder = tempfile::tempdir().expect("a working folder");
        for block in blocks_checked_by(Check::UploadFile) {
            let name = upload_file(&block).expect("claimed for its file name");
            std::fs::write(folder.path().join(name), &block.text).expect("save the upload");
        }
        let curlrc = "fail-with-body\nsilent\nshow-error\nmax-time = 30\n";
        std::fs::write(folder.path().join(".curlrc"), curlrc).expect(".curlrc");
        Stage {
            variables: vec![
                ("KEY", key.clone()),
                ("PRODUCT", product),
                ("SESSION", session),
                ("WEBHOOK", webhook),
                ("DELIVERY", delivery),
            ],
            app,
            receiver,
            key,
            folder,
        }
    }

    /// `text` with the documented addresses replaced by this stage's.
    pub fn addressed(&self, text: &str) -> String {
        let text = text.replace("https://hooks.example", &self.receiver.url);
        served_at(&text, &self.app.addr.to_string())
    }

    /// The value of one of the docs' variables (`WEBHOOK`...).
    pub fn variable(&self, name: &str) -> &str {
        let (_, value) = self
            .variables
            .iter()
            .find(|(n, _)| *n == name)
            .expect("a variable");
        value
    }

    /// Runs `block` in bash; what it printed, or why it failed.
    async fn run(&self, block: &Block) -> Result<String, String> {
        let script = format!("set -euo pipefail\n{}\n", self.addressed(&block.text));
        let mut command = tokio::process::Command::new("bash");
        command
            .arg("-c")
            .arg(script)
            .current_dir(self.folder.path())
            .env("PATH", path_with_vitrina())
            .env("CURL_HOME", self.folder.path())
            .env("DATABASE_URL", self.app.db_url())
            .env("RUST_LOG", "warn")
            .envs(self.variables.iter().map(|(k, v)| (*k, v.as_str())))
            .kill_on_drop(true);
        let out = tokio::time::timeout(EXAMPLE_TIMEOUT, command.output())
            .await
            .map_err(|_| format!("still running after {EXAMPLE_TIMEOUT:?}"))?
            .map_err(|e| format!("bash: {e}"))?;
        let printed = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(format!("{}: {printed}\n{stderr}", out.status));
        }
        Ok(printed)
    }
}

/// The `PATH` with the `vitrina` under test first.
pub fn path_with_vitrina() -> String {
    let binary = Path::new(env!("CARGO_BIN_EXE_vitrina"));
    let folder = binary.parent().expect("the binary's folder");
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", folder.display())
}

/// Why an answer shows nothing: a JSON list answer with no rows means the
/// example's parameters match nothing in the demo data.
fn shows_nothing(printed: &str) -> bool {
    serde_json::from_str::<Value>(printed)
        .is_ok_and(|answer| answer["data"].as_array().is_some_and(Vec::is_empty))
}

#[tokio::test]
async fn every_shell_example_runs_against_the_demo_server() {
    let stage = Stage::set_up().await;
    let mut blocks = blocks_checked_by(Check::Shell);
    // What deletes goes last, so the examples after it in the docs still
    // find what they name.
    blocks.sort_by_key(|b| b.text.contains("-X DELETE"));
    let mut failures = Vec::new();
    for block in &blocks {
        let ran = stage.run(block).await;
        // What the server's jobs would do by now: an upload is merged.
        stage.app.jobs().tick().await.expect("the jobs");
        match ran {
            Ok(printed) if shows_nothing(&printed) => {
                failures.push(format!("{}: an empty answer: {printed}", block.at));
            }
            Ok(_) => {}
            Err(why) => failures.push(format!("{}: {why}", block.at)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn a_failing_request_fails_its_example() {
    let stage = Stage::set_up().await;
    let block = Block {
        at: "test".into(),
        kind: "sh".into(),
        text: "curl -H \"Authorization: Bearer $KEY\" \\\n  http://127.0.0.1:8080/v1/products/00000000-0000-0000-0000-000000000000".into(),
        before: String::new(),
    };
    let why = stage
        .run(&block)
        .await
        .expect_err("a 404 fails the example");
    assert!(why.contains("not_found"), "{why}");
}
