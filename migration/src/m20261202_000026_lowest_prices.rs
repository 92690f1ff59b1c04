//! `lowest_prices`: per product and currency, the lowest of the product's
//! current prices in that currency and whether any of them is in stock, so
//! the GraphQL price filters (`currency`, `priceMin`, `priceMax`, `inStock`)
//! test one indexed row per product instead of grouping its variants.
//!
//! The database keeps it true, as it keeps `product_counts`: triggers on
//! `current_prices` follow every write, whoever makes it. An insert only
//! lowers a price or adds stock, so inserts are folded in without reading
//! `current_prices` (on PostgreSQL once per statement, from its transition
//! table: a `COPY` of a seed batch is one grouped upsert). A change or a
//! delete may raise the lowest price, so the product's prices in that
//! currency are read again, through `current_prices_product`; the change
//! trigger fires only when a column the row depends on changes (a merge
//! that sees the same price again touches only `recorded_at`).
//!
//! A variant is in stock when its stock quantity is above 0, or, with no
//! quantity known, when it has a stock status other than `out_of_stock`.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "lowest_prices";

/// Whether current price row `row` (`NEW`, `OLD` or empty for the table's
/// own columns) is in stock.
pub(crate) fn in_stock(row: &str) -> String {
    let col = |name: &str| match row {
        "" => name.to_owned(),
        row => format!("{row}.{name}"),
    };
    format!(
        "COALESCE({q} > 0, {s} IS NOT NULL AND {s} <> 'out_of_stock')",
        q = col("stock_quantity"),
        s = col("stock_status"),
    )
}

/// The lowest prices computed again from `current_prices` for the rows
/// `keys` selects (`product_id` and `currency` columns, `WHERE` included),
/// with `any` the aggregate that ORs booleans.
fn recomputed(keys: &str, any: &str) -> String {
    format!(
        "SELECT product_id, currency, MIN(price), {any}({}) FROM current_prices {keys}
        GROUP BY product_id, currency",
        in_stock("")
    )
}

/// The table, keyed by product and currency. Its key carries the rest, so
/// a filter tests a product's row by its key alone, without the table:
/// PostgreSQL `INCLUDE`s the columns in the key's index, and SQLite keeps
/// the rows in their key's order (`WITHOUT ROWID`).
fn table(backend: DbBackend) -> &'static str {
    match backend {
        DbBackend::Postgres => {
            "CREATE TABLE lowest_prices (
                product_id uuid NOT NULL,
                currency varchar NOT NULL,
                price double precision NOT NULL,
                in_stock boolean NOT NULL,
                PRIMARY KEY (product_id, currency) INCLUDE (price, in_stock)
            )"
        }
        _ => {
            "CREATE TABLE lowest_prices (
                product_id uuid_text NOT NULL,
                currency varchar NOT NULL,
                price double NOT NULL,
                in_stock boolean NOT NULL,
                PRIMARY KEY (product_id, currency)
            ) WITHOUT ROWID"
        }
    }
}

/// A range of prices in one currency, in order, carrying the stock flag
/// (PostgreSQL `INCLUDE`s it; SQLite has no `INCLUDE`, so it trails).
pub(crate) fn by_price(backend: DbBackend) -> IndexCreateStatement {
    let mut index = Index::create();
    index
        .name("lowest_prices_by_price")
        .table(TABLE)
        .col("currency")
        .col("price")
        .col("product_id");
    match backend {
        DbBackend::Postgres => index.include("in_stock"),
        _ => index.col("in_stock"),
    };
    index.to_owned()
}

const COLUMNS: &str = "lowest_prices (product_id, currency, price, in_stock)";

