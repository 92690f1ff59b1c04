//! Errors of the process level: start-up, CLI commands and jobs run from the CLI.
//!
//! Which error type belongs where:
//! - [`Error`] (this module): anything `main` may print; every variant renders as
//!   one line meant for an operator.
//! - [`OpenError`] (this module): why the database could not be opened, or is
//!   not ready for a command; each says what to do about it.
//! - `sea_orm::DbErr`: raw database failures inside queries and jobs; wrapped
//!   into [`Error::Database`] at this level.

use std::path::PathBuf;
use std::time::Duration;

use sea_orm::{DbErr, RuntimeErr, sqlx};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// The configured database URL cannot be used.
    #[error("invalid DATABASE_URL: {0}")]
    DatabaseUrl(String),
    /// The database could not be reached or opened, or is not ready.
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error("database error: {}", database_message(.0))]
    Database(#[from] DbErr),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A command was asked to do something the data does not allow.
    #[error("{0}")]
    Invalid(String),
}

/// Why the database could not be opened, in words that say what to do.
/// Addresses are `host:port`; no message carries a password.
#[derive(Debug, Error)]
pub enum OpenError {
    #[error(
        "cannot connect to the database at {address}: connection refused \
         (is PostgreSQL running and listening on that port?)"
    )]
    Refused { address: String },
    #[error(
        "cannot connect to the database: unknown host {host:?} \
         (check the host in DATABASE_URL)"
    )]
    UnknownHost { host: String },
    #[error(
        "cannot connect to the database at {address}: no answer within {} s \
         (check the host, the port and any firewall between)",
        .waited.as_secs()
    )]
    NoAnswer { address: String, waited: Duration },
    #[error(
        "cannot connect to the database at {address}: what answers there is not PostgreSQL \
         (check the port)"
    )]
    NotPostgres { address: String },
    #[error(
        "cannot connect to the database at {address} as user {user:?}: \
         authentication failed ({reason}); check the user and password in DATABASE_URL"
    )]
    Authentication {
        address: String,
        user: String,
        reason: String,
    },
    #[error(
        "database \"{name}\" does not exist at {address}: \
         create it with createdb {createdb_args}"
    )]
    MissingDatabase {
        name: String,
        address: String,
        /// The `createdb` options naming this server and user, and the name.
        createdb_args: String,
    },
    #[error("cannot create the folder {} of the SQLite database: {source}", .path.display())]
    SqliteFolder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the SQLite database {}: {reason}", .path.display())]
    SqliteFile { path: PathBuf, reason: String },
    /// A command that needs the database found no SQLite file.
    #[error("no database at {}: run `vitrina migrate` or `vitrina serve` first", .path.display())]
    NoDatabase { path: PathBuf },
    /// A command that needs the database found migrations pending.
    #[error(
        "the database {database} is not migrated ({pending} of {total} migrations pending): \
         run `vitrina migrate` or `vitrina serve` first"
    )]
    NotMigrated {
        database: String,
        pending: usize,
        total: usize,
    },
    /// Anything else the driver reported while connecting.
    #[error("cannot connect to the database: {0}")]
    Other(String),
}

/// The driver's error inside a sea-orm error, when it carries one.
pub fn sqlx_error(err: &DbErr) -> Option<&sqlx::Error> {
    match err {
        DbErr::Conn(RuntimeErr::SqlxError(e))
        | DbErr::Exec(RuntimeErr::SqlxError(e))
        | DbErr::Query(RuntimeErr::SqlxError(e)) => Some(e.as_ref()),
        _ => None,
    }
}

/// A database failure in one line: the server's own message, without the
/// position in PostgreSQL's C sources that sqlx appends (`at line 948`).
pub fn database_message(err: &DbErr) -> String {
    match sqlx_error(err) {
        Some(sqlx::Error::Database(db)) => db.message().to_owned(),
        Some(other) => other.to_string(),
        None => err.to_string(),
    }
}

/// The message a panic carried, for the log (a panic's payload is a `&str`
/// or a `String` unless it was raised with something else).
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
