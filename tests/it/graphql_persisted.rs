//! Automatic persisted queries (Apollo's protocol): a hash alone runs the
//! text sent with it before, over POST and GET, on any replica; an unknown
//! hash is PERSISTED_QUERY_NOT_FOUND; only an admitted caller's document
//! that passed every limit is kept, and the table keeps at most its maximum.

use chrono::TimeDelta;
use entity::{Marketplace, persisted_query, persisted_query_owner};
use sea_orm::{EntityTrait, PaginatorTrait, QueryOrder};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use vitrina::config::{GraphqlConfig, Settings};

use crate::fixtures::{self, insert_product, insert_seller, product};
use crate::helpers::graphql::GRAPHQL_RESPONSE;
use crate::helpers::{TestApp, header, uncached};

const PRODUCTS: &str = "query Shelf { products(first: 5) { edges { node { name brand } } } }";

pub(crate) fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The `persistedQuery` extension naming `hash`.
fn extension(hash: &str) -> Value {
    json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } })
}

/// A request of `query` by hash only.
pub(crate) fn by_hash(query: &str) -> Value {
    json!({ "extensions": extension(&sha256(query)) })
}

/// A request of `query` with its text and hash.
pub(crate) fn with_text(query: &str) -> Value {
    json!({ "query": query, "extensions": extension(&sha256(query)) })
}

