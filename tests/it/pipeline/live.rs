//! Session progress live: the `scrapeSessionUpdated` subscription over a
//! websocket, pushed as the merge pass moves, and validated, charged to the
//! quota and scoped to its account like any request over HTTP.
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::TestApp;
use crate::helpers::uploads::{item, send};
use crate::ws::{connect, next};

fn subscription(id: &str) -> Message {
    let query = format!(
        "subscription {{ scrapeSessionUpdated(id: \"{id}\") {{ status stats {{ pending merged }} }} }}"
    );
    Message::text(
        json!({ "id": "1", "type": "subscribe", "payload": { "query": query } }).to_string(),
    )
}

#[tokio::test]
async fn a_subscription_pushes_session_progress_as_the_merge_pass_moves_it() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1"), item("2")]).await;
    let mut socket = connect(&app, &key).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
    socket
        .send(subscription(&session.to_string()))
        .await
        .unwrap();
    let first = next(&mut socket).await.unwrap();
    assert_eq!(
        first["payload"]["data"]["scrapeSessionUpdated"],
        json!({ "status": "PROCESSING", "stats": { "pending": 2, "merged": 0 } })
    );
    // Its cost, as every response over HTTP reports it: five fields, three deep.
    let cost = json!({ "complexity": 5, "depth": 3 });
    assert_eq!(first["payload"]["extensions"]["analyzer"], cost, "{first}");

    app.jobs().tick().await.unwrap();
    let mut last = Value::Null;
    while last["stats"]["merged"] != 2 {
        let update = next(&mut socket)
            .await
            .expect("an update per merged submission");
        assert_eq!(
            update["payload"]["extensions"]["analyzer"], cost,
            "{update}"
        );
        last = update["payload"]["data"]["scrapeSessionUpdated"].clone();
    }
    assert_eq!(
        last,
        json!({ "status": "COMPLETED", "stats": { "pending": 0, "merged": 2 } })
    );
}

#[tokio::test]
async fn a_subscription_is_validated_in_full_like_any_request() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1")]).await;
    let mut socket = connect(&app, &key).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
    // An unused variable breaks a rule only full validation checks.
    let query = format!(
        "subscription($unused: Int) {{ scrapeSessionUpdated(id: \"{session}\") {{ status }} }}"
    );
    let subscribe = json!({ "id": "1", "type": "subscribe", "payload": { "query": query } });
    socket
        .send(Message::text(subscribe.to_string()))
        .await
        .unwrap();
    let reply = next(&mut socket).await.expect("a reply");
    let message = reply["payload"]["errors"][0]["message"].as_str();
    assert!(message.is_some_and(|m| m.contains("$unused")), "{reply}");
    assert!(reply["payload"]["data"].is_null(), "{reply}");
    // Coded as over HTTP.
    assert_eq!(
        reply["payload"]["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{reply}"
    );
}

#[tokio::test]
async fn session_products_read_over_the_websocket_are_charged_to_the_quota() {
    let app = TestApp::spawn_with(crate::helpers::daily_quota(3)).await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1"), item("2")]).await;
    app.jobs().tick().await.unwrap();
    let mut socket = connect(&app, &key).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
    let query = format!(
        "subscription {{ scrapeSessionUpdated(id: \"{session}\") {{ products {{ totalCount }} }} }}"
    );
    for (id, code) in [("1", None), ("2", Some("QUOTA_EXCEEDED"))] {
        let subscribe = json!({ "id": id, "type": "subscribe", "payload": { "query": query } });
        socket
            .send(Message::text(subscribe.to_string()))
            .await
            .unwrap();
        let reply = next(&mut socket).await.expect("the session now");
        // 2 merged products: charged for the first (2 of 3), refused for the second.
        let error = reply["payload"]["errors"][0]["extensions"]["code"].as_str();
        assert_eq!(error, code, "{reply}");
        // A refused response is refused whole, as over HTTP.
        assert_eq!(
            reply["payload"]["data"].is_null(),
            code.is_some(),
            "{reply}"
        );
    }
}

#[tokio::test]
async fn another_accounts_session_cannot_be_watched() {
    let app = TestApp::spawn().await;
    let (owner, stranger) = (app.key("owner").await, app.key("stranger").await);
    let session = send(&app, &owner, vec![item("1")]).await;
    let mut socket = connect(&app, &stranger).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
    socket
        .send(subscription(&session.to_string()))
        .await
        .unwrap();
    let reply = next(&mut socket).await.unwrap();
    assert_eq!(
        reply["payload"]["errors"][0]["extensions"]["code"], "NOT_FOUND",
        "{reply}"
    );
    assert!(reply["payload"]["data"].is_null());
}

#[tokio::test]
async fn a_connection_without_a_valid_key_is_refused() {
    let app = TestApp::spawn().await;
    let mut socket = connect(&app, "vtr_wrong").await;
    let reply = next(&mut socket).await;
    assert!(
        reply.as_ref().is_none_or(|m| m["type"] != "connection_ack"),
        "{reply:?}"
    );
}
