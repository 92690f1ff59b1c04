//! The database-time budget of each account (GitHub's "secondary" limit, by
//! time rather than by requests): the per-minute rate limit counts requests
//! alike, but a count over a large filter or a deep page costs the database
//! a thousand times a dashboard's lookup, so a few accounts looping the
//! heaviest requests still accepted could keep every database core busy.
//!
//! What each account's requests took is charged after they ran, to a
//! balance that drains at the budget's rate (`per_minute` over each minute,
//! evenly: a leaky bucket). An account is admitted while its balance is
//! below the burst; past it, its next requests are refused until enough has
//! drained. So a heavy account gets its share spread through the minute,
//! never the whole minute's budget at once, and other accounts' requests
//! never queue behind a burst of it. Time is the injected clock's.
//!
//! What is charged: for GraphQL, the time each statement holds its
//! connection (`graphql::request::pool_share`), so aliases, loaders and subscription
//! updates all count; for REST, the time the handler took, since a REST
//! request runs its statements one after another and does little else.
//!
//! The budget is kept in each process, like the pool shares it protects: with
//! several replicas an account may use the budget once per replica.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A refusal: the budget, and the seconds until the account is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    pub limit_ms: u64,
    pub retry_after: i64,
}

const MICROS_PER_MINUTE: u128 = 60_000_000;

/// Accounts' balances of database time used and not yet drained.
///
/// A balance is kept as the instant it will have drained to nothing (as in
/// GCRA): charging `took` moves that instant on by the wall time `took`
/// takes to drain, and an account is admitted while the instant is less
/// than the burst's drain time away. Whole microseconds of wall time, so
/// `Retry-After` is exact, however small the budget.
#[derive(Debug)]
pub struct DbTimeBudget {
    /// Microseconds drained per minute; 0: no budget.
    per_minute_us: u64,
    /// Microseconds of wall time the burst takes to drain.
    burst_drain_us: i64,
    balances: Mutex<Balances>,
}

#[derive(Debug, Default)]
struct Balances {
    /// When each account's balance will have drained (microseconds since
    /// the epoch).
    drained_at: HashMap<Uuid, i64>,
    /// When drained balances were last dropped.
    pruned_at: i64,
}

impl DbTimeBudget {
    /// A budget draining `per_minute_ms` milliseconds a minute, refusing an
    /// account from a balance of `burst_ms`; a `per_minute_ms` of 0 turns it
    /// off.
    pub fn new(per_minute_ms: u64, burst_ms: u64) -> Self {
        let per_minute_us = per_minute_ms.saturating_mul(1000);
        let burst_us = burst_ms.saturating_mul(1000).max(1);
        DbTimeBudget {
            per_minute_us,
            burst_drain_us: drain_time(burst_us, per_minute_us).max(1),
            balances: Mutex::default(),
        }
    }

    /// Refuses a request of `account` at `now` while its balance is at or
    /// over the burst.
    pub fn admit(&self, account: Uuid, now: DateTime<Utc>) -> Result<(), OverBudget> {
        if self.per_minute_us == 0 {
            return Ok(());
        }
        let now_us = now.timestamp_micros();
        let Some(&drained_at) = self.lock().drained_at.get(&account) else {
            return Ok(());
        };
        let ahead = drained_at.saturating_sub(now_us);
        if ahead < self.burst_drain_us {
            return Ok(());
        }
        // Admitted once less than the burst is ahead.
        let wait_us = ahead - self.burst_drain_us + 1;
        Err(OverBudget {
            limit_ms: self.per_minute_us / 1000,
            retry_after: i64::try_from(wait_us.unsigned_abs().div_ceil(1_000_000))
                .unwrap_or(i64::MAX)
                .max(1),
        })
    }

    /// Charges `took` to `account` at `now`, whether or not it fits: the
    /// time is spent already.
    pub fn charge(&self, account: Uuid, now: DateTime<Utc>, took: Duration) {
        if self.per_minute_us == 0 {
            return;
        }
        let now_us = now.timestamp_micros();
        let took_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let drain = drain_time(took_us, self.per_minute_us);
        let mut balances = self.lock();
        // Once a second at most, forget the accounts that have drained.
        if now_us.saturating_sub(balances.pruned_at) >= 1_000_000 {
            balances.pruned_at = now_us;
            balances.drained_at.retain(|_, at| *at > now_us);
        }
        let at = balances.drained_at.entry(account).or_insert(now_us);
        *at = (*at).max(now_us).saturating_add(drain);
    }

    fn lock(&self) -> MutexGuard<'_, Balances> {
        self.balances.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The microseconds of wall time `used_us` of database time takes to drain
/// at `per_minute_us` a minute.
fn drain_time(used_us: u64, per_minute_us: u64) -> i64 {
    let wall = u128::from(used_us) * MICROS_PER_MINUTE / u128::from(per_minute_us.max(1));
    i64::try_from(wall).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(millis: i64) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(millis).single().unwrap()
    }

    #[test]
    fn an_account_over_its_burst_waits_until_its_balance_drains_below_it() {
        // 6,000 ms a minute drain 100 ms a second.
        let budget = DbTimeBudget::new(6_000, 500);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        budget.charge(a, at(600_000), Duration::from_millis(499));
        assert_eq!(budget.admit(a, at(600_000)), Ok(()), "1 ms below the burst");
        budget.charge(a, at(600_000), Duration::from_millis(801));
        // 1,300 ms used: 801 ms over the burst drain in 8.01 s.
        assert_eq!(
            budget.admit(a, at(600_000)),
            Err(OverBudget {
                limit_ms: 6_000,
                retry_after: 9
            })
        );
        assert_eq!(budget.admit(b, at(600_000)), Ok(()), "another account");
        assert!(budget.admit(a, at(608_000)).is_err(), "800 ms drained");
        assert_eq!(budget.admit(a, at(608_020)), Ok(()), "802 ms drained");
    }

    #[test]
    fn a_steady_loop_gets_the_budget_spread_through_the_minute() {
        // A loop of 250 ms requests, sent whenever admitted, every 10 ms.
        let budget = DbTimeBudget::new(10_000, 1_000);
        let a = Uuid::new_v4();
        let mut ran = Vec::new();
        for tick in 0..6_000 {
            let now = at(tick * 10);
            if budget.admit(a, now).is_ok() {
                budget.charge(a, now, Duration::from_millis(250));
                ran.push(tick * 10);
            }
        }
        // The burst, then the 10 s a minute drains: 4 + 40 requests.
        assert_eq!(ran.len(), 44, "{ran:?}");
        let last_half = ran.iter().filter(|&&ms| ms >= 30_000).count();
        assert_eq!(last_half, 20, "spread evenly: {ran:?}");
    }

    #[test]
    fn a_budget_of_zero_refuses_nothing() {
        let budget = DbTimeBudget::new(0, 1_000);
        let a = Uuid::new_v4();
        budget.charge(a, at(0), Duration::from_secs(3600));
        assert_eq!(budget.admit(a, at(1)), Ok(()));
    }
}
