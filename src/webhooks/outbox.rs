//! The outbox: deliveries are written in the same transaction as the state
//! change that causes them, so an event is never lost nor sent for a change
//! that was rolled back.

use chrono::{DateTime, Utc};
use entity::{
    DeliveryStatus, Marketplace, PriceFilter, SubscriptionStatus, product, webhook_delivery,
    webhook_subscription,
};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter,
    TryInsertResult,
};
use serde::Serialize;
use uuid::Uuid;

use crate::query::movers::PriceMove;
use crate::query::sessions::SessionStats;
use crate::text;

/// A session completed (the spec's event).
pub const SESSION_COMPLETED: &str = "scrape_session.completed";
/// A merge moved a product's lowest current price in a currency.
pub const PRICE_CHANGED: &str = "product.price_changed";

/// The payload of `scrape_session.completed`, fields in the spec's order.
#[derive(Debug, Serialize)]
struct SessionCompleted<'a> {
    event: &'static str,
    user_id: Uuid,
    scrape_session_id: Uuid,
    status: &'static str,
    stats: &'a SessionStats,
    url: String,
}

/// The exact body bytes of a `scrape_session.completed` event. `url` is the
/// session's products endpoint under `public_url`.
fn session_completed_body(
    account_id: Uuid,
    session_id: Uuid,
    stats: &SessionStats,
    public_url: &str,
) -> Result<String, DbErr> {
    let payload = SessionCompleted {
        event: SESSION_COMPLETED,
        user_id: account_id,
        scrape_session_id: session_id,
        status: "completed",
        stats,
        url: format!(
            "{}/v1/me/scrapes/{session_id}/products",
            public_url.trim_end_matches('/')
        ),
    };
    json_body(&payload)
}

/// A delivery's body as JSON. Our payloads are plain strings, ids, numbers
/// and times, which serialize; should one not, the merge pass that wrote it
/// fails and is retried, instead of the process stopping.
fn json_body(payload: &impl Serialize) -> Result<String, DbErr> {
    serde_json::to_string(payload)
        .map_err(|e| DbErr::Custom(format!("a webhook body did not serialize: {e}")))
}

/// Writes one pending `scrape_session.completed` delivery per active
/// subscription of the account, due at `now`. Pass the transaction that
/// completes the session. Enqueueing the same session again writes nothing
/// (one delivery per subscription, session and event). Returns how many
/// deliveries were written.
pub async fn enqueue_session_completed(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    session_id: Uuid,
    stats: &SessionStats,
    public_url: &str,
    now: DateTime<Utc>,
) -> Result<usize, DbErr> {
    use webhook_delivery::Column;
    let subscriptions = webhook_subscription::Entity::find()
        .filter(webhook_subscription::Column::AccountId.eq(account_id))
        .filter(webhook_subscription::Column::SessionEvents.eq(true))
        .filter(webhook_subscription::Column::Status.eq(SubscriptionStatus::Active))
        .all(db)
        .await?;
    let body = session_completed_body(account_id, session_id, stats, public_url)?;
    let rows = subscriptions
        .iter()
        .map(|s| pending(s.id, session_id, SESSION_COMPLETED, body.clone(), now));
    // The unique index behind this covers the completions' own deliveries
    // only (redeliveries repeat them, price changes are many per session),
    // so the conflict target names its condition.
    let once = OnConflict::columns([Column::SubscriptionId, Column::SessionId, Column::Event])
        .target_and_where(
            Expr::col(Column::RedeliveryOf)
                .is_null()
                // A literal, as in the index: SQLite matches a conflict
                // target to a partial index by its condition's text.
                .and(Expr::col(Column::Event).eq(Expr::cust(format!("'{SESSION_COMPLETED}'")))),
        )
        .do_nothing()
        .to_owned();
    let written = webhook_delivery::Entity::insert_many(rows)
        .on_conflict(once)
        .try_insert()
        .exec_without_returning(db)
        .await?;
    Ok(match written {
        TryInsertResult::Inserted(n) => usize::try_from(n).unwrap_or(usize::MAX),
        TryInsertResult::Empty | TryInsertResult::Conflicted => 0,
    })
}

