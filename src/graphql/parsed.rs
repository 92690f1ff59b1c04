//! Parsed query documents, kept by query text. Clients send the same few
//! queries over and over, and parsing is the dearest step before execution
//! (a third of the server's work for a product by id with its fragments).

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use async_graphql::Request;
use async_graphql::parser::{parse_query, types::ExecutableDocument};
use lru::LruCache;

/// Distinct queries kept; the least recently used goes first.
const CAPACITY: NonZeroUsize = NonZeroUsize::new(256).unwrap();
/// Longer queries are parsed every time, so the cache stays small (at most
/// a few MB) whatever clients send.
const MAX_QUERY_LEN: usize = 8 * 1024;

pub struct ParsedQueries(Mutex<LruCache<String, Arc<ExecutableDocument>>>);

impl Default for ParsedQueries {
    fn default() -> Self {
        ParsedQueries(Mutex::new(LruCache::new(CAPACITY)))
    }
}

impl ParsedQueries {
    /// Hands `request` its parsed document, from the cache or freshly
    /// parsed. A query that does not parse is left for async-graphql to
    /// parse and report as it always does.
    pub fn prepare(&self, mut request: Request) -> Request {
        if request.query.len() > MAX_QUERY_LEN {
            return request;
        }
        let cached = self.lock().get(&request.query).cloned();
        let document = match cached {
            Some(document) => document,
            None => match parse_query(&request.query) {
                Ok(document) => {
                    let document = Arc::new(document);
                    self.lock().put(request.query.clone(), document.clone());
                    document
                }
                Err(_) => return request,
            },
        };
        request.set_parsed_query((*document).clone());
        request
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Arc<ExecutableDocument>>> {
        // The cache holds no invariant a panicking holder could break.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
