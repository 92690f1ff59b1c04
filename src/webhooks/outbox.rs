//! Writing `scrape_session.completed` deliveries into the outbox.

use chrono::{DateTime, Utc};
use entity::{DeliveryStatus, SubscriptionStatus, webhook_delivery, webhook_subscription};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use serde::Serialize;
use uuid::Uuid;

use crate::query::sessions::SessionStats;

pub const SESSION_COMPLETED: &str = "scrape_session.completed";

/// The payload of the spec, field for field.
#[derive(Serialize)]
struct Payload<'a> {
    event: &'a str,
    user_id: Uuid,
    scrape_session_id: Uuid,
    status: &'a str,
    stats: &'a SessionStats,
    url: String,
}

/// Writes one pending delivery per active subscription of the account, with
/// the exact body bytes every attempt will send. A second call for the same
/// session writes nothing. Returns how many deliveries were written.
pub async fn enqueue_session_completed(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    session_id: Uuid,
    stats: &SessionStats,
    public_url: &str,
    now: DateTime<Utc>,
) -> Result<usize, DbErr> {
    let body = serde_json::to_string(&Payload {
        event: SESSION_COMPLETED,
        user_id: account_id,
        scrape_session_id: session_id,
        status: "completed",
        stats,
        url: format!(
            "{}/v1/me/scrapes/{session_id}/products",
            public_url.trim_end_matches('/')
        ),
    })
    .map_err(|e| DbErr::Custom(e.to_string()))?;
    let subscriptions = webhook_subscription::Entity::find()
        .filter(webhook_subscription::Column::AccountId.eq(account_id))
        .filter(webhook_subscription::Column::Status.eq(SubscriptionStatus::Active))
        .all(db)
        .await?;
    let mut written = 0;
    for subscription in subscriptions {
        let delivery = webhook_delivery::ActiveModel {
            id: Set(Uuid::new_v4()),
            subscription_id: Set(subscription.id),
            session_id: Set(session_id),
            event: Set(SESSION_COMPLETED.into()),
            payload: Set(body.clone()),
            status: Set(DeliveryStatus::Pending),
            attempts: Set(0),
            next_attempt_at: Set(Some(now)),
            locked_until: Set(None),
            created_at: Set(now),
            finished_at: Set(None),
        };
        let conflict = OnConflict::columns([
            webhook_delivery::Column::SubscriptionId,
            webhook_delivery::Column::SessionId,
            webhook_delivery::Column::Event,
        ])
        .do_nothing()
        .to_owned();
        let inserted = webhook_delivery::Entity::insert(delivery)
            .on_conflict(conflict)
            .exec_without_returning(db)
            .await?;
        written += inserted as usize;
    }
    Ok(written)
}