/// The status, `Cache-Control` and JSON body of a POST of `body` to
/// `/graphql` of the service at `base` (as `key`, if any).
pub(crate) async fn post_to(
    app: &TestApp,
    base: &str,
    key: Option<&str>,
    body: &Value,
) -> (u16, String, Value) {
    let mut request = app.client.post(format!("{base}/graphql")).json(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    answer(request).await
}

async fn post(app: &TestApp, key: Option<&str>, body: &Value) -> (u16, String, Value) {
    post_to(app, &app.url(""), key, body).await
}

/// The same request as a GET, its fields as URL-encoded JSON parameters.
async fn get(app: &TestApp, key: &str, body: &Value) -> (u16, String, Value) {
    let mut params = vec![("extensions", body["extensions"].to_string())];
    if let Some(query) = body["query"].as_str() {
        params.push(("query", query.to_owned()));
    }
    let request = app
        .client
        .get(app.url("/graphql"))
        .query(&params)
        .bearer_auth(key);
    answer(request).await
}

async fn answer(request: reqwest::RequestBuilder) -> (u16, String, Value) {
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let cache = header(&response, "cache-control")
        .unwrap_or_default()
        .to_owned();
    (status, cache, response.json().await.expect("JSON body"))
}

/// The error codes of a response, in order.
pub(crate) fn codes(body: &Value) -> Vec<String> {
    let errors = body["errors"].as_array().cloned().unwrap_or_default();
    errors
        .iter()
        .map(|e| {
            e["extensions"]["code"]
                .as_str()
                .unwrap_or("<none>")
                .to_owned()
        })
        .collect()
}

fn assert_not_found(status: u16, cache: &str, body: &Value) {
    assert_eq!(status, 200, "{body}");
    assert_eq!(codes(body), ["PERSISTED_QUERY_NOT_FOUND"], "{body}");
    // Apollo Client's older versions read only the message.
    assert_eq!(body["errors"][0]["message"], "PersistedQueryNotFound");
    assert!(body.get("data").is_none(), "{body}");
    assert_eq!(cache, "private, no-cache, must-revalidate");
}

/// The hashes kept, least recently used first (by their owners' use: one
/// account owns them in these tests). Every text kept has an owner.
async fn stored(app: &TestApp) -> Vec<String> {
    let owners = persisted_query_owner::Entity::find()
        .order_by_asc(persisted_query_owner::Column::LastUsedAt)
        .order_by_asc(persisted_query_owner::Column::Hash)
        .all(&app.db);
    let owned: Vec<String> = owners.await.unwrap().into_iter().map(|o| o.hash).collect();
    let texts = persisted_query::Entity::find().all(&app.db);
    let mut texts: Vec<String> = texts.await.unwrap().into_iter().map(|t| t.hash).collect();
    let mut owned_texts = owned.clone();
    owned_texts.sort();
    owned_texts.dedup();
    texts.sort();
    assert_eq!(owned_texts, texts, "the texts kept are those owned");
    owned
}

/// An app with `graphql` settings, a key, and two products.
async fn app_with(graphql: GraphqlConfig) -> (TestApp, String) {
    app_on(Settings {
        graphql,
        ..Settings::default()
    })
    .await
}

/// An app with `settings`, a key, and two products.
async fn app_on(settings: Settings) -> (TestApp, String) {
    let app = TestApp::spawn_with_settings(settings).await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    insert_product(&app.db, &shop, product("a")).await;
    insert_product(&app.db, &shop, product("b")).await;
    (app, key)
}

async fn app() -> (TestApp, String) {
    app_with(GraphqlConfig::default()).await
}

#[tokio::test]
async fn over_post_a_hash_alone_runs_the_text_sent_with_it_before() {
    let (app, key) = app().await;
    let (status, cache, body) = post(&app, Some(&key), &by_hash(PRODUCTS)).await;
    assert_not_found(status, &cache, &body);

    let (status, _, registered) = post(&app, Some(&key), &with_text(PRODUCTS)).await;
    assert_eq!(status, 200, "{registered}");
    assert_eq!(codes(&registered), Vec::<String>::new(), "{registered}");
    assert_eq!(
        registered["data"]["products"]["edges"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(stored(&app).await, [sha256(PRODUCTS)]);

    let (status, _, again) = post(&app, Some(&key), &by_hash(PRODUCTS)).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["data"], registered["data"]);
    let row = persisted_query::Entity::find_by_id(sha256(PRODUCTS))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.query, PRODUCTS);
}

#[tokio::test]
async fn over_get_a_hash_alone_runs_the_text_sent_with_it_before() {
    let (app, key) = app().await;
    let (status, cache, body) = get(&app, &key, &by_hash(PRODUCTS)).await;
    assert_not_found(status, &cache, &body);

    let (status, _, registered) = get(&app, &key, &with_text(PRODUCTS)).await;
    assert_eq!(status, 200, "{registered}");
    assert_eq!(
        registered["data"]["products"]["edges"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let (status, _, again) = get(&app, &key, &by_hash(PRODUCTS)).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["data"], registered["data"]);
    assert_eq!(stored(&app).await, [sha256(PRODUCTS)]);
}

/// What makes a hash-only GET worth sending: it is tagged like any GET,
/// and an unchanged answer is a 304 without a body. It counts against the
/// rate limit like the 200: its answer was worked out to compare it.
#[tokio::test]
async fn a_hash_alone_over_get_is_answered_304_while_unchanged() {
    let (app, key) = app().await;
    post(&app, Some(&key), &with_text(PRODUCTS)).await;
    let url = app.url("/graphql");
    let extensions = by_hash(PRODUCTS)["extensions"].to_string();
    let send = |etag: Option<&str>| {
        let mut request = app
            .client
            .get(&url)
            .query(&[("extensions", &extensions)])
            .bearer_auth(&key);
        if let Some(etag) = etag {
            request = request.header("if-none-match", etag);
        }
        request.send()
    };
    let first = send(None).await.expect("request");
    assert_eq!(first.status(), 200);
    let etag = header(&first, "etag").expect("an ETag").to_owned();
    let again = send(Some(&etag)).await.expect("request");
    assert_eq!(again.status(), 304);
    assert_eq!(header(&again, "etag"), Some(etag.as_str()));
    let left = |r: &reqwest::Response| -> i64 {
        let remaining = header(r, "x-ratelimit-remaining").expect("rate headers");
        remaining.parse().expect("a number")
    };
    assert_eq!(left(&again), left(&first) - 1, "the 304 counts");
}

#[tokio::test]
async fn with_the_graphql_response_media_type_an_unknown_hash_is_a_400() {
    let (app, key) = app().await;
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("accept", GRAPHQL_RESPONSE)
        .bearer_auth(&key)
        .json(&by_hash(PRODUCTS))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(codes(&body), ["PERSISTED_QUERY_NOT_FOUND"], "{body}");
}

#[tokio::test]
async fn a_hash_that_is_not_the_texts_is_refused_and_nothing_is_kept() {
    let (app, key) = app().await;
    let forged = json!({ "query": PRODUCTS, "extensions": extension(&sha256("{ __typename }")) });
    let (status, _, body) = post(&app, Some(&key), &forged).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(codes(&body), ["INVALID_PARAMETER"], "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("sha256Hash")
    );
    assert!(body.get("data").is_none(), "{body}");
    assert_eq!(stored(&app).await, Vec::<String>::new());
    let (status, cache, body) = post(&app, Some(&key), &by_hash("{ __typename }")).await;
    assert_not_found(status, &cache, &body);
}

#[tokio::test]
async fn a_version_or_hash_the_protocol_does_not_have_is_refused() {
    let (app, key) = app().await;
    let hash = sha256(PRODUCTS);
    for extensions in [
        json!({ "persistedQuery": { "version": 2, "sha256Hash": hash } }),
        json!({ "persistedQuery": { "sha256Hash": hash } }),
        json!({ "persistedQuery": { "version": 1, "sha256Hash": &hash[1..] } }),
        json!({ "persistedQuery": { "version": 1, "sha256Hash": format!("{}g", &hash[1..]) } }),
        json!({ "persistedQuery": { "version": 1 } }),
        json!({ "persistedQuery": "yes" }),
    ] {
        for body in [
            json!({ "extensions": extensions }),
            json!({ "query": PRODUCTS, "extensions": extensions }),
        ] {
            let (status, _, answer) = post(&app, Some(&key), &body).await;
            assert_eq!(status, 200, "{body}: {answer}");
            assert_eq!(codes(&answer), ["INVALID_PARAMETER"], "{body}: {answer}");
        }
    }
    assert_eq!(stored(&app).await, Vec::<String>::new());
}

#[tokio::test]
async fn without_a_key_a_hash_is_401_and_nothing_is_kept() {
    let (app, key) = app().await;
    for body in [with_text(PRODUCTS), by_hash(PRODUCTS)] {
        let (status, _, answer) = post(&app, None, &body).await;
        assert_eq!(status, 401, "{answer}");
        assert_eq!(codes(&answer), ["UNAUTHORIZED"]);
    }
    assert_eq!(stored(&app).await, Vec::<String>::new());
    // A known hash answers a caller without a key just the same.
    post(&app, Some(&key), &with_text(PRODUCTS)).await;
    let (status, _, answer) = post(&app, None, &by_hash(PRODUCTS)).await;
    assert_eq!(
        (status, codes(&answer)),
        (401, vec!["UNAUTHORIZED".to_owned()])
    );
}

#[tokio::test]
async fn a_document_refused_by_the_limits_is_not_kept() {
    let (app, key) = app_with(GraphqlConfig {
        max_depth: 3,
        max_document_bytes: 1024,
        ..GraphqlConfig::default()
    })
    .await;
    let too_long = format!("{{ __typename {} }}", " ".repeat(1024));
    for query in [
        PRODUCTS,                        // 4 levels deep
        too_long.as_str(),               // over the document limit
        "{ products { nope } }",         // invalid
        "{ products(first: 1) { edges ", // unparsable
    ] {
        let (status, _, body) = post(&app, Some(&key), &with_text(query)).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.get("data").is_none(), "{query}: {body}");
        assert_ne!(codes(&body), Vec::<String>::new(), "{body}");
    }
    assert_eq!(stored(&app).await, Vec::<String>::new());
}

#[tokio::test]
async fn the_table_keeps_its_maximum_and_evicts_the_least_recently_used() {
    let (app, key) = app_with(GraphqlConfig {
        persisted_queries_max: 3,
        ..GraphqlConfig::default()
    })
    .await;
    let queries: Vec<String> = (0..6)
        .map(|i| format!("query Q{i} {{ __typename }}"))
        .collect();
    let hashes = |of: &[usize]| of.iter().map(|&i| sha256(&queries[i])).collect::<Vec<_>>();
    for query in &queries[..3] {
        post(&app, Some(&key), &with_text(query)).await;
        app.clock.advance(TimeDelta::minutes(11));
    }
    // Q0 used again, long enough after it was stored to be noted.
    let (_, _, used) = post(&app, Some(&key), &by_hash(&queries[0])).await;
    assert_eq!(used["data"]["__typename"], "QueryRoot", "{used}");
    app.clock.advance(TimeDelta::minutes(11));

    post(&app, Some(&key), &with_text(&queries[3])).await;
    assert_eq!(stored(&app).await, hashes(&[2, 0, 3]));
    for query in &queries[4..] {
        app.clock.advance(TimeDelta::minutes(11));
        post(&app, Some(&key), &with_text(query)).await;
        assert_eq!(stored(&app).await.len(), 3);
    }
    assert_eq!(stored(&app).await, hashes(&[3, 4, 5]));

    // A replica, which knows only the table, no longer has Q0.
    let replica = app.replica(app.state.settings.clone()).await;
    let base = format!("http://{replica}");
    let (status, cache, body) = post_to(&app, &base, Some(&key), &by_hash(&queries[0])).await;
    assert_not_found(status, &cache, &body);
}

#[tokio::test]
async fn replicas_over_one_database_share_what_either_kept() {
    let (app, key) = app().await;
    let replica = app.replica(app.state.settings.clone()).await;
    let base = format!("http://{replica}");
    let (status, cache, body) = post_to(&app, &base, Some(&key), &by_hash(PRODUCTS)).await;
    assert_not_found(status, &cache, &body);

    let (_, _, registered) = post(&app, Some(&key), &with_text(PRODUCTS)).await;
    let (status, _, there) = post_to(&app, &base, Some(&key), &by_hash(PRODUCTS)).await;
    assert_eq!(status, 200, "{there}");
    assert_eq!(there["data"], registered["data"]);
    // Both registering the same text at once is no error.
    let other = with_text("query Other { __typename }");
    let (a, b) = tokio::join!(
        post(&app, Some(&key), &other),
        post_to(&app, &base, Some(&key), &other),
    );
    assert_eq!((a.0, codes(&a.2)), (200, vec![]));
    assert_eq!((b.0, codes(&b.2)), (200, vec![]));
    assert_eq!(
        persisted_query::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        2
    );
}

#[tokio::test]
async fn a_known_hash_is_answered_without_a_write_until_its_use_is_due() {
    // An answer from the response cache is no use of the store: uncached,
    // every request uses it.
    let (app, key) = app_on(uncached(Settings::default())).await;
    post(&app, Some(&key), &with_text(PRODUCTS)).await;
    let writes = |from: usize| {
        app.statement_texts(from)
            .into_iter()
            .filter(|s| s.contains("persisted_quer") && !s.starts_with("SELECT"))
            .count()
    };
    let before = app.statements();
    post(&app, Some(&key), &by_hash(PRODUCTS)).await;
    post(&app, Some(&key), &by_hash(PRODUCTS)).await;
    assert_eq!(writes(before), 0);
    app.clock.advance(TimeDelta::minutes(11));
    let before = app.statements();
    post(&app, Some(&key), &by_hash(PRODUCTS)).await;
    post(&app, Some(&key), &by_hash(PRODUCTS)).await;
    assert_eq!(writes(before), 1);
}

#[tokio::test]
async fn in_a_batch_each_operation_is_resolved_on_its_own() {
    let (app, key) = app_with(GraphqlConfig {
        batching: true,
        ..GraphqlConfig::default()
    })
    .await;
    post(&app, Some(&key), &with_text(PRODUCTS)).await;
    let batch = json!([
        by_hash("query Unknown { __typename }"),
        by_hash(PRODUCTS),
        with_text("query Sent { __typename }"),
    ]);
    let (status, cache, body) = post(&app, Some(&key), &batch).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(codes(&body[0]), ["PERSISTED_QUERY_NOT_FOUND"], "{body}");
    assert_eq!(
        body[1]["data"]["products"]["edges"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(body[2]["data"]["__typename"], "QueryRoot");
    assert_eq!(cache, "private, no-cache, must-revalidate");
}
