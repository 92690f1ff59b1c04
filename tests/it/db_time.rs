//! The database-time budget of an account (`limits::db_time`): charged by
//! what its REST handlers (from the end of their body) and GraphQL
//! statements took, refused with a 429
//! naming the limit and its setting once the account is past its burst, for
//! that account only, until enough has drained on the clock.

use std::time::Duration;

use chrono::TimeDelta;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::sleep;
use vitrina::config::Settings;
use vitrina::limits::Limits;

use crate::connections::{read_answer, upload_head};
use crate::helpers::graphql::{only_error_code, post, post_response};
use crate::helpers::uploads::{item, upload};
use crate::helpers::{TestApp, assert_plain_sentence, uncached};

/// A budget of one millisecond a minute and a burst of one: spent by the
/// first few requests, then drained over minutes of the test clock. The
/// response cache is off: a repeated request answered from it runs no
/// statement, so if the first one took less than the burst, no later one
/// would spend anything (seen once in a full run).
async fn app_with_one_millisecond() -> TestApp {
    TestApp::spawn_with_settings(uncached(Settings {
        limits: Limits {
            db_time_per_minute_ms: 1,
            db_time_burst_ms: 1,
            ..Limits::default()
        },
        ..Settings::default()
    }))
    .await
}

/// How many requests `send` answered 200 before its first other status,
/// and that status's body; at most `most` requests are sent.
async fn until_refused<F, Fut>(most: usize, mut send: F) -> (usize, u16, Value)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (u16, Value)>,
{
    for answered in 0..most {
        let (status, body) = send().await;
        if status != 200 {
            return (answered, status, body);
        }
    }
    panic!("{most} requests were all answered: the budget was never spent");
}

#[tokio::test]
async fn rest_requests_spend_the_budget_and_the_refusal_names_it() {
    let app = app_with_one_millisecond().await;
    let (key, other) = (app.key("acme").await, app.key("globex").await);
    let (answered, status, body) = until_refused(200, || async {
        let response = app.get_as(&key, "/v1/products").await;
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or_default())
    })
    .await;
    assert!(answered >= 1, "an account with time left is admitted");
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "rate_limited");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert_plain_sentence(message);
    let refused = app.get_as(&key, "/v1/brands").await;
    assert_eq!(refused.status(), 429);
    let wait: i64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait >= 1, "{wait}");
    for named in [
        "1 ms a minute",
        "VITRINA_DB_TIME_PER_MINUTE_MS",
        "VITRINA_DB_TIME_BURST_MS",
        &format!("retry in {wait} seconds"),
    ] {
        assert!(message.contains(named), "{named:?} in {message:?}");
    }

    // GraphQL is refused for the same account, with the same code.
    let refused = post_response(&app, &key, "{ brands { brand } }").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], wait.to_string().as_str());
    let body: Value = refused.json().await.expect("GraphQL body");
    assert_eq!(only_error_code(&body), "RATE_LIMITED");
    assert_eq!(body["errors"][0]["extensions"]["retryAfter"], wait);

    assert_eq!(
        app.get_as(&other, "/v1/products").await.status(),
        200,
        "another account keeps its own budget"
    );
    // The balance drains with the clock: refused until the time said.
    app.clock.advance(TimeDelta::seconds(wait - 1));
    let later = app.get_as(&key, "/v1/brands").await;
    assert_eq!(later.status(), 429);
    assert_eq!(later.headers()["retry-after"], "1");
    app.clock.advance(TimeDelta::seconds(1));
    assert_eq!(
        app.get_as(&key, "/v1/brands").await.status(),
        200,
        "drained below the burst"
    );
}

#[tokio::test]
async fn graphql_statements_spend_the_budget_of_their_account() {
    let app = app_with_one_millisecond().await;
    let key = app.key("acme").await;
    let query = "{ products(first: 5) { totalCount nodes { id name } } brands { brand } }";
    let (_, status, body) = until_refused(200, || post(&app, Some(&key), query, json!({}))).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(only_error_code(&body), "RATE_LIMITED");
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("VITRINA_DB_TIME_PER_MINUTE_MS"),
        "{message}"
    );
    assert_eq!(
        app.get_as(&key, "/v1/brands").await.status(),
        429,
        "REST shares the account's budget"
    );
}

#[tokio::test]
async fn the_time_a_body_takes_to_arrive_is_not_charged() {
    // A body sent over 0.6 s would spend a burst of 0.3 s twice over.
    let app = TestApp::spawn_with(Limits {
        db_time_per_minute_ms: 1,
        db_time_burst_ms: 300,
        ..Limits::default()
    })
    .await;
    let key = app.key("acme").await;
    let body = upload(vec![item("1")]).to_string().into_bytes();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(&upload_head(&key, body.len()))
        .await
        .unwrap();
    stream.write_all(first).await.unwrap();
    sleep(Duration::from_millis(600)).await;
    stream.write_all(rest).await.unwrap();
    let answer = read_answer(&mut stream).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    assert_eq!(
        app.get_as(&key, "/v1/brands").await.status(),
        200,
        "the wait for the body was not charged"
    );
}
