//! Secret rotation: after a rotation the superseded secret keeps signing
//! deliveries, next to the new one, until `previous_secret_expires_at`, so
//! receivers can switch secrets without refusing a delivery (see the
//! service's `webhooks::rotation`). Stored like `secret`, because every
//! delivery of the overlap is signed with it.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "webhook_subscriptions";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite's ALTER TABLE adds one at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .add_column(ColumnDef::new("previous_secret").string().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .add_column(
                        ColumnDef::new("previous_secret_expires_at")
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in ["previous_secret_expires_at", "previous_secret"] {
            manager
                .alter_table(Table::alter().table(TABLE).drop_column(column).to_owned())
                .await?;
        }
        Ok(())
    }
}
