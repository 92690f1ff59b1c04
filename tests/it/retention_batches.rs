//! Retention deletes in bounded batches, each its own statement: old
//! submissions, finished webhook deliveries, and (when its period is set)
//! price history, keeping the last observation of each price variant before
//! the cutoff.

use chrono::{DateTime, TimeDelta, Utc};
use entity::{DeliveryStatus, SubscriptionStatus, submission, webhook_delivery};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait, PaginatorTrait};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::config::Settings;
use vitrina::jobs::retention::Purged;
use vitrina::jobs::scheduler::Jobs;

use crate::fixtures::{insert_session, insert_subscription};
use crate::helpers::uploads::{item, send, with};
use crate::helpers::{TestApp, iso};

/// The app with retention deleting `batch` rows a statement, at most
/// `per_tick` statements a pass, and price history kept `history_days`
/// (0: forever).
async fn app_with(batch: u64, per_tick: u64, history_days: u64) -> TestApp {
    let mut settings = Settings::default();
    settings.jobs.retention_batch = batch;
    settings.jobs.retention_batches_per_tick = per_tick;
    settings.jobs.price_history_retention_days = history_days;
    TestApp::spawn_with_settings(settings).await
}

/// The delete statements run since the first `from` of them on `table`.
fn deletes(app: &TestApp, from: usize, table: &str) -> Vec<String> {
    let start = format!("DELETE FROM \"{table}\"");
    app.statements_with_values(from)
        .into_iter()
        .filter(|s| s.starts_with(&start))
        .collect()
}

async fn submissions_left(app: &TestApp) -> u64 {
    submission::Entity::find().count(&app.db).await.unwrap()
}

/// One retention pass of `jobs` at the app's clock.
async fn purge_now(app: &TestApp, jobs: &Jobs) -> Purged {
    jobs.retention
        .purge(&app.db, app.clock.now(), app.state.events.versions())
        .await
        .unwrap()
}

#[tokio::test]
async fn old_submissions_go_in_several_bounded_deletes_and_younger_ones_stay() {
    let app = app_with(10, 20, 0).await;
    let key = app.key("acme").await;
    let items = |n: usize| (0..n).map(|i| item(&i.to_string())).collect::<Vec<_>>();
    send(&app, &key, items(25)).await;
    app.clock.advance(TimeDelta::days(10));
    send(&app, &key, items(3)).await;
    app.clock.advance(TimeDelta::days(81));

    let from = app.statements();
    let purged = purge_now(&app, &app.jobs()).await;
    assert_eq!(purged.submissions, 25);
    assert!(!purged.unfinished);
    let statements = deletes(&app, from, "submissions");
    assert_eq!(statements.len(), 3, "10, 10 and 5 rows: {statements:#?}");
    assert!(
        statements.iter().all(|s| s.contains("LIMIT 10")),
        "{statements:#?}"
    );
    assert_eq!(submissions_left(&app).await, 3, "the younger upload stays");
}

#[tokio::test]
async fn a_pass_stops_at_its_batches_and_the_next_pass_goes_on() {
    let app = app_with(10, 2, 0).await;
    let key = app.key("acme").await;
    send(&app, &key, (0..25).map(|i| item(&i.to_string())).collect()).await;
    app.clock.advance(TimeDelta::days(91));
    let jobs = app.jobs();

    let first = purge_now(&app, &jobs).await;
    assert_eq!(
        (first.submissions, first.batches),
        (20, 3),
        "two batches for submissions, one for deliveries (none due)"
    );
    assert!(first.unfinished, "more was due than two batches hold");
    assert_eq!(submissions_left(&app).await, 5);
    let tick = jobs.tick().await.unwrap();
    assert_eq!(tick.purged.submissions, 5);
    assert_eq!(submissions_left(&app).await, 0);
}

/// A subscription of the account owning `key`, and a delivery of it for a
/// session of its own, finished at `finished_at` (None: still being sent).
async fn delivery(app: &TestApp, key: &str, finished_at: Option<DateTime<Utc>>) -> Uuid {
    let session = insert_session(&app.db, key, app.clock.now()).await;
    let target = "https://hooks.example/vitrina";
    let active = SubscriptionStatus::Active;
    let subscription =
        insert_subscription(&app.db, session.account_id, target, active, app.clock.now()).await;
    let status = match finished_at {
        Some(_) => DeliveryStatus::Succeeded,
        None => DeliveryStatus::Pending,
    };
    webhook_delivery::ActiveModel {
        id: Set(Uuid::new_v4()),
        subscription_id: Set(subscription),
        session_id: Set(session.id),
        event: Set("scrape_session.completed".into()),
        payload: Set("{}".into()),
        status: Set(status),
        attempts: Set(1),
        next_attempt_at: Set(None),
        locked_until: Set(None),
        in_flight: Set(false),
        created_at: Set(app.clock.now()),
        finished_at: Set(finished_at),
        redelivery_of: Set(None),
    }
    .insert(&app.db)
    .await
    .unwrap()
    .id
}

