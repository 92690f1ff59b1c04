//! `GET /rate_limit`: where the caller stands against its limits. Free: it
//! counts against neither the rate limit nor the quota (GitHub's
//! `/rate_limit`), so a client can always find out why it is refused.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::http::error::ErrorBody;
use crate::http::{ApiError, access, sized};
use crate::state::AppState;
use crate::views::{Standing, StandingEnvelope};

/// The per-minute rate limit and the daily quota, read without counting;
/// the rate-limit headers report the same window.
#[utoipa::path(get, operation_id = "getRateLimit", path = "/rate_limit", tag = "limits",
    responses((status = 200, body = StandingEnvelope), (status = 401, body = ErrorBody)),
    security(("bearerAuth" = [])))]
pub async fn standing(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = access::authenticate(&state, &headers).await?;
    let rate = access::rate_standing(&state, &caller).await;
    let quota = access::quota_standing(&state, &state.db, &caller).await?;
    let data = Standing {
        rate_limit: access::allowance(&rate),
        quota,
    };
    let mut response = sized::within(&state, StandingEnvelope { data }).into_response();
    access::rate_headers(&rate, response.headers_mut());
    Ok(response)
}
