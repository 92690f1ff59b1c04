//! PostgreSQL: `COPY ... FROM STDIN (FORMAT binary, FREEZE)` into the
//! loaded tables, with their indexes and foreign keys dropped until the end.
//! FREEZE needs the tables emptied by `TRUNCATE` in the same transaction;
//! they are locked first and truncated only when they hold no row, so the
//! seed never deletes anything. The locks (ACCESS EXCLUSIVE, as `TRUNCATE`
//! and `DROP INDEX` take anyway) are waited for at most the connection's
//! `lock_timeout` (`VITRINA_DB_WAIT_MS`) and held until the commit: readers
//! of the catalog wait for the load, which is meant for a new database.
//!
//! The triggers of the loaded tables, which keep the kept tables
//! (`product_counts`, `lowest_prices`, the price levels ...), are disabled
//! for the load, and those tables filled once at the end, as the
//! migrations fill them. Their indexes are dropped too and built after
//! their fill: `lowest_prices` of 1,000,000 products took 17.7 s to fill
//! with its two indexes, 3.6 s without.
//!
//! The binary format spares both sides the text of timestamps, UUIDs and
//! numbers: the generator copies their bytes, and the server does not parse
//! them.
//!
//! FREEZE writes the rows frozen and their pages all-visible: neither the
//! first reads nor the closing VACUUM rewrite every page to set hint bits,
//! and counts can use index-only scans at once. What is dropped is read from
//! the catalog (`pg_get_indexdef`, `pg_get_constraintdef`) at the start and
//! created again from those definitions, so an index a later migration adds
//! comes back as it was.

use std::sync::Arc;
use std::time::Instant;

use chrono::Datelike;
use sea_orm::sqlx::postgres::PgRow;
use sea_orm::sqlx::{self, AssertSqlSafe, Postgres, Row, Transaction};
use sea_orm::{
    DatabaseConnection, DbBackend, DbErr, EntityTrait, IdenStatic, Iterable, ModelTrait,
    RuntimeErr, Value,
};

use super::{Encoder, Rows, occupied_tables_query, tables};

/// Memory each index build may sort in (the server's default is 64 MB, so a
/// million-row index would sort on disk). Set for the load's transaction
/// only.
const INDEX_BUILD_MEMORY: &str = "1GB";

/// A batch as `COPY` statements and their data, in binary format.
pub struct Batch {
    tables: Vec<(String, Vec<u8>)>,
}

impl Batch {
    pub fn of(rows: &Rows) -> Result<Self, DbErr> {
        let mut batch = Batch { tables: Vec::new() };
        rows.encode(&mut batch)?;
        Ok(batch)
    }
}

