//! Webhooks: subscriptions through the extension API, the outbox, and
//! delivery driven directly with the test clock (no sleeping through
//! backoffs) against a loopback receiver.

mod receiver;

use std::time::{Duration, SystemTime};

use chrono::{DateTime, TimeDelta, Utc};
use entity::{
    DeliveryStatus, SubscriptionStatus, webhook_attempt, webhook_delivery, webhook_subscription,
};
use hmac::{Hmac, Mac};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter,
    QueryOrder,
};
use serde_json::{Value, json};
use sha2::Sha256;
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::config::{Settings, WebhookConfig};
use vitrina::query::sessions::SessionStats;
use vitrina::webhooks::{DeliveryReport, Sender, deliver_due, enqueue_session_completed};

use crate::fixtures::insert_session;
use crate::helpers::{TestApp, test_start};
use receiver::{ConnectionCounter, Reply, TestReceiver};

// ---------------------------------------------------------------- harness

/// The spec's retry schedule, written out independently of the code.
const SCHEDULE: [TimeDelta; 6] = [
    TimeDelta::minutes(1),
    TimeDelta::minutes(5),
    TimeDelta::minutes(30),
    TimeDelta::hours(2),
    TimeDelta::hours(6),
    TimeDelta::hours(24),
];

const STATS: SessionStats = SessionStats {
    total: 3,
    pending: 0,
    processing: 0,
    merged: 2,
    rejected: 1,
    flagged: 0,
};

/// Delivery settings of the tests: loopback targets allowed (the development
/// switch), a short attempt timeout.
fn dev_config() -> WebhookConfig {
    WebhookConfig {
        webhook_timeout_ms: 2_000,
        webhook_disable_after: 15,
        webhook_allow_insecure_targets: true,
    }
}

/// An app with one account and key, a delivery worker and a receiver.
struct Hooks {
    app: TestApp,
    key: String,
    account_id: Uuid,
    sender: Sender,
    receiver: TestReceiver,
}

impl Hooks {
    async fn start() -> Hooks {
        Self::start_with(dev_config()).await
    }

    async fn start_with(config: WebhookConfig) -> Hooks {
        let app = TestApp::spawn_with_settings(Settings {
            webhooks: config.clone(),
            ..Settings::default()
        })
        .await;
        let key = app.key("acme").await;
        let account_id = vitrina::accounts::authenticate(&app.db, &key, test_start())
            .await
            .unwrap()
            .expect("valid key")
            .account_id;
        Hooks {
            sender: Sender::new(&config).expect("sender"),
            receiver: TestReceiver::start().await,
            app,
            key,
            account_id,
        }
    }

    /// Subscribes the receiver's `/hook` and returns (id, secret).
    async fn subscribe(&self) -> (Uuid, String) {
        let url = self.receiver.hook("/hook");
        let (status, body) = create(&self.app, &self.key, json!({ "url": url })).await;
        assert_eq!(status, 201, "{body}");
        let data = &body["data"];
        (
            data["id"].as_str().unwrap().parse().unwrap(),
            data["secret"].as_str().unwrap().to_owned(),
        )
    }

    /// A session of the account that has just completed: its deliveries are enqueued.
    async fn complete_session(&self) -> Uuid {
        let session = insert_session(&self.app.db, &self.key, self.now()).await;
        enqueue_session_completed(
            &self.app.db,
            self.account_id,
            session.id,
            &STATS,
            &self.app.url(""),
            self.now(),
        )
        .await
        .expect("enqueue");
        session.id
    }

    /// One run of the delivery job at the test clock's time.
    async fn deliver(&self) -> DeliveryReport {
        deliver_due(&self.app.db, &self.app.clock, &self.sender)
            .await
            .expect("deliver_due")
    }

    fn now(&self) -> DateTime<Utc> {
        self.app.clock.now()
    }

    fn advance(&self, by: TimeDelta) {
        self.app.clock.advance(by);
    }

