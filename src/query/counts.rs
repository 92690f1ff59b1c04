//! Counts of products (GraphQL `totalCount`), none of which reads every
//! product:
//! - a filter of only a marketplace, a trust status and a brand (any of
//!   them, or none) is answered exactly from the counts triggers on
//!   `products` keep true (`product_counts`, and `brand_counts` when a
//!   brand is given; see their migrations): a sum of a few rows, however
//!   large the catalog or the brand;
//! - any other filter is counted exactly up to a bound
//!   (`VITRINA_COUNT_BOUND`): the statement stops at the first match past
//!   it, and the answer then says only that more than the bound match.

use sea_orm::sea_query::{Alias, Asterisk, Expr, ExprTrait, Query, SelectStatement};
use sea_orm::{ConnectionTrait, DbErr, QueryResult};

use super::QueryError;
use super::products::ProductFilter;
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
    /// The count; when not exact, the bound, which more products match.
    pub count: u64,
    /// Whether `count` is the number of matching products.
    pub exact: bool,
}

/// The statement that counts the products of a filter, and how to read
/// its answer.
#[derive(Debug, Clone)]
pub struct Counting {
    /// `SELECT ... AS total`, one row.
    pub statement: SelectStatement,
    /// The bound past which the count stops; `None` when it is exact.
    bound: Option<u64>,
}

impl Counting {
    /// How the products matching `filter` are counted, exactly up to `bound`
    /// unless the kept counts answer it.
    pub fn of(filter: &ProductFilter, bound: u64) -> Counting {
        if is_kept(filter) {
            return Counting {
                statement: kept(filter),
                bound: None,
            };
        }
        // One past the bound tells "exactly the bound" from "more"; a
        // limit is a signed 64-bit integer in SQL.
        let limit = Ord::min(bound.saturating_add(1), i64::MAX as u64);
        let mut matched = filter.matching_ids();
        matched.limit(limit);
        let statement = Query::select()
            .expr_as(Expr::col(Asterisk).count(), Alias::new(TOTAL))
            .from_subquery(matched, Alias::new("matched"))
            .to_owned();
        Counting {
            statement,
            bound: Some(bound),
        }
    }

    /// The total of `counted`, what [`Counting::statement`] answered.
    pub fn total(&self, counted: u64) -> Total {
        match self.bound {
            Some(bound) if counted > bound => Total {
                count: bound,
                exact: false,
            },
            _ => Total {
                count: counted,
                exact: true,
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
    filter.ids.is_none()
        && !filter.has_price()
        && filter
            .texts()
            .iter()
            .all(|(name, value)| *name == "brand" || value.as_deref().is_none_or(str::is_empty))
}

/// The sum of the kept counts of `filter`'s brand, marketplace and trust
/// status (a few rows each, see the migrations), as a BIGINT: PostgreSQL
/// sums bigints as numerics.
fn kept(filter: &ProductFilter) -> SelectStatement {
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

/// How many products match `filter`, exactly up to `bound` (see the module).
pub async fn products(
    db: &impl ConnectionTrait,
    filter: &ProductFilter,
    bound: u64,
) -> Result<Total, QueryError> {
    filter.validate()?;
    let probed = super::name_parts::probe(db, filter).await?;
    let filter = &*probed.reading(bound.saturating_add(1));
    let counting = Counting::of(filter, bound);
    let row = db.query_one(&counting.statement).await?;
    let counted = row.map(|row| counted(&row)).transpose()?.unwrap_or(0);
    Ok(counting.total(counted))
}
