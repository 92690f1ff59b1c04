//! A parent's child rows (a product's translations, prices, latest
//! observations) read by the parent's own statement, as one JSON array
//! column per child table: a correlated subquery per parent row, instead of
//! one more statement per relation. JSON rather than joined rows, because
//! two child lists joined to one page would multiply each other's rows.
//!
//! Each child row is a JSON array of the columns its caller reads, in the
//! model's field order (PostgreSQL builds an array of 11 columns in half the
//! time of the object with their names). A column left out costs nothing in
//! the database: `json_build_array` looks up the output of every argument
//! on every row, constants too, so a placeholder costs what a value does.
//! It reads back as the empty value of its field's type (see [`Fill`]),
//! which no answer shows. Child tables hold no boolean columns (SQLite
//! would give 0 or 1, which a `bool` does not accept).

use std::fmt;
use std::marker::PhantomData;

use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ColumnType, DbBackend, DbErr, EntityTrait, IdenStatic, Iterable, QueryResult,
};
use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, SeqAccess,
    Visitor,
};

use super::order::{self, Ordered};

/// The columns of a child table a statement reads, by their place in the
/// entity, besides its parent column, which is never read (every row of the
/// list belongs to the parent it is read with). A list reads the columns
/// of its order besides these.
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

    /// Whether the column at `at` in its entity is one of these.
    pub fn reads(self, at: usize) -> bool {
        self.0 & (1 << at) != 0
    }
}

/// A type shown from the rows of child table `E` (an answer's price, a
/// translation): the columns each of its fields shows, by the field's name
/// in the answer. Declared beside the type, never inferred from names: a
/// field computed from several columns, or named unlike its column, says
/// so here.
pub trait Shows<E: EntityTrait> {
    const FIELDS: &'static [(&'static str, &'static [E::Column])];

    /// The columns that the fields `asked` show. A field this type does not
    /// declare reads every column (a new field is never filled with a
    /// placeholder); names starting with `__` (`__typename`) read none.
    fn columns<'a>(asked: impl IntoIterator<Item = &'a str>) -> Columns {
        let mut wanted: Vec<&str> = Vec::new();
        for name in asked {
            if name.starts_with("__") {
                continue;
            }
            match Self::FIELDS.iter().find(|(field, _)| *field == name) {
                Some((_, columns)) => wanted.extend(columns.iter().map(|c| c.as_str())),
                None => return Columns::ALL,
            }
        }
        Columns::of::<E>(|column| wanted.contains(&column.as_str()))
    }
}

/// The type child table `E`'s rows are shown as, declared beside it: what
/// a list of them asks for decides the columns read ([`Shows`]).
pub trait ShownAs: EntityTrait {
    type View: Shows<Self>;
}

/// Checks that every column of `E` is shown by a field of `V`, but those
/// of `unshown`: its parent column and those only read to order the rows
/// (each of which must be in the order). For the tests of each [`Shows`].
#[cfg(test)]
pub fn every_column_shown<V: Shows<E>, E: Ordered>(parent: E::Column, unshown: &[E::Column]) {
    let declared = V::columns(V::FIELDS.iter().map(|(field, _)| *field));
    let table = E::default().table_name().to_owned();
    for (at, column) in E::Column::iter().enumerate() {
        let name = column.as_str();
        let ordering = order::sorts_by::<E>(column) && unshown.iter().any(|c| c.as_str() == name);
        assert!(
            declared.reads(at) || name == parent.as_str() || ordering,
            "{table}.{name} is shown by no field"
        );
    }
}

/// One child list of a parent statement: the SQL of its column and how its
/// rows read back into their model.
#[derive(Debug, Clone)]
pub struct List {
    /// The column's subquery.
    sql: String,
    /// Per model field, in order: read from the array, or filled.
    fields: Vec<Field>,
}

/// Where a model field of a child row comes from.
#[derive(Debug, Clone, Copy)]
enum Field {
    /// The row array's next element.
    Read,
    /// A column left out.
    Fill(Fill),
}

