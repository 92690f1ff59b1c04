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

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use crate::m20261207_000032_price_levels::{level_of, level_table_types, summed};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The kept columns a level row is keyed by, besides its level.
const KEYS: &str = "category_key, currency";

fn table(backend: DbBackend) -> String {
    let (float, rows) = level_table_types(backend);
    format!(
        "CREATE TABLE category_price_levels (
            category_key varchar NOT NULL,
            currency varchar NOT NULL,
            level integer NOT NULL,
            n bigint NOT NULL,
            total {float} NOT NULL,
            PRIMARY KEY ({KEYS}, level)
        ){rows}"
    )
}

/// The pairs of a category row and a lowest price of one product, as
/// columns `category_key`, `currency`, `price`.
struct Pairs {
    category_key: String,
    currency: String,
    price: String,
    /// The rows they come from (a `FROM` clause and its condition).
    from: String,
}

impl Pairs {
    /// The category rows of the product of the lowest price `row` (`NEW`
    /// or `OLD`), each with that price.
    fn of_price(row: &str) -> Pairs {
        Pairs {
            category_key: "c.category_key".to_owned(),
            currency: format!("{row}.currency"),
            price: format!("{row}.price"),
            from: format!("product_categories c WHERE c.product_id = {row}.product_id"),
        }
    }

    /// The lowest prices of the product of the category row `row`, each
    /// with that category.
    fn of_category(row: &str) -> Pairs {
        Pairs {
            category_key: format!("{row}.category_key"),
            currency: "l.currency".to_owned(),
            price: "l.price".to_owned(),
            from: format!("lowest_prices l WHERE l.product_id = {row}.product_id"),
        }
    }

    /// Every pair there is (the fill).
    fn all() -> Pairs {
        Pairs {
            category_key: "c.category_key".to_owned(),
            currency: "l.currency".to_owned(),
            price: "l.price".to_owned(),
            from: "product_categories c JOIN lowest_prices l ON l.product_id = c.product_id \
                   WHERE true"
                .to_owned(),
        }
    }

    /// Their count and sum per level row, times `sign`.
    fn per_level(&self, sign: i32) -> String {
        let Pairs {
            category_key,
            currency,
            price,
            from,
        } = self;
        format!(
            "SELECT category_key, currency, level, {sign} * COUNT(*), {sign} * SUM({})
            FROM (SELECT {category_key} AS category_key, {currency} AS currency,
                    {price} AS price, {} AS level
                FROM {from}) AS leveled
            WHERE true
            GROUP BY category_key, currency, level",
            summed("price", "level"),
            level_of(price)
        )
    }

    /// The upsert that adds `sign` (1 or -1) times these pairs to their
    /// level rows; `this` qualifies the level row's own columns
    /// (PostgreSQL needs it, SQLite refuses it in a trigger).
    fn add(&self, this: &str, sign: i32) -> String {
        format!(
            "INSERT INTO category_price_levels ({KEYS}, level, n, total)
            {}
            ON CONFLICT ({KEYS}, level) DO UPDATE
            SET n = {this}n + excluded.n,
                total = CASE WHEN {this}n + excluded.n = 0 THEN 0
                    ELSE {this}total + excluded.total END;",
            self.per_level(sign)
        )
    }
}

/// The level rows of every pair there is.
pub fn backfill() -> String {
    format!(
        "INSERT INTO category_price_levels ({KEYS}, level, n, total) {}",
        Pairs::all().per_level(1)
    )
}

/// A lowest price moved to another level row: its price, currency or
/// product changed.
fn price_moved(distinct: &str) -> String {
    ["price", "currency", "product_id"]
        .map(|c| format!("OLD.{c} {distinct} NEW.{c}"))
        .join(" OR ")
}

/// A category row now counts under another key or product.
fn category_moved(distinct: &str) -> String {
    ["category_key", "product_id"]
        .map(|c| format!("OLD.{c} {distinct} NEW.{c}"))
        .join(" OR ")
}

const PG_THIS: &str = "category_price_levels.";

fn postgres() -> Vec<String> {
    let function = |name: &str, pairs: fn(&str) -> Pairs| {
        format!(
            "CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP <> 'INSERT' THEN {} END IF;
                IF TG_OP <> 'DELETE' THEN {} END IF;
                RETURN NULL;
            END $$",
            pairs("OLD").add(PG_THIS, -1),
            pairs("NEW").add(PG_THIS, 1)
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
            price_moved("IS DISTINCT FROM"),
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
                pairs("NEW").add("", 1)
            ),
        ),
        (
            format!("{name}_update"),
            format!(
                "CREATE TRIGGER {name}_update AFTER UPDATE ON {table} WHEN {moved} BEGIN {} {} END",
                pairs("OLD").add("", -1),
                pairs("NEW").add("", 1)
            ),
        ),
        (
            format!("{name}_delete"),
            format!(
                "CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN {} END",
                pairs("OLD").add("", -1)
            ),
        ),
    ]
}

/// The SQLite triggers on `lowest_prices` that keep the category levels,
/// by name and statement (a bulk fill of `lowest_prices` drops and makes
/// them again, as migration 32's).
pub fn sqlite_price_triggers() -> [(String, String); 3] {
    sqlite_triggers(
        "lowest_prices",
        "price",
        Pairs::of_price,
        price_moved("IS NOT"),
    )
}

fn sqlite() -> Vec<String> {
    let on_categories = sqlite_triggers(
        "product_categories",
        "category",
        Pairs::of_category,
        category_moved("IS NOT"),
    );
    sqlite_price_triggers()
        .into_iter()
        .chain(on_categories)
        .map(|(_, create)| create)
        .collect()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let db = manager.get_connection();
        db.execute_unprepared(&table(backend)).await?;
        db.execute_unprepared(&backfill()).await?;
        let triggers = match backend {
            DbBackend::Postgres => postgres(),
            _ => sqlite(),
        };
        for sql in triggers {
            db.execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
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
}
