//! Loading for the products of one page (a connection page, the merged
//! products of a page of submissions, or one product on its own). The first
//! product that asks for a relation (seller, prices, translations, latest
//! price history...) loads it for every product of the page in one dataloader
//! call; the others wait for that call instead of queueing keys of their own.
//! What the page's own statement read with its products (sellers,
//! translations, prices, the latest observations) comes already loaded.
//!
//! Why not the dataloaders alone: they gather keys for a time window (1 ms)
//! after the first key. A list of more than 32 items is resolved in slices
//! (the list future yields to the runtime every 32 items), and on a busy or
//! multi-threaded runtime the window can close before the last products have
//! queued their keys: one relation of one page then took several statements,
//! more for bigger pages. Across pages (nested lists) the dataloaders still
//! batch as before.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use entity::{price_observation, product, seller};
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::loaders::{Load, Loaders, TopKey};
use super::reads::Reads;
use crate::query::QueryError;
use crate::query::product_lists::{Read, product_lists};
use crate::query::products::Related;

type Loaded<K, V> = OnceCell<HashMap<K, V>>;
type LatestPrices = Arc<Loaded<TopKey, Vec<price_observation::Model>>>;

/// The products of one page and what has been loaded for all of them.
pub struct Page {
    ids: Vec<Uuid>,
    seller_ids: Vec<Uuid>,
    sellers: Loaded<Uuid, seller::Model>,
    seller_product_counts: Loaded<Uuid, i64>,
    lists: Lists,
    /// The latest observations, per count asked for.
    latest_prices: Mutex<HashMap<u64, LatestPrices>>,
}

impl Page {
    /// The page of `products`, with what was read with them.
    pub fn new(products: &[product::Model], related: Related) -> Arc<Page> {
        let mut seller_ids: Vec<Uuid> = products.iter().map(|p| p.seller_ref).collect();
        seller_ids.sort_unstable();
        seller_ids.dedup();
        let latest_prices = related.latest_prices.map(|(n, rows)| {
            let by_key = rows.into_iter().map(|(id, rows)| ((id, n), rows)).collect();
            (n, Arc::new(OnceCell::new_with(Some(by_key))))
        });
        Arc::new(Page {
            ids: products.iter().map(|p| p.id).collect(),
            seller_ids,
            sellers: OnceCell::new_with(related.sellers),
            seller_product_counts: OnceCell::new(),
            lists: Lists::of(related.lists),
            latest_prices: Mutex::new(latest_prices.into_iter().collect()),
        })
    }

    pub async fn seller(&self, reads: Reads<'_>, id: Uuid) -> Loads<seller::Model> {
        one(&self.sellers, reads, |l| &l.sellers, &self.seller_ids, &id).await
    }

    /// Products of seller `id`; counted only when a query asks for it.
    pub async fn seller_product_count(&self, reads: Reads<'_>, id: Uuid) -> Loads<i64> {
        let which: fn(&Loaders) -> &_ = |l| &l.seller_product_counts;
        one(
            &self.seller_product_counts,
            reads,
            which,
            &self.seller_ids,
            &id,
        )
        .await
    }

    /// The latest `n` observations of product `id`, and one more when
    /// `more` (whether more follow). Rows read with one more serve a list
    /// that does not ask too (aliases of one list may differ).
    pub async fn latest_prices(
        &self,
        reads: Reads<'_>,
        id: Uuid,
        n: u64,
        more: bool,
    ) -> Loads<Vec<price_observation::Model>> {
        let (count, cell) = {
            let mut cells = self.latest_prices.lock().unwrap_or_else(|p| p.into_inner());
            let count = match more || cells.contains_key(&(n + 1)) {
                true => n + 1,
                false => n,
            };
            (count, cells.entry(count).or_default().clone())
        };
        let keys: Vec<TopKey> = self.ids.iter().map(|p| (*p, count)).collect();
        one(&cell, reads, |l| &l.latest_prices, &keys, &(id, count)).await
    }
}

pub type Loads<V> = Result<Option<V>, Arc<QueryError>>;

/// What a page holds of each child list of products, and a method per
/// list that loads it, from their one declaration.
macro_rules! page_lists {
    ($($list:ident: $table:ident => $field:literal,)*) => {
        /// Each child list of the page's products, once loaded or read.
        struct Lists {
            $($list: Loaded<Uuid, Vec<entity::$table::Model>>,)*
        }

        impl Lists {
            /// The lists `read` with the page, the others to be loaded.
            fn of(read: Read) -> Lists {
                Lists { $($list: OnceCell::new_with(read.$list),)* }
            }
        }

        impl Page {$(
            #[doc = concat!("Product `id`'s ", stringify!($list), ".")]
            pub async fn $list(
                &self,
                reads: Reads<'_>,
                id: Uuid,
            ) -> Loads<Vec<entity::$table::Model>> {
                let which: fn(&Loaders) -> &_ = |l| &l.lists.$list;
                one(&self.lists.$list, reads, which, &self.ids, &id).await
            }
        )*}
    };
}
product_lists!(page_lists);

/// The value of `key`, loading every key of the page on first use with
/// the loader `which` picks.
async fn one<K, V>(
    cell: &Loaded<K, V>,
    reads: Reads<'_>,
    which: fn(&Loaders) -> &Load<K, V>,
    keys: &[K],
    key: &K,
) -> Loads<V>
where
    K: Send + Sync + Hash + Eq + Clone + 'static,
    V: Send + Sync + Clone + 'static,
{
    let all = match cell.get() {
        Some(all) => all,
        None => reads.load_once(cell, which, keys).await?,
    };
    Ok(all.get(key).cloned())
}

/// The merged products of one page of submissions, loaded together, as one
/// [`Page`].
pub struct MergedProducts {
    ids: Vec<Uuid>,
    loaded: OnceCell<(HashMap<Uuid, product::Model>, Arc<Page>)>,
}

impl MergedProducts {
    pub fn new(ids: Vec<Uuid>) -> Arc<MergedProducts> {
        Arc::new(MergedProducts {
            ids,
            loaded: OnceCell::new(),
        })
    }

    pub async fn product(&self, reads: Reads<'_>, id: Uuid) -> Loads<(product::Model, Arc<Page>)> {
        let (found, page) = self
            .loaded
            .get_or_try_init(|| async {
                let found = reads.load_many(|l| &l.products, self.ids.clone()).await?;
                reads
                    .budget()
                    .charge_repeats(&self.ids, |id| found.get(id).map(|p| p.stored_size))?;
                let models: Vec<product::Model> = found.values().cloned().collect();
                Ok::<_, Arc<QueryError>>((found, Page::new(&models, Related::default())))
            })
            .await?;
        Ok(found.get(&id).map(|p| (p.clone(), page.clone())))
    }
}
