//! Webhooks: subscriptions through the extension API, the outbox, and
//! delivery driven directly with the test clock (no sleeping through
//! backoffs) against a loopback receiver. This module holds their harness;
//! the tests are in its submodules, one topic each.

mod auto_disable;
mod delivery;
mod end_to_end;
mod outbox;
mod ping;
mod price_changes;
mod redelivery;
mod rotation;
mod subscriptions;

use chrono::{DateTime, TimeDelta, Utc};
use entity::{webhook_attempt, webhook_delivery, webhook_subscription};
use hmac::{Hmac, Mac};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};
use sha2::Sha256;
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::config::{Settings, WebhookConfig};
use vitrina::query::sessions::SessionStats;
use vitrina::webhooks::{DeliveryReport, Sender, deliver_due, enqueue_session_completed};

use crate::fixtures::insert_session;
use crate::helpers::receiver::TestReceiver;
use crate::helpers::{TestApp, test_start};

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
        sending: vitrina::config::WebhookSending {
            webhook_timeout_ms: 2_000,
            webhook_disable_after: 15,
        },
        targets: vitrina::config::WebhookTargets {
            webhook_allow_insecure_targets: true,
        },
        ..WebhookConfig::default()
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

    /// The harness whose subscriptions are disabled after `failures`
    /// failed deliveries in a row.
    async fn disabling_after(failures: u32) -> Hooks {
        Self::start_with(WebhookConfig {
            sending: vitrina::config::WebhookSending {
                webhook_disable_after: failures,
                ..dev_config().sending
            },
            ..dev_config()
        })
        .await
    }

    async fn start_with(config: WebhookConfig) -> Hooks {
        Self::start_with_settings(Settings {
            webhooks: config,
            ..Settings::default()
        })
        .await
    }

    async fn start_with_settings(settings: Settings) -> Hooks {
        let config = settings.webhooks.clone();
        let app = TestApp::spawn_with_settings(settings).await;
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
