//! The response cache: answers to GraphQL queries and REST v1 GETs, kept
//! until the data they were worked out from changes, so that the same
//! request asked again (dashboards poll) is answered from memory, with no
//! statement sent.
//!
//! An entry is keyed by a digest of what decides the answer (the document or
//! path, the operation, the variables, the media type) and, when the answer
//! depends on who asks, the account. It is stamped with the data versions a
//! read saw when it began ([`versions`]); it is stored only if they have not
//! changed by the time it ends, and served only while they are current. So
//! an entry is never stale: a write retires it by bumping its grain. Memory
//! is bounded by `--cache-mb`: past it, the least recently used entries are
//! evicted.

pub mod packed;
pub mod versions;

use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::{HeaderMap, StatusCode};
use headers::ETag;
use lru::LruCache;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use packed::Packed;
use versions::{DataVersions, Stamp};

/// The bytes an entry is counted for beyond its body: its key, the map's
/// slot and the entry's fields.
const ENTRY_OVERHEAD: usize = 256;

/// Whom an answer may be served to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Any caller: it depends on the catalog only.
    Everyone,
    /// Only its own account: it read the caller's own data (sessions, `me`).
    Account(Uuid),
}

/// What is kept of one answer.
#[derive(Debug)]
pub enum Answer {
    /// A GraphQL operation's answer up to its `extensions` (`{"data":...`,
    /// each hit adds its own), with its cost analysis
    /// (`extensions.analyzer`) and the tag its response carried.
    Graphql {
        head: Packed,
        analyzer: async_graphql::Value,
        tag: Option<ETag>,
    },
    /// A REST answer as its handler gave it.
    Rest {
        status: StatusCode,
        headers: HeaderMap,
        body: Packed,
    },
}

impl Answer {
    fn bytes(&self) -> usize {
        match self {
            Answer::Graphql { head, .. } => head.bytes() + ENTRY_OVERHEAD,
            Answer::Rest { headers, body, .. } => {
                let headers: usize = headers
                    .iter()
                    .map(|(k, v)| k.as_str().len() + v.len())
                    .sum();
                body.bytes() + headers + ENTRY_OVERHEAD
            }
        }
    }
}

/// The digest of what decides an answer, whoever asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Request([u8; 32]);

impl Request {
    /// The digest of `parts`, each framed by its length so that no two
    /// different lists of parts read as one.
    pub fn of(parts: &[&[u8]]) -> Request {
        let mut digest = Sha256::new();
        for part in parts {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part);
        }
        Request(digest.finalize().into())
    }
}

type Key = (Request, Option<Uuid>);

struct Entry {
    stamp: Stamp,
    answer: Arc<Answer>,
}

struct Kept {
    entries: LruCache<Key, Entry>,
    bytes: usize,
}

/// The answers this process keeps.
pub struct ResponseCache {
    kept: Mutex<Kept>,
    /// Bytes the entries may take; 0 keeps none.
    budget: usize,
    versions: Arc<DataVersions>,
}

impl ResponseCache {
    /// A cache of at most `megabytes`, over `versions`.
    pub fn new(megabytes: u32, versions: Arc<DataVersions>) -> Self {
        ResponseCache {
            kept: Mutex::new(Kept {
                entries: LruCache::unbounded(),
                bytes: 0,
            }),
            budget: megabytes as usize * 1024 * 1024,
            versions,
        }
    }

    /// Whether answers are kept at all.
    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// The data versions a read beginning now works from; `None` when the
    /// cache is off or they cannot be known (then nothing is stored).
    pub fn stamp(&self) -> Option<Stamp> {
        self.enabled().then(|| self.versions.stamp()).flatten()
    }

    /// The answer to `request` kept for `sharing`, if it is still current.
    /// A hit is counted in the metrics; a request that finds nothing, once
    /// it has looked wherever it may, is counted by [`Self::missed`].
    pub fn get(&self, request: Request, sharing: Sharing) -> Option<Arc<Answer>> {
        let now = self.stamp()?;
        let key = key(request, sharing);
        let mut kept = self.lock();
        let found = match kept.entries.get(&key) {
            Some(entry) if current(entry.stamp, now, sharing) => Some(entry.answer.clone()),
            Some(_) => {
                // Retired by a write: it can never be served again.
                if let Some(entry) = kept.entries.pop(&key) {
                    kept.bytes -= entry.answer.bytes();
                }
                None
            }
            None => None,
        };
        if found.is_some() {
            crate::metrics::cache_lookup(true);
        }
        found
    }

    /// Counts a request that found no answer kept for it.
    pub fn missed(&self) {
        crate::metrics::cache_lookup(false);
    }

