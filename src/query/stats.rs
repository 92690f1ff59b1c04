//! Price statistics of the products a filter matches (GraphQL
//! `productStats`): over each matching product's lowest current price in
//! one currency (`lowest_prices`), how many there are, the lowest, the
//! highest, the mean and the median. Two statements: the aggregates, then
//! the middle one or two prices in price order (so both databases compute
//! the median alike; SQLite has no percentile function).

use sea_orm::sea_query::{Alias, Expr, Order, Query};
use sea_orm::{ConnectionTrait, FromQueryResult};

use super::QueryError;
use super::products::ProductFilter;

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
