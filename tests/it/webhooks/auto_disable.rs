//! Auto-disable after exactly the threshold of consecutive failures,
//! however deliveries are batched, leased or spread over workers.

use std::time::Duration;

use chrono::TimeDelta;
use entity::{DeliveryStatus, SubscriptionStatus, webhook_attempt, webhook_delivery};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait, IntoActiveModel};
use vitrina::webhooks::{DeliveryReport, deliver_due};

use super::{Hooks, SCHEDULE};
use crate::helpers::receiver::Reply;

impl Hooks {
    /// `sessions` completed sessions: one delivery each per subscription.
    async fn backlog(&self, sessions: usize) {
        for _ in 0..sessions {
            self.complete_session().await;
        }
    }

    /// Every delivery has failed and no attempt is pending.
    async fn assert_all_failed(&self, expected: usize) {
        let deliveries = self.deliveries().await;
        assert_eq!(deliveries.len(), expected);
        let unfinished: Vec<_> = deliveries
            .iter()
            .filter(|d| d.status != DeliveryStatus::Failed || d.in_flight)
            .collect();
        assert!(unfinished.is_empty(), "{unfinished:?}");
    }

    /// Attempts logged, over every delivery.
    async fn logged_attempts(&self) -> usize {
        webhook_attempt::Entity::find()
            .all(&self.app.db)
            .await
            .unwrap()
            .len()
    }
}

#[tokio::test]
async fn deliveries_due_together_make_exactly_the_threshold_of_attempts_to_a_failing_target() {
    let mut h = Hooks::disabling_after(15).await;
    let (id, _) = h.subscribe().await;
    h.backlog(40).await;
    h.receiver
        .script(std::iter::repeat_n(Reply::Status(500), 100));

    let report = h.deliver().await;
    assert_eq!(h.receiver.take().len(), 15, "{report:?}");
    assert_eq!(report.attempted, 15);
    assert_eq!(report.deferred, 0);
    let subscription = h.subscription(id).await;
    assert_eq!(subscription.status, SubscriptionStatus::Disabled);
    assert_eq!(subscription.consecutive_failures, 15);
    h.assert_all_failed(40).await;
    let attempts: i32 = h.deliveries().await.iter().map(|d| d.attempts).sum();
    assert_eq!((attempts, h.logged_attempts().await), (15, 15));

    h.advance(TimeDelta::days(2));
    h.deliver().await;
    assert!(h.receiver.take().is_empty(), "nothing after the disable");
}

#[tokio::test]
async fn concurrent_workers_make_exactly_the_threshold_of_attempts_to_a_failing_target() {
    let mut h = Hooks::disabling_after(15).await;
    let (id, _) = h.subscribe().await;
    // More than three batches, so every worker claims some; slow answers, so
    // the workers' attempts overlap.
    h.backlog(200).await;
    let late_500 = Reply::Late(Duration::from_millis(200), 500);
    h.receiver.script(std::iter::repeat_n(late_500, 300));

    let workers = (0..4).map(|_| deliver_due(&h.app.db, &h.app.clock, &h.sender));
    let reports: Vec<DeliveryReport> = futures_util::future::join_all(workers)
        .await
        .into_iter()
        .map(|r| r.expect("deliver_due"))
        .collect();

    assert_eq!(h.receiver.take().len(), 15, "{reports:?}");
    let attempted: usize = reports.iter().map(|r| r.attempted).sum();
    assert_eq!(attempted, 15);
    assert_eq!(
        h.subscription(id).await.status,
        SubscriptionStatus::Disabled
    );
    h.assert_all_failed(200).await;
    assert_eq!(h.logged_attempts().await, 15);
}

#[tokio::test]
async fn deliveries_due_together_beyond_the_threshold_all_reach_a_healthy_target_in_one_run() {
    let mut h = Hooks::disabling_after(3).await;
    let (id, _) = h.subscribe().await;
    h.backlog(40).await;
    // A failure in the first wave: the rest of the allowance still goes out.
    h.receiver.script([Reply::Status(500)]);

    let report = h.deliver().await;
    assert_eq!(
        (report.attempted, report.succeeded, report.rescheduled),
        (40, 39, 1)
    );
    assert_eq!(h.receiver.take().len(), 40);
    let subscription = h.subscription(id).await;
    assert_eq!(subscription.status, SubscriptionStatus::Active);
    assert_eq!(subscription.consecutive_failures, 0);
}

