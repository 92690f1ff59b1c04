//! API key scopes and expiry: what each key may do, checked through both
//! OpenAPI documents, GraphQL over HTTP and WebSocket, and the migration
//! that gave every older key all three scopes.

use std::time::{Duration, Instant};

use chrono::TimeDelta;
use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use vitrina::accounts::{self, KeyTerms, Scope, Scopes};
use vitrina::clock::Clock;

use crate::helpers::graphql::post;
use crate::helpers::{TestApp, TestDb, header, migrate_down_through, test_limits};
use crate::ws;

/// A key of `account` on `terms`; its secret.
async fn key_on(app: &TestApp, account: &str, terms: KeyTerms) -> String {
    accounts::create_key_with(&app.db, account, terms, app.clock.now())
        .await
        .expect("create key")
        .secret
}

async fn key_with(app: &TestApp, scopes: &[Scope]) -> String {
    let terms = KeyTerms {
        scopes: Scopes::of(scopes),
        ..KeyTerms::default()
    };
    key_on(app, "acme", terms).await
}

/// Every operation of both documents that answers 401, with the scope its
/// 403 names (`None`: any key will do).
async fn keyed_operations(app: &TestApp) -> Vec<(Method, String, Option<Scope>)> {
    let mut operations = Vec::new();
    for (base, document) in [
        ("/v1", "/v1/openapi.json"),
        ("/extension/v1", "/extension/v1/openapi.json"),
    ] {
        let doc: Value = app.get(document).await.json().await.expect("document");
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("path item") {
                let responses = &operation["responses"];
                if responses.get("401").is_none() {
                    continue;
                }
                let scope = responses.get("403").map(|forbidden| {
                    let description = forbidden["description"].as_str().unwrap_or_default();
                    Scope::ALL
                        .into_iter()
                        .find(|s| description.contains(&format!("`{s}` scope")))
                        .unwrap_or_else(|| panic!("{method} {path}: 403 names no scope"))
                });
                // Any id will do: the key is checked before the route's work.
                let concrete = path
                    .split('/')
                    .map(|part| match part.starts_with('{') {
                        true => "3f1c7a2e-0000-4000-8000-000000000001",
                        false => part,
                    })
                    .collect::<Vec<_>>()
                    .join("/");
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
                operations.push((method, format!("{base}{concrete}"), scope));
            }
        }
    }
    operations
}

async fn ask(app: &TestApp, method: &Method, path: &str, key: &str) -> reqwest::Response {
    let request = app
        .client
        .request(method.clone(), app.url(path))
        .bearer_auth(key);
    let request = match *method == Method::POST {
        true => request.json(&json!({})),
        false => request,
    };
    request.send().await.expect("request")
}

