//! The deterministic synthetic dataset behind `vitrina seed` and `serve --demo`.
//!
//! The same `--seed` and `--products` always produce the same rows (ids,
//! names, prices, timestamps), on SQLite and PostgreSQL alike: every value
//! comes from one ChaCha8 stream and time is measured back from a fixed
//! anchor, never from "now". Only API keys are random, by design.
//!
//! Rows are generated and inserted in batches of [`BATCH`] products, each batch
//! in its own transaction, so memory stays flat up to millions of products.
//! The planner's statistics are refreshed at the end, so the data can be
//! queried efficiently at once.

mod catalog;
mod sessions;
mod vocab;

use std::fmt;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use entity::product;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sea_orm::{DatabaseConnection, EntityTrait, PaginatorTrait, TransactionTrait};

use crate::db::insert_batched;
use crate::error::Error;
use crate::jobs::snapshots;

pub use catalog::Catalog;

/// The account that owns the demo scrape sessions and the printed demo key.
pub const DEMO_ACCOUNT: &str = "demo";

/// Products generated and inserted per transaction.
pub const BATCH: u64 = 1000;

/// All generated time is measured back from this instant.
pub fn anchor() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 9, 0, 0)
        .single()
        .unwrap_or_default()
}

/// What to generate.
#[derive(Debug, Clone, clap::Args)]
pub struct SeedOptions {
    /// Also create the demo account, its scrape sessions and an API key.
    #[arg(long)]
    pub demo: bool,
    /// How many products to generate.
    #[arg(long, default_value_t = 1000)]
    pub products: u64,
    /// Seed of the generator; the same seed gives the same data.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

impl SeedOptions {
    /// What `serve --demo` loads.
    pub fn demo() -> Self {
        SeedOptions {
            demo: true,
            products: 1000,
            seed: 42,
        }
    }
}

/// What a seeding run wrote.
#[derive(Debug, Clone, Default)]
pub struct SeedReport {
    pub products: u64,
    pub sellers: u64,
    pub price_observations: u64,
    pub sessions: u64,
    pub elapsed: Duration,
    /// The demo account's new API key, when `--demo` was given.
    pub demo_key: Option<String>,
}

impl fmt::Display for SeedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seeded {} products, {} sellers, {} price observations, {} scrape sessions in {:.1}s",
            self.products,
            self.sellers,
            self.price_observations,
            self.sessions,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Whether the database holds no products yet.
pub async fn is_empty(db: &DatabaseConnection) -> Result<bool, Error> {
    Ok(product::Entity::find().count(db).await? == 0)
}

/// Generates the dataset into an empty database.
pub async fn seed(db: &DatabaseConnection, options: &SeedOptions) -> Result<SeedReport, Error> {
    if !is_empty(db).await? {
        return Err(Error::Invalid(
            "the database already holds products; seed needs an empty database".into(),
        ));
    }
    let started = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut catalog = Catalog::new(&mut rng, options.products);
    let mut report = SeedReport::default();

    let sellers = catalog.sellers(&mut rng);
    report.sellers = sellers.len() as u64;
    let txn = db.begin().await?;
    insert_batched(
        &txn,
        sellers
            .into_iter()
            .map(Into::into)
            .collect::<Vec<entity::seller::ActiveModel>>(),
    )
    .await?;
    txn.commit().await?;

    let mut made = 0;
    while made < options.products {
        let count = BATCH.min(options.products - made);
        let batch = catalog.products(&mut rng, count);
        report.price_observations += batch.observations.len() as u64;
        let txn = db.begin().await?;
        batch.insert(&txn).await?;
        txn.commit().await?;
        made += count;
    }
    report.products = made;

    snapshots::compute(db, anchor().date_naive()).await?;

    if options.demo {
        let demo = sessions::seed_demo_account(db, &mut rng, &catalog).await?;
        report.sessions = demo.sessions;
        report.demo_key = Some(demo.key);
    }
    crate::db::refresh_statistics(db).await?;
    report.elapsed = started.elapsed();
    Ok(report)
}
