//! GraphQL's `DateTime` scalar: it renders RFC 3339 in UTC with `Z`, exactly
//! like REST (async-graphql's built-in one writes `+00:00`).

use async_graphql::{InputValueError, InputValueResult, Scalar, ScalarType, Value};
use chrono::{DateTime, SecondsFormat, Utc};

/// An instant, written as an RFC 3339 date-time in UTC ending in `Z`; input
/// accepts any offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp(pub DateTime<Utc>);

/// An RFC 3339 date-time; written in UTC with `Z`, read with any offset.
#[Scalar(name = "DateTime")]
impl ScalarType for Timestamp {
    fn parse(value: Value) -> InputValueResult<Self> {
        match &value {
            Value::String(s) => DateTime::parse_from_rfc3339(s)
                .map(|t| Timestamp(t.with_timezone(&Utc)))
                .map_err(|_| {
                    InputValueError::custom("expected an RFC 3339 date-time with an offset or Z")
                }),
            _ => Err(InputValueError::expected_type(value)),
        }
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Self {
        Timestamp(t)
    }
}
