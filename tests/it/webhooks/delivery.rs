//! What one delivery sends (the stored body, signed afresh each attempt)
//! and what each kind of answer does to it: success, permanent failure, or
//! a retry on the schedule.

use std::time::{Duration, SystemTime};

use chrono::TimeDelta;
use entity::DeliveryStatus;
use serde_json::{Value, json};
use vitrina::config::WebhookConfig;
use vitrina::webhooks::DeliveryReport;

use super::{Hooks, SCHEDULE, create, dev_config, verify};
use crate::helpers::receiver::{Reply, TestReceiver};

// ---------------------------------------------------------------- the request

#[tokio::test]
async fn a_completed_session_is_posted_once_with_the_stored_body_and_a_valid_signature() {
    let mut h = Hooks::start().await;
    let (_, secret) = h.subscribe().await;
    let session = h.complete_session().await;

    let report = h.deliver().await;
    assert_eq!(report.attempted, 1);
    assert_eq!(report.succeeded, 1);

    let delivery = h.only_delivery().await;
    let request = h.receiver.take_one();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/hook");
    assert_eq!(request.body, delivery.payload.as_bytes());
    assert_eq!(request.header("content-type"), "application/json");
    assert_eq!(
        request.header("x-vitrina-event"),
        "scrape_session.completed"
    );
    assert_eq!(
        request.header("x-vitrina-delivery"),
        delivery.id.to_string()
    );
    let t = verify(
        &secret,
        request.header("x-vitrina-signature"),
        &request.body,
    );
    assert_eq!(t, h.now().timestamp());

    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body,
        json!({
            "event": "scrape_session.completed",
            "user_id": h.account_id,
            "scrape_session_id": session,
            "status": "completed",
            "stats": { "total": 3, "pending": 0, "processing": 0, "merged": 2, "rejected": 1, "flagged": 0 },
            "url": h.app.url(&format!("/v1/me/scrapes/{session}/products")),
        })
    );

    h.advance(TimeDelta::days(3));
    assert_eq!(h.deliver().await, DeliveryReport::default());
    assert!(h.receiver.take().is_empty(), "sent once");
}

#[tokio::test]
async fn retries_keep_the_delivery_id_and_sign_each_attempt_afresh() {
    let mut h = Hooks::start().await;
    let (_, secret) = h.subscribe().await;
    h.complete_session().await;
    h.receiver.script([Reply::Status(503)]);

    h.deliver().await;
    let first = h.receiver.take_one();
    h.advance(SCHEDULE[0]);
    h.deliver().await;
    let second = h.receiver.take_one();

    assert_eq!(
        first.header("x-vitrina-delivery"),
        second.header("x-vitrina-delivery")
    );
    assert_eq!(first.body, second.body, "the body is byte-identical");
    let t1 = verify(&secret, first.header("x-vitrina-signature"), &first.body);
    let t2 = verify(&secret, second.header("x-vitrina-signature"), &second.body);
    assert_eq!(t2 - t1, 60);
}

// ---------------------------------------------------------------- outcomes

#[tokio::test]
async fn a_2xx_answer_succeeds_and_resets_the_failure_count() {
    let mut h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    h.complete_session().await;
    h.receiver.script([Reply::Status(500), Reply::Status(204)]);

    h.deliver().await;
    assert_eq!(h.subscription(id).await.consecutive_failures, 1);
    h.advance(SCHEDULE[0]);
    let report = h.deliver().await;
    assert_eq!(report.succeeded, 1);

    let delivery = h.only_delivery().await;
    assert_eq!(delivery.status, DeliveryStatus::Succeeded);
    assert_eq!(delivery.attempts, 2);
    assert_eq!(delivery.finished_at, Some(h.now()));
    assert_eq!(delivery.next_attempt_at, None);
    assert_eq!(h.subscription(id).await.consecutive_failures, 0);
    assert_eq!(h.receiver.take().len(), 2);
}

#[tokio::test]
async fn a_redirect_is_a_permanent_failure_and_is_not_followed() {
    let mut h = Hooks::start().await;
    let mut elsewhere = TestReceiver::start().await;
    h.subscribe().await;
    h.complete_session().await;
    h.receiver
        .script([Reply::Redirect(elsewhere.hook("/stolen"))]);

    let report = h.deliver().await;
    assert_eq!(report.failed, 1);
    let delivery = h.only_delivery().await;
    assert_eq!(delivery.status, DeliveryStatus::Failed);
    assert_eq!(h.attempts(delivery.id).await[0].status_code, Some(302));
    assert_eq!(h.receiver.take().len(), 1);
    assert!(
        elsewhere.take().is_empty(),
        "the redirect target got nothing"
    );

    h.advance(TimeDelta::days(2));
    h.deliver().await;
    assert!(h.receiver.take().is_empty(), "no retry");
}

#[tokio::test]
async fn a_400_is_a_permanent_failure() {
    let mut h = Hooks::start().await;
    h.subscribe().await;
    h.complete_session().await;
    h.receiver.script([Reply::Status(400)]);

    h.deliver().await;
    let delivery = h.only_delivery().await;
    assert_eq!(delivery.status, DeliveryStatus::Failed);
    assert_eq!(delivery.attempts, 1);
    assert_eq!(delivery.finished_at, Some(h.now()));

    h.advance(TimeDelta::days(2));
    assert_eq!(h.deliver().await, DeliveryReport::default());
    assert_eq!(h.receiver.take().len(), 1);
}

