//! Price statistics of the products a filter matches (GraphQL
//! `productStats`): over each matching product's lowest current price in
//! one currency (`lowest_prices`), how many there are, the lowest, the
//! highest, the mean and the median.
//!
//! A filter of no more than a marketplace, a trust status and stock is
//! answered from the kept price levels (`price_levels`, see its
//! migration), and with a category from the category's own
//! (`category_price_levels`): their counts and sums give the count and the mean, and
//! each order statistic (lowest, median, highest) is read at its rank
//! within the one level that holds it: a walk of at most half a level (a
//! range 4% wide) instead of every price; a category's walk passes the
//! level's prices of other products too (they share the price index), so
//! it reads up to half the level as the catalog's does. Any other filter aggregates its matching
//! lowest prices: the aggregates, then the middle one or two prices in
//! price order (both databases compute the median alike; SQLite has no
//! percentile function), as does a filter the levels would answer but
//! whose prices lie in a level that keeps no sum (negative, or above about
//! 1.3e12; see the migration).

use entity::{lowest_price, product_category};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Order, Query, SelectStatement};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};

use super::QueryError;
use super::products::{ProductFilter, given};

/// Statistics of the lowest current prices of matching products in one
/// currency; the prices are null when no matching product has one.
#[derive(async_graphql::SimpleObject, Debug, Clone, PartialEq)]
pub struct ProductStats {
    /// Matching products with a current price in the currency.
    pub count: i64,
    /// The lowest of their prices.
    pub price_min: Option<f64>,
    /// The highest of their prices.
    pub price_max: Option<f64>,
    /// The mean of their prices.
    pub price_avg: Option<f64>,
    /// The middle price, or the mean of the two middle prices of an even
    /// count.
    pub price_median: Option<f64>,
}

#[derive(FromQueryResult)]
struct Summary {
    n: i64,
    low: Option<f64>,
    high: Option<f64>,
    mean: Option<f64>,
}

#[derive(FromQueryResult)]
struct Middle {
    price: f64,
}

/// The statistics of the products `filter` matches, in `currency`. A
/// filter that names a currency must name this one.
pub async fn product_stats(
    db: &impl ConnectionTrait,
    filter: &ProductFilter,
    currency: &str,
) -> Result<ProductStats, QueryError> {
    let filter = filter.priced_in(currency)?;
    if let Some(levels) = KeptLevels::of(&filter)
        && let Some(stats) = from_levels(db, &levels).await?
    {
        return Ok(stats);
    }
    let backend = db.get_database_backend();
    let matched = Alias::new("matched");

    let summary = Query::select()
        .expr_as(Expr::cust("COUNT(*)"), Alias::new("n"))
        .expr_as(Expr::cust("MIN(price)"), Alias::new("low"))
        .expr_as(Expr::cust("MAX(price)"), Alias::new("high"))
        .expr_as(Expr::cust("AVG(price)"), Alias::new("mean"))
        .from_subquery(filter.lowest_prices(), matched.clone())
        .to_owned();
    let summary = Summary::find_by_statement(backend.build(&summary))
        .one(db)
        .await?
        .unwrap_or(Summary {
            n: 0,
            low: None,
            high: None,
            mean: None,
        });
    let n = u64::try_from(summary.n).unwrap_or(0);
    let median = match n {
        0 => None,
        _ => {
            let middle = Query::select()
                .column(Alias::new("price"))
                .from_subquery(filter.lowest_prices(), matched)
                .order_by(Alias::new("price"), Order::Asc)
                .order_by(Alias::new("product_id"), Order::Asc)
                .offset((n - 1) / 2)
                .limit(2 - n % 2)
                .to_owned();
            let prices = Middle::find_by_statement(backend.build(&middle))
                .all(db)
                .await?;
            let count = prices.len() as f64;
            (count > 0.0).then(|| prices.iter().map(|m| m.price).sum::<f64>() / count)
        }
    };
    Ok(ProductStats {
        count: summary.n,
        price_min: summary.low,
        price_max: summary.high,
        price_avg: summary.mean,
        price_median: median,
    })
}

/// Whether kept price levels answer the statistics of `filter` (in the
/// currency asked for).
pub fn from_kept_levels(filter: &ProductFilter) -> bool {
    KeptLevels::of(filter).is_some()
}