    /// Keeps `answer`, worked out by a read that began at `stamp`, unless a
    /// write has changed its data since or it would take more than a tenth
    /// of the cache.
    pub fn put(&self, request: Request, sharing: Sharing, stamp: Stamp, answer: Answer) {
        let Some(now) = self.stamp() else { return };
        let bytes = answer.bytes();
        if !current(stamp, now, sharing) || bytes > self.budget / 10 {
            return;
        }
        let entry = Entry {
            stamp,
            answer: Arc::new(answer),
        };
        let mut kept = self.lock();
        if let Some(old) = kept.entries.put(key(request, sharing), entry) {
            kept.bytes -= old.answer.bytes();
        }
        kept.bytes += bytes;
        let mut evicted = 0;
        while kept.bytes > self.budget {
            let Some((_, entry)) = kept.entries.pop_lru() else {
                break;
            };
            kept.bytes -= entry.answer.bytes();
            evicted += 1;
        }
        crate::metrics::cache_stored(evicted, kept.bytes);
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        // A map and a sum updated together under the lock, never across
        // an await: a panicking holder leaves them whole.
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn key(request: Request, sharing: Sharing) -> Key {
    match sharing {
        Sharing::Everyone => (request, None),
        Sharing::Account(account) => (request, Some(account)),
    }
}

/// Whether what was read at `stamp` is still the data at `now`: an answer
/// for everyone read the catalog only, an account's its sessions too.
fn current(stamp: Stamp, now: Stamp, sharing: Sharing) -> bool {
    stamp.catalog == now.catalog && (sharing == Sharing::Everyone || stamp.sessions == now.sessions)
}

#[cfg(test)]
mod tests {
    use super::versions::Grains;
    use super::*;

    /// An answer of `bytes` that do not deflate, so they are counted as
    /// they are.
    fn rest(bytes: usize) -> Answer {
        Answer::Rest {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            body: Packed::new(packed::noise(bytes)),
        }
    }

    fn cache(megabytes: u32) -> (ResponseCache, Arc<DataVersions>) {
        let versions = Arc::new(DataVersions::new(true));
        (ResponseCache::new(megabytes, versions.clone()), versions)
    }

    #[test]
    fn an_answer_is_served_until_its_grain_changes() {
        let (cache, versions) = cache(1);
        let (request, account) = (Request::of(&[b"q"]), Sharing::Account(Uuid::nil()));
        cache.put(request, Sharing::Everyone, cache.stamp().unwrap(), rest(10));
        cache.put(request, account, cache.stamp().unwrap(), rest(10));
        versions.bump(Grains::SESSIONS);
        assert!(cache.get(request, Sharing::Everyone).is_some());
        assert!(cache.get(request, account).is_none());
        versions.bump(Grains::CATALOG);
        assert!(cache.get(request, Sharing::Everyone).is_none());
    }

    #[test]
    fn a_read_that_a_write_overtook_is_not_kept() {
        let (cache, versions) = cache(1);
        let request = Request::of(&[b"q"]);
        let began = cache.stamp().unwrap();
        versions.bump(Grains::CATALOG);
        cache.put(request, Sharing::Everyone, began, rest(10));
        assert!(cache.get(request, Sharing::Everyone).is_none());
    }

    #[test]
    fn past_the_budget_the_least_recently_used_go_first() {
        let (cache, _) = cache(1);
        let stamp = cache.stamp().unwrap();
        let requests: Vec<Request> = (0u8..12).map(|i| Request::of(&[&[i]])).collect();
        for request in &requests[..11] {
            cache.put(*request, Sharing::Everyone, stamp, rest(90_000));
        }
        // The first was used last: the second is the least recently used.
        assert!(cache.get(requests[0], Sharing::Everyone).is_some());
        cache.put(requests[11], Sharing::Everyone, stamp, rest(90_000));
        assert!(cache.lock().bytes <= 1024 * 1024);
        assert!(cache.get(requests[0], Sharing::Everyone).is_some());
        assert!(cache.get(requests[1], Sharing::Everyone).is_none());
        assert!(cache.get(requests[11], Sharing::Everyone).is_some());
    }

    #[test]
    fn an_answer_over_a_tenth_of_the_cache_is_not_kept() {
        let (cache, _) = cache(1);
        let (small, large) = (Request::of(&[b"small"]), Request::of(&[b"large"]));
        let stamp = cache.stamp().unwrap();
        cache.put(small, Sharing::Everyone, stamp, rest(90_000));
        // Would evict most of the cache for one answer.
        cache.put(large, Sharing::Everyone, stamp, rest(1024 * 1024 / 10));
        assert!(cache.get(large, Sharing::Everyone).is_none());
        assert!(cache.get(small, Sharing::Everyone).is_some());
        assert_eq!(cache.lock().bytes, 90_000 + ENTRY_OVERHEAD);
    }

    #[test]
    fn a_deflated_answer_counts_as_the_bytes_it_keeps() {
        let (cache, _) = cache(1);
        let json = format!(
            "[{}]",
            vec![r#"{"brand":"Redmond","price":1000.0}"#; 500].join(",")
        );
        let answer = Answer::Rest {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            body: Packed::new(json.clone().into()),
        };
        cache.put(
            Request::of(&[b"q"]),
            Sharing::Everyone,
            cache.stamp().unwrap(),
            answer,
        );
        assert!(
            cache.lock().bytes < json.len() / 10,
            "{} of {}",
            cache.lock().bytes,
            json.len()
        );
    }

    #[test]
    fn a_cache_of_no_megabytes_keeps_nothing() {
        let (cache, _) = cache(0);
        assert!(cache.stamp().is_none());
        assert!(cache.get(Request::of(&[b"q"]), Sharing::Everyone).is_none());
    }

    #[test]
    fn parts_are_framed() {
        assert_ne!(Request::of(&[b"ab", b"c"]), Request::of(&[b"a", b"bc"]));
    }
}
