//! GraphQL's limits of a query, and GraphQL under hostile input: every
//! document is measured before it is validated or run (fields after
//! fragment expansion, aliases, depth, complexity, introspection's cost,
//! size) and each answer reports its cost, an admitted request has a
//! deadline, a body that is not a GraphQL request is refused, and the
//! WebSocket obeys the rate limit and a key's revocation like HTTP.

use std::time::{Duration, Instant};

use entity::Marketplace;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::config::{GraphqlConfig, Settings};
use vitrina::limits::Limits;

use crate::fixtures::{self, insert_product, insert_seller, product};
use crate::helpers::TestApp;
use crate::helpers::graphql::{
    GRAPHQL_RESPONSE, data, nodes, only_error_code, post, post_body, statements_for,
};
use crate::helpers::uploads::{item, send};
use crate::ws;

/// The one error of a refused request: its code and message.
fn refusal(body: &Value) -> (String, String) {
    assert!(body.get("data").is_none(), "never executed: {body}");
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{body}");
    let code = errors[0]["extensions"]["code"].as_str().unwrap_or_default();
    let message = errors[0]["message"].as_str().unwrap_or_default();
    (code.to_owned(), message.to_owned())
}

/// Statements of a request that resolves nothing, API-key bookkeeping
/// aside (measured after a first request).
async fn admission_cost(app: &TestApp, key: &str) -> usize {
    data(app, key, "{ __typename }", json!({})).await;
    statements_for(app, key, "{ __typename }", json!({}))
        .await
        .0
}

/// Asserts `query` is refused before execution as too complex, with a
/// message holding `words`: one clear error, no data, and no statement
/// beyond what admission takes.
async fn assert_too_complex(app: &TestApp, key: &str, query: &str, variables: Value, words: &str) {
    let admission = admission_cost(app, key).await;
    let before = app.statements();
    let (status, body) = post(app, Some(key), query, variables).await;
    assert_eq!(app.statements() - before, admission, "nothing executed");
    assert_eq!(status, 200, "{body}");
    let (code, message) = refusal(&body);
    assert_eq!(code, "QUERY_TOO_COMPLEX", "{body}");
    assert!(message.contains(words), "{message:?} says {words:?}");
}

/// `levels` fragments on the query root, each spreading the one below twice:
/// `2^levels` fields in a few hundred bytes.
fn fragment_bomb(levels: u32) -> String {
    let mut query =
        format!("query {{ ...G{levels} }}\nfragment G0 on QueryRoot {{ __typename }}\n");
    for level in 1..=levels {
        let below = level - 1;
        query.push_str(&format!(
            "fragment G{level} on QueryRoot {{ ...G{below} ...G{below} }}\n"
        ));
    }
    query
}

/// `n` aliased `__typename` fields.
fn aliases(n: usize) -> String {
    let fields: Vec<String> = (0..n).map(|i| format!("a{i}: __typename")).collect();
    format!("{{ {} }}", fields.join(" "))
}

#[tokio::test]
async fn spreads_are_counted_expanded_and_a_fragment_bomb_is_refused_at_once() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let bomb = fragment_bomb(29);
    assert!(bomb.len() < 2_000, "a small document: {}", bomb.len());
    let words = "asks for 536870912 fields once its fragments are expanded; \
                 the limit is 2000 (VITRINA_GRAPHQL_MAX_FIELDS)";
    assert_too_complex(&app, &key, &bomb, json!({}), words).await;
    // Counts that pass any integer are still refused, and named.
    assert_too_complex(&app, &key, &fragment_bomb(80), json!({}), "more than").await;
    // 2^10 fields expanded is within the default limit and answered.
    let (status, body) = post(&app, Some(&key), &fragment_bomb(10), json!({})).await;
    assert_eq!(
        (status, &body["data"]["__typename"]),
        (200, &json!("QueryRoot"))
    );
}