/// The value a column left out reads as: never shown, but it must read into
/// the model's field.
#[derive(Debug, Clone, Copy)]
enum Fill {
    /// The nil UUID.
    Uuid,
    /// The Unix epoch.
    Time,
    /// Whatever the field's type calls empty: `""`, 0, `None`, `[]`, JSON
    /// `null`, an enum's first value.
    Empty,
}

impl List {
    /// The rows of `E` whose `parent` column equals `outer`, a column of
    /// the enclosing statement (e.g. `products.id`), reading `columns` and
    /// those of the entity's order: all of them, or the first `n` in that
    /// order. Refused when `E`'s model would read a row's columns in
    /// another order than the entity lists them (see [`read_in_order`]).
    pub fn of<E: Ordered>(
        backend: DbBackend,
        parent: E::Column,
        outer: &str,
        columns: Columns,
        first: Option<u64>,
    ) -> Result<List, DbErr>
    where
        E::Model: DeserializeOwned,
    {
        read_in_order::<E>()?;
        let table = E::default().table_name().to_owned();
        let parent = parent.as_str();
        let mut values = Vec::new();
        let fields = E::Column::iter()
            .enumerate()
            .map(|(at, c)| {
                let read = columns.reads(at) || order::sorts_by::<E>(c);
                match c.as_str() != parent && read {
                    true => {
                        values.push(value(backend, c, c.as_str()));
                        Field::Read
                    }
                    false => Field::Fill(Fill::of(c)),
                }
            })
            .collect();
        let values = values.join(", ");
        let aggregate = match backend {
            DbBackend::Postgres => format!("json_agg(json_build_array({values}))::text"),
            _ => format!("json_group_array(json_array({values}))"),
        };
        let limit = match first {
            Some(n) => format!(" ORDER BY {} LIMIT {n}", order::sql::<E>()),
            None => String::new(),
        };
        Ok(List {
            sql: format!(
                "(SELECT {aggregate} FROM (SELECT * FROM {table} WHERE {parent} = {outer}{limit}) t)"
            ),
            fields,
        })
    }

    /// The list's column: a JSON array of rows, or NULL or `[]` when there
    /// are none.
    pub fn column(&self) -> Expr {
        Expr::cust(self.sql.clone())
    }

    /// The child rows in column `alias` of `row`, in their entity's order.
    pub fn decode<E: Ordered>(&self, row: &QueryResult, alias: &str) -> Result<Vec<E::Model>, DbErr>
    where
        E::Model: DeserializeOwned,
    {
        let mut rows = match row.try_get::<Option<String>>("", alias)? {
            Some(text) => self
                .read(&text)
                .map_err(|e| DbErr::Type(format!("{alias} read as JSON: {e}")))?,
            None => Vec::new(),
        };
        order::sort::<E>(&mut rows);
        Ok(rows)
    }

    /// The rows of the list's JSON text.
    fn read<M: DeserializeOwned>(&self, text: &str) -> Result<Vec<M>, serde_json::Error> {
        let mut json = serde_json::Deserializer::from_str(text);
        let rows = json.deserialize_seq(Rows::<M>(&self.fields, PhantomData))?;
        json.end()?;
        Ok(rows)
    }
}

/// Refuses an entity whose model reads a row in another order than the
/// entity lists its columns: a row array holds the columns in the latter,
/// the derived `Deserialize` takes a sequence's elements in the former.
fn read_in_order<E: EntityTrait>() -> Result<(), DbErr>
where
    E::Model: DeserializeOwned,
{
    let fields = model_fields::<E::Model>();
    let columns: Vec<&str> = E::Column::iter().map(|c| c.as_str()).collect();
    match fields == Some(columns.as_slice()) {
        true => Ok(()),
        false => Err(DbErr::Custom(format!(
            "{}: model fields {fields:?} are not its columns {columns:?} in order",
            E::default().table_name()
        ))),
    }
}

