//! Typed configuration, loaded in one place: every setting is a command-line
//! flag with an environment override (`DATABASE_URL`, `VITRINA_*`) and its
//! default written here.

use std::net::SocketAddr;

use crate::query::Page;
use crate::query::counts::CountLimits;
use clap::Args;

/// Where the embedded default database lives: a SQLite file created on first start.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/vitrina.db";

/// Database settings shared by every command.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Database")]
pub struct DatabaseConfig {
    /// SQLite (`sqlite://path/to/file.db`) or PostgreSQL (`postgres://user@host/db`).
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,

    /// Most connections the pool opens [default: 16 on PostgreSQL; on
    /// SQLite twice the CPU cores, at least 4].
    #[arg(long, env = "VITRINA_DB_MAX_CONNECTIONS", global = true)]
    pub db_max_connections: Option<u32>,

    /// Milliseconds a statement may wait for a pooled connection, and then
    /// for a lock (SQLite's busy timeout, PostgreSQL's `lock_timeout`);
    /// then the request is answered 503 `unavailable`. Twice it must stay
    /// below `--graphql-deadline-ms`, so that a request waiting on both is
    /// answered within its deadline.
    #[arg(long, env = "VITRINA_DB_WAIT_MS", default_value_t = DEFAULT_DB_WAIT_MS,
        value_parser = clap::value_parser!(u64).range(1..), global = true)]
    pub db_wait_ms: u64,

    /// Parallel workers one PostgreSQL statement of Vitrina's may start
    /// (`max_parallel_workers_per_gather`, set as each connection opens).
    /// With 0 each statement runs on one backend, as its database time is
    /// charged; more makes trends over broad filters faster on a server
    /// with cores to spare. Ignored on SQLite.
    #[arg(long, env = "VITRINA_DB_PARALLEL_WORKERS", default_value_t = DEFAULT_DB_PARALLEL_WORKERS,
        value_parser = clap::value_parser!(u32).range(..=1024), global = true)]
    pub db_parallel_workers: u32,
}

/// Milliseconds a statement waits for a connection, and for a lock, when
/// `VITRINA_DB_WAIT_MS` is not set: long enough to ride out a merge batch
/// holding SQLite's write lock or a PostgreSQL restart of a second or two.
pub const DEFAULT_DB_WAIT_MS: u64 = 3_000;

/// Parallel workers a PostgreSQL statement may start when
/// `VITRINA_DB_PARALLEL_WORKERS` is not set. A worker's CPU is not in the
/// statement's time, which the database-time budget charges, so a key's
/// parallel trend could take every core of the database while charged for
/// one. And a page walk that stops after a page of rows is estimated as a
/// walk of the whole index when the planner underrates the filter: at
/// 1,000,000 products a REST page by `name_contains` started two workers
/// (11-14 ms against 4.6 ms alone; bench/README.md, "Parallel workers").
pub const DEFAULT_DB_PARALLEL_WORKERS: u32 = 0;

/// Longest client request id kept when `VITRINA_HTTP_MAX_REQUEST_ID_CHARS`
/// is not set: twice a W3C `traceparent` (55), room for any id scheme in
/// common use, and short enough that a log line stays a line.
pub const DEFAULT_MAX_REQUEST_ID_CHARS: usize = 128;

/// Where `serve` listens when `VITRINA_BIND` is not set.
pub const DEFAULT_BIND: &str = "127.0.0.1:8080";

/// The address clients reach the service at, for absolute links.
#[derive(Debug, Clone, Args)]
pub struct PublicUrl {
    /// The address clients reach this service at, used for absolute links such
    /// as a webhook's `url`. Defaults to `http://<bind>` (`jobs run-once`:
    /// `http://127.0.0.1:8080`).
    #[arg(
        long = "public-url",
        help_heading = "Server",
        env = "VITRINA_PUBLIC_URL"
    )]
    pub url: Option<String>,
}

impl PublicUrl {
    /// The base address without a trailing slash; unset, `http://<bound>`,
    /// where `bound` is the address actually bound (which differs from
    /// `bind` when its port is 0), or [`DEFAULT_BIND`] for a command that
    /// binds nothing.
    pub fn or(&self, bound: impl std::fmt::Display) -> String {
        match &self.url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{bound}"),
        }
    }
}

/// Settings of the HTTP server and the jobs it runs.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address and port to listen on. Port 0 picks a free port.
    #[arg(
        long,
        help_heading = "Server",
        env = "VITRINA_BIND",
        default_value = DEFAULT_BIND
    )]
    pub bind: SocketAddr,

    #[command(flatten)]
    pub public_url: PublicUrl,

    /// Address and port of the Prometheus metrics listener (`GET /metrics`),
    /// apart from the API so that it can stay internal. Unset: no metrics
    /// are kept or served.
    #[arg(long, help_heading = "Server", env = "VITRINA_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,

    /// Requests per account per minute, over REST and GraphQL together.
    #[arg(
        long,
        help_heading = "Limits",
        env = "VITRINA_RATE_LIMIT_PER_MINUTE",
        default_value_t = 600
    )]
    pub rate_limit_per_minute: u32,

    /// Milliseconds of database time per account per minute (GraphQL: the
    /// time its statements hold a connection; REST: the time its handler
    /// takes), kept by each replica and refilled evenly through the minute.
    /// An account that has used more than the burst beyond what refilled is
    /// refused (429 `rate_limited`) until enough has. 0 turns it off.
    #[arg(long, help_heading = "Limits", env = "VITRINA_DB_TIME_PER_MINUTE_MS", default_value_t = DEFAULT_DB_TIME_PER_MINUTE_MS)]
    pub db_time_per_minute_ms: u64,

    /// Milliseconds of database time an account may use at once, beyond
    /// what its per-minute budget has refilled, before it is refused.
    #[arg(long, help_heading = "Limits", env = "VITRINA_DB_TIME_BURST_MS", default_value_t = DEFAULT_DB_TIME_BURST_MS,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub db_time_burst_ms: u64,

    /// Daily data quota in rows per account and UTC day (an account may set its own).
    #[arg(
        long,
        help_heading = "Limits",
        env = "VITRINA_DAILY_QUOTA",
        default_value_t = 10_000
    )]
    pub daily_quota: i64,

    #[command(flatten)]
    pub graphql: GraphqlConfig,

    #[command(flatten)]
    pub jobs: JobsConfig,

    #[command(flatten)]
    pub webhooks: WebhookConfig,

    #[command(flatten)]
    pub http: HttpConfig,

    #[command(flatten)]
    pub redis: RedisConfig,

    #[command(flatten)]
    pub sizes: SizeConfig,

    #[command(flatten)]
    pub lists: ListConfig,
}

