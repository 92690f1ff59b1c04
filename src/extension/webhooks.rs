//! `GET/POST /extension/v1/webhooks`, `DELETE /extension/v1/webhooks/{id}`,
//! `GET /extension/v1/webhooks/{id}/deliveries`.

use axum::Router;

use crate::server::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
}
