//! The caller's scrape sessions through GraphQL: the same as REST and only
//! the caller's, their submissions and merged products, and the daily quota
//! they are metered by, shared with REST.

use std::collections::BTreeSet;

use entity::{SubmissionStatus, quota_usage};
use sea_orm::EntityTrait;
use serde_json::{Value, json};

use crate::fixtures::{insert_session, insert_submission};
use crate::helpers::graphql::{
    as_rest, data, demo_app, nodes, only_error_code, post, post_response, with_shapes,
};
use crate::helpers::{TestApp, daily_quota, ids, rest_error, session_with, test_start};

const SESSIONS: &str = r#"query {
  me { scrapeSessions(first: 100) { totalCount edges { node {
    id status stats { total pending processing merged rejected flagged }
    metadata { source_type: sourceType intent url_count: urlCount }
    created_at: createdAt updated_at: updatedAt
  } } } }
}"#;

#[tokio::test]
async fn scrape_sessions_are_the_same_as_rest_and_only_the_callers() {
    let (app, key) = demo_app(30).await;
    let other = app.key("someone-else").await;
    let theirs = insert_session(&app.db, &other, test_start()).await;
    insert_submission(&app.db, theirs.id, SubmissionStatus::Pending, None).await;

    let rest = app.json_as(&key, "/v1/me/scrapes").await;
    let graphql = data(&app, &key, SESSIONS, json!({})).await;
    let sessions = &graphql["me"]["scrapeSessions"];
    assert_eq!(
        rest["data"].as_array().unwrap().len(),
        4,
        "the demo sessions"
    );
    assert_eq!(as_rest(Value::Array(nodes(sessions))), rest["data"]);
    assert_eq!(sessions["totalCount"], rest["meta"]["total"]);

    let graphql = data(&app, &other, SESSIONS, json!({})).await;
    let sessions = nodes(&graphql["me"]["scrapeSessions"]);
    assert_eq!(
        ids(&sessions),
        [theirs.id.to_string()],
        "only the caller's own"
    );
}

#[tokio::test]
async fn session_submissions_are_the_same_as_rest() {
    let (app, key) = demo_app(30).await;
    let query = with_shapes(
        r#"query($id: UUID!) { me { scrapeSession(id: $id) {
          submissions(first: 100) { totalCount edges { node {
            submission_status: status product { ...RestProduct }
          } } }
        } } }"#,
    );
    let sessions = app.json_as(&key, "/v1/me/scrapes").await;
    let mut with_and_without = BTreeSet::new();
    for session in sessions["data"].as_array().unwrap() {
        let id = session["id"].as_str().unwrap();
        let rest = app
            .json_as(&key, &format!("/v1/me/scrapes/{id}/products"))
            .await;
        let graphql = data(&app, &key, &query, json!({ "id": id })).await;
        let submissions = &graphql["me"]["scrapeSession"]["submissions"];
        assert_eq!(
            as_rest(Value::Array(nodes(submissions))),
            rest["data"],
            "{id}"
        );
        assert_eq!(submissions["totalCount"], rest["meta"]["total"]);
        for entry in rest["data"].as_array().unwrap() {
            with_and_without.insert(entry["product"].is_null());
        }
    }
    assert_eq!(
        with_and_without.len(),
        2,
        "merged and unmerged rows both compared"
    );
}

#[tokio::test]
async fn session_products_are_its_merged_products_in_order_and_are_charged() {
    let app = TestApp::spawn_with(daily_quota(100)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 2).await;
    let query = "query($id: UUID!) { me { scrapeSession(id: $id) { products(first: 2) { totalCount pageInfo { hasNextPage } edges { node { id } } } } } }";
    let d = data(&app, &key, query, json!({ "id": session })).await;
    let products = &d["me"]["scrapeSession"]["products"];
    assert_eq!(
        (
            products["totalCount"].as_u64(),
            products["pageInfo"]["hasNextPage"].as_bool()
        ),
        (Some(3), Some(true))
    );
    let ids: Vec<&str> = products["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["node"]["id"].as_str().unwrap())
        .collect();
    let rest = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    let rest_ids: Vec<&str> = rest["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["product"]["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        rest_ids[..2],
        "the merged products, in submission order"
    );
    assert_eq!(
        quota_used(&app).await,
        2 + 3,
        "two through GraphQL, three through REST"
    );
}

const SUBMISSIONS: &str = r#"query($id: UUID!, $first: Int) {
  me { scrapeSession(id: $id) { submissions(first: $first) {
    totalCount edges { node { status product { id } } }
  } } }
}"#;

/// Rows charged to the daily quota so far, over every account.
async fn quota_used(app: &TestApp) -> i64 {
    quota_usage::Entity::find()
        .all(&app.db)
        .await
        .expect("quota usage")
        .iter()
        .map(|u| u.rows_used)
        .sum()
}

