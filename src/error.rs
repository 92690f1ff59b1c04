//! Errors of the process level: start-up, CLI commands and jobs run from the CLI.
//!
//! Which error type belongs where:
//! - [`Error`] (this module): anything `main` may print; every variant renders as
//!   one line meant for an operator.
//! - `sea_orm::DbErr`: raw database failures inside queries and jobs; wrapped
//!   into [`Error::Database`] at this level.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// The configured database URL cannot be used.
    #[error("invalid DATABASE_URL: {0}")]
    DatabaseUrl(String),
    /// The database could not be reached or opened.
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    #[error("database error: {0}")]
    Database(#[from] sea_orm::DbErr),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A command was asked to do something the data does not allow.
    #[error("{0}")]
    Invalid(String),
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
