//! GraphQL over HTTP: media types, GET, methods, unreadable bodies and
//! batching; a parsed query answered per request; fields answered in the
//! query's order and as it selects them; the GraphiQL page.

use entity::Marketplace;
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::config::{GraphqlConfig, Settings};

use crate::fixtures::{self, insert_product, insert_seller, product};
use crate::helpers::graphql::{
    GRAPHQL_RESPONSE, data, demo_app, nodes, only_error_code, post_body,
};
use crate::helpers::{TestApp, encoded};

async fn post_accepting(
    app: &TestApp,
    key: &str,
    accept: Option<&str>,
    query: &str,
) -> (u16, String, Value) {
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .bearer_auth(key)
        .json(&json!({ "query": query }));
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let media = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (status, media, response.json().await.unwrap())
}

#[tokio::test]
async fn one_query_text_sent_again_is_answered_for_its_own_variables_and_operation() {
    let (app, key) = demo_app(3).await;
    // The server keeps parsed documents by query text: what a request's
    // variables and operation name select must still be per request.
    let query = "query Named($with: Boolean!) { products(first: 1) { edges { node { id name @include(if: $with) } } } }
                 query Count { products(first: 1) { totalCount } }";
    let send = |operation: &'static str, variables: Value| {
        let app = &app;
        let key = &key;
        async move {
            let body =
                json!({ "query": query, "operationName": operation, "variables": variables });
            let body: Value = app
                .post_as(key, "/graphql", &body)
                .await
                .json()
                .await
                .unwrap();
            assert!(body.get("errors").is_none(), "{body}");
            body["data"]["products"].clone()
        }
    };
    for with in [true, false, true] {
        let products = send("Named", json!({ "with": with })).await;
        let node = &products["edges"][0]["node"];
        assert!(node["id"].is_string(), "{products}");
        assert_eq!(node.get("name").is_some(), with, "{products}");
    }
    let products = send("Count", json!({})).await;
    assert_eq!(products, json!({ "totalCount": 3 }));
}

