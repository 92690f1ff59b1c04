//! The per-minute rate limit: a fixed window per account, aligned to the
//! minute of the injected clock; refused requests are not counted.
//!
//! The windows live in Redis when one is configured (`shared`), so every
//! replica counts against the same window, or else in process memory
//! (`local`), which is exact for a single node only. When Redis does not
//! answer in time the request is counted in process memory instead: the
//! service keeps serving, and each replica holds the limit on its own until
//! Redis answers again.

mod local;
mod shared;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::config::RedisConfig;
use local::LocalWindows;
use shared::SharedWindows;

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

/// The window a request falls in.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// Minutes since the Unix epoch: the window's name in every store.
    minute: i64,
    /// The request's Unix time in seconds.
    at: i64,
}

impl Window {
    fn of(now: DateTime<Utc>) -> Self {
        let at = now.timestamp();
        Window {
            minute: at.div_euclid(60),
            at,
        }
    }
}

/// What one call does to an account's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tally {
    /// Counts this many requests when they all fit (the operations of a
    /// GraphQL batch), else none.
    Count(u32),
    /// Only reads.
    Peek,
}

impl Tally {
    fn name(self) -> &'static str {
        match self {
            Tally::Count(_) => "count",
            Tally::Peek => "peek",
        }
    }
}

/// A request tallied in its window: whether it fit (was counted, or would
/// be), and how many requests the window holds after.
#[derive(Debug, Clone, Copy)]
struct Counted {
    allowed: bool,
    used: u32,
}

impl Counted {
    fn decision(self, limit: u32, window: Window) -> RateDecision {
        let reset_at = (window.minute + 1) * 60;
        RateDecision {
            allowed: self.allowed,
            limit,
            remaining: limit.saturating_sub(self.used),
            reset_at,
            retry_after: (reset_at - window.at).max(1),
        }
    }
}

/// Counts requests against the per-minute limit, in Redis when configured.
#[derive(Debug)]
pub struct RateLimiter {
    limit: u32,
    local: LocalWindows,
    shared: Option<SharedWindows>,
}

impl RateLimiter {
    /// A limiter of `limit` requests a minute, shared through `redis.redis_url`
    /// when it is set. Connects lazily: Redis need not be up yet.
    pub fn new(limit: u32, redis: &RedisConfig) -> Self {
        RateLimiter {
            limit,
            local: LocalWindows::default(),
            shared: redis.redis_url.as_ref().and_then(|url| {
                let timeout = std::time::Duration::from_millis(redis.redis_timeout_ms);
                // As when Redis is unreachable: keep serving, counting here.
                SharedWindows::new(url.clone(), timeout)
                    .inspect_err(|e| {
                        tracing::error!(error = %e, "cannot use Redis for the rate limit; counting in this process")
                    })
                    .ok()
            }),
        }
    }

    /// Counts one request of `account` at `now`; refused requests are not counted.
    pub async fn check(&self, account: Uuid, now: DateTime<Utc>) -> RateDecision {
        self.check_many(account, now, 1).await
    }

    /// Counts `units` requests of `account` at `now` when they all fit in
    /// what is left of the window; otherwise refuses them all and counts
    /// none.
    pub async fn check_many(&self, account: Uuid, now: DateTime<Utc>, units: u32) -> RateDecision {
        self.tally(account, Window::of(now), Tally::Count(units))
            .await
    }

    /// Where `account` stands at `now`, counting nothing; `allowed` says
    /// whether one more request would fit.
    pub async fn peek(&self, account: Uuid, now: DateTime<Utc>) -> RateDecision {
        self.tally(account, Window::of(now), Tally::Peek).await
    }

    async fn tally(&self, account: Uuid, window: Window, tally: Tally) -> RateDecision {
        if let Some(shared) = &self.shared
            && let Some(counted) = shared.tally(account, window, self.limit, tally).await
        {
            return counted.decision(self.limit, window);
        }
        let counted = self.local.tally(account, window, self.limit, tally);
        counted.decision(self.limit, window)
    }
}
