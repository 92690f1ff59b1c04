//! Persisted queries per account: each account that registers or uses a
//! text owns it in `persisted_query_owners`, with its own `last_used_at`,
//! so an account's share of the store is its own rows there and evicting
//! one account's least recently used texts never touches another's (see
//! the service's `graphql::persisted`). A text stays while any account owns
//! it. The texts' own `last_used_at`, which ordered one eviction for all
//! accounts, goes with its index.
//!
//! Texts kept before this migration have no owner: they run as before
//! until the next text an account registers, which drops the texts no
//! account keeps; one used meanwhile is its user's.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

const TEXTS: &str = "persisted_queries";
const TEXTS_LAST_USED: &str = "persisted_queries_last_used";
const OWNERS: &str = "persisted_query_owners";
const OWNERS_LAST_USED: &str = "persisted_query_owners_last_used";
const OWNERS_HASH: &str = "persisted_query_owners_hash";

fn foreign_key(
    column: &'static str,
    table: &'static str,
    key: &'static str,
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .from(OWNERS, column)
        .to(table, key)
        .on_delete(ForeignKeyAction::Cascade)
        .to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// On SQLite too: one connection and all or nothing (an index dropped
    /// and made again must be seen by the statements that follow).
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OWNERS)
                    .col(uuid("account_id"))
                    .col(string_len("hash", 64))
                    .col(timestamp_with_time_zone("last_used_at"))
                    .primary_key(Index::create().col("account_id").col("hash"))
                    .foreign_key(&mut foreign_key("account_id", "accounts", "id"))
                    .foreign_key(&mut foreign_key("hash", TEXTS, "hash"))
                    .to_owned(),
            )
            .await?;
        // An account's least recently used first; a text's owners.
        manager
            .create_index(
                Index::create()
                    .name(OWNERS_LAST_USED)
                    .table(OWNERS)
                    .col("account_id")
                    .col("last_used_at")
                    .col("hash")
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(OWNERS_HASH)
                    .table(OWNERS)
                    .col("hash")
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(Index::drop().name(TEXTS_LAST_USED).table(TEXTS).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(TEXTS)
                    .drop_column("last_used_at")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds a NOT NULL column only with a constant default; the
        // texts then get their owners' last use, or their creation.
        manager
            .alter_table(
                Table::alter()
                    .table(TEXTS)
                    .add_column(
                        timestamp_with_time_zone("last_used_at")
                            .default("1970-01-01 00:00:00+00:00"),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(&format!(
                "UPDATE {TEXTS} SET last_used_at = COALESCE(\
                 (SELECT MAX(o.last_used_at) FROM {OWNERS} o WHERE o.hash = {TEXTS}.hash), \
                 created_at)"
            ))
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(TEXTS_LAST_USED)
                    .table(TEXTS)
                    .col("last_used_at")
                    .col("hash")
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(OWNERS).to_owned())
            .await
    }
}
