//! Connecting to the database and keeping its schema current.
//!
//! SQLite is the embedded default: the file and its folder are created on first
//! start, in WAL mode so readers do not block the merge job. PostgreSQL is the
//! production store. Only the commands that migrate create a database; the
//! others open one that exists and is migrated, or say which command to run.
//! A database that cannot be reached or opened is reported at once, in words
//! that say what to do ([`OpenError`]).
//!
//! Once serving, no statement waits longer than `VITRINA_DB_WAIT_MS` for a
//! pooled connection, nor again as long for a lock (SQLite's busy timeout,
//! PostgreSQL's `lock_timeout`); a database out of reach that long is
//! answered 503 `unavailable` ([`is_unavailable`]), within the request
//! deadline, and `/readyz` fails meanwhile ([`ready`]).

mod availability;

pub use availability::is_unavailable;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use migration::{Migrator, MigratorTrait};
use sea_orm::sqlx::{self, ConnectOptions as _, Connection as _, postgres::PgConnectOptions};
use sea_orm::{
    ActiveModelTrait, ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend,
    DbErr, EntityTrait, Iterable, TransactionTrait,
};

use crate::config::DatabaseConfig;
use crate::error::{Error, OpenError, database_message, sqlx_error};

/// How long the first connection may take. A server that refuses, a host
/// that does not resolve, a wrong user or database are answered at once; only
/// a host that never answers makes start-up wait this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens a connection pool, creating a missing SQLite file and its folder:
/// for the commands that migrate (`serve`, `migrate`, `seed`).
pub async fn connect(config: &DatabaseConfig) -> Result<DatabaseConnection, Error> {
    open(config, true).await
}

/// Opens a connection pool for a command that needs a database ready: one
/// that does not exist, or has migrations pending, is refused and nothing is
/// created.
pub async fn connect_migrated(config: &DatabaseConfig) -> Result<DatabaseConnection, Error> {
    let db = open(config, false).await?;
    let pending = Migrator::get_pending_migrations_read_only(&db).await?.len();
    if pending > 0 {
        return Err(OpenError::NotMigrated {
            database: pool_info(&db).url,
            pending,
            total: Migrator::migrations().len(),
        }
        .into());
    }
    Ok(db)
}

/// PostgreSQL's JIT compilation, off for the service's sessions. It starts
/// at a plan's estimated cost (`jit_above_cost`), and estimates grow with
/// the tables: at 1,000,000 products a page of 100 products named by a
/// common part (its walk estimated at 102,000) was compiled on each request,
/// 30-44 ms of a statement that runs in 10 ms, where at 100,000 it was not.
/// The statements that run long (trends over broad filters) were as fast
/// without it (bench/README.md, "JIT").
const JIT: &str = "off";

async fn open(config: &DatabaseConfig, create: bool) -> Result<DatabaseConnection, Error> {
    let url = config.database_url.trim();
    let backend = backend_of(url)?;
    let sqlite_file = sqlite_file(url).filter(|_| backend == DbBackend::Sqlite);
    match (backend, &sqlite_file) {
        (DbBackend::Sqlite, Some(path)) => prepare_sqlite_file(path, create)?,
        (DbBackend::Postgres, _) => probe_postgres(url).await?,
        _ => {}
    }
    let wait = Duration::from_millis(config.db_wait_ms);
    let workers = config.db_parallel_workers;
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(pool_size(config.db_max_connections, backend))
        .min_connections(1)
        .connect_timeout(CONNECT_TIMEOUT)
        .acquire_timeout(wait)
        // Pinging on every acquire costs a round trip per statement (a REST
        // product page sends six). Only a connection idle long enough to have
        // been dropped by the server or a proxy is checked before use.
        .test_before_acquire_if_idle_for(Duration::from_secs(30))
        .sqlx_logging(false)
        .map_sqlx_postgres_opts(move |opts| {
            opts.options([
                ("lock_timeout", format!("{}ms", wait.as_millis())),
                ("jit", JIT.to_owned()),
                ("max_parallel_workers_per_gather", workers.to_string()),
            ])
        })
        .map_sqlx_sqlite_opts(move |opts| {
            opts.create_if_missing(create)
                .journal_mode(sea_orm::sqlx::sqlite::SqliteJournalMode::Wal)
                .synchronous(sea_orm::sqlx::sqlite::SqliteSynchronous::Normal)
                .busy_timeout(wait)
                .foreign_keys(true)
        });
    Database::connect(options)
        .await
        .map_err(|err| open_failed(sqlite_file, &err))
}

