//! Whose fault a failed write is.
//!
//! - The item's: the database refused what the item carries (a value too
//!   long for an index, text or a number it cannot hold, a constraint, a
//!   trigger refusing the row). The item is rejected alone, with the error
//!   as its reason.
//! - The database's: it cannot be reached, is out of space or memory, was
//!   shut down, chose this transaction as a deadlock victim. That says
//!   nothing about the item: it is kept for a later pass, and the attempt
//!   does not count against it.
//! - Anything else (an error of our own code or of a schema that does not
//!   match it): the item is kept too, but the attempt counts, so an item
//!   that keeps causing it is rejected after the configured attempts, and
//!   no error empties the backlog at once.

use sea_orm::sqlx::postgres::PgDatabaseError;
use sea_orm::sqlx::sqlite::SqliteError;
use sea_orm::sqlx::{self, error::DatabaseError};
use sea_orm::{DbErr, RuntimeErr};

/// Whose fault a failed write is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Item,
    Database,
    Unknown,
}

/// PostgreSQL SQLSTATE classes of what a value carries: data exception,
/// integrity constraint violation, program limit exceeded (an index row
/// too big), PL/pgSQL error (`RAISE EXCEPTION` in a trigger refusing the
/// row; Vitrina's own PL/pgSQL, the triggers keeping product counts,
/// raises none).
const POSTGRES_ITEM_CLASSES: &[&str] = &["22", "23", "54", "P0"];
/// PostgreSQL SQLSTATE classes of the server's own trouble: connection
/// exception, transaction rollback (serialization failure, deadlock),
/// insufficient resources, operator intervention (shutdown, cancel),
/// system error, internal error.
const POSTGRES_FAULT_CLASSES: &[&str] = &["08", "40", "53", "57", "58", "XX"];
/// `lock_not_available`.
const POSTGRES_LOCK_NOT_AVAILABLE: &str = "55P03";

/// SQLite primary result codes of what a value carries: TOOBIG, CONSTRAINT,
/// MISMATCH, RANGE.
const SQLITE_ITEM_CODES: &[i32] = &[18, 19, 20, 25];
/// SQLite primary result codes of the database's own trouble: BUSY, LOCKED,
/// NOMEM, READONLY, INTERRUPT, IOERR, CORRUPT, FULL, CANTOPEN, PROTOCOL, NOTADB.
const SQLITE_FAULT_CODES: &[i32] = &[5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 26];

/// Whose fault `err` is.
pub fn classify(err: &DbErr) -> Fault {
    match err {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => Fault::Database,
        // serde could not read or write what the item carries.
        DbErr::Json(_) => Fault::Item,
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => {
            match e.as_ref() {
                sqlx::Error::Database(db) => classify_code(db.as_ref()),
                sqlx::Error::Encode(_) => Fault::Item,
                sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed
                | sqlx::Error::BeginFailed => Fault::Database,
                _ => Fault::Unknown,
            }
        }
        _ => Fault::Unknown,
    }
}

fn classify_code(err: &dyn DatabaseError) -> Fault {
    if let Some(pg) = err.try_downcast_ref::<PgDatabaseError>() {
        let code = pg.code();
        let in_class = |classes: &[&str]| classes.iter().any(|c| code.starts_with(c));
        return if in_class(POSTGRES_ITEM_CLASSES) {
            Fault::Item
        } else if code == POSTGRES_LOCK_NOT_AVAILABLE || in_class(POSTGRES_FAULT_CLASSES) {
            Fault::Database
        } else {
            Fault::Unknown
        };
    }
    if err.try_downcast_ref::<SqliteError>().is_some() {
        // The code is the extended result code; its low byte is the primary one.
        let primary = err
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .map(|c| c & 0xff);
        return match primary {
            Some(c) if SQLITE_ITEM_CODES.contains(&c) => Fault::Item,
            Some(c) if SQLITE_FAULT_CODES.contains(&c) => Fault::Database,
            _ => Fault::Unknown,
        };
    }
    Fault::Unknown
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sea_orm::ConnAcquireErr;

    use super::*;

    fn sqlx_exec(e: sqlx::Error) -> DbErr {
        DbErr::Exec(RuntimeErr::SqlxError(Arc::new(e)))
    }

    #[test]
    fn an_unreachable_database_is_not_the_items_fault() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        for err in [
            DbErr::ConnectionAcquire(ConnAcquireErr::Timeout),
            DbErr::Conn(RuntimeErr::Internal("connection reset".into())),
            sqlx_exec(sqlx::Error::Io(refused)),
            sqlx_exec(sqlx::Error::PoolClosed),
            DbErr::Query(RuntimeErr::SqlxError(Arc::new(sqlx::Error::WorkerCrashed))),
        ] {
            assert_eq!(classify(&err), Fault::Database, "{err}");
        }
    }

    #[test]
    fn what_the_item_carries_is_its_own_fault() {
        for err in [
            sqlx_exec(sqlx::Error::Encode("bad value".into())),
            DbErr::Json("bad json".into()),
        ] {
            assert_eq!(classify(&err), Fault::Item, "{err}");
        }
    }

    #[test]
    fn an_error_of_our_own_is_nobodys_known_fault() {
        for err in [
            DbErr::RecordNotFound("product".into()),
            DbErr::Custom("a bug".into()),
            sqlx_exec(sqlx::Error::ColumnNotFound("attempts".into())),
        ] {
            assert_eq!(classify(&err), Fault::Unknown, "{err}");
        }
    }
}
