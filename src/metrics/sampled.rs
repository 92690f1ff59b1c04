//! Gauges read from the database: the merge backlog and the webhook
//! deliveries due, one statement each per sample, over the indexes the jobs
//! claim by (`submissions_claim`, `webhook_deliveries_due`); and the
//! connection pool, read from the pool itself when metrics are scraped.
//!
//! Every replica samples the same tables: take the `max` of these gauges
//! across replicas, not their sum.

use std::time::Duration;

use chrono::{DateTime, Utc};
use entity::{DeliveryStatus, SubmissionStatus, submission, webhook_delivery};
use metrics::gauge;
use metrics_exporter_prometheus::PrometheusHandle;
use sea_orm::sea_query::Expr;
use sea_orm::sqlx::{self, Pool};
use sea_orm::{
    ColumnTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, ExprTrait, FromQueryResult,
    QueryFilter, QuerySelect,
};

use super::{
    MERGE_BACKLOG, MERGE_OLDEST_PENDING, POOL_CONNECTIONS, POOL_MAX, WEBHOOK_DUE,
    WEBHOOK_OLDEST_DUE,
};
use crate::clock::SharedClock;

/// Submissions the merge pass has yet to finish.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeBacklog {
    pub pending: i64,
    /// Claimed by a worker, under its lease.
    pub processing: i64,
    /// When the oldest pending submission was uploaded.
    pub oldest_pending: Option<DateTime<Utc>>,
}

/// Webhook deliveries waiting to be sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DueDeliveries {
    /// Pending deliveries whose next attempt is due.
    pub due: i64,
    /// The earliest time one of them was due.
    pub oldest_due: Option<DateTime<Utc>>,
}

/// The merge backlog, in one statement.
pub async fn merge_backlog(db: &DatabaseConnection) -> Result<MergeBacklog, DbErr> {
    #[derive(FromQueryResult)]
    struct ByStatus {
        status: SubmissionStatus,
        submissions: i64,
        oldest: Option<DateTime<Utc>>,
    }
    use submission::Column;
    let rows = submission::Entity::find()
        .select_only()
        .column(Column::Status)
        .column_as(Expr::col(Column::Id).count(), "submissions")
        .column_as(Expr::col(Column::CreatedAt).min(), "oldest")
        .filter(Column::Status.is_in([SubmissionStatus::Pending, SubmissionStatus::Processing]))
        .group_by(Column::Status)
        .into_model::<ByStatus>()
        .all(db)
        .await?;
    let mut backlog = MergeBacklog::default();
    for row in rows {
        match row.status {
            SubmissionStatus::Pending => {
                backlog.pending = row.submissions;
                backlog.oldest_pending = row.oldest;
            }
            _ => backlog.processing = row.submissions,
        }
    }
    Ok(backlog)
}

/// The deliveries due at `now`, in one statement.
pub async fn due_deliveries(
    db: &DatabaseConnection,
    now: DateTime<Utc>,
) -> Result<DueDeliveries, DbErr> {
    #[derive(FromQueryResult)]
    struct Due {
        due: i64,
        oldest: Option<DateTime<Utc>>,
    }
    use webhook_delivery::Column;
    let due = webhook_delivery::Entity::find()
        .select_only()
        .column_as(Expr::col(Column::Id).count(), "due")
        .column_as(Expr::col(Column::NextAttemptAt).min(), "oldest")
        .filter(Column::Status.eq(DeliveryStatus::Pending))
        .filter(Column::NextAttemptAt.lte(now))
        .into_model::<Due>()
        .one(db)
        .await?;
    Ok(due.map_or_else(DueDeliveries::default, |d| DueDeliveries {
        due: d.due,
        oldest_due: d.oldest,
    }))
}

/// Samples the gauges every `every` until the process ends, and keeps the
/// recorder's histograms drained. A failed sample keeps the last values.
pub async fn run(
    db: DatabaseConnection,
    clock: SharedClock,
    every: Duration,
    recorder: &'static PrometheusHandle,
) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        recorder.run_upkeep();
        let now = clock.now();
        match merge_backlog(&db).await {
            Ok(backlog) => {
                gauge!(MERGE_BACKLOG, "status" => "pending").set(backlog.pending as f64);
                gauge!(MERGE_BACKLOG, "status" => "processing").set(backlog.processing as f64);
                gauge!(MERGE_OLDEST_PENDING).set(age(backlog.oldest_pending, now));
            }
            Err(e) => tracing::debug!(error = %e, "merge backlog not sampled"),
        }
        match due_deliveries(&db, now).await {
            Ok(due) => {
                gauge!(WEBHOOK_DUE).set(due.due as f64);
                gauge!(WEBHOOK_OLDEST_DUE).set(age(due.oldest_due, now));
            }
            Err(e) => tracing::debug!(error = %e, "webhook deliveries due not sampled"),
        }
    }
}

/// Seconds from `since` to `now`; 0 without a time.
fn age(since: Option<DateTime<Utc>>, now: DateTime<Utc>) -> f64 {
    since.map_or(0.0, |since| {
        ((now - since).num_milliseconds() as f64 / 1000.0).max(0.0)
    })
}

/// Sets the pool gauges to the pool's use now.
pub fn record_pool(db: &DatabaseConnection) {
    let (open, idle, max) = match db.get_database_backend() {
        DbBackend::Postgres => pool_use(db.get_postgres_connection_pool()),
        DbBackend::Sqlite => pool_use(db.get_sqlite_connection_pool()),
        _ => return,
    };
    gauge!(POOL_CONNECTIONS, "state" => "idle").set(idle as f64);
    gauge!(POOL_CONNECTIONS, "state" => "in_use").set(open.saturating_sub(idle) as f64);
    gauge!(POOL_MAX).set(max as f64);
}

/// Connections open, idle, and at most.
fn pool_use<DB: sqlx::Database>(pool: &Pool<DB>) -> (usize, usize, u32) {
    (
        pool.size() as usize,
        pool.num_idle(),
        pool.options().get_max_connections(),
    )
}
