//! The examples that start a server (`cargo run --release -- serve --demo`,
//! `vitrina serve` with a metrics listener, a PostgreSQL database made with
//! `createdb`), run as written but for their addresses: the server binds a
//! free loopback port, the metrics listener another, a new database gets a
//! name of its own. The commands before the server run first; the server
//! must then answer `/healthz` (and its demo key a query); the commands
//! after it run against it.
//!
//! `cargo run` is what `cargo` would run once built: a `cargo` on the
//! `PATH` that runs the `vitrina` under test with the arguments after `--`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::shell::{path_with_vitrina, served_at};
use super::{Block, Check, blocks_checked_by};

/// The time a server has to say where it listens (a demo seeds first).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// The metrics address the docs show.
const DOCUMENTED_METRICS: [&str; 2] = ["0.0.0.0:9090", "127.0.0.1:9090"];

/// The database the PostgreSQL example makes, as it is named in the docs.
const DOCUMENTED_DATABASE: [&str; 2] = [" -U postgres vitrina", "5432/vitrina "];

const CARGO_SHIM: &str = "#!/bin/sh\n\
    [ \"$1\" = run ] || { echo \"only 'cargo run' runs here\" >&2; exit 2; }\n\
    while [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\n\
    shift\n\
    exec vitrina \"$@\"\n";

/// A free loopback port.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("its address").port()
}

/// The PostgreSQL server of the test run, when it is one.
fn postgres_server() -> Option<String> {
    std::env::var("TEST_DATABASE_URL")
        .ok()
        .filter(|url| url.starts_with("postgres"))
}

/// A shell in `folder` with the `cargo` shim and `vitrina` on the `PATH`.
fn bash(folder: &Path, script: &str) -> Command {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .current_dir(folder)
        .env(
            "PATH",
            format!("{}:{}", folder.join("bin").display(), path_with_vitrina()),
        )
        .env_remove("DATABASE_URL")
        .env("VITRINA_BIND", "127.0.0.1:0")
        .kill_on_drop(true);
    command
}

async fn run_to_end(folder: &Path, script: &str, at: &str) -> String {
    let out = bash(folder, script).output().await.expect("bash");
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{at}: `{script}` failed: {printed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    printed
}

/// A started server: where it listens and the demo key it printed.
struct Started {
    child: Child,
    base: String,
    demo_key: Option<String>,
}

async fn start(folder: &Path, command: &str, at: &str) -> Started {
    let log = std::fs::File::create(folder.join("server.log")).expect("a log file");
    // `env` runs it in bash's place, assignments first, so stopping it
    // stops the server.
    let mut child = bash(folder, &format!("exec env {command}"))
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("the server");
    let mut lines = BufReader::new(child.stdout.take().expect("its output")).lines();
    let (mut base, mut demo_key) = (None, None);
    let said = tokio::time::timeout(START_TIMEOUT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(key) = line.strip_prefix("demo API key: ") {
                demo_key = Some(key.trim().to_owned());
            }
            if let Some(url) = line.strip_prefix("listening on ") {
                base = Some(url.trim().to_owned());
            }
            // A demo server prints its key after its address.
            if base.is_some() && (demo_key.is_some() || !command.contains("--demo")) {
                break;
            }
        }
    })
    .await;
    let log = || std::fs::read_to_string(folder.join("server.log")).unwrap_or_default();
    assert!(
        said.is_ok(),
        "{at}: no `listening on` in {START_TIMEOUT:?}: {}",
        log()
    );
    let base = base.unwrap_or_else(|| panic!("{at}: the server stopped: {}", log()));
    // Whatever else it prints is read, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Started {
        child,
        base,
        demo_key,
    }
}

async fn check_server_example(block: &Block) {
    let folder = tempfile::tempdir().expect("a working folder");
    let bin = folder.path().join("bin");
    std::fs::create_dir(&bin).expect("bin/");
    let shim = bin.join("cargo");
    std::fs::write(&shim, CARGO_SHIM).expect("the cargo shim");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    let metrics = format!("127.0.0.1:{}", free_port());
    let database = format!("vitrina_docs_{}_{}", std::process::id(), free_port());
    let mut text = block.text.clone();
    for documented in DOCUMENTED_METRICS {
        text = text.replace(documented, &metrics);
    }
    // Dropped however the example ends, with the tool that made it.
    let _made = text
        .contains(DOCUMENTED_DATABASE[0])
        .then(|| MadeDatabase(database.clone()));
    text = text
        .replace(DOCUMENTED_DATABASE[0], &format!(" -U postgres {database}"))
        .replace(DOCUMENTED_DATABASE[1], &format!("5432/{database} "));
    let example = Block {
        text,
        ..block.clone()
    };
    let commands = example.commands();
    let server = commands
        .iter()
        .position(|c| c.contains(" serve"))
        .unwrap_or_else(|| panic!("{}: no server command", block.at));

    for command in &commands[..server] {
        run_to_end(folder.path(), command, &block.at).await;
    }
    let mut started = start(folder.path(), &commands[server], &block.at).await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let health = client.get(format!("{}/healthz", started.base)).send().await;
    assert_eq!(
        health.map(|r| r.status().as_u16()).ok(),
        Some(200),
        "{}",
        block.at
    );
    if commands[server].contains("--demo") {
        let key = started
            .demo_key
            .clone()
            .unwrap_or_else(|| panic!("{}: no demo key", block.at));
        let products = client
            .get(format!("{}/v1/products?page_size=1", started.base))
            .bearer_auth(key)
            .send()
            .await
            .expect("a request");
        assert_eq!(products.status(), 200, "{}: the demo key", block.at);
    }
    let address = started.base.trim_start_matches("http://").to_owned();
    for command in &commands[server + 1..] {
        let command = served_at(command, &address);
        let printed = run_to_end(folder.path(), &command, &block.at).await;
        assert!(
            !printed.trim().is_empty(),
            "{}: `{command}` printed nothing",
            block.at
        );
    }
    started.child.start_kill().expect("stop the server");
    started.child.wait().await.expect("the server's end");
}

/// The database an example made on the documented server.
struct MadeDatabase(String);

impl Drop for MadeDatabase {
    fn drop(&mut self) {
        let dropped = std::process::Command::new("dropdb")
            .args([
                "--if-exists",
                "--force",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                &self.0,
            ])
            .status();
        if !dropped.is_ok_and(|s| s.success()) {
            eprintln!("could not drop the example's database {}", self.0);
        }
    }
}

#[tokio::test]
async fn every_example_that_starts_a_server_serves() {
    for block in blocks_checked_by(Check::Server) {
        if block.text.contains("createdb") && postgres_server().is_none() {
            // Run by the suite's PostgreSQL pass, which has a server.
            eprintln!("{}: needs PostgreSQL (TEST_DATABASE_URL)", block.at);
            continue;
        }
        check_server_example(&block).await;
    }
}
