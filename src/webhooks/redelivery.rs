//! Redelivery: a finished delivery (succeeded or failed) sent again as a new
//! delivery. The new row carries the same event body, a new id (so the
//! `X-Vitrina-Delivery` header differs) and `redelivery_of`, the id of the
//! delivery it repeats. It is an ordinary pending delivery from then on: the
//! delivery job signs it with the secrets in force when it is sent, checks
//! its target and retries it like any other.
//!
//! Redeliveries of one subscription waiting to be sent are capped
//! (`VITRINA_WEBHOOK_MAX_PENDING_REDELIVERIES`), so a caller cannot grow the
//! outbox without bound by asking again and again.

use chrono::{DateTime, Utc};
use entity::{DeliveryStatus, webhook_delivery, webhook_subscription};
use sea_orm::sea_query::LockType;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QuerySelect,
};
use uuid::Uuid;

use super::subscriptions::{self, SubscriptionError};

/// Enqueues a redelivery of one of the subscription's finished deliveries,
/// due at `now`, and returns it. The subscription must be the account's and
/// active; a delivery still pending cannot be redelivered (its retries are
/// under way); nor can one while `max_pending` redeliveries of the
/// subscription wait to be sent.
pub async fn redeliver(
    db: &DatabaseConnection,
    account_id: Uuid,
    subscription_id: Uuid,
    delivery_id: Uuid,
    max_pending: u32,
    now: DateTime<Utc>,
) -> Result<webhook_delivery::Model, SubscriptionError> {
    use webhook_delivery::{Column, Entity};
    subscriptions::find_active(db, account_id, subscription_id).await?;
    let original = Entity::find_by_id(delivery_id)
        .filter(Column::SubscriptionId.eq(subscription_id))
        .one(db)
        .await?
        .ok_or(SubscriptionError::DeliveryNotFound)?;
    if original.status == DeliveryStatus::Pending {
        return Err(SubscriptionError::DeliveryNotFinished);
    }
    let redelivery = webhook_delivery::Model {
        id: Uuid::new_v4(),
        status: DeliveryStatus::Pending,
        attempts: 0,
        next_attempt_at: Some(now),
        locked_until: None,
        in_flight: false,
        created_at: now,
        finished_at: None,
        redelivery_of: Some(original.id),
        ..original
    };
    // Insert, then count with the new row included, and undo it past the
    // cap, as subscriptions::create does: the insert takes SQLite's write
    // lock at once; on PostgreSQL the subscription's row lock makes
    // concurrent redeliveries count in turn (NO KEY UPDATE, since the
    // insert's foreign-key check holds KEY SHARE on it).
    let tx = crate::db::begin_write(db).await?;
    Entity::insert(webhook_delivery::ActiveModel::from(redelivery.clone()))
        .exec_without_returning(&tx)
        .await?;
    webhook_subscription::Entity::find_by_id(subscription_id)
        .lock(LockType::NoKeyUpdate)
        .one(&tx)
        .await?;
    if pending_redeliveries(&tx, subscription_id).await? > u64::from(max_pending) {
        tx.rollback().await?;
        return Err(SubscriptionError::RedeliveryLimit { limit: max_pending });
    }
    tx.commit().await?;
    Ok(redelivery)
}

async fn pending_redeliveries(
    conn: &impl ConnectionTrait,
    subscription_id: Uuid,
) -> Result<u64, DbErr> {
    use webhook_delivery::{Column, Entity};
    Entity::find()
        .filter(Column::SubscriptionId.eq(subscription_id))
        .filter(Column::RedeliveryOf.is_not_null())
        .filter(Column::Status.eq(DeliveryStatus::Pending))
        .count(conn)
        .await
}

/// Redelivers a delivery of any account's subscription (the operator's CLI).
pub async fn redeliver_for_operator(
    db: &DatabaseConnection,
    subscription_id: Uuid,
    delivery_id: Uuid,
    max_pending: u32,
    now: DateTime<Utc>,
) -> Result<webhook_delivery::Model, SubscriptionError> {
    let owner = subscriptions::owner_for_operator(db, subscription_id).await?;
    redeliver(db, owner, subscription_id, delivery_id, max_pending, now).await
}