/// Applies every pending migration and returns the names of those it
/// applied. Safe to run again at any time.
///
/// On SQLite all of them run on one connection, in one transaction. SQLite
/// parses an `ALTER TABLE` against the schema its connection last read, and
/// checks that schema again only for statements on data: run through the
/// pool, a migration's second `ALTER TABLE` could land on a connection that
/// had not seen the first one's column, and fail, or lose it (seen in the
/// tests as a key whose new `scopes` column read NULL). Other connections
/// of the pool read the new schema before their next statement.
pub async fn migrate(db: &DatabaseConnection) -> Result<Vec<String>, Error> {
    let pending = Migrator::get_pending_migrations_read_only(db)
        .await?
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    if db.get_database_backend() == DbBackend::Sqlite {
        let txn = begin_write(db).await?;
        Migrator::up(&txn, None).await?;
        txn.commit().await?;
    } else {
        Migrator::up(db, None).await?;
    }
    Ok(pending)
}

/// Longest the readiness probe waits for the database (a connection, and on
/// SQLite the write lock): load balancers give a probe a second or a few.
const READY_WAIT: Duration = Duration::from_millis(1000);

/// Whether requests can use the database now, for the readiness probe: a
/// connection is handed out and answers within [`READY_WAIT`], and on
/// SQLite the write lock can be taken (a plain `SELECT 1` still succeeds
/// while another process holds it, but every upload fails).
pub async fn ready(db: &DatabaseConnection) -> bool {
    let check = match db.get_database_backend() {
        DbBackend::Sqlite => {
            // Spawned: a probe given up mid-way must not hand its
            // connection back with the busy timeout changed.
            let pool = db.get_sqlite_connection_pool().clone();
            let wait = READY_WAIT;
            let writable = tokio::spawn(async move { sqlite_writable(&pool, wait).await });
            futures_util::future::Either::Left(async { matches!(writable.await, Ok(true)) })
        }
        _ => futures_util::future::Either::Right(async { db.ping().await.is_ok() }),
    };
    tokio::time::timeout(READY_WAIT * 2, check)
        .await
        .unwrap_or(false)
}

/// Takes SQLite's write lock and gives it back, waiting at most `wait` for
/// it, on a connection of `pool` whose own busy timeout is then restored.
async fn sqlite_writable(pool: &sqlx::SqlitePool, wait: Duration) -> bool {
    let Ok(Ok(mut conn)) = tokio::time::timeout(wait, pool.acquire()).await else {
        return false;
    };
    let busy: Result<i64, _> = sqlx::query_scalar("PRAGMA busy_timeout")
        .fetch_one(&mut *conn)
        .await;
    let Ok(busy) = busy else {
        return false;
    };
    // Only integers are written into it.
    let set = |ms: i64| sqlx::AssertSqlSafe(format!("PRAGMA busy_timeout = {ms}"));
    let wait_ms = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
    let mut writable = sqlx::raw_sql(set(wait_ms))
        .execute(&mut *conn)
        .await
        .is_ok()
        && sqlx::raw_sql("BEGIN IMMEDIATE")
            .execute(&mut *conn)
            .await
            .is_ok();
    if writable {
        writable = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await.is_ok();
    }
    if sqlx::raw_sql(set(busy)).execute(&mut *conn).await.is_err() {
        // Not handed back with another busy timeout than the pool's.
        conn.detach();
    }
    writable
}

/// The pool size: as configured, else by backend. SQLite runs every query
/// on this machine's cores and each connection keeps its own page cache, so
/// connections beyond the cores add memory, not throughput (measured: 4
/// connections answered 8 clients faster than 16, in half the memory).
fn pool_size(configured: Option<u32>, backend: DbBackend) -> u32 {
    configured.unwrap_or_else(|| match backend {
        DbBackend::Sqlite => {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
            (2 * cores).max(4)
        }
        _ => 16,
    })
}