fn postgres() -> Vec<String> {
    let one = "WHERE product_id = p AND currency = c";
    vec![
        format!(
            "CREATE FUNCTION lowest_prices_add() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO {COLUMNS}
                SELECT product_id, currency, MIN(price), bool_or({}) FROM added
                GROUP BY product_id, currency ORDER BY product_id, currency
                ON CONFLICT (product_id, currency) DO UPDATE
                SET price = LEAST(lowest_prices.price, EXCLUDED.price),
                    in_stock = lowest_prices.in_stock OR EXCLUDED.in_stock;
                RETURN NULL;
            END $$",
            in_stock("")
        ),
        format!(
            "CREATE FUNCTION lowest_prices_redo_one(p uuid, c text) RETURNS void
            LANGUAGE sql AS $$
                INSERT INTO {COLUMNS} {}
                ON CONFLICT (product_id, currency) DO UPDATE
                SET price = EXCLUDED.price, in_stock = EXCLUDED.in_stock
                WHERE (lowest_prices.price, lowest_prices.in_stock)
                    IS DISTINCT FROM (EXCLUDED.price, EXCLUDED.in_stock);
                DELETE FROM lowest_prices {one}
                    AND NOT EXISTS (SELECT 1 FROM current_prices {one});
            $$",
            recomputed(one, "bool_or")
        ),
        "CREATE FUNCTION lowest_prices_redo() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM lowest_prices_redo_one(OLD.product_id, OLD.currency);
            IF TG_OP = 'UPDATE' AND (NEW.product_id, NEW.currency)
                    IS DISTINCT FROM (OLD.product_id, OLD.currency) THEN
                PERFORM lowest_prices_redo_one(NEW.product_id, NEW.currency);
            END IF;
            RETURN NULL;
        END $$"
            .to_owned(),
        "CREATE FUNCTION lowest_prices_clear() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM lowest_prices;
            RETURN NULL;
        END $$"
            .to_owned(),
        "CREATE TRIGGER lowest_prices_insert AFTER INSERT ON current_prices
            REFERENCING NEW TABLE AS added FOR EACH STATEMENT
            EXECUTE FUNCTION lowest_prices_add()"
            .to_owned(),
        "CREATE TRIGGER lowest_prices_update AFTER UPDATE ON current_prices FOR EACH ROW
            WHEN ((OLD.product_id, OLD.currency, OLD.price, OLD.stock_status, OLD.stock_quantity)
                IS DISTINCT FROM
                (NEW.product_id, NEW.currency, NEW.price, NEW.stock_status, NEW.stock_quantity))
            EXECUTE FUNCTION lowest_prices_redo()"
            .to_owned(),
        "CREATE TRIGGER lowest_prices_delete AFTER DELETE ON current_prices FOR EACH ROW
            EXECUTE FUNCTION lowest_prices_redo()"
            .to_owned(),
        "CREATE TRIGGER lowest_prices_truncate AFTER TRUNCATE ON current_prices
            FOR EACH STATEMENT EXECUTE FUNCTION lowest_prices_clear()"
            .to_owned(),
        backfill(DbBackend::Postgres),
    ]
}

/// The aggregate that ORs booleans on `backend` (SQLite keeps them as 0
/// and 1).
pub(crate) fn any_of(backend: DbBackend) -> &'static str {
    match backend {
        DbBackend::Postgres => "bool_or",
        _ => "MAX",
    }
}

/// The lowest prices of the current prices there are.
pub fn backfill(backend: DbBackend) -> String {
    format!("INSERT INTO {COLUMNS} {}", recomputed("", any_of(backend)))
}

/// The statements that compute the lowest price of `row`'s (`OLD` or
/// `NEW`) product and currency again.
fn sqlite_redo(row: &str) -> String {
    let one = format!("WHERE product_id = {row}.product_id AND currency = {row}.currency");
    format!(
        "DELETE FROM lowest_prices {one}; INSERT INTO {COLUMNS} {};",
        recomputed(&one, "MAX")
    )
}

fn sqlite() -> Vec<String> {
    vec![
        format!(
            "CREATE TRIGGER lowest_prices_insert AFTER INSERT ON current_prices BEGIN
                INSERT INTO {COLUMNS}
                VALUES (NEW.product_id, NEW.currency, NEW.price, {})
                ON CONFLICT (product_id, currency) DO UPDATE
                SET price = MIN(price, excluded.price),
                    in_stock = MAX(in_stock, excluded.in_stock);
            END",
            in_stock("NEW")
        ),
        format!(
            "CREATE TRIGGER lowest_prices_update
            AFTER UPDATE OF product_id, currency, price, stock_status, stock_quantity
            ON current_prices
            WHEN OLD.product_id IS NOT NEW.product_id OR OLD.currency IS NOT NEW.currency
                OR OLD.price IS NOT NEW.price OR OLD.stock_status IS NOT NEW.stock_status
                OR OLD.stock_quantity IS NOT NEW.stock_quantity
            BEGIN {} {} END",
            sqlite_redo("OLD"),
            sqlite_redo("NEW")
        ),
        format!(
            "CREATE TRIGGER lowest_prices_delete AFTER DELETE ON current_prices BEGIN {} END",
            sqlite_redo("OLD")
        ),
        backfill(DbBackend::Sqlite),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let db = manager.get_connection();
        db.execute_unprepared(table(backend)).await?;
        let statements = match backend {
            DbBackend::Postgres => postgres(),
            _ => sqlite(),
        };
        for sql in statements {
            db.execute_unprepared(&sql).await?;
        }
        // Built after the backfill: one sorted build.
        manager.create_index(by_price(backend)).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let drops: &[&str] = match manager.get_database_backend() {
            DbBackend::Postgres => &[
                "DROP TRIGGER lowest_prices_insert ON current_prices",
                "DROP TRIGGER lowest_prices_update ON current_prices",
                "DROP TRIGGER lowest_prices_delete ON current_prices",
                "DROP TRIGGER lowest_prices_truncate ON current_prices",
                "DROP FUNCTION lowest_prices_add()",
                "DROP FUNCTION lowest_prices_redo()",
                "DROP FUNCTION lowest_prices_redo_one(uuid, text)",
                "DROP FUNCTION lowest_prices_clear()",
            ],
            _ => &[
                "DROP TRIGGER lowest_prices_insert",
                "DROP TRIGGER lowest_prices_update",
                "DROP TRIGGER lowest_prices_delete",
            ],
        };
        let db = manager.get_connection();
        for sql in drops {
            db.execute_unprepared(sql).await?;
        }
        manager
            .drop_table(Table::drop().table(TABLE).to_owned())
            .await
    }
}