#[derive(FromQueryResult)]
struct Level {
    level: i32,
    n: i64,
    total: f64,
}

/// The kept level rows that answer a filter of no more than a currency, a
/// marketplace, a trust status, stock and a category: `price_levels`, kept
/// by the first four, or with a category `category_price_levels`, kept by
/// them and the category's key.
struct KeptLevels<'a> {
    filter: &'a ProductFilter,
    /// The category's key, when the filter names one.
    category: Option<String>,
}

impl<'a> KeptLevels<'a> {
    fn of(filter: &'a ProductFilter) -> Option<Self> {
        if filter.ids.is_some() || filter.price_min.is_some() || filter.price_max.is_some() {
            return None;
        }
        // The text filters given, the currency aside.
        let mut texts = filter
            .texts()
            .into_iter()
            .filter(|(field, _)| *field != "currency")
            .filter_map(|(field, value)| Some((field, given(value)?)));
        let category = match (texts.next(), texts.next()) {
            (None, _) => None,
            (Some(("category", category)), None) => Some(crate::text::fold(category)),
            _ => return None,
        };
        Some(KeptLevels { filter, category })
    }

    /// The table of the level rows.
    fn table(&self) -> Alias {
        Alias::new(match self.category {
            None => "price_levels",
            Some(_) => "category_price_levels",
        })
    }

    /// Keeps the rows of `table` this filter's columns name: the level rows
    /// themselves, or the lowest prices they count (both carry a currency,
    /// a marketplace, a trust status and stock).
    fn filter(&self, select: &mut SelectStatement, table: Alias) {
        let column = |name: &str| Expr::col((table.clone(), Alias::new(name)));
        let filter = self.filter;
        let currency = filter.currency.as_deref().unwrap_or_default();
        select.and_where(column("currency").eq(currency));
        if let Some(marketplace) = filter.marketplace {
            select.and_where(column("marketplace").eq(marketplace.as_str()));
        }
        if let Some(status) = filter.trust_status {
            select.and_where(column("trust_status").eq(status.as_str()));
        }
        if let Some(stocked) = filter.in_stock {
            select.and_where(column("in_stock").eq(stocked));
        }
    }

    /// Keeps, of the lowest prices, those these level rows count. A
    /// category is tested on each price the walk passes (a correlated
    /// `EXISTS`): SQLite would otherwise list the whole category first,
    /// 312 ms a walk at 1,000,000 products instead of at most 86.
    fn filter_prices(&self, select: &mut SelectStatement) {
        let table = Alias::new("lowest_prices");
        self.filter(select, table.clone());
        if let Some(key) = &self.category {
            use product_category::Column;
            let member = Query::select()
                .expr(Expr::val(1))
                .from(product_category::Entity)
                .and_where(
                    Expr::col((product_category::Entity, Column::ProductId))
                        .equals((table, Alias::new("product_id"))),
                )
                .and_where(
                    Expr::col((product_category::Entity, Column::CategoryKey)).eq(key.as_str()),
                )
                .to_owned();
            select.and_where(Expr::exists(member));
        }
    }

    /// Keeps, of the level rows, this filter's.
    fn filter_levels(&self, select: &mut SelectStatement) {
        let table = self.table();
        self.filter(select, table.clone());
        if let Some(key) = &self.category {
            select.and_where(Expr::col((table, Alias::new("category_key"))).eq(key.as_str()));
        }
    }
}

/// Reads of the kept levels tried before giving up: the level rows and the
/// walks within them are separate statements, and a merge that commits in
/// between may take away a rank a walk looks for; the whole read is then
/// done again.
const LEVEL_READS: usize = 3;

/// What one read of the kept levels found.
enum LevelRead {
    Stats(ProductStats),
    /// A walk found no price at its rank: the levels changed in between.
    Changed,
    /// Prices lie in a level that keeps no sum (negative, or above about
    /// 1.3e12): written around the merge, which refuses negative prices.
    Unbounded,
}

/// The statistics from the kept levels, or `None` when prices in an
/// unbounded level leave the mean to the aggregate of every price.
async fn from_levels(
    db: &impl ConnectionTrait,
    kept: &KeptLevels<'_>,
) -> Result<Option<ProductStats>, DbErr> {
    for _ in 0..LEVEL_READS {
        match read_levels(db, kept).await? {
            LevelRead::Stats(stats) => return Ok(Some(stats)),
            LevelRead::Unbounded => return Ok(None),
            LevelRead::Changed => {}
        }
    }
    Err(DbErr::Custom(format!(
        "the price levels changed during each of {LEVEL_READS} reads"
    )))
}

