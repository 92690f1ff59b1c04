//! The extension API (`/extension/v1`): what the browser-extension scraper
//! and its settings page call. Bearer auth like REST v1, but it writes:
//! scrape uploads (scope `upload`) and webhook subscriptions (scope
//! `webhooks`). Not part of the read-only v1 surface.

pub mod openapi;
mod scrapes;
mod webhooks;

use axum::Router;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::accounts::Scope;
use crate::http::{ApiError, access};
use crate::state::AppState;

/// The extension routes, to be nested under `/extension/v1`.
pub fn router(state: AppState) -> Router<AppState> {
    // Uploads and webhook settings each need their own scope, so that a key
    // given to a scraper cannot point deliveries elsewhere, and the reverse.
    let keyed = |routes: Router<AppState>, scope: Scope| {
        routes.route_layer(middleware::from_fn_with_state(
            (state.clone(), scope),
            access::require_key,
        ))
    };
    let authenticated = Router::new()
        .merge(keyed(scrapes::router(), Scope::Upload))
        .merge(keyed(webhooks::router(), Scope::Webhooks));
    Router::new()
        .route("/openapi.json", get(openapi::document))
        .merge(authenticated)
        .layer(middleware::map_response(method_not_allowed_as_error))
}

/// axum answers a method a path does not take with an empty 405 (its
/// `Allow` header is added last, by the outermost router); this gives it the
/// error body of every other answer.
async fn method_not_allowed_as_error(response: Response) -> Response {
    if response.status() != StatusCode::METHOD_NOT_ALLOWED {
        return response;
    }
    ApiError::MethodNotAllowed { allow: None }.into_response()
}
