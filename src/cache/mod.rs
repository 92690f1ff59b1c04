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
//! evicted. Each entry is paid for by the account whose request kept it,
//! and the entries one account paid for may take no more than its share
//! (`--cache-share-percent`): past that, its own least recently used go
//! first, so one key asking many distinct questions cannot evict the
//! answers everyone else reads.

pub mod packed;
pub mod versions;

use std::collections::HashMap;
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
    /// The account whose request kept it.
    payer: Uuid,
}

/// The entries one account paid for.
struct Paid {
    /// Their keys, least recently used first (kept in step with
    /// `Kept::entries`).
    keys: LruCache<Key, ()>,
    bytes: usize,
}

struct Kept {
    entries: LruCache<Key, Entry>,
    bytes: usize,
    /// Accounts with at least one entry.
    paid: HashMap<Uuid, Paid>,
}

impl Kept {
    fn insert(&mut self, key: Key, entry: Entry) {
        self.remove(&key);
        let bytes = entry.answer.bytes();
        let paid = self.paid.entry(entry.payer).or_insert_with(|| Paid {
            keys: LruCache::unbounded(),
            bytes: 0,
        });
        paid.keys.put(key, ());
        paid.bytes += bytes;
        self.bytes += bytes;
        self.entries.put(key, entry);
    }

    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let entry = self.entries.pop(key)?;
        let bytes = entry.answer.bytes();
        self.bytes -= bytes;
        if let Some(paid) = self.paid.get_mut(&entry.payer) {
            paid.keys.pop(key);
            paid.bytes -= bytes;
            if paid.keys.is_empty() {
                self.paid.remove(&entry.payer);
            }
        }
        Some(entry)
    }

    /// Evicts entries until those `payer` paid for take at most `share`
    /// bytes and all of them at most `budget`: how many it evicted.
    fn evict(&mut self, payer: Uuid, share: usize, budget: usize) -> u64 {
        let mut evicted = 0;
        loop {
            let over_share = self.paid.get_mut(&payer).filter(|paid| paid.bytes > share);
            let key = match over_share {
                Some(paid) => paid.keys.peek_lru().map(|(key, _)| *key),
                None if self.bytes > budget => self.over_budget(budget),
                None => None,
            };
            let Some(key) = key else { return evicted };
            self.remove(&key);
            evicted += 1;
        }
    }

    /// The entry to evict when the cache is over `budget`: the least
    /// recently used, unless its payer holds less than an equal part of the
    /// budget among the accounts with entries; then the least recently
    /// used of the account holding the most (at least that part, the cache
    /// being over budget). A share bounds one account; this keeps a few
    /// accounts that together fill the cache from evicting the answers of
    /// those keeping little.
    fn over_budget(&self, budget: usize) -> Option<Key> {
        let (key, entry) = self.entries.peek_lru()?;
        let equal = budget / self.paid.len().max(1);
        if self
            .paid
            .get(&entry.payer)
            .is_none_or(|paid| paid.bytes >= equal)
        {
            return Some(*key);
        }
        let largest = self.paid.values().max_by_key(|paid| paid.bytes)?;
        largest.keys.peek_lru().map(|(key, _)| *key)
    }
}

/// The answers this process keeps.
pub struct ResponseCache {
    kept: Mutex<Kept>,
    /// Bytes the entries may take; 0 keeps none.
    budget: usize,
    /// Bytes the entries one account paid for may take.
    share: usize,
    versions: Arc<DataVersions>,
}

