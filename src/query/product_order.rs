//! The orders of a products list (GraphQL `products(orderBy:)`) and their
//! keyset cursors. Every order ends with the product's id, in the order's
//! direction, so it is total and a cursor names one place in it. Each walks
//! an index in its order, either way, so a page deep in a list costs what
//! the first page costs:
//! - `FIRST_SEEN`: `products_newest_desc` (a category's `product_categories_newest`);
//! - `LAST_SEEN`: `products_last_seen`;
//! - `NAME`: `products_by_name`;
//! - `PRICE`: `lowest_prices_by_price`, within the filter's `currency`,
//!   which it needs (a product without a price in it has no place in the
//!   order; the `currency` filter leaves it out anyway).

use async_graphql::{Enum, InputObject};
use chrono::{DateTime, Utc};
use entity::{lowest_price, product};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, Value};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::QueryError;
use super::keyset::Key;

/// What a products list is ordered by.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProductOrderField {
    /// When Vitrina first saw the product (the default).
    FirstSeen,
    /// When a merge last saw the product.
    LastSeen,
    /// The product's name in its default language, as the database orders
    /// text (its collation; SQLite: by bytes).
    Name,
    /// The product's lowest current price in the filter's `currency`, which
    /// must be given.
    Price,
}

/// Which way an order runs.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OrderDirection {
    /// Smallest (earliest, first in the alphabet, cheapest) first.
    Asc,
    /// Largest (latest, last in the alphabet, dearest) first.
    Desc,
}

/// The order of a products list; ties are ordered by id, the same way.
#[derive(InputObject, Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductOrder {
    /// What the list is ordered by.
    pub field: ProductOrderField,
    /// Which way.
    pub direction: OrderDirection,
}

impl Default for ProductOrder {
    /// Newest first, the order of every products list before `orderBy`.
    fn default() -> Self {
        ProductOrder {
            field: ProductOrderField::FirstSeen,
            direction: OrderDirection::Desc,
        }
    }
}

impl ProductOrder {
    /// `PRICE` needs the currency whose prices it orders by.
    pub fn validate(&self, currency: Option<&str>) -> Result<(), QueryError> {
        match (self.field, currency) {
            (ProductOrderField::Price, None) => Err(QueryError::Missing(
                "orderBy PRICE orders by the lowest price in one currency: \
                 pass filter.currency too"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    pub fn direction(&self) -> sea_orm::Order {
        match self.direction {
            OrderDirection::Asc => sea_orm::Order::Asc,
            OrderDirection::Desc => sea_orm::Order::Desc,
        }
    }

    /// The columns of this order, most significant first, when they are not
    /// those of the default order (which a category's index rows also hold;
    /// see `ProductFilter::order_columns`). `PRICE`'s are those of the
    /// `lowest_prices` row joined in the list's currency.
    pub(super) fn columns(&self) -> Option<[Expr; 2]> {
        let of = |column: product::Column| column.into_expr();
        match self.field {
            ProductOrderField::FirstSeen => None,
            ProductOrderField::LastSeen => {
                Some([of(product::Column::LastSeenAt), of(product::Column::Id)])
            }
            ProductOrderField::Name => Some([of(product::Column::Name), of(product::Column::Id)]),
            ProductOrderField::Price => Some([
                lowest_price::Column::Price.into_expr(),
                lowest_price::Column::ProductId.into_expr(),
            ]),
        }
    }

    /// The key of `product` in this order; `price` is its price in the
    /// list's currency, which `PRICE` orders by.
    pub fn key_of(&self, product: &product::Model, price: f64) -> ProductKey {
        let value = match self.field {
            ProductOrderField::FirstSeen if *self == ProductOrder::default() => {
                return ProductKey::Newest(product.first_seen_at, product.id);
            }
            ProductOrderField::FirstSeen => Sorted::Time(product.first_seen_at),
            ProductOrderField::LastSeen => Sorted::Time(product.last_seen_at),
            ProductOrderField::Name => Sorted::Text(product.name.clone()),
            ProductOrderField::Price => Sorted::Price(price),
        };
        ProductKey::Ordered(*self, value, product.id)
    }

    /// Whether `key` is a place in this order: a cursor of another order of
    /// the same products would page from a place that means nothing here.
    pub fn fits(&self, key: &ProductKey) -> bool {
        match key {
            ProductKey::Newest(..) => *self == ProductOrder::default(),
            ProductKey::Ordered(order, value, _) => {
                order == self
                    && *self != ProductOrder::default()
                    && matches!(
                        (self.field, value),
                        (
                            ProductOrderField::FirstSeen | ProductOrderField::LastSeen,
                            Sorted::Time(_)
                        ) | (ProductOrderField::Name, Sorted::Text(_))
                            | (ProductOrderField::Price, Sorted::Price(_))
                    )
            }
        }
    }
}

/// The value a product is ordered by.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Sorted {
    Time(DateTime<Utc>),
    Text(String),
    Price(f64),
}

/// A product's place in its list: the value its order sorts by and its id.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProductKey {
    /// The default order, newest first. Its cursors are those the lists
    /// gave before they had other orders, so those still page.
    Newest(DateTime<Utc>, Uuid),
    /// Any other order, named in the cursor.
    Ordered(ProductOrder, Sorted, Uuid),
}

impl Key for ProductKey {
    const LIST: &'static str = "products";

    fn values(&self) -> Vec<Value> {
        let (value, id) = match self {
            ProductKey::Newest(time, id) => ((*time).into(), id),
            ProductKey::Ordered(_, Sorted::Time(time), id) => ((*time).into(), id),
            ProductKey::Ordered(_, Sorted::Text(text), id) => (text.clone().into(), id),
            ProductKey::Ordered(_, Sorted::Price(price), id) => ((*price).into(), id),
        };
        vec![value, (*id).into()]
    }
}

impl ProductKey {
    /// The key of `product` in the default order.
    pub fn of(product: &product::Model) -> Self {
        ProductKey::Newest(product.first_seen_at, product.id)
    }
}