#[tokio::test]
async fn an_attempt_left_unrecorded_by_a_stopped_worker_counts_as_one_failure_after_its_lease() {
    let mut h = Hooks::disabling_after(2).await;
    let (id, _) = h.subscribe().await;
    h.complete_session().await;
    // A worker reserved the attempt, may have sent it, and stopped.
    let mut row = h.only_delivery().await.into_active_model();
    row.in_flight = Set(true);
    row.locked_until = Set(Some(h.now() + TimeDelta::seconds(30)));
    row.update(&h.app.db).await.unwrap();
    // Another delivery is due meanwhile; the threshold leaves room for one.
    h.complete_session().await;

    let report = h.deliver().await;
    assert_eq!((report.succeeded, report.deferred), (1, 0), "{report:?}");
    assert_eq!(h.receiver.take().len(), 1);

    h.advance(TimeDelta::seconds(30));
    let report = h.deliver().await;
    assert_eq!((report.attempted, report.rescheduled), (0, 1));
    assert!(h.receiver.take().is_empty(), "recorded, not resent");
    let abandoned = h
        .deliveries()
        .await
        .into_iter()
        .find(|d| d.status == DeliveryStatus::Pending)
        .expect("the abandoned delivery");
    assert!(!abandoned.in_flight);
    assert_eq!(abandoned.attempts, 1);
    assert_eq!(abandoned.next_attempt_at, Some(h.now() + SCHEDULE[0]));
    let logged = h.attempts(abandoned.id).await;
    assert_eq!(logged.len(), 1);
    assert!(
        logged[0]
            .error
            .as_deref()
            .unwrap()
            .contains("no outcome was recorded"),
        "{logged:?}"
    );
    assert_eq!(h.subscription(id).await.consecutive_failures, 1);

    h.advance(SCHEDULE[0]);
    assert_eq!(h.deliver().await.succeeded, 1);
    assert_eq!(h.receiver.take().len(), 1);
    assert_eq!(h.subscription(id).await.consecutive_failures, 0);
}

#[tokio::test]
async fn a_run_of_failures_already_past_a_lowered_threshold_disables_without_an_attempt() {
    let mut h = Hooks::disabling_after(15).await;
    let (id, _) = h.subscribe().await;
    // 20 failures in a row counted under an older, higher setting.
    let mut row = h.subscription(id).await.into_active_model();
    row.consecutive_failures = Set(20);
    row.update(&h.app.db).await.unwrap();
    h.complete_session().await;

    let report = h.deliver().await;
    assert_eq!((report.attempted, report.failed), (0, 1), "{report:?}");
    assert!(h.receiver.take().is_empty());
    let subscription = h.subscription(id).await;
    assert_eq!(subscription.status, SubscriptionStatus::Disabled);
    assert_eq!(subscription.disabled_at, Some(h.now()));
    h.assert_all_failed(1).await;
}

#[tokio::test]
async fn attempts_in_flight_elsewhere_defer_deliveries_beyond_the_threshold() {
    let mut h = Hooks::disabling_after(2).await;
    let (id, _) = h.subscribe().await;
    h.backlog(3).await;
    // Another worker holds two attempts of the subscription right now.
    let deliveries = h.deliveries().await;
    for held in &deliveries[..2] {
        let mut row = held.clone().into_active_model();
        row.in_flight = Set(true);
        row.locked_until = Set(Some(h.now() + TimeDelta::seconds(30)));
        row.update(&h.app.db).await.unwrap();
    }

    let report = h.deliver().await;
    assert_eq!((report.attempted, report.deferred), (0, 1), "{report:?}");
    assert!(h.receiver.take().is_empty());
    assert_eq!(h.subscription(id).await.consecutive_failures, 0);
    let third = webhook_delivery::Entity::find_by_id(deliveries[2].id)
        .one(&h.app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (third.status, third.in_flight),
        (DeliveryStatus::Pending, false)
    );
}

#[tokio::test]
async fn one_run_drains_a_backlog_larger_than_a_batch() {
    let mut h = Hooks::start().await;
    for _ in 0..5 {
        h.subscribe().await;
    }
    // 14 sessions x 5 subscriptions: 70 deliveries, more than one claim takes.
    for _ in 0..14 {
        h.complete_session().await;
    }

    let report = h.deliver().await;
    assert_eq!((report.attempted, report.succeeded), (70, 70));
    assert_eq!(h.receiver.take().len(), 70);
    let deliveries = h.deliveries().await;
    assert!(
        deliveries
            .iter()
            .all(|d| d.status == DeliveryStatus::Succeeded)
    );
}

#[tokio::test]
async fn a_delivery_held_by_a_worker_is_claimable_again_once_its_lease_runs_out() {
    let mut h = Hooks::start().await;
    h.subscribe().await;
    h.complete_session().await;
    // A worker claimed it and died before recording anything.
    let mut row = h.only_delivery().await.into_active_model();
    row.locked_until = Set(Some(h.now() + TimeDelta::seconds(30)));
    row.update(&h.app.db).await.unwrap();

    assert_eq!(h.deliver().await.attempted, 0, "held");
    h.advance(TimeDelta::seconds(30));
    assert_eq!(h.deliver().await.succeeded, 1);
    assert_eq!(h.receiver.take().len(), 1);
}
