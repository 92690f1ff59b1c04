//! Indexes that let retention delete in small batches, oldest first,
//! reading only the rows it deletes (`jobs::retention` in the service):
//! - `webhook_deliveries_finished` (`finished_at`): without it each batch
//!   of finished deliveries scanned the whole table;
//! - `price_observations_age` (`recorded_at`, `id`): the price history is
//!   walked in that order from where the last pass stopped, so a pass reads
//!   what aged out since, not the history kept. Its size and its cost to
//!   the merge's inserts are not measured yet (issue 28, item 6).
//!
//! Submissions already have theirs (`submissions_age`).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

fn indexes() -> [(&'static str, &'static str, &'static [&'static str]); 2] {
    [
        (
            "webhook_deliveries",
            "webhook_deliveries_finished",
            &["finished_at"],
        ),
        (
            "price_observations",
            "price_observations_age",
            &["recorded_at", "id"],
        ),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (table, name, columns) in indexes() {
            let mut index = Index::create();
            index.name(name).table(table);
            for column in columns {
                index.col(*column);
            }
            manager.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (table, name, _) in indexes() {
            manager
                .drop_index(Index::drop().name(name).table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
