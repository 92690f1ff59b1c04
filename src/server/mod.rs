//! The HTTP application: shared state, the one route table, and serving.

mod health;

use std::future::Future;

use axum::{Router, routing::get};
use sea_orm::DatabaseConnection;
use tokio::net::TcpListener;

use crate::clock::SharedClock;

/// What every request handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub db: DatabaseConnection,
    pub clock: SharedClock,
    /// Base address clients reach the service at, without a trailing slash.
    pub public_url: String,
}

/// Every route of the service, in one table.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .with_state(state)
}

/// Serves until `shutdown` resolves, then finishes in-flight requests.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}
