//! The one query layer: filters, paging and ordering over the entities.
//!
//! REST handlers and GraphQL resolvers both call these functions and hold no
//! SQL of their own, so a filter, an order or a permission cannot differ
//! between the two surfaces. Account-owned rows (scrape sessions) are reached
//! only through functions that take the account.

pub mod budget;
pub mod children;
pub mod counts;
pub mod estimate;
pub mod keyset;
pub mod leading;
pub mod literal_limits;
pub mod movers;
pub mod name_parts;
pub mod order;
pub mod prices;
pub mod product_lists;
pub mod product_order;
pub mod products;
pub mod sellers;
pub mod series;
pub mod sessions;
pub mod snapshots;
pub mod stats;
pub mod top;

use chrono::{DateTime, Datelike, Utc};
use sea_orm::sea_query::{BinOper, Expr, LikeExpr};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, PaginatorTrait, PartialModelTrait, QuerySelect,
    Select,
};
use uuid::Uuid;

use name_parts::Run;

/// Errors of the query layer. Surfaces map each variant to their own codes
/// (REST and GraphQL through `ApiError`). Deliberately not `Display`: nothing can
/// print a database error to a client by accident.
#[derive(Debug)]
pub enum QueryError {
    /// A required parameter (or one of a required group) is absent.
    Missing(String),
    /// A parameter breaks its documented rule.
    Invalid(String),
    /// The addressed row does not exist or belongs to another account.
    NotFound,
    /// The products read pass the answer's byte budget
    /// ([`budget::ResponseBudget`]): `reached` bytes of a `limit`.
    TooLarge {
        limit: u64,
        reached: u64,
    },
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

    /// The rows before this page, when a database can skip that many: SQL's
    /// `OFFSET` is a signed 64-bit integer. `None` for a page that starts
    /// further on (any page number up to `u64::MAX` is valid): no list is that
    /// long, so the page is empty and no statement needs to read it.
    pub fn offset(&self) -> Option<u64> {
        self.page
            .saturating_sub(1)
            .checked_mul(self.page_size)
            .filter(|skip| i64::try_from(*skip).is_ok())
    }

