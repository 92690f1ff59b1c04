//! The HTTP application: shared state, the one route table, and serving.

mod body_rate;
pub mod connections;
mod draining;
mod health;
pub mod middleware;

pub use draining::Draining;

use std::future::Future;
use std::sync::Arc;

use axum::{Router, routing::get};
use sea_orm::DatabaseConnection;
use tokio::net::TcpListener;

use crate::clock::SharedClock;
use crate::config::Settings;
use crate::events::SessionEvents;
use crate::graphql::Schemas;
use crate::http::ApiError;
use crate::http::revocations::Revocations;
use crate::limits::RateLimiter;

/// What every request handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub db: DatabaseConnection,
    pub clock: SharedClock,
    /// Base address clients reach the service at, without a trailing slash.
    pub public_url: String,
    pub settings: Settings,
    pub rate_limiter: Arc<RateLimiter>,
    pub graphql: Arc<Schemas>,
    /// Live session progress for GraphQL subscriptions.
    pub events: SessionEvents,
    /// The keys of open WebSockets, watched for revocation.
    pub revocations: Arc<Revocations>,
    /// Under `serve --demo`: the demo key, filled into GraphiQL and the
    /// dashboard (which is served only then).
    pub demo_key: Option<String>,
    /// Set once the server starts shutting down.
    pub draining: Draining,
}

impl AppState {
    pub fn new(
        db: DatabaseConnection,
        clock: SharedClock,
        public_url: String,
        settings: Settings,
    ) -> Self {
        AppState {
            clock,
            public_url,
            rate_limiter: Arc::new(RateLimiter::new(
                settings.limits.rate_per_minute,
                &settings.redis,
            )),
            graphql: Arc::new(Schemas::new(&settings.graphql)),
            events: {
                let events = SessionEvents::default();
                events.listen(&db);
                events
            },
            revocations: Revocations::start(&db),
            db,
            settings,
            demo_key: None,
            draining: Draining::default(),
        }
    }

    /// The state of `serve --demo`, whose pages carry `key`.
    pub fn with_demo_key(self, key: String) -> Self {
        AppState {
            demo_key: Some(key),
            ..self
        }
    }
}

/// Every route of the service, in one table.
pub fn router(state: AppState) -> Router {
    let routes = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .nest("/v1", crate::rest::router(state.clone()))
        .merge(crate::graphql::router())
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
