//! Price-change webhooks: a subscription chooses its events
//! (`session_events` for `scrape_session.completed`, on for every existing
//! subscription; `price_events` for `product.price_changed`, off) and, for
//! price changes, a filter (`price_filter`, JSON: brands, product ids,
//! marketplaces, the least change).
//!
//! The outbox's rule "one delivery per subscription, session and event"
//! was for session completions; a session's merges may move many prices,
//! each its own delivery, so the partial unique index now covers
//! `scrape_session.completed` deliveries only.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const SUBSCRIPTIONS: &str = "webhook_subscriptions";
const DELIVERIES: &str = "webhook_deliveries";
const ONCE: &str = "webhook_deliveries_once";

fn once_index(completions_only: bool) -> IndexCreateStatement {
    let mut index = Index::create();
    index
        .name(ONCE)
        .table(DELIVERIES)
        .unique()
        .col("subscription_id")
        .col("session_id")
        .col("event")
        .and_where(Expr::col("redelivery_of").is_null());
    if completions_only {
        index.and_where(Expr::col("event").eq("scrape_session.completed"));
    }
    index.to_owned()
}

async fn replace_once_index(
    manager: &SchemaManager<'_>,
    completions_only: bool,
) -> Result<(), DbErr> {
    manager
        .drop_index(Index::drop().name(ONCE).table(DELIVERIES).to_owned())
        .await?;
    manager.create_index(once_index(completions_only)).await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One connection and all or nothing, as for the index's last change.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let columns = [
            ColumnDef::new("session_events")
                .boolean()
                .not_null()
                .default(true)
                .to_owned(),
            ColumnDef::new("price_events")
                .boolean()
                .not_null()
                .default(false)
                .to_owned(),
            ColumnDef::new("price_filter")
                .json_binary()
                .null()
                .to_owned(),
        ];
        for mut column in columns {
            let alter = Table::alter()
                .table(SUBSCRIPTIONS)
                .add_column(&mut column)
                .to_owned();
            manager.alter_table(alter).await?;
        }
        replace_once_index(manager, true).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Price deliveries would break the wider index: they go first, with
        // their attempts.
        let priced = Query::select()
            .column("id")
            .from(DELIVERIES)
            .and_where(Expr::col("event").ne("scrape_session.completed"))
            .to_owned();
        manager
            .exec_stmt(
                Query::delete()
                    .from_table("webhook_attempts")
                    .and_where(Expr::col("delivery_id").in_subquery(priced))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::delete()
                    .from_table(DELIVERIES)
                    .and_where(Expr::col("event").ne("scrape_session.completed"))
                    .to_owned(),
            )
            .await?;
        replace_once_index(manager, false).await?;
        for column in ["session_events", "price_events", "price_filter"] {
            let alter = Table::alter()
                .table(SUBSCRIPTIONS)
                .drop_column(column)
                .to_owned();
            manager.alter_table(alter).await?;
        }
        Ok(())
    }
}
