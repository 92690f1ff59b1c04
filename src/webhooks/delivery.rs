//! The delivery job: claim due deliveries, reserve their attempts against
//! each subscription's allowance, send them, log each attempt and reschedule
//! or finish them.
//!
//! Claiming sets a short lease (`locked_until`) on each row. On PostgreSQL the
//! candidates are selected `FOR UPDATE SKIP LOCKED`, so concurrent workers
//! take disjoint rows without waiting on each other; on SQLite, which has no
//! row locks, the claim is a conditional UPDATE that re-checks the row is
//! still free. Either way a healthy worker never sends a delivery another
//! worker holds. A worker that dies mid-send loses nothing: its lease runs
//! out and the row is claimable again (at-least-once; receivers deduplicate
//! with the `X-Vitrina-Delivery` id).
//!
//! A run sends each subscription's claimed deliveries in waves: it reserves
//! as many attempts as the subscription's allowance has room for
//! ([`allowance`](super::allowance), which makes auto-disable exact), sends
//! them side by side, records their outcomes, and reserves again. Deliveries
//! left when attempts of other workers hold the whole allowance are deferred:
//! they keep their lease and are claimed again once it runs out.

use std::collections::{HashMap, VecDeque};
use std::ops::AddAssign;

use chrono::{DateTime, TimeDelta, Utc};
use entity::{DeliveryStatus, webhook_attempt, webhook_delivery, webhook_subscription};
use futures_util::future::join_all;
use sea_orm::sea_query::{Expr, LockBehavior, LockType};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbBackend,
    DbErr, EntityTrait, NotSet, QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};
use uuid::Uuid;

use super::allowance::{self, Reserved, Standing};
use super::retry::{self, Outcome, Verdict};
use super::rotation::signing_secrets;
use super::sender::Sender;
use super::subscriptions;
use crate::clock::Clock;
use crate::metrics::DeliveryOutcome;

/// Deliveries one run claims at most; the rest wait for the next run.
const BATCH: u64 = 64;

/// How long a claim outlives the attempt's own time limit before another
/// worker may take the row over.
const LEASE_MARGIN: TimeDelta = TimeDelta::seconds(30);

/// Bounds the lease whatever the configured timeout, so `now + lease` cannot
/// overflow.
const MAX_LEASE: TimeDelta = TimeDelta::days(1);

/// The error logged for an attempt whose worker stopped before recording it.
const ABANDONED: &str =
    "no outcome was recorded: the worker sending it stopped before its lease ran out";

/// What one [`deliver_due`] run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    /// Attempts made (requests sent or refused at the address check).
    pub attempted: usize,
    pub succeeded: usize,
    /// Failed attempts that will be retried, including attempts a stopped
    /// worker left unrecorded.
    pub rescheduled: usize,
    /// Deliveries that failed for good in this run, including those of a
    /// subscription disabled meanwhile (not sent).
    pub failed: usize,
    /// Deliveries not attempted because attempts in flight elsewhere held
    /// their subscription's whole allowance; taken again after their lease.
    pub deferred: usize,
}

impl DeliveryReport {
    fn count(&mut self, verdict: Verdict) {
        let outcome = match verdict {
            Verdict::Succeeded => {
                self.succeeded += 1;
                DeliveryOutcome::Succeeded
            }
            Verdict::RetryAt(_) => {
                self.rescheduled += 1;
                DeliveryOutcome::Retried
            }
            Verdict::Failed => {
                self.failed += 1;
                DeliveryOutcome::Failed
            }
        };
        crate::metrics::webhook_deliveries(outcome, 1);
    }
}

