//! Batched GraphQL requests (when batching is on) are held to the limits of
//! the requests they hold: at most `VITRINA_GRAPHQL_MAX_BATCH` operations,
//! each counted against the per-minute rate limit (all or none), and the
//! whole batch costed against the complexity limit. A batch refused for
//! any of them runs nothing.

use redis::IntoConnectionInfo;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use vitrina::config::{GraphqlConfig, RedisConfig, Settings};
use vitrina::limits::Limits;

use crate::fixtures::{self, insert_product, insert_seller, product};
use crate::helpers::{TestApp, header, test_start};

/// The worst operation a request may hold alone: a page of 500 products
/// with seven fields each, complexity 500 x (edges, node, 7 fields) + 1.
const WORST: &str = "{ products(first: 500) { edges { node { id name marketplace brand url externalId sellerCode } } } }";
const WORST_COMPLEXITY: u64 = 4_501;

/// An app with batching on, `rate` requests a minute, a key and a product.
async fn app(rate: u32) -> (TestApp, String) {
    app_counting_in(rate, RedisConfig::default()).await
}

/// The same, counting the rate limit in `redis` when it names one.
async fn app_counting_in(rate: u32, redis: RedisConfig) -> (TestApp, String) {
    let app = TestApp::spawn_with_settings(Settings {
        limits: Limits {
            rate_per_minute: rate,
            ..Limits::default()
        },
        graphql: GraphqlConfig {
            batching: true,
            ..GraphqlConfig::default()
        },
        redis,
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(entity::Marketplace::Ozon, "1")).await;
    insert_product(&app.db, &shop, product("a")).await;
    (app, key)
}

/// A batch of `n` requests of `query`.
fn batch(query: &str, n: usize) -> Value {
    Value::Array(vec![json!({ "query": query }); n])
}

/// Status, `X-RateLimit-Remaining` and body of a POST of `body`.
async fn send(app: &TestApp, key: &str, body: &Value) -> (u16, u32, Value) {
    let response = app.post_as(key, "/graphql", body).await;
    let status = response.status().as_u16();
    let remaining = header(&response, "x-ratelimit-remaining")
        .and_then(|v| v.parse().ok())
        .expect("X-RateLimit-Remaining");
    (status, remaining, response.json().await.expect("JSON"))
}

/// The message of the one QUERY_TOO_COMPLEX error of a batch refused
/// whole (HTTP 400, no operation answered).
fn refused_whole(status: u16, body: &Value) -> String {
    assert_eq!(status, 400, "{body}");
    assert!(body.is_object(), "one answer for the whole batch: {body}");
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{body}");
    assert_eq!(
        errors[0]["extensions"]["code"], "QUERY_TOO_COMPLEX",
        "{body}"
    );
    errors[0]["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_batch_over_the_batch_limit_is_refused_before_any_operation_runs() {
    let (app, key) = app(600).await;
    let before = app.statements();
    let (status, remaining, body) = send(&app, &key, &batch(WORST, 1_000)).await;
    assert_eq!(
        refused_whole(status, &body),
        "The batch holds 1000 operations; the limit is 10 (VITRINA_GRAPHQL_MAX_BATCH)."
    );
    assert_eq!(
        app.statements_reading(before, "products"),
        Vec::<String>::new()
    );
    // Refused as one request, as a batch is when batching is off.
    assert_eq!(remaining, 599);
    // Just within the limit, it runs.
    let (status, _, body) = send(&app, &key, &batch("{ __typename }", 10)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body.as_array().map(Vec::len), Some(10));
}

#[tokio::test]
async fn each_operation_of_a_batch_counts_against_the_rate_limit_all_or_none() {
    // Counted in process, and in Redis as replicas count.
    let url = std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let redis = RedisConfig {
        redis_url: Some(url.into_connection_info().expect("a Redis URL")),
        ..RedisConfig::default()
    };
    for redis in [RedisConfig::default(), redis] {
        let shared = redis.redis_url.is_some();
        let (app, key) = app_counting_in(12, redis).await;
        let (status, remaining, body) = send(&app, &key, &batch("{ __typename }", 10)).await;
        assert_eq!((status, remaining), (200, 2), "{body}");
        for answer in body.as_array().expect("one answer per operation") {
            assert_eq!(answer["extensions"]["cost"]["rateLimit"]["remaining"], 2);
        }
        // More operations than requests left: refused whole, none counted.
        let (status, remaining, body) = send(&app, &key, &batch("{ __typename }", 3)).await;
        assert_eq!((status, remaining), (429, 2), "Redis: {shared}: {body}");
        assert_eq!(body["errors"][0]["extensions"]["code"], "RATE_LIMITED");
        let (status, remaining, body) = send(&app, &key, &batch("{ __typename }", 2)).await;
        assert_eq!((status, remaining), (200, 0), "Redis: {shared}: {body}");
        if let Some(url) = &app.state.settings.redis.redis_url {
            // Redis counted them, not this process.
            let account = entity::account::Entity::find()
                .filter(entity::account::Column::Name.eq("acme"))
                .one(&app.db)
                .await
                .unwrap()
                .expect("the account")
                .id;
            let minute = test_start().timestamp().div_euclid(60);
            let client = redis::Client::open(url.clone()).unwrap();
            let mut redis = client.get_multiplexed_async_connection().await.unwrap();
            let used: u32 = redis::cmd("GET")
                .arg(format!("vitrina:rate:{account}:{minute}"))
                .query_async(&mut redis)
                .await
                .unwrap();
            assert_eq!(used, 12);
        }
    }
}

#[tokio::test]
async fn a_batch_is_costed_as_a_whole_against_the_complexity_limit() {
    let (app, key) = app(600).await;
    // Each alone is within the limit, and so are two together.
    let (status, _, body) = send(&app, &key, &batch(WORST, 2)).await;
    assert_eq!(status, 200, "{body}");
    for answer in body.as_array().expect("one answer per operation") {
        assert!(answer.get("errors").is_none(), "{answer}");
        assert_eq!(
            answer["extensions"]["analyzer"]["complexity"],
            WORST_COMPLEXITY
        );
    }
    let before = app.statements();
    let (status, _, body) = send(&app, &key, &batch(WORST, 3)).await;
    let total = 3 * WORST_COMPLEXITY;
    assert_eq!(
        refused_whole(status, &body),
        format!(
            "The batch's complexity is {total} (the sum of its operations'); the limit is \
             10000 (VITRINA_GRAPHQL_MAX_COMPLEXITY)."
        )
    );
    assert_eq!(
        app.statements_reading(before, "products"),
        Vec::<String>::new()
    );
}
