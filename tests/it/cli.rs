//! The `vitrina` binary, run as a user would.

use std::process::Command;
use std::time::Duration;

use migration::{Migrator, MigratorTrait};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait};

use crate::helpers::TestDb;
use crate::helpers::cli::{assert_clean_failure, create_loopback_webhook, stderr, stdout, vitrina};
use crate::serve::Serve;

/// A database with every migration applied.
async fn migrated_db() -> TestDb {
    let db = TestDb::new().await;
    db.connect().await;
    db
}

/// Creates a key for `account` and returns (id, secret).
fn create_key(db: &TestDb, account: &str) -> (String, String) {
    let out = vitrina(&db.url, &["keys", "create", "--account", account]);
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    let secret = printed
        .lines()
        .find(|l| l.starts_with("vtr_"))
        .expect("key printed");
    let id = printed.split_whitespace().nth(3).expect("id printed");
    (id.to_owned(), secret.to_owned())
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// Stops a server that has answered `/readyz`; returns its log.
async fn stop(mut served: Serve) -> Vec<String> {
    let ready = client().get(format!("{}/readyz", served.base)).send().await;
    assert_eq!(ready.expect("readyz answers").status(), 200);
    served.kill()
}

#[tokio::test]
async fn migrate_command_is_rerunnable() {
    let db = TestDb::new().await;
    let first = vitrina(&db.url, &["migrate"]);
    assert!(first.status.success(), "{first:?}");
    assert!(stdout(&first).contains("applied m20261122_000001_initial"));
    let again = vitrina(&db.url, &["migrate"]);
    assert!(again.status.success(), "{again:?}");
    assert!(stdout(&again).contains("up to date"));
    assert!(!stdout(&again).contains("applied"), "{}", stdout(&again));
}

#[tokio::test]
async fn keys_create_list_and_revoke() {
    let db = migrated_db().await;
    let (id, secret) = create_key(&db, "acme");

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
async fn keys_create_takes_scopes_and_an_expiry() {
    let db = migrated_db().await;
    let before = chrono::Utc::now();
    let out = vitrina(
        &db.url,
        &[
            "keys",
            "create",
            "--account",
            "shop",
            "--scope",
            "read,webhooks",
            "--expires-in",
            "30d",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    let id = printed.split_whitespace().nth(3).expect("id printed");
    let secret = printed
        .lines()
        .find(|l| l.starts_with("vtr_"))
        .expect("key printed");
    let terms = printed
        .lines()
        .find(|l| l.starts_with("scopes: "))
        .expect("terms printed");
    assert!(
        terms.starts_with("scopes: read webhooks; expires: 20"),
        "{terms}"
    );

    let conn = db.connect().await;
    let caller = vitrina::accounts::authenticate(&conn, secret, chrono::Utc::now())
        .await
        .unwrap()
        .expect("the key works");
    use vitrina::accounts::Scope;
    assert!(caller.scopes.allows(Scope::Read) && caller.scopes.allows(Scope::Webhooks));
    assert!(!caller.scopes.allows(Scope::Upload));
    let expires_at = caller.expires_at.expect("an expiry");
    let thirty_days = chrono::TimeDelta::days(30);
    assert!(expires_at >= before + thirty_days && expires_at <= chrono::Utc::now() + thirty_days);
    let list = stdout(&vitrina(&db.url, &["keys", "list"]));
    let row = list.lines().find(|l| l.starts_with(id)).expect("listed");
    assert!(
        row.contains("read webhooks")
            && row.contains(&terms["scopes: read webhooks; expires: ".len()..]),
        "{row}"
    );

    for (args, expected) in [
        (
            &["--scope", "admin"][..],
            "invalid value 'admin' for '--scope",
        ),
        (
            &["--expires-in", "soon"][..],
            "invalid value 'soon' for '--expires-in",
        ),
        (
            &["--expires-in", "0s"][..],
            "a key must expire after it is made",
        ),
        // Past the last date a timestamp holds, and past the longest span.
        (
            &["--expires-in", "10000000y"][..],
            "--expires-in 10000000years is too far away",
        ),
        (
            &["--expires-in", "1000000000y"][..],
            "--expires-in 1000000000years is too far away",
        ),
    ] {
        let out = vitrina(
            &db.url,
            &[&["keys", "create", "--account", "shop"][..], args].concat(),
        );
        assert!(!out.status.success(), "{out:?}");
        assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    }
}

#[tokio::test]
async fn keys_revoke_takes_the_prefix_keys_list_shows() {
    let db = migrated_db().await;
    let (id, secret) = create_key(&db, "acme");
    let (other_id, _) = create_key(&db, "acme");

    let out = vitrina(&db.url, &["keys", "revoke", &secret[..12]]);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).starts_with(&format!("revoked {id}")));
    let list = stdout(&vitrina(&db.url, &["keys", "list"]));
    let state = |key: &str| {
        list.lines()
            .find(|l| l.starts_with(key))
            .unwrap()
            .to_owned()
    };
    assert!(state(&id).contains("revoked") && state(&other_id).contains("active"));

    let last = secret.as_bytes()[11];
    let unknown = format!("{}{}", &secret[..11], if last == b'0' { '1' } else { '0' });
    assert_clean_failure(
        &vitrina(&db.url, &["keys", "revoke", &unknown]),
        &format!("no API key has the prefix {unknown}"),
    );
    // Two keys may share the 8 digits shown: a prefix must name one key.
    let conn = db.connect().await;
    let other = vitrina::accounts::find_key(&conn, &other_id).await.unwrap();
    let twin = entity::api_key::ActiveModel {
        id: Set(uuid::Uuid::new_v4()),
        key_hash: Set("a twin's hash".into()),
        ..other.clone().into()
    };
    twin.insert(&conn).await.unwrap();
    assert_clean_failure(
        &vitrina(&db.url, &["keys", "revoke", &other.prefix]),
        "more than one API key has the prefix",
    );
    assert_clean_failure(
        &vitrina(&db.url, &["keys", "revoke", "acme"]),
        "neither a key id nor a key prefix",
    );
}

#[tokio::test]
async fn revoking_twice_says_when_and_succeeds() {
    let db = migrated_db().await;
    let (id, _) = create_key(&db, "acme");
    assert!(vitrina(&db.url, &["keys", "revoke", &id]).status.success());
    let again = vitrina(&db.url, &["keys", "revoke", &id]);
    assert!(again.status.success(), "{again:?}");
    let said = stdout(&again);
    assert!(
        said.starts_with("already revoked at 20") && said.contains(&id),
        "{said}"
    );
}

#[tokio::test]
async fn revoking_an_unknown_key_fails_cleanly() {
    let db = migrated_db().await;
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
}

#[tokio::test]
async fn serve_with_demo_data_answers_health_and_prints_a_key() {
    let db = TestDb::new().await;
    let mut served = Serve::start(&db.url, &["--demo"], &[("RUST_LOG", "warn")]);
    let key = served.line_after("demo API key: ");
    let base = served.base.clone();
    assert!(key.starts_with("vtr_"), "{key}");
    assert_eq!(
        served.line_after("try: "),
        format!("curl -H 'Authorization: Bearer {key}' '{base}/v1/products?page_size=2'")
    );
    assert!(
        served
            .line_after("GraphiQL")
            .ends_with(&format!("{base}/graphql"))
    );

    let health = client()
        .get(format!("{base}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    stop(served).await;

    let conn = db.connect().await;
    assert!(
        !vitrina::seed::is_empty(&conn).await.unwrap(),
        "demo data was loaded"
    );
}

#[tokio::test]
async fn serve_demo_over_sellers_alone_keeps_them_and_skips_the_demo_data() {
    let db = TestDb::new().await;
    let conn = db.connect().await;
    let kept = crate::fixtures::seller(entity::Marketplace::Wildberries, "kept");
    let kept = crate::fixtures::insert_seller(&conn, kept).await;
    let mut served = Serve::start(&db.url, &["--demo"], &[("RUST_LOG", "warn")]);
    assert!(served.line_after("demo API key: ").starts_with("vtr_"));
    stop(served).await;
    let sellers = entity::seller::Entity::find().all(&conn).await.unwrap();
    assert_eq!(sellers, vec![kept]);
    assert!(
        entity::product::Entity::find()
            .all(&conn)
            .await
            .unwrap()
            .is_empty(),
        "no demo data over a catalog"
    );
}

#[tokio::test]
async fn serve_demo_again_prints_a_working_key_and_leaves_one_live_demo_key() {
    let db = TestDb::new().await;
    let demo = ["--demo"];
    let quiet = [("RUST_LOG", "warn")];
    let mut first = Serve::start(&db.url, &demo, &quiet);
    let first_key = first.line_after("demo API key: ");
    stop(first).await;

    let mut second = Serve::start(&db.url, &demo, &quiet);
    assert_eq!(second.line_after("earlier demo API keys revoked: "), "1");
    let second_key = second.line_after("demo API key: ");
    let products = format!("{}/v1/products?page_size=1", second.base);
    let answer = |key: String| {
        let request = client().get(&products).bearer_auth(key).send();
        async { request.await.expect("answered").status() }
    };
    assert_eq!(answer(second_key.clone()).await, 200);
    assert_eq!(
        answer(first_key).await,
        401,
        "the earlier demo key is revoked"
    );
    stop(second).await;

    let conn = db.connect().await;
    let live: Vec<_> = vitrina::accounts::list_keys(&conn)
        .await
        .unwrap()
        .into_iter()
        .filter(|k| k.account_name == vitrina::seed::DEMO_ACCOUNT && k.key.revoked_at.is_none())
        .collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].key.prefix, second_key[..12]);
}

#[tokio::test]
async fn serve_logs_a_plain_start_up_summary_and_each_warning_once() {
    let db = TestDb::new().await;
    // A password the summary must not show (PostgreSQL here trusts loopback).
    let url = match db.url.strip_prefix("postgres://postgres@") {
        Some(rest) => format!("postgres://postgres:s3cret-pw@{rest}"),
        None => db.url.clone(),
    };
    let served = Serve::start(&url, &["--webhook-allow-insecure-targets"], &[]);
    let log = stop(served).await;
    let text = log.join("\n");

    assert!(
        !text.contains('\x1b'),
        "no colour codes off a terminal: {text}"
    );
    assert!(!text.contains("s3cret-pw"), "{text}");
    assert!(!text.contains("already exists, skipping"), "{text}");
    let summary: Vec<_> = log
        .iter()
        .filter(|l| l.contains("vitrina started"))
        .collect();
    assert_eq!(summary.len(), 1, "{text}");
    for field in [
        concat!("version=\"", env!("CARGO_PKG_VERSION"), "\""),
        "bind=127.0.0.1:",
        "public_url=",
        &format!("migrations_applied={}", Migrator::migrations().len()),
        "m20261122_000001_initial",
        "jobs=\"on\"",
        "rate_limit_per_minute=600",
    ] {
        assert!(summary[0].contains(field), "{field} in {}", summary[0]);
    }
    let database = match url.starts_with("postgres") {
        true => "database=postgres://postgres@127.0.0.1:5432/vitrina_test_",
        false => "database=sqlite://",
    };
    assert!(summary[0].contains(database), "{}", summary[0]);
    let warned = log
        .iter()
        .filter(|l| l.contains("WARN") && l.contains("webhook targets"))
        .count();
    assert_eq!(warned, 1, "the insecure-targets warning, once: {text}");
}

#[tokio::test]
async fn json_logs_carry_the_summary_as_fields() {
    let db = TestDb::new().await;
    let served = Serve::start(&db.url, &[], &[("VITRINA_LOG_FORMAT", "json")]);
    let log = stop(served).await;
    let summary = log
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["fields"]["message"] == "vitrina started")
        .unwrap_or_else(|| panic!("a JSON summary: {log:#?}"));
    assert_eq!(
        summary["fields"]["migrations_applied"],
        Migrator::migrations().len()
    );
    assert_eq!(summary["fields"]["daily_quota"], 10_000);
}

#[tokio::test]
async fn migrate_logs_nothing_at_the_default_level() {
    let db = TestDb::new().await;
    for _ in 0..2 {
        let out = Command::new(env!("CARGO_BIN_EXE_vitrina"))
            .arg("migrate")
            .env("DATABASE_URL", &db.url)
            .env_remove("RUST_LOG")
            .output()
            .expect("run vitrina");
        assert!(out.status.success(), "{out:?}");
        assert_eq!(stderr(&out), "", "no sqlx notices, no migration steps");
    }
}

#[tokio::test]
async fn webhooks_create_with_the_insecure_switch_says_the_server_needs_it_too() {
    let db = migrated_db().await;
    create_key(&db, "acme");
    let out = create_loopback_webhook(&db.url, "acme");
    assert!(out.status.success(), "{out:?}");
    let said = stderr(&out);
    assert!(
        said.starts_with("warning: ")
            && said.contains("the server must run with the same switch")
            && said.contains("VITRINA_WEBHOOK_ALLOW_INSECURE_TARGETS=true"),
        "{said}"
    );
}

#[tokio::test]
async fn disabling_a_webhook_twice_says_when_and_succeeds() {
    let db = migrated_db().await;
    create_key(&db, "acme");
    let created = stdout(&create_loopback_webhook(&db.url, "acme"));
    let id = created.split_whitespace().nth(3).expect("id printed");
    let first = vitrina(&db.url, &["webhooks", "disable", id]);
    assert!(
        stdout(&first).starts_with(&format!("disabled {id}")),
        "{first:?}"
    );
    let again = vitrina(&db.url, &["webhooks", "disable", id]);
    assert!(again.status.success(), "{again:?}");
    let said = stdout(&again);
    assert!(
        said.starts_with("already disabled at 20") && said.contains(id),
        "{said}"
    );
}

#[test]
fn every_option_and_argument_of_every_command_says_what_it_is() {
    let mut missing = Vec::new();
    let mut commands = vec![(String::from("vitrina"), {
        let mut cli = <vitrina::cli::Cli as clap::CommandFactory>::command();
        cli.build();
        cli
    })];
    while let Some((path, command)) = commands.pop() {
        for arg in command.get_arguments() {
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} {}", arg.get_id()));
            }
        }
        for sub in command.get_subcommands() {
            commands.push((format!("{path} {}", sub.get_name()), sub.clone()));
        }
    }
    assert!(missing.is_empty(), "no help text: {missing:#?}");
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

