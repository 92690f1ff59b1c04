//! Query-string parsing of v1. Unknown parameters are ignored, a repeated
//! parameter counts only its first occurrence and an empty value counts as
//! absent. Every text value of a known parameter passes the one rule of text
//! parameters before anything reads it: UTF-8, then
//! [`check_text`](crate::query::check_text) (no NUL, at most
//! [`MAX_TEXT_LEN`](crate::query::MAX_TEXT_LEN) characters). `page` and
//! `page_size` never fail: see [`whole_number`].
//!
//! The endpoint's parameter struct is deserialized straight from the query
//! string (no map of every pair in between): serde names the struct's
//! fields, so only their values are decoded and checked.

use std::borrow::Cow;
use std::fmt;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use chrono::{DateTime, Utc};
use entity::Marketplace;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

use crate::http::ApiError;
use crate::query::{QueryError, check_text};

/// The query string as the endpoint's parameter struct: text parameters
/// are `Option<String>`, `page` and `page_size` `Option<u64>`.
#[derive(Debug)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        T::deserialize(QueryString(query))
            .map(Params)
            .map_err(|Refusal(err)| err)
    }
}

/// A closed-vocabulary value such as `marketplace` or `trust_status`.
pub fn one_of<T: std::str::FromStr>(
    name: &str,
    value: Option<String>,
    allowed: &[&str],
) -> Result<Option<T>, ApiError> {
    match value {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            ApiError::InvalidParameter(format!("{name} must be one of: {}", allowed.join(", ")))
        }),
    }
}

/// An RFC 3339 date-time with an offset or `Z`.
pub fn date_time(name: &str, value: Option<String>) -> Result<Option<DateTime<Utc>>, ApiError> {
    match value {
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

/// The raw `{id}` and `{delivery_id}` segments of a path naming an object
/// inside another, decoded like [`PathId`].
#[derive(Debug)]
pub struct PathIds(pub String, pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathIds {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map(|Path((id, inner))| PathIds(id, inner))
            .map_err(|_| ApiError::InvalidParameter("id must be a UUID".into()))
    }
}

/// A path id that must be a UUID.
pub fn uuid(value: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(value).map_err(|_| ApiError::InvalidParameter("id must be a UUID".into()))
}

/// The `marketplace` parameter, one of the marketplaces' names.
pub fn marketplace(value: Option<String>) -> Result<Option<Marketplace>, ApiError> {
    one_of(
        "marketplace",
        value,
        &names(Marketplace::ALL, Marketplace::as_str),
    )
}

/// Wire names of an enum, for error messages.
pub fn names<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| name(*v)).collect()
}

/// `page` and `page_size` never fail: a value that is not a whole number
/// (spaces around it and one leading `+` allowed) reads as 0, which the
/// paging rule replaces with the default; one too large for 64 bits reads
/// as `u64::MAX` (a page past the end of every list, so an empty one).
fn whole_number(raw: &[u8]) -> u64 {
    let digits = raw.trim_ascii();
    let digits = digits.strip_prefix(b"+").unwrap_or(digits);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    digits.iter().fold(0, |n: u64, digit| {
        n.saturating_mul(10).saturating_add(u64::from(digit - b'0'))
    })
}

/// `application/x-www-form-urlencoded` decoding (`+` is a space, `%XX` a
/// byte, a `%` without two hex digits stays as it is), borrowing when there
/// is nothing to decode. Bytes, not text: whether they must be UTF-8 is for
/// the parameter to say.
fn decode(raw: &str) -> Cow<'_, [u8]> {
    let bytes = raw.as_bytes();
    if !bytes.iter().any(|b| matches!(b, b'%' | b'+')) {
        return Cow::Borrowed(bytes);
    }
    let hex = |digit: u8| char::from(digit).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes[i..] {
            [b'%', high, low, ..] => hex(high).zip(hex(low)).map(|(h, l)| (h * 16 + l) as u8),
            _ => None,
        };
        match (escaped, bytes[i]) {
            (Some(byte), _) => {
                out.push(byte);
                i += 2;
            }
            (None, b'+') => out.push(b' '),
            (None, byte) => out.push(byte),
        }
        i += 1;
    }
    Cow::Owned(out)
}

