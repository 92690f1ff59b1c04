//! API keys this process admitted lately, so that a busy key's requests
//! send no lookup statement. Correctness rests on the revocation poll
//! ([`super::revocations`]): every [`super::revocations::POLL`] it asks the
//! database which remembered keys were revoked, by primary key, and
//! forgets those. A remembered key is served only while the last poll
//! succeeded within [`FRESH`], so a revocation anywhere (the CLI, another
//! replica) is refused here within a second, and a database the poll cannot
//! reach turns the memory off instead of serving it stale. Unknown and
//! revoked keys are never remembered: they cost one lookup, as before.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use uuid::Uuid;

use crate::accounts::Caller;

/// How recent the last successful revocation poll must be for a
/// remembered key to be served.
pub const FRESH: Duration = Duration::from_millis(1_000);

/// A key not presented for this long is forgotten, so that the poll reads
/// only the keys in use.
const IDLE: Duration = Duration::from_secs(60);

/// How long a key is served from memory before it is looked up again: the
/// resolution of its `last_used_at`, which the lookup keeps.
const LOOKED_UP_FOR: TimeDelta = crate::accounts::LAST_USED_RESOLUTION;

/// The remembered keys, by the hash of their secret.
pub struct KnownKeys {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    keys: HashMap<String, Known>,
    /// When the last revocation poll succeeded.
    checked: Option<Instant>,
}

struct Known {
    caller: Caller,
    /// When the database last vouched for it (the injected clock's time).
    looked_up: DateTime<Utc>,
    /// When it was last presented.
    used: Instant,
}

impl KnownKeys {
    /// At most `capacity` keys are remembered; 0 remembers none.
    pub fn new(capacity: usize) -> Self {
        KnownKeys {
            capacity,
            inner: Mutex::default(),
        }
    }

    /// The caller of the key whose secret hashes to `hash`, when it is
    /// remembered and the memory is fresh.
    pub fn caller(&self, hash: &str, now: DateTime<Utc>) -> Option<Caller> {
        let mut inner = self.lock();
        if inner.checked.is_none_or(|at| at.elapsed() >= FRESH) {
            return None;
        }
        let known = inner.keys.get_mut(hash)?;
        if now - known.looked_up >= LOOKED_UP_FOR {
            return None;
        }
        known.used = Instant::now();
        Some(known.caller.clone())
    }

    /// Remembers a key the database just vouched for at `now`; when full,
    /// a new key is simply looked up each time.
    pub fn remember(&self, hash: String, caller: Caller, now: DateTime<Utc>) {
        let mut inner = self.lock();
        if inner.keys.len() >= self.capacity && !inner.keys.contains_key(&hash) {
            return;
        }
        let known = Known {
            caller,
            looked_up: now,
            used: Instant::now(),
        };
        inner.keys.insert(hash, known);
    }

    /// The ids of the keys to poll, forgetting the idle ones first.
    pub(super) fn in_use(&self) -> Vec<Uuid> {
        let mut inner = self.lock();
        inner.keys.retain(|_, known| known.used.elapsed() < IDLE);
        inner
            .keys
            .values()
            .map(|known| known.caller.key_id)
            .collect()
    }

    /// Forgets the `revoked` keys and records a successful poll that began
    /// at `began`.
    pub(super) fn checked(&self, revoked: &[Uuid], began: Instant) {
        let mut inner = self.lock();
        inner
            .keys
            .retain(|_, known| !revoked.contains(&known.caller.key_id));
        inner.checked = Some(began);
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Plain maps and times: a panicking holder leaves nothing half done.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller() -> Caller {
        Caller {
            account_id: Uuid::new_v4(),
            key_id: Uuid::new_v4(),
            scopes: crate::accounts::Scopes::ALL,
            expires_at: None,
        }
    }

    #[test]
    fn a_key_is_served_only_after_a_recent_poll_and_until_it_is_revoked() {
        let known = KnownKeys::new(10);
        let (now, key) = (Utc::now(), caller());
        known.remember("h".into(), key.clone(), now);
        assert!(known.caller("h", now).is_none(), "no poll yet");
        known.checked(&[], Instant::now());
        assert_eq!(known.caller("h", now).map(|c| c.key_id), Some(key.key_id));
        known.checked(&[], Instant::now() - FRESH);
        assert!(known.caller("h", now).is_none(), "the last poll is stale");
        known.checked(&[key.key_id], Instant::now());
        assert!(known.caller("h", now).is_none(), "revoked");
        assert!(known.in_use().is_empty());
    }

    #[test]
    fn a_key_is_looked_up_again_after_a_minute_and_never_past_capacity() {
        let known = KnownKeys::new(1);
        let now = Utc::now();
        known.remember("a".into(), caller(), now);
        known.remember("b".into(), caller(), now);
        known.checked(&[], Instant::now());
        assert!(known.caller("a", now + TimeDelta::seconds(59)).is_some());
        assert!(known.caller("a", now + LOOKED_UP_FOR).is_none());
        assert!(known.caller("b", now).is_none(), "over capacity");
        let off = KnownKeys::new(0);
        off.remember("a".into(), caller(), now);
        off.checked(&[], Instant::now());
        assert!(off.caller("a", now).is_none(), "remembering is off");
    }
}