impl AddAssign for DeliveryReport {
    fn add_assign(&mut self, other: DeliveryReport) {
        self.attempted += other.attempted;
        self.succeeded += other.succeeded;
        self.rescheduled += other.rescheduled;
        self.failed += other.failed;
        self.deferred += other.deferred;
    }
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
    let run = Run {
        db,
        clock,
        sender,
        lease: TimeDelta::from_std(sender.timeout())
            .unwrap_or(MAX_LEASE)
            .min(MAX_LEASE)
            + LEASE_MARGIN,
    };
    let mut report = DeliveryReport::default();
    // Batch after batch while batches come back full, so a backlog drains in
    // one run instead of BATCH deliveries per tick. It ends: every claimed
    // row is finished, moved to a later time, or left behind a lease.
    loop {
        let now = clock.now();
        let claimed = claim(db, now, now + run.lease).await?;
        let full = claimed.len() as u64 == BATCH;
        let mut by_subscription: HashMap<Uuid, Vec<webhook_delivery::Model>> = HashMap::new();
        for delivery in claimed {
            by_subscription
                .entry(delivery.subscription_id)
                .or_default()
                .push(delivery);
        }
        let runs = by_subscription
            .into_iter()
            .map(|(id, deliveries)| run.deliver_to(id, deliveries));
        for done in join_all(runs).await {
            report += done?;
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

/// What every step of one run needs.
struct Run<'a> {
    db: &'a DatabaseConnection,
    clock: &'a dyn Clock,
    sender: &'a Sender,
    /// How long a claim or a reservation holds its row.
    lease: TimeDelta,
}

impl Run<'_> {
    /// Delivers the deliveries this run claimed for one subscription.
    async fn deliver_to(
        &self,
        subscription_id: Uuid,
        claimed: Vec<webhook_delivery::Model>,
    ) -> Result<DeliveryReport, DbErr> {
        let mut report = DeliveryReport::default();
        let (abandoned, waiting): (Vec<_>, Vec<_>) = claimed.into_iter().partition(|d| d.in_flight);
        for delivery in abandoned {
            let outcome = Outcome::NoAnswer(ABANDONED.into());
            if let Some(verdict) = self
                .record(&delivery, self.clock.now(), &outcome, 0)
                .await?
            {
                report.count(verdict);
            }
        }
        let mut waiting = VecDeque::from(waiting);
        while !waiting.is_empty() {
            let reserved = allowance::reserve(
                self.db,
                subscription_id,
                self.sender.disable_after(),
                &mut waiting,
                self.clock.now(),
                self.lease,
            )
            .await?;
            let Some(Reserved {
                subscription,
                deliveries,
            }) = reserved
            else {
                subscriptions::fail_pending(self.db, subscription_id, self.clock.now()).await?;
                crate::metrics::webhook_deliveries(DeliveryOutcome::Failed, waiting.len());
                report.failed += waiting.len();
                waiting.clear();
                break;
            };
            if deliveries.is_empty() {
                break;
            }
            let wave = deliveries
                .into_iter()
                .map(|d| self.attempt(&subscription, d));
            for verdict in join_all(wave).await {
                report.attempted += 1;
                if let Some(verdict) = verdict? {
                    report.count(verdict);
                }
            }
        }
        report.deferred += waiting.len();
        Ok(report)
    }

    /// Makes one reserved attempt and records it.
    async fn attempt(
        &self,
        subscription: &webhook_subscription::Model,
        delivery: webhook_delivery::Model,
    ) -> Result<Option<Verdict>, DbErr> {
        let now = self.clock.now();
        let (outcome, duration_ms) = self
            .sender
            .send(
                &subscription.target_url,
                &signing_secrets(subscription, now),
                (&delivery).into(),
                now,
            )
            .await;
        self.record(&delivery, now, &outcome, duration_ms).await
    }

    /// Records the outcome of a delivery's reserved attempt, made at `at`, in
    /// one transaction: logs it, counts it on the subscription, and
    /// reschedules or finishes the delivery, which returns its reservation.
    /// `None` when the attempt is no longer this worker's (its lease ran out
    /// and another worker recorded it as abandoned): nothing is counted twice.
    async fn record(
        &self,
        delivery: &webhook_delivery::Model,
        at: DateTime<Utc>,
        outcome: &Outcome,
        duration_ms: i64,
    ) -> Result<Option<Verdict>, DbErr> {
        let number = delivery.attempts + 1;
        let verdict = retry::judge(outcome, number, at);
        tracing::debug!(delivery = %delivery.id, attempt = number, ?outcome, ?verdict, "webhook attempt");

        let tx = crate::db::begin_write(self.db).await?;
        log_attempt(&tx, delivery.id, at, outcome, duration_ms).await?;
        let standing = allowance::settle(
            &tx,
            delivery.subscription_id,
            verdict.is_success(),
            self.sender.disable_after(),
            at,
        )
        .await?;
        // A subscription disabled meanwhile (by this failure or another) gets no retry.
        let verdict = match verdict {
            Verdict::RetryAt(_) if standing == Standing::Inactive => Verdict::Failed,
            other => other,
        };
        if !finish_attempt(&tx, delivery, number, verdict, at).await? {
            tx.rollback().await?;
            return Ok(None);
        }
        tx.commit().await?;
        Ok(Some(verdict))
    }
}

async fn log_attempt(
    conn: &impl ConnectionTrait,
    delivery_id: uuid::Uuid,
    at: DateTime<Utc>,
    outcome: &Outcome,
    duration_ms: i64,
) -> Result<(), DbErr> {
    let (status_code, error) = outcome.status_or_error();
    webhook_attempt::Entity::insert(webhook_attempt::ActiveModel {
        id: NotSet,
        delivery_id: Set(delivery_id),
        attempted_at: Set(at),
        status_code: Set(status_code.map(i32::from)),
        error: Set(error.map(str::to_owned)),
        duration_ms: Set(duration_ms),
    })
    .exec_without_returning(conn)
    .await?;
    Ok(())
}

/// Reschedules or finishes a delivery after attempt number `attempts` and
/// clears its in-flight mark; false when the attempt is no longer this
/// worker's (not in flight under the lease this worker holds).
async fn finish_attempt(
    conn: &impl ConnectionTrait,
    delivery: &webhook_delivery::Model,
    attempts: i32,
    verdict: Verdict,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    use webhook_delivery::Column;
    let (status, next_attempt_at, finished_at) = match verdict {
        Verdict::Succeeded => (DeliveryStatus::Succeeded, None, Some(now)),
        Verdict::RetryAt(at) => (DeliveryStatus::Pending, Some(at), None),
        Verdict::Failed => (DeliveryStatus::Failed, None, Some(now)),
    };
    let finished = webhook_delivery::Entity::update_many()
        .col_expr(Column::Status, Expr::value(status))
        .col_expr(Column::Attempts, Expr::value(attempts))
        .col_expr(Column::NextAttemptAt, Expr::value(next_attempt_at))
        .col_expr(
            Column::LockedUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(Column::InFlight, Expr::value(false))
        .col_expr(Column::FinishedAt, Expr::value(finished_at))
        .filter(Column::Id.eq(delivery.id))
        .filter(Column::InFlight.eq(true))
        .filter(Column::LockedUntil.eq(delivery.locked_until))
        .exec(conn)
        .await?
        .rows_affected;
    Ok(finished == 1)
}
