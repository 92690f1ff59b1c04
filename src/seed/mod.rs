//! The deterministic synthetic dataset behind `vitrina seed` and `serve --demo`.
//!
//! The same `--seed` and `--products` always produce the same rows (ids,
//! names, prices, timestamps), on SQLite and PostgreSQL alike: every value
//! comes from one ChaCha8 stream or from the row's index ([`ids`]), and time
//! is measured back from a fixed anchor, never from "now". Only API keys are
//! random, by design.
//!
//! One thread generates batches of [`BATCH`] products and encodes them for
//! the database while the database writes the one before ([`load`]), so memory
//! stays flat up to millions of products. The load is one transaction: a run
//! stopped part-way leaves no products behind. The snapshots, the demo
//! account and the planner's statistics follow it.

mod catalog;
mod ids;
mod load;
mod progress;
mod sessions;
mod vocab;

use std::fmt;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, Statement};
use tokio::sync::mpsc;

use crate::error::Error;
use crate::jobs::snapshots;

pub use catalog::Catalog;
pub use ids::MAX_PRODUCTS;
pub use progress::Progress;

use load::{Batch, Begun, Encoding, Loader};
use progress::Meter;

/// The account that owns the demo scrape sessions and the printed demo key.
pub const DEMO_ACCOUNT: &str = "demo";

/// Products generated and written per batch.
pub const BATCH: u64 = 5000;

/// Encoded batches waiting for the database: enough that the generator never
/// waits for a batch being written, few enough to keep memory small.
const QUEUE: usize = 2;

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
    /// How many products to generate (at most 899,999,000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(..=MAX_PRODUCTS))]
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

/// Whether the catalog tables the seed fills (products, sellers and the
/// products' children) hold no row yet.
pub async fn is_empty(db: &DatabaseConnection) -> Result<bool, Error> {
    let occupied = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            load::occupied_tables_query(),
        ))
        .await?;
    Ok(occupied.is_none())
}

/// Generates the dataset into an empty database, showing no progress.
pub async fn seed(db: &DatabaseConnection, options: &SeedOptions) -> Result<SeedReport, Error> {
    seed_showing(db, options, Progress::Hidden).await
}

/// Generates the dataset into an empty database, showing its progress as
/// `progress` says.
pub async fn seed_showing(
    db: &DatabaseConnection,
    options: &SeedOptions,
    progress: Progress,
) -> Result<SeedReport, Error> {
    let started = Instant::now();
    let mut loader = match Loader::begin(db).await? {
        Begun::Ready(loader) => loader,
        Begun::Occupied(tables) => {
            return Err(Error::Invalid(format!(
                "the database already holds a catalog ({} not empty); seed needs an empty database",
                tables.join(", ")
            )));
        }
    };
    let meter = Meter::new(progress, options.products);
    let (sender, mut batches) = mpsc::channel(QUEUE);
    let generator = {
        let (options, encoding) = (options.clone(), loader.encoding());
        tokio::task::spawn_blocking(move || generate(&options, encoding, &sender))
    };
    let mut report = SeedReport::default();
    let mut meter = meter;
    while let Some(generated) = batches.recv().await {
        let generated = generated?;
        loader.write(generated.batch).await?;
        report.products += generated.products;
        report.sellers += generated.sellers;
        report.price_observations += generated.observations;
        meter.advance(generated.products);
    }
    let (mut rng, catalog) = generator
        .await
        .map_err(|e| Error::Invalid(format!("the generator stopped: {e}")))?;
    meter.step("building indexes");
    loader.finish().await?;

    meter.step("snapshots");
    snapshots::compute(db, anchor().date_naive()).await?;
    if options.demo {
        let demo = sessions::seed_demo_account(db, &mut rng, &catalog).await?;
        report.sessions = demo.sessions;
        report.demo_key = Some(demo.key);
    }
    // Processes serving this database keep answers worked out before.
    crate::cache::versions::announce(db, crate::cache::versions::Grains::ALL).await?;
    meter.step("statistics");
    crate::db::refresh_statistics(db).await?;
    meter.finish();
    report.elapsed = started.elapsed();
    Ok(report)
}

/// One encoded batch and what it holds.
struct Generated {
    batch: Batch,
    products: u64,
    sellers: u64,
    observations: u64,
}

/// Generates the sellers, then the products batch by batch, and sends each
/// batch encoded to the loader; stops early when the loader has gone.
/// Returns the stream and the catalog, for the demo account.
fn generate(
    options: &SeedOptions,
    encoding: Encoding,
    to: &mpsc::Sender<Result<Generated, DbErr>>,
) -> (ChaCha8Rng, Catalog) {
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut catalog = Catalog::new(&mut rng, ids::Ids::new(options.seed), options.products);
    let sellers = catalog.sellers(&mut rng);
    let mut next = Some(sellers);
    let mut made = 0;
    while let Some(rows) = next.take() {
        let generated = encoding.encode(&rows).map(|batch| Generated {
            batch,
            products: rows.products.len() as u64,
            sellers: rows.sellers.len() as u64,
            observations: rows.observations.len() as u64,
        });
        let failed = generated.is_err();
        if to.blocking_send(generated).is_err() || failed {
            break;
        }
        if made < options.products {
            let count = BATCH.min(options.products - made);
            next = Some(catalog.products(&mut rng, count));
            made += count;
        }
    }
    (rng, catalog)
}
