//! Dataloaders: every relation a GraphQL query can walk is loaded for all
//! parents of a level in one statement. Loaders live for one request, run
//! their statements over its share of the pool (`request/pool_share.rs`), and those
//! that read products count them against its answer's byte budget.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_graphql::dataloader::{DataLoader, Loader};
use entity::{price_observation, product, seller};
use uuid::Uuid;

use crate::graphql::request::pool_share::SharedConnection;
use crate::query::budget::ResponseBudget;
use crate::query::product_lists::{self, product_lists};
use crate::query::series::{Series, SeriesArgs};
use crate::query::sessions::SessionStats;
use crate::query::{QueryError, prices, products, sellers, series, sessions};

type Fetched<K, V> = Pin<Box<dyn Future<Output = Result<HashMap<K, V>, QueryError>> + Send>>;

/// What a loader's query-layer function gets: the database, the byte budget
/// of the request's answer, and a batch of keys.
type Fetch<K, V> = fn(SharedConnection, Arc<ResponseBudget>, Vec<K>) -> Fetched<K, V>;

/// A loader that runs one query-layer function over a batch of keys.
pub struct Batch<K, V> {
    db: SharedConnection,
    budget: Arc<ResponseBudget>,
    fetch: Fetch<K, V>,
}

impl<K, V> Loader<K> for Batch<K, V>
where
    K: Send + Sync + Hash + Eq + Clone + 'static,
    V: Send + Sync + Clone + 'static,
{
    type Value = V;
    type Error = Arc<QueryError>;

    async fn load(&self, keys: &[K]) -> Result<HashMap<K, V>, Self::Error> {
        (self.fetch)(self.db.clone(), self.budget.clone(), keys.to_vec())
            .await
            .map_err(Arc::new)
    }
}

pub type Load<K, V> = DataLoader<Batch<K, V>>;

fn loader<K, V>(
    db: &SharedConnection,
    budget: &Arc<ResponseBudget>,
    fetch: Fetch<K, V>,
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
            budget: budget.clone(),
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
    pub lists: ListLoaders,
    pub latest_prices: Load<TopKey, Vec<price_observation::Model>>,
    pub seller_products: Load<TopKey, Vec<product::Model>>,
    pub session_stats: Load<Uuid, SessionStats>,
    pub series: Load<SeriesKey, Series>,
}

/// (product id, what its series is asked for).
pub type SeriesKey = (Uuid, Arc<SeriesArgs>);

impl Loaders {
    pub fn new(db: &SharedConnection, budget: &Arc<ResponseBudget>) -> Self {
        Loaders {
            products: loader(db, budget, |db, budget, ids| {
                Box::pin(async move { products::by_ids(&db, &ids, &budget).await })
            }),
            sellers: loader(db, budget, |db, _, ids| {
                Box::pin(async move { Ok(products::sellers_by_id(&db, &ids).await?) })
            }),
            seller_product_counts: loader(db, budget, |db, _, ids| {
                Box::pin(async move { Ok(sellers::product_counts(&db, &ids).await?) })
            }),
            lists: ListLoaders::new(db, budget),
            latest_prices: loader(db, budget, |db, _, keys| {
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
            seller_products: loader(db, budget, |db, budget, keys| {
                Box::pin(async move {
                    let mut out = HashMap::new();
                    for (n, ids) in by_n(&keys) {
                        let mut found = products::newest_per_seller(&db, &ids, n, &budget).await?;
                        out.extend(
                            ids.into_iter()
                                .map(|id| ((id, n), found.remove(&id).unwrap_or_default())),
                        );
                    }
                    Ok(out)
                })
            }),
            session_stats: loader(db, budget, |db, _, ids| {
                Box::pin(async move { Ok(sessions::stats(&db, &ids).await?) })
            }),
            series: loader(db, budget, |db, _, keys| {
                Box::pin(async move {
                    let mut asked: HashMap<Arc<SeriesArgs>, Vec<Uuid>> = HashMap::new();
                    for (id, args) in keys {
                        asked.entry(args).or_default().push(id);
                    }
                    let mut out = HashMap::new();
                    for (args, ids) in asked {
                        let mut found = series::series(&db, &ids, &args).await?;
                        out.extend(ids.into_iter().map(|id| {
                            let points = found.remove(&id).unwrap_or_default();
                            ((id, args.clone()), points)
                        }));
                    }
                    Ok(out)
                })
            }),
        }
    }
}

/// A loader of each child list of products, from their one declaration.
macro_rules! list_loaders {
    ($($list:ident: $table:ident => $field:literal,)*) => {
        /// A loader of each child list of products ([`product_lists`]).
        pub struct ListLoaders {
            $(pub $list: Load<Uuid, Vec<entity::$table::Model>>,)*
        }

        impl ListLoaders {
            fn new(db: &SharedConnection, budget: &Arc<ResponseBudget>) -> Self {
                ListLoaders {$(
                    $list: loader(db, budget, |db, _, ids| {
                        Box::pin(async move {
                            use entity::$table::Entity;
                            Ok(product_lists::of_products::<Entity>(&db, &ids).await?)
                        })
                    }),
                )*}
            }
        }
    };
}
product_lists!(list_loaders);
