//! REST v1 (`/v1`): thin handlers that parse parameters, call the query
//! layer and map to the documented shapes. Read-only: GET only.

pub mod dto;
pub mod openapi;
pub(crate) mod params;

mod catalog;
mod products;
mod scrapes;
mod sellers;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::{ApiError, access};
use crate::server::AppState;

/// The v1 routes, to be nested under `/v1`.
pub fn router(state: AppState) -> Router<AppState> {
    let authenticated = Router::new()
        .route("/products", get(products::list))
        .route("/products/{id}", get(products::get))
        .route("/products/{id}/price-history", get(products::price_history))
        .route("/sellers", get(sellers::find))
        .route("/categories", get(catalog::categories))
        .route("/brands", get(catalog::brands))
        .route("/me/scrapes", get(scrapes::list))
        .route("/me/scrapes/{id}", get(scrapes::get))
        .route("/me/scrapes/{id}/products", get(scrapes::products))
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(middleware::from_fn_with_state(state, require_key));
    Router::new()
        .route("/openapi.json", get(openapi::document))
        .method_not_allowed_fallback(method_not_allowed)
        .merge(authenticated)
}

/// Admits the caller (key, rate limit), hands it to the handler, and adds the
/// rate-limit headers to whatever the handler answers.
async fn require_key(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    match access::admit(&state, request.headers()).await {
        Ok(admission) => {
            request.extensions_mut().insert(admission.caller);
            let mut response = next.run(request).await;
            access::rate_headers(&admission.rate, response.headers_mut());
            response
        }
        Err((error, rate)) => {
            let mut response = error.into_response();
            if let Some(rate) = rate {
                access::rate_headers(&rate, response.headers_mut());
            }
            response
        }
    }
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
