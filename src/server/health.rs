//! Probes for operators and load balancers.

use axum::{Json, extract::State, http::StatusCode};
use serde_json::{Value, json};

use crate::state::AppState;

/// The process is up, and which version it runs (as `vitrina --version`
/// prints it), so an operator can tell the replicas of a rollout apart.
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

/// The database can serve requests and the server is not shutting down;
/// 503 otherwise: `draining` from the moment a shutdown starts so that load
/// balancers send nothing more, `unavailable` while the database is out of
/// reach or (SQLite) its write lock is held elsewhere ([`crate::db::ready`]).
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    if state.draining.is_draining() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "draining" })),
        )
    } else if crate::db::ready(&state.db).await {
        (StatusCode::OK, Json(json!({ "status": "ready" })))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "unavailable" })),
        )
    }
}