#[tokio::test]
async fn finished_deliveries_go_in_several_bounded_deletes_and_the_rest_stay() {
    let app = app_with(5, 20, 0).await;
    let key = app.key("acme").await;
    let long_ago = app.clock.now();
    for _ in 0..12 {
        delivery(&app, &key, Some(long_ago)).await;
    }
    let unfinished = delivery(&app, &key, None).await;
    app.clock.advance(TimeDelta::days(80));
    let recent = delivery(&app, &key, Some(app.clock.now())).await;
    app.clock.advance(TimeDelta::days(11));

    let from = app.statements();
    let purged = purge_now(&app, &app.jobs()).await;
    assert_eq!(purged.deliveries, 12);
    assert_eq!(
        deletes(&app, from, "webhook_deliveries").len(),
        3,
        "5, 5 and 2 rows"
    );
    let mut kept: Vec<Uuid> = webhook_delivery::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    kept.sort();
    let mut expected = vec![unfinished, recent];
    expected.sort();
    assert_eq!(kept, expected);
}

/// An item of product `external_id` observed `days_ago` days before the
/// test's start, with one price per (country, region, auth status, price).
fn observed(external_id: &str, days_ago: i64, prices: &[(&str, Option<&str>, &str, f64)]) -> Value {
    let at = crate::helpers::test_start() - TimeDelta::days(days_ago);
    let prices: Vec<Value> = prices
        .iter()
        .map(|(country, region, auth, price)| {
            json!({ "country_code": country, "region_code": region, "user_auth_status": auth,
                    "price": price, "old_price": price, "currency": "RUB" })
        })
        .collect();
    let item = with(item(external_id), &["observed_at"], json!(iso(at)));
    with(item, &["prices"], json!(prices))
}

/// The price history of product `external_id` on ozon, as
/// (days before the test's start, country, region), newest first.
async fn history(app: &TestApp, key: &str, external_id: &str) -> Vec<(i64, String, Value)> {
    let found = app
        .json_as(
            key,
            &format!("/v1/products?marketplace=ozon&external_id={external_id}"),
        )
        .await;
    let id = found["data"][0]["id"].as_str().unwrap().to_owned();
    let page = app
        .json_as(key, &format!("/v1/products/{id}/price-history"))
        .await;
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let at: DateTime<Utc> = o["recorded_at"].as_str().unwrap().parse().unwrap();
            (
                (crate::helpers::test_start() - at).num_days(),
                o["country_code"].as_str().unwrap().to_owned(),
                o["region_code"].clone(),
            )
        })
        .collect()
}

/// Uploads product `a`: variant (ru, no region) at 100, 60, 40 and 10 days
/// ago; (ru, msk) at 50; (kz, no region, authenticated) at 90 and 80.
/// Product `q`: (ru, no region) at 70 and 5 days ago.
async fn upload_history(app: &TestApp, key: &str) {
    let ru = |price| ("ru", None, "anonymous", price);
    let items = vec![
        observed("a", 100, &[ru(1000.0)]),
        observed("a", 90, &[("kz", None, "authenticated", 900.0)]),
        observed("a", 80, &[("kz", None, "authenticated", 910.0)]),
        observed("a", 60, &[ru(1010.0)]),
        observed("a", 50, &[("ru", Some("msk"), "anonymous", 1100.0)]),
        observed("a", 40, &[ru(1020.0)]),
        observed("a", 10, &[ru(1030.0)]),
        observed("q", 70, &[ru(500.0)]),
        observed("q", 5, &[ru(510.0)]),
    ];
    send(app, key, items).await;
}

fn days(rows: &[(i64, String, Value)]) -> Vec<(i64, &str)> {
    rows.iter().map(|(d, c, _)| (*d, c.as_str())).collect()
}

