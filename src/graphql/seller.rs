//! Sellers.

use async_graphql::{Context, Object, Result};
use entity::Marketplace;

use super::connection::{self, Args};
use super::error::gql;
use super::product::{Product, ProductConnection, ProductTotal, product_connection};
use super::request;
use super::scalars::Timestamp;
use crate::query::keyset::Key;
use crate::query::products::{ProductFilter, ProductKey};
use crate::query::sellers::SellerView;
use crate::rest::dto::SellerStats;

/// A seller on one marketplace.
pub struct Seller(pub SellerView);

/// A seller on one marketplace.
#[Object]
impl Seller {
    /// One of the four supported marketplaces.
    async fn marketplace(&self) -> Marketplace {
        self.0.seller.marketplace
    }
    /// Id on the marketplace.
    async fn seller_id(&self) -> &str {
        &self.0.seller.seller_id
    }
    /// Seller name as the marketplace shows it.
    async fn name(&self) -> &str {
        &self.0.seller.name
    }
    /// Tax identification number.
    async fn tin(&self) -> &str {
        &self.0.seller.tin
    }
    /// State registration number (legal entity or sole trader).
    async fn psrn(&self) -> &str {
        &self.0.seller.psrn
    }
    /// Registered address.
    async fn address(&self) -> &str {
        &self.0.seller.address
    }
    /// Storefront URL.
    async fn url(&self) -> &str {
        &self.0.seller.url
    }
    /// Rating, registration date, items sold and reviews as the marketplace shows them.
    async fn stats(&self) -> SellerStats {
        let s = &self.0.seller;
        SellerStats {
            rating: s.rating,
            reg_date: s.reg_date,
            items_sold: s.items_sold,
            reviews_count: s.reviews_count,
        }
    }
    /// Products of this seller in the catalog.
    async fn product_count(&self) -> i64 {
        self.0.product_count
    }
    /// When the seller was first seen.
    async fn first_seen_at(&self) -> Timestamp {
        self.0.seller.first_seen_at.into()
    }
    /// When the seller was last seen.
    async fn last_seen_at(&self) -> Timestamp {
        self.0.seller.last_seen_at.into()
    }
    /// The seller's products, newest first.
    #[graphql(complexity = "super::connection_cost(first, last, child_complexity)")]
    async fn products(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<ProductConnection> {
        let args = Args {
            first,
            after,
            last,
            before,
        };
        let filter = ProductFilter {
            marketplace: Some(self.0.seller.marketplace),
            seller_id: Some(self.0.seller.seller_id.clone()),
            ..Default::default()
        };
        match args.simple_first() {
            Some(n) => {
                let key = (self.0.seller.id, n + 1);
                let rows = request(ctx)
                    .loaders
                    .seller_products
                    .load_one(key)
                    .await
                    .map_err(gql)?
                    .unwrap_or_default();
                let node = Product::paged(&rows[..rows.len().min(n as usize)]);
                Ok(connection::from_slice(
                    connection::first_n(rows, n),
                    ProductTotal::Matching(filter),
                    |p| ProductKey::of(p).encode(),
                    node,
                ))
            }
            None => product_connection(ctx, filter, &args).await,
        }
    }
}
