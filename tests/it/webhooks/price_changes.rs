//! `product.price_changed` webhooks (issue 29, item 8): a subscription
//! chooses its events and a price filter; a merge that moves a product's
//! lowest price writes a signed delivery for each subscription, of any
//! account, whose filter picks the move, and subscribers of session
//! completions alone see nothing new.

use std::collections::BTreeMap;

use entity::webhook_delivery;
use sea_orm::{EntityTrait, QuerySelect};
use serde_json::{Value, json};

use super::{Hooks, WEBHOOKS, call, create, verify};
use crate::helpers::migrate_down_through;
use crate::helpers::uploads::{item, send, with};

/// `item(id)` of `brand`, priced `price` RUB.
fn priced(id: &str, brand: &str, price: f64) -> Value {
    let priced = with(item(id), &["prices", "0", "price"], json!(price));
    with(priced, &["brand"], json!(brand))
}

/// Subscribes the receiver's `path` as `key` with `extra` fields; the secret.
async fn subscribe(h: &Hooks, key: &str, path: &str, extra: Value) -> String {
    let mut body = json!({ "url": h.receiver.hook(path) });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, created) = create(&h.app, key, body).await;
    assert_eq!(status, 201, "{created}");
    created["data"]["secret"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_price_move_is_delivered_signed_to_each_subscription_whose_filter_picks_it() {
    let mut h = Hooks::start().await;
    let key = h.key.clone();
    send(
        &h.app,
        &key,
        vec![priced("1", "Redmond", 1000.0), priced("2", "Bosch", 1000.0)],
    )
    .await;
    h.app.jobs().tick().await.expect("first merge");

    let prices = json!({ "events": ["product.price_changed"] });
    let secret = subscribe(&h, &key, "/all", prices.clone()).await;
    let bosch = json!({ "events": ["product.price_changed"], "filter": { "brands": ["BOSCH"] } });
    subscribe(&h, &key, "/bosch", bosch).await;
    let big =
        json!({ "events": ["product.price_changed"], "filter": { "min_change_percent": 50 } });
    subscribe(&h, &key, "/big", big).await;
    let wb = json!({ "events": ["product.price_changed"], "filter": { "marketplaces": ["wildberries"] } });
    subscribe(&h, &key, "/wildberries", wb).await;
    subscribe(&h, &key, "/sessions", json!({})).await;
    let other = h.app.key("other").await;
    let both = json!({ "events": ["scrape_session.completed", "product.price_changed"] });
    subscribe(&h, &other, "/other", both).await;

    // -10% for Redmond, -60% for Bosch, in one upload.
    let session = send(
        &h.app,
        &key,
        vec![priced("1", "Redmond", 900.0), priced("2", "Bosch", 400.0)],
    )
    .await;
    h.app.jobs().tick().await.expect("merge and deliver");
    let mut by_path: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for received in h.receiver.take() {
        let event = received.header("x-vitrina-event").to_owned();
        let mut body: Value = serde_json::from_slice(&received.body).unwrap();
        assert_eq!(body["event"], event.as_str());
        if received.path == "/all" {
            verify(
                &secret,
                received.header("x-vitrina-signature"),
                &received.body,
            );
        }
        body["path"] = json!(received.path);
        by_path.entry(received.path.clone()).or_default().push(body);
    }
    let brands = |path: &str| -> Vec<String> {
        let mut brands: Vec<String> = by_path
            .get(path)
            .into_iter()
            .flatten()
            .map(|b| {
                format!(
                    "{} {}",
                    b["event"].as_str().unwrap(),
                    b["brand"].as_str().unwrap_or("-")
                )
            })
            .collect();
        brands.sort();
        brands
    };
    let moved = [
        "product.price_changed Bosch",
        "product.price_changed Redmond",
    ];
    assert_eq!(brands("/all"), moved, "{by_path:#?}");
    assert_eq!(brands("/bosch"), ["product.price_changed Bosch"]);
    assert_eq!(brands("/big"), ["product.price_changed Bosch"]);
    assert!(brands("/wildberries").is_empty(), "the items are ozon's");
    // Another account's subscription hears of the move, not of the session.
    assert_eq!(brands("/other"), moved);
    assert_eq!(brands("/sessions"), ["scrape_session.completed -"]);

    let redmond = by_path["/all"]
        .iter()
        .find(|b| b["brand"] == "Redmond")
        .unwrap();
    assert_eq!(redmond["currency"], "RUB");
    assert_eq!(
        (&redmond["before"], &redmond["after"]),
        (&json!(1000.0), &json!(900.0))
    );
    assert_eq!(redmond["change_percent"], -10.0);
    assert_eq!(redmond["marketplace"], "ozon");
    assert_eq!(redmond["external_id"], "1");
    let url = redmond["url"].as_str().unwrap();
    assert!(url.ends_with(&format!(
        "/v1/products/{}",
        redmond["product_id"].as_str().unwrap()
    )));
    assert!(redmond["changed_at"].is_string());

    // The delivery log shows them as any delivery, with their session.
    let subscriptions = call(&h.app, &key, reqwest::Method::GET, WEBHOOKS).await.1;
    let all = subscriptions["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["url"].as_str().unwrap().ends_with("/all"))
        .unwrap()
        .clone();
    let path = format!("{WEBHOOKS}/{}/deliveries", all["id"].as_str().unwrap());
    let log = call(&h.app, &key, reqwest::Method::GET, &path).await.1;
    let deliveries = log["data"].as_array().unwrap();
    assert_eq!(deliveries.len(), 2, "{log}");
    for delivery in deliveries {
        assert_eq!(delivery["event"], "product.price_changed");
        assert_eq!(delivery["status"], "succeeded");
        assert_eq!(delivery["scrape_session_id"], session.to_string());
    }

    // Migrated down, the price deliveries go (the unique index of one per
    // subscription, session and event comes back) and the completions stay.
    // (Up again is `foundation.rs`'s, on a database no server is reading.)
    migrate_down_through(&h.app.db, "m20261203_000028_price_webhooks").await;
    let events: Vec<String> = webhook_delivery::Entity::find()
        .select_only()
        .column(webhook_delivery::Column::Event)
        .into_tuple()
        .all(&h.app.db)
        .await
        .unwrap();
    assert_eq!(events, ["scrape_session.completed"]);
}

#[tokio::test]
async fn events_and_filter_are_checked_and_shown_with_the_subscription() {
    let h = Hooks::start().await;
    let url = h.receiver.hook("/hook");
    let (status, created) = create(&h.app, &h.key, json!({ "url": url })).await;
    assert_eq!(status, 201);
    assert_eq!(
        created["data"]["events"],
        json!(["scrape_session.completed"])
    );
    assert_eq!(created["data"]["filter"], Value::Null);

    let filter = json!({ "brands": ["Bosch"], "product_ids": [], "marketplaces": ["ozon"],
                         "min_change_percent": 5.0 });
    let body = json!({ "url": url, "events": ["product.price_changed"], "filter": filter });
    let (status, created) = create(&h.app, &h.key, body).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["events"], json!(["product.price_changed"]));
    assert_eq!(created["data"]["filter"], filter);
    let listed = call(&h.app, &h.key, reqwest::Method::GET, WEBHOOKS).await.1;
    let shown: Vec<&Value> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["filter"])
        .collect();
    assert!(
        shown.contains(&&filter) && shown.contains(&&Value::Null),
        "{listed}"
    );

    let ids: Vec<String> = (0..501).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let brands: Vec<String> = (0..101).map(|i| format!("{i:0>2048}")).collect();
    let at_limits = json!({ "brands": brands[..100], "product_ids": ids[..500],
                            "marketplaces": [], "min_change_percent": 1e300 });
    let body = json!({ "url": url, "events": ["product.price_changed"], "filter": at_limits });
    let (status, created) = create(&h.app, &h.key, body).await;
    assert_eq!(
        status, 201,
        "the largest filter is taken: {}",
        created["error"]
    );
    assert_eq!(created["data"]["filter"], at_limits);
    for refused in [
        json!({ "events": ["product.price_changed"], "filter": { "brands": brands } }),
        json!({ "events": ["product.price_changed"],
                "filter": { "brands": [format!("{:0>2049}", 1)] } }),
        json!({ "events": [] }),
        json!({ "events": ["product.created"] }),
        json!({ "filter": { "brands": ["Bosch"] } }),
        json!({ "events": ["scrape_session.completed"], "filter": {} }),
        json!({ "events": ["product.price_changed"], "filter": { "product_ids": ids } }),
        json!({ "events": ["product.price_changed"], "filter": { "min_change_percent": -1 } }),
        json!({ "events": ["product.price_changed"], "filter": { "brands": [""] } }),
        json!({ "events": ["product.price_changed"], "filter": { "brands": ["a\u{0}"] } }),
    ] {
        let mut body = refused.clone();
        body["url"] = json!(url);
        let (status, answer) = create(&h.app, &h.key, body).await;
        assert_eq!(status, 400, "{refused}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_parameter", "{answer}");
    }
    // JSON has no NaN or infinity; a number past f64 is refused as it is read.
    let body = format!(
        r#"{{"url": "{url}", "events": ["product.price_changed"],
             "filter": {{"min_change_percent": 1e400}}}}"#
    );
    let response = (h.app.client.post(h.app.url(WEBHOOKS)))
        .bearer_auth(&h.key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400, "{}", response.text().await.unwrap());
}
