//! The products whose price moved most since a time (GraphQL
//! `priceMovers`): for each product a filter matches that has a current
//! price in one currency, its price then (`before`) against its lowest
//! current price (`after`), the biggest drops or rises first.
//!
//! A product's price at a time is the lowest, across its variants (country,
//! region, auth status), of each variant's last observation at or before
//! that time, or, for a variant first seen after it, of its first
//! observation. The history records a variant only when it changes, so its
//! last observation is its price until the next one. One statement reads
//! the matching products' history in the currency and ranks it in the
//! database; the server reads one row per mover.

use chrono::{DateTime, Utc};
use entity::price_observation;
use sea_orm::sea_query::{
    Alias, CommonTableExpression, Expr, Order, Query, SelectStatement, UnionType, WithClause,
};
use sea_orm::{ColumnTrait, ConnectionTrait, ExprTrait, FromQueryResult, IdenStatic};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::products::ProductFilter;
use super::{QueryError, storable_time};

/// Which way a price moved.
#[derive(async_graphql::Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum MoveDirection {
    /// The price fell: the largest fall first.
    Drop,
    /// The price rose: the largest rise first.
    Rise,
}

/// What movers are asked for.
#[derive(Debug, Clone)]
pub struct MoversArgs {
    pub currency: String,
    pub since: DateTime<Utc>,
    pub direction: MoveDirection,
    /// How many movers, the biggest first.
    pub first: u64,
}

/// One product's move.
#[derive(Debug, Clone, PartialEq, FromQueryResult, Serialize, Deserialize)]
pub struct PriceMove {
    pub product_id: Uuid,
    /// The currency of both prices.
    pub currency: String,
    /// Its price at `since`, or when first seen after it.
    pub before: f64,
    /// Its lowest current price.
    pub after: f64,
    /// `after` against `before`, in percent: negative for a drop.
    pub change_percent: f64,
    /// The last observation of its prices in the currency after `since`.
    pub changed_at: DateTime<Utc>,
}

/// The name of [`recent`]'s rows in the statement.
const RECENT: &str = "recent";

/// The observations in the currency after `since` of the products
/// `matched` holds: only those products can have moved. Read once, as a
/// materialized `WITH`, for the two things they tell: which products to
/// read the older history of, and each variant's first price after
/// `since`. They used to be read twice, and the older history found by a
/// hash join over the whole table (the planner expected three times the
/// products there were): a category of 1,000,000 products took 4.4 s on
/// PostgreSQL, most of it in three scans of `price_observations`
/// (bench/README.md).
fn recent(matched: SelectStatement, args: &MoversArgs) -> CommonTableExpression {
    use price_observation::Column;
    let observed = Query::select()
        .columns([
            Column::ProductId,
            Column::Price,
            Column::RecordedAt,
            Column::Id,
        ])
        .columns(VARIANT)
        .from(price_observation::Entity)
        .and_where(Column::RecordedAt.gt(args.since))
        .and_where(Column::Currency.eq(args.currency.as_str()))
        .and_where(Column::ProductId.in_subquery(matched))
        .to_owned();
    CommonTableExpression::new()
        .query(observed)
        .table_name(Alias::new(RECENT))
        .materialized(true)
        .to_owned()
}

/// The columns that tell a product's variants apart.
const VARIANT: [price_observation::Column; 3] = [
    price_observation::Column::CountryCode,
    price_observation::Column::RegionCode,
    price_observation::Column::UserAuthStatus,
];

/// A window over each variant of each product, in `order`.
fn per_variant(order: &str) -> String {
    let variant = VARIANT.map(|column| column.as_str()).join(", ");
    format!("ROW_NUMBER() OVER (PARTITION BY product_id, {variant} ORDER BY {order})")
}

