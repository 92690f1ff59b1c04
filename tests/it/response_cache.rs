//! The response cache (issue 30): a repeated GraphQL query or REST GET is
//! answered from memory with no statement, still counted against the rate
//! limit; an answer of the caller's own is never served to another key, and
//! where a caller stands is never kept; every write the answer depends on
//! (a merge, a snapshot, retention, an upload) retires it at once, and on
//! PostgreSQL on every replica within a second, also after the listener
//! lost its connection. A randomized run compares every answer with a
//! server whose cache is off.

use std::time::Duration;

use chrono::TimeDelta;
use reqwest::header::{ETAG, IF_NONE_MATCH};
use sea_orm::{ConnectionTrait, DbBackend};
use serde_json::{Value, json};
use vitrina::cache::versions::FOREIGN_WRITES_POLL;
use vitrina::clock::Clock;
use vitrina::config::Settings;

use crate::helpers::cli::{stderr, vitrina_alongside};
use crate::helpers::uploads::{item, priced, send, send_and_merge};
use crate::helpers::{TestApp, daily_quota, eventually, required_header, test_limits};

const PRODUCTS: &str =
    "{ products(first: 10) { totalCount edges { node { id brand prices { price currency } } } } }";

/// Settings with a cache of `megabytes`.
fn cache_of(megabytes: u32) -> Settings {
    let mut settings = Settings {
        limits: test_limits(),
        ..Settings::default()
    };
    settings.http.cache_mb = megabytes;
    settings
}

/// The app with a cache of `megabytes`, once it learns of every write (on
/// PostgreSQL its listener is in place; until then nothing is kept).
async fn app_with_cache(megabytes: u32) -> TestApp {
    let app = TestApp::spawn_with_settings(cache_of(megabytes)).await;
    app.state.events.ready().await;
    app
}

/// Waits until the data versions of `app` stay put for two polls: on
/// SQLite the watch for other processes' commits sees the app's own ones
/// too, and retires every answer up to a poll after each; on PostgreSQL
/// the app's own notices come back to its listener. A test that counts
/// on a hit waits for it after its writes.
async fn settled(app: &TestApp) {
    let versions = app.state.events.versions();
    for _ in 0..20 {
        let before = versions.stamp();
        tokio::time::sleep(2 * FOREIGN_WRITES_POLL).await;
        if versions.stamp() == before {
            return;
        }
    }
    panic!("the data versions keep changing with no write");
}

/// An app with a cache, a key, and one product priced 1000 RUB, merged
/// and [`settled`], so that the next answers may be kept.
async fn app_with_a_product() -> (TestApp, String) {
    let app = app_with_cache(64).await;
    let key = app.key("acme").await;
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 1000.0)]).await;
    settled(&app).await;
    (app, key)
}

