//! Webhook target URLs are at most 2,048 characters, as sent and as stored
//! (parsed, which percent-encodes): longer ones are refused wherever a
//! subscription is made, the limit and the measured length named, and
//! nothing is stored.

use entity::webhook_subscription;
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};
use vitrina::webhooks::subscriptions::MAX_TARGET_URL;

use crate::helpers::cli::{assert_clean_failure, vitrina};
use crate::helpers::{TestApp, loopback_webhooks};

/// A URL of `len` characters (`fill` repeated after the host).
fn url_of(len: usize, fill: char) -> String {
    let head = "http://127.0.0.1:9/";
    let mut url = head.to_owned();
    url.extend(std::iter::repeat_n(fill, len - head.chars().count()));
    url
}

async fn create(app: &TestApp, key: &str, url: &str) -> (u16, Value) {
    let response = app
        .post_as(key, "/extension/v1/webhooks", &json!({ "url": url }))
        .await;
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn subscriptions(app: &TestApp) -> u64 {
    webhook_subscription::Entity::find()
        .count(&app.db)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_target_url_over_2048_characters_is_refused_naming_the_limit_and_its_length() {
    // The development switch lets loopback targets through, so that only
    // the length decides.
    let app = TestApp::spawn_with_settings(loopback_webhooks()).await;
    let key = app.key("acme").await;
    let limit = MAX_TARGET_URL;
    assert_eq!(limit, 2048);

    for (len, fill) in [(1 << 20, 'a'), (limit + 1, 'a'), (limit + 1, 'я')] {
        let (status, body) = create(&app, &key, &url_of(len, fill)).await;
        assert_eq!(status, 400, "{len}");
        assert_eq!(body["error"]["code"], "invalid_parameter");
        assert_eq!(
            body["error"]["message"],
            format!("the url is {len} characters long; a webhook target URL is at most {limit}.")
        );
    }
    // Short enough as sent, too long as stored: each letter is percent-encoded.
    let cyrillic = url_of(limit / 2, 'я');
    let (status, body) = create(&app, &key, &cyrillic).await;
    assert_eq!(status, 400);
    let stored = url::Url::parse(&cyrillic).unwrap().to_string().len();
    assert_eq!(
        body["error"]["message"],
        format!(
            "the url is {stored} characters long once normalized; \
             a webhook target URL is at most {limit}."
        )
    );
    assert_eq!(subscriptions(&app).await, 0);

    let exact = url_of(limit, 'a');
    let (status, body) = create(&app, &key, &exact).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["url"], exact);
    let listed: Value = app.json_as(&key, "/extension/v1/webhooks").await;
    assert_eq!(listed["data"][0]["url"], exact);

    // The operator's command stores one too, and refuses the same.
    let out = vitrina(
        app.db_url(),
        &[
            "webhooks",
            "create",
            "--account",
            "acme",
            "--url",
            &url_of(limit + 1, 'a'),
            "--webhook-allow-insecure-targets",
        ],
    );
    assert_clean_failure(&out, &format!("the url is {} characters long", limit + 1));
    assert_eq!(subscriptions(&app).await, 1);

    // The document says so.
    let doc = app.json_as(&key, "/extension/v1/openapi.json").await;
    assert_eq!(
        doc["components"]["schemas"]["CreateBody"]["properties"]["url"]["maxLength"],
        limit
    );
}
