//! The per-minute database-time budget of each account (GitHub's
//! "secondary" limit, by time rather than by requests): the per-minute rate
//! limit counts requests alike, but a count over a large filter or a deep
//! page costs the database a thousand times a dashboard's lookup, so a few
//! accounts looping the heaviest requests still accepted could keep every
//! database core busy. What each account's requests took is charged after
//! they ran; once an account has used its budget in a minute (of the
//! injected clock), its next requests are refused until the minute ends.
//!
//! What is charged: for GraphQL, the time each statement holds its
//! connection (`graphql::pool_share`), so aliases, loaders and subscription
//! updates all count; for REST, the time the handler took, since a REST
//! request runs its statements one after another and does little else.
//!
//! The budget is kept in each process, like the pool shares it protects: with
//! several replicas an account may use the budget once per replica.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A refusal: the budget, and the seconds until the minute ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    pub limit_ms: u64,
    pub retry_after: i64,
}

/// The database time each account used in its current minute.
#[derive(Debug)]
pub struct DbTimeBudget {
    /// Microseconds per account per minute; 0: no budget.
    limit_us: u64,
    /// account -> (minute since the epoch, microseconds used in it)
    used: Mutex<HashMap<Uuid, (i64, u64)>>,
}

impl DbTimeBudget {
    /// A budget of `limit_ms` milliseconds per account per minute; 0 turns it off.
    pub fn new(limit_ms: u64) -> Self {
        DbTimeBudget {
            limit_us: limit_ms.saturating_mul(1000),
            used: Mutex::default(),
        }
    }

    /// Refuses a request of `account` at `now` when the account has used
    /// its whole budget in the current minute.
    pub fn admit(&self, account: Uuid, now: DateTime<Utc>) -> Result<(), OverBudget> {
        if self.limit_us == 0 {
            return Ok(());
        }
        let at = now.timestamp();
        let minute = at.div_euclid(60);
        let used = match self.lock().get(&account) {
            Some(&(of, used)) if of == minute => used,
            _ => 0,
        };
        if used < self.limit_us {
            return Ok(());
        }
        Err(OverBudget {
            limit_ms: self.limit_us / 1000,
            retry_after: ((minute + 1) * 60 - at).max(1),
        })
    }

    /// Charges `took` to `account`'s minute at `now`, whether or not it fits:
    /// the time is spent already.
    pub fn charge(&self, account: Uuid, now: DateTime<Utc>, took: Duration) {
        if self.limit_us == 0 {
            return;
        }
        let minute = now.timestamp().div_euclid(60);
        let took = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let mut used = self.lock();
        // Accounts whose minute has passed hold nothing worth keeping.
        if used.len() > 1024 {
            used.retain(|_, (of, _)| *of == minute);
        }
        let entry = used.entry(account).or_insert((minute, 0));
        if entry.0 != minute {
            *entry = (minute, 0);
        }
        entry.1 = entry.1.saturating_add(took);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, (i64, u64)>> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(secs, 0).single().unwrap()
    }

    #[test]
    fn an_account_is_refused_once_its_minute_is_spent_until_the_minute_ends() {
        let budget = DbTimeBudget::new(100);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        budget.charge(a, at(600), Duration::from_millis(99));
        assert_eq!(budget.admit(a, at(610)), Ok(()), "1 ms left");
        budget.charge(a, at(610), Duration::from_millis(5));
        assert_eq!(
            budget.admit(a, at(615)),
            Err(OverBudget {
                limit_ms: 100,
                retry_after: 45
            })
        );
        assert_eq!(budget.admit(b, at(615)), Ok(()), "another account");
        assert_eq!(budget.admit(a, at(660)), Ok(()), "the next minute");
    }

    #[test]
    fn a_budget_of_zero_refuses_nothing() {
        let budget = DbTimeBudget::new(0);
        let a = Uuid::new_v4();
        budget.charge(a, at(0), Duration::from_secs(3600));
        assert_eq!(budget.admit(a, at(1)), Ok(()));
    }
}