/// POSTs `query` to the server at `base` as `key`: the whole body.
async fn graphql_at(app: &TestApp, base: &str, key: &str, query: &str) -> Value {
    let response = app
        .client
        .post(format!("{base}/graphql"))
        .bearer_auth(key)
        .json(&json!({ "query": query }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    response.json().await.expect("JSON body")
}

async fn graphql(app: &TestApp, key: &str, query: &str) -> Value {
    graphql_at(app, &app.url(""), key, query).await
}

/// Whether `body` was answered from the cache.
fn cached(body: &Value) -> bool {
    body["extensions"]["cost"]["cached"] == json!(true)
}

/// GETs `path` from the server at `base` as `key`: status, remaining rate and body.
async fn rest_at(app: &TestApp, base: &str, key: &str, path: &str) -> (u16, i64, Value) {
    let response = app
        .client
        .get(format!("{base}{path}"))
        .bearer_auth(key)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    let remaining = required_header(&response, "x-ratelimit-remaining")
        .parse()
        .unwrap();
    (status, remaining, response.json().await.expect("JSON body"))
}

/// The lowest price of the first product in a `PRODUCTS` answer.
fn first_price(body: &Value) -> f64 {
    body["data"]["products"]["edges"][0]["node"]["prices"][0]["price"]
        .as_f64()
        .expect("a price")
}

#[tokio::test]
async fn a_repeated_query_is_answered_from_memory_and_still_counted() {
    let (app, key) = app_with_a_product().await;

    let first = graphql(&app, &key, PRODUCTS).await;
    assert!(!cached(&first), "{first}");
    let before = app.statements();
    let again = graphql(&app, &key, PRODUCTS).await;
    assert_eq!(app.statements(), before, "a hit sends no statement");
    assert!(cached(&again), "{again}");
    assert_eq!(again["data"], first["data"]);
    let remaining = |body: &Value| body["extensions"]["cost"]["rateLimit"]["remaining"].as_i64();
    assert_eq!(remaining(&again), remaining(&first).map(|r| r - 1));
    assert_eq!(
        again["extensions"]["cost"]["complexity"],
        first["extensions"]["cost"]["complexity"]
    );

    let base = app.url("");
    let (status, rate, body) = rest_at(&app, &base, &key, "/v1/products?page_size=5").await;
    assert_eq!(status, 200);
    let before = app.statements();
    let (_, rate_again, body_again) = rest_at(&app, &base, &key, "/v1/products?page_size=5").await;
    assert_eq!(app.statements(), before, "a REST hit sends no statement");
    assert_eq!(body_again, body);
    assert_eq!(rate_again, rate - 1, "a hit counts against the rate limit");
}

#[tokio::test]
async fn a_merged_price_shows_on_the_next_read() {
    let (app, key) = app_with_a_product().await;
    let base = app.url("");
    let path = "/v1/products?page_size=5";
    for _ in 0..2 {
        assert_eq!(first_price(&graphql(&app, &key, PRODUCTS).await), 1000.0);
        let (_, _, body) = rest_at(&app, &base, &key, path).await;
        assert_eq!(body["data"][0]["prices"][0]["price"], json!(1000.0));
    }
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 800.0)]).await;
    let body = graphql(&app, &key, PRODUCTS).await;
    assert!(!cached(&body));
    assert_eq!(first_price(&body), 800.0);
    let (_, _, body) = rest_at(&app, &base, &key, path).await;
    assert_eq!(body["data"][0]["prices"][0]["price"], json!(800.0));
}

#[tokio::test]
async fn an_answer_of_ones_own_is_never_served_to_another_key() {
    let app = app_with_cache(64).await;
    let (a, b) = (app.key("alpha").await, app.key("beta").await);
    send(&app, &a, vec![item("1")]).await;
    settled(&app).await;
    let me = "{ me { id scrapeSessions(first: 5) { totalCount } } }";
    let first = graphql(&app, &a, me).await;
    let again = graphql(&app, &a, me).await;
    assert!(cached(&again), "{again}");
    assert_eq!(again["data"], first["data"]);
    let other = graphql(&app, &b, me).await;
    assert!(!cached(&other), "{other}");
    assert_ne!(other["data"]["me"]["id"], first["data"]["me"]["id"]);
    assert_eq!(other["data"]["me"]["scrapeSessions"]["totalCount"], 0);

    let base = app.url("");
    let (_, _, of_a) = rest_at(&app, &base, &a, "/v1/me/scrapes").await;
    rest_at(&app, &base, &a, "/v1/me/scrapes").await;
    let (_, _, of_b) = rest_at(&app, &base, &b, "/v1/me/scrapes").await;
    assert_eq!(of_a["meta"]["total"], 1);
    assert_eq!(of_b["meta"]["total"], 0);

    // A new session of A's shows at once.
    send(&app, &a, vec![item("2")]).await;
    let after = graphql(&app, &a, me).await;
    assert_eq!(after["data"]["me"]["scrapeSessions"]["totalCount"], 2);
    let (_, _, of_a) = rest_at(&app, &base, &a, "/v1/me/scrapes").await;
    assert_eq!(of_a["meta"]["total"], 2);
}

