//! Runs the jobs: one tick merges everything pending, sends due webhooks,
//! makes today's snapshot if it is missing and applies retention. `serve`
//! ticks every few seconds until it shuts down; `vitrina jobs run-once` ticks
//! once. The jobs take time from the injected clock; only the pause between
//! ticks is real time.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use chrono::TimeDelta;
use futures_util::FutureExt;
use sea_orm::{DatabaseConnection, DbErr};
use tokio::sync::watch;

use super::merge::{self, MergeReport, MergeSettings, Unreturned};
use super::retention::{self, Retention, RetentionSettings};
use super::snapshots;
use crate::clock::Clock;
use crate::config::Settings;
use crate::events::Events;
use crate::webhooks::{DeliveryReport, Sender};

/// Everything a tick needs.
pub struct Jobs {
    pub db: DatabaseConnection,
    pub clock: crate::clock::SharedClock,
    pub merge: MergeSettings,
    /// What retention deletes, and where its walk of the price history is.
    pub retention: Retention,
    /// How much of each list a snapshot keeps.
    pub snapshots: snapshots::Kept,
    pub sender: Sender,
    pub events: Events,
    /// Merge batches a database fault cut short and this worker could not
    /// hand back yet: its next tick does, first of all.
    pub unreturned: Unreturned,
}

/// What one tick did.
#[derive(Debug, Default)]
pub struct TickReport {
    pub merge: MergeReport,
    pub deliveries: DeliveryReport,
    pub snapshot_made: bool,
    pub purged: retention::Purged,
}

impl std::fmt::Display for TickReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (m, d) = (&self.merge, &self.deliveries);
        write!(
            f,
            "merged {}, flagged {}, rejected {}, leases released {}, sessions completed {}; \
             webhook attempts {} ({} succeeded, {} to retry, {} failed); snapshot made: {}; purged {} submissions, {} webhook deliveries, {} price observations \
             in {} batches{}",
            m.merged,
            m.flagged,
            m.rejected,
            m.released,
            m.completed_sessions,
            d.attempted,
            d.succeeded,
            d.rescheduled,
            d.failed,
            if self.snapshot_made { "yes" } else { "no" },
            self.purged.submissions,
            self.purged.deliveries,
            self.purged.observations,
            self.purged.batches,
            if self.purged.unfinished {
                " (more next tick)"
            } else {
                ""
            }
        )
    }
}

impl Jobs {
    /// `sender` sends due webhooks (built from `settings.webhooks`).
    pub fn new(
        db: DatabaseConnection,
        clock: crate::clock::SharedClock,
        settings: &Settings,
        public_url: &str,
        sender: Sender,
        events: Events,
    ) -> Self {
        let jobs = &settings.jobs;
        Jobs {
            db,
            clock,
            merge: MergeSettings {
                batch: jobs.merge_batch.max(1),
                lease: TimeDelta::seconds(jobs.merge_lease_secs as i64),
                max_attempts: jobs.merge_max_attempts.max(1),
                public_url: public_url.to_owned(),
                max_product_bytes: settings.sizes.max_product_bytes(),
            },
            retention: Retention::new(RetentionSettings::of(jobs)),
            snapshots: snapshots::Kept::of(settings),
            sender,
            events,
            unreturned: Unreturned::default(),
        }
    }

    /// One round of every job.
    pub async fn tick(&self) -> Result<TickReport, DbErr> {
        self.tick_until(&|| false).await
    }

    /// One round of every job, cut short once `stop()`: the merge pass
    /// finishes the submission it is merging and hands the rest of its batch
    /// back, and the jobs after it wait for the next start.
    async fn tick_until(&self, stop: &(dyn Fn() -> bool + Sync)) -> Result<TickReport, DbErr> {
        let clock: &dyn Clock = self.clock.as_ref();
        let versions = self.events.versions();
        let merge = merge::run_pass_until(
            &self.db,
            clock,
            &self.merge,
            &self.events,
            &self.unreturned,
            stop,
        )
        .await?;
        if stop() {
            return Ok(TickReport {
                merge,
                ..TickReport::default()
            });
        }
        Ok(TickReport {
            merge,
            deliveries: crate::webhooks::deliver_due(&self.db, clock, &self.sender).await?,
            snapshot_made: snapshots::ensure_today(&self.db, clock.now(), self.snapshots, versions)
                .await?,
            purged: self
                .retention
                .purge(&self.db, clock.now(), versions)
                .await?,
        })
    }

    /// Ticks every `every` until `draining` turns true, then returns once the
    /// tick in progress has stopped as [`Self::tick_until`] says. A failed
    /// tick is logged and the next one tries again. So is a tick that
    /// panicked: its transactions roll back, its claims run out, and a
    /// submission that keeps failing is ended by its attempt count, so one
    /// bad row cannot stop the jobs.
    pub async fn run(self, every: Duration, mut draining: watch::Receiver<bool>) {
        let mut interval = tokio::time::interval(every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let stopping = draining.clone();
        let stop = move || *stopping.borrow();
        loop {
            tokio::select! {
                biased;
                _ = draining.wait_for(|draining| *draining) => break,
                _ = interval.tick() => {}
            }
            match AssertUnwindSafe(self.tick_until(&stop))
                .catch_unwind()
                .await
            {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "job tick failed"),
                Err(panic) => tracing::error!(
                    panic = crate::error::panic_message(&*panic),
                    "job tick panicked; the next tick tries again"
                ),
            }
        }
        tracing::info!("jobs stopped");
    }
}
