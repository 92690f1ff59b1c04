//! The outbox: enqueueing with the session's transaction, disabled
//! subscriptions, consecutive failures, the attempt log, and concurrent
//! workers sending each delivery once.

use chrono::{DateTime, TimeDelta, Utc};
use entity::{DeliveryStatus, SubscriptionStatus, webhook_delivery};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter,
};
use serde_json::{Value, json};
use vitrina::webhooks::{deliver_due, enqueue_session_completed};

use super::{Hooks, SCHEDULE, STATS, WEBHOOKS, disable};
use crate::fixtures::insert_session;
use crate::helpers::receiver::Reply;

#[tokio::test]
async fn consecutive_failures_disable_the_subscription() {
    let mut h = Hooks::disabling_after(3).await;
    let (id, _) = h.subscribe().await;
    h.complete_session().await;
    h.receiver
        .script(std::iter::repeat_n(Reply::Status(500), 10));
    h.deliver().await;
    h.advance(SCHEDULE[0]);
    h.deliver().await;
    assert_eq!(h.subscription(id).await.consecutive_failures, 2);
    // Another delivery, waiting for a later retry when the subscription goes.
    let later = h.complete_session().await;
    let mut waiting = webhook_delivery::Entity::find()
        .filter(webhook_delivery::Column::SessionId.eq(later))
        .one(&h.app.db)
        .await
        .unwrap()
        .unwrap()
        .into_active_model();
    waiting.next_attempt_at = Set(Some(h.now() + TimeDelta::hours(1)));
    waiting.update(&h.app.db).await.unwrap();

    h.advance(SCHEDULE[1]);
    assert_eq!(h.deliver().await.failed, 1, "the third failure is final");

    let subscription = h.subscription(id).await;
    assert_eq!(subscription.status, SubscriptionStatus::Disabled);
    assert_eq!(subscription.disabled_at, Some(h.now()));
    let attempts: Vec<(i32, DeliveryStatus)> = h
        .deliveries()
        .await
        .iter()
        .map(|d| (d.attempts, d.status))
        .collect();
    assert_eq!(
        attempts,
        [(3, DeliveryStatus::Failed), (0, DeliveryStatus::Failed)]
    );
    assert_eq!(h.receiver.take().len(), 3);

    h.advance(TimeDelta::days(2));
    h.deliver().await;
    assert!(h.receiver.take().is_empty());
}

#[tokio::test]
async fn a_disabled_subscription_is_not_delivered_to() {
    let mut h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    h.complete_session().await;

    let (status, body) = disable(&h.app, &h.key, id).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(h.deliver().await.attempted, 0);
    assert_eq!(h.only_delivery().await.status, DeliveryStatus::Failed);
    assert!(h.receiver.take().is_empty());

    let later = h.complete_session().await;
    let pending = webhook_delivery::Entity::find()
        .filter(webhook_delivery::Column::SessionId.eq(later))
        .all(&h.app.db)
        .await
        .unwrap();
    assert!(pending.is_empty(), "nothing is enqueued for it");
}

#[tokio::test]
async fn a_subscription_disabled_behind_a_pending_delivery_is_not_sent() {
    let mut h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    h.complete_session().await;
    // Disabled without going through `disable`, as a racing writer might.
    let mut row = h.subscription(id).await.into_active_model();
    row.status = Set(SubscriptionStatus::Disabled);
    row.update(&h.app.db).await.unwrap();

    assert_eq!(h.deliver().await.failed, 1);
    assert_eq!(h.only_delivery().await.status, DeliveryStatus::Failed);
    assert!(h.receiver.take().is_empty());
}

