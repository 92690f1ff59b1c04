//! Bulk loading of the generated rows, one loader per backend.
//!
//! The generator encodes each batch for its backend ([`Encoding`]) on its own
//! thread, so the database works on one batch while the next is made. The
//! whole load is one transaction: the secondary indexes and the foreign keys
//! of the loaded tables, and the indexes of the tables kept from them
//! (`migration::kept_table_names`), are dropped at its start and built again
//! from their own definitions at its end, after the kept tables are filled
//! (a sorted build is several times faster than keeping them up to date row
//! by row), so the schema is the same after the load, and a load that is
//! stopped part-way leaves the database as it was.

mod postgres;
mod sqlite;

use std::time::Instant;

use entity::{
    current_price, price_observation, product, product_category, product_translation, seller,
    special_price,
};
use sea_orm::{DatabaseConnection, DbBackend, DbErr, EntityTrait};

/// Rows to write, parents before children.
#[derive(Debug, Default)]
pub struct Rows {
    pub sellers: Vec<seller::Model>,
    pub products: Vec<product::Model>,
    pub translations: Vec<product_translation::Model>,
    pub categories: Vec<product_category::Model>,
    pub observations: Vec<price_observation::Model>,
    pub current: Vec<current_price::Model>,
    pub special: Vec<special_price::Model>,
}

impl Rows {
    /// Hands each table's rows to `to`, parents first.
    fn encode(&self, to: &mut impl Encoder) -> Result<(), DbErr> {
        to.table::<seller::Entity>(&self.sellers)?;
        to.table::<product::Entity>(&self.products)?;
        to.table::<product_translation::Entity>(&self.translations)?;
        to.table::<product_category::Entity>(&self.categories)?;
        to.table::<price_observation::Entity>(&self.observations)?;
        to.table::<current_price::Entity>(&self.current)?;
        to.table::<special_price::Entity>(&self.special)
    }
}

/// Writes the rows of one table into a backend's form.
trait Encoder {
    fn table<E: EntityTrait>(&mut self, rows: &[E::Model]) -> Result<(), DbErr>;
}

/// The names of the tables [`Rows`] fills.
fn tables() -> Vec<&'static str> {
    struct Names(Vec<&'static str>);
    impl Encoder for Names {
        fn table<E: EntityTrait>(&mut self, _: &[E::Model]) -> Result<(), DbErr> {
            self.0.push(E::default().table_name());
            Ok(())
        }
    }
    let mut names = Names(Vec::new());
    // Naming tables cannot fail.
    let _ = Rows::default().encode(&mut names);
    names.0
}

/// Logs (at debug level) a statement that ends a load, from `started`:
/// where the time after the rows went, statement by statement.
fn restored(statement: &str, started: Instant) {
    let first_line = statement.lines().next().unwrap_or_default();
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "seed: {first_line}"
    );
}

/// How a batch is encoded for the database it goes to.
#[derive(Debug, Clone, Copy)]
pub enum Encoding {
    /// PostgreSQL's `COPY ... FROM STDIN`, text format.
    Copy,
    /// SQLite's multi-row `INSERT`s.
    Insert,
}

/// One batch of rows, encoded.
pub enum Batch {
    Copy(postgres::Batch),
    Insert(sqlite::Batch),
}

impl Encoding {
    pub fn encode(self, rows: &Rows) -> Result<Batch, DbErr> {
        Ok(match self {
            Encoding::Copy => Batch::Copy(postgres::Batch::of(rows)?),
            Encoding::Insert => Batch::Insert(sqlite::Batch::of(rows)?),
        })
    }
}

/// A statement naming each loaded table that holds a row: a load begins only
/// into an empty catalog, for it replaces what the tables hold.
pub(crate) fn occupied_tables_query() -> String {
    tables()
        .iter()
        .map(|t| format!("SELECT '{t}' WHERE EXISTS (SELECT 1 FROM \"{t}\")"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// How beginning a load went.
pub enum Begun {
    Ready(Loader),
    /// These tables hold rows; nothing was changed.
    Occupied(Vec<String>),
}

/// A load under way: its transaction is open until [`Loader::finish`];
/// dropped before, it is rolled back.
pub enum Loader {
    Postgres(postgres::Load),
    Sqlite(sqlite::Load),
}

impl Loader {
    /// Opens the load's transaction, checks inside it (after taking the
    /// locks, so no writer can slip in between) that the loaded tables are
    /// empty, and takes down what slows a bulk load.
    pub async fn begin(db: &DatabaseConnection) -> Result<Begun, DbErr> {
        Ok(match db.get_database_backend() {
            DbBackend::Postgres => match postgres::Load::begin(db).await? {
                Ok(load) => Begun::Ready(Loader::Postgres(load)),
                Err(occupied) => Begun::Occupied(occupied),
            },
            DbBackend::Sqlite => match sqlite::Load::begin(db).await? {
                Ok(load) => Begun::Ready(Loader::Sqlite(load)),
                Err(occupied) => Begun::Occupied(occupied),
            },
            other => return Err(DbErr::Custom(format!("cannot seed a {other:?} database"))),
        })
    }

    pub fn encoding(&self) -> Encoding {
        match self {
            Loader::Postgres(_) => Encoding::Copy,
            Loader::Sqlite(_) => Encoding::Insert,
        }
    }

    pub async fn write(&mut self, batch: Batch) -> Result<(), DbErr> {
        match (self, batch) {
            (Loader::Postgres(load), Batch::Copy(batch)) => load.write(batch).await,
            (Loader::Sqlite(load), Batch::Insert(batch)) => load.write(batch).await,
            _ => Err(DbErr::Custom("a batch encoded for another database".into())),
        }
    }

    /// Builds the indexes and foreign keys again and commits.
    pub async fn finish(self) -> Result<(), DbErr> {
        match self {
            Loader::Postgres(load) => load.finish().await,
            Loader::Sqlite(load) => load.finish().await,
        }
    }
}
