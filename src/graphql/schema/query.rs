//! The query root: everything REST v1 exposes, with the same meaning.

use async_graphql::{Context, ID, Object, Result};
use entity::Marketplace;
use uuid::Uuid;

use super::context;
use super::inline::Inline;
use super::node::{self, Found};
use super::product::{
    PriceConnection, PriceHistoryFilterInput, Product, ProductConnection, price_connection,
    product_connection, read_with,
};
use super::reads::Reads;
use super::relay_connection::Args;
use super::seller::Seller;
use super::series::PricePoint;
use super::session::Me;
use super::trends::{self, PriceMove};
use crate::graphql::gql;
use crate::http::access;
use crate::http::sized::TRUNCATED_HEADER;
use crate::query::movers::MoveDirection;
use crate::query::product_order::ProductOrder;
use crate::query::products::ProductFilter;
use crate::query::sellers::SellerLookup;
use crate::query::series::TimeBucket;
use crate::query::snapshots::{self, Bounds, Listed};
use crate::query::stats::{self, ProductStats};
use crate::query::{QueryError, products, sellers};
use crate::views::{Allowance, BrandItem, CategoryItem, Timestamp};

pub struct QueryRoot;

/// Marketplace product data: products, price history, sellers, categories,
/// brands, and the caller's own scrape sessions.
#[Object]
impl QueryRoot {
    /// Products matching the filter, in `orderBy` (by default newest first:
    /// firstSeenAt desc, then id). Cursors work in every order; a cursor of
    /// one order is refused by another. Ordering by `PRICE` needs
    /// `filter.currency`, and lists only products with a price in it.
    /// Its complexity: the fields of a row times the page size, each
    /// `totalCount` once (see ProductConnection), and a substring filter
    /// (`nameContains`, `sellerCodeContains`), which may read every product's
    /// text to fill its page and its count, ten times the cost of a count;
    /// a price filter, which may walk the catalog testing one index entry
    /// per product, a tenth of that.
    #[graphql(
        complexity = "crate::graphql::cost::scans::products(&filter, first, last, child_complexity)"
    )]
    // The GraphQL arguments are the parameters: the filter, the order and Relay's four.
    #[allow(clippy::too_many_arguments)]
    async fn products(
        &self,
        ctx: &Context<'_>,
        filter: Option<ProductFilter>,
        order_by: Option<ProductOrder>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<ProductConnection> {
        product_connection(
            ctx,
            filter.unwrap_or_default(),
            order_by.unwrap_or_default(),
            &Args {
                first,
                after,
                last,
                before,
            },
        )
        .await
    }

    /// Price statistics of the products matching `filter` that have a
    /// current price in `currency`, over each one's lowest current price in
    /// it: how many, the lowest, highest, mean and median (a brand's or a
    /// category's price level). A filter that names a currency must name
    /// this one. With no condition but a marketplace, a trust status,
    /// `inStock` and a category, it reads kept price levels, whatever
    /// the catalog's size (10 points); any other filter reads every matching product's
    /// price: costed as two walks of the catalog's lowest prices, with the
    /// filter's own scans.
    #[graphql(complexity = "crate::graphql::cost::scans::product_stats(&filter)")]
    async fn product_stats(
        &self,
        ctx: &Context<'_>,
        filter: Option<ProductFilter>,
        currency: String,
    ) -> Result<ProductStats> {
        let filter = filter.unwrap_or_default();
        Ok(Reads::of(ctx)
            .run(|db| stats::product_stats(db, &filter, &currency))
            .await?)
    }

    /// A price index of the products matching `filter` that have a current
    /// price in `currency` (a brand's or a category's price trend): per
    /// bucket of UTC time, how many of them were observed in it, the lowest
    /// and highest price observed, the mean of each product's mean price
    /// (each product weighs the same, however often it was scraped), and
    /// the means of each product's first (`open`) and last (`close`) price
    /// in the bucket. A bucket with no observation is left out; `from` and
    /// `to` bound the range (inclusive), and more buckets than
    /// `VITRINA_SERIES_MAX_BUCKETS` are refused. It reads every matching
    /// product's history in range: costed as a walk of the catalog's price
    /// history, with the filter's own scans.
    #[graphql(complexity = "crate::graphql::cost::scans::price_trend(&filter, child_complexity)")]
    async fn price_index(
        &self,
        ctx: &Context<'_>,
        filter: Option<ProductFilter>,
        currency: String,
        bucket: TimeBucket,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> Result<Vec<PricePoint>> {
        let filter = filter.unwrap_or_default();
        let (from, to) = (from.map(|t| t.0), to.map(|t| t.0));
        trends::price_index(ctx, filter, currency, bucket, from, to).await
    }

    /// The products matching `filter` whose price in `currency` moved most
    /// since `since`, the biggest move first: `DROP` the largest falls,
    /// `RISE` the largest rises; a product that did not move that way is
    /// left out. `first`: 10 by default, at most `VITRINA_MOVERS_MAX` (100).
    /// It reads every matching product's history in the currency: costed
    /// as a walk of the catalog's price history, with the filter's own
    /// scans, and the fields of each mover.
    #[graphql(
        complexity = "crate::graphql::cost::scans::price_movers(&filter, first, child_complexity)"
    )]
    async fn price_movers(
        &self,
        ctx: &Context<'_>,
        filter: Option<ProductFilter>,
        currency: String,
        since: Timestamp,
        direction: MoveDirection,
        first: Option<i32>,
    ) -> Result<Vec<PriceMove>> {
        let filter = filter.unwrap_or_default();
        trends::price_movers(ctx, filter, currency, since.0, direction, first).await
    }

    /// One product by its internal id; NOT_FOUND when unknown.
    async fn product(&self, ctx: &Context<'_>, id: Uuid) -> Result<Inline<Product>> {
        let with = read_with(&[ctx.look_ahead()]);
        let reads = Reads::of(ctx);
        let budget = reads.budget();
        let (model, related) = reads
            .run(|db| products::by_id(db, id, with, budget))
            .await?
            .ok_or(QueryError::NotFound)?;
        Ok(Product::paged(std::slice::from_ref(&model), related)(model))
    }

    /// One product's full price and stock history, newest first; NOT_FOUND when
    /// the product is unknown.
    #[graphql(
        complexity = "crate::graphql::cost::scans::price_history(first, last, child_complexity)"
    )]
    // The GraphQL arguments are the parameters: the product, its filter and Relay's four.
    #[allow(clippy::too_many_arguments)]
    async fn price_history(
        &self,
        ctx: &Context<'_>,
        product_id: Uuid,
        filter: Option<PriceHistoryFilterInput>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<PriceConnection> {
        let known = Reads::of(ctx)
            .run(|db| products::exists(db, product_id))
            .await
            .map_err(QueryError::from)?;
        if !known {
            return Err(QueryError::NotFound.into());
        }
        price_connection(
            ctx,
            product_id,
            None,
            filter,
            &Args {
                first,
                after,
                last,
                before,
            },
        )
        .await
    }

    /// Sellers matching every given identifying parameter, ordered by
    /// marketplace then sellerId: at most the server's limit
    /// (VITRINA_MAX_SELLERS_PER_LOOKUP, 100 by default); when more matched,
    /// the HTTP response carries `X-Result-Truncated: true`. One TIN may sell on
    /// several marketplaces. The lookup counts the products of the sellers
    /// it finds: it costs what a seller's `productCount` does, once.
    #[graphql(complexity = "crate::graphql::cost::scans::sellers(child_complexity)")]
    async fn sellers(
        &self,
        ctx: &Context<'_>,
        lookup: SellerLookup,
    ) -> Result<Vec<Inline<Seller>>> {
        let most = context::lists(ctx).max_sellers_per_lookup;
        let found = Reads::of(ctx)
            .run(|db| sellers::find(db, &lookup, most))
            .await?;
        if found.truncated {
            ctx.insert_http_header(TRUNCATED_HEADER, "true");
        }
        Ok(found
            .sellers
            .into_iter()
            .map(|s| Inline(Seller::counted(s)))
            .collect())
    }

    /// Categories of one marketplace from the latest daily snapshot (may lag
    /// same-day scrapes by up to 24 hours), by productCount desc then path:
    /// the first, as many as the snapshot keeps (VITRINA_SNAPSHOT_MAX_ENTRIES,
    /// 10,000 by default) and the answer's size limit leaves room for; when
    /// some are left out, the HTTP response carries `X-Result-Truncated: true`.
    async fn categories(
        &self,
        ctx: &Context<'_>,
        marketplace: Marketplace,
    ) -> Result<Vec<CategoryItem>> {
        let bounds = list_bounds(ctx, CategoryItem::listed_len);
        let listed = Reads::of(ctx)
            .run(|db| snapshots::categories(db, marketplace, &bounds))
            .await
            .map_err(QueryError::from)?;
        Ok(shown(ctx, listed))
    }

    /// Brands of one marketplace, or of all marketplaces without it, from the
    /// latest daily snapshot, by productCount desc then brand: the first, as
    /// many as the snapshot keeps (VITRINA_SNAPSHOT_MAX_ENTRIES, 10,000 by
    /// default) and the answer's size limit leaves room for; when some are
    /// left out, the HTTP response carries `X-Result-Truncated: true`.
    async fn brands(
        &self,
        ctx: &Context<'_>,
        marketplace: Option<Marketplace>,
    ) -> Result<Vec<BrandItem>> {
        let bounds = list_bounds(ctx, BrandItem::listed_len);
        let listed = Reads::of(ctx)
            .run(|db| snapshots::brands(db, marketplace, &bounds))
            .await
            .map_err(QueryError::from)?;
        Ok(shown(ctx, listed))
    }

    /// The calling account and its own scrape sessions.
    async fn me(&self) -> Me {
        Me
    }

    /// Where the caller stands against the per-minute rate limit, this
    /// request counted. Free, as REST's `GET /v1/rate_limit`.
    async fn rate_limit(&self, ctx: &Context<'_>) -> Allowance {
        access::allowance(&context::rate_limit(ctx).await)
    }

    /// Where the caller stands against the daily quota in rows, before the
    /// rows this request reads (`extensions.cost.quota` reports after).
    /// Free, as REST's `GET /v1/rate_limit`.
    async fn quota(&self, ctx: &Context<'_>) -> Result<Allowance> {
        context::quota(ctx).await.map_err(gql)
    }

    /// The object a `globalId` names, as its own query finds it: null with
    /// NOT_FOUND when unknown or another account's session;
    /// INVALID_PARAMETER when `id` is not a global id.
    async fn node(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Found>> {
        let found = node::fetch(ctx, std::slice::from_ref(&id)).await?;
        Ok(found.into_iter().next())
    }

    /// The objects the `globalId`s name, in their order, each as `node`
    /// answers it (an unknown one is null with NOT_FOUND); one statement
    /// per type. At most 500 ids; INVALID_PARAMETER when one is not a
    /// global id.
    #[graphql(complexity = "node::nodes_cost(ids.len(), child_complexity)")]
    async fn nodes(&self, ctx: &Context<'_>, ids: Vec<ID>) -> Result<Vec<Found>> {
        node::fetch(ctx, &ids).await
    }
}

/// How much of a snapshot list the answer of `ctx`'s request takes.
fn list_bounds<'a, T>(ctx: &Context<'a>, size_of: fn(&T) -> u64) -> Bounds<'a, T> {
    Bounds {
        max_entries: context::lists(ctx).snapshot_max_entries,
        budget: Reads::of(ctx).budget(),
        size_of,
    }
}

/// The entries a snapshot list shows; a cut list says so over HTTP, as a
/// seller lookup does.
fn shown<E, T: From<E>>(ctx: &Context<'_>, listed: Listed<E>) -> Vec<T> {
    if listed.truncated {
        ctx.insert_http_header(TRUNCATED_HEADER, "true");
    }
    listed.entries.into_iter().map(T::from).collect()
}