/// The field names a derived `Deserialize` of struct `M` reads, in order:
/// what it hands a deserializer, which stops it there.
fn model_fields<M: DeserializeOwned>() -> Option<&'static [&'static str]> {
    struct Probe<'a>(&'a mut Option<&'static [&'static str]>);

    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = Some(fields);
            Err(de::Error::custom("fields read"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }

    let mut fields = None;
    let _ = M::deserialize(Probe(&mut fields));
    fields
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

impl Fill {
    /// UUIDs and timestamps parse from text, so they get a valid one; every
    /// other type has an empty value of its own (a nullable column of any
    /// type reads `None`: see [`Filled`]'s `deserialize_option`).
    fn of(column: impl ColumnTrait) -> Fill {
        match column.def().get_column_type() {
            ColumnType::Uuid => Fill::Uuid,
            ColumnType::Timestamp | ColumnType::TimestampWithTimeZone => Fill::Time,
            _ => Fill::Empty,
        }
    }
}

/// The array of rows.
struct Rows<'a, M>(&'a [Field], PhantomData<M>);

impl<'de, M: de::Deserialize<'de>> Visitor<'de> for Rows<'_, M> {
    type Value = Vec<M>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of child rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut rows: A) -> Result<Vec<M>, A::Error> {
        let mut out = Vec::with_capacity(rows.size_hint().unwrap_or(0));
        while let Some(row) = rows.next_element_seed(Row::<M>(self.0, PhantomData))? {
            out.push(row);
        }
        Ok(out)
    }
}

/// One row: an array of the columns read, which the model reads with the
/// fills of the columns left out in their places.
struct Row<'a, M>(&'a [Field], PhantomData<M>);

impl<'de, M: de::Deserialize<'de>> DeserializeSeed<'de> for Row<'_, M> {
    type Value = M;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<M, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, M: de::Deserialize<'de>> Visitor<'de> for Row<'_, M> {
    type Value = M;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a child row")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut read: A) -> Result<M, A::Error> {
        let model = M::deserialize(Fields {
            fields: self.0.iter(),
            read: &mut read,
        })?;
        match read.next_element::<IgnoredAny>()? {
            Some(_) => Err(de::Error::custom(
                "a child row holds more columns than read",
            )),
            None => Ok(model),
        }
    }
}

/// A row's fields in the model's order, as a sequence the model reads.
struct Fields<'a, A> {
    fields: std::slice::Iter<'a, Field>,
    read: &'a mut A,
}

