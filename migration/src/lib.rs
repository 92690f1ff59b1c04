//! Vitrina's schema migrations, applied in order by `vitrina migrate` and on
//! every start of `vitrina serve`.

pub use sea_orm_migration::prelude::*;

mod kept_counts;
mod m20261122_000001_initial;
mod m20261122_000002_products_newest_desc;
mod m20261123_000003_category_newest;
mod m20261125_000004_submission_attempts;
mod m20261125_000012_webhook_in_flight;
mod m20261126_000013_webhook_secret_rotation;
mod m20261127_000014_webhook_redelivery;
mod m20261127_000015_persisted_queries;
mod m20261128_000016_seller_url_null;
mod m20261128_000017_idempotency_fingerprint;
mod m20261128_000018_persisted_query_owners;
mod m20261128_000019_product_stored_size;
mod m20261129_000022_retention_indexes;
mod m20261130_000023_product_counts;
mod m20261130_000024_products_trust_newest;
mod m20261201_000025_products_newest_covering;
mod m20261202_000026_lowest_prices;
mod m20261202_000027_product_orders;
mod m20261203_000028_price_webhooks;
mod m20261204_000029_key_scopes;
mod m20261205_000030_brand_counts;
mod m20261206_000031_name_pairs;
mod m20261207_000032_price_levels;
mod m20261208_000033_category_price_levels;
mod m20261209_000034_category_levels_by_price_columns;

pub use m20261206_000031_name_pairs::NAME_PAIRS;
pub use m20261207_000032_price_levels::{
    LAST_LEVEL as LAST_PRICE_LEVEL, OUTLYING_LOW as OUTLYING_PRICE_LEVEL,
};

/// A statement that fills a kept table afresh, on a backend.
type Fill = fn(sea_orm_migration::sea_orm::DbBackend) -> String;

/// The tables triggers keep, each with the statement that fills it afresh
/// from the tables it is kept from, in the order they must be filled.
fn kept_tables() -> [(&'static str, Fill); 5] {
    use m20261207_000032_price_levels as levels;
    use m20261208_000033_category_price_levels as category_levels;
    [
        ("product_counts", |_| {
            m20261130_000023_product_counts::BACKFILL.to_owned()
        }),
        ("brand_counts", |_| {
            m20261205_000030_brand_counts::BACKFILL.to_owned()
        }),
        ("lowest_prices", levels::lowest_prices_backfill),
        ("price_levels", levels::backfill),
        ("category_price_levels", category_levels::backfill),
    ]
}

/// The names of the tables [`kept_tables_backfill`] fills.
pub fn kept_table_names() -> Vec<&'static str> {
    kept_tables().map(|(table, _)| table).to_vec()
}

/// The statements that fill the tables triggers keep ([`kept_tables`])
/// afresh from the tables they are kept from, for a bulk load that drops
/// or disables the triggers of the tables it writes (`vitrina seed`).
/// `lowest_prices` is not one of the tables the load writes, so its own
/// triggers, which keep the price levels row by row, are disabled
/// (PostgreSQL) or dropped and made again (SQLite) around its fill.
pub fn kept_tables_backfill(backend: sea_orm_migration::sea_orm::DbBackend) -> Vec<String> {
    use m20261207_000032_price_levels as levels;
    use m20261208_000033_category_price_levels as category_levels;
    use sea_orm_migration::sea_orm::DbBackend;
    let sqlite_triggers = levels::sqlite_level_triggers()
        .map(|(name, create)| (name.to_owned(), create))
        .into_iter()
        .chain(category_levels::sqlite_price_triggers());
    let (off, on): (Vec<String>, Vec<String>) = match backend {
        DbBackend::Postgres => (
            vec!["ALTER TABLE lowest_prices DISABLE TRIGGER USER".to_owned()],
            vec!["ALTER TABLE lowest_prices ENABLE TRIGGER USER".to_owned()],
        ),
        _ => sqlite_triggers
            .map(|(name, create)| (format!("DROP TRIGGER {name}"), create))
            .unzip(),
    };
    let mut statements = off;
    for (table, fill) in kept_tables() {
        statements.extend([format!("DELETE FROM {table}"), fill(backend)]);
    }
    statements.extend(on);
    statements
}

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_initial::Migration),
            Box::new(m20261122_000002_products_newest_desc::Migration),
            Box::new(m20261123_000003_category_newest::Migration),
            Box::new(m20261125_000004_submission_attempts::Migration),
            Box::new(m20261125_000012_webhook_in_flight::Migration),
            Box::new(m20261126_000013_webhook_secret_rotation::Migration),
            Box::new(m20261127_000014_webhook_redelivery::Migration),
            Box::new(m20261127_000015_persisted_queries::Migration),
            Box::new(m20261128_000016_seller_url_null::Migration),
            Box::new(m20261128_000017_idempotency_fingerprint::Migration),
            Box::new(m20261128_000018_persisted_query_owners::Migration),
            Box::new(m20261128_000019_product_stored_size::Migration),
            Box::new(m20261129_000022_retention_indexes::Migration),
            Box::new(m20261130_000023_product_counts::Migration),
            Box::new(m20261130_000024_products_trust_newest::Migration),
            Box::new(m20261201_000025_products_newest_covering::Migration),
            Box::new(m20261202_000026_lowest_prices::Migration),
            Box::new(m20261202_000027_product_orders::Migration),
            Box::new(m20261203_000028_price_webhooks::Migration),
            Box::new(m20261204_000029_key_scopes::Migration),
            Box::new(m20261205_000030_brand_counts::Migration),
            Box::new(m20261206_000031_name_pairs::Migration),
            Box::new(m20261207_000032_price_levels::Migration),
            Box::new(m20261208_000033_category_price_levels::Migration),
            Box::new(m20261209_000034_category_levels_by_price_columns::Migration),
        ]
    }
}
