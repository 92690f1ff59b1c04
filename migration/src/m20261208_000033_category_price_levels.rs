//! `category_price_levels`: how many lowest prices (`lowest_prices`) of
//! each category's products fall in each price level of each currency, and
//! their sum, so that `productStats` of a category is a sum of level rows
//! plus a walk in one level per order statistic, as migration 32 made it
//! for the whole catalog and a marketplace, instead of an aggregate of
//! every price of the category: 491 ms for a category of 151,849 priced
//! products at 1,000,000 (bench/README.md).
//!
//! A category is each of a product's `product_categories` rows (any level
//! of its path, in any language), so a level row counts the pairs of a
//! category row and a lowest price of one product. The database keeps it
//! true whoever writes: a change of a lowest price moves it between the
//! level rows of its product's categories, and a category row added or
//! taken away adds or takes away its product's lowest prices. Each trigger
//! counts the pairs of its own row with the rows the other table holds
//! when it runs, so the order in which a product's rows of both tables are
//! written or deleted does not matter. The levels and their bounds are
//! migration 32's; so is the rule that the two unbounded levels keep no
//! sum.
//!
//! Migration 34 keys the level rows by the lowest price's marketplace,
//! trust status and stock too ([`Shape::ByPriceColumns`]), as `price_levels`
//! is; the statements of both shapes are made here.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use crate::m20261207_000032_price_levels::{
    self as price_levels, column_definitions, level_of, level_table_types, levelled_prices, summed,
};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The columns of a lowest price a level row is kept by, besides its
/// category and level.
#[derive(Clone, Copy)]
pub(crate) enum Shape {
    /// Migration 33's: the currency.
    ByCurrency,
    /// Migration 34's: the currency and the product columns `price_levels`
    /// is kept by.
    ByPriceColumns,
}

/// The shape the newest migration leaves.
pub(crate) const LATEST: Shape = Shape::ByPriceColumns;

impl Shape {
    /// The columns, with their types.
    fn typed_columns(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Shape::ByCurrency => vec![price_levels::CURRENCY],
            Shape::ByPriceColumns => price_levels::KEY_COLUMNS.to_vec(),
        }
    }

    fn columns(self) -> Vec<&'static str> {
        self.typed_columns()
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    /// The level row's key, its level aside.
    fn keys(self) -> String {
        format!("category_key, {}", self.columns().join(", "))
    }

    /// The level table of this shape, named `name`.
    fn table(self, backend: DbBackend, name: &str) -> String {
        let (float, rows) = level_table_types(backend);
        format!(
            "CREATE TABLE {name} (
                category_key varchar NOT NULL,
                {}level integer NOT NULL,
                n bigint NOT NULL,
                total {float} NOT NULL,
                PRIMARY KEY ({}, level)
            ){rows}",
            column_definitions(&self.typed_columns()),
            self.keys()
        )
    }
}

/// The pairs of a category row and a lowest price of one product.
struct Pairs {
    /// What names the category row (`c`, `NEW` or `OLD`).
    category: String,
    /// What names the lowest price (`l`, `NEW` or `OLD`).
    price: String,
    /// The rows they come from (a `FROM` clause and its condition).
    from: String,
    /// The price's level: looked up per row ([`level_of`]) in a trigger,
    /// found with the price in a fill ([`levelled_prices`]).
    level: String,
}

impl Pairs {
    /// The category rows of the product of the lowest price `row` (`NEW`
    /// or `OLD`), each with that price.
    fn of_price(row: &str) -> Pairs {
        Pairs {
            category: "c".to_owned(),
            price: row.to_owned(),
            from: format!("product_categories c WHERE c.product_id = {row}.product_id"),
            level: level_of(&format!("{row}.price")),
        }
    }

    /// The lowest prices of the product of the category row `row`, each
    /// with that category.
    fn of_category(row: &str) -> Pairs {
        Pairs {
            category: row.to_owned(),
            price: "l".to_owned(),
            from: format!("lowest_prices l WHERE l.product_id = {row}.product_id"),
            level: level_of("l.price"),
        }
    }

    /// Every pair there is (the fill).
    fn all(backend: DbBackend) -> Pairs {
        Pairs {
            category: "c".to_owned(),
            price: "l".to_owned(),
            from: format!(
                "{} AS l JOIN product_categories c ON c.product_id = l.product_id WHERE true",
                levelled_prices(backend)
            ),
            level: "l.level".to_owned(),
        }
    }

    /// Their count and sum per level row of `shape`, times `sign`.
    fn per_level(&self, shape: Shape, sign: i32) -> String {
        let Pairs {
            category,
            price,
            from,
            level,
        } = self;
        let columns: String = shape
            .columns()
            .iter()
            .map(|c| format!("{price}.{c} AS {c}, "))
            .collect();
        let keys = shape.keys();
        format!(
            "SELECT {keys}, level, {sign} * COUNT(*), {sign} * SUM({})
            FROM (SELECT {category}.category_key AS category_key, {columns}
                    {price}.price AS price, {level} AS level
                FROM {from}) AS leveled
            WHERE true
            GROUP BY {keys}, level",
            summed("price", "level")
        )
    }