/// The highest GraphQL complexity limit and fields limit that may be set:
/// complexities are added up and told apart exactly below them (see
/// `graphql::schema::relay_connection::COUNTED`); far above any useful limit.
pub const MAX_COMPLEXITY_LIMIT: usize = 1 << 26;
pub const MAX_FIELDS_LIMIT: u64 = 1 << 16;

/// A complexity limit from 1 to [`MAX_COMPLEXITY_LIMIT`].
fn complexity_limit(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(limit @ 1..=MAX_COMPLEXITY_LIMIT) => Ok(limit),
        _ => Err(format!(
            "expected an integer from 1 to {MAX_COMPLEXITY_LIMIT}"
        )),
    }
}

/// GraphQL limits and GraphiQL.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Limits")]
pub struct GraphqlConfig {
    /// Deepest nesting of data fields a query may have (introspection is
    /// bounded by its own limit below).
    #[arg(
        long = "graphql-max-depth",
        env = "VITRINA_GRAPHQL_MAX_DEPTH",
        default_value_t = 10
    )]
    pub max_depth: u64,

    /// Highest complexity a query may have (each field costs 1; a connection
    /// multiplies its children by its page size).
    #[arg(
        long = "graphql-max-complexity",
        env = "VITRINA_GRAPHQL_MAX_COMPLEXITY",
        default_value_t = 10_000,
        value_parser = complexity_limit
    )]
    pub max_complexity: usize,

    /// Longest query document, in bytes; longer ones are refused unparsed.
    #[arg(
        long = "graphql-max-document-bytes",
        env = "VITRINA_GRAPHQL_MAX_DOCUMENT_BYTES",
        default_value_t = 32 * 1024
    )]
    pub max_document_bytes: usize,

    /// Most fields a document may ask for once its fragments are expanded
    /// (every operation of it, each alias and `__typename` included).
    #[arg(
        long = "graphql-max-fields",
        env = "VITRINA_GRAPHQL_MAX_FIELDS",
        default_value_t = 2_000,
        value_parser = clap::value_parser!(u64).range(1..=MAX_FIELDS_LIMIT)
    )]
    pub max_fields: u64,

    /// Most aliases a document may use once its fragments are expanded.
    #[arg(
        long = "graphql-max-aliases",
        env = "VITRINA_GRAPHQL_MAX_ALIASES",
        default_value_t = 100
    )]
    pub max_aliases: u64,

    /// Most directives a document may use once its fragments are expanded.
    #[arg(
        long = "graphql-max-directives",
        env = "VITRINA_GRAPHQL_MAX_DIRECTIVES",
        default_value_t = 100
    )]
    pub max_directives: u64,

    /// Highest cost of a query's introspection: each of its fields 1, times
    /// the longest list of this schema it sits in (types, a type's fields,
    /// a field's arguments, ...).
    #[arg(
        long = "graphql-max-introspection-cost",
        env = "VITRINA_GRAPHQL_MAX_INTROSPECTION_COST",
        default_value_t = 500_000
    )]
    pub max_introspection_cost: u64,

    /// Milliseconds a GraphQL request may take once admitted; then its work
    /// stops and it is answered `TIMEOUT`.
    #[arg(
        long = "graphql-deadline-ms",
        env = "VITRINA_GRAPHQL_DEADLINE_MS",
        default_value_t = 10_000
    )]
    pub deadline_ms: u64,

    /// Most persisted queries (Apollo's automatic persisted queries) kept
    /// in the database for all replicas and accounts; past it, the least
    /// recently used of the account that keeps the most are evicted. Each
    /// is at most `--graphql-max-document-bytes` long.
    #[arg(
        long = "graphql-persisted-queries-max",
        env = "VITRINA_GRAPHQL_PERSISTED_QUERIES_MAX",
        default_value_t = 2_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub persisted_queries_max: u64,

    /// Most persisted queries one account keeps (those it registered or
    /// used); past it, its own least recently used are evicted, never
    /// another account's.
    #[arg(
        long = "graphql-persisted-queries-per-account",
        env = "VITRINA_GRAPHQL_PERSISTED_QUERIES_PER_ACCOUNT",
        default_value_t = 200,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub persisted_queries_per_account: u64,

    /// Accept batched requests (a JSON array of operations).
    #[arg(
        long = "graphql-batching",
        env = "VITRINA_GRAPHQL_BATCHING",
        default_value_t = false
    )]
    pub batching: bool,

    /// Most operations one batched request may hold; a larger batch is
    /// refused before any of it runs.
    #[arg(
        long = "graphql-max-batch",
        env = "VITRINA_GRAPHQL_MAX_BATCH",
        default_value_t = 10,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_batch: u32,

    /// Most database connections one GraphQL request (or WebSocket
    /// connection) holds at once; its other statements wait for them
    /// [default: a quarter of `--db-max-connections`, at least 1].
    #[arg(
        long,
        env = "VITRINA_DB_MAX_CONNECTIONS_PER_REQUEST",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub db_max_connections_per_request: Option<u32>,

    /// Most database connections the GraphQL requests of one account hold
    /// at once, together [default: half of `--db-max-connections`, at least 1].
    #[arg(
        long,
        env = "VITRINA_DB_MAX_CONNECTIONS_PER_ACCOUNT",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub db_max_connections_per_account: Option<u32>,

    /// An npm CDN for the packages of GraphiQL and the API reference at
    /// `/docs` (unpkg's layout, e.g.
    /// `https://unpkg.com`), loaded at the versions built into Vitrina and
    /// pinned with Subresource Integrity. Unset: Vitrina serves its own copy
    /// (a binary built without npm has none, and loads from `https://unpkg.com`).
    #[arg(long, help_heading = "Playground", env = "VITRINA_GRAPHIQL_ASSETS")]
    pub graphiql_assets: Option<String>,
}

