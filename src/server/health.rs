//! Probes for operators and load balancers.

use axum::{Json, extract::State, http::StatusCode};
use serde_json::{Value, json};

use super::AppState;

/// The process is up.
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The database answers; 503 otherwise.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    if crate::db::ping(&state.db).await {
        (StatusCode::OK, Json(json!({ "status": "ready" })))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "unavailable" })),
        )
    }
}
