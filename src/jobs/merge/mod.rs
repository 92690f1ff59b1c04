//! The merge pass: pending submissions become products.
//!
//! A worker claims a batch (on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so
//! workers on several machines never take the same rows), marks it
//! `processing` with a lease, and merges each submission in its own
//! transaction, ending it `merged`, `flagged` or `rejected` (with a reason).
//! A worker that dies mid-batch loses nothing: once its lease runs out the
//! rows return to `pending`. A worker whose lease was taken over finds its
//! submission no longer leased to it and rolls its merge back.
//!
//! One item never holds up the others. A batch is read with each stored item
//! as raw bytes, decoded one submission at a time, so an item that cannot be
//! read (a number beyond a double, text that is not JSON) is rejected alone,
//! its reason the decoding error. Its writes run in a savepoint: an error
//! the item caused (a value no index can hold, text the database refuses, a
//! constraint, a trigger refusing it) rolls back that item alone and rejects
//! it with the error as its reason, and the batch goes on. An error of the
//! database itself (`fault`) rejects nothing and counts no attempt: the pass
//! stops, and the unfinished batch goes back to `pending` at once, or as
//! soon as the database answers again (`hand_back`). Every merge that
//! begins is first counted on its submission, in a write of its own, so a
//! submission whose merges never finish (it stops the worker, outlives its
//! lease, meets a failing database) is rejected once `max_attempts` of them
//! began, instead of being claimed forever.

pub mod apply;
mod fault;
mod hand_back;
pub mod item;
pub mod item_limits;
mod price_moves;
pub mod size;

use chrono::{DateTime, TimeDelta, Utc};
use entity::{SubmissionStatus, scrape_session, submission};
use sea_orm::sea_query::{Expr, LockBehavior, LockType, Query};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend,
    DbErr, EntityTrait, ExprTrait, FromQueryResult, QueryFilter, TransactionTrait,
};
use serde_json::Value;
use uuid::Uuid;

use super::completion;
use crate::cache::versions::Grains;
use crate::clock::Clock;
use crate::events::Events;
use crate::query::movers::PriceMove;
use apply::Outcome;
use fault::Fault;
use hand_back::Batch;
pub use hand_back::{Unreturned, release_expired};
use item::ScrapedItem;

/// How a merge pass runs.
#[derive(Debug, Clone)]
pub struct MergeSettings {
    /// Submissions claimed at a time.
    pub batch: u64,
    /// How long a claim holds.
    pub lease: TimeDelta,
    /// Merges of one submission that may begin without finishing before it
    /// is rejected instead of claimed again.
    pub max_attempts: u32,
    /// Base of the absolute URLs written into webhook payloads.
    pub public_url: String,
    /// Most bytes of JSON a product may grow to (`size.rs`).
    pub max_product_bytes: u64,
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Claims returned to pending: expired leases, and batches this worker
    /// could not hand back when a database fault cut them short.
    pub released: u64,
    pub merged: u64,
    pub flagged: u64,
    pub rejected: u64,
    /// Sessions this pass completed.
    pub completed_sessions: u64,
}

/// A claimed submission: what the merge needs of it, its stored item
/// still undecoded, and how many merges of it began before this claim.
#[derive(Debug, Clone, FromQueryResult)]
pub struct Claimed {
    pub id: i64,
    pub session_id: Uuid,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub attempts: i32,
    /// The stored item as the database prints it. Decoded one submission at
    /// a time ([`Claimed::item`]), so one that cannot be read fails neither
    /// the batch's read nor anything but its own merge.
    pub payload: Vec<u8>,
}

impl Claimed {
    /// The stored item; `Err` is the reason it is rejected when it cannot
    /// be read.
    fn item(&self) -> Result<Value, String> {
        serde_json::from_slice(&self.payload)
            .map_err(|e| format!("the stored item cannot be read: {e}"))
    }
}

/// Longest reason kept on a submission; a longer one (a parse error quoting a
/// huge value) is cut.
const MAX_REASON: usize = 1024;

/// The stored item as bytes, named `payload`: jsonb printed as text on
/// PostgreSQL, the text itself on SQLite. Bytes, not text, so that no stored
/// value can fail the statement that reads the whole batch.
fn raw_payload(backend: DbBackend) -> Expr {
    Expr::cust(match backend {
        DbBackend::Postgres => r#"convert_to(CAST("payload" AS text), 'UTF8') AS "payload""#,
        _ => r#"CAST("payload" AS BLOB) AS "payload""#,
    })
}

