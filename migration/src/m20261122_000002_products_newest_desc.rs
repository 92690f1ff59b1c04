//! `products_newest` as first created had `first_seen_at` ascending and `id`
//! descending, so "newest first" (`first_seen_at DESC, id DESC`) could only
//! read it with a sort on top, and a deep page sorted every row before it.
//! `products_newest_desc` has both columns descending and serves that order
//! straight from the index; it replaces the old one.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// "Newest first" over products, `first_seen_at` in the given order.
fn newest(name: &str, first_seen_at: IndexOrder) -> IndexCreateStatement {
    Index::create()
        .name(name)
        .table("products")
        .col(("first_seen_at", first_seen_at))
        .col(("id", IndexOrder::Desc))
        .to_owned()
}

fn drop(name: &str) -> IndexDropStatement {
    Index::drop().name(name).table("products").to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(newest("products_newest_desc", IndexOrder::Desc))
            .await?;
        manager.drop_index(drop("products_newest")).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(newest("products_newest", IndexOrder::Asc))
            .await?;
        manager.drop_index(drop("products_newest_desc")).await
    }
}