fn backend_of(url: &str) -> Result<DbBackend, Error> {
    if url.starts_with("sqlite:") {
        Ok(DbBackend::Sqlite)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(DbBackend::Postgres)
    } else {
        Err(Error::DatabaseUrl(
            "expected sqlite://<file> or postgres://<user>@<host>/<database>".into(),
        ))
    }
}

/// SQLite's result code for a file it cannot open (SQLITE_CANTOPEN).
const SQLITE_CANTOPEN: &str = "14";

/// The file of a SQLite URL: `sqlite://data/vitrina.db?mode=rwc` ->
/// `data/vitrina.db`; `None` for an in-memory database.
fn sqlite_file(url: &str) -> Option<PathBuf> {
    let path = url
        .trim_start_matches("sqlite:")
        .trim_start_matches("//")
        .split('?')
        .next()
        .unwrap_or_default();
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

/// Creates the folder of a SQLite file, or, when the command may not create
/// the database, makes sure the file exists.
fn prepare_sqlite_file(path: &Path, create: bool) -> Result<(), OpenError> {
    match (create, path.parent().filter(|p| !p.as_os_str().is_empty())) {
        (false, _) if !path.exists() => Err(OpenError::NoDatabase {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_owned()),
        }),
        (true, Some(folder)) => {
            std::fs::create_dir_all(folder).map_err(|source| OpenError::SqliteFolder {
                path: folder.to_owned(),
                source,
            })
        }
        _ => Ok(()),
    }
}

/// Opens and closes one PostgreSQL connection, so that what is wrong is
/// reported at once: the pool would retry a refused connection until its
/// acquire timeout and then say only that it timed out.
async fn probe_postgres(url: &str) -> Result<(), Error> {
    let options = PgConnectOptions::from_str(url).map_err(|e| Error::DatabaseUrl(e.to_string()))?;
    let probe = async {
        if options.get_socket().is_none()
            && tokio::net::lookup_host((options.get_host(), options.get_port()))
                .await
                .is_err()
        {
            return Err(OpenError::UnknownHost {
                host: options.get_host().to_owned(),
            }
            .into());
        }
        let conn = options
            .connect()
            .await
            .map_err(|e| postgres_error(&options, &e))?;
        conn.close().await.ok();
        Ok(())
    };
    tokio::time::timeout(CONNECT_TIMEOUT, probe)
        .await
        .unwrap_or_else(|_| {
            Err(OpenError::NoAnswer {
                address: postgres_address(&options),
                waited: CONNECT_TIMEOUT,
            }
            .into())
        })
}

/// Says what went wrong when the pool opened its first connection (on
/// PostgreSQL, the probe has already named the usual causes).
fn open_failed(sqlite_file: Option<PathBuf>, err: &DbErr) -> Error {
    match (sqlx_error(err), sqlite_file) {
        (Some(sqlx::Error::Database(db)), Some(path))
            if db.code().as_deref() == Some(SQLITE_CANTOPEN) =>
        {
            OpenError::SqliteFile {
                path,
                reason: db.message().to_owned(),
            }
            .into()
        }
        _ => OpenError::Other(database_message(err)).into(),
    }
}

/// Turns a failed PostgreSQL connection into what the operator should do.
fn postgres_error(options: &PgConnectOptions, err: &sqlx::Error) -> Error {
    let address = postgres_address(options);
    let user = options.get_username();
    match err {
        sqlx::Error::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            OpenError::Refused { address }.into()
        }
        sqlx::Error::Database(db) => match db.code().as_deref() {
            // invalid_password, invalid_authorization_specification (no such
            // role, or pg_hba.conf allows no way in).
            Some("28P01" | "28000") => OpenError::Authentication {
                address,
                user: user.to_owned(),
                reason: db.message().to_owned(),
            }
            .into(),
            // invalid_catalog_name
            Some("3D000") => {
                let name = options.get_database().unwrap_or(user);
                let port = match options.get_port() {
                    5432 => String::new(),
                    port => format!(" -p {port}"),
                };
                OpenError::MissingDatabase {
                    name: name.to_owned(),
                    createdb_args: format!("-h {}{port} -U {user} {name}", options.get_host()),
                    address,
                }
                .into()
            }
            _ => OpenError::Other(db.message().to_owned()).into(),
        },
        // sqlx's text of these ends with its own source position.
        sqlx::Error::Protocol(_) => OpenError::NotPostgres { address }.into(),
        sqlx::Error::Configuration(e) => Error::DatabaseUrl(e.to_string()),
        other => OpenError::Other(other.to_string()).into(),
    }
}

