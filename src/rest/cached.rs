//! REST v1 answers from the response cache (`crate::cache`): a GET is
//! looked up by its path and query, and for the caller's own routes
//! (`/me/...`) by its account too. A hit is admitted, counted and
//! revalidated like any answer (the middleware around this one does that)
//! and sends no statement. A `200 OK` is kept unless it charged the daily
//! quota (it carries the quota headers): a metered answer is charged by
//! running it. It is kept with its tag, so a hit is not hashed again.
//!
//! The catalog's handlers never see the [`Caller`]: an answer for everyone
//! cannot depend on who asked, or it would be served to the wrong one. A
//! handler there that asks for it fails on every request, not silently.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use headers::{ETag, HeaderMapExt};

use crate::accounts::Caller;
use crate::cache::packed::Packed;
use crate::cache::{self, Answer, Sharing};
use crate::http::{ApiError, conditional};
use crate::state::AppState;

/// Whose answers a group of routes gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The same answer to every caller (the catalog).
    Everyone,
    /// An answer of the caller's own account.
    Caller,
}

/// Middleware inside the key check (which hands on the [`Caller`]) for a
/// group of routes giving answers to `audience`.
pub async fn answer(
    State((state, audience)): State<(AppState, Audience)>,
    mut request: Request,
    next: Next,
) -> Response {
    // Whoever asked pays for what is kept (its share of the cache).
    let payer = request
        .extensions()
        .get::<Caller>()
        .map(|caller| caller.account_id);
    let sharing = match audience {
        Audience::Everyone => {
            request.extensions_mut().remove::<Caller>();
            Sharing::Everyone
        }
        Audience::Caller => match payer {
            Some(account) => Sharing::Account(account),
            None => return next.run(request).await,
        },
    };
    let (Some(payer), &Method::GET, true) = (payer, request.method(), state.cache.enabled()) else {
        return next.run(request).await;
    };
    let path = request.uri().path_and_query().map_or("", |p| p.as_str());
    let key = cache::Request::of(&[b"rest", path.as_bytes()]);
    if let Some(answer) = state.cache.get(key, sharing)
        && let Answer::Rest {
            status,
            headers,
            body,
        } = &*answer
    {
        // Revalidated before its body is built (inflated, for a client
        // without gzip): the 304 passes the outer revalidation as it is.
        if let Some(fresh) = not_modified_if_held(request.headers(), *status, headers) {
            return fresh;
        }
        let mut kept = headers.clone();
        let body = body.body(b"", request.headers(), &mut kept);
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = *status;
        *response.headers_mut() = kept;
        return response;
    }
    state.cache.missed();
    // Taken before it runs: a write committed while it runs retires it.
    let Some(stamp) = state.cache.stamp() else {
        return next.run(request).await;
    };
    let response = next.run(request).await;
    let metered = response.headers().contains_key("x-quota-limit");
    if !response.status().is_success() || metered {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Within the size limit already (`http::sized`, inside this).
    let limit = usize::try_from(state.settings.sizes.max_response_bytes()).unwrap_or(usize::MAX);
    let Ok(body) = to_bytes(body, limit).await else {
        return ApiError::internal("an answer's body could not be read to keep it").into_response();
    };
    // Tagged here once, not on every hit (`http::conditional::revalidate`
    // keeps a tag the answer carries).
    if let Some(tag) = conditional::tag(&body) {
        parts.headers.typed_insert(tag);
    }
    let kept = Answer::Rest {
        status: parts.status,
        headers: parts.headers.clone(),
        body: Packed::new(body.clone()),
    };
    state.cache.put((key, sharing), stamp, payer, kept);
    Response::from_parts(parts, Body::from(body))
}

/// `304 Not Modified` when the client holds the kept answer of `status`
/// and `kept` headers already, marked as the outer revalidation would.
fn not_modified_if_held(
    request: &HeaderMap,
    status: StatusCode,
    kept: &HeaderMap,
) -> Option<Response> {
    let tag = kept
        .typed_get::<ETag>()
        .filter(|_| status == StatusCode::OK)?;
    conditional::Condition::of(request).not_modified(kept, &tag)
}
