//! `price_levels`: how many lowest prices (`lowest_prices`) fall in each
//! price level of each currency, marketplace, trust status and stock, and
//! their sum, so that `productStats` over the whole catalog or a
//! marketplace is a sum of a few thousand rows plus a walk in one level per
//! order statistic (lowest, median, highest), instead of an aggregate of
//! every product priced in the currency: 217 ms over the catalog and 933
//! ms on one marketplace at 1,000,000 products (bench/README.md).
//!
//! Levels are fixed price ranges (`price_level_bounds`): level -1 holds
//! every negative price, level 0 the prices below 0.01, level `k` (1 to
//! [`LAST_LEVEL`]) the prices from 0.01 x 1.04^(k-1) up to the next
//! level's bound, the last every price above. The two unbounded levels
//! count their prices but keep no sum (see [`summed`]). A level is 4% wide, so the walk to an order statistic reads at
//! most the prices within 4% of it. The bounds are rows, not a formula, so
//! a trigger, a fill and a query all find a price's level among the same
//! bounds (SQLite here has no logarithm): a lookup in their index per
//! price, or one search of them all for a fill on PostgreSQL
//! ([`levelled_prices`]).
//!
//! Each `lowest_prices` row now carries its product's `marketplace` and
//! `trust_status`, so its level row is known from the row alone, even
//! while its product is being deleted; a change of either on `products` is
//! copied to the product's rows. The database keeps both tables true, as
//! it keeps `product_counts`: row triggers on `lowest_prices` move each
//! change between level rows, whoever writes it. Level rows are not split
//! into stripes: a merge writes the levels of the prices it changes, which
//! spread over hundreds of rows. `total` is a running sum of floats, so it
//! carries their rounding; it is reset to 0 whenever its level empties.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use crate::m20261202_000026_lowest_prices::{self as lowest_prices, in_stock};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The highest level; it holds every price from its bound up (about
/// 1.3e12).
pub const LAST_LEVEL: i32 = 830;

/// The level of every negative price.
pub const OUTLYING_LOW: i32 = -1;

/// The share of a price in its level's `total`: its price, but nothing in
/// the two unbounded levels ([`OUTLYING_LOW`], [`LAST_LEVEL`]), so that no
/// sum can overflow (PostgreSQL refuses a double that does, and would
/// refuse every later write to the level) however absurd a price; a
/// reader of their totals aggregates the prices instead.
pub(crate) fn summed(price: &str, level: &str) -> String {
    format!(
        "CASE WHEN {level} BETWEEN 0 AND {} THEN {price} ELSE 0 END",
        LAST_LEVEL - 1
    )
}

/// How much each level's bound is above the one before.
const LEVEL_RATIO: f64 = 1.04;

/// The lowest price of level `level` (1 to [`LAST_LEVEL`]).
fn level_low(level: i32) -> f64 {
    0.01 * LEVEL_RATIO.powi(level - 1)
}

/// The level of the price `price` (an SQL expression).
pub fn level_of(price: &str) -> String {
    format!("(SELECT level FROM price_level_bounds WHERE low <= {price} ORDER BY low DESC LIMIT 1)")
}

/// Every lowest price with its level (`level`), for a statement over many
/// (a fill): the same level as [`level_of`], among the same bounds, each
/// found once.
///
/// PostgreSQL runs [`level_of`]'s subquery once per row, about 12 us each:
/// 97 s for the 7.7 million pairs of category rows and lowest prices of
/// 1,000,000 products. Here the bounds are read once into arrays, and
/// `width_bucket` counts those at or below each price by a binary search:
/// the position of the highest, whose level is the one [`level_of`] picks
/// (none below every bound, as there). That fill takes 10.3 s.
///
/// SQLite has no such function; its lookup per row is cheap, but it would
/// merge this table into the statement reading it and look the level up
/// wherever that names it, for every row it joins. `LIMIT -1` keeps the
/// table whole, so each price is looked up once (the category fill at
/// 1,000,000 products: 36 s, 28 s so).
pub fn levelled_prices(backend: DbBackend) -> String {
    let (level, whole) = match backend {
        DbBackend::Postgres => (
            "(SELECT array_agg(level ORDER BY low) FROM price_level_bounds)\
            [width_bucket(price, (SELECT array_agg(low ORDER BY low) FROM price_level_bounds))]"
                .to_owned(),
            "",
        ),
        _ => (level_of("price"), " LIMIT -1"),
    };
    format!("(SELECT *, {level} AS level FROM lowest_prices{whole})")
}

