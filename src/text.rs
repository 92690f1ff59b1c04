//! Text normalization shared by what is stored and what is searched, so both
//! sides of every comparison are folded the same way on every backend.
//! [`SearchKeys`] derives from these everything a product is found by.

mod search_keys;

pub use search_keys::SearchKeys;

/// Case-folds for case-insensitive matching (Unicode-aware, so Cyrillic too).
pub fn fold(s: &str) -> String {
    s.to_lowercase()
}

/// Normalizes a product or storefront URL for storage and matching: drops the
/// query string and fragment, lower-cases scheme and host, and drops a
/// trailing `/` of the path. Input that is not an absolute URL is only trimmed.
pub fn normalize_url(raw: &str) -> String {
    let raw = raw.trim();
    let Ok(mut url) = url::Url::parse(raw) else {
        return raw.split(['?', '#']).next().unwrap_or_default().to_owned();
    };
    url.set_query(None);
    url.set_fragment(None);
    let mut out = url.to_string();
    // Query and fragment are gone, so the string ends with the path.
    if out.ends_with('/') {
        out.pop();
    }
    out
}

/// The normalized form of a URL to store or look up, or `None` when
/// normalizing leaves nothing that could tell one address from another: an
/// empty or blank text, a query string or fragment alone (`?`, `#`, `?x`), a
/// scheme alone (`http://`), slashes. Every seller without a URL would match
/// such a lookup, and a stored one would match every such lookup.
pub fn url_key(raw: &str) -> Option<String> {
    let normalized = normalize_url(raw);
    let after_scheme = match normalized.split_once(':') {
        Some((scheme, rest)) if is_scheme(scheme) => rest,
        _ => &normalized,
    };
    after_scheme
        .chars()
        .any(char::is_alphanumeric)
        .then_some(normalized)
}

/// RFC 3986: a letter, then letters, digits, `+`, `-`, `.`.
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_that_normalizes_to_nothing_has_no_key() {
        for raw in [
            "",
            " ",
            "?",
            "#",
            "?x",
            "#x",
            "?a=1&b=2",
            "http://",
            "https://?x",
            "HTTPS:///#",
            "//",
            "/",
            "mailto:",
            "\u{3000}?q",
        ] {
            assert_eq!(url_key(raw), None, "{raw:?}");
        }
        assert_eq!(
            url_key(" https://Shop.example/s/?x ").as_deref(),
            Some("https://shop.example/s")
        );
        assert_eq!(
            url_key("shop.example/s?x").as_deref(),
            Some("shop.example/s")
        );
    }

    #[test]
    fn url_normalization_strips_query_fragment_case_and_trailing_slash() {
        assert_eq!(
            normalize_url("HTTPS://WWW.Ozon.RU/product/abc-123/?utm=1#reviews"),
            "https://www.ozon.ru/product/abc-123"
        );
        assert_eq!(normalize_url("https://ozon.ru/"), "https://ozon.ru");
        assert_eq!(
            normalize_url("https://ozon.ru/Path/Case"),
            "https://ozon.ru/Path/Case"
        );
    }

    #[test]
    fn fold_handles_cyrillic() {
        assert_eq!(fold("ПРОСТОКВАШИНО"), "простоквашино");
    }
}
