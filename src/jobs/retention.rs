//! Retention: submissions older than the retention period are deleted. A
//! session left without submissions reads as `processing` again (total 0) and
//! fires nothing: completion only happens in the merge pass.

use chrono::{DateTime, TimeDelta, Utc};
use entity::submission;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};

/// Deletes submissions created before `now - retention`; returns how many.
#[tracing::instrument(skip_all)]
pub async fn purge(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    retention: TimeDelta,
) -> Result<u64, DbErr> {
    let deleted = submission::Entity::delete_many()
        .filter(submission::Column::CreatedAt.lt(now - retention))
        .exec(db)
        .await?;
    Ok(deleted.rows_affected)
}