#[tokio::test]
async fn every_attempt_is_listed_under_deliveries() {
    let h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    let session = h.complete_session().await;
    h.receiver
        .script([Reply::Status(500), Reply::Status(429), Reply::Status(200)]);
    let started = h.now();
    h.deliver().await;
    h.advance(SCHEDULE[0]);
    h.deliver().await;
    h.advance(SCHEDULE[1]);
    h.deliver().await;

    let body = h
        .app
        .json_as(&h.key, &format!("{WEBHOOKS}/{id}/deliveries"))
        .await;
    let deliveries = body["data"].as_array().unwrap();
    assert_eq!(deliveries.len(), 1, "{body}");
    let delivery = &deliveries[0];
    assert_eq!(delivery["scrape_session_id"], json!(session));
    assert_eq!(delivery["event"], "scrape_session.completed");
    assert_eq!(delivery["status"], "succeeded");
    assert_eq!(delivery["attempt_count"], 3);
    let attempts = delivery["attempts"].as_array().unwrap();
    let codes: Vec<&Value> = attempts.iter().map(|a| &a["status_code"]).collect();
    assert_eq!(codes, [&json!(500), &json!(429), &json!(200)]);
    let times: Vec<&Value> = attempts.iter().map(|a| &a["attempted_at"]).collect();
    let at = |t: DateTime<Utc>| json!(t);
    assert_eq!(
        times,
        [
            &at(started),
            &at(started + SCHEDULE[0]),
            &at(started + SCHEDULE[0] + SCHEDULE[1])
        ]
    );
    assert!(attempts.iter().all(|a| a["duration_ms"].is_i64()));
}

#[tokio::test]
async fn deliveries_are_listed_newest_first() {
    let h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    let first = h.complete_session().await;
    h.advance(TimeDelta::minutes(1));
    let second = h.complete_session().await;

    let body = h
        .app
        .json_as(&h.key, &format!("{WEBHOOKS}/{id}/deliveries"))
        .await;
    let sessions: Vec<&Value> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["scrape_session_id"])
        .collect();
    assert_eq!(sessions, [&json!(second), &json!(first)]);
}

#[tokio::test]
async fn enqueueing_twice_writes_one_delivery_per_subscription() {
    let h = Hooks::start().await;
    h.subscribe().await;
    h.subscribe().await;
    let session = insert_session(&h.app.db, &h.key, h.now()).await;
    let enqueue = || {
        enqueue_session_completed(
            &h.app.db,
            h.account_id,
            session.id,
            &STATS,
            "http://vitrina.test",
            h.now(),
        )
    };
    assert_eq!(enqueue().await.unwrap(), 2);
    assert_eq!(enqueue().await.unwrap(), 0);
    assert_eq!(h.deliveries().await.len(), 2);
}

#[tokio::test]
async fn enqueueing_joins_the_callers_transaction() {
    use sea_orm::TransactionTrait;
    let h = Hooks::start().await;
    h.subscribe().await;
    let session = insert_session(&h.app.db, &h.key, h.now()).await;
    let tx = h.app.db.begin().await.unwrap();
    let written = enqueue_session_completed(
        &tx,
        h.account_id,
        session.id,
        &STATS,
        "http://vitrina.test",
        h.now(),
    )
    .await
    .unwrap();
    assert_eq!(written, 1);
    tx.rollback().await.unwrap();
    assert!(
        h.deliveries().await.is_empty(),
        "rolled back with the caller"
    );
}

#[tokio::test]
async fn concurrent_workers_send_each_delivery_once() {
    let mut h = Hooks::start().await;
    for _ in 0..5 {
        h.subscribe().await;
    }
    h.complete_session().await;
    h.complete_session().await;

    let (a, b) = tokio::join!(
        deliver_due(&h.app.db, &h.app.clock, &h.sender),
        deliver_due(&h.app.db, &h.app.clock, &h.sender),
    );
    assert_eq!(a.unwrap().attempted + b.unwrap().attempted, 10);
    let mut ids: Vec<String> = h
        .receiver
        .take()
        .iter()
        .map(|r| r.header("x-vitrina-delivery").to_owned())
        .collect();
    assert_eq!(ids.len(), 10);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 10, "no delivery was sent twice");
}
