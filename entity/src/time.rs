//! Timestamps as the database keeps them.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

/// Truncates to whole microseconds, the precision PostgreSQL stores, so a
/// value read back equals the value written on every backend.
pub fn db_time(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(t)
}

/// The current time at database precision.
pub fn db_now() -> DateTime<Utc> {
    db_time(Utc::now())
}

/// Reads a timestamp from the JSON a child row is read as (see the service's
/// `query::children`). Both databases write RFC 3339, which chrono's own
/// RFC 3339 parser reads in a quarter of the instructions of its general
/// `FromStr` (serde's default); other spellings still go through `FromStr`.
pub fn from_json<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    d.deserialize_str(Rfc3339)
}

struct Rfc3339;

impl serde::de::Visitor<'_> for Rfc3339 {
    type Value = DateTime<Utc>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an RFC 3339 timestamp")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<DateTime<Utc>, E> {
        DateTime::parse_from_rfc3339(text)
            .or_else(|_| text.parse::<DateTime<chrono::FixedOffset>>())
            .map(|t| t.with_timezone(&Utc))
            .map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<DateTime<Utc>, serde_json::Error> {
        from_json(&mut serde_json::Deserializer::from_str(json))
    }

    #[test]
    fn timestamps_read_from_json_in_rfc_3339_and_other_spellings_alike() {
        let t = DateTime::parse_from_rfc3339("2026-11-20T10:00:00.123456Z")
            .unwrap()
            .with_timezone(&Utc);
        for json in [
            r#""2026-11-20T10:00:00.123456+00:00""#,
            r#""2026-11-20T13:00:00.123456+03:00""#,
            r#""2026-11-20T10:00:00.123456Z""#,
            r#""2026-11-20 10:00:00.123456+00:00""#,
        ] {
            assert_eq!(read(json).unwrap(), t, "{json}");
        }
        for json in [r#""2026-11-20""#, r#""yesterday""#, "17", "null"] {
            assert!(read(json).is_err(), "{json}");
        }
    }
}
