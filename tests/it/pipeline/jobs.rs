//! The jobs after the merge: a completed session written once to the webhook
//! outbox per active subscription, daily snapshots, and retention, which
//! fires nothing.

use chrono::TimeDelta;
use entity::{SubscriptionStatus, webhook_delivery};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::jobs::merge;

use super::{merge_all, settings};
use crate::fixtures::insert_subscription;
use crate::helpers::TestApp;
use crate::helpers::uploads::{item, send, with};
async fn subscribe(app: &TestApp, key: &str, active: bool) -> Uuid {
    let caller = vitrina::accounts::authenticate(&app.db, key, app.clock.now())
        .await
        .unwrap()
        .unwrap();
    let status = if active {
        SubscriptionStatus::Active
    } else {
        SubscriptionStatus::Disabled
    };
    let target = "https://hooks.example/vitrina";
    insert_subscription(&app.db, caller.account_id, target, status, app.clock.now()).await
}

#[tokio::test]
async fn completion_writes_one_delivery_per_active_subscription_once() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let (first, second) = (
        subscribe(&app, &key, true).await,
        subscribe(&app, &key, true).await,
    );
    subscribe(&app, &key, false).await;
    let other = app.key("other").await;
    subscribe(&app, &other, true).await;

    let session = send(
        &app,
        &key,
        vec![item("1"), with(item("2"), &["name"], json!(""))],
    )
    .await;
    let claimed = merge::claim(&app.db, app.clock.now(), &settings(1))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    app.clock.advance(TimeDelta::minutes(6));
    let report = merge_all(&app).await;
    assert_eq!(report.completed_sessions, 1);
    assert_eq!(
        merge_all(&app).await.completed_sessions,
        0,
        "a session completes once"
    );

    let deliveries = webhook_delivery::Entity::find().all(&app.db).await.unwrap();
    let mut targets: Vec<Uuid> = deliveries.iter().map(|d| d.subscription_id).collect();
    targets.sort();
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(targets, expected, "active subscriptions of the owner only");
    let caller = vitrina::accounts::authenticate(&app.db, &key, app.clock.now())
        .await
        .unwrap()
        .unwrap();
    let payload: Value = serde_json::from_str(&deliveries[0].payload).unwrap();
    assert_eq!(
        payload,
        json!({
            "event": "scrape_session.completed",
            "user_id": caller.account_id,
            "scrape_session_id": session,
            "status": "completed",
            "stats": { "total": 2, "pending": 0, "processing": 0, "merged": 1, "rejected": 1, "flagged": 0 },
            "url": format!("{}/v1/me/scrapes/{session}/products", app.state.public_url),
        })
    );
    assert_eq!(
        deliveries[0].payload, deliveries[1].payload,
        "the same bytes for every subscription"
    );
}

#[tokio::test]
async fn snapshots_are_made_once_a_day_and_lag_same_day_scrapes() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send(
        &app,
        &key,
        vec![item("1"), with(item("2"), &["category_path"], json!([]))],
    )
    .await;
    assert!(
        app.jobs().tick().await.unwrap().snapshot_made,
        "the first tick of a day makes its snapshot"
    );
    let categories = app.json_as(&key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        categories["data"],
        json!([
            { "category_path": [], "product_count": 1 },
            { "category_path": ["Бытовая техника", "Чайники"], "product_count": 1 },
        ]),
        "the empty path is an entry of its own"
    );
    let ozon = with(item("3"), &["seller", "id"], json!("s-2"));
    send(
        &app,
        &key,
        vec![with(
            with(ozon, &["marketplace"], json!("wildberries")),
            &["brand"],
            json!("REDMOND"),
        )],
    )
    .await;
    assert!(
        !app.jobs().tick().await.unwrap().snapshot_made,
        "once a day"
    );
    assert_eq!(
        app.json_as(&key, "/v1/brands").await["data"],
        json!([{ "brand": "Redmond", "product_count": 2 }]),
        "same-day scrapes wait"
    );

    app.clock.advance(TimeDelta::days(1));
    assert!(app.jobs().tick().await.unwrap().snapshot_made);
    assert_eq!(
        app.json_as(&key, "/v1/brands").await["data"],
        json!([{ "brand": "REDMOND", "product_count": 3 }]),
        "one brand across marketplaces"
    );
    assert_eq!(
        app.json_as(&key, "/v1/brands?marketplace=wildberries")
            .await["data"],
        json!([{ "brand": "REDMOND", "product_count": 1 }])
    );
}

#[tokio::test]
async fn retention_deletes_old_submissions_and_fires_nothing() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    subscribe(&app, &key, true).await;
    let session = send(&app, &key, vec![item("1")]).await;
    // Held by a dead worker until retention runs.
    merge::claim(&app.db, app.clock.now(), &settings(1))
        .await
        .unwrap();
    app.clock.advance(TimeDelta::days(91));
    let purged = app
        .jobs()
        .retention
        .purge(&app.db, app.clock.now(), app.state.events.versions())
        .await
        .unwrap();
    assert_eq!(purged.submissions, 1);
    app.jobs().tick().await.unwrap();
    let view = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}"))
        .await;
    assert_eq!(
        (
            view["data"]["status"].as_str(),
            view["data"]["stats"]["total"].as_i64()
        ),
        (Some("processing"), Some(0))
    );
    assert_eq!(
        webhook_delivery::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0
    );
}
