//! Redelivery: a finished delivery sent again as a new delivery (same body,
//! new id, a link to the one it repeats) through the ordinary delivery job;
//! refused for a delivery still pending, a disabled subscription, and
//! anything not the caller's; the CLI.

use entity::DeliveryStatus;
use serde_json::Value;
use uuid::Uuid;
use vitrina::config::WebhookConfig;
use vitrina::webhooks::enqueue_session_completed;

use super::rotation::{assert_signed_with, subscribe_and_rotate};
use super::{Hooks, STATS, WEBHOOKS, call, dev_config, disable, verify};
use crate::helpers::cli::{assert_clean_failure, stdout, vitrina_alongside};
use crate::helpers::migrate_down_through;
use crate::helpers::receiver::Reply;

async fn redeliver(h: &Hooks, key: &str, id: Uuid, delivery: Uuid) -> (u16, Value) {
    let path = format!("{WEBHOOKS}/{id}/deliveries/{delivery}/redeliver");
    call(&h.app, key, reqwest::Method::POST, &path).await
}

async fn listed(h: &Hooks, id: Uuid) -> Vec<Value> {
    let path = format!("{WEBHOOKS}/{id}/deliveries");
    let (status, body) = call(&h.app, &h.key, reqwest::Method::GET, &path).await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().expect("a list").clone()
}

/// Subscribes, completes a session and delivers it (the receiver answering
/// `reply`): (subscription, secret, the finished delivery's id).
async fn finished_delivery(h: &mut Hooks, reply: Reply) -> (Uuid, String, Uuid) {
    let (id, secret) = h.subscribe().await;
    h.complete_session().await;
    h.receiver.script([reply]);
    h.deliver().await;
    let delivery = h.only_delivery().await;
    assert_ne!(delivery.status, DeliveryStatus::Pending, "{delivery:?}");
    (id, secret, delivery.id)
}

#[tokio::test]
async fn a_finished_delivery_is_sent_again_as_a_new_delivery_linked_to_the_original() {
    let mut h = Hooks::start().await;
    let (id, secret, original) = finished_delivery(&mut h, Reply::Status(200)).await;
    let first = h.receiver.take_one();

    h.advance(chrono::TimeDelta::minutes(1));
    let (status, body) = redeliver(&h, &h.key, id, original).await;
    assert_eq!(status, 202, "{body}");
    let queued = &body["data"];
    let new_id = queued["id"].as_str().expect("an id").to_owned();
    assert_ne!(new_id, original.to_string());
    assert_eq!(queued["redelivery_of"], original.to_string(), "{body}");
    assert_eq!(queued["status"], "pending", "{body}");
    assert_eq!(queued["event"], "scrape_session.completed");
    assert_eq!(queued["attempt_count"], 0);
    assert_eq!(queued["attempts"], Value::Array(vec![]));

    let report = h.deliver().await;
    assert_eq!((report.attempted, report.succeeded), (1, 1), "{report:?}");
    let again = h.receiver.take_one();
    assert_eq!(again.body, first.body, "the same event body, byte for byte");
    assert_eq!(again.header("x-vitrina-delivery"), new_id);
    assert_eq!(again.header("x-vitrina-event"), "scrape_session.completed");
    verify(&secret, again.header("x-vitrina-signature"), &again.body);

    let log = listed(&h, id).await;
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0]["id"], new_id.as_str(), "newest first");
    assert_eq!(log[0]["redelivery_of"], original.to_string());
    assert_eq!(log[0]["status"], "succeeded");
    assert_eq!(log[0]["attempts"][0]["status_code"], 200);
    assert_eq!(log[1]["id"], original.to_string());
    assert_eq!(log[1]["redelivery_of"], Value::Null);

    // The event itself is still enqueued only once per subscription.
    let session = h.deliveries().await[0].session_id;
    let written = enqueue_session_completed(
        &h.app.db,
        h.account_id,
        session,
        &STATS,
        &h.app.url(""),
        h.now(),
    )
    .await
    .unwrap();
    assert_eq!(written, 0);
}

