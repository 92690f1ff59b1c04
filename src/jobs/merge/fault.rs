//! Whose fault a failed write is. An error of the database itself (it cannot
//! be reached, is out of space or memory, was shut down, chose this
//! transaction as a deadlock victim) says nothing about the item: the item is
//! kept for a later pass. Every other error writing an item (a value too long
//! for an index, text the database refuses, a constraint) is the item's, and
//! rejects it alone.

use sea_orm::sqlx::postgres::PgDatabaseError;
use sea_orm::sqlx::sqlite::SqliteError;
use sea_orm::sqlx::{self, error::DatabaseError};
use sea_orm::{DbErr, RuntimeErr};

/// True when `err` is the database's fault rather than the item's.
pub fn is_database_fault(err: &DbErr) -> bool {
    match err {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => {
            match e.as_ref() {
                sqlx::Error::Database(db) => is_fault_code(db.as_ref()),
                sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed
                | sqlx::Error::BeginFailed => true,
                _ => false,
            }
        }
        _ => false,
    }
}

/// PostgreSQL SQLSTATE classes of the server's own trouble: connection
/// exception, transaction rollback (serialization failure, deadlock),
/// insufficient resources, operator intervention (shutdown, cancel),
/// system error, internal error.
const POSTGRES_FAULT_CLASSES: &[&str] = &["08", "40", "53", "57", "58", "XX"];
/// `lock_not_available`.
const POSTGRES_LOCK_NOT_AVAILABLE: &str = "55P03";

/// SQLite primary result codes of the database's own trouble: BUSY, LOCKED,
/// NOMEM, READONLY, INTERRUPT, IOERR, CORRUPT, FULL, CANTOPEN, PROTOCOL, NOTADB.
const SQLITE_FAULT_CODES: &[i32] = &[5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 26];

fn is_fault_code(err: &dyn DatabaseError) -> bool {
    if let Some(pg) = err.try_downcast_ref::<PgDatabaseError>() {
        let code = pg.code();
        return code == POSTGRES_LOCK_NOT_AVAILABLE
            || POSTGRES_FAULT_CLASSES.iter().any(|c| code.starts_with(c));
    }
    if err.try_downcast_ref::<SqliteError>().is_some() {
        // The code is the extended result code; its low byte is the primary one.
        let extended = err.code().and_then(|c| c.parse::<i32>().ok());
        return extended.is_some_and(|c| SQLITE_FAULT_CODES.contains(&(c & 0xff)));
    }
    false
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
            assert!(is_database_fault(&err), "{err}");
        }
    }

    #[test]
    fn what_the_item_carries_is_its_own_fault() {
        for err in [
            sqlx_exec(sqlx::Error::Encode("bad value".into())),
            DbErr::RecordNotFound("product".into()),
            DbErr::Json("bad json".into()),
        ] {
            assert!(!is_database_fault(&err), "{err}");
        }
    }
}