#[tokio::test]
async fn session_products_read_through_graphql_are_charged_like_rest() {
    let app = TestApp::spawn_with(daily_quota(10)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 2).await;
    let vars = json!({ "id": session, "first": 100 });

    let d = data(&app, &key, SUBMISSIONS, vars.clone()).await;
    assert_eq!(nodes(&d["me"]["scrapeSession"]["submissions"]).len(), 5);
    assert_eq!(quota_used(&app).await, 3, "merged rows only");
    // Not selecting the product does not make the rows free.
    let bare = "query($id: UUID!) { me { scrapeSession(id: $id) { submissions { totalCount } } } }";
    data(&app, &key, bare, json!({ "id": session })).await;
    assert_eq!(quota_used(&app).await, 6);
    // The same quota as REST.
    let rest = app
        .get_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    assert_eq!(
        rest.headers()["x-quota-remaining"].to_str().unwrap(),
        "1",
        "10 - 3 - 3 - 3"
    );
    // Pending placeholders stay free when the quota is nearly used up.
    let pending = session_with(&app, &key, 0, 4).await;
    data(&app, &key, SUBMISSIONS, json!({ "id": pending })).await;
    assert_eq!(quota_used(&app).await, 9);
}

#[tokio::test]
async fn graphql_page_passing_the_quota_fails_whole_and_charges_nothing() {
    let app = TestApp::spawn_with(daily_quota(5)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 1).await;
    let vars = json!({ "id": session, "first": 100 });
    data(&app, &key, SUBMISSIONS, vars.clone()).await;
    assert_eq!(quota_used(&app).await, 3);

    let (status, body) = post(&app, Some(&key), SUBMISSIONS, vars).await;
    assert_eq!(status, 200);
    assert_eq!(only_error_code(&body), "QUOTA_EXCEEDED");
    let served = body.pointer("/data/me/scrapeSession/submissions");
    assert!(served.is_none_or(Value::is_null), "no rows served: {body}");
    assert_eq!(quota_used(&app).await, 3, "the refusal charged nothing");

    let smaller = json!({ "id": session, "first": 2 });
    let d = data(&app, &key, SUBMISSIONS, smaller).await;
    assert_eq!(nodes(&d["me"]["scrapeSession"]["submissions"]).len(), 2);
    assert_eq!(quota_used(&app).await, 5);
    let rest = rest_error(&app, &key, &format!("/v1/me/scrapes/{session}/products")).await;
    assert_eq!(
        rest,
        (429, "quota_exceeded".to_owned()),
        "one quota for both"
    );
}

#[tokio::test]
async fn a_request_reading_several_metered_lists_is_charged_once_or_refused_whole() {
    let app = TestApp::spawn_with(daily_quota(5)).await;
    let key = app.key("alpha").await;
    let (a, b) = (
        session_with(&app, &key, 2, 0).await,
        session_with(&app, &key, 3, 1).await,
    );
    let query = r#"query($a: UUID!, $b: UUID!, $first: Int) { me {
      a: scrapeSession(id: $a) { submissions(first: $first) { edges { node { product { id } } } } }
      b: scrapeSession(id: $b) { products(first: $first) { edges { node { id } } } }
      again: scrapeSession(id: $a) { products(first: $first) { totalCount } }
    } }"#;
    // A row with a product from each list: within the quota of 5, charged together.
    let within = json!({ "a": a, "b": b, "first": 1 });
    let response = app
        .post_as(
            &key,
            "/graphql",
            &json!({ "query": query, "variables": within }),
        )
        .await;
    assert_eq!(response.headers()["x-quota-remaining"], "2");
    let body: Value = response.json().await.unwrap();
    assert!(body.get("errors").is_none(), "{body}");
    assert_eq!(quota_used(&app).await, 3);

    // Three more would pass it, though each list alone would not: refused
    // whole, no data, nothing charged.
    let (status, body) = post(&app, Some(&key), query, within).await;
    assert_eq!(status, 200);
    assert_eq!(only_error_code(&body), "QUOTA_EXCEEDED", "{body}");
    let at = &body["errors"][0]["path"];
    let lists = [
        json!(["me", "a", "submissions"]),
        json!(["me", "b", "products"]),
        json!(["me", "again", "products"]),
    ];
    assert!(lists.contains(at), "at one of the metered lists: {body}");
    assert_eq!(body["data"], Value::Null, "no rows served: {body}");
    assert_eq!(quota_used(&app).await, 3, "the refusal charged nothing");

    // What fits is still served.
    let one = json!({ "a": a, "first": 1 });
    let single = "query($a: UUID!, $first: Int) { me { scrapeSession(id: $a) { products(first: $first) { totalCount } } } }";
    let d = data(&app, &key, single, one).await;
    assert_eq!(d["me"]["scrapeSession"]["products"]["totalCount"], 2);
    assert_eq!(quota_used(&app).await, 4);
}

#[tokio::test]
async fn metered_graphql_responses_carry_the_quota_headers_and_refusals_a_retry_after() {
    let app = TestApp::spawn_with(daily_quota(4)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 1).await;
    let request = || {
        app.client
            .post(app.url("/graphql"))
            .bearer_auth(&key)
            .json(&json!({ "query": SUBMISSIONS, "variables": { "id": session, "first": 100 } }))
    };
    let served = request().send().await.unwrap();
    let header = |r: &reqwest::Response, name: &str| r.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(
        (
            header(&served, "x-quota-limit"),
            header(&served, "x-quota-remaining")
        ),
        ("4".into(), "1".into())
    );

    let refused = request().send().await.unwrap();
    assert_eq!(
        header(&refused, "x-quota-remaining"),
        "1",
        "nothing was charged"
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "QUOTA_EXCEEDED");
    assert_eq!(
        body["errors"][0]["extensions"]["retryAfter"], 43_200,
        "seconds to the next UTC midnight"
    );

    let unmetered = post_response(&app, &key, "{ brands { brand } }").await;
    assert!(unmetered.headers().get("x-quota-limit").is_none());
}
