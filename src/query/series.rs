//! Products' prices in one currency, bucketed by time (GraphQL
//! `Product.priceSeries`): per bucket of UTC time, how many observations
//! there were, their lowest, highest and mean price, and the first and last
//! by time (ties by id). The database buckets and aggregates, so the server
//! reads one row per bucket however many observations it holds, and one
//! statement serves every product of a page. Buckets are an hour, a day, a
//! week from Monday or a calendar month, all in UTC; a bucket with no
//! observation is left out. A product's observations are its history in
//! that currency, across its variants (country, region, auth status).

use std::collections::HashMap;

use chrono::{DateTime, NaiveDateTime, Utc};
use entity::price_observation;
use sea_orm::sea_query::{Alias, Expr, Order, Query, SelectStatement};
use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, DbErr, ExprTrait, FromQueryResult};
use uuid::Uuid;

use super::products::ProductFilter;
use super::{QueryError, check_range, check_text, one_of};

/// The span of time one point of a series covers, in UTC.
#[derive(async_graphql::Enum, Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TimeBucket {
    Hour,
    Day,
    /// From Monday 00:00.
    Week,
    /// From the first of the month, 00:00.
    Month,
}

/// What a series is asked for: the currency, the bucket, the times it
/// spans (`from` and `to` inclusive; unbounded when absent), and the most
/// buckets it may hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SeriesArgs {
    pub currency: String,
    pub bucket: TimeBucket,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub most: u64,
}

impl SeriesArgs {
    /// The currency passes the rule of text parameters; the times lie in
    /// years 0 to 9999 and `from` is not after `to`.
    pub fn validate(&self) -> Result<(), QueryError> {
        check_text("currency", &self.currency)?;
        check_range(self.from, self.to)
    }
}

/// One bucket of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct PricePoint {
    /// The bucket's first instant.
    pub start: DateTime<Utc>,
    pub count: i64,
    pub min: f64,
    pub max: f64,
    pub avg: f64,
    /// The first observation's price, by time.
    pub open: f64,
    /// The last observation's price, by time.
    pub close: f64,
}

/// A product's series: its first buckets, in time order, and whether it
/// has more than the most a series may hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub points: Vec<PricePoint>,
    pub more: bool,
}

/// The refusal of a series or an index with more than `most` buckets.
pub fn too_many_buckets(most: u64) -> QueryError {
    QueryError::Invalid(format!(
        "the series has more than {most} buckets, the most one may hold \
         (VITRINA_SERIES_MAX_BUCKETS): narrow from and to, or take a larger bucket"
    ))
}

/// A bucket's first instant, from `recorded_at`: what observations are
/// grouped and ordered by. PostgreSQL keeps it a timestamp (text would be
/// compared by collation, and formatted for every observation), SQLite
/// the text [`bucket_text`] reads.
fn bucket_start(backend: DbBackend, bucket: TimeBucket) -> String {
    match backend {
        DbBackend::Postgres => {
            let unit = match bucket {
                TimeBucket::Hour => "hour",
                TimeBucket::Day => "day",
                TimeBucket::Week => "week",
                TimeBucket::Month => "month",
            };
            format!("date_trunc('{unit}', recorded_at AT TIME ZONE 'UTC')")
        }
        // SQLite reads the stored offset and answers in UTC.
        _ => match bucket {
            TimeBucket::Hour => "strftime('%Y-%m-%dT%H:00:00', recorded_at)",
            TimeBucket::Day => "strftime('%Y-%m-%dT00:00:00', recorded_at)",
            // Back six days, then on to the next Monday: this week's.
            TimeBucket::Week => {
                "strftime('%Y-%m-%dT00:00:00', recorded_at, '-6 days', 'weekday 1')"
            }
            TimeBucket::Month => "strftime('%Y-%m-01T00:00:00', recorded_at)",
        }
        .to_owned(),
    }
}

/// The column `bucket` (a [`bucket_start`]) as the text
/// `YYYY-MM-DDTHH:MM:SS` in UTC, once per bucket.
fn bucket_text(backend: DbBackend) -> Expr {
    Expr::cust(match backend {
        DbBackend::Postgres => "to_char(bucket, 'YYYY-MM-DD\"T\"HH24:MI:SS')",
        _ => "bucket",
    })
}

/// One bucket's figures, as the statements below name them.
#[derive(FromQueryResult)]
struct Bucketed {
    bucket: String,
    n: i64,
    low: f64,
    high: f64,
    mean: f64,
    open: f64,
    close: f64,
}

impl Bucketed {
    fn point(self) -> Result<PricePoint, DbErr> {
        Ok(PricePoint {
            start: parse_start(&self.bucket)?,
            count: self.n,
            min: self.low,
            max: self.high,
            avg: self.mean,
            open: self.open,
            close: self.close,
        })
    }
}

#[derive(FromQueryResult)]
struct Row {
    product_id: Uuid,
    #[sea_orm(nested)]
    point: Bucketed,
}

