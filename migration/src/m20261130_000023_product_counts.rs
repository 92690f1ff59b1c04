//! `product_counts`: how many products each marketplace holds in each trust
//! status, so that a count of the catalog, of a marketplace or of a trust
//! status is a sum of a few rows instead of a scan of every product
//! (`query::counts` in the service).
//!
//! The database keeps it true, not the code that writes products: triggers
//! on `products` count every insert, delete and change of marketplace or
//! trust status, whoever makes it (the merge, the seed, a fixture, an
//! operator's SQL). On PostgreSQL inserts and deletes are counted once per
//! statement from its transition table (a `COPY` of thousands of products
//! pays one grouped write), a `TRUNCATE` of products empties the counts, and
//! a change of trust status is counted per row, only when it changes. SQLite
//! has only row triggers.
//!
//! Counter rows are hot: a write locks its row until its transaction
//! commits. The merge writes products one submission per transaction (a
//! few short statements after the product's own write), and only a new
//! product or a change of trust status writes a count at all. On
//! PostgreSQL each count is further split into [`STRIPES`] rows, picked by
//! the writing connection, so concurrent merge workers rarely wait on the
//! same row; the rows of one statement are written in key order, and a
//! deadlock between two merges (possible only when both share a stripe and
//! move statuses in opposite directions) is a fault the merge hands back
//! and retries (`jobs::merge::fault`). SQLite has one writer at a time and
//! one stripe.

use sea_orm_migration::prelude::*;

use crate::kept_counts;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Rows per count on PostgreSQL (a read sums at most this many per
/// marketplace and trust status).
pub const STRIPES: u32 = 16;

const TABLE: &str = "CREATE TABLE product_counts (
    marketplace TEXT NOT NULL,
    trust_status TEXT NOT NULL,
    stripe INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (marketplace, trust_status, stripe)
)";

/// The counts of the products there are.
pub const BACKFILL: &str = "INSERT INTO product_counts (marketplace, trust_status, stripe, n)
    SELECT marketplace, trust_status, 0, COUNT(*) FROM products
    GROUP BY marketplace, trust_status";

fn postgres() -> Vec<String> {
    let stripe = format!("pg_backend_pid() % {STRIPES}");
    vec![
        TABLE.to_owned(),
        // Inserts (sign 1) and deletes (sign -1) of one statement, grouped.
        format!(
            "CREATE FUNCTION product_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO product_counts AS c (marketplace, trust_status, stripe, n)
                SELECT marketplace, trust_status, {stripe}, COUNT(*) * TG_ARGV[0]::bigint
                FROM changed GROUP BY marketplace, trust_status
                ORDER BY marketplace, trust_status
                ON CONFLICT (marketplace, trust_status, stripe)
                DO UPDATE SET n = c.n + EXCLUDED.n;
                RETURN NULL;
            END $$"
        ),
        format!(
            "CREATE FUNCTION product_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO product_counts AS c (marketplace, trust_status, stripe, n)
                SELECT m, t, {stripe}, d FROM (VALUES
                    (OLD.marketplace, OLD.trust_status, -1),
                    (NEW.marketplace, NEW.trust_status, 1)) AS moved (m, t, d)
                ORDER BY m, t
                ON CONFLICT (marketplace, trust_status, stripe)
                DO UPDATE SET n = c.n + EXCLUDED.n;
                RETURN NULL;
            END $$"
        ),
        "CREATE FUNCTION product_counts_clear() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM product_counts;
            RETURN NULL;
        END $$"
            .to_owned(),
        "CREATE TRIGGER product_counts_insert AFTER INSERT ON products
            REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
            EXECUTE FUNCTION product_counts_add('1')"
            .to_owned(),
        "CREATE TRIGGER product_counts_delete AFTER DELETE ON products
            REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
            EXECUTE FUNCTION product_counts_add('-1')"
            .to_owned(),
        "CREATE TRIGGER product_counts_update AFTER UPDATE OF marketplace, trust_status
            ON products FOR EACH ROW
            WHEN (OLD.marketplace IS DISTINCT FROM NEW.marketplace
                  OR OLD.trust_status IS DISTINCT FROM NEW.trust_status)
            EXECUTE FUNCTION product_counts_move()"
            .to_owned(),
        "CREATE TRIGGER product_counts_truncate AFTER TRUNCATE ON products
            FOR EACH STATEMENT EXECUTE FUNCTION product_counts_clear()"
            .to_owned(),
        BACKFILL.to_owned(),
    ]
}

/// `n` added to the count of `row`'s (`NEW` or `OLD`) marketplace and status.
fn sqlite_add(row: &str, n: i32) -> String {
    format!(
        "INSERT INTO product_counts (marketplace, trust_status, stripe, n)
            VALUES ({row}.marketplace, {row}.trust_status, 0, {n})
            ON CONFLICT (marketplace, trust_status, stripe) DO UPDATE SET n = n + ({n});"
    )
}

fn sqlite() -> Vec<String> {
    vec![
        TABLE.to_owned(),
        format!(
            "CREATE TRIGGER product_counts_insert AFTER INSERT ON products BEGIN {} END",
            sqlite_add("NEW", 1)
        ),
        format!(
            "CREATE TRIGGER product_counts_delete AFTER DELETE ON products BEGIN {} END",
            sqlite_add("OLD", -1)
        ),
        format!(
            "CREATE TRIGGER product_counts_update AFTER UPDATE OF marketplace, trust_status
            ON products
            WHEN OLD.marketplace IS NOT NEW.marketplace OR OLD.trust_status IS NOT NEW.trust_status
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
        kept_counts::drop(manager, "product_counts").await
    }
}