#[test]
fn the_settings_reference_is_generated_from_the_command_line() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/settings.md");
    let checked_in = std::fs::read_to_string(path).expect("docs/settings.md");
    assert!(
        checked_in == vitrina::cli::settings_reference(),
        "docs/settings.md is stale: run `cargo run -- settings --out docs/settings.md`"
    );
}

#[test]
fn serve_help_groups_its_options_by_section() {
    let out = vitrina("sqlite::memory:", &["serve", "--help"]);
    let help = stdout(&out);
    let headings: Vec<&str> = help
        .lines()
        .filter(|line| line.ends_with(':') && !line.starts_with(' '))
        .collect();
    for section in vitrina::cli::SETTINGS_SECTIONS {
        assert!(headings.contains(&format!("{section}:").as_str()), "{help}");
    }
}

#[test]
fn each_command_shows_only_the_options_it_reads() {
    let help = |args: &[&str]| stdout(&vitrina("sqlite::memory:", args));
    for generated in [
        &["schema", "--help"][..],
        &["openapi", "--help"],
        &["settings", "--help"],
    ] {
        let shown = help(generated);
        assert!(!shown.contains("--database-url"), "{shown}");
    }
    let run_once = help(&["jobs", "run-once", "--help"]);
    for serve_only in [
        "--bind",
        "--graphql-max-depth",
        "--rate-limit-per-minute",
        "--cors-origins",
    ] {
        assert!(!run_once.contains(serve_only), "{serve_only}: {run_once}");
    }
    for read in [
        "--merge-batch",
        "--public-url",
        "--webhook-timeout-ms",
        "--database-url",
    ] {
        assert!(run_once.contains(read), "{read}: {run_once}");
    }
    let keys = help(&["keys", "create", "--help"]);
    assert!(keys.contains("--database-url"), "{keys}");
    let webhook_settings = |args: &[&str]| -> Vec<String> {
        help(args)
            .split_whitespace()
            .filter(|word| word.starts_with("--webhook-"))
            .map(str::to_owned)
            .collect()
    };
    for (command, reads) in [
        ("create", &["--webhook-allow-insecure-targets"][..]),
        ("rotate-secret", &["--webhook-secret-overlap-hours"]),
        ("redeliver", &["--webhook-max-pending-redeliveries"]),
        (
            "test",
            &[
                "--webhook-timeout-ms",
                "--webhook-disable-after",
                "--webhook-allow-insecure-targets",
            ],
        ),
        ("list", &[]),
    ] {
        let shown = webhook_settings(&["webhooks", command, "--help"]);
        assert_eq!(shown, reads, "webhooks {command}");
    }
}