impl<'de, A: SeqAccess<'de>> Deserializer<'de> for Fields<'_, A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_seq(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Fields<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        match self.fields.next() {
            None => Ok(None),
            Some(Field::Read) => match self.read.next_element_seed(seed)? {
                Some(value) => Ok(Some(value)),
                None => Err(de::Error::custom(
                    "a child row holds fewer columns than read",
                )),
            },
            Some(Field::Fill(fill)) => seed.deserialize(Filled(*fill, PhantomData)).map(Some),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}

/// A fill, as the value its field reads.
struct Filled<E>(Fill, PhantomData<E>);

const NIL_UUID: &str = "00000000-0000-0000-0000-000000000000";
const EPOCH: &str = "1970-01-01T00:00:00Z";

impl<'de, E: de::Error> Deserializer<'de> for Filled<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.0 {
            Fill::Uuid => visitor.visit_str(NIL_UUID),
            Fill::Time => visitor.visit_str(EPOCH),
            // JSON's null (a document left out).
            Fill::Empty => visitor.visit_unit(),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_bool(false)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_i64(0)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_i64(0)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_u64(0)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_f64(0.0)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_f64(0.0)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.0 {
            Fill::Empty => visitor.visit_str(""),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_seq(SeqDeserializer::<_, E>::new(std::iter::empty::<()>()))
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_map(MapDeserializer::<_, E>::new(std::iter::empty::<((), ())>()))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        let first: &str = variants.first().copied().unwrap_or_default();
        visitor.visit_enum(IntoDeserializer::<E>::into_deserializer(first))
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i128 u8 u16 u32 u128 char bytes byte_buf unit
        unit_struct tuple tuple_struct struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use entity::{UserAuthStatus, price_observation, product_translation};
    use uuid::Uuid;

    use super::*;

    fn latest(read: impl Fn(price_observation::Column) -> bool) -> List {
        use price_observation::{Column, Entity};
        let columns = Columns::of::<Entity>(read);
        List::of::<Entity>(
            DbBackend::Postgres,
            Column::ProductId,
            "p.id",
            columns,
            None,
        )
        .unwrap()
    }

    #[test]
    fn a_row_reads_only_its_columns_the_others_empty() {
        use price_observation::Column;
        let list = latest(|c| {
            matches!(
                c,
                Column::Id | Column::Price | Column::Currency | Column::RecordedAt
            )
        });
        let column = &list.sql;
        assert!(
            column.contains("json_build_array(t.id, t.price, t.currency, t.recorded_at)"),
            "{column}"
        );
        let rows: Vec<price_observation::Model> = list
            .read(r#"[[7, 10.5, "RUB", "2026-11-20T10:00:00Z"], [8, 9.25, "KZT", "2026-11-19T10:00:00Z"]]"#)
            .unwrap();
        let at = DateTime::parse_from_rfc3339("2026-11-20T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            rows[0],
            price_observation::Model {
                id: 7,
                product_id: Uuid::nil(),
                country_code: String::new(),
                region_code: None,
                user_auth_status: UserAuthStatus::ALL[0],
                price: 10.5,
                old_price: 0.0,
                currency: "RUB".into(),
                stock_status: None,
                stock_quantity: None,
                recorded_at: at,
            }
        );
        assert_eq!((rows[1].id, rows[1].currency.as_str()), (8, "KZT"));
    }

    #[test]
    fn documents_and_times_left_out_read_as_empty() {
        use product_translation::{Column, Entity};
        let columns = Columns::of::<Entity>(|c| matches!(c, Column::Language | Column::Name));
        let list = List::of::<Entity>(DbBackend::Sqlite, Column::ProductId, "p.id", columns, None)
            .unwrap();
        let rows: Vec<product_translation::Model> = list.read(r#"[["en", "Sneakers"]]"#).unwrap();
        let row = &rows[0];
        assert_eq!(
            (row.language.as_str(), row.name.as_str()),
            ("en", "Sneakers")
        );
        assert!(row.category_path.0.is_empty());
        assert!(row.attributes.is_null());
        assert_eq!(row.updated_at, DateTime::<Utc>::UNIX_EPOCH);
    }

    #[test]
    fn a_row_of_another_length_than_its_columns_is_refused() {
        use price_observation::Column::*;
        let list = latest(|c| matches!(c, Id | Price));
        let at = r#""2026-11-20T10:00:00Z""#;
        for text in [
            "[[7, 1.5]]".to_owned(),
            format!("[[7, 1.5, {at}, 2]]"),
            format!(r#"[["7", 1.5, {at}]]"#),
        ] {
            let read = list.read::<price_observation::Model>(&text);
            assert!(read.is_err(), "{text}");
        }
        let rows = list.read::<price_observation::Model>(&format!("[[7, 1.5, {at}]]"));
        assert_eq!(rows.unwrap()[0].price, 1.5);
    }

    #[test]
    fn a_list_reads_the_columns_it_is_sorted_by() {
        use price_observation::Column::*;
        let list = latest(|c| matches!(c, Price));
        assert!(
            list.sql
                .contains("json_build_array(t.id, t.price, t.recorded_at)"),
            "{}",
            list.sql
        );
    }

    #[test]
    fn every_child_model_reads_its_columns_in_order() {
        use entity::{current_price, special_price};
        read_in_order::<price_observation::Entity>().unwrap();
        read_in_order::<current_price::Entity>().unwrap();
        read_in_order::<special_price::Entity>().unwrap();
        read_in_order::<product_translation::Entity>().unwrap();
    }

    #[test]
    fn the_fields_of_a_model_are_those_serde_reads() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Swapped {
            b: i64,
            a: String,
        }
        assert_eq!(model_fields::<Swapped>(), Some(&["b", "a"][..]));
        assert_eq!(model_fields::<Vec<i64>>(), None);
    }
}
