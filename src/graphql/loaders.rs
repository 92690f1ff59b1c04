//! Dataloaders: every relation a GraphQL query can walk is loaded for all
//! parents of a level in one statement. Loaders live for one request and
//! run their statements over its share of the pool (`pool_share.rs`).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_graphql::dataloader::{DataLoader, Loader};
use entity::{
    current_price, price_observation, product, product_translation, seller, special_price,
};
use sea_orm::DbErr;
use uuid::Uuid;

use super::pool_share::SharedConnection;
use crate::query::sessions::SessionStats;
use crate::query::{prices, products, sellers, sessions};

type Fetched<K, V> = Pin<Box<dyn Future<Output = Result<HashMap<K, V>, DbErr>> + Send>>;

/// A loader that runs one query-layer function over a batch of keys.
pub struct Batch<K, V> {
    db: SharedConnection,
    fetch: fn(SharedConnection, Vec<K>) -> Fetched<K, V>,
}

impl<K, V> Loader<K> for Batch<K, V>
where
    K: Send + Sync + Hash + Eq + Clone + 'static,
    V: Send + Sync + Clone + 'static,
{
    type Value = V;
    type Error = Arc<DbErr>;

    async fn load(&self, keys: &[K]) -> Result<HashMap<K, V>, Self::Error> {
        (self.fetch)(self.db.clone(), keys.to_vec())
            .await
            .map_err(Arc::new)
    }
}

pub type Load<K, V> = DataLoader<Batch<K, V>>;

fn loader<K, V>(
    db: &SharedConnection,
    fetch: fn(SharedConnection, Vec<K>) -> Fetched<K, V>,
) -> Load<K, V>
where
    K: Send + Sync + Hash + Eq + Clone + 'static,
    V: Send + Sync + Clone + 'static,
{
    // No time window: a list page hands each loader all of its keys at once
    // (see `page.rs`), so waiting (1 ms by default) would only add latency.
    // Keys that sibling resolvers queue before the spawned load starts still
    // share its statement.
    DataLoader::new(
        Batch {
            db: db.clone(),
            fetch,
        },
        tokio::spawn,
    )
    .delay(Duration::ZERO)
}

/// (parent id, how many) for "first N per parent" loaders.
pub type TopKey = (Uuid, u64);

/// The keys' parent ids grouped by N, so each distinct N is one statement.
fn by_n(keys: &[TopKey]) -> HashMap<u64, Vec<Uuid>> {
    let mut out: HashMap<u64, Vec<Uuid>> = HashMap::new();
    for (id, n) in keys {
        out.entry(*n).or_default().push(*id);
    }
    out
}

/// The request's loaders.
pub struct Loaders {
    pub products: Load<Uuid, product::Model>,
    pub sellers: Load<Uuid, seller::Model>,
    pub seller_product_counts: Load<Uuid, i64>,
    pub prices: Load<Uuid, Vec<current_price::Model>>,
    pub special_prices: Load<Uuid, Vec<special_price::Model>>,
    pub translations: Load<Uuid, Vec<product_translation::Model>>,
    pub latest_prices: Load<TopKey, Vec<price_observation::Model>>,
    pub seller_products: Load<TopKey, Vec<product::Model>>,
    pub session_stats: Load<Uuid, SessionStats>,
}

impl Loaders {
    pub fn new(db: &SharedConnection) -> Self {
        Loaders {
            products: loader(db, |db, ids| {
                Box::pin(async move { products::by_ids(&db, &ids).await })
            }),
            sellers: loader(db, |db, ids| {
                Box::pin(async move { products::sellers_by_id(&db, &ids).await })
            }),
            seller_product_counts: loader(db, |db, ids| {
                Box::pin(async move { sellers::product_counts(&db, &ids).await })
            }),
            prices: loader(db, |db, ids| {
                Box::pin(async move { products::current_prices(&db, &ids).await })
            }),
            special_prices: loader(db, |db, ids| {
                Box::pin(async move { products::special_prices(&db, &ids).await })
            }),
            translations: loader(db, |db, ids| {
                Box::pin(async move { products::translations(&db, &ids).await })
            }),
            latest_prices: loader(db, |db, keys| {
                Box::pin(async move {
                    let mut out = HashMap::new();
                    for (n, ids) in by_n(&keys) {
                        let mut found = prices::latest(&db, &ids, n).await?;
                        out.extend(
                            ids.into_iter()
                                .map(|id| ((id, n), found.remove(&id).unwrap_or_default())),
                        );
                    }
                    Ok(out)
                })
            }),
            seller_products: loader(db, |db, keys| {
                Box::pin(async move {
                    let mut out = HashMap::new();
                    for (n, ids) in by_n(&keys) {
                        let mut found = products::newest_per_seller(&db, &ids, n).await?;
                        out.extend(
                            ids.into_iter()
                                .map(|id| ((id, n), found.remove(&id).unwrap_or_default())),
                        );
                    }
                    Ok(out)
                })
            }),
            session_stats: loader(db, |db, ids| {
                Box::pin(async move { sessions::stats(&db, &ids).await })
            }),
        }
    }
}