/// The statistics from the level rows' counts and sums, then each order
/// statistic read at its rank within its level.
async fn read_levels(db: &impl ConnectionTrait, kept: &KeptLevels<'_>) -> Result<LevelRead, DbErr> {
    let backend = db.get_database_backend();
    let mut levels = Query::select();
    levels
        .column(Alias::new("level"))
        .expr_as(Expr::cust("CAST(SUM(n) AS BIGINT)"), Alias::new("n"))
        .expr_as(Expr::cust("SUM(total)"), Alias::new("total"))
        .from(kept.table())
        .group_by_col(Alias::new("level"))
        .and_having(Expr::cust("SUM(n) > 0"))
        .order_by(Alias::new("level"), Order::Asc);
    kept.filter_levels(&mut levels);
    let levels = Level::find_by_statement(backend.build(&levels))
        .all(db)
        .await?;
    let unbounded = [migration::OUTLYING_PRICE_LEVEL, migration::LAST_PRICE_LEVEL];
    if levels.iter().any(|level| unbounded.contains(&level.level)) {
        return Ok(LevelRead::Unbounded);
    }
    let n: i64 = levels.iter().map(|level| level.n).sum();
    if n == 0 {
        return Ok(LevelRead::Stats(ProductStats {
            count: 0,
            price_min: None,
            price_max: None,
            price_avg: None,
            price_median: None,
        }));
    }
    let total: f64 = levels.iter().map(|level| level.total).sum();
    // Lowest, highest, and the middle two (one rank for an odd count).
    let ranks = [0, n - 1, (n - 1) / 2, n / 2];
    let mut prices = [0.0; 4];
    for (i, &rank) in ranks.iter().enumerate() {
        if let Some(same) = ranks[..i].iter().position(|&r| r == rank) {
            prices[i] = prices[same];
            continue;
        }
        match price_at(db, kept, &levels, rank).await? {
            Some(price) => prices[i] = price,
            None => return Ok(LevelRead::Changed),
        }
    }
    let [low, high, below, above] = prices;
    Ok(LevelRead::Stats(ProductStats {
        count: n,
        price_min: Some(low),
        price_max: Some(high),
        price_avg: Some(total / n as f64),
        price_median: Some((below + above) / 2.0),
    }))
}

/// The price of rank `rank` (from 0, in price order) among the lowest
/// prices `filter` matches: read within the level that holds it, from the
/// level's nearer end, so a walk reads at most half a level.
async fn price_at(
    db: &impl ConnectionTrait,
    kept: &KeptLevels<'_>,
    levels: &[Level],
    rank: i64,
) -> Result<Option<f64>, DbErr> {
    let mut before = 0;
    let Some(level) = levels.iter().find(|level| {
        before += level.n;
        before > rank
    }) else {
        return Ok(None);
    };
    let from_low = rank - (before - level.n);
    let from_high = level.n - 1 - from_low;
    let (order, offset) = match from_low <= from_high {
        true => (Order::Asc, from_low),
        false => (Order::Desc, from_high),
    };
    let bound = |level: i32| {
        let mut low = Query::select();
        low.column(Alias::new("low"))
            .from(Alias::new("price_level_bounds"))
            .and_where(Expr::col(Alias::new("level")).eq(level));
        Expr::SubQuery(None, Box::new(low.into()))
    };
    let price = Expr::col((lowest_price::Entity, lowest_price::Column::Price));
    let mut select = Query::select();
    select
        .column(lowest_price::Column::Price)
        .from(lowest_price::Entity)
        .and_where(price.clone().gte(bound(level.level)))
        // Never the last level: it keeps no sum, so it is never read here.
        .and_where(price.lt(bound(level.level + 1)));
    kept.filter_prices(&mut select);
    select
        .order_by(lowest_price::Column::Price, order.clone())
        .order_by(lowest_price::Column::ProductId, order)
        .offset(u64::try_from(offset).unwrap_or(0))
        .limit(1);
    let backend = db.get_database_backend();
    let found = Middle::find_by_statement(backend.build(&select))
        .one(db)
        .await?;
    Ok(found.map(|row| row.price))
}