impl Default for GraphqlConfig {
    fn default() -> Self {
        GraphqlConfig {
            max_depth: 10,
            max_complexity: 10_000,
            max_document_bytes: 32 * 1024,
            max_fields: 2_000,
            max_aliases: 100,
            max_directives: 100,
            max_introspection_cost: 500_000,
            deadline_ms: 10_000,
            persisted_queries_max: 2_000,
            persisted_queries_per_account: 200,
            batching: false,
            max_batch: 10,
            db_max_connections_per_request: None,
            db_max_connections_per_account: None,
            graphiql_assets: None,
        }
    }
}

/// The background jobs: merge pass, snapshots, retention.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Jobs")]
pub struct JobsConfig {
    /// Seconds between scheduler ticks (merge pass, due webhooks, snapshot check).
    #[arg(long, env = "VITRINA_MERGE_INTERVAL_SECS", default_value_t = 5)]
    pub merge_interval_secs: u64,

    /// Submissions one worker claims at a time.
    #[arg(long, env = "VITRINA_MERGE_BATCH", default_value_t = 100)]
    pub merge_batch: u64,

    /// Seconds a claimed submission stays leased to its worker; after that it
    /// returns to `pending` (a worker that died loses nothing).
    #[arg(long, env = "VITRINA_MERGE_LEASE_SECS", default_value_t = 300)]
    pub merge_lease_secs: u64,

    /// Merges of one submission that may begin without finishing (the worker
    /// stopped, its lease ran out, the database failed) before the submission
    /// is rejected instead of claimed again.
    #[arg(long, env = "VITRINA_MERGE_MAX_ATTEMPTS", default_value_t = 3,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub merge_max_attempts: u32,

    /// Days after which submissions, and finished webhook deliveries, are deleted.
    #[arg(long, env = "VITRINA_RETENTION_DAYS", default_value_t = 90)]
    pub retention_days: u64,

    /// Days of price history kept; older observations are deleted, except
    /// the last of each price variant before then, which still says what
    /// the price was. 0 keeps the whole history: it is the product's data.
    #[arg(
        long,
        env = "VITRINA_PRICE_HISTORY_RETENTION_DAYS",
        default_value_t = 0
    )]
    pub price_history_retention_days: u64,

    /// Rows one retention delete removes at most; each delete is a short
    /// transaction of its own, so no lock is held for long.
    #[arg(long, env = "VITRINA_RETENTION_BATCH", default_value_t = DEFAULT_RETENTION_BATCH,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub retention_batch: u64,

    /// Retention deletes one scheduler tick runs at most for each kind of
    /// row (submissions, deliveries, price history); what is left waits for
    /// the next tick, so a large backlog never holds up merges, nor one kind
    /// another.
    #[arg(long, env = "VITRINA_RETENTION_BATCHES_PER_TICK", default_value_t = DEFAULT_RETENTION_BATCHES_PER_TICK,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub retention_batches_per_tick: u64,
}

/// Rows one retention delete removes when `VITRINA_RETENTION_BATCH` is not
/// set. bench/README.md, "Write side", has the measured cost of a batch.
pub const DEFAULT_RETENTION_BATCH: u64 = 5_000;

/// Retention deletes per tick when `VITRINA_RETENTION_BATCHES_PER_TICK` is
/// not set.
pub const DEFAULT_RETENTION_BATCHES_PER_TICK: u64 = 20;

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            merge_interval_secs: 5,
            merge_batch: 100,
            merge_lease_secs: 300,
            merge_max_attempts: 3,
            retention_days: 90,
            price_history_retention_days: 0,
            retention_batch: DEFAULT_RETENTION_BATCH,
            retention_batches_per_tick: DEFAULT_RETENTION_BATCHES_PER_TICK,
        }
    }
}

/// Webhook delivery, in the parts each command reads: `serve` all of them,
/// a `webhooks` subcommand only the one it applies.
#[derive(Debug, Clone, Default, Args)]
pub struct WebhookConfig {
    #[command(flatten)]
    pub sending: WebhookSending,
    #[command(flatten)]
    pub targets: WebhookTargets,
    #[command(flatten)]
    pub rotation: WebhookRotation,
    #[command(flatten)]
    pub redelivery: WebhookRedelivery,
}

/// How a delivery attempt is made, and when failures disable.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Webhooks")]
pub struct WebhookSending {
    /// Milliseconds one delivery attempt may take.
    #[arg(long, env = "VITRINA_WEBHOOK_TIMEOUT_MS", default_value_t = 5_000)]
    pub webhook_timeout_ms: u64,

    /// Consecutive failed attempts after which a subscription is disabled.
    #[arg(long, env = "VITRINA_WEBHOOK_DISABLE_AFTER", default_value_t = 15,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_disable_after: u32,
}

impl Default for WebhookSending {
    fn default() -> Self {
        WebhookSending {
            webhook_timeout_ms: 5_000,
            webhook_disable_after: 15,
        }
    }
}

/// Which targets deliveries may reach.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Webhooks")]
pub struct WebhookTargets {
    /// DEVELOPMENT ONLY: allow http:// and private/loopback webhook targets.
    /// Off by default; a warning is logged when on.
    #[arg(
        long,
        env = "VITRINA_WEBHOOK_ALLOW_INSECURE_TARGETS",
        default_value_t = false
    )]
    pub webhook_allow_insecure_targets: bool,
}

/// A signing secret's rotation.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Webhooks")]
pub struct WebhookRotation {
    /// Hours a rotated-out signing secret keeps signing deliveries, next to
    /// the new one (0: it stops at once).
    #[arg(
        long,
        env = "VITRINA_WEBHOOK_SECRET_OVERLAP_HOURS",
        default_value_t = 24
    )]
    pub webhook_secret_overlap_hours: u32,
}

