//! Conditional GETs (RFC 9110 section 13, as GitHub's API answers them):
//! a successful GET carries a weak `ETag` of what it answered, and the same
//! request with a matching `If-None-Match` is answered `304 Not Modified`
//! with no body. A 304 costs the caller nothing: [`access::require_key`]
//! gives its request back to the rate limit, and the metered endpoint
//! decides before it charges the quota. The answer is still worked out in
//! full to be compared, within the limits and deadlines of any request.
//!
//! [`access::require_key`]: super::access::require_key

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use headers::{ETag, HeaderMapExt, IfNoneMatch};
use sha2::{Digest, Sha256};

use super::ApiError;

/// `Cache-Control` of answers that may change at any moment: the client's
/// own cache may keep them but must revalidate them first. `private`: they
/// belong to the caller's key, so no shared cache may keep them.
pub const REVALIDATE: HeaderValue = HeaderValue::from_static("private, no-cache");

/// `Cache-Control` of answers a client may reuse for `secs` seconds.
pub fn max_age(secs: u64) -> HeaderValue {
    match secs {
        0 => REVALIDATE,
        secs => HeaderValue::from_str(&format!("private, max-age={secs}")).unwrap_or(REVALIDATE),
    }
}

/// The weak tag of a representation: 128 bits of its SHA-256. Weak, since
/// the same tag stands for the body however it is compressed on the way.
pub fn tag(representation: &[u8]) -> Option<ETag> {
    let digest = Sha256::digest(representation);
    format!("W/\"{}\"", hex::encode(&digest[..16])).parse().ok()
}

/// Whether the request's `If-None-Match` names `tag` (or is `*`): the
/// client holds this very answer already.
pub fn is_fresh(request: &HeaderMap, tag: &ETag) -> bool {
    request
        .typed_get::<IfNoneMatch>()
        .is_some_and(|asked| !asked.precondition_passes(tag))
}

/// Adds the tag, the `Cache-Control` (unless the handler chose one) and
/// `Vary: Authorization` to a successful answer.
pub fn mark(headers: &mut HeaderMap, tag: ETag) {
    headers.typed_insert(tag);
    headers.entry(header::CACHE_CONTROL).or_insert(REVALIDATE);
    headers.append(header::VARY, HeaderValue::from_static("authorization"));
}

/// `304 Not Modified` for an answer marked by [`mark`]: no body, and the
/// headers a 200 would have had that say how to keep it (RFC 9110 15.4.5).
pub fn not_modified(marked: &HeaderMap) -> Response {
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    for name in [header::ETAG, header::CACHE_CONTROL, header::VARY] {
        for value in marked.get_all(&name) {
            response.headers_mut().append(&name, value.clone());
        }
    }
    response
}

/// `304 Not Modified` when the request names `tag` (the answer it would
/// get, with the default `Cache-Control`): for handlers that must decide
/// before they finish, such as before they charge the quota.
pub fn not_modified_if_fresh(request: &HeaderMap, tag: &ETag) -> Option<Response> {
    is_fresh(request, tag).then(|| {
        let mut marked = HeaderMap::new();
        mark(&mut marked, tag.clone());
        not_modified(&marked)
    })
}

/// Middleware for GET routes: tags every 200 (hashing its body unless the
/// handler tagged it) and answers 304 when the client holds it already.
pub async fn revalidate(request: Request, next: Next) -> Response {
    // Only the header it compares: the rest of the request is not needed.
    let mut asked = HeaderMap::new();
    if let Some(value) = request.headers().get(header::IF_NONE_MATCH) {
        asked.insert(header::IF_NONE_MATCH, value.clone());
    }
    let response = next.run(request).await;
    if response.status() != StatusCode::OK {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let (tag, body) = match parts.headers.typed_get::<ETag>() {
        Some(tag) => (Some(tag), body),
        None => match to_bytes(body, usize::MAX).await {
            Ok(bytes) => (tag(&bytes), Body::from(bytes)),
            Err(e) => return ApiError::internal(e).into_response(),
        },
    };
    let Some(tag) = tag else {
        return Response::from_parts(parts, body);
    };
    let fresh = is_fresh(&asked, &tag);
    mark(&mut parts.headers, tag);
    match fresh {
        true => not_modified(&parts.headers),
        false => Response::from_parts(parts, body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(if_none_match: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_str(if_none_match).expect("a header value");
        headers.insert(header::IF_NONE_MATCH, value);
        headers
    }

    fn text_of(tag: ETag) -> String {
        let mut headers = HeaderMap::new();
        headers.typed_insert(tag);
        headers[header::ETAG].to_str().expect("text").to_owned()
    }

    #[test]
    fn a_tag_matches_itself_strong_or_weak_in_a_list_or_as_a_star() {
        let tag = tag(b"{\"data\":[]}").expect("a tag");
        let text = text_of(tag.clone());
        let strong = text.trim_start_matches("W/").to_owned();
        assert!(
            text.starts_with("W/\"") && text.len() == 2 + 2 + 32,
            "{text}"
        );
        for matching in [text.clone(), strong, format!("\"x\", {text}"), "*".into()] {
            assert!(is_fresh(&asking(&matching), &tag), "{matching}");
        }
        let other = text_of(super::tag(b"{\"data\":[1]}").expect("a tag"));
        for stale in [other, "\"\"".to_owned(), "garbage".to_owned()] {
            assert!(!is_fresh(&asking(&stale), &tag), "{stale}");
        }
        assert!(!is_fresh(&HeaderMap::new(), &tag));
    }
}
