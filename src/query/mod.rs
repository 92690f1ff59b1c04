//! The one query layer: filters, paging and ordering over the entities.
//!
//! REST handlers and GraphQL resolvers both call these functions and hold no
//! SQL of their own, so a filter, an order or a permission cannot differ
//! between the two surfaces. Account-owned rows (scrape sessions) are reached
//! only through functions that take the account.

pub mod children;
pub mod keyset;
pub mod prices;
pub mod products;
pub mod sellers;
pub mod sessions;
pub mod snapshots;
pub mod top;

use sea_orm::sea_query::{Expr, LikeExpr};
use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, DbErr};
use uuid::Uuid;

/// Errors of the query layer. Surfaces map each variant to their own codes
/// (see `crate::http::ApiError`). Deliberately not `Display`: nothing can
/// print a database error to a client by accident.
#[derive(Debug)]
pub enum QueryError {
    /// A required parameter (or one of a required group) is absent.
    Missing(String),
    /// A parameter breaks its documented rule.
    Invalid(String),
    /// The addressed row does not exist or belongs to another account.
    NotFound,
    Database(DbErr),
}

impl From<DbErr> for QueryError {
    fn from(err: DbErr) -> Self {
        QueryError::Database(err)
    }
}

/// Offset paging as REST v1 defines it (page from 1, page_size 1..=500).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub page: u64,
    pub page_size: u64,
}

impl Page {
    pub const DEFAULT_PAGE: u64 = 1;
    pub const DEFAULT_SIZE: u64 = 100;
    pub const MAX_SIZE: u64 = 500;

    /// A page from raw values; anything missing or out of range falls back to
    /// its default (never an error).
    pub fn clamped(page: Option<u64>, page_size: Option<u64>) -> Page {
        Page {
            page: page.filter(|p| *p >= 1).unwrap_or(Self::DEFAULT_PAGE),
            page_size: page_size
                .filter(|s| (1..=Self::MAX_SIZE).contains(s))
                .unwrap_or(Self::DEFAULT_SIZE),
        }
    }

    pub fn offset(&self) -> u64 {
        (self.page - 1).saturating_mul(self.page_size)
    }
}

impl Default for Page {
    fn default() -> Self {
        Page {
            page: Self::DEFAULT_PAGE,
            page_size: Self::DEFAULT_SIZE,
        }
    }
}

/// Longest value accepted by the `*_contains` filters, in characters.
pub const MAX_CONTAINS_LEN: usize = 200;

/// A `LIKE` pattern matching `folded` anywhere, with wildcards in it escaped.
fn contains_pattern(folded: &str) -> LikeExpr {
    let mut pattern = String::with_capacity(folded.len() + 2);
    pattern.push('%');
    for c in folded.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    LikeExpr::new(pattern).escape('\\')
}

/// `column` is one of `ids`. PostgreSQL gets `= ANY($1)` with the ids as one
/// array parameter, so every list length shares one prepared statement and
/// its plan (an `IN` list of 100 placeholders cost as much to plan as to run);
/// SQLite has no arrays and gets the `IN` list.
pub fn one_of(db: &impl ConnectionTrait, column: impl ColumnTrait, ids: &[Uuid]) -> Expr {
    match db.get_database_backend() {
        DbBackend::Postgres => column.eq_any(ids.iter().copied()),
        _ => column.is_in(ids.iter().copied()),
    }
}
