//! The delivery job: claim due deliveries, send them, log each attempt and
//! reschedule or finish them.
//!
//! Claiming sets a short lease (`locked_until`) on each row. On PostgreSQL the
//! candidates are selected `FOR UPDATE SKIP LOCKED`, so concurrent workers
//! take disjoint rows without waiting on each other; on SQLite, which has no
//! row locks, the claim is a conditional UPDATE that re-checks the row is
//! still free. Either way a healthy worker never sends a delivery another
//! worker holds. A worker that dies mid-send loses nothing: its lease runs
//! out and the row is claimable again (at-least-once; receivers deduplicate
//! with the `X-Vitrina-Delivery` id).

use std::time::Instant;

use chrono::{DateTime, TimeDelta, Utc};
use entity::{
    DeliveryStatus, SubscriptionStatus, webhook_attempt, webhook_delivery, webhook_subscription,
};
use futures_util::future::join_all;
use sea_orm::sea_query::{Expr, LockBehavior, LockType};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbBackend,
    DbErr, EntityTrait, ExprTrait, NotSet, QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};

use super::retry::{self, Outcome, Verdict};
use super::sender::Sender;
use super::subscriptions;
use crate::clock::Clock;

/// Deliveries one run claims at most; the rest wait for the next run.
const BATCH: u64 = 64;

/// How long a claim outlives the attempt's own time limit before another
/// worker may take the row over.
const LEASE_MARGIN: TimeDelta = TimeDelta::seconds(30);

/// Bounds the lease whatever the configured timeout, so `now + lease` cannot
/// overflow.
const MAX_LEASE: TimeDelta = TimeDelta::days(1);

/// What one [`deliver_due`] run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    /// Attempts made (requests sent or refused at the address check).
    pub attempted: usize,
    pub succeeded: usize,
    /// Failed attempts that will be retried.
    pub rescheduled: usize,
    /// Deliveries that failed for good in this run, including those of a
    /// subscription disabled meanwhile (not sent).
    pub failed: usize,
}

/// Sends every delivery that is due (up to one batch), each at most once per
/// run. The scheduler calls this on every tick; tests call it directly after
/// moving their clock.
#[tracing::instrument(skip_all)]
pub async fn deliver_due(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    sender: &Sender,
) -> Result<DeliveryReport, DbErr> {
    let lease = TimeDelta::from_std(sender.timeout())
        .unwrap_or(MAX_LEASE)
        .min(MAX_LEASE)
        + LEASE_MARGIN;
    let mut report = DeliveryReport::default();
    // Batch after batch while batches come back full, so a backlog drains in
    // one run instead of BATCH deliveries per tick. It ends: every attempt
    // either finishes its row or moves it to a later time or behind a lease.
    loop {
        let now = clock.now();
        let claimed = claim(db, now, now + lease).await?;
        let full = claimed.len() as u64 == BATCH;
        for outcome in join_all(claimed.into_iter().map(|d| attempt(db, clock, sender, d))).await {
            match outcome? {
                Some(Verdict::Succeeded) => report.succeeded += 1,
                Some(Verdict::RetryAt(_)) => report.rescheduled += 1,
                Some(Verdict::Failed) => report.failed += 1,
                None => {
                    report.failed += 1;
                    continue;
                }
            }
            report.attempted += 1;
        }
        if !full {
            break;
        }
    }
    if report != DeliveryReport::default() {
        tracing::info!(?report, "webhook deliveries");
    }
    Ok(report)
}

/// Rows that may be claimed at `now`: pending, due, and not leased to a worker.
fn claimable(now: DateTime<Utc>) -> Condition {
    use webhook_delivery::Column;
    Condition::all()
        .add(Column::Status.eq(DeliveryStatus::Pending))
        .add(Column::NextAttemptAt.lte(now))
        .add(
            Condition::any()
                .add(Column::LockedUntil.is_null())
                .add(Column::LockedUntil.lte(now)),
        )
}