#[tokio::test]
async fn fields_are_answered_in_the_order_the_query_asks_for_them() {
    let (app, key) = demo_app(3).await;
    // Neither alphabetical nor declaration order, so only the query's order passes.
    let query =
        "{ products(first: 2) { edges { node { name id marketplace brand } } totalCount } }";
    let text = app
        .post_as(&key, "/graphql", &json!({ "query": query }))
        .await
        .text()
        .await
        .unwrap();
    let node = text.find(r#""node":{"#).expect(&text);
    let at = |field: &str| text[node..].find(&format!(r#""{field}":"#)).expect(field);
    assert!(
        at("name") < at("id") && at("id") < at("marketplace") && at("marketplace") < at("brand"),
        "{text}"
    );
    assert!(
        text.find(r#""edges""#) < text.find(r#""totalCount""#),
        "{text}"
    );

    // Fields that wait for the database ahead of ones that do not: at the
    // root, and inside a node behind a fragment.
    let waiting = "fragment F on Product { translations { language } id }
        { a: products(first: 1) { nodes { ...F } } b: __typename }";
    let text = app
        .post_as(&key, "/graphql", &json!({ "query": waiting }))
        .await
        .text()
        .await
        .unwrap();
    let at = |field: &str| text.find(&format!(r#""{field}":"#)).expect(field);
    assert!(at("a") < at("b"), "{text}");
    assert!(at("translations") < at("id"), "{text}");

    // The same for the named operation of a document that holds two.
    let named = json!({
        "query": "query One { __typename } query Two { a: products(first: 1) { totalCount } b: __typename }",
        "operationName": "Two",
    });
    let text = app
        .post_as(&key, "/graphql", &named)
        .await
        .text()
        .await
        .unwrap();
    assert!(text.find(r#""a":"#) < text.find(r#""b":"#), "{text}");
}

/// Objects are answered as the query selects their fields: aliases,
/// `__typename`, fragments, a key asked twice merged at its first place,
/// `@skip` and `@include`, in the query's order.
#[tokio::test]
async fn an_objects_fields_are_answered_as_the_query_selects_them() {
    let (app, key) = demo_app(3).await;
    let query = "query($no: Boolean!) { products(first: 2) { edges { node {
          __typename id ident: id
          seller { name }
          seller { tin __typename }
          ... on Product { brand }
          ...More
          name @skip(if: true)
          marketplace @include(if: $no)
          priceHistory(first: 2) { edges { node { __typename p: price } } }
        } } } }
        fragment More on Product { seller { sellerId } url }";
    let body = app
        .post_as(
            &key,
            "/graphql",
            &json!({ "query": query, "variables": { "no": false } }),
        )
        .await;
    let text = body.text().await.unwrap();
    let answer: Value = serde_json::from_str(&text).unwrap();
    let plain = data(
        &app,
        &key,
        "{ products(first: 2) { edges { node { id brand url
           seller { name tin sellerId } priceHistory(first: 2) { edges { node { price } } } } } } }",
        json!({}),
    )
    .await;
    let (got, want) = (
        nodes(&answer["data"]["products"]),
        nodes(&plain["products"]),
    );
    assert_eq!(got.len(), 2, "{text}");
    // In query order: the first node's text.
    let first = &text[text.find(r#""node":{"#).unwrap()..text.find(r#"}},{"node""#).unwrap()];
    let at = |key: &str| {
        first
            .find(key)
            .unwrap_or_else(|| panic!("{key} in {first}"))
    };
    let order = [
        r#""__typename":"Product""#,
        r#""id":"#,
        r#""ident":"#,
        r#""seller":{"name":"#,
        r#""tin":"#,
        r#""__typename":"Seller""#,
        r#""sellerId":"#,
        r#""brand":"#,
        r#""url":"#,
        r#""priceHistory":"#,
    ];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{first}");
    for (node, want) in got.iter().zip(&want) {
        let keys: Vec<&str> = node
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "__typename",
                "brand",
                "id",
                "ident",
                "priceHistory",
                "seller",
                "url"
            ],
            "{text}"
        );
        assert_eq!(node["__typename"], "Product");
        assert_eq!((&node["id"], &node["ident"]), (&want["id"], &want["id"]));
        let seller: Vec<&str> = node["seller"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(seller, ["__typename", "name", "sellerId", "tin"]);
        for field in ["name", "tin", "sellerId"] {
            assert_eq!(node["seller"][field], want["seller"][field], "{field}");
        }
        assert_eq!(node["seller"]["__typename"], "Seller");
        assert_eq!(
            (&node["brand"], &node["url"]),
            (&want["brand"], &want["url"])
        );
        let prices = nodes(&node["priceHistory"]);
        let wanted = nodes(&want["priceHistory"]);
        assert_eq!(prices.len(), wanted.len());
        for (price, wanted) in prices.iter().zip(&wanted) {
            assert_eq!(
                price,
                &json!({ "__typename": "PriceObservation", "p": wanted["price"] })
            );
        }
    }
}

#[tokio::test]
async fn graphql_response_media_type_is_used_when_accepted_and_json_otherwise() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let ok = "{ brands { brand } }";
    let unknown_field = "{ brands { nope } }";
    let not_found = format!("{{ product(id: \"{}\") {{ id }} }}", Uuid::new_v4());

    let (status, media, body) = post_accepting(&app, &key, Some(GRAPHQL_RESPONSE), ok).await;
    assert_eq!((status, media.as_str()), (200, GRAPHQL_RESPONSE));
    assert_eq!(body["data"], json!({ "brands": [] }));
    let both = "application/graphql-response+json, application/json;q=0.9";
    let (_, media, _) = post_accepting(&app, &key, Some(both), ok).await;
    assert_eq!(media, GRAPHQL_RESPONSE);

    // A request that fails validation never executes: 400 in the new media type.
    let (status, media, body) =
        post_accepting(&app, &key, Some(GRAPHQL_RESPONSE), unknown_field).await;
    assert_eq!((status, media.as_str()), (400, GRAPHQL_RESPONSE), "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("nope")
    );
    assert!(
        body.get("data").is_none(),
        "never executed, so no data: {body}"
    );
    // An error during execution is still a 200: the request itself was fine.
    let (status, _, body) = post_accepting(&app, &key, Some(GRAPHQL_RESPONSE), &not_found).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(only_error_code(&body), "NOT_FOUND");
    assert_eq!(body["data"], Value::Null, "executed: data is present");
    assert!(body.get("data").is_some());

    for accept in [None, Some("application/json"), Some("*/*")] {
        let (status, media, body) = post_accepting(&app, &key, accept, unknown_field).await;
        assert_eq!(
            (status, media.as_str()),
            (200, "application/json"),
            "{accept:?}"
        );
        assert!(body["errors"].is_array());
        assert!(body.get("data").is_none(), "{body}");
        let (status, media, _) = post_accepting(&app, &key, accept, ok).await;
        assert_eq!(
            (status, media.as_str()),
            (200, "application/json"),
            "{accept:?}"
        );
    }
}

