//! `products_newest_desc` also carries the two texts a substring filter
//! tests (`name_search`, `seller_code_key`), so a page of `name_contains`
//! or `seller_code_contains` walks the list in order through the index
//! alone, testing each entry there, instead of reading every product's row
//! it skips. On PostgreSQL they are `INCLUDE`d (carried, not sorted on);
//! SQLite has no `INCLUDE`, so they follow the order's columns.
//!
//! Measured on PostgreSQL with 1,000,000 products: the ids of page 100 of
//! `name_contains=black` (14% of products) 221 ms -> 30 ms; the index grows
//! from 39 to 168 MB.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "products";
const NAME: &str = "products_newest_desc";
const CARRIED: [&str; 2] = ["name_search", "seller_code_key"];

/// "Newest first" over products, carrying the substring filters' texts
/// when `covering`.
fn newest(backend: DbBackend, covering: bool) -> IndexCreateStatement {
    let mut index = Index::create();
    index
        .name(NAME)
        .table(TABLE)
        .col(("first_seen_at", IndexOrder::Desc))
        .col(("id", IndexOrder::Desc));
    if covering {
        for column in CARRIED {
            match backend {
                DbBackend::Postgres => index.include(column),
                _ => index.col(column),
            };
        }
    }
    index.to_owned()
}

/// Replaces the index in one batch on one connection: on SQLite, a
/// `CREATE INDEX` prepared on another connection of the pool than the
/// `DROP INDEX` may still see the old index and fail.
async fn replace(manager: &SchemaManager<'_>, covering: bool) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    let drop = backend.build(&Index::drop().name(NAME).table(TABLE).to_owned());
    let create = backend.build(&newest(backend, covering));
    manager
        .get_connection()
        .execute_unprepared(&format!("{drop}; {create}"))
        .await
        .map(|_| ())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        replace(manager, true).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        replace(manager, false).await
    }
}
