//! What Vitrina serves to browsers besides the API: GraphiQL at
//! `GET /graphql` (the page is answered by the GraphQL endpoint, its scripts
//! here), the API reference at `GET /docs` and, under `serve --demo`, a
//! small dashboard built on the GraphQL API as a frontend would build it. Everything these pages load comes from
//! the binary, so they work with no internet.

pub mod assets;
mod dashboard;
pub mod graphiql;
mod reference;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::AppState;

/// The browser routes; the dashboard only when there is a demo key to put in it.
pub fn router(demo: bool) -> Router<AppState> {
    let router = Router::new()
        .route("/graphiql/vitrina-graphiql.js", get(graphiql::script))
        .route("/docs", get(reference::show))
        .route("/docs/vitrina-docs.js", get(reference::script))
        .route("/graphiql/assets/LICENSES.txt", get(assets::licences))
        .route("/graphiql/assets/{*path}", get(assets::serve));
    if demo {
        router.merge(dashboard::router())
    } else {
        router
    }
}

/// A file of ours: small, and revalidated so an upgrade shows at once.
fn own_file(content_type: &'static str, body: impl IntoResponse) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}