impl ResponseCache {
    /// A cache of at most `megabytes`, over `versions`, of which the
    /// answers one account's requests kept may take `share_percent`.
    pub fn new(megabytes: u32, share_percent: u8, versions: Arc<DataVersions>) -> Self {
        let budget = megabytes as usize * 1024 * 1024;
        ResponseCache {
            kept: Mutex::new(Kept {
                entries: LruCache::unbounded(),
                bytes: 0,
                paid: HashMap::new(),
            }),
            budget,
            share: budget / 100 * usize::from(share_percent.min(100)),
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
            Some(entry) if current(entry.stamp, now, sharing) => {
                let (answer, payer) = (entry.answer.clone(), entry.payer);
                if let Some(paid) = kept.paid.get_mut(&payer) {
                    paid.keys.promote(&key);
                }
                Some(answer)
            }
            Some(_) => {
                // Retired by a write: it can never be served again.
                kept.remove(&key);
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

    /// Keeps `answer`, worked out by a read that began at `stamp` for a
    /// request of `payer`'s, unless a write has changed its data since or
    /// it would take more than a tenth of the cache (or the payer's share).
    pub fn put(
        &self,
        (request, sharing): (Request, Sharing),
        stamp: Stamp,
        payer: Uuid,
        answer: Answer,
    ) {
        let Some(now) = self.stamp() else { return };
        let bytes = answer.bytes();
        if !current(stamp, now, sharing) || bytes > self.share.min(self.budget / 10) {
            return;
        }
        let entry = Entry {
            stamp,
            answer: Arc::new(answer),
            payer,
        };
        let mut kept = self.lock();
        kept.insert(key(request, sharing), entry);
        let evicted = kept.evict(payer, self.share, self.budget);
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

    /// A cache of `megabytes`, the whole of it one account's share.
    fn cache(megabytes: u32) -> (ResponseCache, Arc<DataVersions>) {
        shared(megabytes, 100)
    }

    fn shared(megabytes: u32, share_percent: u8) -> (ResponseCache, Arc<DataVersions>) {
        let versions = Arc::new(DataVersions::new(true));
        let cache = ResponseCache::new(megabytes, share_percent, versions.clone());
        (cache, versions)
    }

    /// Keeps an answer of `bytes` to `request` for everyone, read now and
    /// paid for by the account numbered `payer`.
    fn keep(cache: &ResponseCache, request: Request, payer: u128, bytes: usize) {
        let stamp = cache.stamp().unwrap();
        cache.put(
            (request, Sharing::Everyone),
            stamp,
            Uuid::from_u128(payer),
            rest(bytes),
        );
    }

    #[test]
    fn an_answer_is_served_until_its_grain_changes() {
        let (cache, versions) = cache(1);
        let (request, account) = (Request::of(&[b"q"]), Sharing::Account(Uuid::nil()));
        keep(&cache, request, 0, 10);
        cache.put(
            (request, account),
            cache.stamp().unwrap(),
            Uuid::nil(),
            rest(10),
        );
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
        cache.put((request, Sharing::Everyone), began, Uuid::nil(), rest(10));
        assert!(cache.get(request, Sharing::Everyone).is_none());
    }

    #[test]
    fn past_the_budget_the_least_recently_used_go_first() {
        let (cache, _) = shared(1, 25);
        let requests: Vec<Request> = (0u8..12).map(|i| Request::of(&[&[i]])).collect();
        // Each paid for by another account: the shares play no part.
        for (i, request) in requests[..11].iter().enumerate() {
            keep(&cache, *request, i as u128, 90_000);
        }
        // The first was used last: the second is the least recently used.
        assert!(cache.get(requests[0], Sharing::Everyone).is_some());
        keep(&cache, requests[11], 11, 90_000);
        assert!(cache.lock().bytes <= 1024 * 1024);
        assert!(cache.get(requests[0], Sharing::Everyone).is_some());
        assert!(cache.get(requests[1], Sharing::Everyone).is_none());
        assert!(cache.get(requests[11], Sharing::Everyone).is_some());
    }

    #[test]
    fn one_account_cannot_evict_the_answers_others_kept() {
        let (cache, _) = shared(1, 25);
        let others: Vec<Request> = (0u8..3).map(|i| Request::of(&[b"other", &[i]])).collect();
        for (i, request) in others.iter().enumerate() {
            keep(&cache, *request, 100 + i as u128, 90_000);
        }
        // Twenty distinct answers, twice the cache, all paid for by one.
        let flood: Vec<Request> = (0u8..20).map(|i| Request::of(&[b"flood", &[i]])).collect();
        for request in &flood {
            keep(&cache, *request, 1, 90_000);
        }
        for request in &others {
            assert!(cache.get(*request, Sharing::Everyone).is_some());
        }
        // Its own least recently used went first, within its quarter.
        let kept = flood
            .iter()
            .filter(|r| cache.get(**r, Sharing::Everyone).is_some());
        assert_eq!(kept.count(), 2);
        assert!(cache.get(flood[19], Sharing::Everyone).is_some());
        let bytes = cache.lock().paid[&Uuid::from_u128(1)].bytes;
        assert!(bytes <= 1024 * 1024 / 4, "{bytes}");
        assert_eq!(cache.lock().bytes, 5 * (90_000 + ENTRY_OVERHEAD));
    }

    #[test]
    fn accounts_filling_the_cache_together_evict_their_own_answers() {
        // Three answers of 90,000 bytes fit in a share: four accounts'
        // shares add up to more than the cache.
        let (cache, _) = shared(1, 30);
        let quiet = Request::of(&[b"quiet"]);
        keep(&cache, quiet, 100, 90_000);
        // Four accounts, each within its share, send twice the cache.
        for round in 0u8..6 {
            for payer in 1u8..=4 {
                keep(
                    &cache,
                    Request::of(&[b"flood", &[payer, round]]),
                    payer.into(),
                    90_000,
                );
            }
        }
        assert!(cache.get(quiet, Sharing::Everyone).is_some());
        assert!(cache.lock().bytes <= 1024 * 1024);
        // Each flooding account keeps its own latest answer.
        for payer in 1u8..=4 {
            let latest = Request::of(&[b"flood", &[payer, 5]]);
            assert!(cache.get(latest, Sharing::Everyone).is_some(), "{payer}");
        }
    }

    #[test]
    fn an_accounts_share_follows_its_hits() {
        let (cache, _) = shared(1, 25);
        let [a, b, c] = [b"a", b"b", b"c"].map(|name| Request::of(&[name]));
        keep(&cache, a, 1, 90_000);
        keep(&cache, b, 1, 90_000);
        assert!(cache.get(a, Sharing::Everyone).is_some());
        // Past its share: `b`, not `a` just read again, makes room.
        keep(&cache, c, 1, 90_000);
        assert!(cache.get(a, Sharing::Everyone).is_some());
        assert!(cache.get(b, Sharing::Everyone).is_none());
        assert!(cache.get(c, Sharing::Everyone).is_some());
    }

    #[test]
    fn an_answer_over_a_tenth_of_the_cache_is_not_kept() {
        let (cache, _) = cache(1);
        let (small, large) = (Request::of(&[b"small"]), Request::of(&[b"large"]));
        keep(&cache, small, 0, 90_000);
        // Would evict most of the cache for one answer.
        keep(&cache, large, 1, 1024 * 1024 / 10);
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
        let stamp = cache.stamp().unwrap();
        cache.put(
            (Request::of(&[b"q"]), Sharing::Everyone),
            stamp,
            Uuid::nil(),
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
