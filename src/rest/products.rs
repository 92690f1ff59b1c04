//! `GET /products`, `GET /products/{id}`, `GET /products/{id}/price-history`.

use axum::extract::State;
use entity::{Marketplace, TrustStatus, UserAuthStatus};
use serde::Deserialize;
use utoipa::IntoParams;

use super::params::{self, Params, PathId, marketplace, names, one_of};
use crate::config::ListConfig;
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::http::sized::{self, Within};
use crate::query::Page;
use crate::query::prices::{self, PriceHistoryFilter};
use crate::query::products::{self, ProductFilter};
use crate::state::AppState;
use crate::views::{
    HasMoreMeta, PriceHistoryPage, PriceObservation, Product, ProductEnvelope, ProductPage,
    TotalMeta,
};

/// Filters of `GET /products`, combined with AND.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProductsQuery {
    /// One of the four marketplaces.
    #[param(value_type = Option<Marketplace>)]
    marketplace: Option<String>,
    /// Seller's id on the marketplace; alone it is not unique across marketplaces.
    seller_id: Option<String>,
    /// Seller's or brand's own SKU; exact match.
    seller_code: Option<String>,
    /// Case-insensitive substring of seller_code.
    #[param(max_length = 200)]
    seller_code_contains: Option<String>,
    /// Marketplace SKU; unique only with marketplace.
    external_id: Option<String>,
    /// Product page URL; query string and fragment are ignored. One that is
    /// nothing without them (`?x`, `#`, `http://`) is refused.
    url: Option<String>,
    /// Equal (case-insensitive) to any level of category_path, in any known language.
    category: Option<String>,
    /// Exact, case-insensitive brand.
    brand: Option<String>,
    /// Case-insensitive substring of the name in any known language.
    #[param(max_length = 200)]
    name_contains: Option<String>,
    #[param(value_type = Option<TrustStatus>)]
    trust_status: Option<String>,
    /// Page number from 1; invalid values fall back to 1. Pages reach the
    /// first 10,000 products of a list by default: `page × page_size` at
    /// most that (see the 422 answer).
    #[param(value_type = Option<u64>, minimum = 1)]
    page: Option<u64>,
    /// 1..500; invalid values fall back to 100.
    #[param(value_type = Option<u64>, minimum = 1, maximum = 500)]
    page_size: Option<u64>,
}

/// Products matching the filters, newest first (`first_seen_at` desc, then id).
///
/// Page numbers reach the first 10,000 products of a list (the server's
/// `VITRINA_PRODUCTS_PAGE_WINDOW`), and the first 1,000 of a list filtered
/// by a substring or by two of marketplace, trust_status and category
/// (`VITRINA_PRODUCTS_TESTED_PAGE_WINDOW`), whose pages test each row they
/// walk: a page ending past them (`page × page_size` above it) is 422
/// `page_too_deep`, whose message names the limit. A page skips the rows
/// before it by walking them, so its cost grows with its depth; read
/// further with the cursors of GraphQL `products(first:, after:)`, which
/// cost the same at any depth.
#[utoipa::path(get, operation_id = "listProducts", path = "/products", tag = "products", params(ProductsQuery),
    responses(
        (status = 200, body = ProductPage),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "response_too_large: the products would pass the response size limit; ask for a smaller page_size. page_too_deep: the page ends past the products page numbers reach (page × page_size above VITRINA_PRODUCTS_PAGE_WINDOW, 10,000 by default; with a substring filter, or two of marketplace, trust_status and category, above VITRINA_PRODUCTS_TESTED_PAGE_WINDOW, 1,000 by default); read further with GraphQL cursors, products(first:, after:)"),
    ),
    security(("bearerAuth" = [])))]
pub async fn list(
    State(state): State<AppState>,
    Params(q): Params<ProductsQuery>,
) -> Result<Within<ProductPage>, ApiError> {
    let filter = ProductFilter {
        marketplace: marketplace(q.marketplace)?,
        seller_id: q.seller_id,
        seller_code: q.seller_code,
        seller_code_contains: q.seller_code_contains,
        external_id: q.external_id,
        url: q.url,
        category: q.category,
        brand: q.brand,
        name_contains: q.name_contains,
        trust_status: one_of(
            "trust_status",
            q.trust_status,
            &names(TrustStatus::ALL, TrustStatus::as_str),
        )?,
        // GraphQL's alone: the v1 contract names no such parameters.
        ids: None,
        currency: None,
        price_min: None,
        price_max: None,
        in_stock: None,
        ..ProductFilter::default()
    };
    let page = within_window(
        Page::clamped(q.page, q.page_size),
        &filter,
        &state.settings.lists,
    )?;
    let budget = sized::budget(&state);
    let (views, has_more) = products::list(&state.db, &filter, page, &budget).await?;
    let body = ProductPage {
        data: views.into_iter().map(Product::from).collect(),
        meta: HasMoreMeta::of(has_more, page),
    };
    Ok(sized::within(&state, body))
}

