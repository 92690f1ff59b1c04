//! What the docs show a command printing (indented blocks): an error, the
//! start-up log line, the build's warning without npm, compared with what
//! the binary, its log and CI's check of the build really say.

use super::{Block, Check, blocks_checked_by};
use crate::helpers::TestDb;
use crate::helpers::cli::{stderr, vitrina};
use crate::helpers::repository_file;
use crate::serve::Serve;

/// The `key=` names of a log line, in order.
fn field_names(line: &str) -> Vec<&str> {
    line.split_whitespace()
        .filter_map(|word| word.split_once('=').map(|(name, _)| name))
        .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect()
}

/// `error: no database at PATH: ...`: what a command over a missing SQLite
/// file says, its path put in.
fn check_missing_database(block: &Block) {
    let shown = block.text.trim();
    let rest = shown
        .strip_prefix("error: no database at ")
        .expect("claimed by its start");
    let (path, _) = rest.split_once(": ").expect("the path, then what to run");
    let folder = tempfile::tempdir().expect("a folder");
    let missing = folder.path().join("data/vitrina.db");
    let out = vitrina(
        &format!("sqlite://{}", missing.display()),
        &["keys", "list"],
    );
    let expected = shown.replace(path, &missing.display().to_string());
    assert_eq!(stderr(&out).trim(), expected, "{}", block.at);
}

/// The start-up summary: the same message and fields, in the same order.
async fn check_started_line(block: &Block) {
    let shown = block.text.trim();
    let (message, _) = shown
        .split_once(" version=")
        .expect("the fields after the message");
    let db = TestDb::new().await;
    let mut served = Serve::start(&db.url, &[], &[]);
    served.wait_for_log("vitrina started");
    let log = served.kill();
    let real = log
        .iter()
        .find(|l| l.contains("vitrina started"))
        .expect("the summary");
    assert!(real.contains(message), "{}: {real}", block.at);
    assert_eq!(
        field_names(shown),
        field_names(real),
        "{}: {real}",
        block.at
    );
}

/// The build's warning without npm: CI builds without npm and counts the
/// warnings that start and say as the docs show.
fn check_build_warning(block: &Block) {
    let ci = repository_file(".ci/run");
    let counted = ci
        .lines()
        .find_map(|l| {
            l.split_once("grep -c \"^")?
                .1
                .split_once('"')
                .map(|(p, _)| p)
        })
        .expect(".ci/run counts the build's warnings");
    let (start, said) = counted
        .split_once(".*")
        .expect("a start, then what it says");
    let shown = block.text.trim();
    assert!(
        shown.starts_with(start.trim_end_matches('@')),
        "{}: {counted}",
        block.at
    );
    assert!(shown.contains(said), "{}: CI looks for {said:?}", block.at);
}

#[tokio::test]
async fn every_output_shown_is_what_is_really_printed() {
    for block in blocks_checked_by(Check::Output) {
        let shown = block.text.trim();
        if shown.starts_with("error: no database at ") {
            check_missing_database(&block);
        } else if shown.contains("vitrina started") {
            check_started_line(&block).await;
        } else if shown.starts_with("warning: vitrina@") {
            check_build_warning(&block);
        } else {
            panic!("{}: an output no check knows", block.at);
        }
    }
}

#[test]
fn field_names_are_read_in_order() {
    assert_eq!(
        field_names(r#"INFO a: b started version="0.1" bind=x migration_names=[] jobs="on""#),
        ["version", "bind", "migration_names", "jobs"]
    );
}
