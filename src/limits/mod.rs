//! Per-account limits shared by REST and GraphQL: the per-minute rate limit
//! and the daily data quota.

pub mod quota;
pub mod rate;

pub use quota::{QuotaCharge, QuotaOutcome};
pub use rate::{RateDecision, RateLimiter};

/// Configured sizes of the limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Requests per account per minute.
    pub rate_per_minute: u32,
    /// Rows per account per UTC day, unless the account sets its own.
    pub daily_quota: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rate_per_minute: 600,
            daily_quota: 10_000,
        }
    }
}
