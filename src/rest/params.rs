//! Query-string parsing of v1: unknown parameters are ignored, a repeated
//! parameter counts only its first occurrence, values are validated into
//! typed filters, and paging falls back to defaults instead of failing.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;

use crate::http::ApiError;
use crate::query::Page;

/// The query string as the endpoint's parameter struct (all fields `Option<String>`).
#[derive(Debug)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let mut first = serde_json::Map::new();
        if let Some(query) = parts.uri.query() {
            for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
                first
                    .entry(name.into_owned())
                    .or_insert_with(|| value.into_owned().into());
            }
        }
        serde_json::from_value(first.into())
            .map(Params)
            .map_err(|e| ApiError::InvalidParameter(format!("unreadable query string: {e}")))
    }
}

/// A present, non-empty value.
pub fn given(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// A closed-vocabulary value such as `marketplace` or `trust_status`.
pub fn one_of<T: std::str::FromStr>(
    name: &str,
    value: Option<String>,
    allowed: &[&str],
) -> Result<Option<T>, ApiError> {
    match given(value) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            ApiError::InvalidParameter(format!("{name} must be one of: {}", allowed.join(", ")))
        }),
    }
}

/// An RFC 3339 date-time with an offset or `Z`.
pub fn date_time(name: &str, value: Option<String>) -> Result<Option<DateTime<Utc>>, ApiError> {
    match given(value) {
        None => Ok(None),
        Some(v) => DateTime::parse_from_rfc3339(&v)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| {
                ApiError::InvalidParameter(format!(
                    "{name} must be an ISO 8601 date-time with an offset or Z"
                ))
            }),
    }
}

/// The raw `{id}` path segment. A segment axum cannot decode (bytes that are
/// not UTF-8, such as `%FF`) is `invalid_parameter` like any malformed id,
/// instead of axum's plain-text rejection.
#[derive(Debug)]
pub struct PathId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .map(|Path(id)| PathId(id))
            .map_err(|_| ApiError::InvalidParameter("id must be a UUID".into()))
    }
}

/// A path id that must be a UUID.
pub fn uuid(value: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(value).map_err(|_| ApiError::InvalidParameter("id must be a UUID".into()))
}

/// `page` and `page_size`: anything missing, not an integer or out of range
/// becomes the default.
pub fn page(page: Option<String>, page_size: Option<String>) -> Page {
    let number = |v: Option<String>| v.and_then(|v| v.trim().parse::<u64>().ok());
    Page::clamped(number(page), number(page_size))
}

/// Wire names of an enum, for error messages.
pub fn names<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| name(*v)).collect()
}
