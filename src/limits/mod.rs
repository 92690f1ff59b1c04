//! Per-account limits shared by REST and GraphQL: the per-minute rate limit
//! and the daily data quota.

pub mod quota;
pub mod rate;

// Their sizes are configuration, typed with the rest of it.
pub use crate::config::Limits;
pub use quota::{QuotaCharge, QuotaOutcome};
pub use rate::{RateDecision, RateLimiter};
