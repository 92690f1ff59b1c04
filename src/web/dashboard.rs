//! The demo dashboard at `/dashboard` (`serve --demo` only): a page, a
//! stylesheet and one script from `web/dashboard/`, with the demo key filled
//! into the page so it works on first open.

use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;

use crate::state::AppState;

const PAGE: &str = include_str!("../../web/dashboard/index.html");
const SCRIPT: &str = include_str!("../../web/dashboard/dashboard.js");
const STYLE: &str = include_str!("../../web/dashboard/dashboard.css");

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/dashboard", get(page))
        .route(
            "/dashboard/dashboard.js",
            get(|| async { super::own_file("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/dashboard/dashboard.css",
            get(|| async { super::own_file("text/css; charset=utf-8", STYLE) }),
        )
}

async fn page(State(state): State<AppState>) -> Html<String> {
    Html(PAGE.replace(
        "__API_KEY__",
        &super::graphiql::script_json(&state.demo_key),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_the_key_placeholder_once() {
        assert_eq!(PAGE.matches("__API_KEY__").count(), 1);
    }
}
