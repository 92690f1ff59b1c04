//! `POST /extension/v1/scrapes`.

use axum::Router;

use crate::server::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
}
