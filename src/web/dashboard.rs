//! The demo dashboard at `/dashboard` (`serve --demo` only): a page, a
//! stylesheet and its script modules from `web/dashboard/`, with the demo key
//! filled into the page so it works on first open.

use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;

use crate::state::AppState;

const PAGE: &str = include_str!("../../web/dashboard/index.html");

/// The files the page loads: their path under `/dashboard/`, type and text.
const FILES: &[(&str, &str, &str)] = &[
    (
        "dashboard.css",
        "text/css; charset=utf-8",
        include_str!("../../web/dashboard/dashboard.css"),
    ),
    (
        "dashboard.js",
        JS,
        include_str!("../../web/dashboard/dashboard.js"),
    ),
    ("api.js", JS, include_str!("../../web/dashboard/api.js")),
    ("chart.js", JS, include_str!("../../web/dashboard/chart.js")),
    (
        "queries.js",
        JS,
        include_str!("../../web/dashboard/queries.js"),
    ),
];
const JS: &str = "text/javascript; charset=utf-8";

pub fn router() -> Router<AppState> {
    FILES.iter().fold(
        Router::new().route("/dashboard", get(page)),
        |router, &(name, content_type, text)| {
            router.route(
                &format!("/dashboard/{name}"),
                get(move || async move { super::own_file(content_type, text) }),
            )
        },
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

    /// Every file in `web/dashboard/` is served, so a new module cannot be
    /// forgotten here (the page would load it and get a 404).
    #[test]
    fn every_dashboard_file_is_served() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/web/dashboard");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name != "index.html")
            .collect();
        on_disk.sort();
        let mut served: Vec<&str> = FILES.iter().map(|(name, ..)| *name).collect();
        served.sort_unstable();
        assert_eq!(on_disk, served);
    }
}