impl Default for WebhookRotation {
    fn default() -> Self {
        WebhookRotation {
            webhook_secret_overlap_hours: 24,
        }
    }
}

impl WebhookRotation {
    /// How long a rotated-out secret keeps signing.
    pub fn secret_overlap(&self) -> chrono::TimeDelta {
        chrono::TimeDelta::hours(i64::from(self.webhook_secret_overlap_hours))
    }
}

/// Redeliveries an operator or a client asks for.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Webhooks")]
pub struct WebhookRedelivery {
    /// Redeliveries of one subscription that may wait to be sent at once;
    /// one more is refused until some have finished.
    #[arg(long, env = "VITRINA_WEBHOOK_MAX_PENDING_REDELIVERIES", default_value_t = 20,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_max_pending_redeliveries: u32,
}

impl Default for WebhookRedelivery {
    fn default() -> Self {
        WebhookRedelivery {
            webhook_max_pending_redeliveries: 20,
        }
    }
}

/// Bounds on client connections, so that slow or silent clients cannot hold
/// the server's sockets (see `server::connections`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Server")]
pub struct HttpConfig {
    /// Milliseconds a client has to send a request's headers: counted from
    /// the connection's accept for its first request, from the first byte of
    /// each later one. Then the connection is closed.
    #[arg(
        long,
        env = "VITRINA_HTTP_HEADER_TIMEOUT_MS",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub http_header_timeout_ms: u64,

    /// Milliseconds a request body may take, plus one second for every
    /// `--http-body-min-rate` bytes received; a slower body is answered 408
    /// `request_timeout` and its connection closed.
    #[arg(
        long,
        env = "VITRINA_HTTP_BODY_TIMEOUT_MS",
        default_value_t = 30_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub http_body_timeout_ms: u64,

    /// Bytes a second a long request body must average (0: the whole body
    /// must arrive within the body timeout).
    #[arg(long, env = "VITRINA_HTTP_BODY_MIN_RATE", default_value_t = 8 * 1024)]
    pub http_body_min_rate: u64,

    /// Milliseconds a connection may make no progress: kept alive between
    /// requests, or unable to send its response to a client that does not
    /// read it. WebSockets keep themselves alive and are not bounded by it.
    #[arg(
        long,
        env = "VITRINA_HTTP_IDLE_TIMEOUT_MS",
        default_value_t = 60_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub http_idle_timeout_ms: u64,

    /// Most client connections (WebSockets included) open at once; the next
    /// waits to be accepted until one closes [default: 4096, or the open-file
    /// limit (`ulimit -n`) less 256 when that is lower].
    #[arg(
        long,
        env = "VITRINA_HTTP_MAX_CONNECTIONS",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub http_max_connections: Option<u64>,

    /// Most connections one client address (an IPv6 /64) may hold open at
    /// once; one more is answered 429 `too_many_connections` and closed
    /// [default: a sixteenth of the connection cap, 256 of 4,096]. Behind a
    /// proxy every connection comes from the proxy's address: raise it to
    /// the cap there.
    #[arg(
        long,
        env = "VITRINA_HTTP_MAX_CONNECTIONS_PER_CLIENT",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub http_max_connections_per_client: Option<u64>,

    /// Seconds a shutdown (SIGTERM or SIGINT) waits for requests in flight
    /// and for the jobs' current work to finish; then the connections still
    /// open are cut. Meanwhile every answer closes its connection, and
    /// `/readyz` answers 503 `draining`.
    #[arg(long, env = "VITRINA_SHUTDOWN_GRACE_SECS", default_value_t = 30)]
    pub shutdown_grace_secs: u64,

    /// Milliseconds a connection with no request in flight is kept open once
    /// a shutdown has started (from then, or from its accept), so that a
    /// request its client is sending already is answered instead of being
    /// lost with the connection; then it is closed.
    #[arg(long, env = "VITRINA_SHUTDOWN_IDLE_CLOSE_MS", default_value_t = 500)]
    pub shutdown_idle_close_ms: u64,

    /// Seconds a client may reuse an answer of `/v1/categories` or
    /// `/v1/brands` without asking again (`Cache-Control: private,
    /// max-age`): they change with the daily snapshot. Every other GET must
    /// be revalidated (`no-cache`, with its ETag). 0 revalidates them too.
    #[arg(long, env = "VITRINA_SNAPSHOT_MAX_AGE_SECS", default_value_t = 300)]
    pub snapshot_max_age_secs: u64,

    /// Longest `X-Request-Id` of a client's that is kept (echoed and
    /// logged); a longer one, or one with characters other than ASCII
    /// letters, digits and `-_.:`, is replaced by a new UUID.
    #[arg(
        long,
        env = "VITRINA_HTTP_MAX_REQUEST_ID_CHARS",
        default_value_t = DEFAULT_MAX_REQUEST_ID_CHARS
    )]
    pub http_max_request_id_chars: usize,

    /// Connections served above the cap for `/healthz` and `/readyz` only,
    /// once every slot under it is busy, so that probes are answered
    /// whoever holds the rest; at most 64 (`MAX_PROBE_CONNECTIONS`), which
    /// the descriptors kept out of the cap leave room for.
    #[arg(
        long,
        env = "VITRINA_HTTP_PROBE_CONNECTIONS",
        default_value_t = DEFAULT_PROBE_CONNECTIONS,
        value_parser = clap::value_parser!(u32).range(1..=MAX_PROBE_CONNECTIONS as i64)
    )]
    pub http_probe_connections: u32,

    /// Origins whose pages may call `/graphql` and `/v1` from a browser
    /// (CORS): a comma-separated list of exact origins
    /// (`https://dash.example.com`, `http://127.0.0.1:3000`), or `*` for
    /// any. None by default: only pages of this service's own origin.
    #[arg(long, env = "VITRINA_CORS_ORIGINS", value_delimiter = ',', value_parser = parse_cors_origin)]
    pub cors_origins: Vec<CorsOrigin>,

    /// API keys remembered in process after a lookup, so that a busy key's
    /// requests send no lookup statement; a revoked key is still refused
    /// within a second on every replica. 0 looks every key up each time.
    #[arg(long, env = "VITRINA_KEY_CACHE_ENTRIES", default_value_t = DEFAULT_KEY_CACHE_ENTRIES,
          value_parser = clap::value_parser!(u16).range(..=MAX_KEY_CACHE_ENTRIES as i64))]
    pub key_cache_entries: u16,

    /// Megabytes of answers kept in memory (GraphQL queries and REST v1
    /// GETs), each served again until a write changes the data it was
    /// worked out from; the least recently used go first. 0 turns the
    /// response cache off.
    #[arg(long, env = "VITRINA_CACHE_MB", default_value_t = DEFAULT_CACHE_MB,
          value_parser = clap::value_parser!(u32).range(..=MAX_CACHE_MB as i64))]
    pub cache_mb: u32,

    /// Percent of the response cache that the answers one account's
    /// requests kept may take; past it, that account's least recently used
    /// answers go first, so one key asking many distinct questions cannot
    /// evict everyone else's. 100 shares the whole cache.
    #[arg(long, env = "VITRINA_CACHE_SHARE_PERCENT", default_value_t = DEFAULT_CACHE_SHARE_PERCENT,
          value_parser = clap::value_parser!(u8).range(1..=100))]
    pub cache_share_percent: u8,
}