    async fn deliveries(&self) -> Vec<webhook_delivery::Model> {
        webhook_delivery::Entity::find()
            .order_by_asc(webhook_delivery::Column::CreatedAt)
            .all(&self.app.db)
            .await
            .unwrap()
    }

    async fn only_delivery(&self) -> webhook_delivery::Model {
        let mut all = self.deliveries().await;
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    async fn attempts(&self, delivery_id: Uuid) -> Vec<webhook_attempt::Model> {
        webhook_attempt::Entity::find()
            .filter(webhook_attempt::Column::DeliveryId.eq(delivery_id))
            .order_by_asc(webhook_attempt::Column::Id)
            .all(&self.app.db)
            .await
            .unwrap()
    }

    async fn subscription(&self, id: Uuid) -> webhook_subscription::Model {
        webhook_subscription::Entity::find_by_id(id)
            .one(&self.app.db)
            .await
            .unwrap()
            .expect("subscription")
    }
}

const WEBHOOKS: &str = "/extension/v1/webhooks";

async fn create(app: &TestApp, key: &str, body: Value) -> (u16, Value) {
    let response = app
        .client
        .post(app.url(WEBHOOKS))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("request");
    (
        response.status().as_u16(),
        response.json().await.expect("JSON"),
    )
}

async fn call(app: &TestApp, key: &str, method: reqwest::Method, path: &str) -> (u16, Value) {
    let response = app
        .client
        .request(method, app.url(path))
        .bearer_auth(key)
        .send()
        .await
        .expect("request");
    (
        response.status().as_u16(),
        response.json().await.expect("JSON"),
    )
}

async fn disable(app: &TestApp, key: &str, id: Uuid) -> (u16, Value) {
    call(
        app,
        key,
        reqwest::Method::DELETE,
        &format!("{WEBHOOKS}/{id}"),
    )
    .await
}

/// A receiver's verification, written from the spec: HMAC-SHA256 keyed with
/// the secret over `<t>.<raw body>`, compared to `v1`. Returns `t`.
fn verify(secret: &str, header: &str, body: &[u8]) -> i64 {
    let (t, v1) = header
        .split_once(',')
        .and_then(|(t, v1)| Some((t.strip_prefix("t=")?, v1.strip_prefix("v1=")?)))
        .unwrap_or_else(|| panic!("malformed signature header {header:?}"));
    assert_eq!(v1.len(), 64, "{header}");
    assert!(
        v1.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    );
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    mac.verify_slice(&hex::decode(v1).unwrap())
        .expect("the signature verifies");
    t.parse().expect("t is an integer")
}

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
        webhook_timeout_ms: 1_000,
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

// ---------------------------------------------------------------- subscriptions and delivery

#[tokio::test]
async fn consecutive_failures_disable_the_subscription() {
    let mut h = Hooks::start_with(WebhookConfig {
        webhook_disable_after: 3,
        ..dev_config()
    })
    .await;
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

// ---------------------------------------------------------------- exact auto-disable

impl Hooks {
    /// `sessions` completed sessions: one delivery each per subscription.
    async fn backlog(&self, sessions: usize) {
        for _ in 0..sessions {
            self.complete_session().await;
        }
    }

    /// Every delivery has failed and no attempt is pending.
    async fn assert_all_failed(&self, expected: usize) {
        let deliveries = self.deliveries().await;
        assert_eq!(deliveries.len(), expected);
        let unfinished: Vec<_> = deliveries
            .iter()
            .filter(|d| d.status != DeliveryStatus::Failed || d.in_flight)
            .collect();
        assert!(unfinished.is_empty(), "{unfinished:?}");
    }

    /// Attempts logged, over every delivery.
    async fn logged_attempts(&self) -> usize {
        webhook_attempt::Entity::find()
            .all(&self.app.db)
            .await
            .unwrap()
            .len()
    }
}

/// Settings with auto-disable after 15 failures.
fn disable_after_15() -> WebhookConfig {
    WebhookConfig {
        webhook_disable_after: 15,
        ..dev_config()
    }
}

#[tokio::test]
async fn deliveries_due_together_make_exactly_the_threshold_of_attempts_to_a_failing_target() {
    let mut h = Hooks::start_with(disable_after_15()).await;
    let (id, _) = h.subscribe().await;
    h.backlog(40).await;
    h.receiver
        .script(std::iter::repeat_n(Reply::Status(500), 100));

    let report = h.deliver().await;
    assert_eq!(h.receiver.take().len(), 15, "{report:?}");
    assert_eq!(report.attempted, 15);
    assert_eq!(report.deferred, 0);
    let subscription = h.subscription(id).await;
    assert_eq!(subscription.status, SubscriptionStatus::Disabled);
    assert_eq!(subscription.consecutive_failures, 15);
    h.assert_all_failed(40).await;
    let attempts: i32 = h.deliveries().await.iter().map(|d| d.attempts).sum();
    assert_eq!((attempts, h.logged_attempts().await), (15, 15));

    h.advance(TimeDelta::days(2));
    h.deliver().await;
    assert!(h.receiver.take().is_empty(), "nothing after the disable");
}

#[tokio::test]
async fn concurrent_workers_make_exactly_the_threshold_of_attempts_to_a_failing_target() {
    let mut h = Hooks::start_with(disable_after_15()).await;
    let (id, _) = h.subscribe().await;
    // More than three batches, so every worker claims some; slow answers, so
    // the workers' attempts overlap.
    h.backlog(200).await;
    let late_500 = Reply::Late(Duration::from_millis(200), 500);
    h.receiver.script(std::iter::repeat_n(late_500, 300));

    let workers = (0..4).map(|_| deliver_due(&h.app.db, &h.app.clock, &h.sender));
    let reports: Vec<DeliveryReport> = futures_util::future::join_all(workers)
        .await
        .into_iter()
        .map(|r| r.expect("deliver_due"))
        .collect();

    assert_eq!(h.receiver.take().len(), 15, "{reports:?}");
    let attempted: usize = reports.iter().map(|r| r.attempted).sum();
    assert_eq!(attempted, 15);
    assert_eq!(
        h.subscription(id).await.status,
        SubscriptionStatus::Disabled
    );
    h.assert_all_failed(200).await;
    assert_eq!(h.logged_attempts().await, 15);
}

#[tokio::test]
async fn deliveries_due_together_beyond_the_threshold_all_reach_a_healthy_target_in_one_run() {
    let mut h = Hooks::start_with(WebhookConfig {
        webhook_disable_after: 3,
        ..dev_config()
    })
    .await;
    let (id, _) = h.subscribe().await;
    h.backlog(40).await;
    // A failure in the first wave: the rest of the allowance still goes out.
    h.receiver.script([Reply::Status(500)]);

    let report = h.deliver().await;
    assert_eq!(
        (report.attempted, report.succeeded, report.rescheduled),
        (40, 39, 1)
    );
    assert_eq!(h.receiver.take().len(), 40);
    let subscription = h.subscription(id).await;
    assert_eq!(subscription.status, SubscriptionStatus::Active);
    assert_eq!(subscription.consecutive_failures, 0);
}

#[tokio::test]
async fn an_attempt_left_unrecorded_by_a_stopped_worker_counts_as_one_failure_after_its_lease() {
    let mut h = Hooks::start_with(WebhookConfig {
        webhook_disable_after: 2,
        ..dev_config()
    })
    .await;
    let (id, _) = h.subscribe().await;
    h.complete_session().await;
    // A worker reserved the attempt, may have sent it, and stopped.
    let mut row = h.only_delivery().await.into_active_model();
    row.in_flight = Set(true);
    row.locked_until = Set(Some(h.now() + TimeDelta::seconds(30)));
    row.update(&h.app.db).await.unwrap();
    // Another delivery is due meanwhile; the threshold leaves room for one.
    h.complete_session().await;

    let report = h.deliver().await;
    assert_eq!((report.succeeded, report.deferred), (1, 0), "{report:?}");
    assert_eq!(h.receiver.take().len(), 1);

    h.advance(TimeDelta::seconds(30));
    let report = h.deliver().await;
    assert_eq!((report.attempted, report.rescheduled), (0, 1));
    assert!(h.receiver.take().is_empty(), "recorded, not resent");
    let abandoned = h
        .deliveries()
        .await
        .into_iter()
        .find(|d| d.status == DeliveryStatus::Pending)
        .expect("the abandoned delivery");
    assert!(!abandoned.in_flight);
    assert_eq!(abandoned.attempts, 1);
    assert_eq!(abandoned.next_attempt_at, Some(h.now() + SCHEDULE[0]));
    let logged = h.attempts(abandoned.id).await;
    assert_eq!(logged.len(), 1);
    assert!(
        logged[0]
            .error
            .as_deref()
            .unwrap()
            .contains("no outcome was recorded"),
        "{logged:?}"
    );
    assert_eq!(h.subscription(id).await.consecutive_failures, 1);

    h.advance(SCHEDULE[0]);
    assert_eq!(h.deliver().await.succeeded, 1);
    assert_eq!(h.receiver.take().len(), 1);
    assert_eq!(h.subscription(id).await.consecutive_failures, 0);
}

#[tokio::test]
async fn a_run_of_failures_already_past_a_lowered_threshold_disables_without_an_attempt() {
    let mut h = Hooks::start_with(disable_after_15()).await;
    let (id, _) = h.subscribe().await;
    // 20 failures in a row counted under an older, higher setting.
    let mut row = h.subscription(id).await.into_active_model();
    row.consecutive_failures = Set(20);
    row.update(&h.app.db).await.unwrap();
    h.complete_session().await;

    let report = h.deliver().await;
    assert_eq!((report.attempted, report.failed), (0, 1), "{report:?}");
    assert!(h.receiver.take().is_empty());
    let subscription = h.subscription(id).await;
    assert_eq!(subscription.status, SubscriptionStatus::Disabled);
    assert_eq!(subscription.disabled_at, Some(h.now()));
    h.assert_all_failed(1).await;
}

#[tokio::test]
async fn attempts_in_flight_elsewhere_defer_deliveries_beyond_the_threshold() {
    let mut h = Hooks::start_with(WebhookConfig {
        webhook_disable_after: 2,
        ..dev_config()
    })
    .await;
    let (id, _) = h.subscribe().await;
    h.backlog(3).await;
    // Another worker holds two attempts of the subscription right now.
    let deliveries = h.deliveries().await;
    for held in &deliveries[..2] {
        let mut row = held.clone().into_active_model();
        row.in_flight = Set(true);
        row.locked_until = Set(Some(h.now() + TimeDelta::seconds(30)));
        row.update(&h.app.db).await.unwrap();
    }

    let report = h.deliver().await;
    assert_eq!((report.attempted, report.deferred), (0, 1), "{report:?}");
    assert!(h.receiver.take().is_empty());
    assert_eq!(h.subscription(id).await.consecutive_failures, 0);
    let third = webhook_delivery::Entity::find_by_id(deliveries[2].id)
        .one(&h.app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (third.status, third.in_flight),
        (DeliveryStatus::Pending, false)
    );
}

#[tokio::test]
async fn one_run_drains_a_backlog_larger_than_a_batch() {
    let mut h = Hooks::start().await;
    for _ in 0..5 {
        h.subscribe().await;
    }
    // 14 sessions x 5 subscriptions: 70 deliveries, more than one claim takes.
    for _ in 0..14 {
        h.complete_session().await;
    }

    let report = h.deliver().await;
    assert_eq!((report.attempted, report.succeeded), (70, 70));
    assert_eq!(h.receiver.take().len(), 70);
    let deliveries = h.deliveries().await;
    assert!(
        deliveries
            .iter()
            .all(|d| d.status == DeliveryStatus::Succeeded)
    );
}

#[tokio::test]
async fn a_delivery_held_by_a_worker_is_claimable_again_once_its_lease_runs_out() {
    let mut h = Hooks::start().await;
    h.subscribe().await;
    h.complete_session().await;
    // A worker claimed it and died before recording anything.
    let mut row = h.only_delivery().await.into_active_model();
    row.locked_until = Set(Some(h.now() + TimeDelta::seconds(30)));
    row.update(&h.app.db).await.unwrap();

    assert_eq!(h.deliver().await.attempted, 0, "held");
    h.advance(TimeDelta::seconds(30));
    assert_eq!(h.deliver().await.succeeded, 1);
    assert_eq!(h.receiver.take().len(), 1);
}

// ---------------------------------------------------------------- target checks

#[tokio::test]
async fn delivery_rechecks_the_target_and_never_dials_a_refused_one() {
    let h = Hooks::start_with(WebhookConfig {
        webhook_allow_insecure_targets: false,
        ..dev_config()
    })
    .await;
    let counter = ConnectionCounter::start().await;
    let port = counter.addr.port();
    // Rows as they might be left by a development run, or by DNS changing
    // after creation.
    for url in [
        format!("https://localhost:{port}/hook"),
        format!("https://127.0.0.1:{port}/hook"),
        format!("https://[::ffff:127.0.0.1]:{port}/hook"),
        format!("https://[::ffff:0:127.0.0.1]:{port}/hook"),
        format!("http://example.com:{port}/hook"),
    ] {
        webhook_subscription::ActiveModel {
            id: Set(Uuid::new_v4()),
            account_id: Set(h.account_id),
            target_url: Set(url),
            secret: Set("whsec_x".into()),
            status: Set(SubscriptionStatus::Active),
            consecutive_failures: Set(0),
            created_at: Set(h.now()),
            disabled_at: Set(None),
        }
        .insert(&h.app.db)
        .await
        .unwrap();
    }
    h.complete_session().await;

    let report = h.deliver().await;
    assert_eq!(report.attempted, 5);
    assert_eq!(counter.accepted(), 0, "nothing was dialled");

    for delivery in h.deliveries().await {
        let url = h.subscription(delivery.subscription_id).await.target_url;
        let attempt = &h.attempts(delivery.id).await[0];
        let error = attempt.error.as_deref().unwrap_or_default();
        assert_eq!(attempt.status_code, None);
        if url.contains("localhost") {
            // DNS may change: refused now, retried later.
            assert!(
                error.contains("refused") && error.contains("loopback"),
                "{error}"
            );
            assert_eq!(delivery.status, DeliveryStatus::Pending);
        } else {
            // The URL itself can never be allowed.
            assert!(
                error.contains("must be public") || error.contains("https"),
                "{url}: {error}"
            );
            assert_eq!(delivery.status, DeliveryStatus::Failed);
        }
    }
}

#[tokio::test]
async fn creation_refuses_targets_that_are_not_public_https() {
    let app = TestApp::spawn().await; // development switch off
    let key = app.key("acme").await;
    for (url, says) in [
        ("http://hooks.example.com/x", "https"),
        ("not a url", "not valid"),
        ("https://127.0.0.1/x", "loopback"),
        ("https://10.1.2.3/x", "private"),
        ("https://169.254.169.254/latest", "link-local"),
        ("https://[::1]/x", "loopback"),
        ("https://100.64.0.1/x", "carrier-grade NAT"),
        ("https://localhost/x", "loopback"),
        ("https://192.88.99.1/x", "6to4 relay"),
        ("https://[3fff::1]/x", "documentation"),
        // Every IPv6 form that embeds 127.0.0.1.
        ("https://[::ffff:127.0.0.1]/x", "IPv4-mapped"),
        ("https://[::127.0.0.1]/x", "IPv4-compatible"),
        ("https://[::ffff:0:127.0.0.1]/x", "IPv4-translated"),
        ("https://[64:ff9b::127.0.0.1]/x", "NAT64"),
        ("https://[64:ff9b:1::7f00:1]/x", "IPv4-IPv6 translation"),
        ("https://[2002:7f00:1::1]/x", "6to4"),
        ("https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x", "Teredo"),
        ("https://[2606:4700::5efe:127.0.0.1]/x", "ISATAP"),
    ] {
        let (status, body) = create(&app, &key, json!({ "url": url })).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(body["error"]["code"], "invalid_parameter", "{url}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{url}: {message}");
    }
    let (_, listed) = call(&app, &key, reqwest::Method::GET, WEBHOOKS).await;
    assert_eq!(listed["data"], json!([]));
}

// ---------------------------------------------------------------- the API

#[tokio::test]
async fn the_secret_is_shown_once_at_creation() {
    let h = Hooks::start().await;
    let (id, secret) = h.subscribe().await;
    assert!(
        secret.starts_with("whsec_") && secret.len() == 6 + 64,
        "{secret}"
    );

    let (status, body) = call(&h.app, &h.key, reqwest::Method::GET, WEBHOOKS).await;
    assert_eq!(status, 200);
    let listed = &body["data"][0];
    assert_eq!(listed["id"], json!(id));
    assert_eq!(listed["url"], json!(h.receiver.hook("/hook")));
    assert_eq!(listed["status"], "active");
    assert!(listed.get("secret").is_none());
    assert!(!body.to_string().contains(&secret));
}

#[tokio::test]
async fn at_most_five_active_subscriptions() {
    let h = Hooks::start().await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(h.subscribe().await.0);
    }
    let url = json!({ "url": h.receiver.hook("/sixth") });
    let (status, body) = create(&h.app, &h.key, url.clone()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "subscription_limit");

    disable(&h.app, &h.key, ids[0]).await;
    let (status, body) = create(&h.app, &h.key, url).await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn concurrent_creations_respect_the_cap() {
    let h = Hooks::start().await;
    let url = json!({ "url": h.receiver.hook("/hook") });
    let creations = (0..8).map(|_| create(&h.app, &h.key, url.clone()));
    let mut statuses: Vec<u16> = futures_util::future::join_all(creations)
        .await
        .into_iter()
        .map(|(status, _)| status)
        .collect();
    statuses.sort();
    assert_eq!(statuses, [201, 201, 201, 201, 201, 409, 409, 409]);
}

#[tokio::test]
async fn disabling_is_final_and_idempotent() {
    let h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    let (status, first) = disable(&h.app, &h.key, id).await;
    assert_eq!(status, 200);
    assert_eq!(first["data"]["status"], "disabled");
    h.advance(TimeDelta::minutes(5));
    let (status, again) = disable(&h.app, &h.key, id).await;
    assert_eq!(status, 200);
    assert_eq!(again["data"]["disabled_at"], first["data"]["disabled_at"]);
}

#[tokio::test]
async fn another_accounts_subscription_is_not_found() {
    let h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    let other = h.app.key("someone-else").await;

    let (status, body) = disable(&h.app, &other, id).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let path = format!("{WEBHOOKS}/{id}/deliveries");
    let (status, _) = call(&h.app, &other, reqwest::Method::GET, &path).await;
    assert_eq!(status, 404);
    let (_, listed) = call(&h.app, &other, reqwest::Method::GET, WEBHOOKS).await;
    assert_eq!(listed["data"], json!([]));
    assert_eq!(h.subscription(id).await.status, SubscriptionStatus::Active);
}

#[tokio::test]
async fn bad_requests_are_explained() {
    let h = Hooks::start().await;
    let send = |body: &'static str| {
        h.app
            .client
            .post(h.app.url(WEBHOOKS))
            .bearer_auth(&h.key)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for body in ["not json", r#"{"uri": "https://x.example"}"#, "[]"] {
        let response = send(body).await.unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "invalid_body", "{body}");
    }
    let (status, body) = call(
        &h.app,
        &h.key,
        reqwest::Method::DELETE,
        &format!("{WEBHOOKS}/not-a-uuid"),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "invalid_parameter");
    let (status, _) = call(&h.app, "vtr_wrong", reqwest::Method::GET, WEBHOOKS).await;
    assert_eq!(status, 401);
}

// ---------------------------------------------------------------- the CLI

#[tokio::test]
async fn cli_creates_lists_and_disables_subscriptions() {
    use crate::cli::{assert_clean_failure, stdout, vitrina};
    let db = crate::helpers::TestDb::new().await;
    // `keys` and `webhooks` refuse a database that was never migrated.
    db.connect().await;
    assert!(
        vitrina(&db.url, &["keys", "create", "--account", "acme"])
            .status
            .success()
    );
    let create = [
        "webhooks",
        "create",
        "--account",
        "acme",
        "--url",
        "http://127.0.0.1:9/hook",
    ];

    assert_clean_failure(&vitrina(&db.url, &create), "https");
    let out = vitrina(
        &db.url,
        &[&create[..], &["--webhook-allow-insecure-targets"]].concat(),
    );
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    let id = printed
        .split_whitespace()
        .nth(3)
        .expect("id printed")
        .to_owned();
    let secret = printed
        .lines()
        .find(|l| l.starts_with("whsec_"))
        .expect("secret printed");

    let listed = stdout(&vitrina(
        &db.url,
        &["webhooks", "list", "--account", "acme"],
    ));
    assert!(
        listed.contains(&id) && listed.contains("active"),
        "{listed}"
    );
    assert!(!listed.contains(secret));

    let out = vitrina(&db.url, &["webhooks", "disable", &id]);
    assert!(out.status.success(), "{out:?}");
    let listed = stdout(&vitrina(&db.url, &["webhooks", "list"]));
    assert!(listed.contains("disabled"), "{listed}");

    let unknown = [
        "webhooks",
        "create",
        "--account",
        "nobody",
        "--url",
        "https://x.example",
    ];
    assert_clean_failure(&vitrina(&db.url, &unknown), "no account");
}

// ---------------------------------------------------------------- end to end

#[tokio::test]
async fn an_upload_is_merged_completed_and_delivered_by_one_job_tick() {
    let mut h = Hooks::start().await;
    let (_, secret) = h.subscribe().await;
    let item = json!({
        "marketplace": "wildberries", "external_id": "77", "url": "https://www.wildberries.ru/catalog/77/detail.aspx",
        "language": "ru", "name": "Наушники", "seller": { "id": "9", "name": "ИП Иванов", "code": "A-1" },
        "prices": [{ "country_code": "ru", "user_auth_status": "anonymous", "price": 990, "currency": "RUB" }]
    });
    let upload = json!({ "source_type": "page", "intent": "price_monitoring", "items": [item] });
    let created: Value = h
        .app
        .post_as(&h.key, "/extension/v1/scrapes", &upload)
        .await
        .json()
        .await
        .unwrap();
    let session = created["data"]["id"].as_str().unwrap().to_owned();

    let tick = h.app.jobs().tick().await.expect("tick");
    assert_eq!(
        (
            tick.merge.merged,
            tick.merge.completed_sessions,
            tick.deliveries.succeeded
        ),
        (1, 1, 1)
    );
    let received = h.receiver.take_one();
    verify(
        &secret,
        received.header("x-vitrina-signature"),
        &received.body,
    );
    let payload: Value = serde_json::from_slice(&received.body).unwrap();
    assert_eq!(payload["scrape_session_id"], session);
    assert_eq!(payload["stats"]["merged"], 1);

    // The payload's url is the session products endpoint, fetched with the key.
    let url = payload["url"].as_str().unwrap();
    let products: Value = h
        .app
        .client
        .get(url)
        .bearer_auth(&h.key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(products["data"][0]["product"]["external_id"], "77");
    assert_eq!(
        h.app.jobs().tick().await.unwrap().deliveries.attempted,
        0,
        "delivered once"
    );
}

#[tokio::test]
async fn every_webhook_endpoint_answers_as_the_extension_document_says() {
    let h = Hooks::start().await;
    let doc: Value = h
        .app
        .get("/extension/v1/openapi.json")
        .await
        .json()
        .await
        .unwrap();
    let check = |method: &str, template: &str, status: u16, body: &Value| {
        crate::rest_contract::validate_operation(&doc, method, template, status, body)
    };
    let (status, created) =
        create(&h.app, &h.key, json!({ "url": h.receiver.hook("/hook") })).await;
    assert_eq!(status, 201, "{created}");
    check("post", "/webhooks", 201, &created);
    let id: Uuid = created["data"]["id"].as_str().unwrap().parse().unwrap();

    h.complete_session().await;
    h.receiver.script([Reply::Status(500)]);
    h.deliver().await;
    let (status, list) = call(&h.app, &h.key, reqwest::Method::GET, WEBHOOKS).await;
    assert_eq!(status, 200, "{list}");
    check("get", "/webhooks", 200, &list);
    let path = format!("{WEBHOOKS}/{id}/deliveries");
    let (status, deliveries) = call(&h.app, &h.key, reqwest::Method::GET, &path).await;
    assert_eq!(status, 200, "{deliveries}");
    assert_eq!(deliveries["data"][0]["attempts"][0]["status_code"], 500);
    check("get", "/webhooks/{id}/deliveries", 200, &deliveries);
    let (status, disabled) = disable(&h.app, &h.key, id).await;
    assert_eq!(status, 200, "{disabled}");
    check("delete", "/webhooks/{id}", 200, &disabled);

    let unknown = format!("{WEBHOOKS}/{}/deliveries", Uuid::nil());
    let (status, missing) = call(&h.app, &h.key, reqwest::Method::GET, &unknown).await;
    assert_eq!(status, 404, "{missing}");
    check("get", "/webhooks/{id}/deliveries", 404, &missing);
    let (status, refused) = create(&h.app, &h.key, json!({ "url": "ftp://example.com/" })).await;
    assert_eq!(status, 400, "{refused}");
    check("post", "/webhooks", 400, &refused);
}

#[tokio::test]
async fn retention_deletes_finished_deliveries_with_their_attempts_and_keeps_unfinished_ones() {
    let h = Hooks::start().await;
    h.subscribe().await;
    h.complete_session().await;
    h.receiver.script([Reply::Status(200)]);
    h.deliver().await;
    let finished = h.only_delivery().await;
    assert_eq!(finished.status, DeliveryStatus::Succeeded);
    h.complete_session().await;
    h.receiver.script([Reply::Status(500)]);
    h.deliver().await;
    let retrying = h
        .deliveries()
        .await
        .into_iter()
        .find(|d| d.id != finished.id)
        .expect("the second delivery");
    assert!(retrying.finished_at.is_none());

    h.advance(TimeDelta::days(91));
    h.complete_session().await;
    let purged = vitrina::jobs::retention::purge(&h.app.db, h.now(), TimeDelta::days(90))
        .await
        .unwrap();
    assert_eq!(purged.deliveries, 1);
    let kept: Vec<Uuid> = h.deliveries().await.iter().map(|d| d.id).collect();
    assert_eq!(kept.len(), 2, "the one being retried and the new one");
    assert!(!kept.contains(&finished.id));
    assert!(
        h.attempts(finished.id).await.is_empty(),
        "attempts go with it"
    );
    assert_eq!(h.attempts(retrying.id).await.len(), 1);
}
