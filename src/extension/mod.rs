//! The extension API (`/extension/v1`): what the browser-extension scraper
//! and its settings page call. Bearer auth like REST v1, but it writes:
//! scrape uploads and webhook subscriptions. Not part of the read-only v1 surface.

pub mod openapi;
mod scrapes;
mod webhooks;

use axum::Router;
use axum::middleware;
use axum::routing::get;

use crate::http::access;
use crate::server::AppState;

/// The extension routes, to be nested under `/extension/v1`.
pub fn router(state: AppState) -> Router<AppState> {
    let authenticated = Router::new()
        .merge(scrapes::router())
        .merge(webhooks::router())
        .route_layer(middleware::from_fn_with_state(state, access::require_key));
    Router::new()
        .route("/openapi.json", get(openapi::document))
        .merge(authenticated)
}
