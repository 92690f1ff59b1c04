//! Prometheus metrics, served at `GET /metrics` on a listener of their own
//! (`--metrics-bind`), apart from the API.
//!
//! Events are counted where they happen, through the `metrics` facade. The
//! exporter's recorder is installed once per process, when the metrics
//! listener starts; before that every recording function returns at once,
//! so a server without a metrics listener (and the tests, which run many
//! apps in one process) pays nothing for them.
//!
//! Every label takes values from a closed set: routes from the route table
//! (never the raw path), methods and statuses as HTTP defines them, and
//! GraphQL operation names, which clients choose, capped
//! ([`graphql`]). So no client can make the exporter's memory grow.
//!
//! | file | what it owns |
//! |---|---|
//! | `mod.rs` | the recorder, the listener, the names, the counters of events |
//! | `http.rs` | requests by route, method and status, and their duration |
//! | `graphql.rs` | GraphQL operations by name, with their cost |
//! | `sampled.rs` | gauges read from the database: merge backlog, webhooks due, pool |

pub mod graphql;
pub mod http;
pub mod sampled;

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use entity::SubmissionStatus;
use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use sea_orm::DatabaseConnection;
use tokio::net::TcpListener;

use crate::clock::SharedClock;
use crate::error::Error;

const HTTP_REQUESTS: &str = "vitrina_http_requests_total";
const HTTP_DURATION: &str = "vitrina_http_request_duration_seconds";
const GRAPHQL_OPERATIONS: &str = "vitrina_graphql_operations_total";
const GRAPHQL_COST: &str = "vitrina_graphql_operation_cost";
const LIMIT_REFUSALS: &str = "vitrina_limit_refusals_total";
const MERGE_OUTCOMES: &str = "vitrina_merge_submissions_total";
const MERGE_BACKLOG: &str = "vitrina_merge_backlog_submissions";
const MERGE_OLDEST_PENDING: &str = "vitrina_merge_oldest_pending_age_seconds";
const WEBHOOK_DELIVERIES: &str = "vitrina_webhook_deliveries_total";
const WEBHOOK_DUE: &str = "vitrina_webhook_deliveries_due";
const WEBHOOK_OLDEST_DUE: &str = "vitrina_webhook_oldest_due_age_seconds";
const POOL_CONNECTIONS: &str = "vitrina_db_pool_connections";
const POOL_MAX: &str = "vitrina_db_pool_max_connections";
const BUILD_INFO: &str = "vitrina_build_info";
const CACHE_LOOKUPS: &str = "vitrina_cache_lookups_total";
const CACHE_EVICTIONS: &str = "vitrina_cache_evictions_total";
const CACHE_BYTES: &str = "vitrina_cache_bytes";

/// Upper bounds of the duration buckets, in seconds.
const SECONDS_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Upper bounds of the GraphQL cost buckets (the complexity limit defaults to 10,000).
const COST_BUCKETS: &[f64] = &[1.0, 10.0, 50.0, 100.0, 500.0, 1_000.0, 5_000.0, 10_000.0];

static RECORDER: OnceLock<PrometheusHandle> = OnceLock::new();

/// Whether this process keeps metrics (its recorder is installed).
pub fn enabled() -> bool {
    RECORDER.get().is_some()
}

/// Installs the process's recorder, once; later calls return the same one.
/// Fails only if something else installed a recorder first.
fn install_recorder() -> Result<&'static PrometheusHandle, Error> {
    if let Some(handle) = RECORDER.get() {
        return Ok(handle);
    }
    let refused = |e: metrics_exporter_prometheus::BuildError| {
        Error::Invalid(format!("cannot keep metrics: {e}"))
    };
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .and_then(|b| b.set_buckets_for_metric(Matcher::Full(GRAPHQL_COST.into()), COST_BUCKETS))
        .map_err(refused)?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)
        .map_err(|e| Error::Invalid(format!("cannot keep metrics: {e}")))?;
    describe();
    gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1);
    Ok(RECORDER.get_or_init(|| handle))
}

