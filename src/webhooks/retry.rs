//! The retry policy: what one attempt's outcome means for its delivery.
//!
//! | outcome | verdict |
//! |---|---|
//! | any 2xx | succeeded |
//! | 3xx (redirects are not followed) | failed at once |
//! | 429 with a usable `Retry-After` | retry at that time (at most 24 h away) |
//! | 429 without one, 5xx, no answer (network error, timeout, a hostname now resolving to a non-public address) | retry on [`SCHEDULE`] |
//! | other 4xx (and anything else), a target URL that is not allowed | failed at once |
//!
//! [`MAX_ATTEMPTS`] attempts at most: a retryable failure of the last one is final.

use chrono::{DateTime, TimeDelta, Utc};

/// Delay before attempt n + 1 after attempt n failed (n = 1..=6). No jitter:
/// the spec's schedule, exactly.
pub const SCHEDULE: [TimeDelta; 6] = [
    TimeDelta::minutes(1),
    TimeDelta::minutes(5),
    TimeDelta::minutes(30),
    TimeDelta::hours(2),
    TimeDelta::hours(6),
    TimeDelta::hours(24),
];

/// Attempts a delivery gets in total.
pub const MAX_ATTEMPTS: i32 = SCHEDULE.len() as i32 + 1;

/// The longest wait a `Retry-After` header can ask for.
pub const MAX_RETRY_AFTER: TimeDelta = TimeDelta::hours(24);

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The receiver answered with this status.
    Answered {
        status: u16,
        retry_after: Option<String>,
    },
    /// No answer: connection failure, timeout, or a hostname that does not
    /// resolve (or resolves to a non-public address). DNS can change, so it
    /// is retried.
    NoAnswer(String),
    /// The target URL itself is not allowed (scheme, IP literal); never dialled.
    NotAllowed(String),
}

impl Outcome {
    /// What the attempt log shows: the receiver's status, or why there was none.
    pub fn status_or_error(&self) -> (Option<u16>, Option<&str>) {
        match self {
            Outcome::Answered { status, .. } => (Some(*status), None),
            Outcome::NoAnswer(e) | Outcome::NotAllowed(e) => (None, Some(e)),
        }
    }
}

/// What becomes of the delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Succeeded,
    RetryAt(DateTime<Utc>),
    Failed,
}

impl Verdict {
    pub fn is_success(self) -> bool {
        self == Verdict::Succeeded
    }
}

/// Judges attempt number `attempt` (1-based), made at `now`.
pub fn judge(outcome: &Outcome, attempt: i32, now: DateTime<Utc>) -> Verdict {
    let on_schedule = || match usize::try_from(attempt - 1)
        .ok()
        .and_then(|i| SCHEDULE.get(i))
    {
        Some(delay) => Verdict::RetryAt(now + *delay),
        None => Verdict::Failed,
    };
    match outcome {
        Outcome::Answered { status, .. } if (200..300).contains(status) => Verdict::Succeeded,
        Outcome::Answered {
            status: 429,
            retry_after,
        } => match retry_after.as_deref().and_then(|v| retry_at(v, now)) {
            Some(at) if attempt < MAX_ATTEMPTS => Verdict::RetryAt(at),
            _ => on_schedule(),
        },
        Outcome::Answered { status, .. } if *status >= 500 => on_schedule(),
        Outcome::Answered { .. } | Outcome::NotAllowed(_) => Verdict::Failed,
        Outcome::NoAnswer(_) => on_schedule(),
    }
}

/// When a `Retry-After` value (delta-seconds or an HTTP-date) asks to be
/// retried, bounded to [`MAX_RETRY_AFTER`] from `now`; a date in the past
/// means now. `None` for a value that is neither.
pub fn retry_at(value: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let value = value.trim();
    let wanted = match value.parse::<u64>() {
        Ok(seconds) => {
            let seconds = i64::try_from(seconds).unwrap_or(i64::MAX);
            now + TimeDelta::try_seconds(seconds).unwrap_or(MAX_RETRY_AFTER)
        }
        Err(_) => DateTime::<Utc>::from(httpdate::parse_http_date(value).ok()?),
    };
    Some(wanted.clamp(now, now + MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-20T12:00:00Z")
            .unwrap()
            .to_utc()
    }

    fn answered(status: u16, retry_after: Option<&str>) -> Outcome {
        Outcome::Answered {
            status,
            retry_after: retry_after.map(Into::into),
        }
    }

    #[test]
    fn retry_after_takes_seconds_and_dates_within_a_day() {
        let now = now();
        assert_eq!(retry_at("120", now), Some(now + TimeDelta::seconds(120)));
        assert_eq!(
            retry_at("Fri, 20 Nov 2026 12:10:00 GMT", now),
            Some(now + TimeDelta::minutes(10))
        );
        assert_eq!(retry_at("Fri, 20 Nov 2026 11:00:00 GMT", now), Some(now));
        assert_eq!(retry_at("999999999999", now), Some(now + MAX_RETRY_AFTER));
        assert_eq!(retry_at("soon", now), None);
        assert_eq!(retry_at("-5", now), None);
    }

    #[test]
    fn outcomes_map_to_verdicts() {
        let now = now();
        let retry_1m = Verdict::RetryAt(now + TimeDelta::minutes(1));
        assert_eq!(judge(&answered(204, None), 1, now), Verdict::Succeeded);
        assert_eq!(judge(&answered(302, None), 1, now), Verdict::Failed);
        assert_eq!(judge(&answered(404, None), 1, now), Verdict::Failed);
        assert_eq!(judge(&answered(503, None), 1, now), retry_1m);
        assert_eq!(judge(&answered(429, None), 1, now), retry_1m);
        assert_eq!(judge(&answered(429, Some("junk")), 1, now), retry_1m);
        assert_eq!(
            judge(&answered(429, Some("30")), 1, now),
            Verdict::RetryAt(now + TimeDelta::seconds(30))
        );
        assert_eq!(judge(&Outcome::NoAnswer("x".into()), 2, now), {
            Verdict::RetryAt(now + TimeDelta::minutes(5))
        });
        assert_eq!(
            judge(&Outcome::NotAllowed("x".into()), 1, now),
            Verdict::Failed
        );
    }

    #[test]
    fn the_last_attempt_is_final() {
        let now = now();
        assert_eq!(
            judge(&answered(500, None), MAX_ATTEMPTS - 1, now),
            Verdict::RetryAt(now + TimeDelta::hours(24))
        );
        assert_eq!(
            judge(&answered(500, None), MAX_ATTEMPTS, now),
            Verdict::Failed
        );
        assert_eq!(
            judge(&answered(429, Some("1")), MAX_ATTEMPTS, now),
            Verdict::Failed
        );
    }
}
