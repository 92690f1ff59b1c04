//! Whether a failed statement means the database is briefly out of reach
//! rather than something wrong with the request or the code, so that the
//! request is answered 503 `unavailable` with `Retry-After` instead of 500:
//!
//! - no connection: the pool could not hand one out within
//!   `VITRINA_DB_WAIT_MS`, or opening one failed, or the one it had was cut
//!   (PostgreSQL restarting, its backends terminated, the network);
//! - PostgreSQL: SQLSTATE class 08 (connection exception), 57P01-57P03
//!   (terminated by an administrator, crashed, starting up), 53300 (too
//!   many connections), 55P03 (a lock not granted within `lock_timeout`),
//!   40001 and 40P01 (serialization failure, deadlock: retrying succeeds);
//! - SQLite: BUSY and LOCKED (another connection or process holds the lock
//!   beyond the busy timeout).
//!
//! The merge job sorts its own write errors by whose fault they are
//! (`jobs::merge::fault`); this answers the narrower question a request
//! needs.

use sea_orm::sqlx::error::DatabaseError;
use sea_orm::sqlx::postgres::PgDatabaseError;
use sea_orm::sqlx::sqlite::SqliteError;
use sea_orm::{DbErr, RuntimeErr, sqlx};

/// PostgreSQL SQLSTATEs (or their classes, two characters) of a database
/// briefly out of reach.
const POSTGRES_UNAVAILABLE: &[&str] = &[
    "08", "57P01", "57P02", "57P03", "53300", "55P03", "40001", "40P01",
];

/// SQLite primary result codes BUSY and LOCKED.
const SQLITE_UNAVAILABLE: &[i32] = &[5, 6];

/// Whether `err` says the database is briefly out of reach.
pub fn is_unavailable(err: &DbErr) -> bool {
    match err {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => {
            match e.as_ref() {
                sqlx::Error::Database(db) => refused_for_now(db.as_ref()),
                sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed => true,
                _ => false,
            }
        }
        _ => false,
    }
}

fn refused_for_now(err: &dyn DatabaseError) -> bool {
    if let Some(pg) = err.try_downcast_ref::<PgDatabaseError>() {
        let code = pg.code();
        return POSTGRES_UNAVAILABLE.iter().any(|c| code.starts_with(c));
    }
    if err.try_downcast_ref::<SqliteError>().is_some() {
        // The extended result code; its low byte is the primary one.
        let primary = err
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .map(|c| c & 0xff);
        return primary.is_some_and(|c| SQLITE_UNAVAILABLE.contains(&c));
    }
    false
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sea_orm::ConnAcquireErr;

    use super::*;

    fn exec(e: sqlx::Error) -> DbErr {
        DbErr::Exec(RuntimeErr::SqlxError(Arc::new(e)))
    }

    #[test]
    fn no_connection_is_unavailable() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        for err in [
            DbErr::ConnectionAcquire(ConnAcquireErr::Timeout),
            DbErr::Conn(RuntimeErr::Internal("connection refused".into())),
            exec(sqlx::Error::Io(reset)),
            exec(sqlx::Error::PoolTimedOut),
            DbErr::Query(RuntimeErr::SqlxError(Arc::new(sqlx::Error::WorkerCrashed))),
        ] {
            assert!(is_unavailable(&err), "{err}");
        }
    }

    #[test]
    fn errors_of_the_request_or_the_code_are_not() {
        for err in [
            DbErr::RecordNotFound("product".into()),
            DbErr::Custom("a bug".into()),
            exec(sqlx::Error::ColumnNotFound("attempts".into())),
            exec(sqlx::Error::Encode("bad value".into())),
        ] {
            assert!(!is_unavailable(&err), "{err}");
        }
    }
}
