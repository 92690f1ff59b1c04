//! What the process logs about itself: the subscriber, and the summary
//! `serve` logs once at start.

use std::io::IsTerminal;
use std::net::SocketAddr;

use sea_orm::DatabaseConnection;

use crate::config::ServeConfig;
use crate::db;

/// What is logged when `RUST_LOG` is unset: `info`, except sea-orm's
/// migration steps (the start-up summary names the migrations applied) and
/// sqlx's relaying of PostgreSQL notices such as `relation
/// "seaql_migrations" already exists, skipping`.
const DEFAULT_FILTER: &str = "info,sea_orm_migration=warn,sqlx=warn";

/// Logs go to stderr; `RUST_LOG` filters them (default [`DEFAULT_FILTER`]) and
/// `VITRINA_LOG_FORMAT=json` makes them one JSON object per line. They are
/// coloured only on a terminal (and then not when `NO_COLOR` is set), so a
/// log file or a container's log holds no escape codes.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if std::env::var("VITRINA_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().try_init()
    } else if std::io::stderr().is_terminal() {
        // The builder's default: colours unless NO_COLOR is set.
        builder.try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}

/// Logs, once, what this server runs with: an operator reading the log
/// learns the version, the addresses, the database (never its password), the
/// migrations this start applied, the jobs, the main limits, and where
/// GraphiQL's packages come from.
pub fn log_startup_summary(
    conn: &DatabaseConnection,
    config: &ServeConfig,
    bound: SocketAddr,
    public_url: &str,
    migrations_applied: &[String],
) {
    let database = db::pool_info(conn);
    let metrics = config
        .metrics_bind
        .map_or_else(|| "off".to_owned(), |bind| bind.to_string());
    let graphiql = crate::web::graphiql::asset_source(&config.graphql);
    let rate_limit_store = match config.redis.redis_url {
        Some(_) => "redis",
        None => "process",
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        bind = %bound,
        public_url,
        database = %database.url,
        db_max_connections = database.max_connections,
        migrations_applied = migrations_applied.len(),
        migration_names = ?migrations_applied,
        jobs = "on",
        jobs_every_secs = config.jobs.merge_interval_secs.max(1),
        metrics = %metrics,
        rate_limit_per_minute = config.rate_limit_per_minute,
        rate_limit_store,
        daily_quota = config.daily_quota,
        graphql_max_depth = config.graphql.max_depth,
        graphql_max_complexity = config.graphql.max_complexity,
        shutdown_grace_secs = config.http.shutdown_grace_secs,
        graphiql_assets = %graphiql,
        "vitrina started"
    );
    crate::web::graphiql::warn_if_not_built_in(&config.graphql);
}