/// `page`, unless it ends past the first products of the list that page
/// numbers reach: a page skips the rows before it by walking them, so its
/// cost grows with its depth, where a cursor's does not; faster when the
/// filter tests the rows it walks.
fn within_window(page: Page, filter: &ProductFilter, lists: &ListConfig) -> Result<Page, ApiError> {
    let tested = lists.products_tested_page_window;
    let (window, setting, list) = if filter.tests_rows() && tested < lists.products_page_window {
        (
            tested,
            "VITRINA_PRODUCTS_TESTED_PAGE_WINDOW",
            "a list filtered by a substring or by two of marketplace, trust status and category",
        )
    } else {
        (
            lists.products_page_window,
            "VITRINA_PRODUCTS_PAGE_WINDOW",
            "a list",
        )
    };
    if page.page.saturating_mul(page.page_size) <= window {
        return Ok(page);
    }
    Err(ApiError::Unprocessable {
        code: "page_too_deep",
        message: format!(
            "Page numbers reach the first {window} products of {list} ({setting}) \
             and page {} of {} products goes past them; \
             read further with the cursors of GraphQL products(first:, after:), \
             which cost the same at any depth",
            page.page, page.page_size
        ),
    })
}

/// One product by its internal id.
#[utoipa::path(get, operation_id = "getProduct", path = "/products/{id}", tag = "products",
    params(("id" = uuid::Uuid, Path, description = "Internal product id")),
    responses(
        (status = 200, body = ProductEnvelope),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "response_too_large: a product stored before the per-product limit, larger than the response size limit"),
    ),
    security(("bearerAuth" = [])))]
pub async fn get(
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Within<ProductEnvelope>, ApiError> {
    let budget = sized::budget(&state);
    let view = products::get(&state.db, params::uuid(&id)?, &budget).await?;
    Ok(sized::within(&state, ProductEnvelope { data: view.into() }))
}

/// Filters of the price history, combined with AND.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PriceHistoryQuery {
    /// One country-market variant; case-insensitive.
    country_code: Option<String>,
    /// One region or warehouse; marketplace-native code.
    region_code: Option<String>,
    #[param(value_type = Option<UserAuthStatus>)]
    user_auth_status: Option<String>,
    /// Start of the range, inclusive; must not be after `to`.
    #[param(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    from: Option<String>,
    /// End of the range, inclusive.
    #[param(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    to: Option<String>,
    #[param(value_type = Option<u64>, minimum = 1)]
    page: Option<u64>,
    #[param(value_type = Option<u64>, minimum = 1, maximum = 500)]
    page_size: Option<u64>,
}

/// The full price and stock history of one product, newest first.
#[utoipa::path(get, operation_id = "listPriceHistory", path = "/products/{id}/price-history", tag = "products",
    params(("id" = uuid::Uuid, Path, description = "Internal product id"), PriceHistoryQuery),
    responses(
        (status = 200, body = PriceHistoryPage),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn price_history(
    State(state): State<AppState>,
    PathId(id): PathId,
    Params(q): Params<PriceHistoryQuery>,
) -> Result<Within<PriceHistoryPage>, ApiError> {
    let id = params::uuid(&id)?;
    let filter = PriceHistoryFilter {
        country_code: q.country_code,
        region_code: q.region_code,
        user_auth_status: one_of(
            "user_auth_status",
            q.user_auth_status,
            &names(UserAuthStatus::ALL, UserAuthStatus::as_str),
        )?,
        from: params::date_time("from", q.from)?,
        to: params::date_time("to", q.to)?,
    };
    let page = Page::clamped(q.page, q.page_size);
    let (rows, total) = prices::history(&state.db, id, &filter, page).await?;
    let body = PriceHistoryPage {
        data: rows.into_iter().map(PriceObservation::from).collect(),
        meta: TotalMeta::of(total, page),
    };
    Ok(sized::within(&state, body))
}
