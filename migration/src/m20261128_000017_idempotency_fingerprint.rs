//! `scrape_sessions.request_fingerprint`: the hex SHA-256 of the upload's raw
//! body, kept with its `Idempotency-Key`, so that the key sent again with
//! another body is refused instead of answered with the first session.
//! Sessions stored before it have none (NULL): a key of theirs sent again is
//! answered as before, with the session it made (the service cannot tell
//! what their body was).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "scrape_sessions";
const COLUMN: &str = "request_fingerprint";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .add_column(ColumnDef::new(COLUMN).string_len(64).null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(TABLE).drop_column(COLUMN).to_owned())
            .await
    }
}
