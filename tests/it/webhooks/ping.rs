//! The test event: a `ping` signed and sent like a delivery, at once and
//! once, answered with its outcome; not stored, not retried, not counted
//! towards auto-disable; the target check and the time limit of deliveries;
//! tenancy, the rate limit, and the CLI.

use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::config::{Limits, Settings, WebhookConfig};
use vitrina::webhooks::subscriptions;
use vitrina::webhooks::target::TargetPolicy;

use super::rotation::{assert_signed_with, subscribe_and_rotate};
use super::{Hooks, WEBHOOKS, call, dev_config, disable, verify};
use crate::helpers::cli::{assert_clean_failure, stderr, stdout, vitrina_alongside};
use crate::helpers::receiver::{ConnectionCounter, Reply};

async fn ping(h: &Hooks, key: &str, id: Uuid) -> (u16, Value) {
    call(
        &h.app,
        key,
        reqwest::Method::POST,
        &format!("{WEBHOOKS}/{id}/test"),
    )
    .await
}

/// Asserts the ping left no trace: no delivery, no failure counted.
async fn assert_not_recorded(h: &Hooks, id: Uuid) {
    assert!(h.deliveries().await.is_empty(), "no delivery stored");
    let path = format!("{WEBHOOKS}/{id}/deliveries");
    let (_, log) = call(&h.app, &h.key, reqwest::Method::GET, &path).await;
    assert_eq!(log["data"], json!([]), "{log}");
    let subscription = h.subscription(id).await;
    assert_eq!(subscription.consecutive_failures, 0);
    assert_eq!(subscription.status, entity::SubscriptionStatus::Active);
}

#[tokio::test]
async fn a_ping_is_signed_like_a_delivery_and_answered_with_its_outcome() {
    let mut h = Hooks::start().await;
    let (id, secret) = h.subscribe().await;

    let (status, body) = ping(&h, &h.key, id).await;
    assert_eq!(status, 200, "{body}");
    let outcome = &body["data"];
    assert_eq!(outcome["delivered"], true, "{body}");
    assert_eq!(outcome["status_code"], 200, "{body}");
    assert_eq!(outcome["error"], Value::Null, "{body}");
    assert!(outcome["duration_ms"].as_i64().unwrap() >= 0, "{body}");

    let request = h.receiver.take_one();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/hook");
    assert_eq!(request.header("content-type"), "application/json");
    assert_eq!(request.header("x-vitrina-event"), "ping");
    assert_eq!(
        request.header("x-vitrina-delivery"),
        outcome["delivery_id"]
            .as_str()
            .expect("the delivery id sent")
    );
    let t = verify(
        &secret,
        request.header("x-vitrina-signature"),
        &request.body,
    );
    assert_eq!(t, h.now().timestamp());
    let sent: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        sent,
        json!({ "event": "ping", "user_id": h.account_id, "webhook_id": id })
    );

    assert_not_recorded(&h, id).await;
}

#[tokio::test]
async fn a_ping_answered_500_reports_the_failure_once_and_changes_nothing() {
    let mut h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    h.receiver.script([Reply::Status(500)]);

    let (status, body) = ping(&h, &h.key, id).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["delivered"], false, "{body}");
    assert_eq!(body["data"]["status_code"], 500, "{body}");
    assert_eq!(body["data"]["error"], Value::Null, "{body}");
    assert_eq!(h.receiver.take().len(), 1, "one attempt");

    // Not retried, by the job or otherwise.
    h.advance(chrono::TimeDelta::days(2));
    assert_eq!(h.deliver().await.attempted, 0);
    assert!(h.receiver.take().is_empty());
    assert_not_recorded(&h, id).await;
}

#[tokio::test]
async fn a_ping_has_the_attempt_time_limit_of_deliveries() {
    let config = WebhookConfig {
        sending: vitrina::config::WebhookSending {
            webhook_timeout_ms: 300,
            ..dev_config().sending
        },
        ..dev_config()
    };
    let h = Hooks::start_with(config).await;
    let (id, _) = h.subscribe().await;
    h.receiver.script([Reply::Slow(Duration::from_secs(3))]);

    let started = std::time::Instant::now();
    let (status, body) = ping(&h, &h.key, id).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "cut off at 300 ms"
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["delivered"], false, "{body}");
    assert_eq!(body["data"]["status_code"], Value::Null, "{body}");
    assert_eq!(body["data"]["error"], "timed out after 300 ms", "{body}");
}

#[tokio::test]
async fn a_ping_during_a_rotation_carries_both_signatures() {
    let mut h = Hooks::start().await;
    let (id, old, new) = subscribe_and_rotate(&h).await;
    let (status, body) = ping(&h, &h.key, id).await;
    assert_eq!(status, 200, "{body}");
    assert_signed_with(&h.receiver.take_one(), &[&new, &old]);
}