impl Encoder for Batch {
    fn table<E: EntityTrait>(&mut self, rows: &[E::Model]) -> Result<(), DbErr> {
        if rows.is_empty() {
            return Ok(());
        }
        let columns: Vec<E::Column> = E::Column::iter().collect();
        let names: Vec<String> = columns.iter().map(|c| quoted(c.as_str())).collect();
        let statement = format!(
            "COPY {} ({}) FROM STDIN (FORMAT binary, FREEZE)",
            quoted(E::default().table_name()),
            names.join(", ")
        );
        let fields = i16::try_from(columns.len())
            .map_err(|_| DbErr::Custom("a table with too many columns to copy".into()))?;
        let mut data = Vec::with_capacity(rows.len() * 32 * columns.len());
        // Signature, flags, header extension length.
        data.extend_from_slice(b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0");
        for row in rows {
            data.extend_from_slice(&fields.to_be_bytes());
            for column in &columns {
                copy_binary(&mut data, &row.get(*column))?;
            }
        }
        data.extend_from_slice(&(-1i16).to_be_bytes());
        self.tables.push((statement, data));
        Ok(())
    }
}

/// A load under way on one connection, in one transaction.
pub struct Load {
    txn: Transaction<'static, Postgres>,
    /// Statements that fill the kept tables, give them and the loaded tables
    /// back what the load took down, and set the sequences past the ids
    /// written.
    restore: Vec<String>,
}

impl Load {
    /// The load, or the loaded tables that hold rows (then nothing changed).
    pub async fn begin(db: &DatabaseConnection) -> Result<Result<Self, Vec<String>>, DbErr> {
        let mut txn = db
            .get_postgres_connection_pool()
            .begin()
            .await
            .map_err(exec)?;
        let tables: Vec<String> = tables().into_iter().map(quoted).collect();
        let kept: Vec<String> = migration::kept_table_names()
            .into_iter()
            .map(quoted)
            .collect();
        run(
            &mut txn,
            &format!("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE", tables.join(", ")),
        )
        .await?;
        let occupied: Vec<String> = sqlx::query_scalar(AssertSqlSafe(occupied_tables_query()))
            .fetch_all(&mut *txn)
            .await
            .map_err(exec)?;
        if !occupied.is_empty() {
            return Ok(Err(occupied));
        }
        let (drop, rebuild) = take_down(&mut txn, &[&tables[..], &kept[..]].concat()).await?;
        for statement in drop {
            run(&mut txn, &statement).await?;
        }
        let mut restore = migration::kept_tables_backfill(DbBackend::Postgres);
        restore.extend(rebuild);
        // The triggers that keep counts and lowest prices would write them
        // once per `COPY`; as on SQLite, they are filled once at the end.
        for table in &tables {
            run(
                &mut txn,
                &format!("ALTER TABLE {table} DISABLE TRIGGER USER"),
            )
            .await?;
            restore.push(format!("ALTER TABLE {table} ENABLE TRIGGER USER"));
        }
        run(&mut txn, &format!("TRUNCATE {}", tables.join(", "))).await?;
        run(
            &mut txn,
            &format!("SET LOCAL maintenance_work_mem = '{INDEX_BUILD_MEMORY}'"),
        )
        .await?;
        Ok(Ok(Load { txn, restore }))
    }

    pub async fn write(&mut self, batch: Batch) -> Result<(), DbErr> {
        for (statement, data) in batch.tables {
            let mut copy = self.txn.copy_in_raw(&statement).await.map_err(exec)?;
            copy.send(data).await.map_err(exec)?;
            copy.finish().await.map_err(exec)?;
        }
        Ok(())
    }

    pub async fn finish(mut self) -> Result<(), DbErr> {
        for statement in std::mem::take(&mut self.restore) {
            let started = Instant::now();
            run(&mut self.txn, &statement).await?;
            super::restored(&statement, started);
        }
        self.txn.commit().await.map_err(exec)
    }
}

/// What the load drops, in order, and what gives it back afterwards:
/// foreign keys from, to and between the loaded tables, their primary keys
/// and unique constraints, their other indexes; then the sequences of their
/// columns, to be set past the largest id loaded.
async fn take_down(
    txn: &mut Transaction<'static, Postgres>,
    tables: &[String],
) -> Result<(Vec<String>, Vec<String>), DbErr> {
    let constraints = sqlx::query(
        "SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', c.conrelid::regclass, c.conname),
                format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname,
                       pg_get_constraintdef(c.oid)),
                c.contype = 'f'
         FROM pg_constraint c
         WHERE (c.contype IN ('p', 'u') AND c.conrelid = ANY($1::text[]::regclass[]))
            OR (c.contype = 'f' AND (c.conrelid = ANY($1::text[]::regclass[])
                                     OR c.confrelid = ANY($1::text[]::regclass[])))
         ORDER BY c.conrelid, c.conname",
    )
    .bind(tables)
    .fetch_all(&mut **txn)
    .await
    .map_err(exec)?;
    let indexes = sqlx::query(
        "SELECT format('DROP INDEX %s', i.indexrelid::regclass), pg_get_indexdef(i.indexrelid)
         FROM pg_index i
         WHERE i.indrelid = ANY($1::text[]::regclass[])
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c
                           WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x'))
         ORDER BY i.indrelid, i.indexrelid::regclass::text",
    )
    .bind(tables)
    .fetch_all(&mut **txn)
    .await
    .map_err(exec)?;
    let sequences = sqlx::query(
        "SELECT format('SELECT setval(%L, coalesce(max(%I), 0) + 1, false) FROM %s',
                       pg_get_serial_sequence(a.attrelid::regclass::text, a.attname),
                       a.attname, a.attrelid::regclass)
         FROM pg_attribute a
         WHERE a.attrelid = ANY($1::text[]::regclass[]) AND a.attnum > 0
           AND NOT a.attisdropped
           AND pg_get_serial_sequence(a.attrelid::regclass::text, a.attname) IS NOT NULL
         ORDER BY a.attrelid, a.attnum",
    )
    .bind(tables)
    .fetch_all(&mut **txn)
    .await
    .map_err(exec)?;

    let text = |rows: &[PgRow], column: usize| -> Result<Vec<String>, DbErr> {
        rows.iter()
            .map(|row| row.try_get::<String, _>(column).map_err(exec))
            .collect()
    };
    let (foreign, keys): (Vec<PgRow>, Vec<PgRow>) = constraints
        .into_iter()
        .partition(|row| row.try_get::<bool, _>(2).unwrap_or(false));
    let drop = [text(&foreign, 0)?, text(&keys, 0)?, text(&indexes, 0)?].concat();
    let restore = [
        text(&keys, 1)?,
        text(&indexes, 1)?,
        text(&foreign, 1)?,
        text(&sequences, 0)?,
    ]
    .concat();
    Ok((drop, restore))
}

