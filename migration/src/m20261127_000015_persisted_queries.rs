//! Automatic persisted queries: GraphQL query texts kept by the hex SHA-256
//! of their text, so a client can send the hash instead of the text (see the
//! service's `graphql::persisted`). One table shared by every replica;
//! `last_used_at` orders the eviction that keeps it within its configured
//! size, hence its index.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "persisted_queries";
const INDEX: &str = "persisted_queries_last_used";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(TABLE)
                    .col(string_len("hash", 64).primary_key())
                    .col(text("query"))
                    .col(timestamp_with_time_zone("created_at"))
                    .col(timestamp_with_time_zone("last_used_at"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(TABLE)
                    .col("last_used_at")
                    .col("hash")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(TABLE).to_owned())
            .await
    }
}