#[tokio::test]
async fn aliases_and_typename_count_as_fields() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let words = "uses 101 aliases once its fragments are expanded; \
                 the limit is 100 (VITRINA_GRAPHQL_MAX_ALIASES)";
    assert_too_complex(&app, &key, &aliases(101), json!({}), words).await;
    let (status, body) = post(&app, Some(&key), &aliases(100), json!({})).await;
    assert_eq!((status, &body["data"]["a99"]), (200, &json!("QueryRoot")));
    // The same field asked again is worked again: each one counts.
    let typenames = format!("{{ {} }}", "__typename ".repeat(2_001));
    assert_too_complex(&app, &key, &typenames, json!({}), "asks for 2001 fields").await;
    // Aliases hidden in a fragment count each time it is spread.
    let spread = format!(
        "{{ ...F ...F }} fragment F on QueryRoot {{ {} }}",
        &aliases(51)[2..aliases(51).len() - 2]
    );
    assert_too_complex(&app, &key, &spread, json!({}), "uses 102 aliases").await;
}

#[tokio::test]
async fn directives_are_counted_and_limited() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let included = |n: usize| {
        let fields: Vec<String> = (0..n)
            .map(|_| "__typename @include(if: true)".to_owned())
            .collect();
        format!("{{ {} }}", fields.join(" "))
    };
    let (status, body) = post(&app, Some(&key), &included(100), json!({})).await;
    assert_eq!(
        (status, &body["data"]["__typename"]),
        (200, &json!("QueryRoot"))
    );
    let words = "uses 101 directives once its fragments are expanded; \
                 the limit is 100 (VITRINA_GRAPHQL_MAX_DIRECTIVES)";
    assert_too_complex(&app, &key, &included(101), json!({}), words).await;
    // Thousands of unknown directives on one field: one refusal, not an
    // error for each.
    let unknown = format!("{{ __typename {} }}", "@a ".repeat(10_000));
    assert_too_complex(&app, &key, &unknown, json!({}), "uses 10000 directives").await;
}

#[tokio::test]
async fn every_operation_of_a_document_is_measured_whichever_is_asked_for() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let fields: Vec<String> = (0..150).map(|i| format!("f{i}: __typename")).collect();
    let mut query = format!("fragment F on QueryRoot {{ {} }}\n", fields.join(" "));
    for i in 0..20 {
        query.push_str(&format!("query Q{i} {{ ...F }}\n"));
    }
    let request = json!({ "query": query, "operationName": "Q0" });
    let (_, body) = post_body(&app, Some(&key), &request).await;
    let (code, message) = refusal(&body);
    assert_eq!(code, "QUERY_TOO_COMPLEX");
    assert!(message.contains("asks for 3000 fields"), "{message}");
}

#[tokio::test]
async fn the_websocket_holds_documents_to_the_same_limits() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let mut socket = ws::connect(&app, &key).await;
    assert_eq!(
        ws::next(&mut socket).await.unwrap()["type"],
        "connection_ack"
    );
    let limit = GraphqlConfig::default().max_document_bytes;
    for (id, query, words) in [
        ("1", fragment_bomb(29), "asks for 536870912 fields"),
        ("2", aliases(101), "uses 101 aliases"),
        (
            "3",
            format!("{}{}", "{ me ".repeat(100), "}".repeat(100)),
            "100 levels deep",
        ),
        (
            "4",
            format!("{{ __typename }}\n#{}", "x".repeat(limit)),
            "bytes long",
        ),
    ] {
        ws::send(&mut socket, id, &query).await;
        let reply = ws::next(&mut socket).await.expect("a reply");
        let error = &reply["payload"]["errors"][0];
        assert_eq!(error["extensions"]["code"], "QUERY_TOO_COMPLEX", "{reply}");
        assert!(reply["payload"]["data"].is_null(), "{reply}");
        assert_eq!(ws::next(&mut socket).await.unwrap()["type"], "complete");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains(words), "{message}");
    }
}

