//! `subscription { priceChanged }` (issue 29, item 7): a merge that moves a
//! product's lowest current price reaches each subscriber whose filter
//! matches the product and whose `minChangePercent` the move reaches, with
//! the prices before and after; on both WebSocket protocols, and from a
//! worker to a subscriber on another replica (PostgreSQL).

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::SinkExt;
use sea_orm::DbBackend;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use vitrina::state::AppState;

use crate::helpers::TestApp;
use crate::helpers::uploads::{priced, send_and_merge};
use crate::ws::{Socket, init, next, open_speaking};

const FIELDS: &str = "currency before after changePercent changedAt product { id brand }";

/// Waits until `state` has `count` subscribers: a subscription is in
/// place once its resolver ran, after its `subscribe` message arrived.
async fn subscribed(state: &AppState, count: usize) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while state.events.subscribers() < count {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the subscriptions are in place");
}

/// Subscribes under `id` with `args`, in graphql-transport-ws.
async fn subscribe(socket: &mut Socket, id: &str, args: &str) {
    let query = format!("subscription {{ priceChanged{args} {{ {FIELDS} }} }}");
    let message = json!({ "id": id, "type": "subscribe", "payload": { "query": query } });
    socket
        .send(Message::text(message.to_string()))
        .await
        .unwrap();
}

/// The next `count` moves pushed on `socket`, by subscription id.
async fn moves(socket: &mut Socket, count: usize) -> BTreeMap<String, Vec<Value>> {
    let mut by_id: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for _ in 0..count {
        let Some(message) = next(socket).await else {
            panic!("a move after {by_id:#?}");
        };
        assert_eq!(message["type"], "next", "{message}");
        let id = message["id"].as_str().unwrap().to_owned();
        let price = message["payload"]["data"]["priceChanged"].clone();
        by_id.entry(id).or_default().push(price);
    }
    by_id
}

#[tokio::test]
async fn a_move_reaches_the_subscribers_whose_filter_and_threshold_it_meets() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send_and_merge(
        &app,
        &key,
        vec![priced("1", "Redmond", 1000.0), priced("2", "Bosch", 1000.0)],
    )
    .await;

    let mut socket = open_speaking(app.addr, "graphql-transport-ws").await;
    init(&mut socket, &key).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
    let before = app.state.events.subscribers();
    subscribe(&mut socket, "all", "").await;
    subscribe(&mut socket, "bosch", "(filter: { brand: \"bosch\" })").await;
    subscribe(&mut socket, "big", "(minChangePercent: 50)").await;
    subscribe(&mut socket, "kzt", "(filter: { currency: \"KZT\" })").await;
    subscribed(&app.state, before + 4).await;

    // -10% for Redmond, then -60% for Bosch (merged, flagged as a jump).
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 900.0)]).await;
    send_and_merge(&app, &key, vec![priced("2", "Bosch", 400.0)]).await;
    // An upload that repeats the price moves nothing.
    send_and_merge(&app, &key, vec![priced("2", "Bosch", 400.0)]).await;
    let got = moves(&mut socket, 4).await;

    let redmond = &got["all"][0];
    assert_eq!(redmond["product"]["brand"], "Redmond");
    assert_eq!(
        (&redmond["currency"], &redmond["before"], &redmond["after"]),
        (&json!("RUB"), &json!(1000.0), &json!(900.0))
    );
    assert_eq!(redmond["changePercent"], -10.0);
    assert!(redmond["changedAt"].is_string());
    assert_eq!(got["all"].len(), 2, "{got:#?}");
    assert_eq!(got["all"][1]["product"]["brand"], "Bosch");
    assert_eq!(got["all"][1]["changePercent"], -60.0);
    // The first move each of these receives is Bosch's: Redmond's passed them by.
    assert_eq!(got["bosch"].len(), 1, "{got:#?}");
    assert_eq!(got["bosch"][0]["product"]["brand"], "Bosch");
    assert_eq!(got["big"].len(), 1, "{got:#?}");
    assert_eq!(got["big"][0]["product"]["brand"], "Bosch");
    assert!(!got.contains_key("kzt"), "{got:#?}");

    // Nothing more came for the repeated price: the next move is a new one.
    send_and_merge(&app, &key, vec![priced("2", "Bosch", 800.0)]).await;
    let got = moves(&mut socket, 3).await;
    let keys: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(keys, ["all", "big", "bosch"], "{got:#?}");
    assert_eq!(got["all"][0]["before"], 400.0);
    assert_eq!(got["all"][0]["after"], 800.0);
}

#[tokio::test]
async fn the_older_websocket_protocol_receives_moves_too() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 1000.0)]).await;
    let mut socket = open_speaking(app.addr, "graphql-ws").await;
    init(&mut socket, &key).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
    let before = app.state.events.subscribers();
    let query = format!("subscription {{ priceChanged {{ {FIELDS} }} }}");
    let start = json!({ "id": "1", "type": "start", "payload": { "query": query } });
    socket.send(Message::text(start.to_string())).await.unwrap();
    subscribed(&app.state, before + 1).await;
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 1100.0)]).await;
    let message = next(&mut socket).await.expect("a move");
    assert_eq!(message["type"], "data", "{message}");
    assert_eq!(message["payload"]["data"]["priceChanged"]["after"], 1100.0);
}

#[tokio::test]
async fn a_move_merged_by_one_replica_reaches_a_subscriber_of_another() {
    let app = TestApp::spawn().await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        // SQLite is one process: there is no other replica to reach.
        return;
    }
    let key = app.key("acme").await;
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 1000.0)]).await;
    let (addr, replica) = app.replica_with_state(app.state.settings.clone()).await;
    replica.events.ready().await;
    let mut socket = open_speaking(addr, "graphql-transport-ws").await;
    init(&mut socket, &key).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
    let before = replica.events.subscribers();
    subscribe(&mut socket, "1", "(filter: { brand: \"redmond\" })").await;
    subscribed(&replica, before + 1).await;
    send_and_merge(&app, &key, vec![priced("1", "Redmond", 950.0)]).await;
    let got = moves(&mut socket, 1).await;
    assert_eq!(got["1"][0]["before"], 1000.0);
    assert_eq!(got["1"][0]["after"], 950.0);
}
