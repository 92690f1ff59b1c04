//! Redelivery: a finished delivery can be sent again as a new delivery that
//! points at the one it repeats (`redelivery_of`). The outbox's rule "one
//! delivery per subscription, session and event" now holds for the deliveries
//! the events themselves cause (`redelivery_of IS NULL`): a partial unique
//! index replaces the full one, so redeliveries of one event may coexist.
//! No foreign key: retention may purge the original before its redelivery.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "webhook_deliveries";
const COLUMN: &str = "redelivery_of";
const ONCE: &str = "webhook_deliveries_once";
const ONCE_COLUMNS: [&str; 3] = ["subscription_id", "session_id", "event"];

fn once_index(partial: bool) -> IndexCreateStatement {
    let mut index = Index::create();
    index.name(ONCE).table(TABLE).unique();
    for col in ONCE_COLUMNS {
        index.col(col);
    }
    if partial {
        index.and_where(Expr::col(COLUMN).is_null());
    }
    index.to_owned()
}

async fn drop_once_index(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .drop_index(Index::drop().name(ONCE).table(TABLE).to_owned())
        .await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// On SQLite too: one connection and all or nothing. Statements of a
    /// migration run without a transaction go to any connection of the
    /// pool, and one whose read snapshot predates the DROP INDEX still sees
    /// the index when asked to create it again.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .add_column(ColumnDef::new(COLUMN).uuid().null())
                    .to_owned(),
            )
            .await?;
        drop_once_index(manager).await?;
        manager.create_index(once_index(true)).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Redeliveries would break the full unique index: they go first,
        // with their attempts.
        let redeliveries = Query::select()
            .column("id")
            .from(TABLE)
            .and_where(Expr::col(COLUMN).is_not_null())
            .to_owned();
        manager
            .exec_stmt(
                Query::delete()
                    .from_table("webhook_attempts")
                    .and_where(Expr::col("delivery_id").in_subquery(redeliveries))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::delete()
                    .from_table(TABLE)
                    .and_where(Expr::col(COLUMN).is_not_null())
                    .to_owned(),
            )
            .await?;
        drop_once_index(manager).await?;
        manager.create_index(once_index(false)).await?;
        manager
            .alter_table(Table::alter().table(TABLE).drop_column(COLUMN).to_owned())
            .await
    }
}
