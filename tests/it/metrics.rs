//! Prometheus metrics: the real `vitrina serve` with `--metrics-bind`, read
//! at `/metrics` before and after the requests and jobs they count. The
//! recorder is one per process, so each test runs its own server process:
//! the counters it reads move by its requests alone.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use entity::SubmissionStatus;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, IntoActiveModel};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::config::{Settings, WebhookConfig};
use vitrina::metrics::graphql::{MAX_NAME_LEN, MAX_NAMES, OTHER};
use vitrina::metrics::sampled::{DueDeliveries, MergeBacklog, due_deliveries, merge_backlog};
use vitrina::query::sessions::SessionStats;

use crate::fixtures::{insert_session, insert_submission};
use crate::helpers::receiver::TestReceiver;
use crate::helpers::uploads::{item, upload};
use crate::helpers::{TestApp, TestDb, create_key, eventually, test_start};
use crate::serve::Serve;

/// `vitrina serve` on loopback ports, its API and its metrics listener.
struct Served {
    process: Serve,
    metrics: String,
    client: reqwest::Client,
}

impl Served {
    fn start(db_url: &str, args: &[&str]) -> Served {
        let args = [&["--metrics-bind", "127.0.0.1:0"], args].concat();
        let mut process = Serve::start(db_url, &args, &[("RUST_LOG", "warn")]);
        let metrics = process.line_after("metrics on ");
        Served {
            process,
            metrics,
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
        }
    }

    async fn scrape(&self) -> Samples {
        let response = self.client.get(&self.metrics).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert!(
            content_type.starts_with("text/plain; version=0.0.4"),
            "{content_type}"
        );
        Samples::parse(&response.text().await.unwrap())
    }

    /// Scrapes until `done` holds (the jobs tick every second).
    async fn scrape_until(&self, done: impl Fn(&Samples) -> bool) -> Samples {
        let (within, every) = (Duration::from_secs(30), Duration::from_millis(200));
        eventually(within, every, || async {
            let samples = self.scrape().await;
            match done(&samples) {
                true => Ok(samples),
                false => Err(format!("never came: {samples:?}")),
            }
        })
        .await
    }

    async fn send(
        &self,
        method: reqwest::Method,
        key: &str,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.process.base))
            .bearer_auth(key);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, key: &str, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, key, path, None).await
    }

    async fn post(&self, key: &str, path: &str, body: &Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, key, path, Some(body))
            .await
    }

    /// Runs `query`'s operation `name` over `POST /graphql`.
    async fn graphql(&self, key: &str, query: &str, name: &str) -> Value {
        let body = json!({ "query": query, "operationName": name });
        let (status, body) = self.post(key, "/graphql", &body).await;
        assert_eq!(status, 200, "{body}");
        assert!(body["errors"].is_null(), "{body}");
        body
    }
}

/// One scrape: each series (name and labels, as exposed) and its value.
#[derive(Debug)]
struct Samples(HashMap<String, f64>);

impl Samples {
    fn parse(text: &str) -> Samples {
        let samples = text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.is_empty())
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').expect("series and value");
                (series.to_owned(), value.parse().expect("a number"))
            })
            .collect();
        Samples(samples)
    }

    /// The value of `name` with these labels (in the order recorded); 0 when absent.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0.get(&series(name, labels)).copied().unwrap_or(0.0)
    }

    fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        self.0.contains_key(&series(name, labels))
    }

    /// The values `label` takes in the series of `name`.
    fn label_values(&self, name: &str, label: &str) -> BTreeSet<String> {
        let prefix = format!("{name}{{{label}=\"");
        self.0
            .keys()
            .filter_map(|series| series.strip_prefix(&prefix)?.split('"').next())
            .map(str::to_owned)
            .collect()
    }
}

fn series(name: &str, labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return name.to_owned();
    }
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{name}{{{}}}", labels.join(","))
}

/// How far a series moved between two scrapes.
fn moved(before: &Samples, after: &Samples, name: &str, labels: &[(&str, &str)]) -> f64 {
    after.get(name, labels) - before.get(name, labels)
}

const REQUESTS: &str = "vitrina_http_requests_total";
const DURATION_COUNT: &str = "vitrina_http_request_duration_seconds_count";
const OPERATIONS: &str = "vitrina_graphql_operations_total";
const REFUSALS: &str = "vitrina_limit_refusals_total";
const MERGED: &str = "vitrina_merge_submissions_total";
const DELIVERIES: &str = "vitrina_webhook_deliveries_total";