/// The `# HELP` line of every metric.
fn describe() {
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests answered, by method, route and status."
    );
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time to answer an HTTP request (to its response head), by method and route."
    );
    describe_counter!(
        GRAPHQL_OPERATIONS,
        "GraphQL operations run over HTTP, by operation name."
    );
    describe_histogram!(
        GRAPHQL_COST,
        "Complexity of the GraphQL operations run, by operation name."
    );
    describe_counter!(
        LIMIT_REFUSALS,
        "Requests refused by a limit: rate_per_minute or daily_quota."
    );
    describe_counter!(
        MERGE_OUTCOMES,
        "Submissions the merge pass finished, by outcome."
    );
    describe_gauge!(
        MERGE_BACKLOG,
        "Submissions waiting for the merge pass, by status."
    );
    describe_gauge!(
        MERGE_OLDEST_PENDING,
        Unit::Seconds,
        "Age of the oldest pending submission (0 when none is)."
    );
    describe_counter!(
        WEBHOOK_DELIVERIES,
        "Webhook deliveries after an attempt: succeeded, retried (will be tried again) or failed (for good)."
    );
    describe_gauge!(WEBHOOK_DUE, "Webhook deliveries whose next attempt is due.");
    describe_gauge!(
        WEBHOOK_OLDEST_DUE,
        Unit::Seconds,
        "How long the longest-waiting due webhook delivery is past its time (0 when none is)."
    );
    describe_gauge!(
        POOL_CONNECTIONS,
        "Database pool connections, by state: idle or in_use."
    );
    describe_gauge!(POOL_MAX, "Most connections the database pool opens.");
    describe_counter!(
        CACHE_LOOKUPS,
        "Lookups in the response cache, by result: hit or miss."
    );
    describe_counter!(
        CACHE_EVICTIONS,
        "Answers the response cache evicted to stay within its size."
    );
    describe_gauge!(
        CACHE_BYTES,
        Unit::Bytes,
        "Bytes the response cache's answers take."
    );
    describe_gauge!(
        BUILD_INFO,
        "Always 1; the version of the running build as a label."
    );
}

/// Starts keeping metrics and serves them at `http://<bind>/metrics`; the
/// gauges read from the database are sampled every `every`. Returns the
/// address bound.
pub async fn start(
    bind: SocketAddr,
    db: &DatabaseConnection,
    clock: SharedClock,
    every: Duration,
) -> Result<SocketAddr, Error> {
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|e| Error::Invalid(format!("cannot listen for metrics on {bind}: {e}")))?;
    let bound = listener.local_addr()?;
    let handle = install_recorder()?;
    tokio::spawn(sampled::run(db.clone(), clock, every, handle));
    let app = Router::new()
        .route("/metrics", get(render))
        .with_state(db.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the metrics listener stopped");
        }
    });
    Ok(bound)
}

/// The text exposition format, with the pool's use as of now.
async fn render(State(db): State<DatabaseConnection>) -> impl IntoResponse {
    sampled::record_pool(&db);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        RECORDER
            .get()
            .map(PrometheusHandle::render)
            .unwrap_or_default(),
    )
}

/// A limit that refuses requests.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    RatePerMinute,
    DbTimePerMinute,
    DailyQuota,
}

/// Counts a request refused by `limit`.
pub fn refused(limit: Limit) {
    if enabled() {
        let label = match limit {
            Limit::RatePerMinute => "rate_per_minute",
            Limit::DbTimePerMinute => "db_time_per_minute",
            Limit::DailyQuota => "daily_quota",
        };
        counter!(LIMIT_REFUSALS, "limit" => label).increment(1);
    }
}

/// Counts a lookup in the response cache.
pub fn cache_lookup(hit: bool) {
    if enabled() {
        let result = if hit { "hit" } else { "miss" };
        counter!(CACHE_LOOKUPS, "result" => result).increment(1);
    }
}

/// Records an answer kept: `evicted` answers made room, `bytes` are kept now.
pub fn cache_stored(evicted: u64, bytes: usize) {
    if enabled() {
        counter!(CACHE_EVICTIONS).increment(evicted);
        gauge!(CACHE_BYTES).set(bytes as f64);
    }
}

/// Counts a submission the merge pass finished with `status`.
pub fn merge_finished(status: SubmissionStatus) {
    if enabled() {
        counter!(MERGE_OUTCOMES, "outcome" => status.as_str()).increment(1);
    }
}

/// What became of a webhook delivery after an attempt.
#[derive(Debug, Clone, Copy)]
pub enum DeliveryOutcome {
    Succeeded,
    /// It will be tried again.
    Retried,
    /// For good.
    Failed,
}

/// Counts `deliveries` webhook deliveries that ended an attempt with `outcome`.
pub fn webhook_deliveries(outcome: DeliveryOutcome, deliveries: usize) {
    if enabled() {
        let label = match outcome {
            DeliveryOutcome::Succeeded => "succeeded",
            DeliveryOutcome::Retried => "retried",
            DeliveryOutcome::Failed => "failed",
        };
        counter!(WEBHOOK_DELIVERIES, "outcome" => label).increment(deliveries as u64);
    }
}