#[tokio::test]
async fn a_ping_to_a_target_the_service_refuses_is_never_dialled() {
    // A strict server (no development switch), and a loopback subscription
    // made with the switch, as `vitrina webhooks create` can.
    let strict = WebhookConfig {
        targets: vitrina::config::WebhookTargets {
            webhook_allow_insecure_targets: false,
        },
        ..dev_config()
    };
    let h = Hooks::start_with(strict).await;
    let counter = ConnectionCounter::start().await;
    for url in [
        format!("http://{}/hook", counter.addr),
        format!("https://{}/hook", counter.addr),
        // Checked where the name is resolved, as for deliveries.
        format!("https://localhost:{}/hook", counter.addr.port()),
    ] {
        let insecure = TargetPolicy {
            allow_insecure: true,
        };
        let subscription = subscriptions::create(
            &h.app.db,
            h.account_id,
            &url,
            subscriptions::Interests::default(),
            insecure,
            h.now(),
        )
        .await
        .expect("created with the switch");

        let (status, body) = ping(&h, &h.key, subscription.id).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"]["delivered"], false, "{body}");
        assert_eq!(body["data"]["status_code"], Value::Null, "{body}");
        let error = body["data"]["error"].as_str().expect("why");
        assert!(
            error.contains("https") || error.contains("loopback"),
            "{url}: {error}"
        );
    }
    assert_eq!(counter.accepted(), 0, "nothing dialled");
}

#[tokio::test]
async fn a_ping_needs_an_active_subscription_of_the_callers_account() {
    let mut h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    let stranger = h.app.key("globex").await;

    let (status, body) = ping(&h, &stranger, id).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "not_found", "{body}");
    let (status, _) = ping(&h, &h.key, Uuid::new_v4()).await;
    assert_eq!(status, 404);
    let path = format!("{WEBHOOKS}/not-a-uuid/test");
    let (status, _) = call(&h.app, &h.key, reqwest::Method::POST, &path).await;
    assert_eq!(status, 400);

    disable(&h.app, &h.key, id).await;
    let (status, body) = ping(&h, &h.key, id).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "subscription_disabled", "{body}");

    assert!(h.receiver.take().is_empty(), "nothing sent");
}

#[tokio::test]
async fn pings_count_against_the_per_minute_rate_limit() {
    let mut h = Hooks::start_with_settings(Settings {
        webhooks: dev_config(),
        limits: Limits {
            rate_per_minute: 3,
            ..Limits::default()
        },
        ..Settings::default()
    })
    .await;
    // The creation is one request of the three.
    let (id, _) = h.subscribe().await;
    for _ in 0..2 {
        let (status, body) = ping(&h, &h.key, id).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = ping(&h, &h.key, id).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "rate_limited", "{body}");
    assert_eq!(h.receiver.take().len(), 2, "the refused ping is not sent");
}

#[tokio::test]
async fn cli_pings_a_subscription() {
    let mut h = Hooks::start().await;
    let (id, secret) = h.subscribe().await;
    let id = id.to_string();
    let with_switch = ["webhooks", "test", &id, "--webhook-allow-insecure-targets"];

    let out = vitrina_alongside(h.app.db_url(), &with_switch).await;
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    assert!(
        printed.contains("delivered") && printed.contains("HTTP 200"),
        "{printed}"
    );
    let request = h.receiver.take_one();
    assert_eq!(request.header("x-vitrina-event"), "ping");
    verify(
        &secret,
        request.header("x-vitrina-signature"),
        &request.body,
    );

    // The switch logs its warning first, then the one error line.
    h.receiver.script([Reply::Status(500)]);
    let out = vitrina_alongside(h.app.db_url(), &with_switch).await;
    assert!(!out.status.success());
    let complaint = stderr(&out);
    let last = complaint.trim().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: the ping ")
            && last.contains("not delivered: the receiver answered HTTP 500"),
        "{complaint}"
    );
    assert!(!complaint.contains("panicked"), "{complaint}");
    h.receiver.take_one();

    // Without the switch the loopback target is refused, as on a server.
    let out = vitrina_alongside(h.app.db_url(), &["webhooks", "test", &id]).await;
    assert_clean_failure(&out, "not delivered: not sent");
    assert!(h.receiver.take().is_empty());

    let out = vitrina_alongside(
        h.app.db_url(),
        &["webhooks", "test", &Uuid::new_v4().to_string()],
    )
    .await;
    assert_clean_failure(&out, "no such webhook subscription");
}