/// Why a query string was refused: the [`ApiError`] it is answered with.
/// (`Display` only because serde requires it; it shows no message.)
#[derive(Debug)]
struct Refusal(ApiError);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a query parameter was refused")
    }
}

impl std::error::Error for Refusal {}

impl de::Error for Refusal {
    fn custom<M: fmt::Display>(message: M) -> Self {
        Refusal(ApiError::InvalidParameter(message.to_string()))
    }
}

impl From<QueryError> for Refusal {
    fn from(err: QueryError) -> Self {
        Refusal(err.into())
    }
}

/// A query string, read as a struct whose fields are its known parameters.
struct QueryString<'q>(&'q str);

impl<'de, 'q> de::Deserializer<'de> for QueryString<'q> {
    type Error = Refusal;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        let mut values: Vec<Option<Cow<'q, [u8]>>> = vec![None; fields.len()];
        for pair in self.0.split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(name);
            if let Some(i) = fields.iter().position(|f| f.as_bytes() == &*name) {
                values[i].get_or_insert_with(|| decode(value));
            }
        }
        let given = fields
            .iter()
            .zip(values)
            .filter_map(|(f, v)| Some((*f, v?)));
        visitor.visit_map(Given {
            pairs: given,
            value: None,
        })
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Refusal> {
        Err(Refusal(ApiError::internal(
            "query parameters are read into a struct",
        )))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The known parameters that were given, in the order of the struct's fields.
struct Given<'q, I> {
    pairs: I,
    /// The value of the name just read.
    value: Option<Param<'q>>,
}

impl<'de, 'q, I> MapAccess<'de> for Given<'q, I>
where
    I: Iterator<Item = (&'static str, Cow<'q, [u8]>)>,
{
    type Error = Refusal;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Refusal> {
        let Some((name, raw)) = self.pairs.next() else {
            return Ok(None);
        };
        self.value = Some(Param { name, raw });
        seed.deserialize(name.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Refusal> {
        match self.value.take() {
            Some(param) => seed.deserialize(param),
            None => Err(de::Error::custom("a value was read before its name")),
        }
    }
}

/// The value of one known parameter.
struct Param<'q> {
    name: &'static str,
    raw: Cow<'q, [u8]>,
}

impl<'de> de::Deserializer<'de> for Param<'_> {
    type Error = Refusal;

    /// Text: UTF-8 that passes [`check_text`].
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        let name = self.name;
        let text = std::str::from_utf8(&self.raw)
            .map_err(|_| QueryError::Invalid(format!("{name} must be UTF-8 text")))?;
        check_text(name, text)?;
        visitor.visit_str(text)
    }

    /// An empty value counts as absent.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.raw.is_empty() {
            true => visitor.visit_none(),
            false => visitor.visit_some(self),
        }
    }

    /// Paging: never fails ([`whole_number`]).
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        visitor.visit_u64(whole_number(&self.raw))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_saturate_and_anything_else_is_zero() {
        for (raw, n) in [
            ("1", 1),
            (" +42 ", 42),
            ("007", 7),
            ("18446744073709551615", u64::MAX),
            ("18446744073709551616", u64::MAX),
            ("99999999999999999999999999999999", u64::MAX),
            ("", 0),
            ("-1", 0),
            ("-0", 0),
            ("1.5", 0),
            ("1e3", 0),
            ("++1", 0),
            ("0x10", 0),
            ("１", 0),
        ] {
            assert_eq!(whole_number(raw.as_bytes()), n, "{raw:?}");
        }
    }

    #[test]
    fn decoding_keeps_bytes_and_malformed_escapes() {
        for (raw, bytes) in [
            ("plain", &b"plain"[..]),
            ("a+b%20c", b"a b c"),
            ("%00%ff%FE", b"\0\xff\xfe"),
            ("%", b"%"),
            ("%zz%4", b"%zz%4"),
            ("%+1", b"% 1"),
            ("100%25", b"100%"),
        ] {
            assert_eq!(&*decode(raw), bytes, "{raw:?}");
        }
    }
}
