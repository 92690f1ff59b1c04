//! `GET /sellers`: at most `VITRINA_MAX_SELLERS_PER_LOOKUP` sellers;
//! `X-Result-Truncated` says whether more matched (the spec gives
//! `/sellers` no `meta`).

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue};
use entity::Marketplace;
use serde::Deserialize;
use utoipa::IntoParams;

use super::params::{Params, marketplace};
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::http::sized::{self, Within};
use crate::query::sellers::{self, SellerLookup};
use crate::state::AppState;
use crate::views::{Seller, SellerList};

/// Identifying parameters; at least one of: tin; psrn; url; marketplace with seller_id.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SellersQuery {
    /// Tax identification number.
    tin: Option<String>,
    /// State registration number.
    psrn: Option<String>,
    /// Storefront URL; query string and fragment are ignored. One that is
    /// nothing without them (`?x`, `#`, `http://`) is 400 `invalid_parameter`.
    url: Option<String>,
    #[param(value_type = Option<Marketplace>)]
    marketplace: Option<String>,
    /// Used together with marketplace.
    seller_id: Option<String>,
}

/// Sellers matching every given parameter, ordered by marketplace then seller_id:
/// at most the server's limit (VITRINA_MAX_SELLERS_PER_LOOKUP, 100 by
/// default); `X-Result-Truncated` says whether more matched. One legal
/// entity can sell under one TIN on several marketplaces.
#[utoipa::path(get, operation_id = "listSellers", path = "/sellers", tag = "sellers", params(SellersQuery),
    responses(
        (status = 200, body = SellerList, headers(
            ("X-Result-Truncated" = String, description = "`true` when more sellers matched than the limit and only the first are listed, else `false`."),
        )),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn find(
    State(state): State<AppState>,
    Params(q): Params<SellersQuery>,
) -> Result<([(HeaderName, HeaderValue); 1], Within<SellerList>), ApiError> {
    let lookup = SellerLookup {
        tin: q.tin,
        psrn: q.psrn,
        url: q.url,
        marketplace: marketplace(q.marketplace)?,
        seller_id: q.seller_id,
    };
    let most = state.settings.lists.max_sellers_per_lookup;
    let found = sellers::find(&state.db, &lookup, most).await?;
    let body = SellerList {
        data: found.sellers.into_iter().map(Seller::from).collect(),
    };
    Ok((
        [sized::truncated(found.truncated)],
        sized::within(&state, body),
    ))
}