#[tokio::test]
async fn a_document_over_the_size_limit_is_refused_unparsed() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let limit = GraphqlConfig::default().max_document_bytes;
    let padded = |len: usize| {
        let query = "{ __typename }\n#";
        format!("{query}{}", "x".repeat(len - query.len()))
    };
    let (status, body) = post(&app, Some(&key), &padded(limit), json!({})).await;
    assert_eq!(
        (status, &body["data"]["__typename"]),
        (200, &json!("QueryRoot"))
    );
    let words = format!(
        "document is {} bytes long; the limit is {limit} (VITRINA_GRAPHQL_MAX_DOCUMENT_BYTES)",
        limit + 1
    );
    assert_too_complex(&app, &key, &padded(limit + 1), json!({}), &words).await;
    // A megabyte of aliased fields is refused as fast as any other.
    assert_too_complex(&app, &key, &aliases(70_000), json!({}), "the limit is").await;
}

#[tokio::test]
async fn nesting_past_the_parsers_recursion_limit_is_a_clear_error() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let limit = GraphqlConfig::default().max_document_bytes;
    for (open, close) in [("{ me ", "}"), ("{ products(brand: [", "]) }")] {
        let depth = limit / (open.len() + close.len()) - 1;
        let query = format!("{}{}", open.repeat(depth), close.repeat(depth));
        let (status, body) = post(&app, Some(&key), &query, json!({})).await;
        assert_eq!(status, 200, "{body}");
        let (code, message) = refusal(&body);
        assert_eq!(code, "QUERY_TOO_COMPLEX", "{message}");
        assert!(message.contains("the limit is 64"), "{message}");
    }
    // Within the parser's nesting, past the validator's (64 levels, counted
    // through the fragments spread): an introspection chain, out of the
    // data depth and cheap to answer.
    let mut chain = String::from("{ __type(name: \"Product\") { ...F0 } }\n");
    for i in 0..70 {
        chain.push_str(&format!(
            "fragment F{i} on __Type {{ ofType {{ ...F{} }} }}\n",
            i + 1
        ));
    }
    chain.push_str("fragment F70 on __Type { name }\n");
    let (status, body) = post(&app, Some(&key), &chain, json!({})).await;
    assert_eq!(status, 200, "{body}");
    let (code, message) = refusal(&body);
    assert_eq!(code, "QUERY_TOO_COMPLEX", "{message}");
    // The server still answers.
    let (status, _) = post(&app, Some(&key), "{ __typename }", json!({})).await;
    assert_eq!(status, 200);
}

/// The introspection queries real clients send, as captured by
/// `tests/fixtures/introspection/capture.sh`.
fn introspection_queries() -> Vec<(String, String)> {
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/introspection");
    let mut queries: Vec<(String, String)> = std::fs::read_dir(folder)
        .expect("the captured queries")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "graphql"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    queries.sort();
    assert_eq!(
        queries.len(),
        6,
        "graphql-js 16, 17 and graphql-core 3.2, two option sets each"
    );
    queries
}

#[tokio::test]
async fn the_standard_introspection_queries_answer_at_the_default_limits() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (client, query) in introspection_queries() {
        let (status, body) = post(&app, Some(&key), &query, json!({})).await;
        assert_eq!(status, 200, "{client}: {body}");
        assert!(body.get("errors").is_none(), "{client}: {}", body["errors"]);
        let types = body["data"]["__schema"]["types"].as_array().expect("types");
        assert!(
            types.iter().any(|t| t["name"] == "Product"),
            "{client}: the schema's own types"
        );
        // Deeper than the data limit of 10, yet answered.
        assert!(body["extensions"]["analyzer"]["depth"].as_u64().unwrap() > 10);
    }
}

/// One walk over the schema: each type, each of its fields' arguments,
/// and the fields of each field's type.
const SCHEMA_WALK: &str = "__schema { types { fields { args { name } type { ofType { \
                           fields { name } } } } } }";

