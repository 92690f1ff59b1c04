//! `Product.priceSeries`: a product's prices bucketed by time, for charts
//! (see `query::series`), loaded for every product of a level at once.

use std::sync::Arc;

use async_graphql::{Context, Result, SimpleObject};
use uuid::Uuid;

use super::context;
use super::reads::Reads;
use crate::graphql::error::gql;
use crate::query::series::{self, SeriesArgs, too_many_buckets};
use crate::views::Timestamp;

/// One bucket of a price series: the observations in it.
#[derive(SimpleObject, Clone)]
pub struct PricePoint {
    /// The bucket's first instant (UTC).
    pub start: Timestamp,
    /// Observations in the bucket.
    pub count: i64,
    /// The lowest price of the observations.
    pub min: f64,
    /// The highest price of the observations.
    pub max: f64,
    /// The mean of the observations' prices.
    pub avg: f64,
    /// The price of the first observation, by time.
    pub open: f64,
    /// The price of the last observation, by time.
    pub close: f64,
}

impl From<series::PricePoint> for PricePoint {
    fn from(p: series::PricePoint) -> Self {
        PricePoint {
            start: p.start.into(),
            count: p.count,
            min: p.min,
            max: p.max,
            avg: p.avg,
            open: p.open,
            close: p.close,
        }
    }
}

/// The series of product `id` that `args` asks for (its `most` from the
/// configuration), refused when it has more buckets than that.
pub async fn price_series(
    ctx: &Context<'_>,
    id: Uuid,
    args: SeriesArgs,
) -> Result<Vec<PricePoint>> {
    let args = SeriesArgs {
        most: context::lists(ctx).series_max_buckets,
        ..args
    };
    args.validate()?;
    let most = args.most;
    let found = Reads::of(ctx)
        .load(|l| &l.series, (id, Arc::new(args)))
        .await
        .map_err(gql)?
        .unwrap_or_default();
    if found.more {
        return Err(too_many_buckets(most).into());
    }
    Ok(found.points.into_iter().map(PricePoint::from).collect())
}
