//! A product's child lists: rows of another table that belong to one
//! product and are shown with it (its translations, current prices and
//! special prices). Each is declared once, in [`product_lists`]. From that
//! one line the query layer builds what a page statement reads and decodes
//! ([`Asked`], [`Read`], [`Lists`]) and the dataloaders' reads
//! ([`ListTable`]); the GraphQL layer builds its page cells and loaders
//! from it the same way, so no layer names the lists one by one.

use std::collections::HashMap;

use sea_orm::sea_query::{Expr, SelectStatement};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, EntityName, QueryFilter, QueryResult};
use uuid::Uuid;

use super::children::{Columns, List, ShownAs};
use super::order::{self, Ordered};
use super::products::{group, within};

/// Calls macro `$then` with every child list of a product, one per line:
/// `name: table => "graphqlField"`, where
/// - `name` is the list's field in [`Asked`], [`Read`], [`Lists`] and the
///   GraphQL layer's page and loaders, and its column in a page statement;
/// - `table` is its entity module (`entity::table`): its rows belong to a
///   product by `product_id` and come in the entity's [`Ordered`] order;
/// - `"graphqlField"` is the field of GraphQL's `Product` that shows it.
///
/// A new list is a line here, its view type (`views.rs`, with its
/// `Shows` and `ShownAs`), its REST field and its GraphQL resolver.
/// `tests/it/product_lists.rs` walks every list declared ([`declared`]).
macro_rules! product_lists {
    ($then:ident) => {
        $then! {
            translations: product_translation => "translations",
            prices: current_price => "prices",
            special_prices: special_price => "specialPrices",
        }
    };
}
pub(crate) use product_lists;

/// A child table of products, read as a list of its product's.
pub trait ListTable: Ordered {
    /// The column holding the product's id.
    const PRODUCT: Self::Column;
    /// The field of GraphQL's `Product` that shows the list.
    const FIELD: &'static str;

    /// The product `row` belongs to.
    fn product_of(row: &Self::Model) -> Uuid;
}

/// Picks the columns each list is read with, or `None` not to read it
/// (a surface's look-ahead: GraphQL reads what the query selects).
pub trait PickColumns {
    fn columns<E: ListTable + ShownAs>(&self) -> Option<Columns>;
}

/// The product column a child list is read for.
pub(super) const PARENT: &str = "products.id";

/// One declared list, as the tests see it.
#[derive(Debug, Clone, Copy)]
pub struct Declared {
    /// Its name in the code, and its column in a page statement.
    pub name: &'static str,
    /// Its table.
    pub table: &'static str,
    /// The field of GraphQL's `Product` that shows it.
    pub graphql_field: &'static str,
}

macro_rules! query_parts {
    ($($list:ident: $table:ident => $field:literal,)*) => {
        $(impl ListTable for entity::$table::Entity {
            const PRODUCT: entity::$table::Column = entity::$table::Column::ProductId;
            const FIELD: &'static str = $field;

            fn product_of(row: &entity::$table::Model) -> Uuid {
                row.product_id
            }
        })*

        /// Every list declared, in order.
        pub fn declared() -> Vec<Declared> {
            vec![$(Declared {
                name: stringify!($list),
                table: entity::$table::Entity.table_name(),
                graphql_field: $field,
            },)*]
        }

        /// Per list, the columns a page statement reads; `None`: not read.
        #[derive(Debug, Clone, Copy)]
        pub struct Asked {
            $(pub $list: Option<Columns>,)*
        }

        impl Asked {
            pub const NONE: Asked = Asked { $($list: None,)* };
            pub const ALL: Asked = Asked { $($list: Some(Columns::ALL),)* };

            /// Each list with the columns `pick` picks for it.
            pub fn picked(pick: &impl PickColumns) -> Asked {
                Asked { $($list: pick.columns::<entity::$table::Entity>(),)* }
            }
        }

        /// Per list, its rows by product, for the lists read (`None`: not read).
        #[derive(Debug, Default)]
        pub struct Read {
            $(pub $list: Option<HashMap<Uuid, Vec<entity::$table::Model>>>,)*
        }

        impl Read {
            /// No rows yet, for the lists of `asked`.
            pub(super) fn expecting(asked: Asked) -> Read {
                Read { $($list: asked.$list.map(|_| HashMap::new()),)* }
            }

            /// Adds the rows of `other` to the lists read in both.
            pub(super) fn extend(&mut self, other: Read) {
                $(if let (Some(into), Some(from)) = (&mut self.$list, other.$list) {
                    into.extend(from);
                })*
            }

            /// Takes product `id`'s rows out, empty for lists not read.
            pub(super) fn take(&mut self, id: Uuid) -> Lists {
                Lists { $($list: self.$list.as_mut().and_then(|m| m.remove(&id)).unwrap_or_default(),)* }
            }
        }

        /// One product's lists.
        #[derive(Debug, Clone, Default)]
        pub struct Lists {
            $(pub $list: Vec<entity::$table::Model>,)*
        }

        /// The lists of one page statement, a column each.
        #[derive(Debug)]
        pub(super) struct Statements {
            $($list: Option<List>,)*
        }

        impl Statements {
            pub(super) fn of(backend: DbBackend, asked: Asked) -> Result<Statements, DbErr> {
                Ok(Statements {$(
                    $list: asked.$list.map(|columns| {
                        use entity::$table::Entity;
                        List::of::<Entity>(backend, Entity::PRODUCT, PARENT, columns, None)
                    }).transpose()?,
                )*})
            }

            /// Adds each list's column to `statement`: NULL for products
            /// whose stored size is over `whole` (read again alone; a
            /// product's stored size counts its lists).
            pub(super) fn select(&self, statement: &mut SelectStatement, whole: Option<u64>) {
                $(if let Some(list) = &self.$list {
                    let read = within(whole, list.column(), Expr::cust("NULL"));
                    statement.expr_as(read, stringify!($list));
                })*
            }

            /// Decodes product `id`'s lists from its `row` into `read`.
            pub(super) fn decode(&self, row: &QueryResult, id: Uuid, read: &mut Read) -> Result<(), DbErr> {
                $(if let (Some(list), Some(into)) = (&self.$list, &mut read.$list) {
                    into.insert(id, list.decode::<entity::$table::Entity>(row, stringify!($list))?);
                })*
                Ok(())
            }
        }
    };
}
product_lists!(query_parts);

/// The rows of list `E` of the `products`, per product, in its order
/// (sorted here: some orders hold text or nullable columns, which SQL
/// orders otherwise; see [`Ordered`]). For the dataloaders.
pub async fn of_products<E: ListTable>(
    db: &impl ConnectionTrait,
    products: &[Uuid],
) -> Result<HashMap<Uuid, Vec<E::Model>>, DbErr>
where
    E::Model: Sync,
{
    let rows = E::find()
        .filter(super::one_of(db, E::PRODUCT, products))
        .all(db)
        .await?;
    let mut grouped = group(rows, E::product_of);
    for rows in grouped.values_mut() {
        order::sort::<E>(rows);
    }
    Ok(grouped)
}
