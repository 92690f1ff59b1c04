//! `submissions.attempts` counts the merges of a submission that began, so
//! that one which never finishes (it stops the worker, outlives its lease
//! each time) is rejected after a few tries instead of being claimed forever.
//! Rows already stored start at 0, like every new one.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "submissions";
const COLUMN: &str = "attempts";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .add_column(ColumnDef::new(COLUMN).integer().not_null().default(0))
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