#[tokio::test]
async fn a_sessions_status_and_stats_stay_live() {
    let app = app_with_cache(64).await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1"), item("2")]).await;
    settled(&app).await;
    let path = format!("/v1/me/scrapes/{session}");
    let query = format!(
        "{{ me {{ scrapeSession(id: \"{session}\") {{ status stats {{ total pending merged }} }} }} }}"
    );
    let live = |rest: &Value, graphql: &Value| {
        let (rest, graphql) = (&rest["data"], &graphql["data"]["me"]["scrapeSession"]);
        let status = graphql["status"].as_str().map(str::to_lowercase);
        assert_eq!(rest["status"].as_str(), status.as_deref());
        assert_eq!(rest["stats"]["merged"], graphql["stats"]["merged"]);
        (
            rest["status"].clone(),
            rest["stats"]["pending"].clone(),
            rest["stats"]["merged"].clone(),
        )
    };
    let base = app.url("");
    for _ in 0..2 {
        let rest = rest_at(&app, &base, &key, &path).await.2;
        let graphql = graphql(&app, &key, &query).await;
        assert_eq!(
            live(&rest, &graphql),
            (json!("processing"), json!(2), json!(0))
        );
    }
    assert!(
        cached(&graphql(&app, &key, &query).await),
        "kept until it changes"
    );
    app.jobs().tick().await.expect("merge");
    let rest = rest_at(&app, &base, &key, &path).await.2;
    let graphql = graphql(&app, &key, &query).await;
    assert_eq!(
        live(&rest, &graphql),
        (json!("completed"), json!(0), json!(2))
    );
}

#[tokio::test]
async fn where_a_caller_stands_is_never_kept() {
    let app = app_with_cache(64).await;
    let key = app.key("acme").await;
    let query = "{ rateLimit { remaining } products(first: 1) { totalCount } }";
    let first = graphql(&app, &key, query).await;
    let again = graphql(&app, &key, query).await;
    assert!(!cached(&again), "{again}");
    let remaining = |body: &Value| body["data"]["rateLimit"]["remaining"].as_i64().unwrap();
    assert_eq!(remaining(&again), remaining(&first) - 1);
}

#[tokio::test]
async fn a_metered_answer_is_charged_each_time() {
    let mut settings = cache_of(64);
    settings.limits = daily_quota(1000);
    let app = TestApp::spawn_with_settings(settings).await;
    app.state.events.ready().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1"), item("2")]).await;
    app.jobs().tick().await.expect("merge");
    let path = format!("/v1/me/scrapes/{session}/products");
    let quota = |response: &reqwest::Response| -> i64 {
        required_header(response, "x-quota-remaining")
            .parse()
            .unwrap()
    };
    let first = app.get_as(&key, &path).await;
    let second = app.get_as(&key, &path).await;
    assert_eq!(quota(&first), 998);
    assert_eq!(quota(&second), 996, "each answer's rows are charged");
}