    /// The rows before this page in a list of `total` rows; `None` when the
    /// page starts past its end (it is empty, nothing needs reading).
    pub fn offset_in(&self, total: u64) -> Option<u64> {
        self.offset().filter(|skip| *skip < total)
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

/// The rows a statement reads to show at most `most` and tell whether more
/// follow: one past them, within SQL's `LIMIT` (a signed 64-bit integer),
/// however large a setting makes `most`.
pub fn one_past(most: u64) -> u64 {
    most.saturating_add(1).min(i64::MAX as u64)
}

/// Longest value accepted by the `*_contains` filters, in characters.
pub const MAX_CONTAINS_LEN: usize = 200;

/// Longest text parameter (a filter, a lookup value, a cursor), in
/// characters. No stored text a parameter is compared with is longer (the
/// longest, URLs, hold 2,048 bytes once normalized), nor is any cursor. Part
/// of the API's contract (the OpenAPI document states it as `maxLength`), so
/// a constant rather than a setting.
pub const MAX_TEXT_LEN: usize = 2048;

/// The rule every text parameter and argument passes before it reaches the
/// database: no NUL (PostgreSQL text cannot hold one) and at most
/// [`MAX_TEXT_LEN`] characters. `name` is the parameter, for the message.
/// Allocates nothing for a valid value.
pub fn check_text(name: &str, value: &str) -> Result<(), QueryError> {
    check_text_within(name, value, MAX_TEXT_LEN)
}

/// [`check_text`] with a bound of `max` characters.
pub fn check_text_within(name: &str, value: &str, max: usize) -> Result<(), QueryError> {
    if value.as_bytes().contains(&0) {
        return Err(QueryError::Invalid(format!(
            "{name} must not contain a NUL character"
        )));
    }
    check_length(name, value, max)
}

/// `value` holds at most `max` characters.
pub fn check_length(name: &str, value: &str, max: usize) -> Result<(), QueryError> {
    // Characters never outnumber bytes: only a long value is counted.
    if value.len() <= max {
        return Ok(());
    }
    match value.chars().count() {
        chars if chars > max => Err(QueryError::Invalid(format!(
            "{name} must be at most {max} characters long, not {chars}"
        ))),
        _ => Ok(()),
    }
}

/// One page of `select` in its entity's order, as `M` (the entity's model,
/// or a partial model of the columns needed), and the total `select` counts.
/// A page past the end reads no rows.
pub async fn offset_page<E: order::Ordered, M: PartialModelTrait + Send + Sync>(
    db: &impl ConnectionTrait,
    select: Select<E>,
    page: Page,
) -> Result<(Vec<M>, u64), DbErr>
where
    E::Model: Sync,
{
    let total = select.clone().count(db).await?;
    let Some(skip) = page.offset_in(total) else {
        return Ok((Vec::new(), total));
    };
    let rows = order::apply(select)
        .offset(skip)
        .limit(page.page_size)
        .into_partial_model()
        .all(db)
        .await?;
    Ok((rows, total))
}

/// Whether `time` is one a row can hold and both databases order as times:
/// years 0 to 9999 (SQLite stores times as RFC 3339 text, which puts
/// `+10000-...` before `2026-...`).
pub fn storable_time(time: &DateTime<Utc>) -> bool {
    (0..=9999).contains(&time.year())
}

/// A time range's bounds, when given, lie in years 0 to 9999 (those every
/// database stores) and `from` is not after `to`.
pub fn check_range(
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
) -> Result<(), QueryError> {
    for (name, time) in [("from", from), ("to", to)] {
        if time.is_some_and(|t| !storable_time(&t)) {
            return Err(QueryError::Invalid(format!(
                "{name} must be a time in the years 0 to 9999 (UTC)"
            )));
        }
    }
    match (from, to) {
        (Some(from), Some(to)) if from > to => {
            Err(QueryError::Invalid("from must not be after to".into()))
        }
        _ => Ok(()),
    }
}

/// Every given value of `texts` (parameter name, value) passes [`check_text`].
/// A URL parameter `name`, given and not empty, must leave something to
/// match once normalized ([`text::url_key`]): one that leaves nothing would
/// match every row stored without a URL.
fn check_url(name: &str, value: &Option<String>) -> Result<(), QueryError> {
    match value.as_deref() {
        Some(url) if !url.is_empty() && crate::text::url_key(url).is_none() => {
            Err(QueryError::Invalid(format!(
                "{name} must be an address: nothing is left of it once its query string, \
                 fragment, scheme and spaces are removed"
            )))
        }
        _ => Ok(()),
    }
}

fn check_texts(texts: &[(&str, &Option<String>)]) -> Result<(), QueryError> {
    for (name, value) in texts {
        if let Some(value) = value {
            check_text(name, value)?;
        }
    }
    Ok(())
}

/// `column`, a folded text with a trigram index, contains `part` folded.
///
/// A part with no run of three letters or digits gives the trigram index
/// nothing to narrow by: PostgreSQL would read every entry of it and test
/// each row (1.8 s for `x1` at 1,000,000 products). The column is then
/// hidden from that index (`|| ''`), and a page walks the list's own order
/// instead, through an index that carries the text (migration 25), so it
/// stops once its rows are found: 2 ms for page 1 of `x1`. A name part is
/// tested as [`name_parts`] chooses, once probed.
fn contains(column: impl ColumnTrait, part: &str) -> Expr {
    let folded = crate::text::fold(part);
    let pattern = contains_pattern(&folded);
    match name_parts::run(&folded) {
        Run::Trigram => column.like(pattern),
        Run::Pair | Run::Letter => hidden(column, pattern),
    }
}

/// `column` matches `pattern`, tested where the text is read: the column
/// is hidden from its indexes (`|| ''`, the empty text written in the
/// statement, not bound: nothing about it varies).
fn hidden(column: impl ColumnTrait, pattern: LikeExpr) -> Expr {
    use sea_orm::ExprTrait;
    Expr::col(column.as_column_ref())
        .binary(BinOper::Custom("||"), Expr::cust("''"))
        .like(pattern)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_past_what_sql_can_skip_has_no_offset() {
        let page = |page, page_size| Page { page, page_size };
        assert_eq!(page(1, 500).offset(), Some(0));
        assert_eq!(page(3, 100).offset(), Some(200));
        // The last offset SQL takes, then one past it.
        let last = i64::MAX as u64;
        assert_eq!(page(last + 1, 1).offset(), Some(last));
        assert_eq!(page(last + 2, 1).offset(), None);
        assert_eq!(page(last / 500 + 2, 500).offset(), None);
        assert_eq!(page(u64::MAX, 500).offset(), None);
        assert_eq!(page(0, 100).offset(), Some(0), "never below the first page");
        assert_eq!(page(2, 10).offset_in(11), Some(10));
        assert_eq!(page(2, 10).offset_in(10), None, "starts at the end");
    }

    #[test]
    fn text_parameters_refuse_nul_and_more_than_the_limit_in_characters() {
        let refused = |value: &str| match check_text("brand", value) {
            Err(QueryError::Invalid(message)) => Some(message),
            _ => None,
        };
        assert_eq!(
            refused("a\0b").as_deref(),
            Some("brand must not contain a NUL character")
        );
        assert_eq!(
            refused(&"я".repeat(MAX_TEXT_LEN)),
            None,
            "bytes are not counted"
        );
        assert_eq!(refused(&"😀".repeat(MAX_TEXT_LEN)), None);
        assert_eq!(
            refused(&"a".repeat(MAX_TEXT_LEN + 1)).as_deref(),
            Some("brand must be at most 2048 characters long, not 2049")
        );
        assert_eq!(refused(""), None);
        assert_eq!(refused("\u{202e}\u{301}%_\\'\""), None);
    }
}
