//! Retention: submissions, and webhook deliveries finished (succeeded or
//! failed) with their attempts, older than the retention period are deleted.
//! A session left without submissions reads as `processing` again (total 0)
//! and fires nothing: completion only happens in the merge pass. A delivery
//! still being sent is kept whatever its age.

use chrono::{DateTime, TimeDelta, Utc};
use entity::{submission, webhook_delivery};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};

/// What one pass deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub submissions: u64,
    /// Finished deliveries; their attempts go with them.
    pub deliveries: u64,
}

/// Deletes what is older than `now - retention`.
#[tracing::instrument(skip_all)]
pub async fn purge(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    retention: TimeDelta,
) -> Result<Purged, DbErr> {
    let before = now - retention;
    let submissions = submission::Entity::delete_many()
        .filter(submission::Column::CreatedAt.lt(before))
        .exec(db)
        .await?;
    // An unfinished delivery has no finished_at, which compares as unknown.
    let deliveries = webhook_delivery::Entity::delete_many()
        .filter(webhook_delivery::Column::FinishedAt.lt(before))
        .exec(db)
        .await?;
    Ok(Purged {
        submissions: submissions.rows_affected,
        deliveries: deliveries.rows_affected,
    })
}
