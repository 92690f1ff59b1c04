//! Errors that say what to do: a database that cannot be reached or opened,
//! or is not ready for the command, is reported at once in one line.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use migration::{Migrator, MigratorTrait};

use crate::helpers::TestDb;
use crate::helpers::cli::{assert_clean_failure, vitrina};

/// How soon a database that cannot be used is reported.
const AT_ONCE: Duration = Duration::from_secs(2);

/// Runs `vitrina migrate` against `db_url`, which must fail at once.
fn migrate_fails_at_once(db_url: &str, expected: &str) {
    let started = Instant::now();
    let out = vitrina(db_url, &["migrate"]);
    assert!(started.elapsed() < AT_ONCE, "took {:?}", started.elapsed());
    assert_clean_failure(&out, expected);
}

/// The PostgreSQL server the tests run on, if they do.
fn postgres() -> Option<url::Url> {
    let url = std::env::var("TEST_DATABASE_URL").ok()?;
    let parsed = url::Url::parse(&url).ok()?;
    if parsed.scheme().starts_with("postgres") {
        Some(parsed)
    } else {
        eprintln!("note: a PostgreSQL-only case is skipped on SQLite");
        None
    }
}

#[tokio::test]
async fn a_refused_connection_is_named_at_once() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    migrate_fails_at_once(
        &format!("postgres://postgres@127.0.0.1:{closed}/vitrina"),
        &format!("at 127.0.0.1:{closed}: connection refused"),
    );
}

#[tokio::test]
async fn an_unknown_host_is_named_at_once() {
    // `.invalid` never resolves (RFC 2606).
    migrate_fails_at_once(
        "postgres://postgres@no-such-host.invalid/vitrina",
        "unknown host \"no-such-host.invalid\"",
    );
}

#[tokio::test]
async fn a_failed_authentication_is_named_at_once() {
    let Some(mut url) = postgres() else { return };
    url.set_username("vitrina_no_such_role").unwrap();
    migrate_fails_at_once(
        url.as_str(),
        "as user \"vitrina_no_such_role\": authentication failed",
    );
}

#[tokio::test]
async fn a_missing_postgres_database_comes_with_the_createdb_command() {
    let Some(mut url) = postgres() else { return };
    let name = format!("vitrina_missing_{}", uuid::Uuid::new_v4().simple());
    url.set_path(&name);
    let host = url.host_str().unwrap().to_owned();
    let user = url.username().to_owned();
    migrate_fails_at_once(
        url.as_str(),
        &format!("database \"{name}\" does not exist at {host}:"),
    );
    let out = vitrina(url.as_str(), &["migrate"]);
    assert_clean_failure(&out, &format!("create it with createdb -h {host}"));
    assert_clean_failure(&out, &format!("-U {user} {name}"));
}

#[tokio::test]
async fn a_sqlite_folder_that_cannot_be_made_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    migrate_fails_at_once(
        &format!("sqlite://{}/vitrina.db", file.display()),
        &format!("cannot create the folder {}", file.display()),
    );
}

/// The commands besides `serve`, `migrate` and `seed`, which only use a database.
const USERS_OF_THE_DATABASE: &[&[&str]] = &[
    &["keys", "list"],
    &["keys", "create", "--account", "acme"],
    &["webhooks", "list"],
    &["jobs", "run-once"],
];

#[tokio::test]
async fn commands_that_only_use_a_database_create_none() {
    let folder = tempfile::tempdir().unwrap();
    for args in USERS_OF_THE_DATABASE {
        // The default database, relative to the current folder.
        let out: Output = Command::new(env!("CARGO_BIN_EXE_vitrina"))
            .args(*args)
            .current_dir(folder.path())
            .env_remove("DATABASE_URL")
            .env("RUST_LOG", "warn")
            .output()
            .expect("run vitrina");
        let expected = format!(
            "no database at {}: run `vitrina migrate` or `vitrina serve` first",
            folder.path().join("data/vitrina.db").display()
        );
        assert_clean_failure(&out, &expected);
    }
    let left: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing created: {left:?}");
}

#[tokio::test]
async fn commands_that_only_use_a_database_refuse_an_unmigrated_one() {
    let db = TestDb::new().await;
    if let Some(file) = db.url.strip_prefix("sqlite://") {
        std::fs::write(file, "").unwrap();
    }
    let all = Migrator::migrations().len();
    let expected =
        format!("is not migrated ({all} of {all} migrations pending): run `vitrina migrate`");
    for args in USERS_OF_THE_DATABASE {
        assert_clean_failure(&vitrina(&db.url, args), &expected);
    }
    let conn = db.connect().await;
    let accounts = vitrina::accounts::find_account(&conn, "acme")
        .await
        .unwrap();
    assert!(
        accounts.is_none(),
        "the refused `keys create` wrote nothing"
    );
}
