//! Conditional GETs (RFC 9110 section 13, as GitHub's API answers them):
//! a successful GET carries a weak `ETag` of what it answered, and the same
//! request with a matching `If-None-Match` is answered `304 Not Modified`
//! with no body.
//!
//! A 304 saves the transfer, not the work: Vitrina keeps no tags, so every
//! tag is the hash of an answer worked out for the request that compares
//! it. A 304 therefore counts against the rate limit like any request (a
//! free one would let a client that sends `If-None-Match: *` make the
//! server work without limit). Only rows it does not send are not charged
//! to the daily quota: the metered endpoint compares before it charges.
//! Should an answer's tag ever be stored, so that comparing it costs
//! nothing, its 304 could be free; never one of `*`, which matches whatever
//! is worked out.
//!
//! `If-None-Match` is read as RFC 9110 section 5.3 has it: every such
//! header of the request, and each comma-separated member, form one list.
//! `*` matches any current representation, as the RFC says for GET: every
//! 200 answer is 304 to it. A list longer than [`MAX_TAGS`] tags or
//! [`MAX_BYTES`] bytes, one that is not a list of entity-tags (or `*` alone),
//! or one that is not visible ASCII, is not read at all: the request is
//! answered as if it had none (a full 200), which is always a correct answer
//! to a conditional GET.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use headers::{ETag, HeaderMapExt, IfNoneMatch};
use sha2::{Digest, Sha256};

use super::ApiError;

/// Most entity-tags an `If-None-Match` list may hold to be read. A browser
/// or HTTP cache sends the one tag it holds; a shared cache a few.
pub const MAX_TAGS: usize = 64;

/// Most bytes the `If-None-Match` headers of one request may hold together
/// to be read: [`MAX_TAGS`] of Vitrina's tags (36 bytes) and their commas
/// fit three times over.
pub const MAX_BYTES: usize = 8 * 1024;

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

/// What the `If-None-Match` headers of a request ask, read as one list.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// No header, or one not read (see the module comment).
    Unconditional,
    /// `*`: any current representation.
    Any,
    /// The entity-tags the client holds.
    Tags(Vec<ETag>),
}

impl Condition {
    /// Reads every `If-None-Match` header of `headers` as one list.
    pub fn of(headers: &HeaderMap) -> Condition {
        let values = headers.get_all(header::IF_NONE_MATCH);
        let bytes: usize = values.iter().map(|v| v.len()).sum();
        if bytes == 0 || bytes > MAX_BYTES {
            return Condition::Unconditional;
        }
        let mut members = Vec::new();
        for value in values {
            let Ok(text) = value.to_str() else {
                return Condition::Unconditional;
            };
            match list_members(text) {
                Some(found) => members.extend(found),
                None => return Condition::Unconditional,
            }
        }
        match members.as_slice() {
            ["*"] => Condition::Any,
            _ if members.len() > MAX_TAGS || members.contains(&"*") => Condition::Unconditional,
            _ => members
                .iter()
                .map(|member| member.parse::<ETag>().ok())
                .collect::<Option<Vec<_>>>()
                .map_or(Condition::Unconditional, Condition::Tags),
        }
    }

    /// `304 Not Modified` when the client holds the answer tagged `tag`
    /// already, with the headers of that answer's `headers` once
    /// [`mark`]ed.
    pub fn not_modified(&self, headers: &HeaderMap, tag: &ETag) -> Option<Response> {
        self.holds(tag).then(|| {
            let mut marked = headers.clone();
            mark(&mut marked, tag.clone());
            not_modified(&marked)
        })
    }

    /// Whether the client holds the answer tagged `tag` already: `*`, or
    /// a tag of the list equal to it by the weak comparison (RFC 9110
    /// 8.8.3.2), which `If-None-Match` uses.
    pub fn holds(&self, tag: &ETag) -> bool {
        match self {
            Condition::Unconditional => false,
            Condition::Any => true,
            Condition::Tags(tags) => tags
                .iter()
                .any(|held| !IfNoneMatch::from(held.clone()).precondition_passes(tag)),
        }
    }
}

