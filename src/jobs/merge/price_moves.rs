//! What a merge did to a product's lowest current price in each currency
//! (`lowest_prices`, which triggers keep): read before the item's prices
//! are recorded and again after, within the merge's transaction. The moves
//! go to the webhook outbox in that transaction, and to subscribers
//! (`events`) once it committed.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entity::{lowest_price, product};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use uuid::Uuid;

use crate::query::movers::PriceMove;
use crate::webhooks::outbox;

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

/// Writes the `product.price_changed` deliveries of `moves` (of one
/// product, merged from a submission of `session_id`) into the merge's
/// transaction.
pub async fn enqueue(
    txn: &impl ConnectionTrait,
    moves: &[PriceMove],
    session_id: Uuid,
    public_url: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let Some(first) = moves.first() else {
        return Ok(());
    };
    let Some(product) = product::Entity::find_by_id(first.product_id)
        .one(txn)
        .await?
    else {
        return Ok(());
    };
    outbox::enqueue_price_moves(txn, &product, moves, session_id, public_url, now).await?;
    Ok(())
}