#[tokio::test]
async fn a_429_with_retry_after_seconds_retries_at_that_time() {
    let mut h = Hooks::start().await;
    h.subscribe().await;
    h.complete_session().await;
    h.receiver.script([Reply::TooManyRequests("120".into())]);

    h.deliver().await;
    let delivery = h.only_delivery().await;
    assert_eq!(delivery.status, DeliveryStatus::Pending);
    assert_eq!(
        delivery.next_attempt_at,
        Some(h.now() + TimeDelta::seconds(120))
    );

    h.advance(TimeDelta::seconds(119));
    assert_eq!(h.deliver().await.attempted, 0, "not due yet");
    h.advance(TimeDelta::seconds(1));
    assert_eq!(h.deliver().await.succeeded, 1);
    assert_eq!(h.receiver.take().len(), 2);
}

#[tokio::test]
async fn a_429_with_an_http_date_retries_at_that_date() {
    let h = Hooks::start().await;
    h.subscribe().await;
    h.complete_session().await;
    let at = h.now() + TimeDelta::minutes(10);
    h.receiver
        .script([Reply::TooManyRequests(httpdate::fmt_http_date(
            SystemTime::from(at),
        ))]);

    h.deliver().await;
    assert_eq!(h.only_delivery().await.next_attempt_at, Some(at));
}

/// Answers every attempt with `reply` and checks the delivery is retried
/// exactly on the schedule, then fails for good after the 7th attempt.
async fn follows_the_schedule_then_fails(reply: Reply) {
    let mut h = Hooks::start().await;
    h.subscribe().await;
    h.complete_session().await;
    h.receiver.script(std::iter::repeat_n(reply, 7));

    for (done, delay) in SCHEDULE.iter().enumerate() {
        assert_eq!(h.deliver().await.rescheduled, 1);
        let delivery = h.only_delivery().await;
        assert_eq!(delivery.attempts, done as i32 + 1);
        assert_eq!(delivery.status, DeliveryStatus::Pending);
        assert_eq!(delivery.next_attempt_at, Some(h.now() + *delay));

        h.advance(*delay - TimeDelta::seconds(1));
        assert_eq!(h.deliver().await.attempted, 0, "not due a second early");
        h.advance(TimeDelta::seconds(1));
    }
    let report = h.deliver().await;
    assert_eq!((report.attempted, report.failed), (1, 1));
    let delivery = h.only_delivery().await;
    assert_eq!(delivery.attempts, 7);
    assert_eq!(delivery.status, DeliveryStatus::Failed);
    assert_eq!(delivery.next_attempt_at, None);
    assert_eq!(h.receiver.take().len(), 7);

    h.advance(TimeDelta::days(3));
    h.deliver().await;
    assert!(h.receiver.take().is_empty(), "the 7th attempt was final");
}

#[tokio::test]
async fn a_5xx_follows_the_schedule_and_the_seventh_attempt_is_final() {
    follows_the_schedule_then_fails(Reply::Status(500)).await;
}

#[tokio::test]
async fn a_429_without_retry_after_follows_the_schedule() {
    follows_the_schedule_then_fails(Reply::Status(429)).await;
}

#[tokio::test]
async fn a_timeout_is_retried() {
    let mut h = Hooks::start_with(WebhookConfig {
        sending: vitrina::config::WebhookSending {
            webhook_timeout_ms: 1_000,
            ..dev_config().sending
        },
        ..dev_config()
    })
    .await;
    h.subscribe().await;
    h.complete_session().await;
    h.receiver.script([Reply::Slow(Duration::from_secs(10))]);

    assert_eq!(h.deliver().await.rescheduled, 1);
    let delivery = h.only_delivery().await;
    assert_eq!(delivery.next_attempt_at, Some(h.now() + SCHEDULE[0]));
    let attempt = &h.attempts(delivery.id).await[0];
    assert_eq!(attempt.status_code, None);
    assert!(
        attempt.error.as_deref().unwrap().contains("timed out"),
        "{attempt:?}"
    );

    h.advance(SCHEDULE[0]);
    assert_eq!(h.deliver().await.succeeded, 1);
    assert_eq!(h.receiver.take().len(), 2);
}

#[tokio::test]
async fn a_network_error_is_retried() {
    let h = Hooks::start().await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let url = format!("http://{closed}/hook");
    let (status, body) = create(&h.app, &h.key, json!({ "url": url })).await;
    assert_eq!(status, 201, "{body}");
    h.complete_session().await;

    assert_eq!(h.deliver().await.rescheduled, 1);
    let delivery = h.only_delivery().await;
    assert_eq!(delivery.next_attempt_at, Some(h.now() + SCHEDULE[0]));
    let attempt = &h.attempts(delivery.id).await[0];
    assert_eq!(attempt.status_code, None);
    let error = attempt.error.as_deref().unwrap();
    assert!(error.to_lowercase().contains("refused"), "{error}");
}