#[tokio::test]
async fn a_304_is_answered_from_memory() {
    let (app, key) = app_with_a_product().await;
    let url = app.url("/graphql?query={products(first:3){totalCount}}");
    let first = app.client.get(&url).bearer_auth(&key).send().await.unwrap();
    let tag = required_header(&first, ETAG.as_str()).to_owned();
    let before = app.statements();
    let revalidated = app.client.get(&url).bearer_auth(&key);
    let revalidated = revalidated
        .header(IF_NONE_MATCH, &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), 304);
    assert_eq!(required_header(&revalidated, ETAG.as_str()), tag);
    assert_eq!(app.statements(), before, "the 304 sends no statement");
    // REST: the kept answer carries the tag it had when it ran.
    let path = "/v1/products?page_size=3";
    let ran = app.get_as(&key, path).await;
    let rest_tag = required_header(&ran, ETAG.as_str()).to_owned();
    let before = app.statements();
    let kept = app.get_as(&key, path).await;
    assert_eq!(required_header(&kept, ETAG.as_str()), rest_tag);
    let revalidated = app.client.get(app.url(path)).bearer_auth(&key);
    let revalidated = revalidated.header(IF_NONE_MATCH, &rest_tag).send();
    let revalidated = revalidated.await.unwrap();
    assert_eq!(revalidated.status(), 304);
    assert_eq!(app.statements(), before, "the REST 304 sends no statement");
    // It says how to keep the answer, as the 200 did.
    for name in [
        ETAG.as_str(),
        "cache-control",
        "vary",
        "x-ratelimit-remaining",
    ] {
        assert!(
            revalidated.headers().contains_key(name),
            "304 without {name}"
        );
    }
    assert_eq!(required_header(&revalidated, ETAG.as_str()), rest_tag);
    for name in ["cache-control", "vary"] {
        assert_eq!(
            required_header(&revalidated, name),
            required_header(&kept, name),
            "{name}"
        );
    }
    // After a change the same tag no longer matches.
    send_and_merge(&app, &key, vec![priced("2", "Redmond", 900.0)]).await;
    let changed = app.client.get(&url).bearer_auth(&key);
    let changed = changed.header(IF_NONE_MATCH, &tag).send().await.unwrap();
    assert_eq!(changed.status(), 200);
}

/// A page of 40 products: enough to be kept deflated.
const PAGE: &str =
    "{ products(first: 40) { edges { node { id brand name prices { price currency } } } } }";

/// GETs `path` (a GraphQL query or a REST path) as `key` with
/// `Accept-Encoding: gzip`: the content encoding, `Vary`, whether its
/// length was known before it was sent (the compression layer streams
/// what it compresses; kept bytes go as they are), and the body, gunzipped
/// if it came so.
async fn get_gzip(app: &TestApp, key: &str, path: &str) -> (Option<String>, String, bool, Value) {
    let request = app.client.get(app.url(path)).bearer_auth(key);
    let response = request
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        let values = response.headers().get_all(name).iter();
        values
            .map(|v| v.to_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let encoding = header("content-encoding").pop();
    let vary = header("vary").join(", ");
    let length = header("content-length").pop();
    let bytes = response.bytes().await.unwrap();
    let sized = length == Some(bytes.len().to_string());
    let mut body = Vec::new();
    match encoding.as_deref() {
        Some("gzip") => {
            let mut decoder = flate2::read::GzDecoder::new(&bytes[..]);
            std::io::Read::read_to_end(&mut decoder, &mut body).expect("a whole gzip member");
        }
        _ => body = bytes.to_vec(),
    }
    let body = serde_json::from_slice(&body).expect("JSON");
    (encoding, vary, sized, body)
}

#[tokio::test]
async fn a_kept_answer_goes_as_gzip_to_a_client_that_takes_it_and_plain_to_others() {
    let app = app_with_cache(64).await;
    let key = app.key("acme").await;
    let items = (0..40).map(|i| priced(&i.to_string(), "Redmond", 1000.0 + f64::from(i)));
    send_and_merge(&app, &key, items.collect()).await;
    settled(&app).await;
    let query = format!("/graphql?query={PAGE}");
    for path in [query.as_str(), "/v1/products?page_size=40"] {
        let (_, _, _, ran) = get_gzip(&app, &key, path).await;
        let before = app.statements();
        let (encoding, vary, sized, kept) = get_gzip(&app, &key, path).await;
        assert_eq!(app.statements(), before, "{path}: a hit");
        assert_eq!(encoding.as_deref(), Some("gzip"), "{path}");
        assert!(
            sized,
            "{path}: the kept bytes as they are, not compressed again"
        );
        assert!(vary.contains("accept-encoding"), "{path}: {vary}");
        let plain = app.get_as(&key, path).await;
        assert!(plain.headers().get("content-encoding").is_none(), "{path}");
        let plain: Value = plain.json().await.unwrap();
        assert_eq!(app.statements(), before, "{path}: hits");
        if path.starts_with("/graphql") {
            assert!(cached(&kept) && cached(&plain), "{kept}");
            assert_eq!(
                ran["data"]["products"]["edges"].as_array().map(Vec::len),
                Some(40)
            );
            assert_eq!(kept["data"], ran["data"]);
            assert_eq!(plain["data"], ran["data"]);
        } else {
            assert_eq!(ran["data"].as_array().map(Vec::len), Some(40));
            assert_eq!(kept, ran);
            assert_eq!(plain, ran);
        }
    }
}

#[tokio::test]
async fn one_key_asking_many_questions_cannot_evict_anothers_answers() {
    // 1% of a megabyte: ten answers or so of one product each.
    let mut settings = cache_of(1);
    settings.http.cache_share_percent = 1;
    let app = TestApp::spawn_with_settings(settings).await;
    app.state.events.ready().await;
    let (flooder, other) = (app.key("acme").await, app.key("globex").await);
    send_and_merge(&app, &other, vec![priced("1", "Redmond", 1000.0)]).await;
    settled(&app).await;
    let page = |size: u32| format!("/v1/products?page_size={size}");
    assert!(runs(&app, &other, page(1)).await);
    for size in 2..=40 {
        assert!(runs(&app, &flooder, page(size)).await, "{size}: distinct");
    }
    assert!(
        !runs(&app, &other, page(1)).await,
        "the other key's answer is kept"
    );
    // The flooder's own oldest answers made room, within its share.
    assert!(runs(&app, &flooder, page(2)).await);
    assert!(!runs(&app, &flooder, page(40)).await);
}

/// Whether GET `path` as `key` sent a statement (was not a hit).
async fn runs(app: &TestApp, key: &str, path: String) -> bool {
    let before = app.statements();
    assert_eq!(rest_at(app, &app.url(""), key, &path).await.0, 200);
    app.statements() > before
}

#[tokio::test]
async fn with_the_cache_off_every_request_runs() {
    let app = app_with_cache(0).await;
    let key = app.key("acme").await;
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 1000.0)]).await;
    graphql(&app, &key, PRODUCTS).await;
    let before = app.statements();
    let again = graphql(&app, &key, PRODUCTS).await;
    assert!(!cached(&again), "{again}");
    assert!(app.statements() > before);
}