    /// The upsert that adds `sign` (1 or -1) times these pairs to their
    /// level rows; `this` qualifies the level row's own columns
    /// (PostgreSQL needs it, SQLite refuses it in a trigger).
    fn add(&self, shape: Shape, this: &str, sign: i32) -> String {
        let keys = shape.keys();
        format!(
            "INSERT INTO category_price_levels ({keys}, level, n, total)
            {}
            ON CONFLICT ({keys}, level) DO UPDATE
            SET n = {this}n + excluded.n,
                total = CASE WHEN {this}n + excluded.n = 0 THEN 0
                    ELSE {this}total + excluded.total END;",
            self.per_level(shape, sign)
        )
    }
}

/// The level table's name.
const TABLE: &str = "category_price_levels";

/// The name a table of a new shape is filled under, before it replaces
/// the old one.
const NEXT: &str = "category_price_levels_next";

/// The level rows of every pair there is, in the newest shape.
pub fn backfill(backend: DbBackend) -> String {
    fill(LATEST, TABLE, backend)
}

fn fill(shape: Shape, table: &str, backend: DbBackend) -> String {
    format!(
        "INSERT INTO {table} ({}, level, n, total) {}",
        shape.keys(),
        Pairs::all(backend).per_level(shape, 1)
    )
}

