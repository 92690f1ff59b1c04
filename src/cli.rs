//! The `vitrina` command line.

mod account_admin;
mod keys;
mod logging;
mod reference;
mod webhooks;

pub use logging::init_tracing;
pub use reference::{SECTIONS as SETTINGS_SECTIONS, settings_reference};

use clap::{Args, Parser, Subcommand};
use sea_orm::DatabaseConnection;
use tokio::net::TcpListener;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::app::App;
use crate::clock::{SharedClock, SystemClock};
use crate::config::{
    DEFAULT_BIND, DatabaseConfig, JobsConfig, ListConfig, PublicUrl, ServeConfig, Settings,
    SizeConfig, WebhookConfig,
};
use crate::error::Error;
use crate::events::Events;
use crate::jobs::scheduler::Jobs;
use crate::seed::{self, Progress, SeedOptions};
use crate::webhooks::Sender;
use crate::{accounts, db};

#[derive(Debug, Parser)]
#[command(
    name = "vitrina",
    version,
    about = "Marketplace product data over REST v1 and GraphQL"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Migrate, then serve HTTP and run the background jobs.
    Serve {
        // Boxed: the other commands are a fraction of its size.
        #[command(flatten)]
        config: Box<ServeConfig>,
        /// Fill an empty database with the demo dataset and print a ready API key.
        #[arg(long, help_heading = "Server")]
        demo: bool,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Apply pending database migrations.
    Migrate {
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Generate the deterministic synthetic dataset into an empty database.
    Seed {
        #[command(flatten)]
        options: SeedOptions,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Manage accounts: create, list, show, set a daily quota.
    Accounts {
        #[command(subcommand)]
        command: account_admin::AccountsCommand,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Manage API keys.
    Keys {
        #[command(subcommand)]
        command: keys::KeysCommand,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Run the background jobs.
    Jobs {
        #[command(subcommand)]
        command: JobsCommand,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Manage webhook subscriptions.
    Webhooks {
        #[command(subcommand)]
        command: webhooks::WebhooksCommand,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    #[command(flatten)]
    Document(DocumentCommand),
}

/// The commands that only write a generated document: they need no
/// database.
#[derive(Debug, Subcommand)]
pub enum DocumentCommand {
    /// Print the GraphQL schema (SDL), or write it to a file.
    Schema {
        /// Write here instead of standard output (e.g. `schema.graphql`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the reference of every `serve` setting (Markdown), or write it
    /// to a file.
    Settings {
        /// Write here instead of standard output (e.g. `docs/settings.md`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print an OpenAPI document (JSON), or write it to a file.
    Openapi {
        /// Which API's document.
        api: OpenApiDocument,
        /// Write here instead of standard output (e.g. `openapi/rest-v1.json`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// The OpenAPI documents Vitrina serves.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum OpenApiDocument {
    /// REST v1, served at `/v1/openapi.json`.
    Rest,
    /// The extension API, served at `/extension/v1/openapi.json`.
    Extension,
}

impl OpenApiDocument {
    /// The document as checked in under `openapi/`: the served JSON and a final newline.
    fn file_text(self) -> String {
        let json = match self {
            Self::Rest => crate::rest::openapi::document_json(),
            Self::Extension => crate::extension::openapi::document_json(),
        };
        format!("{json}\n")
    }
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// One round of every job: merge all pending submissions, send due
    /// webhooks, make today's snapshot if missing, apply retention.
    RunOnce {
        #[command(flatten)]
        config: RunOnceConfig,
    },
}

/// What one round of the jobs reads of `serve`'s settings.
#[derive(Debug, Args)]
pub struct RunOnceConfig {
    #[command(flatten)]
    public_url: PublicUrl,
    #[command(flatten)]
    jobs: JobsConfig,
    #[command(flatten)]
    webhooks: WebhookConfig,
    #[command(flatten)]
    sizes: SizeConfig,
    #[command(flatten)]
    lists: ListConfig,
}

impl RunOnceConfig {
    fn settings(self) -> Settings {
        Settings {
            jobs: self.jobs,
            webhooks: self.webhooks,
            sizes: self.sizes,
            lists: self.lists,
            ..Settings::default()
        }
    }
}

impl Command {
    /// Whether the command creates the database when missing and applies
    /// pending migrations; the others need a migrated database.
    fn migrates(&self) -> bool {
        matches!(
            self,
            Command::Serve { .. } | Command::Migrate { .. } | Command::Seed { .. }
        )
    }

    /// The database the command works on, or, for a command that needs
    /// none, the document it writes.
    fn database(&self) -> Result<&DatabaseConfig, &DocumentCommand> {
        match self {
            Command::Serve { database, .. }
            | Command::Migrate { database }
            | Command::Seed { database, .. }
            | Command::Accounts { database, .. }
            | Command::Keys { database, .. }
            | Command::Jobs { database, .. }
            | Command::Webhooks { database, .. } => Ok(database),
            Command::Document(document) => Err(document),
        }
    }
}

impl Cli {
    pub async fn run(self) -> Result<(), Error> {
        let database = match self.command.database() {
            Ok(database) => database.clone(),
            Err(document) => return document.emit(),
        };
        let conn = if self.command.migrates() {
            db::connect(&database).await?
        } else {
            db::connect_migrated(&database).await?
        };
        let clock: SharedClock = std::sync::Arc::new(SystemClock);
        match self.command {
            Command::Serve { config, demo, .. } => {
                waits_fit_the_deadline(&database, &config)?;
                serve(conn, clock, *config, demo).await
            }
            Command::Migrate { .. } => {
                for name in db::migrate(&conn).await? {
                    println!("applied {name}");
                }
                println!("database is up to date");
                Ok(())
            }
            Command::Seed { options, .. } => {
                db::migrate(&conn).await?;
                let report = seed::seed_showing(&conn, &options, Progress::Stderr).await?;
                println!("{report}");
                if let Some(key) = report.demo_key {
                    println!("demo API key (shown once): {key}");
                }
                Ok(())
            }
            Command::Accounts { command, .. } => {
                account_admin::run(&conn, clock.as_ref(), command).await
            }
            Command::Keys { command, .. } => keys::run(&conn, clock.as_ref(), command).await,
            Command::Jobs {
                command: JobsCommand::RunOnce { config },
                ..
            } => {
                let public_url = config.public_url.or(DEFAULT_BIND);
                let settings = config.settings();
                let jobs = Jobs::new(
                    conn,
                    clock,
                    &settings,
                    &public_url,
                    Sender::new(&settings.webhooks)?,
                    Events::default(),
                );
                let report = jobs.tick().await?;
                println!("{report}");
                Ok(())
            }
            Command::Webhooks { command, .. } => {
                webhooks::run(&conn, clock.as_ref(), command).await
            }
            Command::Document(document) => document.emit(),
        }
    }
}

impl DocumentCommand {
    /// Writes the generated document.
    fn emit(&self) -> Result<(), Error> {
        match self {
            DocumentCommand::Schema { out } => emit(&crate::graphql::sdl(), out.as_deref()),
            DocumentCommand::Openapi { api, out } => emit(&api.file_text(), out.as_deref()),
            DocumentCommand::Settings { out } => emit(&settings_reference(), out.as_deref()),
        }
    }
}

/// A request may wait `VITRINA_DB_WAIT_MS` for a connection and as long
/// again for a lock; both must fit in the GraphQL deadline, or a request
/// would be answered `TIMEOUT` where it should be `UNAVAILABLE`.
fn waits_fit_the_deadline(database: &DatabaseConfig, config: &ServeConfig) -> Result<(), Error> {
    let (wait, deadline) = (database.db_wait_ms, config.graphql.deadline_ms);
    if wait.saturating_mul(2) >= deadline {
        return Err(Error::Invalid(format!(
            "VITRINA_DB_WAIT_MS is {wait}: twice it must be below VITRINA_GRAPHQL_DEADLINE_MS ({deadline})"
        )));
    }
    Ok(())
}

/// Writes a generated document to `out`, or to standard output.
fn emit(text: &str, out: Option<&Path>) -> Result<(), Error> {
    match out {
        Some(path) => Ok(std::fs::write(path, text)?),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

async fn serve(
    conn: DatabaseConnection,
    clock: SharedClock,
    config: ServeConfig,
    demo: bool,
) -> Result<(), Error> {
    // Before anything is written or bound: sizes that cannot serve a page.
    config.sizes.check().map_err(Error::Invalid)?;
    let migrations_applied = db::migrate(&conn).await?;
    let mut demo_key = None;
    if demo {
        if seed::is_empty(&conn).await? {
            let report = seed::seed(&conn, &SeedOptions::demo()).await?;
            println!("{report}");
            demo_key = report.demo_key;
        } else {
            println!("database already holds data; demo seeding skipped");
        }
    }
    let shutdown = shutdown_signal()?;
    let listener = TcpListener::bind(config.bind)
        .await
        .map_err(|e| Error::Invalid(format!("cannot listen on {}: {e}", config.bind)))?;
    let bound = listener.local_addr()?;
    let public_url = config.public_url(bound);
    println!("listening on http://{bound}");
    if let Some(bind) = config.metrics_bind {
        let every = Duration::from_secs(config.jobs.merge_interval_secs.max(1));
        let metrics = crate::metrics::start(bind, &conn, clock.clone(), every).await?;
        println!("metrics on http://{metrics}/metrics");
    }
    if demo {
        demo_key = Some(announce_demo(&conn, clock.now(), demo_key, &public_url).await?);
    }
    let settings = config.settings();
    logging::log_startup_summary(&conn, &config, bound, &public_url, &migrations_applied);
    let app = App::build(conn, clock, settings, listener, public_url, demo_key)?;
    app.with_jobs().run(shutdown).await?;
    tracing::info!("shut down");
    Ok(())
}

/// Prints the demo's key and where to try it: the key `seeded` just now,
/// or a new one replacing the earlier ones (at most one live demo key,
/// however often the demo restarts).
async fn announce_demo(
    conn: &DatabaseConnection,
    now: chrono::DateTime<chrono::Utc>,
    seeded: Option<String>,
    public_url: &str,
) -> Result<String, Error> {
    let key = match seeded {
        Some(key) => key,
        None => {
            let (key, revoked) = accounts::replace_keys(conn, seed::DEMO_ACCOUNT, now).await?;
            if revoked > 0 {
                println!("earlier demo API keys revoked: {revoked}");
            }
            key.secret
        }
    };
    println!("demo API key: {key}");
    println!("try: curl -H 'Authorization: Bearer {key}' '{public_url}/v1/products?page_size=2'");
    println!("GraphiQL (the key is filled in): {public_url}/graphql");
    println!("demo dashboard: {public_url}/dashboard");
    Ok(key)
}

/// Listens for SIGTERM (what container runtimes and systemd send) and
/// SIGINT (Ctrl-C) from now on, so that neither ends the process at once:
/// the future resolves at the first of them, and serving drains. A second
/// one ends the process at once, as an operator who sends it means.
fn shutdown_signal() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        let received = tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        };
        tracing::info!("{received} received: shutting down");
        tokio::spawn(async move {
            // The status a shell gives a process the signal ended: 128 + its number.
            let (received, status) = tokio::select! {
                _ = terminate.recv() => ("SIGTERM", 128 + 15),
                _ = interrupt.recv() => ("SIGINT", 128 + 2),
            };
            tracing::warn!("second signal ({received}): exiting at once, with {status}");
            std::process::exit(status);
        });
    })
}

/// A time as the commands print it.
fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
