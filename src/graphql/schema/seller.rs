//! Sellers.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::{Context, ID, Object, Result};
use entity::{Marketplace, seller};
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::inline::Boxed;
use super::node::GlobalId;
use super::page::Page;
use super::product::{Product, ProductConnection, ProductTotal, product_connection};
use super::reads::Reads;
use super::relay_connection::{self, Args};
use crate::graphql::error::gql;
use crate::query::product_order::{ProductKey, ProductOrder};
use crate::query::products::{ProductFilter, Related};
use crate::query::sellers::SellerView;
use crate::views::{SellerStats, Timestamp};

/// A seller on one marketplace.
pub struct Seller {
    model: seller::Model,
    product_count: ProductCount,
}

/// Where a seller's product count comes from.
enum ProductCount {
    /// Counted by the lookup that found the seller.
    Known(i64),
    /// Counted when asked for, for every seller of the product page at once.
    OnDemand(Arc<Page>),
    /// Counted when asked for, for every seller fetched with it at once.
    Fetched(Arc<Fetched>),
}

/// Sellers fetched together by id (`nodes`), whose product counts are
/// counted together.
pub struct Fetched {
    ids: Vec<Uuid>,
    product_counts: OnceCell<HashMap<Uuid, i64>>,
}

impl Fetched {
    pub fn new(ids: Vec<Uuid>) -> Arc<Fetched> {
        Arc::new(Fetched {
            ids,
            product_counts: OnceCell::new(),
        })
    }
}

impl Seller {
    /// A seller found by a lookup, its products counted.
    pub fn counted(view: SellerView) -> Self {
        Seller {
            model: view.seller,
            product_count: ProductCount::Known(view.product_count),
        }
    }

    /// The seller of a product of `page`.
    pub fn of_product(model: seller::Model, page: Arc<Page>) -> Self {
        Seller {
            model,
            product_count: ProductCount::OnDemand(page),
        }
    }

    /// A seller fetched by id with the others of `fetched`.
    pub fn fetched(model: seller::Model, fetched: Arc<Fetched>) -> Self {
        Seller {
            model,
            product_count: ProductCount::Fetched(fetched),
        }
    }
}

/// A seller on one marketplace.
#[Object]
impl Seller {
    /// Global id (Relay's `Node`): opaque, for `node(id:)`.
    pub(super) async fn global_id(&self) -> ID {
        GlobalId::Seller(self.model.id).into()
    }
    /// One of the four supported marketplaces.
    async fn marketplace(&self) -> Marketplace {
        self.model.marketplace
    }
    /// Id on the marketplace.
    async fn seller_id(&self) -> &str {
        &self.model.seller_id
    }
    /// Seller name as the marketplace shows it.
    async fn name(&self) -> &str {
        &self.model.name
    }
    /// Tax identification number.
    async fn tin(&self) -> &str {
        &self.model.tin
    }
    /// State registration number (legal entity or sole trader).
    async fn psrn(&self) -> &str {
        &self.model.psrn
    }
    /// Registered address.
    async fn address(&self) -> &str {
        &self.model.address
    }
    /// Storefront URL.
    async fn url(&self) -> &str {
        self.model.url.as_deref().unwrap_or_default()
    }
    /// Rating, registration date, items sold and reviews as the marketplace shows them.
    async fn stats(&self) -> SellerStats {
        let s = &self.model;
        SellerStats {
            rating: s.rating,
            reg_date: s.reg_date,
            items_sold: s.items_sold,
            reviews_count: s.reviews_count,
        }
    }
    /// Products of this seller in the catalog, counted through the index on
    /// the seller: 1 complexity point, plus 1 per 1,000 products a seller
    /// has on average.
    #[graphql(complexity = "crate::graphql::cost::scans::seller_product_count()")]
    async fn product_count(&self, ctx: &Context<'_>) -> Result<i64> {
        let reads = Reads::of(ctx);
        let count = match &self.product_count {
            ProductCount::Known(n) => return Ok(*n),
            ProductCount::OnDemand(page) => page.seller_product_count(reads, self.model.id).await,
            ProductCount::Fetched(fetched) => reads
                .load_once(
                    &fetched.product_counts,
                    |l| &l.seller_product_counts,
                    &fetched.ids,
                )
                .await
                .map(|counts| counts.get(&self.model.id).copied()),
        };
        // Sellers without products are absent from the grouped count.
        Ok(count.map_err(gql)?.unwrap_or(0))
    }
    /// When the seller was first seen.
    async fn first_seen_at(&self) -> Timestamp {
        self.model.first_seen_at.into()
    }
    /// When the seller was last seen.
    async fn last_seen_at(&self) -> Timestamp {
        self.model.last_seen_at.into()
    }
    /// The seller's products, newest first.
    #[graphql(
        complexity = "crate::graphql::cost::scans::seller_products(first, last, child_complexity)"
    )]
    async fn products(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<Boxed<ProductConnection>> {
        let args = Args {
            first,
            after,
            last,
            before,
        };
        let filter = ProductFilter {
            marketplace: Some(self.model.marketplace),
            seller_id: Some(self.model.seller_id.clone()),
            ..Default::default()
        };
        match args.simple_first() {
            Some(n) => {
                let more = relay_connection::asks_more(&ctx.look_ahead());
                let key = (self.model.id, n + u64::from(more));
                let rows = Reads::of(ctx)
                    .load(|l| &l.seller_products, key)
                    .await
                    .map_err(gql)?
                    .unwrap_or_default();
                // Every product here is this seller's: it is known already.
                let related = Related {
                    sellers: Some(HashMap::from([(self.model.id, self.model.clone())])),
                    ..Related::default()
                };
                let node = Product::paged(&rows[..rows.len().min(n as usize)], related);
                Ok(Boxed(relay_connection::from_slice(
                    relay_connection::first_n(rows, n),
                    ProductTotal::matching(filter),
                    ProductKey::of,
                    node,
                )))
            }
            None => Ok(Boxed(
                product_connection(ctx, filter, ProductOrder::default(), &args).await?,
            )),
        }
    }
}