#[tokio::test]
async fn every_documented_operation_refuses_a_key_without_its_scope_and_admits_one_with_it() {
    let app = TestApp::spawn().await;
    let operations = keyed_operations(&app).await;
    for scope in Scope::ALL {
        let others: Vec<Scope> = Scope::ALL.into_iter().filter(|s| *s != scope).collect();
        let (without, only) = (
            key_with(&app, &others).await,
            key_with(&app, &[scope]).await,
        );
        let needing: Vec<_> = operations
            .iter()
            .filter(|(_, _, s)| *s == Some(scope))
            .collect();
        assert!(!needing.is_empty(), "some operation needs {scope}");
        for (method, path, _) in needing {
            let refused = ask(&app, method, path, &without).await;
            let challenge = header(&refused, "www-authenticate").map(str::to_owned);
            let headers_of_rate = header(&refused, "x-ratelimit-remaining").map(str::to_owned);
            let (status, body): (u16, Value) =
                (refused.status().as_u16(), refused.json().await.unwrap());
            assert_eq!(status, 403, "{method} {path}: {body}");
            assert_eq!(
                body["error"]["code"], "insufficient_scope",
                "{method} {path}"
            );
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(&format!("{scope} scope")), "{message}");
            assert_eq!(
                challenge.as_deref(),
                Some(format!(r#"Bearer error="insufficient_scope", scope="{scope}""#).as_str()),
            );
            // Counted like any request of the account: the next has one less.
            let remaining: u32 = headers_of_rate.expect("rate headers").parse().unwrap();
            let admitted = ask(&app, method, path, &only).await;
            let after = header(&admitted, "x-ratelimit-remaining").map(str::to_owned);
            assert_eq!(after, Some((remaining - 1).to_string()), "{method} {path}");
            let admitted = admitted.status();
            assert!(
                ![401, 403].contains(&admitted.as_u16()),
                "{method} {path}: {admitted}"
            );
        }
    }
    // The rate-limit standing reports on any key's own account.
    let uploader = key_with(&app, &[Scope::Upload]).await;
    let free: Vec<_> = operations.iter().filter(|(_, _, s)| s.is_none()).collect();
    assert_eq!(free.len(), 1, "{free:?}");
    assert_eq!(
        ask(&app, &free[0].0, &free[0].1, &uploader).await.status(),
        200
    );
}

#[tokio::test]
async fn graphql_needs_the_read_scope_over_http_and_websocket() {
    let app = TestApp::spawn().await;
    let uploader = key_with(&app, &[Scope::Upload, Scope::Webhooks]).await;
    let (status, body) = post(&app, Some(&uploader), "{ __typename }", json!({})).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "INSUFFICIENT_SCOPE",
        "{body}"
    );
    assert!(body.get("data").is_none_or(Value::is_null), "{body}");

    let reader = key_with(&app, &[Scope::Read]).await;
    let (status, body) = post(&app, Some(&reader), "{ __typename }", json!({})).await;
    assert_eq!(
        (status, &body["data"]["__typename"]),
        (200, &json!("QueryRoot")),
        "{body}"
    );

    let mut refused = ws::connect(&app, &uploader).await;
    let close = closing_frame(&mut refused).await;
    assert!(close.reason.contains("read scope"), "{close:?}");
    let mut admitted = ws::connect(&app, &reader).await;
    assert_eq!(
        ws::next(&mut admitted).await.unwrap()["type"],
        "connection_ack"
    );
}

#[tokio::test]
async fn an_expired_key_is_refused_saying_so_even_while_remembered() {
    let app = TestApp::spawn().await;
    let expires_at = app.clock.now() + TimeDelta::seconds(30);
    let terms = KeyTerms {
        expires_at: Some(expires_at),
        ..KeyTerms::default()
    };
    let key = key_on(&app, "acme", terms).await;
    assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 200);
    let lookups = app.key_lookups();
    assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 200);
    assert_eq!(app.key_lookups(), lookups, "the key is served from memory");

    app.clock.advance(TimeDelta::seconds(30));
    let refused = app.get_as(&key, "/v1/brands").await;
    let challenge = header(&refused, "www-authenticate").map(str::to_owned);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("expired at 2"), "{message}");
    assert_eq!(
        challenge.as_deref(),
        Some(r#"Bearer error="invalid_token", error_description="The API key expired""#)
    );
    let (status, body) = post(&app, Some(&key), "{ __typename }", json!({})).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "UNAUTHORIZED",
        "{body}"
    );
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{body}"
    );
    // The same request with a key that never expires still works.
    let lasting = app.key("acme").await;
    assert_eq!(app.get_as(&lasting, "/v1/brands").await.status(), 200);
}

#[tokio::test]
async fn a_websocket_closes_when_its_key_expires() {
    let app = TestApp::spawn().await;
    let terms = KeyTerms {
        expires_at: Some(app.clock.now() + TimeDelta::seconds(1)),
        ..KeyTerms::default()
    };
    let key = key_on(&app, "acme", terms).await;
    let lasting = app.key("acme").await;
    let mut expiring = ws::connect(&app, &key).await;
    let mut kept = ws::connect(&app, &lasting).await;
    for socket in [&mut expiring, &mut kept] {
        assert_eq!(ws::next(socket).await.unwrap()["type"], "connection_ack");
    }
    let started = Instant::now();
    let close = closing_frame(&mut expiring).await;
    assert_eq!(u16::from(close.code), 4401, "{close:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    ws::send(&mut kept, "1", "{ __typename }").await;
    assert_eq!(ws::next(&mut kept).await.unwrap()["type"], "next");
}

/// The close frame the server sends next, within 5 seconds.
async fn closing_frame(
    socket: &mut ws::Socket,
) -> tokio_tungstenite::tungstenite::protocol::CloseFrame {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), socket.next()).await {
            Ok(Some(Ok(Message::Close(Some(frame))))) => return frame,
            Ok(Some(Ok(_))) => continue,
            other => panic!("the socket was not closed: {other:?}"),
        }
    }
}

