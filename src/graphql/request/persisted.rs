//! Automatic persisted queries, Apollo's protocol (Apollo Client, urql and
//! Relay speak it): instead of a query's text a client may send its hex
//! SHA-256 in `extensions.persistedQuery` (`{"version": 1, "sha256Hash":
//! "..."}`), over POST or a cacheable `GET /graphql?extensions=...`. A hash
//! the server does not know is answered `PERSISTED_QUERY_NOT_FOUND`, and
//! the client sends the text with its hash, which is checked and kept.
//!
//! The texts live in the `persisted_queries` table, shared by every replica,
//! and each account that registers or uses one owns it
//! (`persisted_query_owners`, with its own last use). Each account has a
//! share, `--graphql-persisted-queries-per-account`: past it, its own least
//! recently used are evicted, never another account's. The whole store
//! keeps at most `--graphql-persisted-queries-max` texts: past it, the
//! least recently used of the account that owns the most are evicted, so an
//! account within its fair part of the store is never evicted by another.
//! A text stays while any account owns it. Any account's text runs for
//! every account (a text holds no data; a hash reveals only that someone
//! sent that exact text), and using one makes it the user's own too.
//!
//! Each process keeps the latest texts in memory in front of the table (a
//! hash names one text forever, so a copy is never stale). That copy is
//! only a cache: when another account's texts push one out, it is read
//! from the table on its next use, never lost.
//!
//! An answer served from the response cache (`cached.rs`) never reaches
//! the store, so it is no use of the text: a text only ever answered from
//! there may be evicted, and its client then sends it again, as the
//! protocol has it.
//!
//! Hashes are looked up when a request's cost is found (`Schemas::cost`), which
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
use entity::{persisted_query, persisted_query_owner as owner};
use lru::LruCache;
use sea_orm::sea_query::{Expr, OnConflict, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    ExprTrait, Order, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::response::server_error;
use crate::clock::SharedClock;
use crate::http::ApiError;
use crate::state::AppState;

/// The request extension that carries a persisted query.
pub(super) const EXTENSION: &str = "persistedQuery";
/// The one version of the protocol.
const VERSION: i64 = 1;
/// Texts kept in this process; the least recently used goes first. At most
/// `CACHED` times the document limit (8 MiB at the default 32 KiB).
const CACHED: NonZeroUsize = NonZeroUsize::new(256).unwrap();
/// Uses this process remembers writing (an account and a hash each), so a
/// hit writes nothing until its use is due again.
const TOUCHED: NonZeroUsize = NonZeroUsize::new(4096).unwrap();
/// An owner's `last_used_at` is refreshed at most this often, so answering
/// a hash does not write to the database each time.
const TOUCH_EVERY: TimeDelta = TimeDelta::minutes(10);
/// Most rows one statement evicts, when a share or the store holds more
/// than its maximum (after it was lowered): later registrations evict the
/// rest.
const EVICT_AT_ONCE: u64 = 100;

/// Whether a request names neither a query nor a persisted one: then it is
/// not a GraphQL request.
pub fn lacks_query(request: &Request) -> bool {
    request.query.is_empty() && !request.extensions.contains_key(EXTENSION)
}

/// The persisted queries of the service: the tables, and this process's
/// copies of its latest texts.
pub struct PersistedQueries {
    db: DatabaseConnection,
    clock: SharedClock,
    max_entries: u64,
    per_account: u64,
    max_bytes: usize,
    /// Texts by hash.
    cached: Mutex<LruCache<String, String>>,
    /// When this process last wrote an account's use of a hash.
    touched: Mutex<LruCache<(Uuid, String), DateTime<Utc>>>,
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
            per_account: config.persisted_queries_per_account,
            max_bytes: config.max_document_bytes,
            cached: Mutex::new(LruCache::new(CACHED)),
            touched: Mutex::new(LruCache::new(TOUCHED)),
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
            // Refused by the document limit when costed, and never kept:
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

    /// Keeps the text of a request of `account` about to run under its
    /// hash (if it came with one) as one of the account's, or notes that
    /// the account used it: at most once per [`TOUCH_EVERY`] in this
    /// process. A failure is logged; the request runs anyway, since it has
    /// its text.
    pub async fn keep(&self, request: &Request, account: Uuid) {
        let Some(hash) = request
            .data
            .get(&std::any::TypeId::of::<Hashed>())
            .and_then(|data| data.downcast_ref::<Hashed>())
        else {
            return;
        };
        if let Err(e) = self.store(account, &hash.0, &request.query).await {
            tracing::warn!(error = %e, "a persisted query was not stored");
        }
    }

    async fn store(&self, account: Uuid, hash: &str, query: &str) -> Result<(), DbErr> {
        let now = self.clock.now();
        let use_of = (account, hash.to_owned());
        if let Some(at) = self.touched().get(&use_of)
            && now - *at < TOUCH_EVERY
        {
            return Ok(());
        }
        let touched = owner::Entity::update_many()
            .col_expr(owner::Column::LastUsedAt, Expr::value(now))
            .filter(owner::Column::AccountId.eq(account))
            .filter(owner::Column::Hash.eq(hash))
            .exec(&self.db)
            .await?;
        if touched.rows_affected == 0 {
            // New to the account (or evicted since): the text, the
            // account's ownership and the evictions they cause, at once,
            // so no eviction elsewhere can take the text in between.
            let txn = self.db.begin().await?;
            self.own(&txn, account, hash, query, now).await?;
            txn.commit().await?;
        }
        self.touched().put(use_of, now);
        self.cached().put(hash.to_owned(), query.to_owned());
        Ok(())
    }

    /// Makes `hash` (with its `query`) one of `account`'s texts, then
    /// evicts past the account's share and past the store's maximum.
    async fn own(
        &self,
        db: &impl ConnectionTrait,
        account: Uuid,
        hash: &str,
        query: &str,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        // Another replica may store the same text at the same time: the
        // second insert leaves it as it is.
        let text = persisted_query::ActiveModel {
            hash: Set(hash.to_owned()),
            query: Set(query.to_owned()),
            created_at: Set(now),
        };
        persisted_query::Entity::insert(text)
            .on_conflict(
                OnConflict::column(persisted_query::Column::Hash)
                    .do_nothing()
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?;
        let owned = owner::ActiveModel {
            account_id: Set(account),
            hash: Set(hash.to_owned()),
            last_used_at: Set(now),
        };
        owner::Entity::insert(owned)
            .on_conflict(
                OnConflict::columns([owner::Column::AccountId, owner::Column::Hash])
                    .update_column(owner::Column::LastUsedAt)
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?;
        let owns = owner::Entity::find()
            .filter(owner::Column::AccountId.eq(account))
            .count(db)
            .await?;
        evict_least_used_of(db, account, hash, owns.saturating_sub(self.per_account)).await?;
        drop_unowned(db).await?;
        let stored = persisted_query::Entity::find().count(db).await?;
        let excess = stored.saturating_sub(self.max_entries);
        if excess > 0 {
            let largest = owner::Entity::find()
                .select_only()
                .column(owner::Column::AccountId)
                .group_by(owner::Column::AccountId)
                .order_by(Expr::col(owner::Column::Hash).count(), Order::Desc)
                .order_by(owner::Column::AccountId, Order::Asc)
                .into_tuple::<Uuid>()
                .one(db)
                .await?;
            if let Some(largest) = largest {
                evict_least_used_of(db, largest, hash, excess).await?;
                drop_unowned(db).await?;
            }
        }
        Ok(())
    }

    /// The text of `hash`, from this process or else from the table.
    async fn lookup(&self, hash: &str) -> Result<Option<String>, DbErr> {
        if let Some(query) = self.cached().get(hash) {
            return Ok(Some(query.clone()));
        }
        let Some(row) = persisted_query::Entity::find_by_id(hash)
            .one(&self.db)
            .await?
        else {
            return Ok(None);
        };
        self.cached().put(row.hash, row.query.clone());
        Ok(Some(row.query))
    }

    fn cached(&self) -> MutexGuard<'_, LruCache<String, String>> {
        // The cache holds no invariant a panicking holder could break.
        self.cached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn touched(&self) -> MutexGuard<'_, LruCache<(Uuid, String), DateTime<Utc>>> {
        // As `cached`.
        self.touched
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Deletes the `excess` least recently used texts of `account` (at most
/// [`EVICT_AT_ONCE`]), never `kept` (the text just stored, which may share
/// its `last_used_at` with others).
async fn evict_least_used_of(
    db: &impl ConnectionTrait,
    account: Uuid,
    kept: &str,
    excess: u64,
) -> Result<(), DbErr> {
    if excess == 0 {
        return Ok(());
    }
    let oldest = Query::select()
        .column(owner::Column::Hash)
        .from(owner::Entity)
        .and_where(owner::Column::AccountId.eq(account))
        .and_where(owner::Column::Hash.ne(kept))
        .order_by(owner::Column::LastUsedAt, Order::Asc)
        .order_by(owner::Column::Hash, Order::Asc)
        .limit(Ord::min(excess, EVICT_AT_ONCE))
        .to_owned();
    owner::Entity::delete_many()
        .filter(owner::Column::AccountId.eq(account))
        .filter(owner::Column::Hash.in_subquery(oldest))
        .exec(db)
        .await?;
    Ok(())
}

/// Deletes the texts no account owns any more.
async fn drop_unowned(db: &impl ConnectionTrait) -> Result<(), DbErr> {
    let owned = Query::select()
        .column(owner::Column::Hash)
        .from(owner::Entity)
        .to_owned();
    persisted_query::Entity::delete_many()
        .filter(persisted_query::Column::Hash.not_in_subquery(owned))
        .exec(db)
        .await?;
    Ok(())
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
