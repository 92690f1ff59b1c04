//! The daily quota for one GraphQL operation. Its metered fields (a
//! session's `submissions` and `products`) only count the rows with a
//! product they read; the operation is charged once, after it ran, for all
//! of them. A request whose rows would pass the quota is refused whole and
//! charges nothing, however many metered fields (aliases, several sessions)
//! it reads. Over HTTP `execute` (`request/transport.rs`) charges it after the request
//! ran within its deadline; over the WebSocket the WebSocket's extension
//! (`request/response.rs`) charges each response it pushes. An operation cut off by
//! its deadline sends no rows and is charged nothing.

use std::sync::{Arc, Mutex, MutexGuard};

use async_graphql::{Context, PathSegment, Pos, Response, ServerError, Value};
use axum::http::HeaderValue;

use super::QuotaCharged;
use crate::graphql::{RequestData, gql};
use crate::http::ApiError;
use crate::limits::{QuotaOutcome, quota};
use crate::views::Allowance;

/// The rows one operation's metered fields read.
#[derive(Default)]
pub struct Meter(Mutex<Option<Metered>>);

struct Metered {
    rows: i64,
    /// Where the first metered field to resolve stands in the query, to
    /// report a refusal there (an error during execution, as any field's).
    path: Vec<PathSegment>,
    pos: Pos,
}

impl Meter {
    /// Counts `rows` read by the metered field `ctx` resolves.
    pub fn count(ctx: &Context<'_>, rows: usize) {
        let meter = ctx.data_unchecked::<Arc<Meter>>();
        let rows = i64::try_from(rows).unwrap_or(i64::MAX);
        let mut metered = meter.lock();
        match &mut *metered {
            Some(metered) => metered.rows = metered.rows.saturating_add(rows),
            None => {
                let path = ctx.set_error_path(ServerError::new("", None)).path;
                *metered = Some(Metered {
                    rows,
                    path,
                    pos: ctx.item.pos,
                });
            }
        }
    }

    /// Charges what the operation read, once; a response over the quota
    /// becomes a refusal without data. Metered responses carry the quota
    /// headers REST's metered endpoint sets, and what the charge did.
    pub async fn charge(
        &self,
        data: &RequestData,
        mut response: Response,
    ) -> (Response, Option<QuotaCharged>) {
        let Some(metered) = self.lock().take() else {
            return (response, None);
        };
        let state = data.state();
        let limit = state.settings.limits.daily_quota;
        let account = data.caller().account_id;
        let now = state.clock.now();
        let outcome = quota::charge(&state.db, account, metered.rows, limit, now).await;
        let charged = |charged, limit, remaining| QuotaCharged {
            charged,
            after: Allowance {
                limit,
                remaining,
                reset_at: quota::resets_at(now),
            },
        };
        let (refusal, report) = match outcome {
            Ok(QuotaOutcome::Charged(charge)) => {
                quota_headers(&mut response, charge.limit, charge.remaining);
                let report = charged(metered.rows, charge.limit, charge.remaining);
                return (response, Some(report));
            }
            Ok(QuotaOutcome::Exceeded {
                limit,
                remaining,
                retry_after,
            }) => {
                quota_headers(&mut response, limit, remaining);
                let report = charged(0, limit, remaining);
                (ApiError::QuotaExceeded { retry_after }, Some(report))
            }
            Err(e) => (ApiError::from(e), None),
        };
        let mut error = gql(refusal).into_server_error(metered.pos);
        error.path = metered.path;
        response.data = Value::Null;
        response.errors = vec![error];
        (response, report)
    }

    /// Forgets what an operation that was cut off read: it sends no rows.
    pub fn discard(&self) {
        self.lock().take();
    }

    fn lock(&self) -> MutexGuard<'_, Option<Metered>> {
        // One operation's count: a poisoned lock still holds a whole value.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn quota_headers(response: &mut Response, limit: i64, remaining: i64) {
    let headers = &mut response.http_headers;
    headers.insert("x-quota-limit", HeaderValue::from(limit));
    headers.insert("x-quota-remaining", HeaderValue::from(remaining));
}
