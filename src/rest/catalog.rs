//! `GET /categories` and `GET /brands`: the latest daily snapshots.

use axum::Json;
use axum::extract::State;
use entity::Marketplace;
use serde::Deserialize;
use utoipa::IntoParams;

use super::params::{Params, names, one_of};
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::query::snapshots;
use crate::state::AppState;
use crate::views::{BrandItem, BrandList, CategoryItem, CategoryList};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MarketplaceQuery {
    #[param(value_type = Option<Marketplace>)]
    marketplace: Option<String>,
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
) -> Result<Json<CategoryList>, ApiError> {
    let marketplace = marketplace(q.marketplace)?
        .ok_or_else(|| ApiError::MissingParameter("marketplace is required".into()))?;
    let entries = snapshots::categories(&state.db, marketplace).await?;
    Ok(Json(CategoryList {
        data: entries.into_iter().map(CategoryItem::from).collect(),
    }))
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
) -> Result<Json<BrandList>, ApiError> {
    let entries = snapshots::brands(&state.db, marketplace(q.marketplace)?).await?;
    Ok(Json(BrandList {
        data: entries.into_iter().map(BrandItem::from).collect(),
    }))
}
