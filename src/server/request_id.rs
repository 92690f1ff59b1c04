//! Which `X-Request-Id` a client may choose. The id is echoed in the
//! response and written into every log line of the request, so a client's
//! id is kept only when it is short and made of characters that cannot
//! end a log field or start another one: ASCII letters, digits and `-_.:`
//! (UUIDs, ULIDs, W3C trace ids and most tracing systems' ids fit). Any
//! other id (too long, or with spaces, quotes, `=`, control characters
//! such as ANSI escapes, or non-ASCII bytes) is dropped here, and the
//! layer after this one gives the request a new UUID in its place.

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Request};

/// The request id header, read and echoed.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Whether a client's id may be kept: at most `max` characters, each an
/// ASCII letter or digit or one of `-_.:`.
pub fn acceptable(id: &HeaderValue, max: usize) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= max
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// Removes every client id that is not [`acceptable`] (and all of them
/// when several are sent: one request has one id), so that a new one is
/// made for the request.
pub fn drop_unacceptable(request: &mut Request<Body>, max: usize) {
    let headers = request.headers_mut();
    let mut sent = headers.get_all(&REQUEST_ID).iter();
    let keep = match (sent.next(), sent.next()) {
        (Some(id), None) => acceptable(id, max),
        _ => false,
    };
    if !keep {
        headers.remove(&REQUEST_ID);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(id: &[u8]) -> bool {
        acceptable(&HeaderValue::from_bytes(id).unwrap(), 128)
    }

    #[test]
    fn ids_of_safe_characters_up_to_the_bound_are_kept() {
        assert!(kept(b"client-trace-42"));
        assert!(kept(
            b"0af7651916cd43dd8448eb211c80319c:b7ad6b7169203331.01_x"
        ));
        assert!(kept("a".repeat(128).as_bytes()));
    }

    /// (Control characters but the tab, ANSI's escape among them, are no
    /// header value at all: hyper refuses the request.)
    #[test]
    fn long_ids_and_ids_that_could_shape_a_log_line_are_not() {
        assert!(!kept("a".repeat(129).as_bytes()));
        for id in [
            &b"a b"[..],
            b"a\"b",
            b"a=b",
            b"a\tb",
            "\u{0438}\u{0434}".as_bytes(),
            b"a,b",
            b"a;b",
            b"",
        ] {
            assert!(!kept(id), "{id:?}");
        }
    }
}