/// The payload of `product.price_changed`.
#[derive(Debug, Serialize)]
struct PriceChanged<'a> {
    event: &'static str,
    product_id: Uuid,
    marketplace: Marketplace,
    external_id: &'a str,
    name: &'a str,
    brand: &'a str,
    currency: &'a str,
    before: f64,
    after: f64,
    change_percent: f64,
    changed_at: DateTime<Utc>,
    /// The product under `/v1/products/{id}`.
    url: String,
}

/// Whether `filter` picks the move `price` of `product`.
fn picks(filter: &PriceFilter, product: &product::Model, price: &PriceMove) -> bool {
    let brand = |b: &String| text::fold(b) == product.brand_key;
    (filter.brands.is_empty() || filter.brands.iter().any(brand))
        && (filter.product_ids.is_empty() || filter.product_ids.contains(&product.id))
        && (filter.marketplaces.is_empty() || filter.marketplaces.contains(&product.marketplace))
        && price.change_percent.abs() >= filter.min_change_percent
}

/// Writes one pending `product.price_changed` delivery, due at `now`, per
/// move of `product` and active subscription (of any account: products are
/// everyone's) whose filter picks it. Pass the transaction of the merge
/// that moved the prices, of a submission of `session_id`. One merge is one
/// item: it writes at most one delivery per currency the item prices, per
/// subscription.
pub async fn enqueue_price_moves(
    db: &impl ConnectionTrait,
    product: &product::Model,
    moves: &[PriceMove],
    session_id: Uuid,
    public_url: &str,
    now: DateTime<Utc>,
) -> Result<usize, DbErr> {
    use webhook_subscription::Column;
    let subscriptions = webhook_subscription::Entity::find()
        .filter(Column::PriceEvents.eq(true))
        .filter(Column::Status.eq(SubscriptionStatus::Active))
        .all(db)
        .await?;
    let url = format!(
        "{}/v1/products/{}",
        public_url.trim_end_matches('/'),
        product.id
    );
    let mut rows = Vec::new();
    for price in moves {
        let body = PriceChanged {
            event: PRICE_CHANGED,
            product_id: product.id,
            marketplace: product.marketplace,
            external_id: &product.external_id,
            name: &product.name,
            brand: &product.brand,
            currency: &price.currency,
            before: price.before,
            after: price.after,
            change_percent: price.change_percent,
            changed_at: price.changed_at,
            url: url.clone(),
        };
        let body = json_body(&body)?;
        let picked = subscriptions.iter().filter(|s| {
            picks(
                s.price_filter.as_ref().unwrap_or(&PriceFilter::default()),
                product,
                price,
            )
        });
        rows.extend(picked.map(|s| pending(s.id, session_id, PRICE_CHANGED, body.clone(), now)));
    }
    let written = rows.len();
    if written > 0 {
        webhook_delivery::Entity::insert_many(rows)
            .exec_without_returning(db)
            .await?;
    }
    Ok(written)
}

/// A delivery of `event` with `payload` to `subscription`, due at `now`.
fn pending(
    subscription: Uuid,
    session_id: Uuid,
    event: &str,
    payload: String,
    now: DateTime<Utc>,
) -> webhook_delivery::ActiveModel {
    webhook_delivery::ActiveModel {
        id: Set(Uuid::new_v4()),
        subscription_id: Set(subscription),
        session_id: Set(session_id),
        event: Set(event.to_owned()),
        payload: Set(payload),
        status: Set(DeliveryStatus::Pending),
        attempts: Set(0),
        next_attempt_at: Set(Some(now)),
        locked_until: Set(None),
        in_flight: Set(false),
        created_at: Set(now),
        finished_at: Set(None),
        redelivery_of: Set(None),
    }
}
