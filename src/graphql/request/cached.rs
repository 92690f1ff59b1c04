//! GraphQL answers from the response cache (`crate::cache`).
//!
//! A single query over HTTP (POST, GET, a persisted query) is looked up by
//! its document (or persisted hash), operation, variables and the media type
//! it is answered in: first as an answer for everyone, then as one of the
//! caller's own. A hit is still admitted and counted against the rate limit
//! like any request, and answered with `extensions.cost.cached: true`; it
//! sends no statement.
//!
//! An answer is kept when it ran without errors and read no metered rows
//! (those are charged by running them, so their quota holds as the spec
//! says), for everyone unless a resolver reached the caller (then for the
//! caller's account only), and never when it read where the caller stands
//! against its limits (`rateLimit`, `quota`), which every request changes.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use uuid::Uuid;

use super::persisted::EXTENSION;
use super::response::{self, api_error, media_type};
use crate::cache::packed::Packed;
use crate::cache::versions::Stamp;
use crate::cache::{self, Answer, ResponseCache, Sharing};
use crate::graphql::cost;
use crate::graphql::request::document_limits::RequestLimits;
use crate::http::ApiError;
use crate::http::conditional::{mark, not_modified_if_fresh};
use crate::limits::RateDecision;

/// What decides the answer to `request`, answered in the media type
/// `headers` accept; `None` if its variables do not serialize (then it is
/// neither looked up nor kept).
pub fn request_key(
    request: &async_graphql::Request,
    headers: &HeaderMap,
) -> Option<cache::Request> {
    let variables = serde_json::to_vec(&request.variables).ok()?;
    let persisted = serde_json::to_vec(&request.extensions.get(EXTENSION)).ok()?;
    Some(cache::Request::of(&[
        b"graphql",
        media_type(headers).as_bytes(),
        request.query.as_bytes(),
        request
            .operation_name
            .as_deref()
            .unwrap_or_default()
            .as_bytes(),
        &variables,
        &persisted,
    ]))
}

/// Keeps `response`, worked out from the data at `stamp` for a request
/// of `payer`'s, for `sharing`: its `data` as JSON, its cost analysis and
/// its tag.
pub fn keep(
    cache: &ResponseCache,
    (key, sharing): (cache::Request, Sharing),
    (stamp, payer): (Stamp, Uuid),
    headers: &HeaderMap,
    response: &async_graphql::Response,
) {
    if !response.errors.is_empty() {
        return;
    }
    let Ok(data) = serde_json::value::to_raw_value(&response.data) else {
        return;
    };
    let answer = Answer::Graphql {
        analyzer: response
            .extensions
            .get("analyzer")
            .cloned()
            .unwrap_or_default(),
        // From the JSON just written: the value is not walked again.
        tag: response::tag_of_data(headers, &*data),
        head: Packed::new([HEAD.as_bytes(), data.get().as_bytes()].concat().into()),
    };
    cache.put((key, sharing), stamp, payer, answer);
}

/// The response to a request answered by `answer`, a kept GraphQL answer,
/// for a caller at `rate`; a GET (`conditional`) is tagged, and answered
/// 304 when the client holds it already.
pub fn respond(
    headers: &HeaderMap,
    answer: &Answer,
    (limits, rate): (&RequestLimits, &RateDecision),
    conditional: bool,
) -> Response {
    let Answer::Graphql {
        head,
        analyzer,
        tag,
    } = answer
    else {
        // Keys of REST answers never match a GraphQL request's.
        return api_error(headers, &ApiError::Internal);
    };
    let tag = tag.as_ref().filter(|_| conditional);
    if let Some(fresh) = tag.and_then(|tag| not_modified_if_fresh(headers, tag)) {
        return fresh;
    }
    let mut response = async_graphql::Response::default();
    let extensions = &mut response.extensions;
    extensions.insert("analyzer".to_owned(), analyzer.clone());
    cost::report_kept(&mut response, limits, rate);
    // The kept head, `data` as it was written for the first answer, then
    // this request's `extensions`, as `response::respond` writes an
    // answer without errors.
    let Ok(extensions) = serde_json::to_vec(&response.extensions) else {
        return api_error(headers, &ApiError::Internal);
    };
    let tail = [TAIL_BEGINS, &extensions, b"}"].concat();
    let mut http = Response::new(Body::empty());
    let body = head.body(&tail, headers, http.headers_mut());
    *http.body_mut() = Body::from(body);
    let media = HeaderValue::from_static(media_type(headers));
    http.headers_mut().insert(header::CONTENT_TYPE, media);
    if let Some(tag) = tag {
        mark(http.headers_mut(), tag.clone());
    }
    http
}

/// How a kept answer's JSON begins, before its `data`, and how its
/// `extensions` begin, after.
const HEAD: &str = r#"{"data":"#;
const TAIL_BEGINS: &[u8] = br#","extensions":"#;
