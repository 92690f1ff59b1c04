//! Price trends across products: `priceIndex` (a filter's prices bucketed
//! by time, see `query::series`) and `priceMovers` (the biggest moves since
//! a time, see `query::movers`), with the products of the movers read in
//! one statement for what the request selects of them.

use std::collections::HashMap;

use async_graphql::{Context, Result, SimpleObject};
use chrono::{DateTime, Utc};

use super::context;
use super::inline::Inline;
use super::product::{Product, read_with};
use super::reads::Reads;
use super::series::PricePoint;
use crate::query::QueryError;
use crate::query::movers::{self, MoveDirection, MoversArgs};
use crate::query::products::{self, ProductFilter};
use crate::query::series::{self, SeriesArgs, TimeBucket, too_many_buckets};
use crate::views::Timestamp;

/// Movers when `first` is not given.
pub const DEFAULT_MOVERS: i32 = 10;

/// The price index of the products `filter` matches (its `most` buckets
/// from the configuration), refused when it has more.
pub async fn price_index(
    ctx: &Context<'_>,
    filter: ProductFilter,
    currency: String,
    bucket: TimeBucket,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
) -> Result<Vec<PricePoint>> {
    let args = SeriesArgs {
        currency,
        bucket,
        from,
        to,
        most: context::lists(ctx).series_max_buckets,
    };
    let found = Reads::of(ctx)
        .run(|db| series::price_index(db, &filter, &args))
        .await?;
    if found.more {
        return Err(too_many_buckets(args.most).into());
    }
    Ok(found.points.into_iter().map(PricePoint::from).collect())
}

/// A product's price move.
#[derive(SimpleObject)]
pub struct PriceMove {
    /// The product that moved.
    pub product: Inline<Product>,
    /// The currency of both prices.
    pub currency: String,
    /// Its lowest price at `since`, across its variants: each variant's
    /// last observation at or before `since`, or its first after it.
    pub before: f64,
    /// Its lowest current price.
    pub after: f64,
    /// `after` against `before`, in percent: negative for a drop.
    pub change_percent: f64,
    /// Its last price observation in the currency after `since`.
    pub changed_at: Timestamp,
}

/// The biggest movers `first` asks for, with their products.
pub async fn price_movers(
    ctx: &Context<'_>,
    filter: ProductFilter,
    currency: String,
    since: DateTime<Utc>,
    direction: MoveDirection,
    first: Option<i32>,
) -> Result<Vec<PriceMove>> {
    let most = context::lists(ctx).movers_max;
    let first = first.unwrap_or(DEFAULT_MOVERS);
    let first = u64::try_from(first)
        .ok()
        .filter(|first| *first <= most)
        .ok_or_else(|| {
            QueryError::Invalid(format!(
                "first must be between 0 and {most} (VITRINA_MOVERS_MAX), not {first}"
            ))
        })?;
    let args = MoversArgs {
        currency,
        since,
        direction,
        first,
    };
    let with = read_with(&[ctx.look_ahead().field("product")]);
    let reads = Reads::of(ctx);
    let budget = reads.budget();
    let (moves, (found, related)) = reads
        .run(|db| async move {
            let moves = movers::price_movers(db, &filter, &args).await?;
            let ids: Vec<_> = moves.iter().map(|m| m.product_id).collect();
            Ok::<_, QueryError>((moves, products::listed(db, &ids, with, budget).await?))
        })
        .await?;
    let inline = Product::paged(&found, related);
    let mut by_id: HashMap<_, _> = found.into_iter().map(|p| (p.id, p)).collect();
    Ok(moves
        .into_iter()
        .filter_map(|m| {
            // A product removed between the two reads is left out.
            let product = by_id.remove(&m.product_id)?;
            Some(PriceMove::of(m, inline(product)))
        })
        .collect())
}

impl PriceMove {
    /// `price`, a move of `product`.
    pub fn of(price: movers::PriceMove, product: Inline<Product>) -> Self {
        PriceMove {
            product,
            currency: price.currency,
            before: price.before,
            after: price.after,
            change_percent: price.change_percent,
            changed_at: price.changed_at.into(),
        }
    }
}
