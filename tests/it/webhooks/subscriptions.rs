//! Subscriptions through the extension API and the CLI: the public HTTPS
//! targets they may name (checked again at delivery), the secret shown
//! once, the cap of five, disabling, tenancy and bad requests.

use chrono::TimeDelta;
use entity::{DeliveryStatus, SubscriptionStatus};
use serde_json::{Value, json};
use vitrina::config::WebhookConfig;

use super::{Hooks, WEBHOOKS, call, create, dev_config, disable};
use crate::fixtures::insert_subscription;
use crate::helpers::TestApp;
use crate::helpers::receiver::ConnectionCounter;

// ---------------------------------------------------------------- target checks

#[tokio::test]
async fn delivery_rechecks_the_target_and_never_dials_a_refused_one() {
    let h = Hooks::start_with(WebhookConfig {
        targets: vitrina::config::WebhookTargets {
            webhook_allow_insecure_targets: false,
        },
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
        insert_subscription(
            &h.app.db,
            h.account_id,
            &url,
            SubscriptionStatus::Active,
            h.now(),
        )
        .await;
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
    use crate::helpers::cli::{assert_clean_failure, stdout, vitrina};
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
