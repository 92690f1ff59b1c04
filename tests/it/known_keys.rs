//! Keys admitted lately are served from memory (no lookup statement), and
//! a key revoked in the database, as the CLI or another replica does it,
//! is still refused within a second on every replica.

use std::time::{Duration, Instant};

use vitrina::clock::Clock;
use vitrina::config::Settings;

use crate::helpers::{TestApp, eventually, test_limits};
use crate::rest_access::expect_unauthorized;

/// A request with `key`, to the app or one of its replicas.
async fn get(app: &TestApp, base: &str, key: &str) -> reqwest::Response {
    let request = app.client.get(format!("{base}/v1/rate_limit"));
    request.bearer_auth(key).send().await.unwrap()
}

/// The status of a request with `key`, to the app or one of its replicas.
async fn status(app: &TestApp, base: &str, key: &str) -> u16 {
    get(app, base, key).await.status().as_u16()
}

/// Sends requests until one is served from memory (the first revocation
/// poll has run), at most for two polls' time.
async fn remembered(app: &TestApp, base: &str, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let from = app.key_lookups();
        assert_eq!(status(app, base, key).await, 200);
        if app.key_lookups() == from {
            return;
        }
        assert!(Instant::now() < deadline, "the key is never remembered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_key_in_use_is_looked_up_once_and_an_unknown_key_every_time() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let base = app.url("");
    assert_eq!(status(&app, &base, &key).await, 200);
    assert_eq!(app.key_lookups(), 1, "the first request looks it up");
    remembered(&app, &base, &key).await;
    let from = app.key_lookups();
    for _ in 0..20 {
        assert_eq!(status(&app, &base, &key).await, 200);
    }
    assert_eq!(app.key_lookups() - from, 0, "twenty requests, no lookup");

    let unknown = "vtr_0123456789abcdef0123456789abcdef0123456789abcdef";
    let from = app.key_lookups();
    for _ in 0..3 {
        assert_eq!(status(&app, &base, unknown).await, 401);
    }
    assert_eq!(
        app.key_lookups() - from,
        3,
        "an unknown key is never remembered"
    );
}

#[tokio::test]
async fn with_no_keys_remembered_every_request_looks_its_key_up() {
    let mut settings = Settings {
        limits: test_limits(),
        ..Settings::default()
    };
    settings.http.key_cache_entries = 0;
    let app = TestApp::spawn_with_settings(settings).await;
    let key = app.key("acme").await;
    let base = app.url("");
    tokio::time::sleep(vitrina::state::known_keys::FRESH).await;
    let from = app.key_lookups();
    for _ in 0..5 {
        assert_eq!(status(&app, &base, &key).await, 200);
    }
    assert_eq!(app.key_lookups() - from, 5);
}

#[tokio::test]
async fn a_revoked_key_is_refused_within_a_second_on_every_replica() {
    let app = TestApp::spawn().await;
    let replica = format!("http://{}", app.replica(Settings::default()).await);
    let new = vitrina::accounts::create_key(&app.db, "acme", app.clock.now())
        .await
        .unwrap();
    let bases = [app.url(""), replica];
    for base in &bases {
        remembered(&app, base, &new.secret).await;
    }
    vitrina::accounts::revoke_key(&app.db, new.key.id, app.clock.now())
        .await
        .unwrap();
    eventually(
        Duration::from_secs(1),
        Duration::from_millis(20),
        || async {
            for base in &bases {
                if status(&app, base, &new.secret).await != 401 {
                    return Err(format!("{base} still admits it"));
                }
            }
            Ok(())
        },
    )
    .await;
    // Refused as every unknown key is, with nothing to tell them apart.
    for base in &bases {
        expect_unauthorized(get(&app, base, &new.secret).await).await;
    }
}
