//! The extension API (`/extension/v1`): what the browser-extension scraper
//! and its settings page call. Bearer auth like REST v1, but it writes:
//! scrape uploads and webhook subscriptions. Not part of the read-only v1 surface.

pub mod openapi;
mod scrapes;
mod webhooks;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::access;
use crate::server::AppState;

/// The extension routes, to be nested under `/extension/v1`.
pub fn router(state: AppState) -> Router<AppState> {
    let authenticated = Router::new()
        .merge(scrapes::router())
        .merge(webhooks::router())
        .route_layer(middleware::from_fn_with_state(state, require_key));
    Router::new()
        .route("/openapi.json", get(openapi::document))
        .merge(authenticated)
}

/// Admits the caller like REST v1 does and hands it to the handler.
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
