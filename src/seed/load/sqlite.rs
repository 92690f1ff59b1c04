//! SQLite: multi-row `INSERT`s, each as many rows as the bound-parameter
//! limit allows, in one transaction on a connection of the load's own.
//!
//! SQLite has only row triggers, so the triggers of the loaded tables are
//! dropped with their indexes, and the tables they keep (`product_counts`,
//! `lowest_prices`, the price levels ...) filled once at the end, as the
//! migrations fill them. The kept tables' own indexes are dropped too, and
//! made after their fill.
//!
//! That connection checks no foreign keys (the generator makes every
//! reference before it is used; a test runs `PRAGMA foreign_key_check`),
//! keeps a large page cache, so the indexes built at the end sort in memory,
//! and does not wait for the disk (`synchronous=OFF`) while it writes its
//! gigabytes through the WAL and the checkpoint at commit. The journal stays as the
//! database has it (WAL): if the process is killed, the transaction was
//! never committed and the file is as before the seed; only a crash of the
//! machine itself during the seed can leave a file to seed afresh. These
//! settings live on that connection alone and end with it.

use std::time::Instant;

use sea_orm::sqlx::sqlite::{SqlitePoolOptions, SqliteSynchronous};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr, EntityTrait,
    IdenStatic, Iterable, ModelTrait, SqlxSqliteConnector, Statement, Value,
};

use super::{Encoder, Rows, occupied_tables_query, tables};
use crate::db::MAX_PARAMS;

/// Page cache of the load's connection, in KiB: enough for the largest
/// index of a million products to be sorted in memory.
const CACHE_KIB: u32 = 512 * 1024;

/// A batch as `INSERT` statements with their values.
pub struct Batch {
    statements: Vec<Statement>,
}

impl Batch {
    pub fn of(rows: &Rows) -> Result<Self, DbErr> {
        let mut batch = Batch {
            statements: Vec::new(),
        };
        rows.encode(&mut batch)?;
        Ok(batch)
    }
}

impl Encoder for Batch {
    fn table<E: EntityTrait>(&mut self, rows: &[E::Model]) -> Result<(), DbErr> {
        let columns: Vec<E::Column> = E::Column::iter().collect();
        let names: Vec<String> = columns
            .iter()
            .map(|c| format!("\"{}\"", c.as_str()))
            .collect();
        let row_marks = format!("({})", vec!["?"; columns.len()].join(","));
        for chunk in rows.chunks((MAX_PARAMS / columns.len().max(1)).max(1)) {
            let sql = format!(
                "INSERT INTO \"{}\" ({}) VALUES {}",
                E::default().table_name(),
                names.join(","),
                vec![row_marks.as_str(); chunk.len()].join(",")
            );
            let values: Vec<Value> = chunk
                .iter()
                .flat_map(|row| columns.iter().map(|c| row.get(*c)))
                .collect();
            self.statements.push(Statement::from_sql_and_values(
                DbBackend::Sqlite,
                sql,
                values,
            ));
        }
        Ok(())
    }
}

/// A load under way on its own connection, in one transaction.
pub struct Load {
    connection: DatabaseConnection,
    txn: DatabaseTransaction,
    /// The `CREATE INDEX` and `CREATE TRIGGER` statements of what was
    /// dropped, then the fills of the tables those triggers keep.
    restore: Vec<String>,
}

impl Load {
    /// The load, or the loaded tables that hold rows (then nothing changed).
    /// Its transaction holds the write lock from the start, so no writer
    /// slips in between the check and the load.
    pub async fn begin(db: &DatabaseConnection) -> Result<Result<Self, Vec<String>>, DbErr> {
        let options = db
            .get_sqlite_connection_pool()
            .connect_options()
            .as_ref()
            .clone()
            .foreign_keys(false)
            .synchronous(SqliteSynchronous::Off)
            .pragma("cache_size", format!("-{CACHE_KIB}"));
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(|e| DbErr::Conn(sea_orm::RuntimeErr::SqlxError(e.into())))?;
        let connection = SqlxSqliteConnector::from_sqlx_sqlite_pool(pool);
        let txn = crate::db::begin_write(&connection).await?;
        let occupied = txn
            .query_all_raw(Statement::from_string(
                DbBackend::Sqlite,
                occupied_tables_query(),
            ))
            .await?
            .iter()
            .map(|row| row.try_get_by_index(0))
            .collect::<Result<Vec<String>, _>>()?;
        if !occupied.is_empty() {
            return Ok(Err(occupied));
        }
        let listed = |tables: Vec<&str>| -> String {
            let names: Vec<String> = tables.iter().map(|t| format!("'{t}'")).collect();
            names.join(", ")
        };
        let taken_down = txn
            .query_all_raw(Statement::from_string(
                DbBackend::Sqlite,
                format!(
                    "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL \
                     AND (type IN ('index', 'trigger') AND tbl_name IN ({}) \
                          OR type = 'index' AND tbl_name IN ({})) \
                     ORDER BY type, name",
                    listed(tables()),
                    listed(migration::kept_table_names())
                ),
            ))
            .await?;
        // What the triggers would have kept, filled once at the end, then
        // what was taken down.
        let mut restore = migration::kept_tables_backfill(DbBackend::Sqlite);
        for item in taken_down {
            let (kind, name): (String, String) =
                (item.try_get("", "type")?, item.try_get("", "name")?);
            txn.execute_unprepared(&format!("DROP {kind} \"{name}\""))
                .await?;
            restore.push(item.try_get("", "sql")?);
        }
        Ok(Ok(Load {
            connection,
            txn,
            restore,
        }))
    }

    pub async fn write(&mut self, batch: Batch) -> Result<(), DbErr> {
        for statement in batch.statements {
            self.txn.execute_raw(statement).await?;
        }
        Ok(())
    }

    pub async fn finish(self) -> Result<(), DbErr> {
        for sql in &self.restore {
            let started = Instant::now();
            self.txn.execute_unprepared(sql).await?;
            super::restored(sql, started);
        }
        self.txn.commit().await?;
        self.connection.close().await
    }
}
