//! The codes of async-graphql's own errors, over HTTP and the WebSocket
//! alike: told from where each error arose, never from its wording. A value
//! that does not fit its argument's type is INVALID_PARAMETER, whether the
//! validator, the cost of a connection or the executor finds it; a
//! document nested past the recursion limits is QUERY_TOO_COMPLEX; any
//! other request GraphQL refuses is GRAPHQL_VALIDATION_FAILED.

use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;

use crate::helpers::TestApp;
use crate::helpers::graphql::post;
use crate::ws::{self, Socket};

/// The app, a key, and a WebSocket opened with it.
async fn app() -> (TestApp, String, Socket) {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let mut socket = ws::connect(&app, &key).await;
    let ack = ws::next(&mut socket).await.expect("an answer");
    assert_eq!(ack["type"], "connection_ack");
    (app, key, socket)
}

/// The codes of the errors of `errors`, in order.
fn codes(errors: &Value) -> Vec<String> {
    let errors = errors.as_array().expect("errors");
    let code = |e: &Value| {
        e["extensions"]["code"]
            .as_str()
            .unwrap_or("<none>")
            .to_owned()
    };
    errors.iter().map(code).collect()
}

/// Asserts the codes of the errors of `query` with `variables`, sent over
/// HTTP and as operation `id` over the WebSocket.
async fn assert_codes(
    app: &mut (TestApp, String, Socket),
    id: usize,
    query: &str,
    variables: Value,
    expected: &[&str],
) {
    let (_, body) = post(&app.0, Some(&app.1), query, variables.clone()).await;
    assert_eq!(codes(&body["errors"]), expected, "HTTP {query}: {body}");
    assert_websocket_codes(&mut app.2, id, query, variables, expected).await;
}

/// Asserts the codes of the errors of `query` with `variables`, sent as
/// operation `id` over `socket` (as subscriptions must be).
async fn assert_websocket_codes(
    socket: &mut Socket,
    id: usize,
    query: &str,
    variables: Value,
    expected: &[&str],
) {
    let id = id.to_string();
    let subscribe = json!({
        "id": id,
        "type": "subscribe",
        "payload": { "query": query, "variables": variables }
    });
    let text = Message::text(subscribe.to_string());
    socket.send(text).await.expect("sent");
    let reply = ws::next(socket).await.expect("a reply");
    // Refused before it runs, or run with errors (then completed).
    let errors = match reply["type"].as_str() {
        Some("error") => &reply["payload"],
        _ => &reply["payload"]["errors"],
    };
    assert_eq!(codes(errors), expected, "WebSocket {query}: {reply}");
    if reply["type"] == "next" {
        let complete = ws::next(socket).await.expect("complete");
        assert_eq!(complete["type"], "complete", "{complete}");
    }
}

#[tokio::test]
async fn a_document_that_does_not_parse_is_validation_failed_whatever_it_quotes() {
    let mut app = app().await;
    // The parser's message quotes the document.
    for (id, query) in [
        "{ brands(",
        "{ brands(marketplace: \"recursion\") ",
        "{ brands(marketplace: \"Failed to parse\") ",
        "{ brands(marketplace: \"Invalid value for argument\") ",
    ]
    .into_iter()
    .enumerate()
    {
        let expected = ["GRAPHQL_VALIDATION_FAILED"];
        assert_codes(&mut app, id, query, json!({}), &expected).await;
    }
}

#[tokio::test]
async fn fragments_spread_deeper_than_the_validators_recursion_limit_are_too_complex() {
    let mut app = app().await;
    let mut chain = String::from("{ __type(name: \"Product\") { ...F0 } }\n");
    for i in 0..70 {
        let next = i + 1;
        chain.push_str(&format!(
            "fragment F{i} on __Type {{ ofType {{ ...F{next} }} }}\n"
        ));
    }
    chain.push_str("fragment F70 on __Type { name }\n");
    assert_codes(&mut app, 1, &chain, json!({}), &["QUERY_TOO_COMPLEX"]).await;
}