#[tokio::test]
async fn a_failed_delivery_can_be_redelivered_more_than_once_and_each_retries_like_any_other() {
    let mut h = Hooks::start().await;
    let (id, _, original) = finished_delivery(&mut h, Reply::Status(400)).await;
    h.receiver.take_one();

    let (status, a) = redeliver(&h, &h.key, id, original).await;
    assert_eq!(status, 202, "{a}");
    let (status, b) = redeliver(&h, &h.key, id, original).await;
    assert_eq!(status, 202, "{b}");
    assert_ne!(a["data"]["id"], b["data"]["id"]);

    // Both go out in one run; a 500 puts one on the retry schedule.
    h.receiver.script([Reply::Status(500)]);
    let report = h.deliver().await;
    assert_eq!(
        (report.attempted, report.succeeded, report.rescheduled),
        (2, 1, 1),
        "{report:?}"
    );
    let sent = h.receiver.take();
    assert_eq!(sent.len(), 2);
    assert_ne!(
        sent[0].header("x-vitrina-delivery"),
        sent[1].header("x-vitrina-delivery")
    );
    let retrying = h
        .deliveries()
        .await
        .into_iter()
        .find(|d| d.status == DeliveryStatus::Pending)
        .expect("one redelivery is waiting for its retry");
    assert_eq!(retrying.redelivery_of, Some(original));
    assert_eq!(retrying.attempts, 1);
    assert_eq!(retrying.next_attempt_at, Some(h.now() + super::SCHEDULE[0]));

    // Still pending: it cannot be redelivered until it is finished.
    let (status, body) = redeliver(&h, &h.key, id, retrying.id).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "delivery_not_finished", "{body}");
}

#[tokio::test]
async fn redeliveries_waiting_to_be_sent_are_capped_even_when_asked_at_once() {
    let config = WebhookConfig {
        redelivery: vitrina::config::WebhookRedelivery {
            webhook_max_pending_redeliveries: 3,
        },
        ..dev_config()
    };
    let mut h = Hooks::start_with(config).await;
    let (id, _, original) = finished_delivery(&mut h, Reply::Status(200)).await;

    let asked = (0..10).map(|_| redeliver(&h, &h.key, id, original));
    let answers = futures_util::future::join_all(asked).await;
    let accepted = answers.iter().filter(|(status, _)| *status == 202).count();
    assert_eq!(accepted, 3, "{answers:?}");
    for (status, body) in answers.iter().filter(|(status, _)| *status != 202) {
        assert_eq!(*status, 409, "{body}");
        assert_eq!(body["error"]["code"], "redelivery_limit", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("already has 3 redeliveries"), "{message}");
    }
    assert_eq!(h.deliveries().await.len(), 1 + 3);

    // Once they are sent there is room again.
    h.deliver().await;
    let (status, body) = redeliver(&h, &h.key, id, original).await;
    assert_eq!(status, 202, "{body}");
}

#[tokio::test]
async fn a_redelivery_is_signed_with_the_secrets_in_force_when_it_is_sent() {
    let mut h = Hooks::start().await;
    let (id, old, new) = subscribe_and_rotate(&h).await;
    h.complete_session().await;
    h.deliver().await;
    h.receiver.take_one();
    let original = h.only_delivery().await.id;

    let (status, body) = redeliver(&h, &h.key, id, original).await;
    assert_eq!(status, 202, "{body}");
    h.deliver().await;
    assert_signed_with(&h.receiver.take_one(), &[&new, &old]);
}

#[tokio::test]
async fn a_delivery_still_pending_cannot_be_redelivered() {
    let mut h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    h.complete_session().await;
    let pending = h.only_delivery().await;

    let (status, body) = redeliver(&h, &h.key, id, pending.id).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "delivery_not_finished", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("still pending"), "{message}");
    assert_eq!(h.deliveries().await.len(), 1, "nothing queued");
    h.deliver().await;
    assert_eq!(h.receiver.take().len(), 1, "sent once, not twice");
}

