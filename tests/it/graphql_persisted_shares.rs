//! The persisted-query store gives each account its share: one account
//! registering more than its share evicts only its own texts, and past the
//! store's maximum the account keeping the most gives way; a text two
//! accounts keep stays while either does. Checked on a replica, whose
//! memory holds nothing: what runs there runs from the table.

use std::net::SocketAddr;

use chrono::TimeDelta;
use entity::persisted_query;
use sea_orm::{ConnectionTrait, EntityTrait, PaginatorTrait, Statement};
use vitrina::config::{GraphqlConfig, Settings};

use crate::graphql_persisted::{by_hash, codes, post_to, sha256, with_text};
use crate::helpers::{TestApp, migrate_down_through, uncached};

/// An app keeping at most `max` texts, `per_account` for each account.
async fn app(max: u64, per_account: u64) -> TestApp {
    // An answer from the response cache is no use of the store: uncached,
    // every request uses it.
    TestApp::spawn_with_settings(uncached(Settings {
        graphql: GraphqlConfig {
            persisted_queries_max: max,
            persisted_queries_per_account: per_account,
            ..GraphqlConfig::default()
        },
        ..Settings::default()
    }))
    .await
}

/// Distinct query texts, named after `who`.
fn queries(who: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("query {who}{i} {{ __typename }}"))
        .collect()
}

/// Registers each of `queries` as `key` (its text with its hash), a
/// minute apart so their order of use is plain.
async fn register(app: &TestApp, key: &str, queries: &[String]) {
    for query in queries {
        let (status, _, body) = post_to(app, &app.url(""), Some(key), &with_text(query)).await;
        assert_eq!((status, codes(&body)), (200, vec![]), "{body}");
        app.clock.advance(TimeDelta::minutes(1));
    }
}

/// Which of `queries` run by their hash alone as `key` on the replica at
/// `replica`.
async fn running(app: &TestApp, replica: SocketAddr, key: &str, queries: &[String]) -> Vec<bool> {
    let base = format!("http://{replica}");
    let mut found = Vec::new();
    for query in queries {
        let (status, _, body) = post_to(app, &base, Some(key), &by_hash(query)).await;
        assert_eq!(status, 200, "{body}");
        match codes(&body).as_slice() {
            [] => assert_eq!(body["data"]["__typename"], "QueryRoot", "{body}"),
            [code] => assert_eq!(code, "PERSISTED_QUERY_NOT_FOUND", "{body}"),
            other => panic!("{other:?}"),
        }
        found.push(body.get("errors").is_none());
    }
    found
}

async fn texts(app: &TestApp) -> u64 {
    persisted_query::Entity::find()
        .count(&app.db)
        .await
        .unwrap()
}

#[tokio::test]
async fn one_accounts_registrations_never_evict_anothers() {
    let app = app(12, 5).await;
    let (a, b) = (app.key("a").await, app.key("b").await);
    let (mine, theirs) = (queries("B", 3), queries("A", 20));
    register(&app, &b, &mine).await;
    register(&app, &a, &theirs).await;

    let replica = app.replica(app.state.settings.clone()).await;
    assert_eq!(running(&app, replica, &b, &mine).await, [true; 3]);
    // A kept its latest five, and the store its maximum at most.
    let kept = running(&app, replica, &a, &theirs).await;
    assert_eq!(kept, [vec![false; 15], vec![true; 5]].concat());
    assert_eq!(texts(&app).await, 8);
}

#[tokio::test]
async fn past_the_stores_maximum_the_account_keeping_the_most_gives_way() {
    let app = app(8, 5).await;
    let (a, b, c) = (app.key("a").await, app.key("b").await, app.key("c").await);
    let (of_a, of_b, of_c) = (queries("A", 5), queries("B", 3), queries("C", 2));
    register(&app, &b, &of_b).await;
    register(&app, &a, &of_a).await;
    register(&app, &c, &of_c).await;

    let replica = app.replica(app.state.settings.clone()).await;
    assert_eq!(running(&app, replica, &b, &of_b).await, [true; 3]);
    assert_eq!(running(&app, replica, &c, &of_c).await, [true; 2]);
    let kept = running(&app, replica, &a, &of_a).await;
    assert_eq!(kept, [false, false, true, true, true]);
    assert_eq!(texts(&app).await, 8);
}

#[tokio::test]
async fn a_text_stays_while_any_account_keeps_it_and_runs_for_every_account() {
    let app = app(100, 3).await;
    let (a, b, c) = (app.key("a").await, app.key("b").await, app.key("c").await);
    let shared = queries("Shared", 1);
    register(&app, &a, &shared).await;
    register(&app, &b, &shared).await;
    // A's share moves on: the text stays, B keeps it.
    register(&app, &a, &queries("A", 3)).await;
    let replica = app.replica(app.state.settings.clone()).await;
    assert_eq!(running(&app, replica, &b, &shared).await, [true]);
    // Any account's text runs for every account, and is its own once used.
    assert_eq!(running(&app, replica, &c, &shared).await, [true]);
    // B's share moves on too: C keeps it.
    app.clock.advance(TimeDelta::minutes(1));
    register(&app, &b, &queries("B", 3)).await;
    let replica = app.replica(app.state.settings.clone()).await;
    assert_eq!(running(&app, replica, &c, &shared).await, [true]);
    assert_eq!(texts(&app).await, 1 + 3 + 3);
}

#[tokio::test]
async fn the_owners_migration_rolls_back_keeping_the_texts_and_their_last_use() {
    let app = app(100, 10).await;
    let key = app.key("a").await;
    let (used, unused) = (queries("Used", 1), queries("Unused", 1));
    register(&app, &key, &[used.clone(), unused].concat()).await;
    // Used again once its use is noted.
    app.clock.advance(TimeDelta::minutes(11));
    let replica = app.replica(app.state.settings.clone()).await;
    assert_eq!(running(&app, replica, &key, &used).await, [true]);

    migrate_down_through(&app.db, "m20261128_000018_persisted_query_owners").await;
    let later = app
        .db
        .query_all_raw(Statement::from_string(
            app.db.get_database_backend(),
            "SELECT hash FROM persisted_queries WHERE last_used_at > created_at",
        ))
        .await
        .expect("last_used_at is back");
    let later: Vec<String> = later
        .iter()
        .map(|r| r.try_get("", "hash").unwrap())
        .collect();
    assert_eq!(later, [sha256(&used[0])]);
    vitrina::db::migrate(&app.db).await.expect("up again");
    assert_eq!(texts(&app).await, 2);
}
