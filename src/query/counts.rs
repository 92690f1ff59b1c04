//! Counts of products (GraphQL `totalCount`), none of which reads every
//! product:
//! - a filter of only a marketplace, a trust status and a brand (any of
//!   them, or none) is answered exactly from the counts triggers on
//!   `products` keep true (`product_counts`, and `brand_counts` when a
//!   brand is given; see their migrations): a sum of a few rows, however
//!   large the catalog or the brand;
//! - any other filter is counted exactly up to a bound
//!   (`VITRINA_COUNT_BOUND`): the statement stops at the first match past
//!   it, and the answer then says only that more than the bound match;
//! - but a filter of a name part, alone or with a marketplace and a trust
//!   status, whose count would read more entries than
//!   `VITRINA_COUNT_MAX_READS` (PostgreSQL: a part too common for its
//!   index and too rare to reach the bound soon in a walk; see
//!   [`super::name_parts`]) is estimated from a sample of the catalog's
//!   pages (`TABLESAMPLE SYSTEM`, the same pages each time while the table
//!   keeps its size), which reads about as many pages whatever the
//!   catalog's size: the share of the sampled products meeting the other
//!   conditions that hold the part, times the kept count of those
//!   products. Sampling products by id would find them on as many pages
//!   as products: 134 ms for 20,000 at 1,000,000 products, against 14-16
//!   ms for the pages holding as many.

use entity::product;
use sea_orm::sea_query::extension::postgres::{PostgresSelectStatementExt, SampleMethod};
use sea_orm::sea_query::{Alias, Asterisk, Expr, ExprTrait, Query, SelectStatement};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, QueryResult, QuerySelect, QueryTrait};

use super::products::ProductFilter;
use super::{QueryError, contains_pattern};
use crate::text;

/// The column that carries a count.
pub const TOTAL: &str = "total";
/// The table of kept counts: `n` products of each `marketplace` and
/// `trust_status`, split over a few rows (see its migration).
const KEPT: &str = "product_counts";
/// The same per brand (`brand_key`, the folded brand).
const KEPT_BY_BRAND: &str = "brand_counts";

/// How many products match a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Total {
    /// The count; when not exact, the bound, which more products match, or
    /// an estimate from a sample.
    pub count: u64,
    /// Whether `count` is the number of matching products.
    pub exact: bool,
}

/// How far a count that the kept counts cannot answer goes (the settings
/// `VITRINA_COUNT_BOUND`, `VITRINA_COUNT_MAX_READS` and
/// `VITRINA_COUNT_SAMPLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountLimits {
    /// Products counted exactly at most.
    pub bound: u64,
    /// Entries an exact count of a name part may read, in entries of a
    /// walk; past them it is estimated.
    pub max_reads: u64,
    /// Products an estimate reads.
    pub sample: u64,
}

/// The statement that counts the products of a filter, and how to read
/// its answer.
#[derive(Debug, Clone)]
pub struct Counting {
    /// `SELECT ... AS total`, one row.
    pub statement: SelectStatement,
    answer: Answer,
}

/// What the count of a [`Counting`] statement is.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// The number of matching products.
    Exact,
    /// That number, up to the bound past which the statement stops.
    UpTo(u64),
    /// An estimate, from a sample.
    Estimated,
}

impl Counting {
    /// How the products matching `filter` are counted, exactly up to `bound`
    /// unless the kept counts answer it.
    pub fn of(filter: &ProductFilter, bound: u64) -> Counting {
        if is_kept(filter) {
            return Counting {
                statement: kept(filter),
                answer: Answer::Exact,
            };
        }
        // One past the bound tells "exactly the bound" from "more"; a
        // limit is a signed 64-bit integer in SQL.
        let limit = Ord::min(bound.saturating_add(1), i64::MAX as u64);
        let mut matched = filter.matching_ids();
        matched.limit(limit);
        Counting::rows_of(matched, Answer::UpTo(bound))
    }

    /// How the products matching `filter` (a name part, and at most a
    /// marketplace and a trust status: [`may_sample`]) are estimated from a
    /// sample of about `sample` of the `products` in the catalog (fewer
    /// than it holds), on PostgreSQL: a share of its pages, the same each
    /// time. Of the sampled products that meet the other conditions, the
    /// share that hold the part, times `narrowed`, how many products meet
    /// those conditions (kept exactly: [`kept`]).
    pub fn sampled(filter: &ProductFilter, sample: u64, products: u64, narrowed: u64) -> Counting {
        let percent = 100.0 * sample as f64 / Ord::max(products, sample) as f64;
        let part = filter.name_contains.as_deref().unwrap_or_default();
        // No index serves a sample: the part is tested on each row.
        let holds = product::Column::NameSearch.like(contains_pattern(&text::fold(part)));
        let estimate = Expr::cust_with_exprs(
            "CAST(ROUND(COUNT(*) FILTER (WHERE $1) * $2 / GREATEST(COUNT(*), 1)) AS BIGINT)",
            [holds, Expr::val(narrowed as f64)],
        );
        let others = ProductFilter {
            name_contains: None,
            ..filter.clone()
        };
        let mut statement = others
            .matching()
            .select_only()
            .expr_as(estimate, TOTAL)
            .into_query();
        statement.table_sample(SampleMethod::SYSTEM, percent, Some(0.0));
        Counting {
            statement,
            answer: Answer::Estimated,
        }
    }