/// A lowest price moved to another level row: its price, its product or
/// a column of `shape` changed.
fn price_moved(shape: Shape, distinct: &str) -> String {
    ["price", "product_id"]
        .into_iter()
        .chain(shape.columns())
        .map(|c| format!("OLD.{c} {distinct} NEW.{c}"))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// A category row now counts under another key or product.
fn category_moved(distinct: &str) -> String {
    ["category_key", "product_id"]
        .map(|c| format!("OLD.{c} {distinct} NEW.{c}"))
        .join(" OR ")
}

const PG_THIS: &str = "category_price_levels.";

fn postgres(shape: Shape) -> Vec<String> {
    let function = |name: &str, pairs: fn(&str) -> Pairs| {
        format!(
            "CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP <> 'INSERT' THEN {} END IF;
                IF TG_OP <> 'DELETE' THEN {} END IF;
                RETURN NULL;
            END $$",
            pairs("OLD").add(shape, PG_THIS, -1),
            pairs("NEW").add(shape, PG_THIS, 1)
        )
    };
    let mut statements = vec![
        function("category_price_levels_price", Pairs::of_price),
        function("category_price_levels_category", Pairs::of_category),
        "CREATE FUNCTION category_price_levels_clear() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN DELETE FROM category_price_levels; RETURN NULL; END $$"
            .to_owned(),
    ];
    for (table, suffix, function, moved) in [
        (
            "lowest_prices",
            "price",
            "category_price_levels_price",
            price_moved(shape, "IS DISTINCT FROM"),
        ),
        (
            "product_categories",
            "category",
            "category_price_levels_category",
            category_moved("IS DISTINCT FROM"),
        ),
    ] {
        let name = format!("category_price_levels_{suffix}");
        statements.extend([
            format!(
                "CREATE TRIGGER {name}_insert AFTER INSERT ON {table}
                FOR EACH ROW EXECUTE FUNCTION {function}()"
            ),
            format!(
                "CREATE TRIGGER {name}_update AFTER UPDATE ON {table}
                FOR EACH ROW WHEN ({moved}) EXECUTE FUNCTION {function}()"
            ),
            format!(
                "CREATE TRIGGER {name}_delete AFTER DELETE ON {table}
                FOR EACH ROW EXECUTE FUNCTION {function}()"
            ),
            format!(
                "CREATE TRIGGER {name}_truncate AFTER TRUNCATE ON {table}
                FOR EACH STATEMENT EXECUTE FUNCTION category_price_levels_clear()"
            ),
        ]);
    }
    statements
}

/// The SQLite triggers on `table` that keep the level rows of `pairs`,
/// by name and statement.
fn sqlite_triggers(
    shape: Shape,
    table: &str,
    suffix: &str,
    pairs: fn(&str) -> Pairs,
    moved: String,
) -> [(String, String); 3] {
    let name = format!("category_price_levels_{suffix}");
    [
        (
            format!("{name}_insert"),
            format!(
                "CREATE TRIGGER {name}_insert AFTER INSERT ON {table} BEGIN {} END",
                pairs("NEW").add(shape, "", 1)
            ),
        ),
        (
            format!("{name}_update"),
            format!(
                "CREATE TRIGGER {name}_update AFTER UPDATE ON {table} WHEN {moved} BEGIN {} {} END",
                pairs("OLD").add(shape, "", -1),
                pairs("NEW").add(shape, "", 1)
            ),
        ),
        (
            format!("{name}_delete"),
            format!(
                "CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN {} END",
                pairs("OLD").add(shape, "", -1)
            ),
        ),
    ]
}

/// The SQLite triggers on `lowest_prices` that keep the category levels
/// (of the newest shape), by name and statement (a bulk fill of
/// `lowest_prices` drops and makes them again, as migration 32's).
pub fn sqlite_price_triggers() -> [(String, String); 3] {
    price_triggers(LATEST)
}

fn price_triggers(shape: Shape) -> [(String, String); 3] {
    sqlite_triggers(
        shape,
        "lowest_prices",
        "price",
        Pairs::of_price,
        price_moved(shape, "IS NOT"),
    )
}

fn sqlite(shape: Shape) -> Vec<String> {
    let on_categories = sqlite_triggers(
        shape,
        "product_categories",
        "category",
        Pairs::of_category,
        category_moved("IS NOT"),
    );
    price_triggers(shape)
        .into_iter()
        .chain(on_categories)
        .map(|(_, create)| create)
        .collect()
}

/// Makes the level table of `shape`, fills it, and makes its triggers.
async fn create(manager: &SchemaManager<'_>, shape: Shape) -> Result<(), DbErr> {
    hold_writes(manager).await?;
    make_filled(manager, shape, TABLE).await?;
    make_triggers(manager, shape).await
}

/// Makes the level table again in `shape`. On PostgreSQL it is filled
/// under another name while the old one still answers reads, then put in
/// its place: dropping the old triggers locks the two tables they are on
/// against reads too, so that comes after the fill (12 s at 1,000,000
/// products). SQLite's readers are not held by a writer; there the table
/// is dropped and made again (a table renamed to a name another pooled
/// connection still knows is refused).
pub(crate) async fn rebuild(manager: &SchemaManager<'_>, shape: Shape) -> Result<(), DbErr> {
    let db = manager.get_connection();
    if manager.get_database_backend() == DbBackend::Postgres {
        hold_writes(manager).await?;
        make_filled(manager, shape, NEXT).await?;
        drop(manager).await?;
        db.execute_unprepared(&format!("ALTER TABLE {NEXT} RENAME TO {TABLE}"))
            .await?;
        db.execute_unprepared(&format!("ALTER INDEX {NEXT}_pkey RENAME TO {TABLE}_pkey"))
            .await?;
    } else {
        drop(manager).await?;
        make_filled(manager, shape, TABLE).await?;
    }
    make_triggers(manager, shape).await
}

/// Keeps writers of the tables the levels count out until the migration
/// commits, readers not: a pair written during the fill, before the
/// triggers are made, would otherwise be counted by neither. SQLite's
/// migration holds the only write lock already.
async fn hold_writes(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    if manager.get_database_backend() == DbBackend::Postgres {
        manager
            .get_connection()
            .execute_unprepared("LOCK TABLE lowest_prices, product_categories IN SHARE MODE")
            .await?;
    }
    Ok(())
}

async fn make_filled(manager: &SchemaManager<'_>, shape: Shape, name: &str) -> Result<(), DbErr> {
    let db = manager.get_connection();
    let backend = manager.get_database_backend();
    db.execute_unprepared(&shape.table(backend, name)).await?;
    db.execute_unprepared(&fill(shape, name, backend)).await?;
    Ok(())
}

async fn make_triggers(manager: &SchemaManager<'_>, shape: Shape) -> Result<(), DbErr> {
    let triggers = match manager.get_database_backend() {
        DbBackend::Postgres => postgres(shape),
        _ => sqlite(shape),
    };
    for sql in triggers {
        manager.get_connection().execute_unprepared(&sql).await?;
    }
    Ok(())
}

/// Drops the level table, its triggers and their functions, whatever its
/// shape.
async fn drop(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    let db = manager.get_connection();
    for (table, suffix) in [
        ("lowest_prices", "price"),
        ("product_categories", "category"),
    ] {
        let kinds: &[&str] = match backend {
            DbBackend::Postgres => &["insert", "update", "delete", "truncate"],
            _ => &["insert", "update", "delete"],
        };
        for kind in kinds {
            let on = match backend {
                DbBackend::Postgres => format!(" ON {table}"),
                _ => String::new(),
            };
            db.execute_unprepared(&format!(
                "DROP TRIGGER category_price_levels_{suffix}_{kind}{on}"
            ))
            .await?;
        }
    }
    if backend == DbBackend::Postgres {
        for function in ["price", "category", "clear"] {
            db.execute_unprepared(&format!("DROP FUNCTION category_price_levels_{function}()"))
                .await?;
        }
    }
    db.execute_unprepared("DROP TABLE category_price_levels")
        .await?;
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create(manager, Shape::ByCurrency).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop(manager).await
    }
}