/// Megabytes of answers kept when `VITRINA_CACHE_MB` is not set.
pub const DEFAULT_CACHE_MB: u32 = 64;
/// The share of the cache one account's answers may take when
/// `VITRINA_CACHE_SHARE_PERCENT` is not set.
pub const DEFAULT_CACHE_SHARE_PERCENT: u8 = 25;
/// The most megabytes of answers that may be kept.
pub const MAX_CACHE_MB: u32 = 1 << 20;

/// Keys remembered when `VITRINA_KEY_CACHE_ENTRIES` is not set.
pub const DEFAULT_KEY_CACHE_ENTRIES: u16 = 10_000;
/// The most keys that may be remembered, which the revocation poll reads
/// every 400 ms.
pub const MAX_KEY_CACHE_ENTRIES: u16 = 30_000;

/// An origin allowed to call the API from a browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigin {
    /// `*`: any origin.
    Any,
    /// One origin, as browsers send it in `Origin`: `scheme://host[:port]`,
    /// the host in lower case, the scheme's default port left out.
    Exact(axum::http::HeaderValue),
}

/// `*`, or an `http`/`https` origin with nothing after the host and port;
/// kept in the form browsers send, so that it compares equal.
fn parse_cors_origin(value: &str) -> Result<CorsOrigin, String> {
    let value = value.trim();
    if value == "*" {
        return Ok(CorsOrigin::Any);
    }
    let refused =
        |why: &str| format!("{value:?} is not an origin ({why}); write scheme://host[:port], or *");
    let url = url::Url::parse(value).map_err(|e| refused(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refused("the scheme is not http or https"));
    }
    let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    if !bare || !url.username().is_empty() || url.password().is_some() || value.ends_with('/') {
        return Err(refused(
            "an origin has nothing but a scheme, a host and a port",
        ));
    }
    let origin = url.origin().ascii_serialization();
    axum::http::HeaderValue::from_str(&origin)
        .map(CorsOrigin::Exact)
        .map_err(|_| refused("not a header value"))
}

/// Probe connections when `VITRINA_HTTP_PROBE_CONNECTIONS` is not set: a
/// handful is enough, probes are short and come from a few load balancers.
pub const DEFAULT_PROBE_CONNECTIONS: u32 = 8;

/// The most probe connections that may be set: the open-file descriptors
/// kept out of the connection cap (`server::connections::RESERVED_DESCRIPTORS`,
/// 256) hold them besides the database pool, files and webhooks.
pub const MAX_PROBE_CONNECTIONS: u32 = 64;

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            http_header_timeout_ms: 10_000,
            http_body_timeout_ms: 30_000,
            http_body_min_rate: 8 * 1024,
            http_idle_timeout_ms: 60_000,
            http_max_connections: None,
            http_max_connections_per_client: None,
            shutdown_grace_secs: 30,
            shutdown_idle_close_ms: 500,
            snapshot_max_age_secs: 300,
            http_max_request_id_chars: DEFAULT_MAX_REQUEST_ID_CHARS,
            http_probe_connections: DEFAULT_PROBE_CONNECTIONS,
            cors_origins: Vec::new(),
            key_cache_entries: DEFAULT_KEY_CACHE_ENTRIES,
            cache_mb: DEFAULT_CACHE_MB,
            cache_share_percent: DEFAULT_CACHE_SHARE_PERCENT,
        }
    }
}

/// Redis, where replicas share the per-minute rate limit.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Limits")]
pub struct RedisConfig {
    /// Keep the per-minute rate limit in this Redis (`redis://[:password@]host:port[/db]`)
    /// so that it holds across all replicas. Unset: each process counts its own.
    #[arg(long, env = "VITRINA_REDIS_URL")]
    pub redis_url: Option<redis::ConnectionInfo>,

    /// Milliseconds a rate-limit check waits for Redis; a request it does not
    /// answer in time is counted in this process instead.
    #[arg(
        long,
        env = "VITRINA_REDIS_TIMEOUT_MS",
        default_value_t = 50,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub redis_timeout_ms: u64,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            redis_url: None,
            redis_timeout_ms: 50,
        }
    }
}

/// How large a product may grow and an answer may be, so that one tenant's
/// uploads cannot make every caller's plain request enormous (the catalog
/// is shared).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Limits")]
pub struct SizeConfig {
    /// Largest a product may grow, in KiB of its v1 JSON (`GET
    /// /v1/products/{id}`): the merge rejects a submission that would take
    /// it over, and an upload an item that alone would.
    #[arg(long, env = "VITRINA_MAX_PRODUCT_KB", default_value_t = 128,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub max_product_kb: u64,

