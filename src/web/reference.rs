//! The API reference at `GET /docs`: both OpenAPI documents
//! (`/v1/openapi.json` and `/extension/v1/openapi.json`) rendered by
//! Swagger UI. Its packages are pinned and served like GraphiQL's
//! ([`super::assets`]): from the binary, or from a CDN under the same
//! hashes when the binary was built without npm, and the page then says so.
//! Its start-up script is a file of ours (`web/docs/vitrina-docs.js`).

use axum::extract::State;
use axum::response::{Html, Response};
use serde::Serialize;

use super::assets::{self, Page};
use super::graphiql::{asset_source, script_json};
use crate::state::AppState;

const SCRIPT: &str = include_str!("../../web/docs/vitrina-docs.js");

/// One document the page shows, under its name in the page's picker.
#[derive(Serialize)]
struct Document {
    url: &'static str,
    name: &'static str,
}

/// The documents, REST v1 first.
const DOCUMENTS: [Document; 2] = [
    Document {
        url: "/v1/openapi.json",
        name: "REST v1",
    },
    Document {
        url: "/extension/v1/openapi.json",
        name: "Extension API",
    },
];

/// What the page's script reads from `#vitrina-config`.
#[derive(Serialize)]
struct PageConfig<'a> {
    assets: &'a str,
    documents: &'a [Document],
}

/// `GET /docs`.
pub async fn show(State(state): State<AppState>) -> Html<String> {
    let source = asset_source(&state.settings.graphql);
    let base = source.base();
    let (styles, scripts) = assets::tags(Page::ApiReference, base);
    let notice = source.notice_html(Page::ApiReference);
    let config = script_json(&PageConfig {
        assets: base,
        documents: &DOCUMENTS,
    });
    Html(format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Vitrina API reference</title>
<!-- Swagger UI and its licence: /graphiql/assets/LICENSES.txt -->
{styles}<style>
body {{ margin: 0; }}
#vitrina-assets-notice {{ margin: 0; padding: 4px 8px; font: 13px/1.4 system-ui, sans-serif; background: #fff8e1; border-bottom: 1px solid #e0c97f; }}
.vitrina-failed {{ font: 16px/1.5 system-ui, sans-serif; padding: 2rem; color: #b00020; }}
</style>
</head>
<body>
{notice}<div id="swagger-ui">Loading the API reference...</div>
<noscript>The API reference needs JavaScript; the documents are at /v1/openapi.json and /extension/v1/openapi.json.</noscript>
<script id="vitrina-config" type="application/json">{config}</script>
{scripts}<script src="/docs/vitrina-docs.js"></script>
</body>
</html>
"#
    ))
}

/// `GET /docs/vitrina-docs.js`.
pub async fn script() -> Response {
    super::own_file("text/javascript; charset=utf-8", SCRIPT)
}