#[tokio::test]
async fn keys_made_before_scopes_keep_all_three() {
    let db = TestDb::new().await;
    let conn = db.connect().await;
    migrate_down_through(&conn, "m20261204_000029_key_scopes").await;
    let secret = "vtr_000000000000000000000000000000000000000000000001";
    let (account, key, now) = (
        uuid::Uuid::new_v4(),
        uuid::Uuid::new_v4(),
        chrono::Utc::now(),
    );
    let backend = conn.get_database_backend();
    let rows = [
        (
            "INSERT INTO accounts (id, name, created_at) VALUES ($1, 'old', $2)",
            vec![account.into(), now.into()],
        ),
        (
            "INSERT INTO api_keys (id, account_id, key_hash, prefix, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
            vec![
                key.into(),
                account.into(),
                accounts::hash_key(secret).into(),
                secret[..12].into(),
                now.into(),
            ],
        ),
    ];
    for (sql, values) in rows {
        let statement = sea_orm::Statement::from_sql_and_values(backend, sql, values);
        sea_orm::ConnectionTrait::execute_raw(&conn, statement)
            .await
            .expect("insert");
    }
    conn.close().await.expect("close");
    // As an upgraded server starts: a new pool, migrated, then serving.
    let app = TestApp::spawn_on(db, vitrina::config::Settings::default()).await;
    for path in ["/v1/brands", "/extension/v1/webhooks"] {
        let response = app.get_as(secret, path).await;
        assert_eq!(response.status(), 200, "the key made before scopes: {path}");
    }
    let caller = accounts::authenticate(&app.db, secret, app.clock.now())
        .await
        .unwrap()
        .expect("the key still works");
    assert_eq!((caller.scopes, caller.expires_at), (Scopes::ALL, None));
}

#[tokio::test]
async fn a_key_needs_a_scope_and_a_future_expiry() {
    let app = TestApp::spawn().await;
    let now = app.clock.now();
    let none = KeyTerms {
        scopes: Scopes::of(&[]),
        ..KeyTerms::default()
    };
    let past = KeyTerms {
        expires_at: Some(now),
        ..KeyTerms::default()
    };
    for terms in [none, past] {
        let refused = accounts::create_key_with(&app.db, "acme", terms, now).await;
        assert!(refused.is_err(), "{terms:?}");
    }
}

/// The worst a key outside its scope can do: loop. Each refusal is a
/// request of its account, so the account's limit ends the loop, and its
/// own in-scope requests meet the same limit.
#[tokio::test]
async fn requests_outside_a_keys_scope_use_up_its_accounts_rate_limit() {
    let app = TestApp::spawn_with(vitrina::config::Limits {
        rate_per_minute: 3,
        ..test_limits()
    })
    .await;
    let uploader = key_with(&app, &[Scope::Upload]).await;
    let reader = key_with(&app, &[Scope::Read]).await;
    for remaining in ["2", "1", "0"] {
        let refused = app.get_as(&uploader, "/v1/brands").await;
        assert_eq!(refused.status(), 403);
        assert_eq!(header(&refused, "x-ratelimit-remaining"), Some(remaining));
    }
    let over = app.get_as(&uploader, "/v1/brands").await;
    assert_eq!(over.status(), 429);
    assert!(header(&over, "retry-after").is_some());
    // The same account, with the scope: no more this minute.
    assert_eq!(app.get_as(&reader, "/v1/brands").await.status(), 429);
    app.clock.advance(TimeDelta::minutes(1));
    assert_eq!(app.get_as(&reader, "/v1/brands").await.status(), 200);
}
