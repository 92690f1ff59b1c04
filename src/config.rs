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
}

impl ServeConfig {
    pub fn limits(&self) -> Limits {
        Limits {
            rate_per_minute: self.rate_limit_per_minute,
            daily_quota: self.daily_quota,
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
