//! `vitrina accounts`: created by name (twice says so), listed and shown
//! with their keys counted, and given a daily quota of their own that the
//! running service applies to the next request.

use serde_json::Value;

use crate::helpers::TestApp;
use crate::helpers::cli::{assert_clean_failure, stdout, vitrina};

/// The daily quota `key`'s account is told by the running app.
async fn quota_limit(app: &TestApp, key: &str) -> Value {
    let response = app.get_as(key, "/v1/rate_limit").await;
    let body: Value = response.json().await.expect("JSON");
    body["data"]["quota"]["limit"].clone()
}

#[tokio::test]
async fn accounts_are_created_once_and_listed_with_their_keys() {
    let app = TestApp::spawn().await;
    let db = app.db_url();
    let created = stdout(&vitrina(db, &["accounts", "create", "shop"]));
    assert!(created.starts_with("created account shop ("), "{created}");
    let again = vitrina(db, &["accounts", "create", "shop"]);
    assert!(again.status.success(), "{again:?}");
    assert!(
        stdout(&again).starts_with("already exists since "),
        "{}",
        stdout(&again)
    );

    let first = app.key("shop").await;
    app.key("shop").await;
    let revoked = stdout(&vitrina(db, &["keys", "revoke", &first[..12]]));
    assert!(revoked.starts_with("revoked "), "{revoked}");
    app.key("acme").await;
    // Expired by now: the app's clock stands days before the CLI's.
    use vitrina::clock::Clock;
    let terms = vitrina::accounts::KeyTerms {
        expires_at: Some(app.clock.now() + chrono::TimeDelta::minutes(1)),
        ..Default::default()
    };
    vitrina::accounts::create_key_with(&app.db, "acme", terms, app.clock.now())
        .await
        .expect("a key that expires");

    let listed = stdout(&vitrina(db, &["accounts", "list"]));
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|row| row[0]).collect();
    assert_eq!(names, ["acme", "shop"], "{listed}");
    // name, id, "default", active, expired and revoked keys
    assert_eq!(rows[1][2..], ["default", "1", "0", "1"], "{listed}");
    assert_eq!(rows[0][2..], ["default", "1", "1", "0"], "{listed}");

    let shown = stdout(&vitrina(db, &["accounts", "show", "shop"]));
    assert!(
        shown.contains("keys:        1 active, 0 expired, 1 revoked"),
        "{shown}"
    );
    let shown = stdout(&vitrina(db, &["accounts", "show", "acme"]));
    assert!(
        shown.contains("keys:        1 active, 1 expired, 0 revoked"),
        "{shown}"
    );
    let missing = vitrina(db, &["accounts", "show", "nobody"]);
    assert_clean_failure(&missing, "no account named \"nobody\"");

    let longest = "é".repeat(vitrina::accounts::MAX_ACCOUNT_NAME_CHARS);
    let created = vitrina(db, &["accounts", "create", &longest]);
    assert!(created.status.success(), "{created:?}");
    let over = format!("{longest}e");
    for (args, expected) in [
        (
            vec!["accounts", "create", over.as_str()],
            "at most 100 characters, not 101",
        ),
        (
            vec!["keys", "create", "--account", over.as_str()],
            "at most 100 characters, not 101",
        ),
        (
            vec!["accounts", "create", "bell\u{7}"],
            "must not hold control characters",
        ),
    ] {
        assert_clean_failure(&vitrina(db, &args), expected);
    }
}

#[tokio::test]
async fn a_quota_set_for_an_account_applies_to_its_next_request() {
    let app = TestApp::spawn().await;
    let db = app.db_url();
    let key = app.key("shop").await;
    let default = quota_limit(&app, &key).await;

    let set = stdout(&vitrina(
        db,
        &["accounts", "set-quota", "shop", "--rows", "3"],
    ));
    assert_eq!(set.trim(), "daily quota of shop: 3 rows (was default)");
    assert_eq!(quota_limit(&app, &key).await, 3);
    let same = stdout(&vitrina(
        db,
        &["accounts", "set-quota", "shop", "--rows", "3"],
    ));
    assert_eq!(same.trim(), "already so: daily quota of shop is 3 rows");

    let back = stdout(&vitrina(
        db,
        &["accounts", "set-quota", "shop", "--default"],
    ));
    assert_eq!(back.trim(), "daily quota of shop: default (was 3 rows)");
    assert_eq!(quota_limit(&app, &key).await, default);

    // Both ends of the range, read back exactly by a JSON client.
    for rows in [0_i64, 9_007_199_254_740_991] {
        let set = vitrina(
            db,
            &["accounts", "set-quota", "shop", "--rows", &rows.to_string()],
        );
        assert!(set.status.success(), "{set:?}");
        assert_eq!(quota_limit(&app, &key).await, rows);
    }
    for refused in [
        &["accounts", "set-quota", "shop"][..],
        &["accounts", "set-quota", "shop", "--rows", "-1"],
        &[
            "accounts",
            "set-quota",
            "shop",
            "--rows",
            "9007199254740992",
        ],
        &["accounts", "set-quota", "shop", "--rows", "3", "--default"],
    ] {
        let out = vitrina(db, refused);
        assert!(!out.status.success(), "{refused:?} was taken");
    }
}

#[tokio::test]
async fn concurrent_creates_of_one_name_make_one_account() {
    use vitrina::accounts::admin::{self, Creation};
    use vitrina::clock::Clock;
    let app = TestApp::spawn().await;
    let now = app.clock.now();
    let made =
        futures_util::future::join_all((0..8).map(|_| admin::create(&app.db, "race", now))).await;
    let made: Vec<Creation> = made
        .into_iter()
        .map(|m| m.expect("every caller gets the account"))
        .collect();
    let created = made
        .iter()
        .filter(|m| matches!(m, Creation::Created(_)))
        .count();
    assert_eq!(created, 1, "one caller made it, the others found it");
}

#[tokio::test]
async fn concurrent_key_replacements_for_a_new_name_all_succeed() {
    use vitrina::clock::Clock;
    let app = TestApp::spawn().await;
    let now = app.clock.now();
    let replaced = futures_util::future::join_all(
        (0..8).map(|_| vitrina::accounts::replace_keys(&app.db, "newcomer", now)),
    )
    .await;
    let accounts: Vec<uuid::Uuid> = replaced
        .into_iter()
        .map(|r| {
            r.expect("each replacement finds or makes the account")
                .0
                .key
                .account_id
        })
        .collect();
    assert!(accounts.iter().all(|a| *a == accounts[0]), "one account");
}