#[tokio::test]
async fn price_history_keeps_its_period_and_the_last_price_of_each_variant_before_it() {
    let app = app_with(2, 100, 30).await;
    let key = app.key("acme").await;
    upload_history(&app, &key).await;
    let jobs = app.jobs();

    let tick = jobs.tick().await.unwrap();
    assert_eq!(tick.merge.merged + tick.merge.flagged, 9);
    let purged = tick.purged;
    assert_eq!(purged.observations, 3, "a: 100 and 60 days ago; kz: 90");
    assert_eq!(
        purged.batches, 6,
        "one for submissions, one for deliveries, and the 7 observations \
         before the cutoff walked 2 at a time"
    );
    assert_eq!(
        days(&history(&app, &key, "a").await),
        vec![(10, "ru"), (40, "ru"), (50, "ru"), (80, "kz")],
        "each variant keeps its last price before the cutoff, msk apart from no region"
    );
    assert_eq!(
        days(&history(&app, &key, "q").await),
        vec![(5, "ru"), (70, "ru")]
    );

    // 35 days on, the cutoff is 5 days after the start: the walk goes on
    // from where it stopped and visits only the two observations that aged
    // out since, which supersede what the first pass kept.
    app.clock.advance(TimeDelta::days(35));
    let purged = purge_now(&app, &jobs).await;
    assert_eq!(purged.observations, 2, "a: 40 days ago; q: 70");
    assert_eq!(
        purged.batches, 4,
        "one for submissions, one for deliveries, and the walk: two \
         observations, then the cutoff"
    );
    assert_eq!(
        days(&history(&app, &key, "a").await),
        vec![(10, "ru"), (50, "ru"), (80, "kz")]
    );
    assert_eq!(days(&history(&app, &key, "q").await), vec![(5, "ru")]);
    let product = app
        .json_as(&key, "/v1/products?marketplace=ozon&external_id=a")
        .await;
    assert_eq!(
        product["data"][0]["prices"].as_array().unwrap().len(),
        3,
        "current prices are not history: all three variants keep theirs"
    );
}

#[tokio::test]
async fn price_history_is_kept_whole_by_default() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    upload_history(&app, &key).await;
    app.jobs().tick().await.unwrap();
    app.clock.advance(TimeDelta::days(3650));
    let purged = purge_now(&app, &app.jobs()).await;
    assert_eq!((purged.observations, purged.submissions), (0, 9));
    assert_eq!(history(&app, &key, "a").await.len(), 7);
}

#[tokio::test]
async fn a_backlog_of_submissions_leaves_deliveries_and_history_their_own_batches() {
    let app = app_with(2, 2, 30).await;
    let key = app.key("acme").await;
    for _ in 0..3 {
        delivery(&app, &key, Some(app.clock.now())).await;
    }
    upload_history(&app, &key).await;
    let jobs = app.jobs();
    jobs.tick().await.unwrap();
    app.clock.advance(TimeDelta::days(91));

    let purged = purge_now(&app, &jobs).await;
    assert_eq!(
        (purged.submissions, purged.deliveries, purged.batches),
        (4, 3, 6),
        "two batches of two each for submissions, deliveries and history: {purged:?}"
    );
    assert!(purged.observations > 0, "{purged:?}");
    assert!(purged.unfinished, "five submissions wait for the next pass");
    assert_eq!(submissions_left(&app).await, 5);
}

/// Observations recorded at one instant (four variants scraped together),
/// walked two at a time: every batch must see its rows, however many
/// share its bounds' date. (SQLite keeps times as text: bounds written into
/// the statement in another text form once compared wrongly there, and a
/// pass left half of this history behind.)
#[tokio::test]
async fn observations_of_one_instant_are_walked_whole() {
    let app = app_with(2, 100, 30).await;
    let key = app.key("acme").await;
    let variants = |price: f64| {
        [
            ("ru", None, "anonymous", price),
            ("ru", Some("msk"), "anonymous", price + 1.0),
            ("ru", None, "authenticated", price + 2.0),
            ("kz", None, "anonymous", price + 3.0),
        ]
    };
    let items = vec![
        observed("p", 100, &variants(100.0)),
        observed("p", 90, &variants(200.0)),
    ];
    send(&app, &key, items).await;
    let tick = app.jobs().tick().await.unwrap();
    assert_eq!(tick.purged.observations, 4, "{:?}", tick.purged);
    let kept: Vec<i64> = history(&app, &key, "p")
        .await
        .iter()
        .map(|(d, _, _)| *d)
        .collect();
    assert_eq!(
        kept, [90; 4],
        "each variant keeps its last price before the cutoff"
    );
}
