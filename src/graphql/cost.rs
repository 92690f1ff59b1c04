//! `extensions.cost` of every GraphQL response: what the request cost and
//! what is left of the caller's budget (as Shopify's `extensions.cost` and
//! GitHub's `rateLimit` tell their clients), so a dashboard can pace itself
//! without a request of its own:
//!
//! ```json
//! "cost": {
//!   "complexity": 27, "maxComplexity": 10000,
//!   "rateLimit": { "limit": 600, "remaining": 597, "resetAt": "2026-11-26T08:01:00Z" },
//!   "quota": { "charged": 40, "limit": 10000, "remaining": 9960, "resetAt": "2026-11-27T00:00:00Z" }
//! }
//! ```
//!
//! `complexity` is absent when the request was refused before it was
//! priced; `quota` is present only when the operation read metered rows
//! (then `charged` is what it cost, 0 when it was refused for the quota).

use async_graphql::indexmap::IndexMap;
use async_graphql::{Name, Response, Value};
use chrono::{DateTime, Utc};

use super::limits::RequestLimits;
use crate::http::access;
use crate::limits::RateDecision;
use crate::views::{Allowance, Timestamp};

/// What an operation's metered rows did to the daily quota.
#[derive(Debug, Clone)]
pub struct QuotaCharged {
    pub charged: i64,
    pub after: Allowance,
}

/// Adds `extensions.cost` to `response`.
pub fn report(
    response: &mut Response,
    limits: &RequestLimits,
    rate: &RateDecision,
    quota: Option<&QuotaCharged>,
) {
    let mut cost = IndexMap::new();
    let complexity = response
        .extensions
        .get("analyzer")
        .and_then(|analyzer| match analyzer {
            Value::Object(fields) => fields.get("complexity").cloned(),
            _ => None,
        });
    if let Some(complexity) = complexity {
        cost.insert(Name::new("complexity"), complexity);
        cost.insert(
            Name::new("maxComplexity"),
            Value::from(limits.max_complexity as u64),
        );
    }
    cost.insert(
        Name::new("rateLimit"),
        allowance(&access::allowance(rate), None),
    );
    if let Some(quota) = quota {
        cost.insert(
            Name::new("quota"),
            allowance(&quota.after, Some(quota.charged)),
        );
    }
    response
        .extensions
        .insert("cost".to_owned(), Value::Object(cost));
}

fn allowance(allowance: &Allowance, charged: Option<i64>) -> Value {
    let mut fields = IndexMap::new();
    if let Some(charged) = charged {
        fields.insert(Name::new("charged"), Value::from(charged));
    }
    fields.insert(Name::new("limit"), Value::from(allowance.limit));
    fields.insert(Name::new("remaining"), Value::from(allowance.remaining));
    fields.insert(Name::new("resetAt"), reset_at(allowance.reset_at));
    Value::Object(fields)
}

fn reset_at(at: DateTime<Utc>) -> Value {
    async_graphql::ScalarType::to_value(&Timestamp(at))
}
