//! The HTTP application: the one route table, and serving.

mod body_rate;
pub mod connections;
mod cors;
mod fairness;
mod health;
pub mod middleware;
pub mod request_id;

use std::future::Future;

use axum::{Router, routing::get};
use tokio::net::TcpListener;

use crate::http::ApiError;
use crate::state::AppState;

/// Every route of the service, in one table.
pub fn router(state: AppState) -> Router {
    let origins = &state.settings.http.cors_origins;
    let routes = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .nest(
            "/v1",
            cors::allow(crate::rest::router(state.clone()), origins),
        )
        .merge(cors::allow(crate::graphql::router(state.clone()), origins))
        .merge(crate::web::router(state.demo_key.is_some()))
        .nest("/extension/v1", crate::extension::router(state.clone()))
        .fallback(not_found);
    let http = state.settings.http.clone();
    middleware::apply(routes.with_state(state), &http)
}

async fn not_found() -> ApiError {
    ApiError::NotFound
}

/// Serves until `shutdown` resolves, then drains `state` and finishes the
/// requests in flight within the grace period; every connection is bounded
/// as [`connections`] describes.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let http = state.settings.http.clone();
    let draining = state.draining.clone();
    let shutdown = async move {
        shutdown.await;
        draining.start();
    };
    connections::serve(listener, router(state), &http, shutdown).await
}