/// A level row's currency column, with its type.
pub(crate) const CURRENCY: (&str, &str) = ("currency", "varchar");

/// The kept columns a level row is keyed by, besides its level, each with
/// its type.
pub(crate) const KEY_COLUMNS: [(&str, &str); 4] = [
    CURRENCY,
    ("marketplace", "varchar"),
    ("trust_status", "varchar"),
    ("in_stock", "boolean"),
];

/// The names of [`KEY_COLUMNS`], as a list.
fn keys() -> String {
    KEY_COLUMNS.map(|(name, _)| name).join(", ")
}

/// The definitions of `columns` in a `CREATE TABLE`, each ending a line.
pub(crate) fn column_definitions(columns: &[(&str, &str)]) -> String {
    columns
        .iter()
        .map(|(name, kind)| format!("{name} {kind} NOT NULL,\n"))
        .collect()
}

/// A level table's type of sums, and what follows its definition: SQLite
/// keeps the levels in their key's order (`WITHOUT ROWID`), as
/// PostgreSQL's index-only reads would.
pub(crate) fn level_table_types(backend: DbBackend) -> (&'static str, &'static str) {
    match backend {
        DbBackend::Postgres => ("double precision", ""),
        _ => ("double", " WITHOUT ROWID"),
    }
}

/// The bounds and the levels.
fn tables(backend: DbBackend) -> [String; 2] {
    let (float, rows) = level_table_types(backend);
    let (keys, columns) = (keys(), column_definitions(&KEY_COLUMNS));
    [
        format!(
            "CREATE TABLE price_level_bounds (
                level integer PRIMARY KEY,
                low {float} NOT NULL UNIQUE
            )"
        ),
        format!(
            "CREATE TABLE price_levels (
                {columns}level integer NOT NULL,
                n bigint NOT NULL,
                total {float} NOT NULL,
                PRIMARY KEY ({keys}, level)
            ){rows}"
        ),
    ]
}

/// The bounds, as bound values (the same doubles on both databases).
fn bounds() -> InsertStatement {
    let mut insert = Query::insert();
    insert
        .into_table("price_level_bounds")
        .columns(["level", "low"]);
    // Level -1 takes every price below 0 (only rows written around the
    // merge, which refuses them, hold one), level 0 those from 0 to level
    // 1's bound.
    insert.values_panic([OUTLYING_LOW.into(), (-f64::MAX).into()]);
    insert.values_panic([0.into(), 0.0.into()]);
    for level in 1..=LAST_LEVEL {
        insert.values_panic([level.into(), level_low(level).into()]);
    }
    insert.to_owned()
}

/// Each lowest price's product columns, copied from its product.
const FILL_PRODUCT_COLUMNS: &str = "UPDATE lowest_prices SET (marketplace, trust_status) =
    (SELECT p.marketplace, p.trust_status FROM products p WHERE p.id = lowest_prices.product_id)";

/// The levels of the lowest prices there are.
pub fn backfill(backend: DbBackend) -> String {
    let keys = keys();
    format!(
        "INSERT INTO price_levels ({keys}, level, n, total)
        SELECT {keys}, level, COUNT(*), SUM({})
        FROM {} AS leveled
        GROUP BY {keys}, level",
        summed("price", "level"),
        levelled_prices(backend)
    )
}

