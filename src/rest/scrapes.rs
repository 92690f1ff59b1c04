//! `GET /me/scrapes`, `GET /me/scrapes/{id}`, `GET /me/scrapes/{id}/products`:
//! the calling account's own scrape sessions.

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use headers::HeaderMapExt;
use serde::Deserialize;
use utoipa::IntoParams;

use super::params::{self, Params, PathId};
use crate::accounts::Caller;
use crate::http::error::ErrorBody;
use crate::http::sized::{self, Within};
use crate::http::{ApiError, conditional};
use crate::limits::{QuotaOutcome, quota};
use crate::query::{Page, sessions};
use crate::state::AppState;
use crate::views::{
    ScrapeSession, SessionEnvelope, SessionPage, SessionProduct, SessionProductPage, TotalMeta,
};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    #[param(value_type = Option<u64>, minimum = 1)]
    page: Option<u64>,
    #[param(value_type = Option<u64>, minimum = 1, maximum = 500)]
    page_size: Option<u64>,
}

/// The caller's scrape sessions, most recent first.
#[utoipa::path(get, operation_id = "listScrapeSessions", path = "/me/scrapes", tag = "scrapes", params(PageQuery),
    responses((status = 200, body = SessionPage), (status = 401, body = ErrorBody), (status = 429, body = ErrorBody)),
    security(("bearerAuth" = [])))]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Params(q): Params<PageQuery>,
) -> Result<Within<SessionPage>, ApiError> {
    let page = Page::clamped(q.page, q.page_size);
    let (views, total) = sessions::list_for_account(&state.db, caller.account_id, page).await?;
    let body = SessionPage {
        data: views.into_iter().map(ScrapeSession::from).collect(),
        meta: TotalMeta::of(total, page),
    };
    Ok(sized::within(&state, body))
}

/// One of the caller's sessions; another account's session is not found.
#[utoipa::path(get, operation_id = "getScrapeSession", path = "/me/scrapes/{id}", tag = "scrapes",
    params(("id" = uuid::Uuid, Path, description = "Scrape session id")),
    responses(
        (status = 200, body = SessionEnvelope),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathId(id): PathId,
) -> Result<Within<SessionEnvelope>, ApiError> {
    let view = sessions::find_for_account(&state.db, caller.account_id, params::uuid(&id)?).await?;
    Ok(sized::within(&state, SessionEnvelope { data: view.into() }))
}

/// Every submission of one of the caller's sessions in submission order, with
/// `product` null until merged. Rows with a product count against the daily
/// quota; a page that would pass it is refused whole and costs nothing.
#[utoipa::path(get, operation_id = "listScrapeSessionProducts", path = "/me/scrapes/{id}/products", tag = "scrapes",
    params(("id" = uuid::Uuid, Path, description = "Scrape session id"), PageQuery),
    responses(
        (status = 200, body = SessionProductPage,
            headers(("X-Quota-Limit" = i64, description = "Daily quota in rows"), ("X-Quota-Remaining" = i64, description = "Rows left today"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "rate_limited or quota_exceeded"),
        (status = 422, body = ErrorBody, description = "response_too_large: the products would pass the response size limit; ask for a smaller page_size"),
    ),
    security(("bearerAuth" = [])))]
pub async fn products(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathId(id): PathId,
    Params(q): Params<PageQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = params::uuid(&id)?;
    let page = Page::clamped(q.page, q.page_size);
    let budget = sized::budget(&state);
    let (entries, total) =
        sessions::entries_for_account(&state.db, caller.account_id, id, page, &budget).await?;
    let rows = entries.iter().filter(|e| e.product.is_some()).count() as i64;
    let body = SessionProductPage {
        data: entries.into_iter().map(SessionProduct::from).collect(),
        meta: TotalMeta::of(total, page),
    };
    let body = sized::within(&state, body).to_bytes()?;
    // Tagged here, not by `conditional::revalidate`: a client that holds
    // these rows already is answered 304 before they are charged.
    let tag = conditional::tag(body.as_bytes());
    if let Some(not_modified) = tag
        .as_ref()
        .and_then(|tag| conditional::not_modified_if_fresh(&headers, tag))
    {
        return Ok(not_modified);
    }
    let outcome = quota::charge(
        &state.db,
        caller.account_id,
        rows,
        state.settings.limits.daily_quota,
        state.clock.now(),
    )
    .await?;
    let (limit, remaining) = match outcome {
        QuotaOutcome::Charged(charge) => (charge.limit, charge.remaining),
        QuotaOutcome::Exceeded {
            limit,
            remaining,
            retry_after,
        } => {
            let mut response = ApiError::QuotaExceeded { retry_after }.into_response();
            quota_headers(response.headers_mut(), limit, remaining);
            return Ok(response);
        }
    };
    let mut response = body.into_response();
    if let Some(tag) = tag {
        response.headers_mut().typed_insert(tag);
    }
    quota_headers(response.headers_mut(), limit, remaining);
    Ok(response)
}

fn quota_headers(headers: &mut HeaderMap, limit: i64, remaining: i64) {
    headers.insert(
        HeaderName::from_static("x-quota-limit"),
        HeaderValue::from(limit),
    );
    headers.insert(
        HeaderName::from_static("x-quota-remaining"),
        HeaderValue::from(remaining),
    );
}
