//! Automatic persisted queries, Apollo's protocol (Apollo Client, urql and
//! Relay speak it): instead of a query's text a client may send its hex
//! SHA-256 in `extensions.persistedQuery` (`{"version": 1, "sha256Hash":
//! "..."}`), over POST or a cacheable `GET /graphql?extensions=...`. A hash
//! the server does not know is answered `PERSISTED_QUERY_NOT_FOUND`, and
//! the client sends the text with its hash, which is checked and kept.
//!
//! The texts live in the `persisted_queries` table, shared by every replica
//! and bounded by `--graphql-persisted-queries-max` (the least recently
//! used go first), with the latest texts of this process in memory in front
//! of it: a hash names one text forever, so a copy is never stale.
//!
//! Hashes are looked up when a request is priced (`Schemas::price`), which
//! for a request without a known query text waits for the key check: a
//! caller without a key cannot make the server read the table, and every
//! lookup counts against the rate limit. A text is kept only when its
//! request runs (`Schemas::run`): its caller was admitted and its document
//! passed every limit, so neither a caller without a key nor a refused
//! document fills the table; and it is no longer than the document limit.

use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard};

use async_graphql::{Request, Response, ServerError, Value};
use axum::http::{HeaderMap, HeaderValue, header};
use chrono::{DateTime, TimeDelta, Utc};
use entity::persisted_query;
use lru::LruCache;
use sea_orm::sea_query::{Expr, OnConflict, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, Order, PaginatorTrait,
    QueryFilter,
};
use sha2::{Digest, Sha256};

use super::response::server_error;
use crate::clock::SharedClock;
use crate::http::ApiError;
use crate::state::AppState;

/// The request extension that carries a persisted query.
const EXTENSION: &str = "persistedQuery";
/// The one version of the protocol.
const VERSION: i64 = 1;
/// Texts kept in this process; the least recently used goes first. At most
/// `CACHED` times the document limit (8 MiB at the default 32 KiB).
const CACHED: NonZeroUsize = NonZeroUsize::new(256).unwrap();
/// A text's `last_used_at` is refreshed at most this often, so answering a
/// hash does not write to the database each time.
const TOUCH_EVERY: TimeDelta = TimeDelta::minutes(10);
/// Most rows one statement evicts, when the table holds more than its
/// maximum (after the maximum was lowered): later registrations evict the
/// rest.
const EVICT_AT_ONCE: u64 = 100;

/// Whether a request names neither a query nor a persisted one: then it is
/// not a GraphQL request.
pub fn lacks_query(request: &Request) -> bool {
    request.query.is_empty() && !request.extensions.contains_key(EXTENSION)
}

/// The persisted queries of the service: the table, and this process's
/// copies of its latest texts.
pub struct PersistedQueries {
    db: DatabaseConnection,
    clock: SharedClock,
    max_entries: u64,
    max_bytes: usize,
    cached: Mutex<LruCache<String, Cached>>,
}

/// A text known in this process.
struct Cached {
    query: String,
    /// When its `last_used_at` was last written (or read), as far as this
    /// process knows.
    touched_at: DateTime<Utc>,
}

/// The hash of a request's query, checked: put in the request's data by
/// [`PersistedQueries::resolve`], for [`PersistedQueries::keep`].
struct Hashed(String);

impl PersistedQueries {
    pub fn new(state: &AppState) -> Self {
        let config = &state.settings.graphql;
        PersistedQueries {
            db: state.db.clone(),
            clock: state.clock.clone(),
            max_entries: config.persisted_queries_max,
            max_bytes: config.max_document_bytes,
            cached: Mutex::new(LruCache::new(CACHED)),
        }
    }

    /// The request with its query text: a hash alone is replaced by the
    /// text it names, a hash sent with a text is checked against it.
    /// Refused, with the response to send: an unknown hash (the client then
    /// sends the text), a hash that is not the text's, another version.
    pub async fn resolve(&self, mut request: Request) -> Result<Request, Response> {
        let Some(extension) = request.extensions.get(EXTENSION) else {
            return Ok(request);
        };
        let hash = read_hash(extension).map_err(|e| refusal(&e))?;
        if request.query.is_empty() {
            match self.lookup(&hash).await {
                Ok(Some(query)) => request.query = query,
                Ok(None) => return Err(not_found()),
                Err(e) => return Err(refusal(&ApiError::from(e))),
            }
        } else if request.query.len() > self.max_bytes {
            // Refused by the document limit when priced, and never kept:
            // not worth hashing.
            return Ok(request);
        } else if sha256_hex(&request.query) != hash {
            return Err(refusal(&ApiError::InvalidParameter(
                "extensions.persistedQuery.sha256Hash is not the SHA-256 of the query sent with it"
                    .into(),
            )));
        }
        request.data.insert(Hashed(hash));
        Ok(request)
    }

