//! A parent's child rows (a product's translations, prices, latest
//! observations) read by the parent's own statement, as one JSON array
//! column per child table: a correlated subquery per parent row, instead of
//! one more statement per relation. JSON rather than joined rows, because
//! two child lists joined to one page would multiply each other's rows.
//!
//! Each child row is a JSON array of its columns in the model's field order,
//! which serde reads into the model like an object (PostgreSQL builds an
//! array of 11 columns in half the time of the object with their names).
//! Child tables hold no boolean columns (SQLite would give 0 or 1, which a
//! `bool` does not accept).
//!
//! A statement reads the columns its caller shows ([`Columns`]): turning a
//! number, a timestamp or a document into JSON is most of the database's
//! work here.

use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ColumnType, DbBackend, DbErr, EntityTrait, IdenStatic, Iterable, QueryResult,
};
use serde::de::DeserializeOwned;

/// The columns of a child table a statement reads, by their place in the
/// entity, besides its parent column, which is never read (every row of the
/// list belongs to the parent it is read with). Text columns are read whatever is asked (they cost next to
/// nothing, and an enum kept as text has no empty value); any other column
/// left out comes back as the empty value of its type (NULL, `[]`, 0, the
/// nil UUID, the epoch), so the row still reads into the model. Whoever
/// sorts the rows reads the columns it sorts them by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns(u64);

impl Columns {
    pub const ALL: Columns = Columns(u64::MAX);
    pub const NONE: Columns = Columns(0);

    /// The columns of `E` for which `read` is true.
    pub fn of<E: EntityTrait>(read: impl Fn(E::Column) -> bool) -> Columns {
        Columns(
            E::Column::iter()
                .enumerate()
                .filter(|(_, column)| read(*column))
                .fold(0, |set, (at, _)| set | 1 << at),
        )
    }

    /// These columns and those of `E` for which `read` is true.
    pub fn and<E: EntityTrait>(self, read: impl Fn(E::Column) -> bool) -> Columns {
        Columns(self.0 | Columns::of::<E>(read).0)
    }

    fn reads(self, at: usize) -> bool {
        self.0 & (1 << at) != 0
    }
}

/// The rows of `E` whose `parent` column equals `outer` (a column of the
/// enclosing statement, e.g. `products.id`), as a JSON array of rows:
/// all of them, or the first `n` in a fixed SQL order (e.g.
/// `"recorded_at DESC, id DESC"`). NULL or `[]` when there are none.
pub fn column<E: EntityTrait>(
    backend: DbBackend,
    parent: E::Column,
    outer: &str,
    first: Option<(&str, u64)>,
    columns: Columns,
) -> Expr {
    let table = E::default().table_name().to_owned();
    let parent = parent.as_str();
    let fields = E::Column::iter()
        .enumerate()
        // The parent column is the parent's own id: no reader needs it.
        .map(
            |(at, c)| match c.as_str() != parent && (columns.reads(at) || is_text(c)) {
                true => value(backend, c, c.as_str()),
                false => empty(backend, c).to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join(", ");
    let limit = match first {
        Some((order_by, n)) => format!(" ORDER BY {order_by} LIMIT {n}"),
        None => String::new(),
    };
    let rows = format!("(SELECT * FROM {table} WHERE {parent} = {outer}{limit}) t");
    Expr::cust(match backend {
        DbBackend::Postgres => {
            format!("(SELECT json_agg(json_build_array({fields}))::text FROM {rows})")
        }
        _ => format!("(SELECT json_group_array(json_array({fields})) FROM {rows})"),
    })
}

/// Column `name` of the child row `t` as a JSON value. On SQLite: JSON is
/// kept as text (`json()` embeds it); UUIDs are blobs, which JSON cannot
/// hold (hex digits, which a UUID parses from); and its JSON writes a real
/// with 15 digits (110.39999999999999 as 110.4), so reals are written with
/// 17, enough to read back the same `f64`.
fn value(backend: DbBackend, column: impl ColumnTrait, name: &str) -> String {
    match (backend, column.def().get_column_type()) {
        (DbBackend::Sqlite, ColumnType::Json | ColumnType::JsonBinary) => format!("json(t.{name})"),
        (DbBackend::Sqlite, ColumnType::Uuid) => format!("hex(t.{name})"),
        (DbBackend::Sqlite, ColumnType::Double | ColumnType::Float) => format!(
            "CASE WHEN t.{name} IS NULL THEN NULL ELSE json(printf('%!.17g', t.{name})) END"
        ),
        _ => format!("t.{name}"),
    }
}

fn is_text(column: impl ColumnTrait) -> bool {
    let def = column.def();
    !def.is_null()
        && matches!(
            def.get_column_type(),
            ColumnType::String(_) | ColumnType::Text | ColumnType::Char(_)
        )
}

/// The JSON value a column left out reads as.
fn empty(backend: DbBackend, column: impl ColumnTrait) -> &'static str {
    let def = column.def();
    if def.is_null() {
        return "NULL";
    }
    let postgres = backend == DbBackend::Postgres;
    match def.get_column_type() {
        ColumnType::Json | ColumnType::JsonBinary if postgres => "'[]'::json",
        ColumnType::Json | ColumnType::JsonBinary => "json('[]')",
        ColumnType::Uuid if postgres => "'00000000-0000-0000-0000-000000000000'::text",
        ColumnType::Uuid => "'00000000000000000000000000000000'",
        ColumnType::Timestamp | ColumnType::TimestampWithTimeZone if postgres => {
            "'1970-01-01T00:00:00Z'::text"
        }
        ColumnType::Timestamp | ColumnType::TimestampWithTimeZone => "'1970-01-01T00:00:00Z'",
        // Numbers (and anything else, which fails loudly on reading).
        _ => "0",
    }
}

/// The child rows in column `alias` of `row` (see [`column`]), in SQL's
/// order; callers that need one sort them.
pub fn decode<M: DeserializeOwned>(row: &QueryResult, alias: &str) -> Result<Vec<M>, DbErr> {
    match row.try_get::<Option<String>>("", alias)? {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| DbErr::Type(format!("{alias} read as JSON: {e}"))),
        None => Ok(Vec::new()),
    }
}