#[tokio::test]
async fn a_new_snapshot_shows_on_the_next_read() {
    let (app, key) = app_with_a_product().await;
    let count = |body: &Value| body["data"][0]["product_count"].clone();
    let base = app.url("");
    let (_, _, brands) = rest_at(&app, &base, &key, "/v1/brands").await;
    assert_eq!(count(&brands), 1, "{brands}");
    send_and_merge(&app, &key, vec![priced("2", "Redmond", 900.0)]).await;
    settled(&app).await;
    let rate = rest_at(&app, &base, &key, "/v1/brands").await.1;
    let before = app.statements();
    let (_, rate_after, brands) = rest_at(&app, &base, &key, "/v1/brands").await;
    assert_eq!(app.statements(), before, "today's list, kept");
    assert_eq!(
        rate_after,
        rate - 1,
        "the brands count against the rate limit, kept or not"
    );
    assert_eq!(
        count(&brands),
        1,
        "today's snapshot was made before the second product"
    );
    app.clock.advance(TimeDelta::days(1));
    let report = app.jobs().tick().await.expect("tick");
    assert!(report.snapshot_made);
    let (_, _, brands) = rest_at(&app, &base, &key, "/v1/brands").await;
    assert_eq!(count(&brands), 2, "{brands}");
}

/// The app with price history kept 30 days, and `key` of it, with one
/// product priced three times a day apart; returns its history's path.
async fn three_prices(settings: Settings) -> (TestApp, String, String) {
    let mut settings = settings;
    settings.jobs.price_history_retention_days = 30;
    let app = TestApp::spawn_with_settings(settings).await;
    app.state.events.ready().await;
    let key = app.key("acme").await;
    for price in [1000.0, 900.0, 800.0] {
        send_and_merge(&app, &key, vec![priced("1", "Redmond", price)]).await;
        app.clock.advance(TimeDelta::days(1));
    }
    let (_, _, products) = rest_at(&app, &app.url(""), &key, "/v1/products").await;
    let id = products["data"][0]["id"].as_str().unwrap().to_owned();
    (app, key, format!("/v1/products/{id}/price-history"))
}

