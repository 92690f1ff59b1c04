//! Redelivery: a finished delivery (succeeded or failed) sent again as a new
//! delivery. The new row carries the same event body, a new id (so the
//! `X-Vitrina-Delivery` header differs) and `redelivery_of`, the id of the
//! delivery it repeats. It is an ordinary pending delivery from then on: the
//! delivery job signs it with the secrets in force when it is sent, checks
//! its target and retries it like any other.

use chrono::{DateTime, Utc};
use entity::{DeliveryStatus, webhook_delivery};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::subscriptions::{self, SubscriptionError};

/// Enqueues a redelivery of one of the subscription's finished deliveries,
/// due at `now`, and returns it. The subscription must be the account's and
/// active; a delivery still pending cannot be redelivered (its retries are
/// under way).
pub async fn redeliver(
    db: &DatabaseConnection,
    account_id: Uuid,
    subscription_id: Uuid,
    delivery_id: Uuid,
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
    Entity::insert(webhook_delivery::ActiveModel::from(redelivery.clone()))
        .exec_without_returning(db)
        .await?;
    Ok(redelivery)
}

/// Redelivers a delivery of any account's subscription (the operator's CLI).
pub async fn redeliver_for_operator(
    db: &DatabaseConnection,
    subscription_id: Uuid,
    delivery_id: Uuid,
    now: DateTime<Utc>,
) -> Result<webhook_delivery::Model, SubscriptionError> {
    let owner = subscriptions::owner_for_operator(db, subscription_id).await?;
    redeliver(db, owner, subscription_id, delivery_id, now).await
}