    /// Largest answer of REST v1 or of one GraphQL request, in MiB, reached
    /// before the answer is built (the products it reads are counted at their
    /// stored size before they are read). A page of 100 products at
    /// `--max-product-kb` must fit in it.
    #[arg(long, env = "VITRINA_MAX_RESPONSE_MB", default_value_t = 16,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub max_response_mb: u64,
}

impl Default for SizeConfig {
    fn default() -> Self {
        SizeConfig {
            max_product_kb: 128,
            max_response_mb: 16,
        }
    }
}

impl SizeConfig {
    /// Products of a page that must fit in one answer at the largest size:
    /// the default `page_size` of REST v1 and `first` of GraphQL.
    pub const PAGE: u64 = 100;

    /// Products a page reads: the page, and the row past it that tells
    /// whether more follow (REST's `has_more`, GraphQL's `hasNextPage`).
    const PAGE_READ: u64 = Self::PAGE + 1;

    /// What an answer holds besides each product's own JSON, per product:
    /// the longest its seller's name can be written (the name is shared by
    /// all of the seller's products and may change after a product was
    /// measured: 1,024 bytes, each escaped as `\u00XX`), and a session
    /// entry's wrapping (`{"submission_status":"processing","product":...}`).
    pub const PER_PRODUCT_OVERHEAD: u64 = 6 * 1024 + 64;

    /// What an answer holds besides its products: the envelope and `meta`.
    pub const ENVELOPE: u64 = 1024;

    pub fn max_product_bytes(&self) -> u64 {
        self.max_product_kb.saturating_mul(1024)
    }

    pub fn max_response_bytes(&self) -> u64 {
        self.max_response_mb.saturating_mul(1024 * 1024)
    }

    /// Refuses sizes with which a page of [`Self::PAGE`] products at the
    /// per-product limit would not fit in one answer: the default page would
    /// then be refused for data the merge accepted.
    pub fn check(&self) -> Result<(), String> {
        let page = Self::PAGE_READ
            .saturating_mul(
                self.max_product_bytes()
                    .saturating_add(Self::PER_PRODUCT_OVERHEAD),
            )
            .saturating_add(Self::ENVELOPE);
        if page <= self.max_response_bytes() {
            return Ok(());
        }
        Err(format!(
            "VITRINA_MAX_RESPONSE_MB={} is too small for VITRINA_MAX_PRODUCT_KB={}: a page of {} \
             products at that size takes up to {page} bytes, over the {} bytes of the response \
             limit; raise the response limit to at least {} MiB or lower the product limit",
            self.max_response_mb,
            self.max_product_kb,
            Self::PAGE,
            self.max_response_bytes(),
            page.div_ceil(1024 * 1024),
        ))
    }
}

/// How many entries a list answer holds, however many the data has: the
/// lists of the daily snapshots, which one tenant's uploads can fill with
/// ever new category paths and brands, and a seller lookup.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Limits")]
pub struct ListConfig {
    /// Entries each list of the daily snapshot keeps (the categories of a
    /// marketplace, the brands of one or of all): those with the most
    /// products, in the lists' order, and no more than fit in one answer
    /// (`--max-response-mb`); `/v1/categories` and `/v1/brands` say
    /// `X-Result-Truncated: true` when some were left out.
    #[arg(long, env = "VITRINA_SNAPSHOT_MAX_ENTRIES", default_value_t = DEFAULT_SNAPSHOT_MAX_ENTRIES,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub snapshot_max_entries: u64,

    /// Sellers one lookup returns (`/v1/sellers`, GraphQL `sellers`), by
    /// marketplace then seller id; `X-Result-Truncated: true` says more
    /// matched.
    #[arg(long, env = "VITRINA_MAX_SELLERS_PER_LOOKUP", default_value_t = DEFAULT_MAX_SELLERS_PER_LOOKUP,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sellers_per_lookup: u64,

    /// Products a GraphQL `totalCount` counts at most when its filter has
    /// more than a marketplace, a trust status and a brand (those are
    /// counted exactly from kept counts); past it, `totalCountIsExact` is false and
    /// `totalCount` is the bound.
    #[arg(long, env = "VITRINA_COUNT_BOUND", default_value_t = DEFAULT_COUNT_BOUND,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub count_bound: u64,
    /// Entries a GraphQL `totalCount` of a name part (`nameContains`), alone
    /// or with a marketplace and a trust status, may read on PostgreSQL,
    /// walked or found through an index, before it is estimated instead:
    /// `totalCount` is then an estimate from a sample of
    /// `VITRINA_COUNT_SAMPLE` products and `totalCountIsExact` is false.
    #[arg(long, env = "VITRINA_COUNT_MAX_READS", default_value_t = DEFAULT_COUNT_MAX_READS,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub count_max_reads: u64,
    /// Products an estimated `totalCount` tests: the catalog's pages that
    /// hold about as many, a random sample of them, the same each time.
    #[arg(long, env = "VITRINA_COUNT_SAMPLE", default_value_t = DEFAULT_COUNT_SAMPLE,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub count_sample: u64,
    /// Rows of `GET /v1/products` that page numbers reach: a page may end
    /// at row `page × page_size` at most (at least 500, so that page 1 of
    /// every size is served). A deeper page is answered 422
    /// `page_too_deep`, pointing to the GraphQL cursors, which cost the
    /// same at any depth.
    #[arg(long, env = "VITRINA_PRODUCTS_PAGE_WINDOW", default_value_t = DEFAULT_PRODUCTS_PAGE_WINDOW,
        value_parser = clap::value_parser!(u64).range(Page::MAX_SIZE..))]
    pub products_page_window: u64,
    /// Rows page numbers reach in a list whose rows are tested one by one
    /// as its page walks them: one filtered by a substring, or by two of
    /// marketplace, trust status and category, which no one index orders
    /// together. Such a page walks the rows it skips and more, so it is
    /// held nearer (at most `VITRINA_PRODUCTS_PAGE_WINDOW`; at least 500).
    #[arg(long, env = "VITRINA_PRODUCTS_TESTED_PAGE_WINDOW", default_value_t = DEFAULT_PRODUCTS_TESTED_PAGE_WINDOW,
        value_parser = clap::value_parser!(u64).range(Page::MAX_SIZE..))]
    pub products_tested_page_window: u64,
    /// Buckets one GraphQL `priceSeries` may hold: a series with more
    /// buckets with observations is refused, naming this setting.
    #[arg(long, env = "VITRINA_SERIES_MAX_BUCKETS", default_value_t = DEFAULT_SERIES_MAX_BUCKETS,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub series_max_buckets: u64,
    /// Movers one GraphQL `priceMovers` may return (its `first` at most).
    #[arg(long, env = "VITRINA_MOVERS_MAX", default_value_t = DEFAULT_MOVERS_MAX,
        value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub movers_max: u64,
}

