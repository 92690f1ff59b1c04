//! `GET /categories` and `GET /brands`: the latest daily snapshots.

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, header};
use entity::Marketplace;
use serde::Deserialize;
use utoipa::IntoParams;

use super::params::{Params, names, one_of};
use crate::http::error::ErrorBody;
use crate::http::sized::{self, Within};
use crate::http::{ApiError, conditional};
use crate::query::snapshots;
use crate::state::AppState;
use crate::views::{BrandItem, BrandList, CategoryItem, CategoryList};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MarketplaceQuery {
    #[param(value_type = Option<Marketplace>)]
    marketplace: Option<String>,
}

/// The `Cache-Control` of a snapshot's answer: it changes once a day.
type Cached = [(HeaderName, HeaderValue); 1];

fn cached(state: &AppState) -> Cached {
    let secs = state.settings.http.snapshot_max_age_secs;
    [(header::CACHE_CONTROL, conditional::max_age(secs))]
}

fn marketplace(value: Option<String>) -> Result<Option<Marketplace>, ApiError> {
    one_of(
        "marketplace",
        value,
        &names(Marketplace::ALL, Marketplace::as_str),
    )
}

/// Categories of one marketplace (required: taxonomies differ per marketplace),
/// from the latest daily snapshot; may lag same-day scrapes by up to 24 hours.
/// Ordered by product_count desc, then path.
#[utoipa::path(get, operation_id = "listCategories", path = "/categories", tag = "catalog", params(MarketplaceQuery),
    responses(
        (status = 200, body = CategoryList),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn categories(
    State(state): State<AppState>,
    Params(q): Params<MarketplaceQuery>,
) -> Result<(Cached, Within<CategoryList>), ApiError> {
    let marketplace = marketplace(q.marketplace)?
        .ok_or_else(|| ApiError::MissingParameter("marketplace is required".into()))?;
    let entries = snapshots::categories(&state.db, marketplace).await?;
    let data = entries.into_iter().map(CategoryItem::from).collect();
    Ok((cached(&state), sized::within(&state, CategoryList { data })))
}

/// Brands of one marketplace, or of all marketplaces without the parameter
/// (a brand is one entity across marketplaces), from the latest daily
/// snapshot. Ordered by product_count desc, then brand.
#[utoipa::path(get, operation_id = "listBrands", path = "/brands", tag = "catalog", params(MarketplaceQuery),
    responses(
        (status = 200, body = BrandList),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn brands(
    State(state): State<AppState>,
    Params(q): Params<MarketplaceQuery>,
) -> Result<(Cached, Within<BrandList>), ApiError> {
    let entries = snapshots::brands(&state.db, marketplace(q.marketplace)?).await?;
    let data = entries.into_iter().map(BrandItem::from).collect();
    Ok((cached(&state), sized::within(&state, BrandList { data })))
}
