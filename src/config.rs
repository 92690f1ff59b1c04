//! Typed configuration, loaded in one place: every setting is a command-line
//! flag with an environment override (`DATABASE_URL`, `VITRINA_*`) and its
//! default written here.

use std::net::SocketAddr;

use clap::Args;

use crate::limits::Limits;

/// Where the embedded default database lives: a SQLite file created on first start.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/vitrina.db";

/// Database settings shared by every command.
#[derive(Debug, Clone, Args)]
pub struct DatabaseConfig {
    /// SQLite (`sqlite://path/to/file.db`) or PostgreSQL (`postgres://user@host/db`).
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,

    /// Most connections the pool opens.
    #[arg(
        long,
        env = "VITRINA_DB_MAX_CONNECTIONS",
        default_value_t = 16,
        global = true
    )]
    pub db_max_connections: u32,
}

/// Settings of the HTTP server and the jobs it runs.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address and port to listen on. Port 0 picks a free port.
    #[arg(long, env = "VITRINA_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// The address clients reach this service at, used for absolute links such
    /// as a webhook's `url`. Defaults to `http://<bind>`.
    #[arg(long, env = "VITRINA_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Requests per account per minute, over REST and GraphQL together.
    #[arg(long, env = "VITRINA_RATE_LIMIT_PER_MINUTE", default_value_t = 600)]
    pub rate_limit_per_minute: u32,

    /// Daily data quota in rows per account and UTC day (an account may set its own).
    #[arg(long, env = "VITRINA_DAILY_QUOTA", default_value_t = 10_000)]
    pub daily_quota: i64,

    #[command(flatten)]
    pub graphql: GraphqlConfig,
}

/// GraphQL limits and GraphiQL.
#[derive(Debug, Clone, Args)]
pub struct GraphqlConfig {
    /// Deepest selection nesting a query may have.
    #[arg(
        long = "graphql-max-depth",
        env = "VITRINA_GRAPHQL_MAX_DEPTH",
        default_value_t = 10
    )]
    pub max_depth: usize,

    /// Highest complexity a query may have (each field costs 1; a connection
    /// multiplies its children by its page size).
    #[arg(
        long = "graphql-max-complexity",
        env = "VITRINA_GRAPHQL_MAX_COMPLEXITY",
        default_value_t = 10_000
    )]
    pub max_complexity: usize,

    /// Accept batched requests (a JSON array of operations).
    #[arg(
        long = "graphql-batching",
        env = "VITRINA_GRAPHQL_BATCHING",
        default_value_t = false
    )]
    pub batching: bool,

    /// Where GraphiQL loads its scripts from (an unpkg-style layout). Point it at
    /// a local copy, e.g. a folder served by any static file server, when the
    /// browser has no internet access.
    #[arg(
        long,
        env = "VITRINA_GRAPHIQL_ASSETS",
        default_value = "https://unpkg.com"
    )]
    pub graphiql_assets: String,
}

impl Default for GraphqlConfig {
    fn default() -> Self {
        GraphqlConfig {
            max_depth: 10,
            max_complexity: 10_000,
            batching: false,
            graphiql_assets: "https://unpkg.com".into(),
        }
    }
}

/// Everything a running server needs besides the database and the clock.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub limits: Limits,
    pub graphql: GraphqlConfig,
}

impl ServeConfig {
    pub fn settings(&self) -> Settings {
        Settings {
            limits: Limits {
                rate_per_minute: self.rate_limit_per_minute,
                daily_quota: self.daily_quota,
            },
            graphql: self.graphql.clone(),
        }
    }

    /// The public base address without a trailing slash, given the address
    /// actually bound (which differs from `bind` when its port is 0).
    pub fn public_url(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{bound}"),
        }
    }
}