/// The members of one comma-separated `If-None-Match` value, each `*` or
/// an entity-tag (`W/"..."` or `"..."`, whose quoted part may hold commas);
/// `None` when the value is not such a list. Empty members are skipped, as
/// RFC 9110 section 5.6.1 asks of a recipient.
fn list_members(value: &str) -> Option<Vec<&str>> {
    let mut members = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return Some(members);
        }
        let quoted = rest.strip_prefix("W/").unwrap_or(rest);
        let end = match quoted.strip_prefix('"') {
            // The closing quote, and the weak prefix before the opening one.
            Some(tail) => tail.find('"')? + 2 + (rest.len() - quoted.len()),
            None if rest.starts_with('*') => 1,
            None => return None,
        };
        members.push(&rest[..end]);
        rest = rest[end..].trim_start_matches([' ', '\t']);
        if !(rest.is_empty() || rest.starts_with(',')) {
            return None;
        }
    }
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

/// `304 Not Modified` when the request's `If-None-Match` holds `tag` (the
/// answer it would get, with the default `Cache-Control`): for handlers
/// that must decide before they finish, such as before they charge the
/// quota.
pub fn not_modified_if_fresh(request: &HeaderMap, tag: &ETag) -> Option<Response> {
    Condition::of(request).not_modified(&HeaderMap::new(), tag)
}

/// Middleware for GET routes: tags every 200 (hashing its body unless the
/// handler tagged it) and answers 304 when the client holds it already.
pub async fn revalidate(request: Request, next: Next) -> Response {
    // Read before the request moves on: the rest of it is not needed.
    let condition = Condition::of(request.headers());
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
    if let Some(fresh) = condition.not_modified(&parts.headers, &tag) {
        return fresh;
    }
    mark(&mut parts.headers, tag);
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(values: &[&str]) -> Condition {
        let mut headers = HeaderMap::new();
        for value in values {
            let value = HeaderValue::from_str(value).expect("a header value");
            headers.append(header::IF_NONE_MATCH, value);
        }
        Condition::of(&headers)
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
        for matching in [
            text.clone(),
            strong,
            format!("\"x\", {text}"),
            format!("\"a,b\",{text} ,"),
            "*".into(),
        ] {
            assert!(asking(&[&matching]).holds(&tag), "{matching}");
        }
        let other = text_of(super::tag(b"{\"data\":[1]}").expect("a tag"));
        for stale in [other, "\"\"".to_owned(), "garbage".to_owned()] {
            assert!(!asking(&[&stale]).holds(&tag), "{stale}");
        }
        assert!(!Condition::of(&HeaderMap::new()).holds(&tag));
    }

    #[test]
    fn several_headers_are_one_list() {
        let tag = tag(b"{}").expect("a tag");
        let text = text_of(tag.clone());
        assert!(asking(&["\"a\"", &format!("\"b\", {text}")]).holds(&tag));
        assert!(!asking(&["\"a\"", "\"b\""]).holds(&tag));
        // `*` is a list of its own: beside tags it is no list at all.
        assert_eq!(asking(&["*", &text]), Condition::Unconditional);
    }

    #[test]
    fn a_list_past_its_bounds_or_malformed_is_not_read() {
        let tag = tag(b"{}").expect("a tag");
        let text = text_of(tag.clone());
        let mut many = vec!["\"x\""; MAX_TAGS - 1];
        many.push(&text);
        assert!(asking(&[&many.join(",")]).holds(&tag), "at the bound");
        many.insert(0, "\"y\"");
        assert_eq!(asking(&[&many.join(",")]), Condition::Unconditional);
        let long = format!("\"{}\", {text}", "x".repeat(MAX_BYTES));
        assert_eq!(asking(&[&long]), Condition::Unconditional);
        for malformed in [
            format!("{text} garbage"),
            format!("{text}, \"unterminated"),
            format!("w/\"{}\"", "0".repeat(32)),
            "**".to_owned(),
        ] {
            assert_eq!(
                asking(&[&malformed]),
                Condition::Unconditional,
                "{malformed}"
            );
        }
    }
}
