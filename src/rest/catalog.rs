//! `GET /categories` and `GET /brands`: the latest daily snapshots, each
//! answer as much of its list as fits in its bounds (the snapshot's entries
//! and the response size limit); `X-Result-Truncated` says whether entries
//! were left out (the spec gives these lists no `meta`).

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, header};
use entity::Marketplace;
use serde::Deserialize;
use utoipa::IntoParams;

use super::params::{Params, marketplace};
use crate::http::error::ErrorBody;
use crate::http::sized::{self, Within};
use crate::http::{ApiError, conditional};
use crate::query::budget::ResponseBudget;
use crate::query::snapshots::{self, Bounds};
use crate::state::AppState;
use crate::views::{BrandItem, BrandList, CategoryItem, CategoryList, list_envelope_len};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MarketplaceQuery {
    #[param(value_type = Option<Marketplace>)]
    marketplace: Option<String>,
}

/// The headers of a snapshot's answer: its `Cache-Control` (it changes
/// once a day) and whether the list was cut.
type Headers = [(HeaderName, HeaderValue); 2];

fn headers(state: &AppState, truncated: bool) -> Headers {
    let secs = state.settings.http.snapshot_max_age_secs;
    [
        (header::CACHE_CONTROL, conditional::max_age(secs)),
        sized::truncated(truncated),
    ]
}

/// The byte budget of a list answer, its envelope counted.
fn list_budget(state: &AppState) -> ResponseBudget {
    let budget = sized::budget(state);
    budget.take(list_envelope_len());
    budget
}

/// How much of a snapshot list an answer takes: `budget`, and the entries
/// a list may hold.
fn list_bounds<'a, T>(
    state: &AppState,
    budget: &'a ResponseBudget,
    size_of: fn(&T) -> u64,
) -> Bounds<'a, T> {
    Bounds {
        max_entries: state.settings.lists.snapshot_max_entries,
        budget,
        size_of,
    }
}

/// Categories of one marketplace (required: taxonomies differ per marketplace),
/// from the latest daily snapshot; may lag same-day scrapes by up to 24 hours.
/// Ordered by product_count desc, then path.
///
/// The list holds at most the server's entries per snapshot list
/// (VITRINA_SNAPSHOT_MAX_ENTRIES, 10,000 by default) and what fits in its
/// response size limit: the first in this order. `X-Result-Truncated` says
/// whether any were left out.
#[utoipa::path(get, operation_id = "listCategories", path = "/categories", tag = "catalog", params(MarketplaceQuery),
    responses(
        (status = 200, body = CategoryList, headers(
            ("X-Result-Truncated" = String, description = "`true` when the list has more entries than this answer holds (its first are listed), else `false`."),
        )),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn categories(
    State(state): State<AppState>,
    Params(q): Params<MarketplaceQuery>,
) -> Result<(Headers, Within<CategoryList>), ApiError> {
    let marketplace = marketplace(q.marketplace)?
        .ok_or_else(|| ApiError::MissingParameter("marketplace is required".into()))?;
    let budget = list_budget(&state);
    let bounds = list_bounds(&state, &budget, CategoryItem::listed_len);
    let listed = snapshots::categories(&state.db, marketplace, &bounds).await?;
    let data = listed.entries.into_iter().map(CategoryItem::from).collect();
    let body = sized::within(&state, CategoryList { data });
    Ok((headers(&state, listed.truncated), body))
}

/// Brands of one marketplace, or of all marketplaces without the parameter
/// (a brand is one entity across marketplaces), from the latest daily
/// snapshot. Ordered by product_count desc, then brand.
///
/// The list holds at most the server's entries per snapshot list
/// (VITRINA_SNAPSHOT_MAX_ENTRIES, 10,000 by default) and what fits in its
/// response size limit: the first in this order. `X-Result-Truncated` says
/// whether any were left out.
#[utoipa::path(get, operation_id = "listBrands", path = "/brands", tag = "catalog", params(MarketplaceQuery),
    responses(
        (status = 200, body = BrandList, headers(
            ("X-Result-Truncated" = String, description = "`true` when the list has more entries than this answer holds (its first are listed), else `false`."),
        )),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn brands(
    State(state): State<AppState>,
    Params(q): Params<MarketplaceQuery>,
) -> Result<(Headers, Within<BrandList>), ApiError> {
    let marketplace = marketplace(q.marketplace)?;
    let budget = list_budget(&state);
    let bounds = list_bounds(&state, &budget, BrandItem::listed_len);
    let listed = snapshots::brands(&state.db, marketplace, &bounds).await?;
    let data = listed.entries.into_iter().map(BrandItem::from).collect();
    let body = sized::within(&state, BrandList { data });
    Ok((headers(&state, listed.truncated), body))
}