    /// Counts the rows `matched` selects, whose count is `answer`.
    fn rows_of(matched: SelectStatement, answer: Answer) -> Counting {
        let statement = Query::select()
            .expr_as(Expr::col(Asterisk).count(), Alias::new(TOTAL))
            .from_subquery(matched, Alias::new("matched"))
            .to_owned();
        Counting { statement, answer }
    }

    /// The total of `counted`, what [`Counting::statement`] answered.
    pub fn total(&self, counted: u64) -> Total {
        match self.answer {
            Answer::UpTo(bound) if counted > bound => Total {
                count: bound,
                exact: false,
            },
            Answer::Exact | Answer::UpTo(_) => Total {
                count: counted,
                exact: true,
            },
            Answer::Estimated => Total {
                count: counted,
                exact: false,
            },
        }
    }
}

/// The count a row carries in [`TOTAL`].
pub fn counted(row: &QueryResult) -> Result<u64, DbErr> {
    Ok(u64::try_from(row.try_get::<i64>("", TOTAL)?).unwrap_or(0))
}

/// Whether the kept counts answer `filter`: it has no condition but a
/// marketplace, a trust status and a brand (empty texts count as absent).
///
/// A price filter is counted up to the bound like any other; the page and
/// the count test the same `lowest_prices` rows, so the count is exact
/// for it within the bound.
pub fn is_kept(filter: &ProductFilter) -> bool {
    narrowed_only_by(filter, |f| &f.brand)
}

/// Whether a sample of the catalog may estimate `filter`'s count: it has
/// no condition but a name part, a marketplace and a trust status, whose
/// products the kept counts number ([`kept`]). Any other narrows it to
/// products a sample of the catalog holds few of (a seller's, a
/// watch-list, a brand), while its exact count reads only them; so may a
/// marketplace the scraper has just begun, which the caller checks
/// against the kept counts ([`SAMPLED_SHARE`]).
pub fn may_sample(filter: &ProductFilter) -> bool {
    narrowed_only_by(filter, |f| &f.name_contains)
}

/// A sample estimates a filter only when the products meeting its
/// conditions other than the name part are at least this share of the
/// catalog (1 in 10): the sample then holds at least a tenth of
/// `VITRINA_COUNT_SAMPLE` of them to test the part on.
pub const SAMPLED_SHARE: u64 = 10;

/// Whether `filter` has no condition but a marketplace, a trust status and
/// the text `text` picks (empty texts count as absent).
fn narrowed_only_by(filter: &ProductFilter, text: fn(&ProductFilter) -> &Option<String>) -> bool {
    let kept = text(filter);
    filter.ids.is_none()
        && !filter.has_price()
        && filter.texts().iter().all(|(_, value)| {
            std::ptr::eq(*value, kept) || value.as_deref().is_none_or(str::is_empty)
        })
}

/// The sum of the kept counts of `filter`'s brand, marketplace and trust
/// status (a few rows each, see the migrations), as a BIGINT: PostgreSQL
/// sums bigints as numerics. Its other conditions are not read.
pub(super) fn kept(filter: &ProductFilter) -> SelectStatement {
    let brand = filter.brand.as_deref().filter(|brand| !brand.is_empty());
    let table = Alias::new(if brand.is_some() { KEPT_BY_BRAND } else { KEPT });
    let column = |name: &str| Expr::col((table.clone(), Alias::new(name)));
    let mut select = Query::select();
    select
        .expr_as(
            Expr::cust("CAST(COALESCE(SUM(n), 0) AS BIGINT)"),
            Alias::new(TOTAL),
        )
        .from(table.clone());
    if let Some(brand) = brand {
        select.and_where(column("brand_key").eq(text::fold(brand)));
    }
    if let Some(marketplace) = filter.marketplace {
        select.and_where(column("marketplace").eq(marketplace.as_str()));
    }
    if let Some(status) = filter.trust_status {
        select.and_where(column("trust_status").eq(status.as_str()));
    }
    select
}

/// How many products match `filter`, exactly up to the bound or estimated
/// as `limits` say (see the module).
pub async fn products(
    db: &impl ConnectionTrait,
    filter: &ProductFilter,
    limits: CountLimits,
) -> Result<Total, QueryError> {
    filter.validate()?;
    let probed = super::name_parts::probe(db, filter).await?;
    Ok(total(db, &probed.counting(limits)).await?)
}

/// The total `counting` answers.
pub async fn total(db: &impl ConnectionTrait, counting: &Counting) -> Result<Total, DbErr> {
    let row = db.query_one(&counting.statement).await?;
    let counted = row.map(|row| counted(&row)).transpose()?.unwrap_or(0);
    Ok(counting.total(counted))
}
