//! `sellers.url` is NULL for a seller without a storefront URL, where it
//! was an empty string: a lookup by a URL that normalizes to nothing
//! matched every such seller. No lookup matches NULL.
//!
//! SQLite cannot make a column nullable in place (only by rebuilding the
//! table, which would cascade to the products referencing it), so the
//! column is replaced: a nullable one is added and filled, the old one and
//! its index dropped, the new one renamed and indexed. The same steps run
//! on PostgreSQL. `down` puts back a NOT NULL column, empty where NULL.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "sellers";
const COLUMN: &str = "url";
const REPLACEMENT: &str = "url_replacement";
const INDEX: &str = "sellers_url";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// In one transaction on SQLite too: every step then runs on one
    /// connection, and a failed step leaves the column as it was.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let nullable = ColumnDef::new(REPLACEMENT).string().null().to_owned();
        replace_column(manager, nullable, "NULLIF(url, '')").await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let required = ColumnDef::new(REPLACEMENT)
            .string()
            .not_null()
            .default("")
            .to_owned();
        replace_column(manager, required, "COALESCE(url, '')").await
    }
}

/// Replaces `sellers.url` with `column` (named [`REPLACEMENT`]) filled with
/// `value` (SQL over the old column), keeping its name and index.
async fn replace_column(
    manager: &SchemaManager<'_>,
    mut column: ColumnDef,
    value: &str,
) -> Result<(), DbErr> {
    let alter = || Table::alter().table(TABLE).to_owned();
    manager
        .alter_table(alter().add_column(&mut column).to_owned())
        .await?;
    manager
        .get_connection()
        .execute_unprepared(&format!("UPDATE {TABLE} SET {REPLACEMENT} = {value}"))
        .await?;
    manager
        .drop_index(Index::drop().name(INDEX).table(TABLE).to_owned())
        .await?;
    manager
        .alter_table(alter().drop_column(COLUMN).to_owned())
        .await?;
    manager
        .alter_table(alter().rename_column(REPLACEMENT, COLUMN).to_owned())
        .await?;
    manager
        .create_index(
            Index::create()
                .name(INDEX)
                .table(TABLE)
                .col(COLUMN)
                .to_owned(),
        )
        .await
}
