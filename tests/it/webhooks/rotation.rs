//! Secret rotation: the new secret shown once, deliveries signed with the
//! new and the old secret during the overlap (new first), then with the new
//! one only; tenancy; the CLI; and Stripe's own library accepting a rotated
//! delivery with either secret.

use std::io::Write;
use std::process::{Command, Stdio};

use chrono::TimeDelta;
use serde_json::Value;
use uuid::Uuid;
use vitrina::config::WebhookConfig;

use super::{Hooks, WEBHOOKS, call, dev_config, verify};
use crate::helpers::receiver::Received;

async fn rotate(h: &Hooks, key: &str, id: Uuid) -> (u16, Value) {
    call(
        &h.app,
        key,
        reqwest::Method::POST,
        &format!("{WEBHOOKS}/{id}/rotate-secret"),
    )
    .await
}

/// The `t` and every `v1` of a signature header, in order.
fn parts(header: &str) -> (String, Vec<String>) {
    let mut fields = header.split(',');
    let t = fields
        .next()
        .and_then(|t| t.strip_prefix("t="))
        .unwrap_or_else(|| panic!("no t in {header:?}"))
        .to_owned();
    let v1 = fields
        .map(|f| {
            f.strip_prefix("v1=")
                .unwrap_or_else(|| panic!("unexpected {f:?} in {header:?}"))
                .to_owned()
        })
        .collect();
    (t, v1)
}

/// Asserts the delivery carries one `v1` per secret, in this order, each
/// verifying with its secret and not with the others.
pub(super) fn assert_signed_with(received: &Received, secrets: &[&str]) {
    let header = received.header("x-vitrina-signature");
    let (t, signatures) = parts(header);
    assert_eq!(signatures.len(), secrets.len(), "{header}");
    for (signature, secret) in signatures.iter().zip(secrets) {
        verify(secret, &format!("t={t},v1={signature}"), &received.body);
    }
    if let [new, old] = signatures.as_slice() {
        assert_ne!(new, old, "two different secrets");
    }
}

/// Subscribes, then rotates through the API: (id, old secret, new secret).
pub(super) async fn subscribe_and_rotate(h: &Hooks) -> (Uuid, String, String) {
    let (id, old) = h.subscribe().await;
    let (status, body) = rotate(h, &h.key, id).await;
    assert_eq!(status, 200, "{body}");
    let new = body["data"]["secret"]
        .as_str()
        .expect("new secret")
        .to_owned();
    (id, old, new)
}

#[tokio::test]
async fn rotation_returns_a_new_secret_once() {
    let h = Hooks::start().await;
    let (id, old) = h.subscribe().await;

    let (status, body) = rotate(&h, &h.key, id).await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    let new = data["secret"].as_str().unwrap();
    assert!(new.starts_with("whsec_") && new != old, "{body}");
    assert_eq!(data["id"], id.to_string());
    assert_eq!(data["status"], "active");
    let expires: chrono::DateTime<chrono::Utc> = data["previous_secret_expires_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        expires,
        h.now() + TimeDelta::hours(24),
        "the default overlap"
    );

    // Listing and the delivery log never show either secret.
    for path in [WEBHOOKS.to_owned(), format!("{WEBHOOKS}/{id}/deliveries")] {
        let (status, listed) = call(&h.app, &h.key, reqwest::Method::GET, &path).await;
        assert_eq!(status, 200, "{listed}");
        let text = listed.to_string();
        assert!(!text.contains(new) && !text.contains(&old), "{text}");
        assert!(!text.contains("whsec_"), "{text}");
    }

    // Each rotation makes yet another secret.
    let (_, again) = rotate(&h, &h.key, id).await;
    let newer = again["data"]["secret"].as_str().unwrap();
    assert!(newer != new && newer != old);
}

/// Rotates, then checks deliveries right after, a second before the end
/// of an overlap of `hours`, and at its end.
async fn assert_overlap_of(mut h: Hooks, hours: i64) {
    let (_, old, new) = subscribe_and_rotate(&h).await;
    let delivered = async |h: &mut Hooks, secrets: &[&str]| {
        h.complete_session().await;
        h.deliver().await;
        assert_signed_with(&h.receiver.take_one(), secrets);
    };
    delivered(&mut h, &[&new, &old]).await;
    h.advance(TimeDelta::hours(hours) - TimeDelta::seconds(1));
    delivered(&mut h, &[&new, &old]).await;
    h.advance(TimeDelta::seconds(1));
    delivered(&mut h, &[&new]).await;
}

#[tokio::test]
async fn deliveries_carry_both_signatures_during_the_overlap_then_only_the_new() {
    assert_overlap_of(Hooks::start().await, 24).await;
}

#[tokio::test]
async fn the_overlap_is_configurable() {
    let config = WebhookConfig {
        rotation: vitrina::config::WebhookRotation {
            webhook_secret_overlap_hours: 2,
        },
        ..dev_config()
    };
    assert_overlap_of(Hooks::start_with(config).await, 2).await;
}

#[tokio::test]
async fn rotating_again_keeps_only_the_secret_just_replaced() {
    let mut h = Hooks::start().await;
    let (id, _first, second) = subscribe_and_rotate(&h).await;
    let (_, body) = rotate(&h, &h.key, id).await;
    let third = body["data"]["secret"].as_str().unwrap().to_owned();

    h.complete_session().await;
    h.deliver().await;
    assert_signed_with(&h.receiver.take_one(), &[&third, &second]);
}