#[tokio::test]
async fn get_runs_queries_from_the_query_string() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let p = insert_product(&app.db, &shop, product("p")).await;
    let params = encoded(&[
        (
            "query",
            "query($id: UUID!) { product(id: $id) { externalId } }".to_owned(),
        ),
        ("variables", json!({ "id": p.id }).to_string()),
    ]);
    let response = app.get_as(&key, &format!("/graphql?{params}")).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["data"], json!({ "product": { "externalId": "p" } }));
}

#[tokio::test]
async fn an_unreadable_body_is_a_graphql_error_in_json() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (content_type, body) in [
        ("application/json", "{ not json"),
        ("application/json", r#"{"query": 42}"#),
        ("application/json", r#"{"foo": 1}"#),
        ("application/json", "{}"),
        ("application/json", "[]"),
        (
            "application/json; charset=utf-8",
            r#"[{"query": "{ __typename }"}, {}]"#,
        ),
    ] {
        let response = app
            .client
            .post(app.url("/graphql"))
            .bearer_auth(&key)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let reply: Value = response.json().await.expect("a JSON body");
        assert_eq!(only_error_code(&reply), "BAD_REQUEST", "{body}: {reply}");
    }
}

#[tokio::test]
async fn a_method_graphql_does_not_take_is_a_graphql_error_naming_those_it_does() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (method, path, allow) in [
        (reqwest::Method::PUT, "/graphql", "GET, POST"),
        (reqwest::Method::DELETE, "/graphql", "GET, POST"),
        (reqwest::Method::POST, "/graphql/ws", "GET"),
    ] {
        let response = app
            .client
            .request(method.clone(), app.url(path))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method} {path}");
        assert_eq!(
            response
                .headers()
                .get("allow")
                .and_then(|v| v.to_str().ok()),
            Some(allow),
            "{method} {path}"
        );
        let reply: Value = response.json().await.expect("a JSON body");
        assert_eq!(only_error_code(&reply), "METHOD_NOT_ALLOWED", "{reply}");
    }
}

/// An app with batched requests enabled.
async fn batching_app() -> TestApp {
    TestApp::spawn_with_settings(Settings {
        graphql: GraphqlConfig {
            batching: true,
            ..GraphqlConfig::default()
        },
        ..Settings::default()
    })
    .await
}

#[tokio::test]
async fn batching_is_refused_unless_enabled() {
    let batch = json!([
        { "query": "{ brands { brand } }" },
        { "query": "{ me { id } }" }
    ]);
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let (status, body) = post_body(&app, Some(&key), &batch).await;
    assert_eq!(status, 400);
    let message = body["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("Batch"), "{message}");
    // Without a key, the key is what is refused.
    let (status, body) = post_body(&app, None, &batch).await;
    assert_eq!(status, 401);
    assert_eq!(only_error_code(&body), "UNAUTHORIZED");

    let app = batching_app().await;
    let key = app.key("acme").await;
    let (status, body) = post_body(&app, Some(&key), &batch).await;
    assert_eq!(status, 200);
    let answers = body.as_array().expect("one answer per operation");
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0]["data"], json!({ "brands": [] }));
    assert!(answers[1]["data"]["me"]["id"].is_string());
}

#[tokio::test]
async fn each_operation_of_a_batch_is_costed_and_answered_on_its_own() {
    let app = batching_app().await;
    let key = app.key("acme").await;
    let batch = json!([
        { "query": "{ brands { brand } }" },
        { "query": "{ brands { nope } }" }
    ]);
    let response = app.post_as(&key, "/graphql", &batch).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let answers = body.as_array().expect("one answer per operation");
    assert_eq!(answers[0]["data"], json!({ "brands": [] }), "{body}");
    assert_eq!(
        answers[0]["extensions"]["analyzer"],
        json!({ "complexity": 2, "depth": 2 }),
        "{body}"
    );
    assert!(answers[1].get("data").is_none(), "never executed: {body}");
    assert_eq!(
        answers[1]["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{body}"
    );
}

#[tokio::test]
async fn graphiql_page_loads_without_a_key() {
    let app = TestApp::spawn().await;
    let response = app
        .client
        .get(app.url("/graphql"))
        .header("accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let media = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(media.starts_with("text/html"), "{media}");
    let page = response.text().await.unwrap();
    for part in [
        "GraphiQL",
        "query Dashboard",
        "products(filter:",
        "\"defaultHeaders\"",
        "Authorization",
    ] {
        assert!(page.contains(part), "the page has {part:?}");
    }
}
