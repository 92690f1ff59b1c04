//! `brand_counts`: how many products each brand holds on each marketplace
//! in each trust status, so that a count of a brand (alone, or with a
//! marketplace and a trust status) is a sum of a few rows instead of a walk
//! of the brand's products, which grows with the brand: at 10,000,000
//! products the dashboard that counts its brand took 4.3 times as long as
//! at 100,000 (bench/README.md, "Ten million products").
//!
//! Kept as `product_counts` is (migration 23), by triggers on `products`
//! whoever writes them, split over [`STRIPES`] rows per count on
//! PostgreSQL; a product without a brand is in no row. The triggers of one
//! statement fire in name order, so every writer locks a brand's row before
//! the `product_counts` row, and the two tables add no new lock order.

use sea_orm_migration::prelude::*;

use crate::kept_counts;
use crate::m20261130_000023_product_counts::STRIPES;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "CREATE TABLE brand_counts (
    brand_key TEXT NOT NULL,
    marketplace TEXT NOT NULL,
    trust_status TEXT NOT NULL,
    stripe INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (brand_key, marketplace, trust_status, stripe)
)";

/// The counts of the products there are.
pub const BACKFILL: &str =
    "INSERT INTO brand_counts (brand_key, marketplace, trust_status, stripe, n)
    SELECT brand_key, marketplace, trust_status, 0, COUNT(*) FROM products
    WHERE brand_key IS NOT NULL
    GROUP BY brand_key, marketplace, trust_status";

/// The upsert that adds `n` to each of `rows`' counts (`brand_key`,
/// `marketplace`, `trust_status`, `n` columns), in key order.
fn upsert(stripe: &str, rows: &str) -> String {
    format!(
        "INSERT INTO brand_counts AS c (brand_key, marketplace, trust_status, stripe, n)
        SELECT b, m, t, {stripe}, SUM(d) FROM ({rows}) AS moved (b, m, t, d)
        WHERE b IS NOT NULL
        GROUP BY b, m, t
        ORDER BY b, m, t
        ON CONFLICT (brand_key, marketplace, trust_status, stripe)
        DO UPDATE SET n = c.n + EXCLUDED.n"
    )
}

fn postgres() -> Vec<String> {
    let stripe = format!("pg_backend_pid() % {STRIPES}");
    let added = upsert(
        &stripe,
        "SELECT brand_key, marketplace, trust_status, TG_ARGV[0]::bigint FROM changed",
    );
    let moved = upsert(
        &stripe,
        "VALUES (OLD.brand_key, OLD.marketplace, OLD.trust_status, -1),
                (NEW.brand_key, NEW.marketplace, NEW.trust_status, 1)",
    );
    vec![
        TABLE.to_owned(),
        // Inserts (sign 1) and deletes (sign -1) of one statement, grouped.
        format!(
            "CREATE FUNCTION brand_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN {added}; RETURN NULL; END $$"
        ),
        format!(
            "CREATE FUNCTION brand_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN {moved}; RETURN NULL; END $$"
        ),
        "CREATE FUNCTION brand_counts_clear() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN DELETE FROM brand_counts; RETURN NULL; END $$"
            .to_owned(),
        "CREATE TRIGGER brand_counts_insert AFTER INSERT ON products
            REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
            EXECUTE FUNCTION brand_counts_add('1')"
            .to_owned(),
        "CREATE TRIGGER brand_counts_delete AFTER DELETE ON products
            REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
            EXECUTE FUNCTION brand_counts_add('-1')"
            .to_owned(),
        "CREATE TRIGGER brand_counts_update AFTER UPDATE OF brand_key, marketplace, trust_status
            ON products FOR EACH ROW
            WHEN (OLD.brand_key IS DISTINCT FROM NEW.brand_key
                  OR OLD.marketplace IS DISTINCT FROM NEW.marketplace
                  OR OLD.trust_status IS DISTINCT FROM NEW.trust_status)
            EXECUTE FUNCTION brand_counts_move()"
            .to_owned(),
        "CREATE TRIGGER brand_counts_truncate AFTER TRUNCATE ON products
            FOR EACH STATEMENT EXECUTE FUNCTION brand_counts_clear()"
            .to_owned(),
        BACKFILL.to_owned(),
    ]
}

/// `n` added to the count of `row`'s (`NEW` or `OLD`) brand, marketplace
/// and status, when it has a brand.
fn sqlite_add(row: &str, n: i32) -> String {
    format!(
        "INSERT INTO brand_counts (brand_key, marketplace, trust_status, stripe, n)
            SELECT {row}.brand_key, {row}.marketplace, {row}.trust_status, 0, {n}
            WHERE {row}.brand_key IS NOT NULL
            ON CONFLICT (brand_key, marketplace, trust_status, stripe) DO UPDATE SET n = n + ({n});"
    )
}

fn sqlite() -> Vec<String> {
    vec![
        TABLE.to_owned(),
        format!(
            "CREATE TRIGGER brand_counts_insert AFTER INSERT ON products BEGIN {} END",
            sqlite_add("NEW", 1)
        ),
        format!(
            "CREATE TRIGGER brand_counts_delete AFTER DELETE ON products BEGIN {} END",
            sqlite_add("OLD", -1)
        ),
        format!(
            "CREATE TRIGGER brand_counts_update AFTER UPDATE OF brand_key, marketplace, trust_status
            ON products
            WHEN OLD.brand_key IS NOT NEW.brand_key OR OLD.marketplace IS NOT NEW.marketplace
                OR OLD.trust_status IS NOT NEW.trust_status
            BEGIN {} {} END",
            sqlite_add("OLD", -1),
            sqlite_add("NEW", 1)
        ),
        BACKFILL.to_owned(),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        kept_counts::create(manager, postgres, sqlite).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        kept_counts::drop(manager, "brand_counts").await
    }
}
