//! API key scopes and expiry. `scopes` lists what a key may do, as
//! space-separated names (`read upload webhooks`); NULL in every key made
//! before this migration, which keeps all three. `expires_at` is when a key
//! stops authenticating; NULL for a key that never expires.
//!
//! NULL rather than a default: on SQLite, the first read of an older row
//! right after the column was added sometimes gave NULL for a `NOT NULL
//! DEFAULT` column (seen under load in the upgrade test, `key_scopes.rs`),
//! and NULL read as every scope is what such a key may do anyway.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "api_keys";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let scopes = ColumnDef::new("scopes").string().null().to_owned();
        let expires_at = ColumnDef::new("expires_at")
            .timestamp_with_time_zone()
            .null()
            .to_owned();
        // One column per statement: SQLite's ALTER TABLE adds one at a time.
        for mut column in [scopes, expires_at] {
            let add = Table::alter()
                .table(TABLE)
                .add_column(&mut column)
                .to_owned();
            manager.alter_table(add).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in ["expires_at", "scopes"] {
            let drop = Table::alter().table(TABLE).drop_column(column).to_owned();
            manager.alter_table(drop).await?;
        }
        Ok(())
    }
}