#[tokio::test]
async fn a_known_arguments_value_the_validator_refuses_is_invalid_parameter() {
    let mut app = app().await;
    let invalid = ["INVALID_PARAMETER"];
    let brands = "query($m: Marketplace) { brands(marketplace: $m) { brand } }";
    for (id, (query, variables)) in [
        ("{ brands(marketplace: AMAZON) { brand } }", json!({})),
        (brands, json!({ "m": "AMAZON" })),
        // Arguments of directives and of introspection are checked alike.
        ("{ me @skip(if: 3) { id } }", json!({})),
        ("{ __type(name: 3) { name } }", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        assert_codes(&mut app, id, query, variables, &invalid).await;
    }
    // The cost of a products list reads its filter (a substring costs
    // more): refused by the validator and by the cost.
    let filter = "query($f: ProductFilterInput) { products(filter: $f) { totalCount } }";
    let variables = json!({ "f": { "marketplace": "AMAZON" } });
    let twice = ["INVALID_PARAMETER", "INVALID_PARAMETER"];
    assert_codes(&mut app, 4, filter, variables, &twice).await;
}

#[tokio::test]
async fn other_errors_at_an_argument_are_validation_failed() {
    let mut app = app().await;
    let failed = "GRAPHQL_VALIDATION_FAILED";
    for (id, (query, expected)) in [
        // Unknown here, though other fields have an argument of that name.
        (
            "{ sellers(lookup: { tin: \"1\" }) { products(filter: {}) { totalCount } } }",
            vec![failed],
        ),
        ("{ brands(nope: OZON) { brand } }", vec![failed]),
        // Given twice: the repetition, then the value that does not fit.
        (
            "{ brands(marketplace: OZON, marketplace: OZON) { brand } }",
            vec![failed],
        ),
        (
            "{ brands(marketplace: OZON, marketplace: AMAZON) { brand } }",
            vec![failed, "INVALID_PARAMETER"],
        ),
        // A variable the operation does not define.
        ("{ product(id: $id) { id } }", vec![failed]),
        ("query Q { product(id: $id) { id } }", vec![failed]),
    ]
    .into_iter()
    .enumerate()
    {
        assert_codes(&mut app, id, query, json!({}), &expected).await;
    }
}

#[tokio::test]
async fn a_value_that_fails_to_parse_while_running_is_invalid_parameter() {
    let mut app = app().await;
    let invalid = ["INVALID_PARAMETER"];
    let product = "query($id: UUID!) { product(id: $id) { id } }";
    let history = format!(
        "query($f: PriceHistoryFilterInput) {{ priceHistory(productId: \"{}\", filter: $f) {{ totalCount }} }}",
        Uuid::nil()
    );
    for (id, (query, variables)) in [
        ("{ product(id: \"not-a-uuid\") { id } }", json!({})),
        ("{ product(id: 5) { id } }", json!({})),
        (product, json!({ "id": "not-a-uuid" })),
        (&history, json!({ "f": { "from": "yesterday" } })),
    ]
    .into_iter()
    .enumerate()
    {
        assert_codes(&mut app, id, query, variables, &invalid).await;
    }
    let subscription = "subscription { scrapeSessionUpdated(id: \"not-a-uuid\") { status } }";
    assert_websocket_codes(&mut app.2, 99, subscription, json!({}), &invalid).await;
}

#[tokio::test]
async fn a_required_variable_without_a_value_is_validation_failed() {
    let mut app = app().await;
    let failed = ["GRAPHQL_VALIDATION_FAILED"];
    let nested = format!(
        "query($t: DateTime!) {{ priceHistory(productId: \"{}\", filter: {{ from: $t }}) {{ totalCount }} }}",
        Uuid::nil()
    );
    for (id, query) in [
        "query($id: UUID!) { product(id: $id) { id } }",
        &nested,
        // Read by the cost of a connection.
        "query($n: Int!) { products(first: $n) { totalCount } }",
    ]
    .into_iter()
    .enumerate()
    {
        assert_codes(&mut app, id, query, json!({}), &failed).await;
    }
    let subscription = "subscription($id: UUID!) { scrapeSessionUpdated(id: $id) { status } }";
    assert_websocket_codes(&mut app.2, 99, subscription, json!({}), &failed).await;
}

#[tokio::test]
async fn a_page_size_past_an_int_is_invalid_parameter() {
    let mut app = app().await;
    let invalid = "INVALID_PARAMETER";
    let huge = json!({ "n": 3_000_000_000u64 });
    for (id, (query, variables, expected)) in [
        (
            "{ products(first: 3000000000) { totalCount } }",
            json!({}),
            vec![invalid],
        ),
        (
            "{ p: products(last: 3000000000) { totalCount } }",
            json!({}),
            vec![invalid],
        ),
        (
            "query($n: Int) { products(first: $n) { totalCount } }",
            huge,
            vec![invalid],
        ),
        (
            "{ ...F } fragment F on QueryRoot { products(first: 3000000000) { totalCount } }",
            json!({}),
            vec![invalid],
        ),
        // Not a number at all: refused by the validator and by the cost.
        (
            "{ products(first: \"x\") { totalCount } }",
            json!({}),
            vec![invalid, invalid],
        ),
        // Beside the field's own faults.
        (
            "{ products(first: 3000000000) }",
            json!({}),
            vec!["GRAPHQL_VALIDATION_FAILED", invalid],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        assert_codes(&mut app, id, query, variables, &expected).await;
    }
}

#[tokio::test]
async fn a_request_naming_no_operation_of_its_document_is_validation_failed() {
    let mut app = app().await;
    let two = "query A { me { id } } query B { me { id } }";
    assert_codes(&mut app, 1, two, json!({}), &["GRAPHQL_VALIDATION_FAILED"]).await;
    let (app, key, _) = &app;
    let body = json!({ "query": two, "operationName": "C" });
    let body: Value = app
        .post_as(key, "/graphql", &body)
        .await
        .json()
        .await
        .expect("JSON");
    assert!(body.get("data").is_none(), "never executed: {body}");
    assert_eq!(
        codes(&body["errors"]),
        ["GRAPHQL_VALIDATION_FAILED"],
        "{body}"
    );
}