/// Deletes the history past retention, as the jobs do: the observations deleted.
async fn purge(app: &TestApp) -> u64 {
    let jobs = app.jobs();
    let versions = app.state.events.versions();
    let purged = jobs.retention.purge(&app.db, app.clock.now(), versions);
    purged.await.expect("purge").observations
}

#[tokio::test]
async fn history_deleted_by_retention_is_gone_from_the_next_read() {
    let (app, key, path) = three_prices(cache_of(64)).await;
    let base = app.url("");
    for _ in 0..2 {
        let (_, _, history) = rest_at(&app, &base, &key, &path).await;
        assert_eq!(history["data"].as_array().unwrap().len(), 3);
    }
    app.clock.advance(TimeDelta::days(40));
    assert_eq!(purge(&app).await, 2);
    let (_, _, history) = rest_at(&app, &base, &key, &path).await;
    assert_eq!(history["data"].as_array().unwrap().len(), 1, "{history}");
}

/// On PostgreSQL, where replicas are other processes, the address of a
/// replica of `app` with a cache, once its listener is in place.
async fn listening_replica(app: &TestApp) -> Option<String> {
    if app.db.get_database_backend() != DbBackend::Postgres {
        return None;
    }
    let (addr, replica) = app.replica_with_state(app.state.settings.clone()).await;
    replica.events.ready().await;
    Some(format!("http://{addr}"))
}

/// Checks the server at `base` answers `path` from its cache: the app's
/// statements, which its replicas' share (one connection), do not move.
async fn assert_kept(app: &TestApp, base: &str, key: &str, path: &str) {
    let before = app.statements();
    rest_at(app, base, key, path).await;
    assert_eq!(
        app.statements(),
        before,
        "{path} is answered from the cache"
    );
}

/// Waits, at most a second, until `path` of the server at `base` answers with
/// a history of `len` observations.
async fn history_within_a_second(app: &TestApp, base: &str, key: &str, path: &str, len: usize) {
    eventually(
        Duration::from_secs(1),
        Duration::from_millis(20),
        || async {
            let (_, _, history) = rest_at(app, base, key, path).await;
            match history["data"].as_array().map(Vec::len) {
                Some(n) if n == len => Ok(()),
                other => Err(format!("{other:?} observations")),
            }
        },
    )
    .await;
}

#[tokio::test]
async fn another_replica_sees_a_merge_and_retention_within_a_second() {
    let (app, key, path) = three_prices(cache_of(64)).await;
    let Some(other) = listening_replica(&app).await else {
        return;
    };
    for _ in 0..2 {
        history_within_a_second(&app, &other, &key, &path, 3).await;
        graphql_at(&app, &other, &key, PRODUCTS).await;
    }
    assert_kept(&app, &other, &key, &path).await;
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 700.0)]).await;
    eventually(
        Duration::from_secs(1),
        Duration::from_millis(20),
        || async {
            match first_price(&graphql_at(&app, &other, &key, PRODUCTS).await) {
                700.0 => Ok(()),
                price => Err(format!("the replica still shows {price}")),
            }
        },
    )
    .await;
    history_within_a_second(&app, &other, &key, &path, 4).await;
    app.clock.advance(TimeDelta::days(40));
    assert_eq!(purge(&app).await, 3);
    history_within_a_second(&app, &other, &key, &path, 1).await;
}

