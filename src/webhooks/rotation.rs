//! Signing-secret rotation. A rotation generates a new secret and keeps the
//! one it replaces for an overlap (`VITRINA_WEBHOOK_SECRET_OVERLAP_HOURS`),
//! during which every delivery carries both signatures, the new one first,
//! so a receiver can switch to the new secret whenever it likes within that
//! window. Rotating again during an overlap drops the oldest secret: only
//! the one just replaced stays valid.

use chrono::{DateTime, TimeDelta, Utc};
use entity::webhook_subscription;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::signature::generate_secret;
use super::subscriptions::{self, SubscriptionError};

/// Gives one of the account's subscriptions a new secret; the old one keeps
/// signing until `now + overlap`. The returned model holds the new secret;
/// callers show it once.
pub async fn rotate(
    db: &DatabaseConnection,
    account_id: Uuid,
    id: Uuid,
    overlap: TimeDelta,
    now: DateTime<Utc>,
) -> Result<webhook_subscription::Model, SubscriptionError> {
    use webhook_subscription::{Column, Entity};
    loop {
        let current = subscriptions::find(db, account_id, id).await?;
        let rotated = webhook_subscription::Model {
            secret: generate_secret(),
            previous_secret: Some(current.secret.clone()),
            previous_secret_expires_at: Some(now + overlap),
            ..current.clone()
        };
        // Only over the secret just read: of two rotations at once, the
        // later one reads again, so neither hands out a secret that the
        // other silently replaced.
        let changed = Entity::update_many()
            .col_expr(Column::Secret, Expr::value(rotated.secret.clone()))
            .col_expr(
                Column::PreviousSecret,
                Expr::value(rotated.previous_secret.clone()),
            )
            .col_expr(
                Column::PreviousSecretExpiresAt,
                Expr::value(rotated.previous_secret_expires_at),
            )
            .filter(Column::Id.eq(id))
            .filter(Column::Secret.eq(current.secret))
            .exec(db)
            .await?
            .rows_affected;
        if changed > 0 {
            return Ok(rotated);
        }
    }
}

/// Rotates a subscription of any account (the operator's CLI).
pub async fn rotate_for_operator(
    db: &DatabaseConnection,
    id: Uuid,
    overlap: TimeDelta,
    now: DateTime<Utc>,
) -> Result<webhook_subscription::Model, SubscriptionError> {
    let owner = subscriptions::owner_for_operator(db, id).await?;
    rotate(db, owner, id, overlap, now).await
}

/// The secrets a delivery sent at `now` is signed with: the current one,
/// then the replaced one while its overlap lasts.
pub fn signing_secrets(
    subscription: &webhook_subscription::Model,
    now: DateTime<Utc>,
) -> Vec<&str> {
    let previous = match (
        &subscription.previous_secret,
        subscription.previous_secret_expires_at,
    ) {
        (Some(secret), Some(until)) if now < until => Some(secret.as_str()),
        _ => None,
    };
    std::iter::once(subscription.secret.as_str())
        .chain(previous)
        .collect()
}