/// Entries a snapshot list keeps when `VITRINA_SNAPSHOT_MAX_ENTRIES` is not
/// set. A marketplace's category tree, as its products show it, has some
/// thousands of paths, and the brands a client picks from are those with
/// the most products: 10,000 keeps them, and at a typical entry (a path or
/// brand of some 100 bytes) takes about 1 MB of the 16 MiB an answer may
/// hold; one day's snapshot is at most 9 lists of 10,000 rows, whatever
/// the uploads.
pub const DEFAULT_SNAPSHOT_MAX_ENTRIES: u64 = 10_000;

/// Sellers a lookup returns when `VITRINA_MAX_SELLERS_PER_LOOKUP` is not
/// set. One legal entity may sell under one TIN on all four marketplaces,
/// with a few storefronts on each; more than this share an identifier only
/// in odd or hostile data.
pub const DEFAULT_MAX_SELLERS_PER_LOOKUP: u64 = 100;

/// Products a filtered count counts at most when `VITRINA_COUNT_BOUND` is
/// not set: past a few thousand, a client shows "10,000+" rather than the
/// figure, and counting 10,001 index entries is a bounded piece of work.
pub const DEFAULT_COUNT_BOUND: u64 = 10_000;
/// Entries a count of a name part reads when `VITRINA_COUNT_MAX_READS` is
/// not set: at 0.44-0.65 us an entry walked (1,000,000 products on
/// PostgreSQL), about 50 ms.
pub const DEFAULT_COUNT_MAX_READS: u64 = 100_000;
/// Products an estimated count tests when `VITRINA_COUNT_SAMPLE` is not
/// set: at 1,000,000 products on PostgreSQL, the pages holding them are
/// read in 16-22 ms, and the estimates of four common parts were 1.4-12.7%
/// over their counts (bench/README.md, "Counts of name parts").
pub const DEFAULT_COUNT_SAMPLE: u64 = 20_000;
/// Rows page numbers reach when `VITRINA_PRODUCTS_PAGE_WINDOW` is not set.
/// A page skips the rows before it by walking an index (see
/// `query::products::list`), so its cost grows with its depth.
pub const DEFAULT_PRODUCTS_PAGE_WINDOW: u64 = 10_000;
/// Rows page numbers reach in a list tested row by row when
/// `VITRINA_PRODUCTS_TESTED_PAGE_WINDOW` is not set: at 1,000,000 products
/// on PostgreSQL, page 10 of 100 rows of each such filter measured took
/// 10-46 ms, page 100 of the same up to 0.23 s.
pub const DEFAULT_PRODUCTS_TESTED_PAGE_WINDOW: u64 = 1_000;

/// Buckets a price series may hold when `VITRINA_SERIES_MAX_BUCKETS` is not
/// set: a year by day, or six weeks by hour, is within it; a chart has
/// fewer points than that across.
pub const DEFAULT_SERIES_MAX_BUCKETS: u64 = 1_000;

/// Movers a `priceMovers` may return when `VITRINA_MOVERS_MAX` is not set:
/// a dashboard's panel shows ten; each mover is a product read with it.
pub const DEFAULT_MOVERS_MAX: u64 = 100;

impl ListConfig {
    /// How far counts go.
    pub fn counts(&self) -> CountLimits {
        CountLimits {
            bound: self.count_bound,
            max_reads: self.count_max_reads,
            sample: self.count_sample,
        }
    }
}

impl Default for ListConfig {
    fn default() -> Self {
        ListConfig {
            snapshot_max_entries: DEFAULT_SNAPSHOT_MAX_ENTRIES,
            max_sellers_per_lookup: DEFAULT_MAX_SELLERS_PER_LOOKUP,
            count_bound: DEFAULT_COUNT_BOUND,
            count_max_reads: DEFAULT_COUNT_MAX_READS,
            count_sample: DEFAULT_COUNT_SAMPLE,
            products_page_window: DEFAULT_PRODUCTS_PAGE_WINDOW,
            products_tested_page_window: DEFAULT_PRODUCTS_TESTED_PAGE_WINDOW,
            series_max_buckets: DEFAULT_SERIES_MAX_BUCKETS,
            movers_max: DEFAULT_MOVERS_MAX,
        }
    }
}

/// Configured sizes of the per-account limits (see `limits`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Requests per account per minute.
    pub rate_per_minute: u32,
    /// Rows per account per UTC day, unless the account sets its own.
    pub daily_quota: i64,
    /// Milliseconds of database time per account per minute; 0: no limit.
    pub db_time_per_minute_ms: u64,
    /// Milliseconds of database time an account may use at once.
    pub db_time_burst_ms: u64,
}

/// A sixth of one connection's time, refilled evenly: four accounts looping
/// the heaviest requests take two thirds of one connection's time between
/// them on average, after a first burst each.
pub const DEFAULT_DB_TIME_PER_MINUTE_MS: u64 = 10_000;

/// Several of the heaviest requests still accepted (the slowest median of
/// the scale run at a million products was 36 ms), or six seconds of the
/// default budget's refill.
pub const DEFAULT_DB_TIME_BURST_MS: u64 = 1_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rate_per_minute: 600,
            daily_quota: 10_000,
            db_time_per_minute_ms: DEFAULT_DB_TIME_PER_MINUTE_MS,
            db_time_burst_ms: DEFAULT_DB_TIME_BURST_MS,
        }
    }
}

