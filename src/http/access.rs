//! Admission of a request: a valid, unexpired API key with the scope the
//! route asks for, then the per-minute database-time budget and rate limit;
//! and where a caller stands against its limits.

use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::DateTime;
use sea_orm::ConnectionTrait;

use super::ApiError;
use super::body_clock::BodyClock;
use crate::accounts::{self, Caller, Scope};
use crate::limits::{RateDecision, quota};
use crate::state::AppState;
use crate::views::Allowance;

/// An admitted caller and where it stands against the rate limit.
#[derive(Debug, Clone)]
pub struct Admission {
    pub caller: Caller,
    pub rate: RateDecision,
}

/// Why a request was not admitted, with its rate headers when it counted.
pub type Refusal = (ApiError, Option<RateDecision>);

/// The key of an `Authorization: Bearer <key>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, key) = value.trim().split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty()).then_some(key)
}

/// Authenticates the key, counts the request against the rate limit, and
/// checks the key has `scope`. A refused request carries its rate headers
/// in the error path too, once it counted.
pub async fn admit(
    state: &AppState,
    headers: &HeaderMap,
    scope: Scope,
) -> Result<Admission, Refusal> {
    admit_many(state, headers, scope, 1).await
}

/// As [`admit`], counting `units` requests (the operations of a GraphQL
/// batch): all of them when they fit in what is left of the minute, else
/// none, and the request is refused.
pub async fn admit_many(
    state: &AppState,
    headers: &HeaderMap,
    scope: Scope,
    units: u32,
) -> Result<Admission, Refusal> {
    let caller = authenticate(state, headers).await.map_err(|e| (e, None))?;
    // A valid key is its account's request, whatever it may do: counted
    // first, so a refusal for scope carries the rate headers like any answer.
    let rate = count_many(state, &caller, units).await?;
    if !caller.scopes.allows(scope) {
        return Err((ApiError::InsufficientScope { needed: scope }, Some(rate)));
    }
    Ok(Admission { caller, rate })
}

/// The caller whose valid, unexpired key the request carries, counting
/// nothing: from the keys admitted lately when it is one, else from the
/// database. Whatever its scopes.
pub async fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let key = bearer(headers).ok_or(ApiError::Unauthorized)?;
    let (hash, now) = (accounts::hash_key(key), state.clock.now());
    let caller = match state.known_keys.caller(&hash, now) {
        Some(caller) => caller,
        None => {
            let caller = accounts::authenticate_hashed(&state.db, &hash, now)
                .await
                .map_err(ApiError::from)?
                .ok_or(ApiError::Unauthorized)?;
            state.known_keys.remember(hash, caller.clone(), now);
            caller
        }
    };
    // Checked on every use: a remembered key expires on time too.
    match caller.expires_at {
        Some(at) if caller.expired(now) => Err(ApiError::KeyExpired { at }),
        _ => Ok(caller),
    }
}

/// Where `caller` stands against the per-minute rate limit, counting nothing.
pub async fn rate_standing(state: &AppState, caller: &Caller) -> RateDecision {
    let now = state.clock.now();
    state.rate_limiter.peek(caller.account_id, now).await
}

/// Where `caller` stands against the daily quota, charging nothing; read
/// over `db` (the pool, or a GraphQL request's share of it).
pub async fn quota_standing(
    state: &AppState,
    db: &impl ConnectionTrait,
    caller: &Caller,
) -> Result<Allowance, ApiError> {
    let now = state.clock.now();
    let default = state.settings.limits.daily_quota;
    let charge = quota::standing(db, caller.account_id, default, now).await?;
    Ok(Allowance {
        limit: charge.limit,
        remaining: charge.remaining,
        reset_at: quota::resets_at(now),
    })
}

/// A rate decision as the limit it reports on.
pub fn allowance(rate: &RateDecision) -> Allowance {
    Allowance {
        limit: i64::from(rate.limit),
        remaining: i64::from(rate.remaining),
        reset_at: DateTime::from_timestamp(rate.reset_at, 0).unwrap_or_default(),
    }
}

/// Counts one request of an admitted caller against the per-minute rate
/// limit (an HTTP request, or an operation on a WebSocket it opened).
pub async fn count(state: &AppState, caller: &Caller) -> Result<RateDecision, Refusal> {
    count_many(state, caller, 1).await
}

/// Counts `units` requests of an admitted caller, all or none; an account
/// past its database time is refused first, counting nothing.
async fn count_many(
    state: &AppState,
    caller: &Caller,
    units: u32,
) -> Result<RateDecision, Refusal> {
    if let Err(over) = state.db_time.admit(caller.account_id, state.clock.now()) {
        crate::metrics::refused(crate::metrics::Limit::DbTimePerMinute);
        let error = ApiError::DbTimeExceeded {
            limit_ms: over.limit_ms,
            retry_after: over.retry_after,
        };
        return Err((error, None));
    }
    let rate = state
        .rate_limiter
        .check_many(caller.account_id, state.clock.now(), units)
        .await;
    if !rate.allowed {
        crate::metrics::refused(crate::metrics::Limit::RatePerMinute);
        let retry_after = rate.retry_after;
        return Err((ApiError::RateLimited { retry_after }, Some(rate)));
    }
    Ok(rate)
}

/// The rate-limit headers of every keyed answer, in the order
/// [`rate_headers`] fills them.
pub const RATE_HEADERS: [&str; 3] = [
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
];

/// `X-RateLimit-Limit`, `-Remaining` and `-Reset` (Unix seconds when the window ends).
pub fn rate_headers(rate: &RateDecision, headers: &mut HeaderMap) {
    let values = [
        i64::from(rate.limit),
        i64::from(rate.remaining),
        rate.reset_at,
    ];
    for (name, value) in RATE_HEADERS.into_iter().zip(values) {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
}

/// Middleware for keyed routes, each of which names the scope it needs
/// (`from_fn_with_state((state, scope), require_key)`): admits the caller,
/// hands it to the handler as an extension, and adds the rate-limit headers
/// to whatever is answered. A request answered `304 Not Modified` counts
/// like any other: its answer was worked out to be compared
/// (`http::conditional`).
pub async fn require_key(
    State((state, scope)): State<(AppState, Scope)>,
    mut request: Request,
    next: Next,
) -> Response {
    match admit(&state, request.headers(), scope).await {
        Ok(admission) => {
            let account = admission.caller.account_id;
            request.extensions_mut().insert(admission.caller);
            // A REST handler runs its statements one after another: its time
            // is the database's, near enough, once its body has arrived.
            let (request, body) = BodyClock::wrap(request);
            let started = Instant::now();
            let mut response = next.run(request).await;
            let from = body.ended().map_or(started, |ended| ended.max(started));
            // A request answered 503 spent its time waiting for a database
            // that could not serve it (a lock held elsewhere, no connection):
            // not the account's work, and no reason to refuse its next ones.
            if response.status() != StatusCode::SERVICE_UNAVAILABLE {
                state
                    .db_time
                    .charge(account, state.clock.now(), from.elapsed());
            }
            rate_headers(&admission.rate, response.headers_mut());
            response
        }
        Err((error, rate)) => {
            let mut response = error.into_response();
            if let Some(rate) = rate {
                rate_headers(&rate, response.headers_mut());
            }
            response
        }
    }
}
