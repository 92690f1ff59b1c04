//! Retention: submissions, and webhook deliveries finished (succeeded or
//! failed) with their attempts, older than the retention period are deleted;
//! so is price history older than its own period, when one is set
//! (`history`). A session left without submissions reads as `processing`
//! again (total 0) and fires nothing: completion only happens in the merge
//! pass. A delivery still being sent is kept whatever its age.
//!
//! Every delete is one statement of at most `batch` rows, oldest first, run
//! in a transaction of its own, so it holds its locks (SQLite's write lock,
//! PostgreSQL's row locks) for a few milliseconds, never for a whole purge;
//! a pass runs at most `batches_per_pass` of them for each kind (submissions,
//! deliveries, history) and leaves the rest to the next pass, so a large
//! backlog never holds up the merge that shares the scheduler's tick, and a
//! backlog of one kind never keeps another waiting.

mod history;

use chrono::{DateTime, TimeDelta, Utc};
use entity::{submission, webhook_delivery};
use sea_orm::sea_query::{Expr, LockBehavior, LockType, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, Order};

use crate::cache::versions::{DataVersions, Grains};
use crate::config::JobsConfig;

/// What retention keeps, and how much one delete and one pass may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionSettings {
    /// Submissions and finished deliveries older than this are deleted.
    pub after: TimeDelta,
    /// Price observations older than this are deleted, but the last of each
    /// variant before then; `None` keeps the whole history.
    pub price_history: Option<TimeDelta>,
    /// Rows one delete statement removes at most.
    pub batch: u64,
    /// Delete statements one pass runs at most for each kind of row.
    pub batches_per_pass: u64,
}

impl RetentionSettings {
    pub fn of(jobs: &JobsConfig) -> Self {
        let days = |n: u64| {
            i64::try_from(n)
                .ok()
                .and_then(TimeDelta::try_days)
                .unwrap_or(TimeDelta::MAX)
        };
        RetentionSettings {
            after: days(jobs.retention_days),
            price_history: (jobs.price_history_retention_days > 0)
                .then(|| days(jobs.price_history_retention_days)),
            batch: jobs.retention_batch.max(1),
            batches_per_pass: jobs.retention_batches_per_tick.max(1),
        }
    }
}

/// What one pass deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub submissions: u64,
    /// Finished deliveries; their attempts go with them.
    pub deliveries: u64,
    /// Price observations.
    pub observations: u64,
    /// Delete statements run, each in its own transaction.
    pub batches: u64,
    /// The pass ran out of batches: more may be due, for the next pass.
    pub unfinished: bool,
}

/// Retention, with where its walk through the price history stopped: the
/// next pass goes on from there (`history`).
#[derive(Debug)]
pub struct Retention {
    settings: RetentionSettings,
    history: history::Walk,
}

impl Retention {
    pub fn new(settings: RetentionSettings) -> Self {
        Retention {
            settings,
            history: history::Walk::default(),
        }
    }

    /// Deletes what is due at `now`, in batches. Takes the connection, not a
    /// transaction: each batch must commit on its own.
    #[tracing::instrument(skip_all)]
    pub async fn purge(
        &self,
        db: &DatabaseConnection,
        now: DateTime<Utc>,
        versions: &DataVersions,
    ) -> Result<Purged, DbErr> {
        let mut purged = Purged::default();
        let (mut submissions, mut deliveries, mut history) = (
            Batches::new(&self.settings),
            Batches::new(&self.settings),
            Batches::new(&self.settings),
        );
        // A period reaching before the earliest time there is keeps everything.
        if let Some(before) = now.checked_sub_signed(self.settings.after) {
            purged.submissions = oldest_first(
                (db, versions, Grains::SESSIONS),
                &mut submissions,
                submission::Entity,
                submission::Column::Id,
                submission::Column::CreatedAt,
                before,
            )
            .await?;
            // An unfinished delivery has no finished_at, which compares as unknown.
            purged.deliveries = oldest_first(
                (db, versions, Grains::NONE),
                &mut deliveries,
                webhook_delivery::Entity,
                webhook_delivery::Column::Id,
                webhook_delivery::Column::FinishedAt,
                before,
            )
            .await?;
        }
        let history_before = self
            .settings
            .price_history
            .and_then(|kept| now.checked_sub_signed(kept));
        if let Some(before) = history_before {
            let purge = self.history.purge(db, versions, before, &mut history);
            purged.observations = purge.await?;
        }
        for batches in [submissions, deliveries, history] {
            purged.batches += batches.run;
            purged.unfinished |= batches.ran_out;
        }
        Ok(purged)
    }
}

/// The delete statements a pass may still run for one kind of row.
#[derive(Debug)]
struct Batches {
    /// Rows one statement removes (or, for the history, looks at) at most.
    size: u64,
    left: u64,
    run: u64,
    ran_out: bool,
}

impl Batches {
    fn new(settings: &RetentionSettings) -> Self {
        Batches {
            size: settings.batch,
            left: settings.batches_per_pass,
            run: 0,
            ran_out: false,
        }
    }

    /// Takes one batch; false once the pass has run them all.
    fn take(&mut self) -> bool {
        if self.left == 0 {
            self.ran_out = true;
            return false;
        }
        self.left -= 1;
        self.run += 1;
        true
    }
}

/// Deletes the rows of `entity` whose `age` is before `before`, oldest
/// first, a batch per statement, until none is left or the pass runs out of
/// batches; each batch that deleted rows announces the grain they belong to.
/// On PostgreSQL a row another transaction has locked is skipped, never
/// waited for: it goes in a later batch or pass.
async fn oldest_first<E: EntityTrait>(
    (db, versions, grains): (&DatabaseConnection, &DataVersions, Grains),
    batches: &mut Batches,
    entity: E,
    id: E::Column,
    age: E::Column,
    before: DateTime<Utc>,
) -> Result<u64, DbErr> {
    use sea_orm::ExprTrait;
    let mut deleted = 0;
    while batches.take() {
        let mut oldest = Query::select();
        oldest
            .column(id)
            .from(entity)
            .and_where(Expr::col(age).lt(before))
            .order_by(age, Order::Asc)
            .limit(batches.size);
        if db.get_database_backend() == DbBackend::Postgres {
            oldest.lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
        }
        let delete = Query::delete()
            .from_table(entity)
            .and_where(Expr::col(id).in_subquery(oldest))
            .to_owned();
        let txn = crate::db::begin_write(db).await?;
        let rows = txn.execute(&delete).await?.rows_affected();
        versions.commit(txn, grains.when(rows > 0)).await?;
        deleted += rows;
        if rows < batches.size {
            break;
        }
    }
    Ok(deleted)
}
