//! What a merge did to a product's lowest current price in each currency
//! (`lowest_prices`, which triggers keep): read before the item's prices
//! are recorded and again after, within the merge's transaction, so the
//! moves are announced once it committed (`events`).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entity::lowest_price;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use uuid::Uuid;

use crate::query::movers::PriceMove;

/// A product's lowest current price per currency.
pub struct Lowest(HashMap<String, f64>);

impl Lowest {
    /// Those of `product` now (one index range).
    pub async fn of(db: &impl ConnectionTrait, product: Uuid) -> Result<Lowest, DbErr> {
        let rows = lowest_price::Entity::find()
            .filter(lowest_price::Column::ProductId.eq(product))
            .all(db)
            .await?;
        Ok(Lowest(
            rows.into_iter().map(|r| (r.currency, r.price)).collect(),
        ))
    }

    /// None: a new product's prices are its first, not a move.
    pub fn none() -> Lowest {
        Lowest(HashMap::new())
    }

    /// The moves from these prices to `now`'s, at `at`: a currency priced
    /// both times at different prices. A price of 0 before moves by no
    /// percentage and is left out.
    pub fn moves_to(&self, now: &Lowest, product: Uuid, at: DateTime<Utc>) -> Vec<PriceMove> {
        let mut moves: Vec<PriceMove> = now
            .0
            .iter()
            .filter_map(|(currency, after)| {
                let before = *self.0.get(currency)?;
                (before > 0.0 && before != *after).then(|| PriceMove {
                    product_id: product,
                    currency: currency.clone(),
                    before,
                    after: *after,
                    change_percent: (after - before) * 100.0 / before,
                    changed_at: at,
                })
            })
            .collect();
        moves.sort_by(|a, b| a.currency.cmp(&b.currency));
        moves
    }
}
