//! The order of every list, defined once per entity: the SQL of a page, of
//! a child list read with its parent, of "the first N per parent", and the
//! in-memory sort of rows read without one all come from [`Ordered::ORDER`]
//! and the comparator generated beside it, so they cannot disagree.

use std::cmp::Ordering;

use entity::{
    current_price, price_observation, product, product_translation, scrape_session, special_price,
    submission,
};
use sea_orm::{EntityTrait, IdenStatic, QueryOrder, Select};

/// The direction of one column of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Asc,
    Desc,
}

impl Dir {
    fn sql(self) -> &'static str {
        match self {
            Dir::Asc => "ASC",
            Dir::Desc => "DESC",
        }
    }

    fn order(self) -> sea_orm::Order {
        match self {
            Dir::Asc => sea_orm::Order::Asc,
            Dir::Desc => sea_orm::Order::Desc,
        }
    }
}

/// An entity whose lists have one order.
pub trait Ordered: EntityTrait {
    /// The order's columns, most significant first; the last is unique,
    /// so the order is total.
    const ORDER: &'static [(Self::Column, Dir)];

    /// [`Self::ORDER`] over models. Rust's order, not the database's: a
    /// text column orders by bytes here and by collation there, and `None`
    /// goes first here; so an order with a text or a nullable column is
    /// applied only in memory (a test checks where SQL applies one).
    fn compare(a: &Self::Model, b: &Self::Model) -> Ordering;

    /// Each order column's model field name, for the test that pairs them.
    #[doc(hidden)]
    const FIELDS: &'static [&'static str];
}

/// Implements [`Ordered`] from one line per entity: `Column field dir`,
/// most significant first.
macro_rules! ordered {
    ($($(#[$doc:meta])* $entity:ident: $($column:ident $field:ident $dir:ident),+;)+) => {$(
        $(#[$doc])*
        impl Ordered for $entity::Entity {
            const ORDER: &'static [(Self::Column, Dir)] =
                &[$(($entity::Column::$column, Dir::$dir)),+];
            const FIELDS: &'static [&'static str] = &[$(stringify!($field)),+];

            fn compare(a: &$entity::Model, b: &$entity::Model) -> Ordering {
                Ordering::Equal $(.then_with(|| directed(Dir::$dir, a.$field.cmp(&b.$field))))+
            }
        }
    )+};
}

ordered! {
    /// Products: newest first, ties by id.
    product: FirstSeenAt first_seen_at Desc, Id id Desc;
    /// A price history: newest first, ties by id.
    price_observation: RecordedAt recorded_at Desc, Id id Desc;
    /// An account's sessions: most recent first, ties by id.
    scrape_session: CreatedAt created_at Desc, Id id Desc;
    /// A session's submissions: in submission order.
    submission: Id id Asc;
    /// A product's translations: by language (one row per language).
    product_translation: Language language Asc;
    /// A product's current prices: by country, region, auth status.
    current_price: CountryCode country_code Asc, RegionCode region_code Asc,
        UserAuthStatus user_auth_status Asc, Id id Asc;
    /// A product's special prices: in the order they were stored.
    special_price: Id id Asc;
}

fn directed(dir: Dir, ordering: Ordering) -> Ordering {
    match dir {
        Dir::Asc => ordering,
        Dir::Desc => ordering.reverse(),
    }
}

/// Sorts `rows` in their entity's order.
pub fn sort<E: Ordered>(rows: &mut [E::Model]) {
    rows.sort_by(E::compare);
}

/// The order as an SQL `ORDER BY` list of the entity's own columns, e.g.
/// `recorded_at DESC, id DESC`.
pub fn sql<E: Ordered>() -> String {
    E::ORDER
        .iter()
        .map(|(column, dir)| format!("{} {}", column.as_str(), dir.sql()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `select` in the order.
pub fn apply<E: Ordered>(select: Select<E>) -> Select<E> {
    E::ORDER.iter().fold(select, |select, (column, dir)| {
        select.order_by(*column, dir.order())
    })
}

/// Whether a row reads `column` to be sorted.
pub fn sorts_by<E: Ordered>(column: E::Column) -> bool {
    E::ORDER.iter().any(|(c, _)| c.as_str() == column.as_str())
}

/// The order's columns and their one direction, as keyset paging compares
/// them as a tuple. An order of mixed directions fails to compile.
pub fn keyset<E: Ordered>() -> (Vec<E::Column>, sea_orm::Order) {
    const { assert!(one_direction(E::ORDER)) };
    let columns = E::ORDER.iter().map(|(c, _)| *c).collect();
    (columns, E::ORDER[0].1.order())
}

const fn one_direction<C>(order: &[(C, Dir)]) -> bool {
    let mut at = 1;
    while at < order.len() {
        if !matches!(
            (order[0].1, order[at].1),
            (Dir::Asc, Dir::Asc) | (Dir::Desc, Dir::Desc)
        ) {
            return false;
        }
        at += 1;
    }
    !order.is_empty()
}

#[cfg(test)]
mod tests {
    use sea_orm::{ColumnTrait, ColumnType};

    use super::*;

    /// The pairs a line of `ordered!` makes, and whether SQL may apply it.
    fn check<E: Ordered>(in_sql: bool) {
        let name = E::default().table_name().to_owned();
        let columns: Vec<&str> = E::ORDER.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(
            columns,
            E::FIELDS,
            "{name}: columns paired with other fields"
        );
        if in_sql {
            for (column, _) in E::ORDER {
                let def = column.def();
                let text = matches!(
                    def.get_column_type(),
                    ColumnType::String(_) | ColumnType::Text | ColumnType::Char(_)
                );
                assert!(
                    !def.is_null() && !text,
                    "{name}.{}: SQL would order it otherwise than memory",
                    column.as_str()
                );
            }
        }
    }

    #[test]
    fn every_order_pairs_its_columns_and_fields() {
        // Ordered in SQL too (pages, "first N per parent").
        check::<product::Entity>(true);
        check::<price_observation::Entity>(true);
        check::<scrape_session::Entity>(true);
        check::<submission::Entity>(true);
        // Sorted in memory only.
        check::<product_translation::Entity>(false);
        check::<current_price::Entity>(false);
        check::<special_price::Entity>(true);
    }

    #[test]
    fn the_sql_order_is_the_definition() {
        assert_eq!(
            sql::<price_observation::Entity>(),
            "recorded_at DESC, id DESC"
        );
        let (columns, direction) = keyset::<scrape_session::Entity>();
        let names: Vec<&str> = columns.iter().map(|c| c.as_str()).collect();
        assert_eq!(names, ["created_at", "id"]);
        assert!(matches!(direction, sea_orm::Order::Desc));
    }
}