/// Per product of `products` (a condition on `price_observations`) and
/// bucket of its observations in the currency and range of `args`: the
/// figures of a [`Bucketed`] and `product_id`.
fn product_buckets(backend: DbBackend, products: Expr, args: &SeriesArgs) -> SelectStatement {
    use price_observation::Column;
    let bucket = bucket_start(backend, args.bucket);
    // One window for both ends, so the rows are sorted once.
    let window = format!(
        "OVER (PARTITION BY product_id, {bucket} ORDER BY recorded_at, id \
         ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    );
    let mut observed = Query::select();
    observed
        .column(Column::ProductId)
        .column(Column::Price)
        .expr_as(Expr::cust(bucket.clone()), Alias::new("bucket"))
        .expr_as(
            Expr::cust(format!("FIRST_VALUE(price) {window}")),
            Alias::new("first_price"),
        )
        .expr_as(
            Expr::cust(format!("LAST_VALUE(price) {window}")),
            Alias::new("last_price"),
        )
        .from(price_observation::Entity)
        .and_where(products)
        .and_where(Column::Currency.eq(args.currency.as_str()));
    if let Some(from) = args.from {
        observed.and_where(Column::RecordedAt.gte(from));
    }
    if let Some(to) = args.to {
        observed.and_where(Column::RecordedAt.lte(to));
    }
    Query::select()
        .column(Alias::new("product_id"))
        .column(Alias::new("bucket"))
        .expr_as(Expr::cust("COUNT(*)"), Alias::new("n"))
        .expr_as(Expr::cust("MIN(price)"), Alias::new("low"))
        .expr_as(Expr::cust("MAX(price)"), Alias::new("high"))
        .expr_as(Expr::cust("AVG(price)"), Alias::new("mean"))
        .expr_as(Expr::cust("MIN(first_price)"), Alias::new("open"))
        .expr_as(Expr::cust("MIN(last_price)"), Alias::new("close"))
        .from_subquery(observed, Alias::new("observed"))
        .group_by_col(Alias::new("product_id"))
        .group_by_col(Alias::new("bucket"))
        .to_owned()
}

/// One bucket past the most, which tells a series that has more.
fn one_past(most: u64) -> i64 {
    i64::try_from(most.saturating_add(1)).unwrap_or(i64::MAX)
}

/// The series of each of `products` (absent when it has no observation in
/// range), each cut after `args.most` buckets, in one statement.
pub async fn series(
    db: &impl ConnectionTrait,
    products: &[Uuid],
    args: &SeriesArgs,
) -> Result<HashMap<Uuid, Series>, QueryError> {
    args.validate()?;
    let most = args.most;
    let backend = db.get_database_backend();
    let mut buckets = product_buckets(
        backend,
        one_of(db, price_observation::Column::ProductId, products),
        args,
    );
    buckets.expr_as(
        Expr::cust("ROW_NUMBER() OVER (PARTITION BY product_id ORDER BY bucket)"),
        Alias::new("nth"),
    );
    let mut kept = Query::select();
    kept.expr_as(bucket_text(backend), Alias::new("bucket"))
        .columns(FIGURES.map(Alias::new))
        .column(Alias::new("product_id"))
        .from_subquery(buckets, Alias::new("buckets"))
        .and_where(Expr::col(Alias::new("nth")).lte(one_past(most)))
        .order_by(Alias::new("product_id"), Order::Asc)
        .order_by(Alias::new("bucket"), Order::Asc);
    let rows = Row::find_by_statement(backend.build(&kept)).all(db).await?;
    let mut out: HashMap<Uuid, Series> = HashMap::new();
    for row in rows {
        let series = out.entry(row.product_id).or_default();
        if series.points.len() as u64 == most {
            series.more = true;
            continue;
        }
        series.points.push(row.point.point()?);
    }
    Ok(out)
}

/// The columns of a [`Bucketed`] but its bucket.
const FIGURES: [&str; 6] = ["n", "low", "high", "mean", "open", "close"];

/// The price index of the products `filter` matches that have a current
/// price in the currency of `args` (as `productStats` counts them): per
/// bucket, how many of them were observed, the lowest and highest price
/// observed, the mean of each product's mean price (each product weighs
/// the same, however often it was scraped), and the means of each
/// product's first and last price in the bucket. Cut after `args.most`
/// buckets, as a series is.
pub async fn price_index(
    db: &impl ConnectionTrait,
    filter: &ProductFilter,
    args: &SeriesArgs,
) -> Result<Series, QueryError> {
    args.validate()?;
    let filter = filter.priced_in(&args.currency)?;
    let backend = db.get_database_backend();
    let products = price_observation::Column::ProductId.in_subquery(filter.priced_ids());
    let per_bucket = Query::select()
        .expr_as(bucket_text(backend), Alias::new("bucket"))
        .expr_as(Expr::cust("COUNT(*)"), Alias::new("n"))
        .expr_as(Expr::cust("MIN(low)"), Alias::new("low"))
        .expr_as(Expr::cust("MAX(high)"), Alias::new("high"))
        .expr_as(Expr::cust("AVG(mean)"), Alias::new("mean"))
        .expr_as(Expr::cust("AVG(open)"), Alias::new("open"))
        .expr_as(Expr::cust("AVG(close)"), Alias::new("close"))
        .from_subquery(
            product_buckets(backend, products, args),
            Alias::new("buckets"),
        )
        .group_by_col(Alias::new("bucket"))
        .order_by(Alias::new("bucket"), Order::Asc)
        .limit(one_past(args.most) as u64)
        .to_owned();
    let rows = Bucketed::find_by_statement(backend.build(&per_bucket))
        .all(db)
        .await?;
    let more = rows.len() as u64 > args.most;
    let points = rows
        .into_iter()
        .take(usize::try_from(args.most).unwrap_or(usize::MAX))
        .map(Bucketed::point)
        .collect::<Result<_, _>>()?;
    Ok(Series { points, more })
}

fn parse_start(text: &str) -> Result<DateTime<Utc>, DbErr> {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .map(|t| t.and_utc())
        .map_err(|_| DbErr::Custom(format!("a bucket start the database wrote oddly: {text}")))
}
