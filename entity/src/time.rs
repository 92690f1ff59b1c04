//! Timestamps as the database keeps them.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

/// Truncates to whole microseconds, the precision PostgreSQL stores, so a
/// value read back equals the value written on every backend.
pub fn db_time(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(t)
}

/// The current time at database precision.
pub fn db_now() -> DateTime<Utc> {
    db_time(Utc::now())
}
