//! `products_name_pairs` (PostgreSQL): a trigram index over each product's
//! `name_search` with every character written twice, so that a part of two
//! characters (`qz`, `x1`), which has no trigram of its own and so nothing
//! to look up in `products_name_search_trgm`, has some (`qqz`, `qzz`).
//!
//! Without it, a page of such a part that few products hold walks the
//! whole newest-first list before it can answer: 473-506 ms for
//! `name_contains=qz` at 1,000,000 products (bench/README.md). The query
//! layer asks this index only when a probe of the newest products finds
//! the part rare (`query::name_parts`): the planner's estimates cannot
//! tell a rare pair from a common one, and a common pair read through the
//! index costs more than the walk. SQLite has no trigram index and keeps
//! walking.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The indexed expression; a query must write it exactly so for PostgreSQL
/// to match it to the index, with its constants as literals (a bound
/// parameter would not match in a generic plan).
pub const NAME_PAIRS: &str = r"regexp_replace(name_search, '(.)', '\1\1', 'g')";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        let create = format!(
            "CREATE INDEX products_name_pairs ON products USING gin (({NAME_PAIRS}) gin_trgm_ops)"
        );
        manager.get_connection().execute_unprepared(&create).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        let drop = "DROP INDEX products_name_pairs";
        manager.get_connection().execute_unprepared(drop).await?;
        Ok(())
    }
}