#[tokio::test]
async fn introspection_costs_by_the_lists_it_sits_in() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // Allowed once, but not asked for over and over under aliases.
    let (status, body) = post(&app, Some(&key), &format!("{{ {SCHEMA_WALK} }}"), json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["__schema"]["types"].is_array(), "{body}");
    let copies: Vec<String> = (0..90).map(|i| format!("s{i}: {SCHEMA_WALK}")).collect();
    let words = "introspection costs 5310180 (each field 1, times the longest list of this \
                 schema it sits in); the limit is 500000 (VITRINA_GRAPHQL_MAX_INTROSPECTION_COST)";
    assert_too_complex(
        &app,
        &key,
        &format!("{{ {} }}", copies.join(" ")),
        json!({}),
        words,
    )
    .await;
    // Nor nested over and over, through fragments and inline fragments.
    let nested = "{ __type(name: \"Product\") { ...A } } \
                  fragment A on __Type { fields { type { ... on __Type { ...B } } } } \
                  fragment B on __Type { fields { type { fields { type { fields { type { fields { name } } } } } } } }";
    assert_too_complex(
        &app,
        &key,
        nested,
        json!({}),
        "VITRINA_GRAPHQL_MAX_INTROSPECTION_COST",
    )
    .await;
    // Nor a leaf repeated inside a list.
    let repeated = format!(
        "{{ __schema {{ types {{ fields {{ {} }} }} }} }}",
        "name ".repeat(1_000)
    );
    assert_too_complex(
        &app,
        &key,
        &repeated,
        json!({}),
        "VITRINA_GRAPHQL_MAX_INTROSPECTION_COST",
    )
    .await;
}

#[tokio::test]
async fn data_depth_is_limited_whatever_introspection_sits_beside_it() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // 11 levels of data, hidden in a fragment on the connection's node.
    let deep = "{ products(first: 1) { edges { node { ...P } } } } \
                fragment P on Product { seller { products(first: 1) { edges { node { seller { \
                products(first: 1) { edges { cursor } } } } } } } }";
    assert_too_complex(
        &app,
        &key,
        deep,
        json!({}),
        "nests its fields 11 levels deep",
    )
    .await;
}