#[tokio::test]
async fn the_metrics_endpoint_counts_requests_operations_refusals_merges_and_deliveries() {
    let db = TestDb::new().await;
    let conn = db.connect().await;
    let shop = create_key(&conn, "shop", Utc::now()).await.secret;
    let greedy = create_key(&conn, "greedy", Utc::now()).await.secret;
    let hook = TestReceiver::start().await.hook("/hook");
    let served = Served::start(
        &db.url,
        &[
            "--rate-limit-per-minute=10",
            "--daily-quota=1",
            "--merge-interval-secs=1",
            "--db-max-connections=5",
            "--webhook-allow-insecure-targets",
        ],
    );
    let before = served.scrape().await;

    assert_eq!(served.get(&shop, "/v1/products").await.0, 200);
    assert_eq!(served.get(&shop, "/no/such/path").await.0, 404);
    let query = "query TopProducts { products(first: 2) { edges { node { id name } } } }
                 query Other { __typename }";
    let answer = served.graphql(&shop, query, "TopProducts").await;
    let complexity = answer["extensions"]["analyzer"]["complexity"]
        .as_f64()
        .unwrap();
    let (status, body) = served
        .post(&shop, "/extension/v1/webhooks", &json!({ "url": hook }))
        .await;
    assert_eq!(status, 201, "{body}");
    let items = vec![item("m-1"), item("m-2")];
    let (status, body) = served
        .post(&shop, "/extension/v1/scrapes", &upload(items))
        .await;
    assert_eq!(status, 202, "{body}");
    let session = body["data"]["id"].as_str().unwrap();
    served
        .scrape_until(|now| {
            moved(&before, now, MERGED, &[("outcome", "merged")]) == 2.0
                && moved(&before, now, DELIVERIES, &[("outcome", "succeeded")]) == 1.0
        })
        .await;
    assert_eq!(served.get(&shop, "/v1/products").await.0, 200);
    // Two merged rows: more than the daily quota of 1.
    let rows = format!("/v1/me/scrapes/{session}/products");
    let (status, body) = served.get(&shop, &rows).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("quota_exceeded"))
    );
    let missing = format!("/v1/products/{}", Uuid::new_v4());
    let mut passed = 0;
    while served.get(&greedy, &missing).await.0 != 429 {
        passed += 1;
        assert!(passed <= 20, "the rate limit of 10 never refused");
    }
    let after = served.scrape().await;

    let products = [("method", "GET"), ("route", "/v1/products")];
    let listed = [products[0], products[1], ("status", "200")];
    assert_eq!(moved(&before, &after, REQUESTS, &listed), 2.0);
    assert_eq!(moved(&before, &after, DURATION_COUNT, &products), 2.0);
    let quota = [
        ("method", "GET"),
        ("route", "/v1/me/scrapes/{id}/products"),
        ("status", "429"),
    ];
    assert_eq!(moved(&before, &after, REQUESTS, &quota), 1.0);
    let unmatched = [
        ("method", "GET"),
        ("route", "(unmatched)"),
        ("status", "404"),
    ];
    assert_eq!(moved(&before, &after, REQUESTS, &unmatched), 1.0);
    let one_product = [
        ("method", "GET"),
        ("route", "/v1/products/{id}"),
        ("status", "429"),
    ];
    assert_eq!(moved(&before, &after, REQUESTS, &one_product), 1.0);
    assert!(
        after
            .0
            .keys()
            .all(|series| !series.contains("/no/such/path")),
        "a raw path became a label"
    );

    let operation = [("operation", "TopProducts")];
    assert_eq!(moved(&before, &after, OPERATIONS, &operation), 1.0);
    assert!(
        !after.has(OPERATIONS, &[("operation", "Other")]),
        "only the operation run counts"
    );
    let cost = "vitrina_graphql_operation_cost";
    assert_eq!(
        moved(&before, &after, &format!("{cost}_count"), &operation),
        1.0
    );
    assert_eq!(
        moved(&before, &after, &format!("{cost}_sum"), &operation),
        complexity
    );

    assert_eq!(
        moved(&before, &after, REFUSALS, &[("limit", "daily_quota")]),
        1.0
    );
    assert_eq!(
        moved(&before, &after, REFUSALS, &[("limit", "rate_per_minute")]),
        1.0
    );
    assert_eq!(
        moved(&before, &after, MERGED, &[("outcome", "rejected")]),
        0.0
    );

    // Both product lists ran: a merge came between them.
    let missed = [("result", "miss")];
    assert!(moved(&before, &after, "vitrina_cache_lookups_total", &missed) >= 2.0);

    let version = [("version", env!("CARGO_PKG_VERSION"))];
    assert_eq!(after.get("vitrina_build_info", &version), 1.0);
    assert_eq!(after.get("vitrina_db_pool_max_connections", &[]), 5.0);
    let open = after.get("vitrina_db_pool_connections", &[("state", "idle")])
        + after.get("vitrina_db_pool_connections", &[("state", "in_use")]);
    assert!((1.0..=5.0).contains(&open), "{open} connections open");
    for status in ["pending", "processing"] {
        assert!(after.has("vitrina_merge_backlog_submissions", &[("status", status)]));
    }
    assert!(after.has("vitrina_webhook_deliveries_due", &[]));

    // The docs' alert rules name only series served here, with their labels.
    for (name, labels) in crate::doc_examples::prometheus_series() {
        let served: Vec<&String> = after
            .0
            .keys()
            .filter(|s| {
                s.strip_prefix(name.as_str())
                    .is_some_and(|r| r.is_empty() || r.starts_with('{'))
            })
            .collect();
        assert!(!served.is_empty(), "docs name {name}, not served");
        for label in labels {
            let with = format!("{label}=\"");
            assert!(
                served.iter().any(|s| s.contains(&with)),
                "docs select {name} by {label}: {served:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_flood_of_operation_names_adds_a_bounded_number_of_labels() {
    let db = TestDb::new().await;
    let conn = db.connect().await;
    let shop = create_key(&conn, "shop", Utc::now()).await.secret;
    let served = Served::start(&db.url, &[]);
    let flood = MAX_NAMES + 20;
    for i in 0..flood {
        let name = format!("Flood{i}");
        served
            .graphql(&shop, &format!("query {name} {{ __typename }}"), &name)
            .await;
    }
    let long = "L".repeat(MAX_NAME_LEN + 1);
    served
        .graphql(&shop, &format!("query {long} {{ __typename }}"), &long)
        .await;
    let samples = served.scrape().await;

    let labels = samples.label_values(OPERATIONS, "operation");
    assert_eq!(labels.len(), MAX_NAMES + 1, "{labels:?}");
    assert!(labels.contains("Flood0") && labels.contains(OTHER));
    assert_eq!(samples.get(OPERATIONS, &[("operation", OTHER)]), 21.0);
}

#[tokio::test]
async fn the_merge_backlog_counts_pending_and_processing_submissions_and_dates_the_oldest() {
    let app = TestApp::spawn().await;
    let key = app.key("shop").await;
    assert_eq!(
        merge_backlog(&app.db).await.unwrap(),
        MergeBacklog::default()
    );
    let session = insert_session(&app.db, &key, test_start()).await;
    for status in [
        SubmissionStatus::Pending,
        SubmissionStatus::Pending,
        SubmissionStatus::Processing,
        SubmissionStatus::Merged,
        SubmissionStatus::Rejected,
    ] {
        insert_submission(&app.db, session.id, status, None).await;
    }
    let newer = insert_submission(&app.db, session.id, SubmissionStatus::Pending, None).await;
    let mut newer = newer.into_active_model();
    newer.created_at = Set(test_start() + TimeDelta::minutes(5));
    newer.update(&app.db).await.unwrap();

    let backlog = merge_backlog(&app.db).await.unwrap();
    let expected = MergeBacklog {
        pending: 3,
        processing: 1,
        oldest_pending: Some(test_start()),
    };
    assert_eq!(backlog, expected);
}

#[tokio::test]
async fn deliveries_are_due_from_their_next_attempt_time() {
    let settings = Settings {
        webhooks: WebhookConfig {
            targets: vitrina::config::WebhookTargets {
                webhook_allow_insecure_targets: true,
            },
            ..WebhookConfig::default()
        },
        ..Settings::default()
    };
    let app = TestApp::spawn_with_settings(settings).await;
    let key = app.key("shop").await;
    let url = json!({ "url": "http://127.0.0.1:9/hook" });
    let created = app.post_as(&key, "/extension/v1/webhooks", &url).await;
    assert_eq!(created.status(), 201);
    let now = app.clock.now();
    let session = insert_session(&app.db, &key, now).await;
    let stats = SessionStats {
        total: 1,
        pending: 0,
        processing: 0,
        merged: 1,
        rejected: 0,
        flagged: 0,
    };
    vitrina::webhooks::enqueue_session_completed(
        &app.db,
        session.account_id,
        session.id,
        &stats,
        &app.url(""),
        now,
    )
    .await
    .unwrap();

    let none = due_deliveries(&app.db, now - TimeDelta::seconds(1))
        .await
        .unwrap();
    assert_eq!(none, DueDeliveries::default());
    let later = due_deliveries(&app.db, now + TimeDelta::seconds(30))
        .await
        .unwrap();
    let expected = DueDeliveries {
        due: 1,
        oldest_due: Some(now),
    };
    assert_eq!(later, expected);
}
