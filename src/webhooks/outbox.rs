//! The outbox: deliveries are written in the same transaction as the state
//! change that causes them, so an event is never lost nor sent for a change
//! that was rolled back.

use chrono::{DateTime, Utc};
use entity::{DeliveryStatus, SubscriptionStatus, webhook_delivery, webhook_subscription};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter,
    TryInsertResult,
};
use serde::Serialize;
use uuid::Uuid;

use crate::query::sessions::SessionStats;

/// The one event kind.
pub const SESSION_COMPLETED: &str = "scrape_session.completed";

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
) -> String {
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
    // Plain strings, ids and integers always serialize.
    serde_json::to_string(&payload).expect("the payload serializes")
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
        .filter(webhook_subscription::Column::Status.eq(SubscriptionStatus::Active))
        .all(db)
        .await?;
    let body = session_completed_body(account_id, session_id, stats, public_url);
    let rows = subscriptions.iter().map(|s| webhook_delivery::ActiveModel {
        id: Set(Uuid::new_v4()),
        subscription_id: Set(s.id),
        session_id: Set(session_id),
        event: Set(SESSION_COMPLETED.to_owned()),
        payload: Set(body.clone()),
        status: Set(DeliveryStatus::Pending),
        attempts: Set(0),
        next_attempt_at: Set(Some(now)),
        locked_until: Set(None),
        in_flight: Set(false),
        created_at: Set(now),
        finished_at: Set(None),
        redelivery_of: Set(None),
    });
    // The unique index behind this covers the events' own deliveries only
    // (redeliveries repeat them), so the conflict target names its condition.
    let once = OnConflict::columns([Column::SubscriptionId, Column::SessionId, Column::Event])
        .target_and_where(Expr::col(Column::RedeliveryOf).is_null())
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
