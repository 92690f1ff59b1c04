//! The merge pass: pending submissions become products.
//!
//! A worker claims a batch (on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so
//! workers on several machines never take the same rows), marks it
//! `processing` with a lease, and merges each submission in its own
//! transaction, ending it `merged`, `flagged` or `rejected` (with a reason).
//! A worker that dies mid-batch loses nothing: once its lease runs out the
//! rows return to `pending`. A worker whose lease was taken over finds its
//! submission no longer leased to it and rolls its merge back.

pub mod apply;
pub mod item;

use chrono::{DateTime, TimeDelta, Utc};
use entity::{SubmissionStatus, scrape_session, submission};
use sea_orm::sea_query::{Expr, LockBehavior, LockType, Query};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, FromQueryResult,
    QueryFilter,
};

use super::completion;
use crate::clock::Clock;
use crate::events::SessionEvents;
use apply::Outcome;
use item::ScrapedItem;

/// How a merge pass runs.
#[derive(Debug, Clone)]
pub struct MergeSettings {
    /// Submissions claimed at a time.
    pub batch: u64,
    /// How long a claim holds.
    pub lease: TimeDelta,
    /// Base of the absolute URLs written into webhook payloads.
    pub public_url: String,
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Expired leases returned to pending.
    pub released: u64,
    pub merged: u64,
    pub flagged: u64,
    pub rejected: u64,
    /// Sessions this pass completed.
    pub completed_sessions: u64,
}

/// Returns submissions whose lease ran out to `pending`.
pub async fn release_expired(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<u64, DbErr> {
    let result = submission::Entity::update_many()
        .col_expr(
            submission::Column::Status,
            Expr::val(SubmissionStatus::Pending.as_str()),
        )
        .col_expr(
            submission::Column::LeaseExpiresAt,
            Expr::val(Option::<DateTime<Utc>>::None),
        )
        .filter(submission::Column::Status.eq(SubmissionStatus::Processing))
        .filter(submission::Column::LeaseExpiresAt.lt(now))
        .exec(db)
        .await?;
    Ok(result.rows_affected)
}

/// Claims up to `batch` pending submissions, oldest first, leased until
/// `now + lease`.
pub async fn claim(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    settings: &MergeSettings,
) -> Result<Vec<submission::Model>, DbErr> {
    let mut pending = Query::select();
    pending
        .column(submission::Column::Id)
        .from(submission::Entity)
        .and_where(submission::Column::Status.eq(SubmissionStatus::Pending.as_str()))
        .order_by(submission::Column::Id, sea_orm::Order::Asc)
        .limit(settings.batch);
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        pending.lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
    }
    let claim = Query::update()
        .table(submission::Entity)
        .value(
            submission::Column::Status,
            SubmissionStatus::Processing.as_str(),
        )
        .value(submission::Column::LeaseExpiresAt, now + settings.lease)
        .value(submission::Column::UpdatedAt, now)
        .and_where(submission::Column::Id.in_subquery(pending.to_owned()))
        .returning_all()
        .to_owned();
    let statement = db.get_database_backend().build(&claim);
    let mut rows = submission::Model::find_by_statement(statement)
        .all(db)
        .await?;
    rows.sort_by_key(|s| s.id);
    Ok(rows)
}

/// Claims and merges until nothing is pending.
#[tracing::instrument(skip_all)]
pub async fn run_pass(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    settings: &MergeSettings,
    events: &SessionEvents,
) -> Result<MergeReport, DbErr> {
    let mut report = MergeReport {
        released: release_expired(db, clock.now()).await?,
        ..Default::default()
    };
    loop {
        let batch = claim(db, clock.now(), settings).await?;
        if batch.is_empty() {
            return Ok(report);
        }
        for submission in batch {
            merge_one(db, clock, settings, events, submission, &mut report).await?;
        }
    }
}

/// Merges one claimed submission in its own transaction.
async fn merge_one(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    settings: &MergeSettings,
    events: &SessionEvents,
    claimed: submission::Model,
    report: &mut MergeReport,
) -> Result<(), DbErr> {
    let now = clock.now();
    let txn = crate::db::begin_write(db).await?;
    let Some(session) = scrape_session::Entity::find_by_id(claimed.session_id)
        .one(&txn)
        .await?
    else {
        return txn.rollback().await;
    };
    let observed_at = |item: &ScrapedItem| item.observed_at.unwrap_or(claimed.created_at);
    let (status, product_id, reason) = match ScrapedItem::parse(&claimed.payload, now) {
        Err(reason) => (SubmissionStatus::Rejected, None, Some(reason)),
        Ok(item) => {
            match apply::apply(&txn, &item, session.account_id, observed_at(&item)).await? {
                Outcome::Merged(id) => (SubmissionStatus::Merged, Some(id), None),
                Outcome::Flagged(id, reason) => (SubmissionStatus::Flagged, Some(id), Some(reason)),
            }
        }
    };
    let finished = submission::Entity::update_many()
        .col_expr(submission::Column::Status, Expr::val(status.as_str()))
        .col_expr(submission::Column::ProductId, Expr::val(product_id))
        .col_expr(submission::Column::Reason, Expr::val(reason))
        .col_expr(
            submission::Column::LeaseExpiresAt,
            Expr::val(Option::<DateTime<Utc>>::None),
        )
        .col_expr(submission::Column::UpdatedAt, Expr::val(now))
        .filter(submission::Column::Id.eq(claimed.id))
        .filter(submission::Column::Status.eq(SubmissionStatus::Processing))
        .filter(submission::Column::LeaseExpiresAt.eq(claimed.lease_expires_at))
        .exec(&txn)
        .await?;
    if finished.rows_affected == 0 {
        // The lease ran out and another worker owns the submission now.
        return txn.rollback().await;
    }
    let completed = completion::after_change(&txn, &session, &settings.public_url, now).await?;
    txn.commit().await?;
    events.publish(db, session.id).await;
    match status {
        SubmissionStatus::Merged => report.merged += 1,
        SubmissionStatus::Flagged => report.flagged += 1,
        _ => report.rejected += 1,
    }
    report.completed_sessions += u64::from(completed);
    Ok(())
}
