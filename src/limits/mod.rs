//! Per-account limits shared by REST and GraphQL: the per-minute rate limit,
//! the per-minute database-time budget and the daily data quota.

pub mod db_time;
pub mod quota;
pub mod rate;

// Their sizes are configuration, typed with the rest of it.
pub use crate::config::Limits;
pub use db_time::DbTimeBudget;
pub use quota::{QuotaCharge, QuotaOutcome};
pub use rate::{RateDecision, RateLimiter};
