//! What the migrations of kept counts share (`product_counts`,
//! `brand_counts`): each is a table named like its triggers
//! (`{table}_insert`, `_delete`, `_update`, `_truncate`) and, on
//! PostgreSQL, their functions (`{table}_add`, `_move`, `_clear`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

/// Runs the statements that create the table of kept counts on the
/// database's backend.
pub async fn create(
    manager: &SchemaManager<'_>,
    postgres: fn() -> Vec<String>,
    sqlite: fn() -> Vec<String>,
) -> Result<(), DbErr> {
    let statements = match manager.get_database_backend() {
        DbBackend::Postgres => postgres(),
        _ => sqlite(),
    };
    let db = manager.get_connection();
    for sql in statements {
        db.execute_unprepared(&sql).await?;
    }
    Ok(())
}

/// Drops `table`, its triggers and their functions.
pub async fn drop(manager: &SchemaManager<'_>, table: &str) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    let db = manager.get_connection();
    for trigger in ["insert", "delete", "update", "truncate"] {
        let drop = match backend {
            DbBackend::Postgres => format!("DROP TRIGGER IF EXISTS {table}_{trigger} ON products"),
            _ => format!("DROP TRIGGER IF EXISTS {table}_{trigger}"),
        };
        db.execute_unprepared(&drop).await?;
    }
    if backend == DbBackend::Postgres {
        for function in ["add", "move", "clear"] {
            db.execute_unprepared(&format!("DROP FUNCTION {table}_{function}()"))
                .await?;
        }
    }
    db.execute_unprepared(&format!("DROP TABLE {table}"))
        .await?;
    Ok(())
}
