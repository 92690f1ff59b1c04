//! A subscription's allowance of attempts: auto-disable is exact.
//!
//! A subscription is disabled once `disable_after` attempts in a row have
//! failed (`VITRINA_WEBHOOK_DISABLE_AFTER`), and no more attempts are sent to
//! it than that allows, however many of its deliveries are due at once and
//! however many workers or replicas send them. So an attempt is reserved in
//! the database before it is sent:
//!
//! - [`reserve`] marks a claimed delivery `in_flight` only while
//!   `consecutive_failures + attempts in flight < disable_after`, where the
//!   attempts in flight are the subscription's deliveries marked so.
//! - Recording an outcome ([`settle`], with the delivery job clearing the
//!   delivery's mark in the same transaction) resets or extends the run of
//!   failures, and disables the subscription when the run reaches the
//!   threshold.
//!
//! Both lock the subscription row first (`FOR NO KEY UPDATE` on PostgreSQL,
//! where each later statement then sees everything committed before the lock
//! was granted; the write lock of `BEGIN IMMEDIATE` on SQLite), so the
//! reservations and outcomes of one subscription happen one after another on
//! every replica. A reservation therefore never lets `failures + in flight`
//! pass the threshold, an outcome never raises it, and when the failures
//! reach it nothing else is in flight: the threshold's last failure disables
//! the subscription and its remaining deliveries fail unsent. (A run found
//! already at the threshold with nothing in flight, because the setting was
//! lowered, disables it at the reservation.)
//!
//! A worker that stops mid-attempt leaves its delivery `in_flight`, holding
//! one attempt. Once its lease runs out the delivery is claimed again and
//! that attempt is recorded as failed (it may have reached the receiver; its
//! outcome is unknown), which returns the reservation.

use std::collections::VecDeque;

use chrono::{DateTime, TimeDelta, Utc};
use entity::{DeliveryStatus, SubscriptionStatus, webhook_delivery, webhook_subscription};
use sea_orm::sea_query::{Expr, LockType};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QuerySelect,
};
use uuid::Uuid;

use super::subscriptions;

/// Attempts reserved by one [`reserve`] call, with the subscription they go to.
pub struct Reserved {
    pub subscription: webhook_subscription::Model,
    /// Marked in flight, their leases renewed.
    pub deliveries: Vec<webhook_delivery::Model>,
}

/// Reserves attempts at `now` for as many of `waiting` (claimed by this
/// worker, taken from the front) as the subscription's allowance has room
/// for, and renews their leases by `lease`. A delivery no longer this
/// worker's is dropped from `waiting`. `None` when the subscription is not
/// active.
pub async fn reserve(
    db: &DatabaseConnection,
    subscription_id: Uuid,
    disable_after: u32,
    waiting: &mut VecDeque<webhook_delivery::Model>,
    now: DateTime<Utc>,
    lease: TimeDelta,
) -> Result<Option<Reserved>, DbErr> {
    let tx = crate::db::begin_write(db).await?;
    let subscription = webhook_subscription::Entity::find_by_id(subscription_id)
        .lock(LockType::NoKeyUpdate)
        .one(&tx)
        .await?
        .filter(|s| s.status == SubscriptionStatus::Active);
    let Some(subscription) = subscription else {
        tx.rollback().await?;
        return Ok(None);
    };
    let in_flight = webhook_delivery::Entity::find()
        .filter(webhook_delivery::Column::SubscriptionId.eq(subscription_id))
        .filter(webhook_delivery::Column::InFlight.eq(true))
        .count(&tx)
        .await?;
    let left = i64::from(disable_after) - i64::from(subscription.consecutive_failures);
    if left <= 0 && in_flight == 0 {
        // The run of failures is already at the threshold (it was lowered
        // since): nothing will be sent, so nothing would disable it.
        subscriptions::deactivate(&tx, subscription_id, now).await?;
        tx.commit().await?;
        return Ok(None);
    }
    let room = left.saturating_sub(i64::try_from(in_flight).unwrap_or(i64::MAX));
    let lease_until = now + lease;
    let mut deliveries = Vec::new();
    while i64::try_from(deliveries.len()).unwrap_or(i64::MAX) < room
        && let Some(mut delivery) = waiting.pop_front()
    {
        if mark_in_flight(&tx, &delivery, lease_until).await? {
            delivery.in_flight = true;
            delivery.locked_until = Some(lease_until);
            deliveries.push(delivery);
        }
    }
    tx.commit().await?;
    Ok(Some(Reserved {
        subscription,
        deliveries,
    }))
}

/// Marks a claimed delivery in flight under a renewed lease, if it is still
/// this worker's: pending, not in flight, and leased as this worker left it.
async fn mark_in_flight(
    conn: &impl ConnectionTrait,
    delivery: &webhook_delivery::Model,
    lease_until: DateTime<Utc>,
) -> Result<bool, DbErr> {
    use webhook_delivery::{Column, Entity};
    let marked = Entity::update_many()
        .col_expr(Column::InFlight, Expr::value(true))
        .col_expr(Column::LockedUntil, Expr::value(lease_until))
        .filter(Column::Id.eq(delivery.id))
        .filter(Column::Status.eq(DeliveryStatus::Pending))
        .filter(Column::InFlight.eq(false))
        .filter(Column::LockedUntil.eq(delivery.locked_until))
        .exec(conn)
        .await?
        .rows_affected;
    Ok(marked == 1)
}

/// What an attempt's outcome leaves of its subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Still active: a failed delivery may be retried.
    Active,
    /// Disabled now or before: nothing more is sent to it.
    Inactive,
}

/// Counts one attempt's outcome on its subscription, inside the transaction
/// that records it (begun with [`crate::db::begin_write`]): a success resets
/// the run of failures, a failure extends it and disables the subscription
/// (failing its deliveries not in flight) when it reaches `disable_after`.
pub async fn settle(
    conn: &impl ConnectionTrait,
    subscription_id: Uuid,
    success: bool,
    disable_after: u32,
    now: DateTime<Utc>,
) -> Result<Standing, DbErr> {
    use webhook_subscription::{Column, Entity};
    let subscription = Entity::find_by_id(subscription_id)
        .lock(LockType::NoKeyUpdate)
        .one(conn)
        .await?
        .filter(|s| s.status == SubscriptionStatus::Active);
    let Some(subscription) = subscription else {
        return Ok(Standing::Inactive);
    };
    let failures = if success {
        0
    } else {
        subscription.consecutive_failures.saturating_add(1)
    };
    Entity::update_many()
        .col_expr(Column::ConsecutiveFailures, Expr::value(failures))
        .filter(Column::Id.eq(subscription_id))
        .exec(conn)
        .await?;
    if !success && i64::from(failures) >= i64::from(disable_after) {
        tracing::warn!(subscription = %subscription_id, failures, "webhook subscription disabled after consecutive failures");
        subscriptions::deactivate(conn, subscription_id, now).await?;
        return Ok(Standing::Inactive);
    }
    Ok(Standing::Active)
}