/// The lowest prices of the current prices there are, with their
/// products' columns (the fill of a bulk load; migration 26 fills the
/// table before it had them).
pub fn lowest_prices_backfill(backend: DbBackend) -> String {
    let any = lowest_prices::any_of(backend);
    format!(
        "INSERT INTO lowest_prices
            (product_id, currency, price, in_stock, marketplace, trust_status)
        SELECT c.product_id, c.currency, MIN(c.price), {any}({}), p.marketplace, p.trust_status
        FROM current_prices c JOIN products p ON p.id = c.product_id
        GROUP BY c.product_id, c.currency, p.marketplace, p.trust_status",
        in_stock("c")
    )
}

/// The upsert that adds `sign` (1 or -1) times `row`'s (`NEW` or `OLD`)
/// price to its level, when `when` holds; `this` qualifies the level row's
/// own columns (PostgreSQL needs it, SQLite refuses it in a trigger).
fn add(this: &str, row: &str, sign: i32, when: &str) -> String {
    let keys = keys();
    let values = KEY_COLUMNS
        .map(|(name, _)| format!("{row}.{name}"))
        .join(", ");
    format!(
        "INSERT INTO price_levels ({keys}, level, n, total)
        SELECT {values},
            level, {sign}, {sign} * {}
        FROM (SELECT {} AS level) AS leveled
        WHERE {when}
        ON CONFLICT ({keys}, level) DO UPDATE
        SET n = {this}n + excluded.n,
            total = CASE WHEN {this}n + excluded.n = 0 THEN 0 ELSE {this}total + excluded.total END;",
        summed(&format!("{row}.price"), "level"),
        level_of(&format!("{row}.price"))
    )
}

/// A row's columns a level row depends on changed.
fn moved(old: &str, new: &str, distinct: &str) -> String {
    KEY_COLUMNS
        .map(|(name, _)| name)
        .iter()
        .chain(&["price"])
        .map(|c| format!("{old}.{c} {distinct} {new}.{c}"))
        .collect::<Vec<_>>()
        .join(" OR ")
}

const PG_THIS: &str = "price_levels.";

fn postgres() -> Vec<String> {
    vec![
        "ALTER TABLE lowest_prices ADD COLUMN marketplace varchar, ADD COLUMN trust_status varchar"
            .to_owned(),
        FILL_PRODUCT_COLUMNS.to_owned(),
        "ALTER TABLE lowest_prices ALTER COLUMN marketplace SET NOT NULL,
            ALTER COLUMN trust_status SET NOT NULL"
            .to_owned(),
        backfill(DbBackend::Postgres),
        // A row written without its product's columns (as the triggers on
        // `current_prices` write them) takes them from the product.
        "CREATE FUNCTION lowest_prices_product() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.marketplace IS NULL OR NEW.trust_status IS NULL THEN
                SELECT marketplace, trust_status INTO NEW.marketplace, NEW.trust_status
                FROM products WHERE id = NEW.product_id;
            END IF;
            RETURN NEW;
        END $$"
            .to_owned(),
        "CREATE TRIGGER lowest_prices_product BEFORE INSERT ON lowest_prices
            FOR EACH ROW EXECUTE FUNCTION lowest_prices_product()"
            .to_owned(),
        format!(
            "CREATE FUNCTION price_levels_change() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP <> 'INSERT' THEN {} END IF;
                IF TG_OP <> 'DELETE' THEN {} END IF;
                RETURN NULL;
            END $$",
            add(PG_THIS, "OLD", -1, "true"),
            add(PG_THIS, "NEW", 1, "true")
        ),
        "CREATE FUNCTION price_levels_clear() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN DELETE FROM price_levels; RETURN NULL; END $$"
            .to_owned(),
        "CREATE TRIGGER price_levels_insert AFTER INSERT ON lowest_prices
            FOR EACH ROW EXECUTE FUNCTION price_levels_change()"
            .to_owned(),
        format!(
            "CREATE TRIGGER price_levels_update AFTER UPDATE ON lowest_prices FOR EACH ROW
            WHEN ({}) EXECUTE FUNCTION price_levels_change()",
            moved("OLD", "NEW", "IS DISTINCT FROM")
        ),
        "CREATE TRIGGER price_levels_delete AFTER DELETE ON lowest_prices
            FOR EACH ROW EXECUTE FUNCTION price_levels_change()"
            .to_owned(),
        "CREATE TRIGGER price_levels_truncate AFTER TRUNCATE ON lowest_prices
            FOR EACH STATEMENT EXECUTE FUNCTION price_levels_clear()"
            .to_owned(),
        "CREATE FUNCTION lowest_prices_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE lowest_prices SET marketplace = NEW.marketplace, trust_status = NEW.trust_status
            WHERE product_id = NEW.id;
            RETURN NULL;
        END $$"
            .to_owned(),
        "CREATE TRIGGER lowest_prices_follow AFTER UPDATE OF marketplace, trust_status
            ON products FOR EACH ROW
            WHEN (OLD.marketplace IS DISTINCT FROM NEW.marketplace
                  OR OLD.trust_status IS DISTINCT FROM NEW.trust_status)
            EXECUTE FUNCTION lowest_prices_follow()"
            .to_owned(),
    ]
}