    /// Keeps the text of a request about to run under its hash (if it came
    /// with one), or notes that it was used: at most once per
    /// [`TOUCH_EVERY`] in this process. A failure is logged; the request
    /// runs anyway, since it has its text.
    pub async fn keep(&self, request: &Request) {
        let Some(hash) = request
            .data
            .get(&std::any::TypeId::of::<Hashed>())
            .and_then(|data| data.downcast_ref::<Hashed>())
        else {
            return;
        };
        if let Err(e) = self.store(&hash.0, &request.query).await {
            tracing::warn!(error = %e, "a persisted query was not stored");
        }
    }

    async fn store(&self, hash: &str, query: &str) -> Result<(), DbErr> {
        let now = self.clock.now();
        let known = match self.lock().get_mut(hash) {
            Some(cached) if now - cached.touched_at < TOUCH_EVERY => return Ok(()),
            Some(cached) => {
                cached.touched_at = now;
                true
            }
            None => false,
        };
        if known {
            let touched = persisted_query::Entity::update_many()
                .col_expr(persisted_query::Column::LastUsedAt, Expr::value(now))
                .filter(persisted_query::Column::Hash.eq(hash))
                .exec(&self.db)
                .await?;
            if touched.rows_affected > 0 {
                return Ok(());
            }
            // Evicted since this process read it: stored again below.
        }
        // Another replica may store the same text at the same time: the
        // second insert only refreshes `last_used_at`.
        let row = persisted_query::ActiveModel {
            hash: Set(hash.to_owned()),
            query: Set(query.to_owned()),
            created_at: Set(now),
            last_used_at: Set(now),
        };
        persisted_query::Entity::insert(row)
            .on_conflict(
                OnConflict::column(persisted_query::Column::Hash)
                    .update_column(persisted_query::Column::LastUsedAt)
                    .to_owned(),
            )
            .exec_without_returning(&self.db)
            .await?;
        self.evict_beyond_max(hash).await?;
        let query = query.to_owned();
        self.lock().put(
            hash.to_owned(),
            Cached {
                query,
                touched_at: now,
            },
        );
        Ok(())
    }

    /// Deletes the least recently used texts beyond the maximum, never
    /// `kept` (the text just stored, which may share its `last_used_at`
    /// with others).
    async fn evict_beyond_max(&self, kept: &str) -> Result<(), DbErr> {
        let stored = persisted_query::Entity::find().count(&self.db).await?;
        let excess = stored.saturating_sub(self.max_entries);
        if excess == 0 {
            return Ok(());
        }
        let oldest = Query::select()
            .column(persisted_query::Column::Hash)
            .from(persisted_query::Entity)
            .and_where(persisted_query::Column::Hash.ne(kept))
            .order_by(persisted_query::Column::LastUsedAt, Order::Asc)
            .order_by(persisted_query::Column::Hash, Order::Asc)
            .limit(excess.min(EVICT_AT_ONCE))
            .to_owned();
        persisted_query::Entity::delete_many()
            .filter(persisted_query::Column::Hash.in_subquery(oldest))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// The text of `hash`, from this process or else from the table.
    async fn lookup(&self, hash: &str) -> Result<Option<String>, DbErr> {
        if let Some(cached) = self.lock().get(hash) {
            return Ok(Some(cached.query.clone()));
        }
        let Some(row) = persisted_query::Entity::find_by_id(hash)
            .one(&self.db)
            .await?
        else {
            return Ok(None);
        };
        let cached = Cached {
            query: row.query.clone(),
            touched_at: row.last_used_at,
        };
        self.lock().put(row.hash, cached);
        Ok(Some(row.query))
    }

    fn lock(&self) -> MutexGuard<'_, LruCache<String, Cached>> {
        // The cache holds no invariant a panicking holder could break.
        self.cached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The lower-case hash of a `persistedQuery` extension of version 1.
fn read_hash(extension: &Value) -> Result<String, ApiError> {
    let invalid =
        |what: &str| ApiError::InvalidParameter(format!("extensions.persistedQuery {what}"));
    let Value::Object(fields) = extension else {
        return Err(invalid("must be an object with version and sha256Hash"));
    };
    let version = match fields.get("version") {
        Some(Value::Number(n)) => n.as_i64(),
        _ => None,
    };
    if version != Some(VERSION) {
        return Err(invalid(
            "has a version this server does not support; send version 1",
        ));
    }
    match fields.get("sha256Hash") {
        Some(Value::String(hash))
            if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            Ok(hash.to_ascii_lowercase())
        }
        _ => Err(invalid("needs sha256Hash, the 64 hex digits of a SHA-256")),
    }
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A refused persisted query, as a response that never ran.
fn refusal(error: &ApiError) -> Response {
    Response::from_errors(vec![server_error(error)])
}

/// The answer to an unknown hash, in the words Apollo's clients look for
/// (older ones read only the message). Never cached: the same request
/// succeeds once the client has sent the text.
fn not_found() -> Response {
    let mut error = ServerError::new("PersistedQueryNotFound", None);
    error
        .extensions
        .get_or_insert_with(Default::default)
        .set("code", "PERSISTED_QUERY_NOT_FOUND");
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache, must-revalidate"),
    );
    Response::from_errors(vec![error]).http_headers(headers)
}
