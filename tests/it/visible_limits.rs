//! Visible limits: `GET /v1/rate_limit` (free), GraphQL's `rateLimit` and
//! `quota` fields, and `extensions.cost` on every GraphQL response, over
//! HTTP and the WebSocket.

use std::collections::BTreeSet;

use chrono::{Days, NaiveTime, TimeDelta};
use reqwest::Response;
use serde_json::{Value, json};
use vitrina::config::Limits;

use crate::helpers::graphql::{post, post_response};
use crate::helpers::{TestApp, iso, required_header, session_with, test_start};
use crate::ws;

const RATE: u32 = 5;
const QUOTA: i64 = 1_000;

async fn app() -> (TestApp, String) {
    let app = TestApp::spawn_with(Limits {
        rate_per_minute: RATE,
        daily_quota: QUOTA,
        ..Limits::default()
    })
    .await;
    let key = app.key("acme").await;
    (app, key)
}

/// When the test clock's minute window ends, and its UTC day.
fn window_end() -> String {
    let now = test_start();
    iso(now + TimeDelta::seconds(60 - now.timestamp() % 60))
}

fn midnight() -> String {
    let day = test_start().date_naive() + Days::new(1);
    iso(day.and_time(NaiveTime::MIN).and_utc())
}

fn number(response: &Response, name: &str) -> i64 {
    required_header(response, name).parse().expect("a number")
}

fn keys(value: &Value) -> BTreeSet<&str> {
    let object = value.as_object().expect("an object");
    object.keys().map(String::as_str).collect()
}

async fn standing(app: &TestApp, key: &str) -> Value {
    let response = app.get_as(key, "/v1/rate_limit").await;
    assert_eq!(response.status(), 200);
    assert_eq!(number(&response, "x-ratelimit-limit"), i64::from(RATE));
    response.json().await.expect("JSON")
}

#[tokio::test]
async fn rate_limit_endpoint_reports_both_limits_and_counts_against_neither() {
    let (app, key) = app().await;
    let session = session_with(&app, &key, 3, 1).await;
    let fresh = json!({
        "data": {
            "rate_limit": { "limit": RATE, "remaining": RATE, "reset_at": window_end() },
            "quota": { "limit": QUOTA, "remaining": QUOTA, "reset_at": midnight() },
        }
    });
    // More often than the rate limit allows: it counts nothing.
    for _ in 0..2 * RATE {
        assert_eq!(standing(&app, &key).await, fresh);
    }
    let metered = app
        .get_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    assert_eq!(metered.status(), 200);
    let after = standing(&app, &key).await;
    assert_eq!(after["data"]["rate_limit"]["remaining"], RATE - 1);
    assert_eq!(after["data"]["quota"]["remaining"], QUOTA - 3);
    assert_eq!(
        after["data"]["quota"]["remaining"],
        number(&metered, "x-quota-remaining")
    );

    let anonymous = app.get("/v1/rate_limit").await;
    assert_eq!(anonymous.status(), 401);
    let wrong = app.get_as("vk_live_not-a-key", "/v1/rate_limit").await;
    assert_eq!(wrong.status(), 401);
}

#[tokio::test]
async fn the_rate_limit_endpoint_answers_a_caller_out_of_requests() {
    let (app, key) = app().await;
    for _ in 0..RATE {
        assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 200);
    }
    assert_eq!(app.get_as(&key, "/v1/brands").await.status(), 429);
    let body = standing(&app, &key).await;
    assert_eq!(body["data"]["rate_limit"]["remaining"], 0);
}

#[tokio::test]
async fn graphql_reports_the_limits_as_rest_does() {
    let (app, key) = app().await;
    let session = session_with(&app, &key, 2, 0).await;
    let rows =
        format!("{{me{{scrapeSession(id: \"{session}\"){{products(first: 10){{nodes{{id}}}}}}}}}}");
    let (status, _) = post(&app, Some(&key), &rows, json!({})).await;
    assert_eq!(status, 200);

    let query = "{rateLimit{limit remaining resetAt} quota{limit remaining resetAt}}";
    let (status, body) = post(&app, Some(&key), query, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({
            // This request counted: the second of the window.
            "rateLimit": { "limit": RATE, "remaining": RATE - 2, "resetAt": window_end() },
            "quota": { "limit": QUOTA, "remaining": QUOTA - 2, "resetAt": midnight() },
        })
    );
    let rest = standing(&app, &key).await;
    assert_eq!(rest["data"]["rate_limit"]["remaining"], RATE - 2);
    assert_eq!(rest["data"]["quota"]["remaining"], QUOTA - 2);
}

/// `extensions.cost`: the request's complexity, and the budget left after it.
#[tokio::test]
async fn graphql_responses_carry_their_cost_and_the_budget_left() {
    let (app, key) = app().await;
    let session = session_with(&app, &key, 3, 0).await;

    let response = post_response(&app, &key, "{brands{brand}}").await;
    let rate_left = number(&response, "x-ratelimit-remaining");
    let body: Value = response.json().await.expect("JSON");
    let cost = &body["extensions"]["cost"];
    assert_eq!(
        keys(cost),
        BTreeSet::from(["complexity", "maxComplexity", "rateLimit"])
    );
    assert_eq!(
        cost["complexity"],
        body["extensions"]["analyzer"]["complexity"]
    );
    assert_eq!(cost["maxComplexity"], 10_000);
    assert_eq!(
        cost["rateLimit"],
        json!({ "limit": RATE, "remaining": rate_left, "resetAt": window_end() })
    );

    let metered =
        format!("{{me{{scrapeSession(id: \"{session}\"){{products(first: 10){{nodes{{id}}}}}}}}}}");
    let response = app
        .client
        .get(app.url("/graphql"))
        .query(&[("query", &metered)])
        .bearer_auth(&key)
        .send()
        .await
        .expect("request");
    let quota_left = number(&response, "x-quota-remaining");
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(
        body["extensions"]["cost"]["quota"],
        json!({ "charged": 3, "limit": QUOTA, "remaining": quota_left, "resetAt": midnight() })
    );
    assert_eq!(quota_left, QUOTA - 3);

    // Refused before it was priced: the budget, no complexity.
    let (status, body) = post(&app, Some(&key), "{nosuchfield}", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(
        keys(&body["extensions"]["cost"]),
        BTreeSet::from(["rateLimit"])
    );
}

#[tokio::test]
async fn websocket_operations_carry_their_cost_too() {
    let (app, key) = app().await;
    let mut socket = ws::connect(&app, &key).await;
    assert_eq!(
        ws::next(&mut socket).await.expect("ack")["type"],
        "connection_ack"
    );
    ws::send(&mut socket, "1", "{brands{brand}}").await;
    let next = ws::next(&mut socket).await.expect("next");
    assert_eq!(next["type"], "next", "{next}");
    let cost = &next["payload"]["extensions"]["cost"];
    // The connection and this operation each counted.
    assert_eq!(
        cost["rateLimit"],
        json!({ "limit": RATE, "remaining": RATE - 2, "resetAt": window_end() })
    );
    assert_eq!(
        cost["complexity"],
        next["payload"]["extensions"]["analyzer"]["complexity"]
    );
}