/// Claims up to `batch` pending submissions, oldest first, leased until
/// `now + lease`.
pub async fn claim(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    settings: &MergeSettings,
) -> Result<Vec<Claimed>, DbErr> {
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
        .returning(Query::returning().exprs([
            Expr::col(submission::Column::Id),
            Expr::col(submission::Column::SessionId),
            Expr::col(submission::Column::LeaseExpiresAt),
            Expr::col(submission::Column::CreatedAt),
            Expr::col(submission::Attempts),
            raw_payload(db.get_database_backend()),
        ]))
        .to_owned();
    let statement = db.get_database_backend().build(&claim);
    let mut rows = Claimed::find_by_statement(statement).all(db).await?;
    rows.sort_by_key(|c| c.id);
    Ok(rows)
}

/// Claims and merges until nothing is pending, as a worker that remembers
/// nothing from an earlier pass.
pub async fn run_pass(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    settings: &MergeSettings,
    events: &Events,
) -> Result<MergeReport, DbErr> {
    let unreturned = Unreturned::default();
    run_pass_until(db, clock, settings, events, &unreturned, &|| false).await
}

/// Claims and merges until nothing is pending or `stop()` (asked before each
/// submission, e.g. at shutdown): then the submission being merged is
/// finished and the rest of its batch handed back, no attempt counted.
/// First of all, hands back what `unreturned` holds from earlier passes of
/// this worker: when that still fails, the database is still unavailable
/// and the pass ends there.
#[tracing::instrument(skip_all)]
pub async fn run_pass_until(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    settings: &MergeSettings,
    events: &Events,
    unreturned: &Unreturned,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<MergeReport, DbErr> {
    let versions = events.versions();
    let handed_back = unreturned.hand_back_owed(db, versions).await?;
    let txn = crate::db::begin_write(db).await?;
    let released = release_expired(&txn, clock.now()).await?;
    versions
        .commit(txn, Grains::SESSIONS.when(released > 0))
        .await?;
    let mut report = MergeReport {
        released: handed_back + released,
        ..Default::default()
    };
    while !stop() {
        let txn = crate::db::begin_write(db).await?;
        let batch = claim(&txn, clock.now(), settings).await?;
        versions
            .commit(txn, Grains::SESSIONS.when(!batch.is_empty()))
            .await?;
        if batch.is_empty() {
            break;
        }
        let rest = |uncount| Batch {
            ids: batch.iter().map(|c| c.id).collect(),
            lease: batch[0].lease_expires_at,
            uncount,
        };
        for submission in &batch {
            if stop() {
                unreturned.hand_back(db, versions, rest(None)).await;
                break;
            }
            if let Err(cut) = merge_one(db, clock, settings, events, submission, &mut report).await
            {
                unreturned.hand_back(db, versions, rest(cut.uncount)).await;
                return Err(cut.error);
            }
        }
    }
    Ok(report)
}

/// A merge stopped by an error.
struct Cut {
    error: DbErr,
    /// The submission, when its attempt was counted and the error is the
    /// database's fault, not its own: the hand-back takes the attempt back.
    uncount: Option<i64>,
}

/// Merges one claimed submission in its own transaction.
async fn merge_one(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    settings: &MergeSettings,
    events: &Events,
    claimed: &Claimed,
    report: &mut MergeReport,
) -> Result<(), Cut> {
    let uncounted = |error| Cut {
        error,
        uncount: None,
    };
    let exhausted = i64::from(claimed.attempts) >= i64::from(settings.max_attempts);
    if exhausted {
        let reason = format!(
            "not merged after {} attempts: none of them finished \
             (the worker stopped, its lease ran out or the merge failed)",
            claimed.attempts
        );
        return finish(db, clock, settings, events, claimed, Some(reason), report)
            .await
            .map_err(uncounted);
    }
    if !count_attempt(db, claimed).await.map_err(uncounted)? {
        // The lease ran out and another worker owns the submission now.
        return Ok(());
    }
    finish(db, clock, settings, events, claimed, None, report)
        .await
        .map_err(|error| Cut {
            // Not the item's doing: the attempt does not count.
            uncount: (fault::classify(&error) == Fault::Database).then_some(claimed.id),
            error,
        })
}

/// Merges (or, with `rejected`, rejects) one claimed submission in its own
/// transaction.
async fn finish(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    settings: &MergeSettings,
    events: &Events,
    claimed: &Claimed,
    rejected: Option<String>,
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
    let read = || {
        claimed
            .item()
            .and_then(|item| ScrapedItem::parse(item, now))
    };
    let (outcome, moves) = match rejected.map_or_else(read, Err) {
        Err(reason) => (Outcome::Rejected(reason), vec![]),
        Ok(item) => {
            let observed_at = item.observed_at.unwrap_or(claimed.created_at);
            let max = settings.max_product_bytes;
            apply_alone(&txn, &item, session.account_id, observed_at, max).await?
        }
    };
    let (status, product_id, reason) = match outcome {
        Outcome::Merged(id) => (SubmissionStatus::Merged, Some(id), None),
        Outcome::Flagged(id, reason) => (SubmissionStatus::Flagged, Some(id), Some(reason)),
        Outcome::Rejected(reason) => (SubmissionStatus::Rejected, None, Some(reason)),
    };
    let finished = submission::Entity::update_many()
        .col_expr(submission::Column::Status, Expr::val(status.as_str()))
        .col_expr(submission::Column::ProductId, Expr::val(product_id))
        .col_expr(
            submission::Column::Reason,
            Expr::val(reason.map(cut_reason)),
        )
        .col_expr(
            submission::Column::LeaseExpiresAt,
            Expr::val(Option::<DateTime<Utc>>::None),
        )
        .col_expr(submission::Column::UpdatedAt, Expr::val(now))
        .filter(still_leased(claimed))
        .exec(&txn)
        .await?;
    if finished.rows_affected == 0 {
        // The lease ran out and another worker owns the submission now.
        return txn.rollback().await;
    }
    price_moves::enqueue(&txn, &moves, session.id, &settings.public_url, now).await?;
    let completed = completion::after_change(&txn, &session, &settings.public_url, now).await?;
    events.versions().commit(txn, Grains::ALL).await?;
    events.session_changed(db, session.id).await;
    events.prices_moved(db, moves).await;
    crate::metrics::merge_finished(status);
    match status {
        SubmissionStatus::Merged => report.merged += 1,
        SubmissionStatus::Flagged => report.flagged += 1,
        _ => report.rejected += 1,
    }
    report.completed_sessions += u64::from(completed);
    Ok(())
}

/// Counts a merge of `claimed` as begun, in a write of its own made before
/// the work, so that a merge which never finishes still counts. False when
/// the lease was lost to another worker.
async fn count_attempt(db: &DatabaseConnection, claimed: &Claimed) -> Result<bool, DbErr> {
    let counted = submission::Entity::update_many()
        .col_expr(submission::Attempts, Expr::col(submission::Attempts).add(1))
        .filter(still_leased(claimed))
        .exec(db)
        .await?;
    Ok(counted.rows_affected == 1)
}

/// `claimed` is still processing under the lease this worker holds.
fn still_leased(claimed: &Claimed) -> Condition {
    Condition::all()
        .add(submission::Column::Id.eq(claimed.id))
        .add(submission::Column::Status.eq(SubmissionStatus::Processing))
        .add(submission::Column::LeaseExpiresAt.eq(claimed.lease_expires_at))
}

/// Applies `item` in a savepoint of `txn`, rolled back when the item is
/// rejected. An error the item caused rejects it, the error as its reason;
/// any other error is returned, rejecting nothing (`fault.rs`).
async fn apply_alone(
    txn: &DatabaseTransaction,
    item: &ScrapedItem,
    account_id: uuid::Uuid,
    observed_at: DateTime<Utc>,
    max_product_bytes: u64,
) -> Result<(Outcome, Vec<PriceMove>), DbErr> {
    let savepoint = txn.begin().await?;
    let applied = apply::apply(&savepoint, item, account_id, observed_at, max_product_bytes);
    let (outcome, moves) = match applied.await {
        Err(e) if fault::classify(&e) == Fault::Item => (
            Outcome::Rejected(format!("could not be stored: {e}")),
            vec![],
        ),
        Err(e) => return Err(e),
        Ok(applied) => applied,
    };
    match outcome {
        Outcome::Rejected(_) => savepoint.rollback().await?,
        _ => savepoint.commit().await?,
    }
    Ok((outcome, moves))
}

/// `reason` cut to `MAX_REASON` bytes on a character boundary.
fn cut_reason(mut reason: String) -> String {
    if reason.len() > MAX_REASON {
        let end = (0..=MAX_REASON - 3)
            .rev()
            .find(|&i| reason.is_char_boundary(i))
            .unwrap_or(0);
        reason.truncate(end);
        reason.push('…');
    }
    reason
}