#[tokio::test]
async fn concurrent_rotations_chain_instead_of_losing_one() {
    let h = Hooks::start().await;
    let (id, _) = h.subscribe().await;
    let ((a_status, a), (b_status, b)) =
        tokio::join!(rotate(&h, &h.key, id), rotate(&h, &h.key, id));
    assert_eq!((a_status, b_status), (200, 200), "{a} {b}");
    let returned = [
        a["data"]["secret"].as_str().unwrap(),
        b["data"]["secret"].as_str().unwrap(),
    ];

    // The later rotation replaced the earlier one's secret, which therefore
    // still signs during the overlap: neither caller holds a dead secret.
    let stored = h.subscription(id).await;
    let previous = stored.previous_secret.expect("a previous secret");
    let mut chained = [stored.secret.as_str(), previous.as_str()];
    chained.sort_unstable();
    let mut returned = returned;
    returned.sort_unstable();
    assert_eq!(chained, returned);
}

#[tokio::test]
async fn another_accounts_webhook_is_not_found() {
    let h = Hooks::start().await;
    let (id, secret) = h.subscribe().await;
    let other = h.app.key("globex").await;

    let (status, body) = rotate(&h, &other, id).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "not_found", "{body}");
    let (status, _) = rotate(&h, &h.key, Uuid::new_v4()).await;
    assert_eq!(status, 404);
    let (status, _) = call(
        &h.app,
        &h.key,
        reqwest::Method::POST,
        &format!("{WEBHOOKS}/not-a-uuid/rotate-secret"),
    )
    .await;
    assert_eq!(status, 400);

    let unchanged = h.subscription(id).await;
    assert_eq!(unchanged.secret, secret);
    assert_eq!(unchanged.previous_secret, None);
}

#[tokio::test]
async fn cli_rotates_a_secret() {
    use crate::helpers::cli::{assert_clean_failure, create_loopback_webhook, stdout, vitrina};
    use entity::webhook_subscription;
    use sea_orm::EntityTrait;

    let db = crate::helpers::TestDb::new().await;
    let conn = db.connect().await;
    assert!(
        vitrina(&db.url, &["keys", "create", "--account", "acme"])
            .status
            .success()
    );
    let out = create_loopback_webhook(&db.url, "acme");
    assert!(out.status.success(), "{out:?}");
    let id: Uuid = stdout(&out)
        .split_whitespace()
        .nth(3)
        .expect("id printed")
        .parse()
        .unwrap();
    let old = webhook_subscription::Entity::find_by_id(id)
        .one(&conn)
        .await
        .unwrap()
        .unwrap()
        .secret;

    let before = chrono::Utc::now();
    let out = vitrina(
        &db.url,
        &[
            "webhooks",
            "rotate-secret",
            &id.to_string(),
            "--webhook-secret-overlap-hours",
            "3",
        ],
    );
    let after = chrono::Utc::now();
    assert!(out.status.success(), "{out:?}");
    let printed = stdout(&out);
    let new = printed
        .lines()
        .find(|l| l.starts_with("whsec_"))
        .expect("new secret printed");

    let rotated = webhook_subscription::Entity::find_by_id(id)
        .one(&conn)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rotated.secret, new);
    assert_ne!(new, old);
    assert_eq!(rotated.previous_secret.as_deref(), Some(old.as_str()));
    let expires = rotated.previous_secret_expires_at.expect("an overlap");
    let overlap = TimeDelta::hours(3);
    assert!(
        before + overlap <= expires && expires <= after + overlap,
        "{expires}"
    );
    assert!(!printed.contains(&old), "{printed}");

    assert_clean_failure(
        &vitrina(
            &db.url,
            &["webhooks", "rotate-secret", &Uuid::new_v4().to_string()],
        ),
        "no such webhook subscription",
    );
}

// ---------------------------------------------------------------- Stripe

/// The interpreter with the `stripe` package: `VITRINA_TEST_PYTHON`, else
/// `python3` (`.ci/run` makes a virtualenv and sets the variable).
fn python() -> String {
    std::env::var("VITRINA_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Runs `stripe.Webhook.construct_event` over the body and header with the
/// secret: Ok if Stripe's library accepts the delivery, else its complaint.
fn stripe_verifies(body: &[u8], header: &str, secret: &str) -> Result<(), String> {
    // No timestamp tolerance: the test clock is not the wall clock, and
    // replay protection is the receiver's choice.
    const SCRIPT: &str = "import sys, stripe\n\
        stripe.Webhook.construct_event(sys.stdin.buffer.read(), sys.argv[1], sys.argv[2], tolerance=None)\n";
    let mut child = Command::new(python())
        .args(["-c", SCRIPT, header, secret])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): install Python 3 with the `stripe` package \
                 (see .ci/run) and set VITRINA_TEST_PYTHON",
                python()
            )
        });
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("No module named 'stripe'"),
        "{} has no `stripe` package: install it (see .ci/run) and set VITRINA_TEST_PYTHON",
        python()
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(stderr)
    }
}

// Needs Python with Stripe's library, which `cargo test` cannot install
// (tests reach loopback only): `.ci/run` makes it and runs this by name.
#[tokio::test]
#[ignore = "needs Python with the stripe package: see docs/contributing.md, Tests"]
async fn stripes_library_accepts_a_rotated_delivery_with_either_secret() {
    let mut h = Hooks::start().await;
    let (_, old, new) = subscribe_and_rotate(&h).await;
    h.complete_session().await;
    h.deliver().await;
    let received = h.receiver.take_one();
    let header = received.header("x-vitrina-signature");
    assert_eq!(parts(header).1.len(), 2, "{header}");

    stripe_verifies(&received.body, header, &new).expect("the new secret verifies");
    stripe_verifies(&received.body, header, &old).expect("the old secret verifies");
    let refused = stripe_verifies(&received.body, header, "whsec_neither").unwrap_err();
    assert!(refused.contains("SignatureVerificationError"), "{refused}");
}