fn postgres_address(options: &PgConnectOptions) -> String {
    match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    }
}

/// Where a pool connects, as an operator may read it: the URL never carries
/// the password.
#[derive(Debug, Clone)]
pub struct PoolInfo {
    pub url: String,
    pub max_connections: u32,
}

pub fn pool_info(db: &DatabaseConnection) -> PoolInfo {
    match db.get_database_backend() {
        DbBackend::Postgres => {
            let pool = db.get_postgres_connection_pool();
            let options = pool.connect_options();
            PoolInfo {
                url: format!(
                    "postgres://{}@{}/{}",
                    options.get_username(),
                    postgres_address(&options),
                    options.get_database().unwrap_or(options.get_username())
                ),
                max_connections: pool.options().get_max_connections(),
            }
        }
        DbBackend::Sqlite => {
            let pool = db.get_sqlite_connection_pool();
            PoolInfo {
                url: format!(
                    "sqlite://{}",
                    pool.connect_options().get_filename().display()
                ),
                max_connections: pool.options().get_max_connections(),
            }
        }
        other => PoolInfo {
            url: format!("{other:?}"),
            max_connections: 0,
        },
    }
}

/// Bound parameters per statement, below SQLite's limit of 32,766 (PostgreSQL
/// allows 65,535).
pub(crate) const MAX_PARAMS: usize = 30_000;

/// Inserts many rows with as few multi-row INSERT statements as the
/// parameter limits allow.
pub async fn insert_batched<A>(db: &impl ConnectionTrait, rows: Vec<A>) -> Result<(), DbErr>
where
    A: ActiveModelTrait,
{
    let columns = <A::Entity as EntityTrait>::Column::iter().count().max(1);
    let per_statement = (MAX_PARAMS / columns).max(1);
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<A> = rows.by_ref().take(per_statement).collect();
        <A::Entity as EntityTrait>::insert_many(chunk)
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
}

/// Refreshes the query planner's statistics after a bulk load. Until they
/// exist (autovacuum may be off, or not have come round yet), PostgreSQL
/// plans the batched lookups of a page as scans of whole tables. There,
/// VACUUM also marks the new pages all-visible, so counts and deep pages can
/// read their indexes alone. On SQLite the load left a write-ahead log as
/// large as what it wrote, which checkpoints only reuse: it is copied into
/// the database and truncated.
pub async fn refresh_statistics(db: &DatabaseConnection) -> Result<(), DbErr> {
    let statements: &[&str] = match db.get_database_backend() {
        DbBackend::Postgres => &["VACUUM ANALYZE"],
        _ => &["ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)"],
    };
    for sql in statements {
        db.execute_unprepared(sql).await?;
    }
    Ok(())
}

/// Begins a transaction that will write. On SQLite it takes the write lock up
/// front (`BEGIN IMMEDIATE`), so it waits for other writers instead of failing
/// when it upgrades from reading.
pub async fn begin_write(db: &DatabaseConnection) -> Result<sea_orm::DatabaseTransaction, DbErr> {
    use sea_orm::{SqliteTransactionMode, TransactionOptions};
    db.begin_with_options(TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..Default::default()
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(url: &str, configured: Option<u32>) -> u32 {
        pool_size(configured, backend_of(url).unwrap())
    }

    #[test]
    fn the_pool_size_follows_the_backend_unless_configured() {
        let cores = std::thread::available_parallelism().unwrap().get() as u32;
        assert_eq!(pool("sqlite://data/v.db", None), (2 * cores).max(4));
        assert_eq!(pool("postgres://u@h/db", None), 16);
        assert_eq!(pool("sqlite://data/v.db", Some(9)), 9);
        assert_eq!(pool("postgres://u@h/db", Some(3)), 3);
    }
}