/// Everything a running server needs besides the database and the clock.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub limits: Limits,
    pub graphql: GraphqlConfig,
    pub jobs: JobsConfig,
    pub webhooks: WebhookConfig,
    pub http: HttpConfig,
    pub redis: RedisConfig,
    pub sizes: SizeConfig,
    pub lists: ListConfig,
}

impl ServeConfig {
    pub fn settings(&self) -> Settings {
        Settings {
            limits: Limits {
                rate_per_minute: self.rate_limit_per_minute,
                daily_quota: self.daily_quota,
                db_time_per_minute_ms: self.db_time_per_minute_ms,
                db_time_burst_ms: self.db_time_burst_ms,
            },
            graphql: self.graphql.clone(),
            jobs: self.jobs.clone(),
            webhooks: self.webhooks.clone(),
            http: self.http.clone(),
            redis: self.redis.clone(),
            sizes: self.sizes.clone(),
            lists: self.lists.clone(),
        }
    }

    /// The public base address without a trailing slash, given the address
    /// actually bound (which differs from `bind` when its port is 0).
    pub fn public_url(&self, bound: SocketAddr) -> String {
        self.public_url.or(bound)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        serve: ServeConfig,
    }

    /// Tests build `Settings::default()`: it must be what `serve` runs with
    /// when nothing is set, or the tests would check other values.
    #[test]
    fn the_defaults_of_the_flags_are_the_default_settings() {
        let parsed = Serve::try_parse_from(["vitrina"]).expect("no flag is required");
        assert_eq!(
            format!("{:?}", parsed.serve.settings()),
            format!("{:?}", Settings::default())
        );
    }

    #[test]
    fn twice_the_default_database_wait_fits_in_the_default_graphql_deadline() {
        assert!(2 * DEFAULT_DB_WAIT_MS < GraphqlConfig::default().deadline_ms);
    }

    #[test]
    fn graphql_limits_stay_where_complexities_add_up_exactly() {
        let over = MAX_COMPLEXITY_LIMIT + 1;
        for flag in [
            format!("--graphql-max-complexity={over}"),
            format!("--graphql-max-fields={}", MAX_FIELDS_LIMIT + 1),
        ] {
            assert!(Serve::try_parse_from(["vitrina", &flag]).is_err(), "{flag}");
        }
        let most = format!("--graphql-max-complexity={MAX_COMPLEXITY_LIMIT}");
        assert!(Serve::try_parse_from(["vitrina", &most]).is_ok());
    }

    #[test]
    fn counts_that_must_be_positive_refuse_zero() {
        for flag in [
            "--merge-max-attempts=0",
            "--webhook-disable-after=0",
            "--graphql-persisted-queries-max=0",
            "--max-product-kb=0",
            "--max-response-mb=0",
            "--graphql-persisted-queries-per-account=0",
            "--graphql-max-complexity=0",
            "--graphql-max-fields=0",
            "--graphql-max-batch=0",
            "--db-max-connections-per-request=0",
            "--db-max-connections-per-account=0",
            "--http-probe-connections=0",
            "--snapshot-max-entries=0",
            "--max-sellers-per-lookup=0",
        ] {
            assert!(Serve::try_parse_from(["vitrina", flag]).is_err(), "{flag}");
        }
    }

    #[test]
    fn probe_connections_stay_within_the_descriptors_kept_for_them() {
        let command = <Serve as clap::CommandFactory>::command();
        let flag = command
            .get_arguments()
            .find(|a| a.get_id() == "http_probe_connections");
        let help = flag.and_then(|a| a.get_help()).map(|h| h.to_string());
        let stated = format!("at most {MAX_PROBE_CONNECTIONS} (`MAX_PROBE_CONNECTIONS`)");
        assert!(help.unwrap_or_default().contains(&stated), "{stated}");
        let most = format!("--http-probe-connections={MAX_PROBE_CONNECTIONS}");
        assert!(Serve::try_parse_from(["vitrina", &most]).is_ok());
        let over = format!("--http-probe-connections={}", MAX_PROBE_CONNECTIONS + 1);
        assert!(Serve::try_parse_from(["vitrina", &over]).is_err());
    }

    #[test]
    fn cors_origins_are_kept_as_browsers_send_them() {
        let parsed = Serve::try_parse_from([
            "vitrina",
            "--cors-origins=HTTPS://Dash.Example.com:443, http://127.0.0.1:3000,*",
        ])
        .expect("origins");
        let exact =
            |origin: &'static str| CorsOrigin::Exact(origin.parse().expect("a header value"));
        assert_eq!(
            parsed.serve.http.cors_origins,
            [
                exact("https://dash.example.com"),
                exact("http://127.0.0.1:3000"),
                CorsOrigin::Any
            ]
        );
        for refused in [
            "https://dash.example.com/",
            "https://dash.example.com/app",
            "https://dash.example.com?x=1",
            "https://user@dash.example.com",
            "file:///tmp/page.html",
            "dash.example.com",
            "",
        ] {
            let flag = format!("--cors-origins={refused}");
            assert!(
                Serve::try_parse_from(["vitrina", &flag]).is_err(),
                "{refused}"
            );
        }
    }

    #[test]
    fn retention_batches_refuse_zero() {
        for flag in ["--retention-batch=0", "--retention-batches-per-tick=0"] {
            assert!(Serve::try_parse_from(["vitrina", flag]).is_err(), "{flag}");
        }
    }

    #[test]
    fn a_page_of_products_at_the_limit_fits_in_an_answer() {
        assert_eq!(SizeConfig::default().check(), Ok(()));
        let largest_fitting = SizeConfig {
            max_product_kb: 156,
            max_response_mb: 16,
        };
        assert_eq!(largest_fitting.check(), Ok(()));
        let too_large = SizeConfig {
            max_product_kb: 157,
            ..largest_fitting
        };
        let refused = too_large.check().unwrap_err();
        assert!(
            refused.contains("VITRINA_MAX_RESPONSE_MB=16") && refused.contains("at least 17 MiB"),
            "{refused}"
        );
    }
}