#[tokio::test]
async fn a_replica_whose_listener_lost_its_connection_serves_nothing_it_kept_before() {
    let (app, key, path) = three_prices(cache_of(64)).await;
    let Some(other) = listening_replica(&app).await else {
        return;
    };
    history_within_a_second(&app, &other, &key, &path, 3).await;
    assert_kept(&app, &other, &key, &path).await;
    // A write announced to no one, as one made while the listener was away.
    let silent = "DELETE FROM price_observations WHERE price > 850";
    app.db.execute_unprepared(silent).await.unwrap();
    assert_kept(&app, &other, &key, &path).await;
    // Every listener of the database loses its connection: once it listens
    // again, nothing kept before is served.
    let listeners = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN%'";
    app.db.execute_unprepared(listeners).await.unwrap();
    history_within_a_second(&app, &other, &key, &path, 1).await;
}

#[tokio::test]
async fn a_merge_by_another_process_shows_within_a_second() {
    let (app, key) = app_with_a_product().await;
    graphql(&app, &key, PRODUCTS).await;
    assert!(cached(&graphql(&app, &key, PRODUCTS).await));
    send(&app, &key, vec![priced("1", "Redmond", 800.0)]).await;
    let merged = vitrina_alongside(app.db_url(), &["jobs", "run-once"]).await;
    assert!(merged.status.success(), "{}", stderr(&merged));
    eventually(
        Duration::from_secs(1),
        Duration::from_millis(20),
        || async {
            match first_price(&graphql(&app, &key, PRODUCTS).await) {
                800.0 => Ok(()),
                price => Err(format!("still {price}")),
            }
        },
    )
    .await;
}

/// A small deterministic generator (xorshift), so that a failing run can be
/// replayed from its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[tokio::test]
async fn every_answer_equals_a_server_without_a_cache_under_random_writes() {
    let app = app_with_cache(64).await;
    let keys = [
        app.key("alpha").await,
        app.key("beta").await,
        app.key("gamma").await,
    ];
    let uncached = format!("http://{}", app.replica(cache_of(0)).await);
    let cached_base = app.url("");
    let queries = [
        PRODUCTS,
        "{ productStats(currency: \"RUB\") { count priceMin priceMax priceAvg priceMedian } }",
        "{ me { scrapeSessions(first: 10) { totalCount edges { node { status stats { total merged pending } } } } } }",
        "{ products(first: 5, filter: { brand: \"Tefal\" }) { totalCount edges { node { id prices { price } } } } }",
    ];
    let paths = [
        "/v1/products?page_size=20",
        "/v1/me/scrapes",
        "/v1/brands",
        "/v1/products?brand=Redmond",
    ];
    let mut rng = Rng(0x5eed_1234_abcd_9876);
    let (mut hits, mut reads) = (0, 0);
    for step in 0..120 {
        let key = &keys[rng.below(keys.len())];
        match rng.below(10) {
            0 | 1 => {
                let id = rng.below(6).to_string();
                let brand = ["Redmond", "Tefal"][rng.below(2)];
                let price = [500.0, 750.0, 1000.0, 1250.0][rng.below(4)];
                send(&app, key, vec![priced(&id, brand, price)]).await;
            }
            2 => {
                app.jobs().tick().await.expect("merge");
            }
            3..=6 => {
                let query = queries[rng.below(queries.len())];
                let got = graphql_at(&app, &cached_base, key, query).await;
                let want = graphql_at(&app, &uncached, key, query).await;
                assert_eq!(got["data"], want["data"], "step {step}: {query}");
                hits += usize::from(cached(&got));
                reads += 1;
            }
            _ => {
                let path = paths[rng.below(paths.len())];
                let (status, _, got) = rest_at(&app, &cached_base, key, path).await;
                let (_, _, want) = rest_at(&app, &uncached, key, path).await;
                assert_eq!((status, &got), (200, &want), "step {step}: {path}");
                reads += 1;
            }
        }
    }
    assert!(
        hits > 0 && hits < reads,
        "{hits} of {reads} reads were hits"
    );
}
