//! REST v1 (`/v1`): thin handlers that parse parameters, call the query
//! layer and map to the documented shapes. Read-only: GET only. Every
//! answer is written within the response size limit (`http::sized`); the
//! router refuses one that is not.

pub mod openapi;
pub(crate) mod params;

mod cached;
mod catalog;
mod products;
mod rate_limit;
mod scrapes;
mod sellers;

use axum::Router;
use axum::middleware;
use axum::routing::get;

use crate::accounts::Scope;
use crate::http::{ApiError, access, conditional, sized};
use crate::state::AppState;
use cached::Audience;

/// The v1 routes, to be nested under `/v1`.
pub fn router(state: AppState) -> Router<AppState> {
    // Kept answers were checked for size when first written.
    let kept_for = |routes: Router<AppState>, audience| {
        routes
            .route_layer(middleware::from_fn(sized::require_within))
            .route_layer(middleware::from_fn_with_state(
                (state.clone(), audience),
                cached::answer,
            ))
    };
    let catalog = Router::new()
        .route("/products", get(products::list))
        .route("/products/{id}", get(products::get))
        .route("/products/{id}/price-history", get(products::price_history))
        .route("/sellers", get(sellers::find))
        .route("/categories", get(catalog::categories))
        .route("/brands", get(catalog::brands));
    let own = Router::new()
        .route("/me/scrapes", get(scrapes::list))
        .route("/me/scrapes/{id}", get(scrapes::get))
        .route("/me/scrapes/{id}/products", get(scrapes::products));
    let authenticated = kept_for(catalog, Audience::Everyone)
        .merge(kept_for(own, Audience::Caller))
        .method_not_allowed_fallback(method_not_allowed)
        // Inside the key check, which gives back the request of a 304.
        .route_layer(middleware::from_fn(conditional::revalidate))
        .route_layer(middleware::from_fn_with_state(
            (state, Scope::Read),
            access::require_key,
        ));
    let free = Router::new()
        .route("/rate_limit", get(rate_limit::standing))
        .route_layer(middleware::from_fn(sized::require_within));
    // The OpenAPI document: the same bytes for every caller, rendered once
    // from the code, not an answer of data.
    Router::new()
        .route("/openapi.json", get(openapi::document))
        .merge(free)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(middleware::from_fn(conditional::revalidate))
        .merge(authenticated)
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed { allow: Some("GET") }
}
