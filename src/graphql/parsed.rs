//! Parsed query documents, kept by query text. Clients send the same few
//! queries over and over, and parsing is the dearest step before execution
//! (a third of the server's work for a product by id with its fragments).

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use async_graphql::parser::{parse_query, types::ExecutableDocument};
use lru::LruCache;

/// Distinct queries kept; the least recently used goes first.
const CAPACITY: NonZeroUsize = NonZeroUsize::new(256).unwrap();
/// Longer queries are parsed for each request and not kept, so the cache
/// stays small (at most a few MB) whatever clients send.
const MAX_QUERY_LEN: usize = 8 * 1024;

pub struct ParsedQueries(Mutex<LruCache<String, Arc<ExecutableDocument>>>);

impl Default for ParsedQueries {
    fn default() -> Self {
        ParsedQueries(Mutex::new(LruCache::new(CAPACITY)))
    }
}

impl ParsedQueries {
    /// The parsed document of `query`: from the cache, or parsed now (and
    /// kept unless the query is too long to keep). `None` for a query that
    /// does not parse, left for async-graphql to parse and report as it
    /// always does.
    pub fn document(&self, query: &str) -> Option<Arc<ExecutableDocument>> {
        if query.len() > MAX_QUERY_LEN {
            return parse_query(query).ok().map(Arc::new);
        }
        if let Some(document) = self.lock().get(query) {
            return Some(document.clone());
        }
        let document = Arc::new(parse_query(query).ok()?);
        self.lock().put(query.to_owned(), document.clone());
        Some(document)
    }

    /// Whether `query` is in the cache (looked up without counting as a use).
    pub fn contains(&self, query: &str) -> bool {
        self.lock().contains(query)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Arc<ExecutableDocument>>> {
        // The cache holds no invariant a panicking holder could break.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
