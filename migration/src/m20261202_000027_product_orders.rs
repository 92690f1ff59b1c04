//! The indexes of the products orders GraphQL `orderBy` adds, so a page in
//! each order walks its index (either way) and a deep cursor costs what the
//! first page costs: `LAST_SEEN` and `NAME`, each ending with the id. The
//! default order has `products_newest_desc`; `PRICE` has
//! `lowest_prices_by_price`.
//!
//! `last_seen_at` changes whenever a merge sees a product again, so its
//! index is written with it: one more index entry per merged product.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "products";
const INDEXES: [(&str, &str); 2] = [
    ("products_last_seen", "last_seen_at"),
    ("products_by_name", "name"),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, column) in INDEXES {
            let index = Index::create()
                .name(name)
                .table(TABLE)
                .col(column)
                .col("id")
                .to_owned();
            manager.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, _) in INDEXES {
            manager
                .drop_index(Index::drop().name(name).table(TABLE).to_owned())
                .await?;
        }
        Ok(())
    }
}