/// The triggers on `lowest_prices` that keep `price_levels` on SQLite, by
/// name and statement. SQLite cannot change a row before it is written,
/// so a row written without its product's columns (`''`, as the triggers
/// on `current_prices` write them) is counted once they are copied in, by
/// the change that copies them. A row written while its product is being
/// deleted (SQLite deletes its prices one by one, and each delete writes
/// the lowest of those left) finds no product and stays uncounted until
/// the last of them takes it away.
pub fn sqlite_level_triggers() -> [(&'static str, String); 3] {
    let counted = |row: &str| format!("{row}.marketplace <> ''");
    [
        (
            "price_levels_insert",
            format!(
            "CREATE TRIGGER price_levels_insert AFTER INSERT ON lowest_prices BEGIN
                {}
                UPDATE lowest_prices SET (marketplace, trust_status) =
                    (SELECT p.marketplace, p.trust_status FROM products p WHERE p.id = NEW.product_id)
                WHERE NEW.marketplace = '' AND product_id = NEW.product_id
                    AND currency = NEW.currency
                    AND EXISTS (SELECT 1 FROM products WHERE id = NEW.product_id);
            END",
            add("", "NEW", 1, &counted("NEW"))
        ),
        ),
        (
            "price_levels_update",
            format!(
            "CREATE TRIGGER price_levels_update AFTER UPDATE ON lowest_prices
            WHEN {} BEGIN {} {} END",
            moved("OLD", "NEW", "IS NOT"),
            add("", "OLD", -1, &counted("OLD")),
            add("", "NEW", 1, &counted("NEW"))
        ),
        ),
        (
            "price_levels_delete",
            format!(
            "CREATE TRIGGER price_levels_delete AFTER DELETE ON lowest_prices BEGIN {} END",
            add("", "OLD", -1, &counted("OLD"))
        ),
        ),
    ]
}

fn sqlite() -> Vec<String> {
    let mut statements = vec![
        "ALTER TABLE lowest_prices ADD COLUMN marketplace varchar NOT NULL DEFAULT ''".to_owned(),
        "ALTER TABLE lowest_prices ADD COLUMN trust_status varchar NOT NULL DEFAULT ''".to_owned(),
        FILL_PRODUCT_COLUMNS.to_owned(),
        backfill(DbBackend::Sqlite),
    ];
    statements.extend(sqlite_level_triggers().map(|(_, create)| create));
    statements.push(
        "CREATE TRIGGER lowest_prices_follow AFTER UPDATE OF marketplace, trust_status ON products
            WHEN OLD.marketplace IS NOT NEW.marketplace OR OLD.trust_status IS NOT NEW.trust_status
            BEGIN
                UPDATE lowest_prices
                SET marketplace = NEW.marketplace, trust_status = NEW.trust_status
                WHERE product_id = NEW.id;
            END"
        .to_owned(),
    );
    statements
}

/// `lowest_prices_by_price` again, carrying the product columns too, so a
/// walk of a level on one marketplace reads the index alone.
fn by_price(backend: DbBackend) -> IndexCreateStatement {
    let mut index = lowest_prices::by_price(backend);
    match backend {
        DbBackend::Postgres => index.include("marketplace").include("trust_status"),
        _ => index.col("marketplace").col("trust_status"),
    };
    index
}

/// Whether the planner has statistics of `lowest_prices_by_price` that
/// its rebuild takes away. SQLite keeps none until an `ANALYZE` (the seed
/// ends with one), and without them it reads a brand's lowest prices by
/// walking the whole currency in this index: 6 ms became 7.1 s at
/// 1,000,000 products. PostgreSQL's autovacuum analyzes on its own, but
/// every row was just rewritten, so its statistics are refreshed now.
async fn statistics_kept(manager: &SchemaManager<'_>) -> Result<bool, DbErr> {
    if manager.get_database_backend() == DbBackend::Postgres {
        return Ok(true);
    }
    let db = manager.get_connection();
    // Every row is read, so no statement is left part-way, holding a
    // snapshot of the schema on a pooled connection.
    let rows = |sql: &str| {
        db.query_all_raw(sea_orm_migration::sea_orm::Statement::from_string(
            DbBackend::Sqlite,
            sql.to_owned(),
        ))
    };
    if rows("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
        .await?
        .is_empty()
    {
        return Ok(false);
    }
    let kept = rows("SELECT 1 FROM sqlite_stat1 WHERE idx = 'lowest_prices_by_price'").await?;
    Ok(!kept.is_empty())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let db = manager.get_connection();
        for sql in tables(backend) {
            db.execute_unprepared(&sql).await?;
        }
        manager.exec_stmt(bounds()).await?;
        let statements = match backend {
            DbBackend::Postgres => postgres(),
            _ => sqlite(),
        };
        for sql in statements {
            db.execute_unprepared(&sql).await?;
        }
        let analyzed = statistics_kept(manager).await?;
        manager
            .drop_index(
                Index::drop()
                    .name("lowest_prices_by_price")
                    .table("lowest_prices")
                    .to_owned(),
            )
            .await?;
        manager.create_index(by_price(backend)).await?;
        if analyzed {
            db.execute_unprepared("ANALYZE lowest_prices").await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let drops: &[&str] = match backend {
            DbBackend::Postgres => &[
                "DROP TRIGGER lowest_prices_follow ON products",
                "DROP TRIGGER lowest_prices_product ON lowest_prices",
                "DROP TRIGGER price_levels_insert ON lowest_prices",
                "DROP TRIGGER price_levels_update ON lowest_prices",
                "DROP TRIGGER price_levels_delete ON lowest_prices",
                "DROP TRIGGER price_levels_truncate ON lowest_prices",
                "DROP FUNCTION lowest_prices_follow()",
                "DROP FUNCTION lowest_prices_product()",
                "DROP FUNCTION price_levels_change()",
                "DROP FUNCTION price_levels_clear()",
            ],
            _ => &[
                "DROP TRIGGER lowest_prices_follow",
                "DROP TRIGGER price_levels_insert",
                "DROP TRIGGER price_levels_update",
                "DROP TRIGGER price_levels_delete",
            ],
        };
        let db = manager.get_connection();
        for sql in drops {
            db.execute_unprepared(sql).await?;
        }
        db.execute_unprepared("DROP INDEX lowest_prices_by_price")
            .await?;
        for column in ["marketplace", "trust_status"] {
            db.execute_unprepared(&format!("ALTER TABLE lowest_prices DROP COLUMN {column}"))
                .await?;
        }
        for table in ["price_levels", "price_level_bounds"] {
            db.execute_unprepared(&format!("DROP TABLE {table}"))
                .await?;
        }
        manager.create_index(lowest_prices::by_price(backend)).await
    }
}
