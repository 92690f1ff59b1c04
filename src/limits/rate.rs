//! The per-minute rate limit: a fixed window per account, aligned to the
//! minute of the injected clock.
//!
//! It lives in process memory, which is exact for a single node. With several
//! replicas behind a load balancer each keeps its own windows, so an account
//! can make up to `replicas x limit` requests a minute in the worst case; the
//! daily quota, which lives in the database, is not multiplied this way.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The outcome of counting one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix time (seconds) when the current window ends.
    pub reset_at: i64,
    /// Seconds until the window ends (at least 1).
    pub retry_after: i64,
}

#[derive(Debug)]
pub struct RateLimiter {
    limit: u32,
    /// account -> (window start minute, requests counted in it)
    windows: Mutex<HashMap<Uuid, (i64, u32)>>,
}

impl RateLimiter {
    pub fn new(limit: u32) -> Self {
        RateLimiter {
            limit,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one request of `account` at `now`; refused requests are not counted.
    pub fn check(&self, account: Uuid, now: DateTime<Utc>) -> RateDecision {
        let secs = now.timestamp();
        let minute = secs.div_euclid(60);
        let reset_at = (minute + 1) * 60;
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let window = windows.entry(account).or_insert((minute, 0));
        if window.0 != minute {
            *window = (minute, 0);
        }
        let allowed = window.1 < self.limit;
        if allowed {
            window.1 += 1;
        }
        RateDecision {
            allowed,
            limit: self.limit,
            remaining: self.limit - window.1,
            reset_at,
            retry_after: (reset_at - secs).max(1),
        }
    }
}