/// An app whose GraphQL deadline is 300 ms, and a key.
async fn with_deadline_of_300_ms() -> (TestApp, String) {
    let app = TestApp::spawn_with_settings(Settings {
        graphql: GraphqlConfig {
            deadline_ms: 300,
            ..GraphqlConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    (app, key)
}

#[tokio::test]
async fn a_request_past_its_deadline_is_answered_timeout_and_its_work_dropped() {
    let (app, key) = with_deadline_of_300_ms().await;
    // Every connection of the pool held: the request waits on the database.
    let held = hold_the_pool(&app).await;
    let started = Instant::now();
    let (status, body) = post(&app, Some(&key), "{ me { id } }", json!({})).await;
    let waited = started.elapsed();
    assert_eq!(status, 503, "{body}");
    let (code, message) = refusal(&body);
    assert_eq!(code, "TIMEOUT");
    assert!(
        message.contains("deadline of 300 ms (VITRINA_GRAPHQL_DEADLINE_MS)"),
        "{message}"
    );
    // Answered at the deadline, long before the pool's own 10 s timeout.
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    drop(held);
    let (status, body) = post(&app, Some(&key), "{ me { id } }", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["me"]["id"].is_string(), "{body}");
}

/// Holds every connection of the app's pool, so that a request waits on
/// the database.
pub async fn hold_the_pool(app: &TestApp) -> Vec<sea_orm::DatabaseTransaction> {
    let mut held = Vec::new();
    let hold = || {
        tokio::time::timeout(
            Duration::from_secs(1),
            sea_orm::TransactionTrait::begin(&app.db),
        )
    };
    while let Ok(transaction) = hold().await {
        held.push(transaction.expect("a connection"));
    }
    assert!(!held.is_empty());
    held
}

#[tokio::test]
async fn a_query_over_the_websocket_has_the_same_deadline() {
    let (app, key) = with_deadline_of_300_ms().await;
    let mut socket = ws::connect(&app, &key).await;
    assert_eq!(
        ws::next(&mut socket).await.unwrap()["type"],
        "connection_ack"
    );
    let held = hold_the_pool(&app).await;
    ws::send(&mut socket, "1", "{ products(first: 1) { totalCount } }").await;
    let reply = ws::next(&mut socket).await.expect("a reply");
    let error = &reply["payload"]["errors"][0];
    assert_eq!(error["extensions"]["code"], "TIMEOUT", "{reply}");
    assert!(reply["payload"]["data"].is_null(), "{reply}");
    assert_eq!(ws::next(&mut socket).await.unwrap()["type"], "complete");
    drop(held);
    ws::send(&mut socket, "2", "{ products(first: 1) { totalCount } }").await;
    let reply = ws::next(&mut socket).await.expect("a reply");
    assert_eq!(
        reply["payload"]["data"]["products"]["totalCount"], 0,
        "{reply}"
    );
}

#[tokio::test]
async fn a_body_that_is_not_json_is_refused_with_415() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for content_type in [
        Some("text/plain"),
        Some("application/graphql"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut request = app
            .client
            .post(app.url("/graphql"))
            .bearer_auth(&key)
            .body(r#"{"query": "{ __typename }"}"#);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 415, "{content_type:?}");
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(
            body["errors"][0]["extensions"]["code"], "UNSUPPORTED_MEDIA_TYPE",
            "{body}"
        );
    }
    // The media type's parameters and case do not matter.
    let response = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(&key)
        .header("content-type", "Application/JSON; charset=utf-8")
        .body(r#"{"query": "{ __typename }"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

/// A worst document per limit, each refused or answered at once.
fn worst_documents() -> Vec<String> {
    let limit = GraphqlConfig::default().max_document_bytes;
    let product = "id externalId name brand url categoryPath attributes imageCover trustStatus \
                   firstSeenAt lastSeenAt seller { name } prices { price currency } \
                   priceHistory(first: 5) { edges { node { price } } }";
    vec![
        fragment_bomb(29),
        fragment_bomb(60),
        aliases(limit / "a9999: __typename ".len()),
        format!("{{ {} }}", "__typename ".repeat(limit / 11)),
        format!("{}{}", "{ me ".repeat(limit / 7), "}".repeat(limit / 7)),
        // Within every limit: the most a data query may ask for.
        format!("{{ products(first: 150) {{ totalCount edges {{ node {{ {product} }} }} }} }}"),
        // Within every limit: as much introspection as it may ask for
        // (each walk costs 46,852 of the 500,000 allowed).
        format!(
            "{{ {} }}",
            (0..10)
                .map(|i| format!("s{i}: {SCHEMA_WALK}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    ]
}

#[tokio::test]
async fn the_worst_documents_do_not_hold_up_health_checks_or_other_callers() {
    let (app, key) = TestApp::demo(200, 17).await;
    // Another caller: an account of its own, as the attackers' may run out
    // of database time (`limits::db_time`) and be refused.
    let other = app.key("bystander").await;
    let app = std::sync::Arc::new(app);
    let stop = Instant::now() + Duration::from_secs(4);
    let mut attackers = Vec::new();
    for worker in 0..4 {
        let (app, key) = (app.clone(), key.clone());
        attackers.push(tokio::spawn(async move {
            let documents = worst_documents();
            let mut answered = 0;
            let mut turn = worker;
            while Instant::now() < stop {
                let query = &documents[turn % documents.len()];
                let (status, body) = post(&app, Some(&key), query, json!({})).await;
                assert!(status < 500, "{status}: {body}");
                assert!(body["errors"].is_array() || body["data"].is_object());
                answered += 1;
                turn += 1;
            }
            answered
        }));
    }
    let mut slowest = Duration::ZERO;
    while Instant::now() < stop {
        let started = Instant::now();
        let health = app.get("/healthz").await;
        assert_eq!(health.status(), 200);
        let (status, body) = post(&app, Some(&other), "{ me { id } }", json!({})).await;
        assert_eq!(status, 200, "{body}");
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for attacker in attackers {
        assert!(attacker.await.unwrap() > 0, "every attacker was answered");
    }
    // Before these limits one fragment bomb kept a core busy for minutes.
    assert!(
        slowest < Duration::from_secs(2),
        "slowest small request: {slowest:?}"
    );
}

#[tokio::test]
async fn every_operation_over_the_websocket_counts_against_the_rate_limit() {
    let app = TestApp::spawn_with(Limits {
        rate_per_minute: 5,
        ..Limits::default()
    })
    .await;
    let key = app.key("acme").await;
    let mut socket = ws::connect(&app, &key).await;
    assert_eq!(
        ws::next(&mut socket).await.unwrap()["type"],
        "connection_ack"
    );
    // The connection was one request; four operations fit, then none.
    let mut codes = Vec::new();
    for id in 1..=6 {
        ws::send(&mut socket, &id.to_string(), "{ me { id } }").await;
        let reply = ws::next(&mut socket).await.expect("a reply");
        codes.push(reply["payload"]["errors"][0]["extensions"]["code"].clone());
        if reply["type"] == "next" {
            assert_eq!(ws::next(&mut socket).await.unwrap()["type"], "complete");
        }
    }
    let limited = json!("RATE_LIMITED");
    assert_eq!(
        codes,
        [
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            limited.clone(),
            limited
        ]
    );
    // HTTP shares the same count.
    let (status, _) = post(&app, Some(&key), "{ __typename }", json!({})).await;
    assert_eq!(status, 429);
}

#[tokio::test]
async fn a_revoked_key_closes_its_sockets_and_their_subscriptions_within_a_second() {
    let app = TestApp::spawn().await;
    let created = vitrina::accounts::create_key(&app.db, "acme", app.clock.now())
        .await
        .unwrap();
    let (key, key_id) = (created.secret, created.key.id);
    let other = app.key("acme").await;
    let session = send(&app, &key, vec![item("1")]).await;
    let subscription =
        format!("subscription {{ scrapeSessionUpdated(id: \"{session}\") {{ status }} }}");
    let mut revoked = ws::connect(&app, &key).await;
    let mut kept = ws::connect(&app, &other).await;
    for socket in [&mut revoked, &mut kept] {
        assert_eq!(ws::next(socket).await.unwrap()["type"], "connection_ack");
        ws::send(socket, "1", &subscription).await;
        assert_eq!(ws::next(socket).await.unwrap()["type"], "next");
    }
    vitrina::accounts::revoke_key(&app.db, key_id, app.clock.now())
        .await
        .unwrap();
    let started = Instant::now();
    let close = loop {
        match tokio::time::timeout(Duration::from_secs(5), revoked.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame,
            Ok(Some(Ok(_))) => continue,
            other => panic!("the socket was not closed: {other:?}"),
        }
    };
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let close = close.expect("a close frame");
    assert_eq!(u16::from(close.code), 4403, "{close:?}");
    // The other key's socket and its subscription go on: a merge is pushed.
    app.jobs().tick().await.unwrap();
    let update = ws::next(&mut kept).await.expect("an update");
    assert_eq!(update["type"], "next", "{update}");
}

// ---------------------------------------------------------------- configured depth and complexity

async fn limited_app() -> (TestApp, String) {
    let app = TestApp::spawn_with_settings(Settings {
        graphql: GraphqlConfig {
            max_depth: 5,
            max_complexity: 60,
            ..GraphqlConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    insert_product(&app.db, &shop, product("p")).await;
    // Stamps the key's last use, so later requests cost only admission.
    data(&app, &key, "{ __typename }", json!({})).await;
    (app, key)
}

#[tokio::test]
async fn too_deep_query_is_refused_before_execution() {
    let (app, key) = limited_app().await;
    let deep = "{ products(first: 1) { edges { node { seller { products(first: 1) { totalCount } } } } } }";
    let words = "nests its fields 6 levels deep; the limit is 5 (VITRINA_GRAPHQL_MAX_DEPTH)";
    assert_too_complex(&app, &key, deep, json!({}), words).await;
    let at_limit = "{ products(first: 1) { edges { node { seller { name } } } } }";
    let d = data(&app, &key, at_limit, json!({})).await;
    assert_eq!(nodes(&d["products"]).len(), 1);
}

#[tokio::test]
async fn too_complex_query_is_refused_before_execution() {
    let (app, key) = limited_app().await;
    // 30 products x (edges + node + id + name) + 1 = 121 > 60.
    let wide = "{ products(first: 30) { edges { node { id name } } } }";
    let words = "complexity is 121 (each field 1, a connection's fields times its page size); \
                 the limit is 60 (VITRINA_GRAPHQL_MAX_COMPLEXITY)";
    assert_too_complex(&app, &key, wide, json!({}), words).await;
    let through_variable = "query($n: Int) { products(first: $n) { edges { node { id name } } } }";
    assert_too_complex(&app, &key, through_variable, json!({ "n": 30 }), words).await;
    let without_size = "{ products { edges { node { id } } } }";
    assert_too_complex(&app, &key, without_size, json!({}), "the limit is 60").await;
    data(
        &app,
        &key,
        "{ products(first: 10) { edges { node { id name } } } }",
        json!({}),
    )
    .await;
}

#[tokio::test]
async fn refused_query_is_http_400_with_the_graphql_response_media_type() {
    let (app, key) = limited_app().await;
    let wide = "{ products(first: 30) { edges { node { id name } } } }";
    let response = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(&key)
        .header("accept", GRAPHQL_RESPONSE)
        .json(&json!({ "query": wide }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "QUERY_TOO_COMPLEX");
}

#[tokio::test]
async fn each_query_reports_its_complexity_and_depth() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let query = "{ products(first: 2) { totalCount edges { node { id } } } }";
    let (status, body) = post(&app, Some(&key), query, json!({})).await;
    assert_eq!(status, 200);
    // products: 2 x (edges 1 + node 1 + id 1) + 1, and its count once,
    // whatever the page size: 1 (the catalog's count is kept).
    assert_eq!(
        body["extensions"]["analyzer"],
        json!({ "complexity": 8, "depth": 4 }),
        "{body}"
    );
    let (_, body) = post(&app, Some(&key), "{ brands { brand } }", json!({})).await;
    assert_eq!(
        body["extensions"]["analyzer"],
        json!({ "complexity": 2, "depth": 2 })
    );
}

#[tokio::test]
async fn one_query_text_sent_again_is_costed_for_its_own_operation_and_variables() {
    let app = TestApp::spawn_with_settings(Settings {
        graphql: GraphqlConfig {
            max_complexity: 50,
            ..GraphqlConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    // The server keeps the cost of requests it costed: a page size, an
    // operation or a value that no longer fits its type must be costed anew.
    let send = |query: &'static str, operation: &'static str, variables: Value| {
        let body = json!({ "query": query, "operationName": operation, "variables": variables });
        let (app, key) = (&app, &key);
        async move {
            let response = app.post_as(key, "/graphql", &body).await;
            response.json::<Value>().await.unwrap()
        }
    };
    let page = "query Page($n: Int!) { products(first: $n) { edges { node { id } } } }";
    // products: n x (edges 1 + node 1 + id 1) + 1.
    for (n, complexity) in [(2, 7), (5, 16), (2, 7)] {
        for _ in 0..2 {
            let body = send(page, "Page", json!({ "n": n })).await;
            assert!(body.get("errors").is_none(), "{body}");
            let analyzer = &body["extensions"]["analyzer"];
            assert_eq!(analyzer["complexity"], json!(complexity), "n = {n}: {body}");
        }
    }
    let body = send(page, "Page", json!({ "n": 20 })).await;
    assert_eq!(only_error_code(&body), "QUERY_TOO_COMPLEX", "{body}");

    let two = "query One($id: UUID!) { product(id: $id) { id } } query Brands { brands { brand } }";
    for _ in 0..2 {
        let body = send(two, "One", json!({ "id": Uuid::nil() })).await;
        assert_eq!(only_error_code(&body), "NOT_FOUND", "{body}");
        let body = send(two, "Brands", json!({})).await;
        assert_eq!(body["data"], json!({ "brands": [] }), "{body}");
    }
    let body = send(two, "One", json!({ "id": "not a uuid" })).await;
    assert_eq!(body["data"], Value::Null, "{body}");
    let code = &body["errors"][0]["extensions"]["code"];
    assert_eq!(code, "INVALID_PARAMETER", "{body}");
    let body = send(two, "Neither", json!({})).await;
    assert!(body.get("data").is_none(), "{body}");
    assert!(
        body["errors"].as_array().is_some_and(|e| !e.is_empty()),
        "{body}"
    );
}