#[tokio::test]
async fn a_disabled_subscription_takes_no_redelivery() {
    let mut h = Hooks::start().await;
    let (id, _, original) = finished_delivery(&mut h, Reply::Status(200)).await;
    let (status, _) = disable(&h.app, &h.key, id).await;
    assert_eq!(status, 200);

    let (status, body) = redeliver(&h, &h.key, id, original).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "subscription_disabled", "{body}");
    assert_eq!(h.deliveries().await.len(), 1, "nothing queued");
}

#[tokio::test]
async fn unknown_or_foreign_deliveries_are_not_found() {
    let mut h = Hooks::start().await;
    let (id, _, original) = finished_delivery(&mut h, Reply::Status(200)).await;
    // A second subscription of the same account: the delivery is not its.
    let (other_subscription, _) = h.subscribe().await;
    let stranger = h.app.key("globex").await;

    for (key, subscription, delivery) in [
        (&h.key, id, Uuid::new_v4()),
        (&h.key, Uuid::new_v4(), original),
        (&h.key, other_subscription, original),
        (&stranger, id, original),
    ] {
        let (status, body) = redeliver(&h, key, subscription, delivery).await;
        assert_eq!(status, 404, "{subscription} {delivery}: {body}");
        assert_eq!(body["error"]["code"], "not_found", "{body}");
    }
    let path = format!("{WEBHOOKS}/{id}/deliveries/not-a-uuid/redeliver");
    let (status, body) = call(&h.app, &h.key, reqwest::Method::POST, &path).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_parameter", "{body}");

    assert_eq!(h.deliveries().await.len(), 1, "nothing queued");
}

#[tokio::test]
async fn cli_redelivers_a_finished_delivery() {
    let mut h = Hooks::start().await;
    let (id, secret, original) = finished_delivery(&mut h, Reply::Status(200)).await;
    let first = h.receiver.take_one();

    let out = vitrina_alongside(
        h.app.db_url(),
        &[
            "webhooks",
            "redeliver",
            &id.to_string(),
            &original.to_string(),
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    let queued = h
        .deliveries()
        .await
        .into_iter()
        .find(|d| d.redelivery_of == Some(original))
        .expect("a redelivery");
    assert!(printed.contains(&queued.id.to_string()), "{printed}");

    // The CLI runs on the wall clock: move the test clock to when it is due.
    let due = queued.next_attempt_at.expect("due");
    if due > h.now() {
        h.advance(due - h.now());
    }
    h.deliver().await;
    let again = h.receiver.take_one();
    assert_eq!(again.body, first.body);
    assert_eq!(again.header("x-vitrina-delivery"), queued.id.to_string());
    verify(&secret, again.header("x-vitrina-signature"), &again.body);

    h.complete_session().await;
    let pending = h
        .deliveries()
        .await
        .into_iter()
        .find(|d| d.status == DeliveryStatus::Pending)
        .expect("a pending delivery");
    let (id, pending, unknown) = (
        id.to_string(),
        pending.id.to_string(),
        Uuid::new_v4().to_string(),
    );
    for (delivery, expected) in [
        (pending.as_str(), "still pending"),
        (unknown.as_str(), "no such delivery"),
    ] {
        let out =
            vitrina_alongside(h.app.db_url(), &["webhooks", "redeliver", &id, delivery]).await;
        assert_clean_failure(&out, expected);
    }
}

#[tokio::test]
async fn rolling_the_migration_back_drops_redeliveries_and_keeps_the_rest() {
    use sea_orm::{ConnectionTrait, Statement};

    let mut h = Hooks::start().await;
    let (id, _, original) = finished_delivery(&mut h, Reply::Status(200)).await;
    let (status, body) = redeliver(&h, &h.key, id, original).await;
    assert_eq!(status, 202, "{body}");
    h.deliver().await;
    migrate_down_through(&h.app.db, "m20261127_000014_webhook_redelivery").await;
    let backend = h.app.db.get_database_backend();
    let ids = h
        .app
        .db
        .query_all_raw(Statement::from_string(
            backend,
            "SELECT id FROM webhook_deliveries",
        ))
        .await
        .unwrap();
    assert_eq!(ids.len(), 1, "only the original is left");
    vitrina::db::migrate(&h.app.db).await.expect("up again");
    let left = h.only_delivery().await;
    assert_eq!((left.id, left.redelivery_of), (original, None));
}
