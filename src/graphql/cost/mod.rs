//! What a request costs, in one word throughout: its complexity, found
//! before it runs (`analysis.rs`, with what reads that scan rows cost in
//! `scans.rs`), and the rows of the daily quota it read (`quota_charge.rs`);
//! then reported to the caller here, in `extensions.cost` of every response
//! (as Shopify's `extensions.cost` and GitHub's `rateLimit` tell their
//! clients), so a dashboard can pace itself without a request of its own:
//!
//! ```json
//! "cost": {
//!   "complexity": 86, "maxComplexity": 10000,
//!   "rateLimit": { "limit": 600, "remaining": 597, "resetAt": "2026-11-26T08:01:00Z" },
//!   "quota": { "charged": 40, "limit": 10000, "remaining": 9960, "resetAt": "2026-11-27T00:00:00Z" }
//! }
//! ```
//!
//! `complexity` is absent when the request was refused before its cost was
//! found; `quota` is present only when the operation read metered rows
//! (then `charged` is what it cost, 0 when it was refused for the quota);
//! `cached: true` marks an answer from the response cache
//! (`request/cached.rs`), absent otherwise.

pub(super) mod analysis;
pub(super) mod quota_charge;
pub mod scans;

use async_graphql::indexmap::IndexMap;
use async_graphql::{Name, Response, Value};
use chrono::{DateTime, Utc};

use crate::graphql::request::document_limits::RequestLimits;
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

/// Adds `extensions.cost` to an answer from the response cache: as
/// [`report`] has it, with `cached: true` and no quota (an answer that read
/// metered rows is never kept).
pub fn report_kept(response: &mut Response, limits: &RequestLimits, rate: &RateDecision) {
    report(response, limits, rate, None);
    if let Some(Value::Object(cost)) = response.extensions.get_mut("cost") {
        cost.insert(Name::new("cached"), Value::Boolean(true));
    }
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
