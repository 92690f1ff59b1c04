//! Claimed submissions going back to `pending`: those whose lease ran out,
//! and the unfinished rest of a batch cut short (a database fault, a
//! shutdown), at once rather than after its lease.
//!
//! A hand-back after a database fault often meets the same fault. The
//! worker then remembers the batch ([`Unreturned`]) and hands it back first
//! thing in its next pass, as soon as the database answers again, so a
//! short outage does not hold a batch for its whole lease. Only rows still
//! leased to this worker under that claim go back: a row another worker took
//! over once the lease ran out is left alone.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use entity::{SubmissionStatus, submission};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, ExprTrait, QueryFilter,
};

use crate::cache::versions::{DataVersions, Grains};

/// An update of submissions back to `pending`, unleased.
fn back_to_pending() -> sea_orm::UpdateMany<submission::Entity> {
    submission::Entity::update_many()
        .col_expr(
            submission::Column::Status,
            Expr::val(SubmissionStatus::Pending.as_str()),
        )
        .col_expr(
            submission::Column::LeaseExpiresAt,
            Expr::val(Option::<DateTime<Utc>>::None),
        )
}

/// Returns submissions whose lease ran out to `pending`.
pub async fn release_expired(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<u64, DbErr> {
    let result = back_to_pending()
        .filter(submission::Column::Status.eq(SubmissionStatus::Processing))
        .filter(submission::Column::LeaseExpiresAt.lt(now))
        .exec(db)
        .await?;
    Ok(result.rows_affected)
}

/// The unfinished rest of one claimed batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub ids: Vec<i64>,
    /// The claim's lease: rows under another lease are no longer this
    /// worker's.
    pub lease: Option<DateTime<Utc>>,
    /// The submission whose merge began (its attempt counted) and was
    /// stopped by the database's fault, not its own: its attempt is taken
    /// back with the hand-back.
    pub uncount: Option<i64>,
}

impl Batch {
    /// Returns the batch's rows still leased to this claim to `pending`, in
    /// one statement of a transaction that tells every process the
    /// sessions changed; the number returned.
    async fn hand_back(
        &self,
        db: &DatabaseConnection,
        versions: &DataVersions,
    ) -> Result<u64, DbErr> {
        let mut update = back_to_pending();
        if let Some(id) = self.uncount {
            let taken_back = Expr::case(submission::Column::Id.eq(id), 1).finally(0);
            update = update.col_expr(
                submission::Attempts,
                Expr::col(submission::Attempts).sub(taken_back),
            );
        }
        let handed = update
            .filter(submission::Column::Id.is_in(self.ids.iter().copied()))
            .filter(submission::Column::Status.eq(SubmissionStatus::Processing))
            .filter(submission::Column::LeaseExpiresAt.eq(self.lease));
        let txn = crate::db::begin_write(db).await?;
        let handed = handed.exec(&txn).await?.rows_affected;
        versions
            .commit(txn, Grains::SESSIONS.when(handed > 0))
            .await?;
        Ok(handed)
    }
}

/// The batches one worker could not hand back yet.
#[derive(Debug, Default)]
pub struct Unreturned(Mutex<Vec<Batch>>);

impl Unreturned {
    /// Hands `batch` back now, or, when the database fails again, keeps it
    /// for [`Self::hand_back_owed`].
    pub async fn hand_back(&self, db: &DatabaseConnection, versions: &DataVersions, batch: Batch) {
        if let Err(e) = batch.hand_back(db, versions).await {
            tracing::warn!(error = %e, "a cut-short batch goes back to pending once the database answers");
            self.owed().push(batch);
        }
    }

    /// Hands back every batch still owed; the rows returned. Stops at the
    /// first failure (the database is still unavailable), keeping what is
    /// left for the next call.
    pub async fn hand_back_owed(
        &self,
        db: &DatabaseConnection,
        versions: &DataVersions,
    ) -> Result<u64, DbErr> {
        let mut owed = std::mem::take(&mut *self.owed());
        let mut returned = 0;
        while let Some(batch) = owed.pop() {
            match batch.hand_back(db, versions).await {
                Ok(n) => returned += n,
                Err(e) => {
                    owed.push(batch);
                    self.owed().append(&mut owed);
                    return Err(e);
                }
            }
        }
        Ok(returned)
    }

    /// The list; a panic while it was held cannot have left it half-written
    /// (only whole pushes and takes happen under the lock).
    fn owed(&self) -> std::sync::MutexGuard<'_, Vec<Batch>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