/// Leases up to [`BATCH`] due deliveries until `lease_until`.
async fn claim(
    db: &DatabaseConnection,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Vec<webhook_delivery::Model>, DbErr> {
    if db.get_database_backend() == DbBackend::Postgres {
        // The row locks of SKIP LOCKED last until the lease is committed.
        let tx = db.begin().await?;
        let claimed = claim_on(&tx, now, lease_until).await?;
        tx.commit().await?;
        Ok(claimed)
    } else {
        // No transaction on SQLite: a read followed by a write in one
        // transaction fails when another writer got in between, whereas each
        // conditional UPDATE below is atomic on its own.
        claim_on(db, now, lease_until).await
    }
}

async fn claim_on(
    conn: &impl ConnectionTrait,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Vec<webhook_delivery::Model>, DbErr> {
    use webhook_delivery::{Column, Entity};
    let candidates = Entity::find()
        .filter(claimable(now))
        .order_by_asc(Column::NextAttemptAt)
        .order_by_asc(Column::Id)
        .limit(BATCH)
        .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked)
        .all(conn)
        .await?;
    let mut claimed = Vec::with_capacity(candidates.len());
    for mut delivery in candidates {
        let taken = Entity::update_many()
            .col_expr(Column::LockedUntil, Expr::value(lease_until))
            .filter(Column::Id.eq(delivery.id))
            .filter(claimable(now))
            .exec(conn)
            .await?
            .rows_affected
            == 1;
        if taken {
            delivery.locked_until = Some(lease_until);
            claimed.push(delivery);
        }
    }
    Ok(claimed)
}

/// Makes one attempt of a claimed delivery and records it. `None` when the
/// subscription is no longer active: the delivery fails without being sent.
async fn attempt(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    sender: &Sender,
    delivery: webhook_delivery::Model,
) -> Result<Option<Verdict>, DbErr> {
    let subscription = webhook_subscription::Entity::find_by_id(delivery.subscription_id)
        .one(db)
        .await?;
    let Some(subscription) = subscription.filter(|s| s.status == SubscriptionStatus::Active) else {
        subscriptions::fail_pending(db, delivery.subscription_id, clock.now()).await?;
        return Ok(None);
    };
    let now = clock.now();
    let started = Instant::now();
    let outcome = sender
        .send(
            &subscription.target_url,
            &subscription.secret,
            &delivery,
            now,
        )
        .await;
    let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let number = delivery.attempts + 1;
    let verdict = retry::judge(&outcome, number, now);
    tracing::debug!(delivery = %delivery.id, attempt = number, ?outcome, ?verdict, "webhook attempt");

    let tx = db.begin().await?;
    // A write first: SQLite then takes its write lock at once instead of
    // failing a read-to-write upgrade under concurrent workers.
    log_attempt(&tx, delivery.id, now, &outcome, duration_ms).await?;
    let active =
        count_on_subscription(&tx, subscription.id, verdict, sender.disable_after(), now).await?;
    // A subscription disabled meanwhile (by this failure or another) gets no retry.
    let verdict = match verdict {
        Verdict::RetryAt(_) if !active => Verdict::Failed,
        other => other,
    };
    update_delivery(&tx, delivery.id, number, verdict, now).await?;
    tx.commit().await?;
    Ok(Some(verdict))
}

async fn log_attempt(
    conn: &impl ConnectionTrait,
    delivery_id: uuid::Uuid,
    at: DateTime<Utc>,
    outcome: &Outcome,
    duration_ms: i64,
) -> Result<(), DbErr> {
    let (status_code, error) = match outcome {
        Outcome::Answered { status, .. } => (Some(i32::from(*status)), None),
        Outcome::NoAnswer(e) | Outcome::NotAllowed(e) => (None, Some(e.clone())),
    };
    webhook_attempt::Entity::insert(webhook_attempt::ActiveModel {
        id: NotSet,
        delivery_id: Set(delivery_id),
        attempted_at: Set(at),
        status_code: Set(status_code),
        error: Set(error),
        duration_ms: Set(duration_ms),
    })
    .exec_without_returning(conn)
    .await?;
    Ok(())
}

async fn update_delivery(
    conn: &impl ConnectionTrait,
    id: uuid::Uuid,
    attempts: i32,
    verdict: Verdict,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    use webhook_delivery::Column;
    let (status, next_attempt_at, finished_at) = match verdict {
        Verdict::Succeeded => (DeliveryStatus::Succeeded, None, Some(now)),
        Verdict::RetryAt(at) => (DeliveryStatus::Pending, Some(at), None),
        Verdict::Failed => (DeliveryStatus::Failed, None, Some(now)),
    };
    webhook_delivery::Entity::update_many()
        .col_expr(Column::Status, Expr::value(status))
        .col_expr(Column::Attempts, Expr::value(attempts))
        .col_expr(Column::NextAttemptAt, Expr::value(next_attempt_at))
        .col_expr(
            Column::LockedUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(Column::FinishedAt, Expr::value(finished_at))
        .filter(Column::Id.eq(id))
        .exec(conn)
        .await?;
    Ok(())
}

/// Resets the subscription's run of failures on success; otherwise extends
/// it and disables the subscription once it reaches `disable_after`. Returns
/// whether the subscription is still active.
async fn count_on_subscription(
    conn: &impl ConnectionTrait,
    id: uuid::Uuid,
    verdict: Verdict,
    disable_after: u32,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    use webhook_subscription::{Column, Entity};
    // In SQL, not read-modify-write: attempts to one subscription run
    // concurrently. On PostgreSQL the row lock taken here also orders them.
    let failures = if verdict.is_success() {
        Expr::value(0)
    } else {
        Expr::col(Column::ConsecutiveFailures).add(1)
    };
    Entity::update_many()
        .col_expr(Column::ConsecutiveFailures, failures)
        .filter(Column::Id.eq(id))
        .exec(conn)
        .await?;
    let Some(subscription) = Entity::find_by_id(id).one(conn).await? else {
        return Ok(false);
    };
    if subscription.status != SubscriptionStatus::Active {
        return Ok(false);
    }
    let reached = i64::from(subscription.consecutive_failures) >= i64::from(disable_after);
    if !verdict.is_success() && reached {
        tracing::warn!(subscription = %id, failures = subscription.consecutive_failures, "webhook subscription disabled after consecutive failures");
        subscriptions::deactivate(conn, id, now).await?;
        return Ok(false);
    }
    Ok(true)
}