async fn run(txn: &mut Transaction<'static, Postgres>, statement: &str) -> Result<(), DbErr> {
    sqlx::raw_sql(AssertSqlSafe(statement))
        .execute(&mut **txn)
        .await
        .map(|_| ())
        .map_err(exec)
}

fn exec(err: sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}

/// An identifier in double quotes.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The seconds from the Unix epoch to PostgreSQL's, 2000-01-01 UTC.
const PG_EPOCH_SECONDS: i64 = 946_684_800;

/// The days from 0001-01-01 (chrono's count) to PostgreSQL's epoch.
const PG_EPOCH_DAYS_FROM_CE: i32 = 730_120;

/// Appends `value` as a field of `COPY`'s binary format: its length, then
/// the type's send form (`-1` alone for NULL). The form follows the value's
/// Rust type; a column of another type fails the `COPY` at once.
fn copy_binary(out: &mut Vec<u8>, value: &Value) -> Result<(), DbErr> {
    fn field(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    match value {
        Value::Bool(Some(b)) => field(out, &[u8::from(*b)]),
        Value::Int(Some(n)) => field(out, &n.to_be_bytes()),
        Value::BigInt(Some(n)) => field(out, &n.to_be_bytes()),
        Value::Double(Some(n)) => field(out, &n.to_be_bytes()),
        Value::String(Some(s)) => field(out, s.as_bytes()),
        Value::Json(Some(json)) => {
            // jsonb's send form: a version byte, then the text.
            let at = out.len();
            out.extend_from_slice(&[0, 0, 0, 0, 1]);
            serde_json::to_writer(&mut *out, json).map_err(|e| DbErr::Json(e.to_string()))?;
            let len = (out.len() - at - 4) as i32;
            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        Value::Uuid(Some(id)) => field(out, id.as_bytes()),
        Value::ChronoDateTimeUtc(Some(at)) => {
            let micros = at.timestamp_micros() - PG_EPOCH_SECONDS * 1_000_000;
            field(out, &micros.to_be_bytes());
        }
        Value::ChronoDate(Some(day)) => {
            let days = day.num_days_from_ce() - PG_EPOCH_DAYS_FROM_CE;
            field(out, &days.to_be_bytes());
        }
        Value::Bool(None)
        | Value::Int(None)
        | Value::BigInt(None)
        | Value::Double(None)
        | Value::String(None)
        | Value::Json(None)
        | Value::Uuid(None)
        | Value::ChronoDateTimeUtc(None)
        | Value::ChronoDate(None) => out.extend_from_slice(&(-1i32).to_be_bytes()),
        other => {
            return Err(DbErr::Custom(format!(
                "the seed cannot write a {other:?} value"
            )));
        }
    }
    Ok(())
}
