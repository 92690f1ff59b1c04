//! `products_trust_newest` (`trust_status`, `first_seen_at` desc, `id`
//! desc): the products of one trust status in list order, as the other
//! filters of `GET /v1/products` have theirs (marketplace, brand, seller).
//! Without it a page of `trust_status=flagged` walked the whole list in
//! order, reading each product's row to test its status, so a deep page
//! read twenty rows for each one it skipped; with it the rows skipped are
//! index entries alone (an index-only scan).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "products";
const NAME: &str = "products_trust_newest";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(NAME)
                    .table(TABLE)
                    .col("trust_status")
                    .col(("first_seen_at", IndexOrder::Desc))
                    .col(("id", IndexOrder::Desc))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(NAME).table(TABLE).to_owned())
            .await
    }
}
