//! A delivery whose attempt is under way holds one of its subscription's
//! attempts until the outcome is recorded (`in_flight`), so the delivery job
//! can reserve attempts against the auto-disable threshold before sending
//! them (see the service's `webhooks::delivery`). Counting a subscription's
//! attempts in flight reads `webhook_deliveries_in_flight`.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "webhook_deliveries";
const INDEX: &str = "webhook_deliveries_in_flight";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .add_column(
                        ColumnDef::new("in_flight")
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(TABLE)
                    .col("subscription_id")
                    .col("in_flight")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(INDEX).table(TABLE).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .drop_column("in_flight")
                    .to_owned(),
            )
            .await
    }
}