/// The observations in the currency of the products [`recent`] holds,
/// `side` 0 at or before `since` (`nth` 1 the last) and 1 after it (`nth` 1
/// the first), ranked within each variant. The older history is read
/// product by product (`price_observations_history`).
fn ranked(args: &MoversArgs) -> SelectStatement {
    use price_observation::Column;
    let side = |side: i32, order: &str| {
        let mut select = Query::select();
        select
            .columns([Column::ProductId, Column::Price, Column::RecordedAt])
            .columns(VARIANT)
            .expr_as(Expr::val(side), Alias::new("side"))
            .expr_as(Expr::cust(per_variant(order)), Alias::new("nth"));
        select
    };
    let moved = Query::select()
        .column(Column::ProductId)
        .from(Alias::new(RECENT))
        .to_owned();
    let mut before = side(0, "recorded_at DESC, id DESC");
    before
        .from(price_observation::Entity)
        .and_where(Column::ProductId.in_subquery(moved))
        .and_where(Column::Currency.eq(args.currency.as_str()))
        .and_where(Column::RecordedAt.lte(args.since));
    let mut after = side(1, "recorded_at, id");
    after.from(Alias::new(RECENT));
    before.union(UnionType::All, after).to_owned()
}

/// The biggest movers among the products `filter` matches with a current
/// price in `args.currency`; those that did not move that way are left out.
pub async fn price_movers(
    db: &impl ConnectionTrait,
    filter: &ProductFilter,
    args: &MoversArgs,
) -> Result<Vec<PriceMove>, QueryError> {
    if !storable_time(&args.since) {
        return Err(QueryError::Invalid(
            "since must lie in years 0 to 9999".into(),
        ));
    }
    let filter = filter.priced_in(&args.currency)?;

    // Each variant's price at `since`: its first row, before before after.
    let at_since = Query::select()
        .columns(["product_id", "price", "side", "recorded_at"].map(Alias::new))
        .expr_as(Expr::cust(per_variant("side, nth")), Alias::new("pick"))
        .from_subquery(ranked(args), Alias::new("ranked"))
        .and_where(
            Expr::col(Alias::new("nth"))
                .eq(1)
                .or(Expr::col(Alias::new("side")).eq(1)),
        )
        .to_owned();
    let past = Query::select()
        .column(Alias::new("product_id"))
        .expr_as(
            Expr::cust("MIN(CASE WHEN pick = 1 THEN price END)"),
            Alias::new("price"),
        )
        .expr_as(
            Expr::cust("MAX(CASE WHEN side = 1 THEN recorded_at END)"),
            Alias::new("changed_at"),
        )
        .from_subquery(at_since, Alias::new("at_since"))
        .group_by_col(Alias::new("product_id"))
        .to_owned();

    let change = "(cur.price - past.price) * 100.0 / past.price";
    let (way, order) = match args.direction {
        MoveDirection::Drop => ("<", Order::Asc),
        MoveDirection::Rise => (">", Order::Desc),
    };
    let movers = Query::select()
        .expr_as(Expr::cust("cur.product_id"), Alias::new("product_id"))
        .expr_as(Expr::val(args.currency.as_str()), Alias::new("currency"))
        .expr_as(Expr::cust("past.price"), Alias::new("before"))
        .expr_as(Expr::cust("cur.price"), Alias::new("after"))
        .expr_as(Expr::cust(change), Alias::new("change_percent"))
        .expr_as(Expr::cust("past.changed_at"), Alias::new("changed_at"))
        .from_subquery(filter.lowest_prices(), Alias::new("cur"))
        .join_subquery(
            sea_orm::JoinType::InnerJoin,
            past,
            Alias::new("past"),
            Expr::cust("past.product_id = cur.product_id"),
        )
        .and_where(Expr::cust("past.price > 0 AND past.changed_at IS NOT NULL"))
        .and_where(Expr::cust(format!("cur.price {way} past.price")))
        .order_by_expr(Expr::cust(change), order)
        .order_by_expr(Expr::cust("cur.product_id"), Order::Asc)
        .limit(args.first)
        .to_owned()
        .with(
            WithClause::new()
                .cte(recent(filter.priced_ids(), args))
                .to_owned(),
        );
    let backend = db.get_database_backend();
    Ok(PriceMove::find_by_statement(backend.build(&movers))
        .all(db)
        .await?)
}
