//! The `vitrina` binary run to completion, and what it printed.

use std::process::{Command, Output};

/// Runs `vitrina args` over the database at `db_url`.
pub fn vitrina(db_url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vitrina"))
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run vitrina")
}

/// [`vitrina`] on a blocking thread, so that servers of the test's runtime
/// (a webhook receiver) keep answering while the command runs.
pub async fn vitrina_alongside(db_url: &str, args: &[&str]) -> Output {
    let db_url = db_url.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        vitrina(&db_url, &args)
    })
    .await
    .expect("the command's thread")
}

/// `vitrina webhooks create` for `account` to a loopback target, which
/// needs the insecure-targets switch.
pub fn create_loopback_webhook(db_url: &str, account: &str) -> Output {
    vitrina(
        db_url,
        &[
            "webhooks",
            "create",
            "--account",
            account,
            "--url",
            "http://127.0.0.1:9/hook",
            "--webhook-allow-insecure-targets",
        ],
    )
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A failed command: one line on stderr, `error: ` and `expected` in it, and
/// nothing internal (a panic, a source position).
pub fn assert_clean_failure(out: &Output, expected: &str) {
    let stderr = stderr(out);
    assert!(!out.status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("line "), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(expected),
        "{stderr}"
    );
}
