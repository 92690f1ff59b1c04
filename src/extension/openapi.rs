//! `GET /extension/v1/openapi.json`: the OpenAPI 3.1 document of the
//! extension API (scrape uploads with the scraped item format, webhook
//! subscriptions and their deliveries), generated from the code.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::OpenApi;

use super::{scrapes, webhooks};
use crate::accounts::Scope;
use crate::rest::openapi::{BearerAuth, KeyScopes};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Vitrina extension API",
        version = "1",
        description = "What the browser-extension scraper and its settings page call: scrape uploads \
            and webhook subscriptions. Bearer auth like REST v1; errors are `{\"error\": {\"code\", \"message\"}}`. \
            Uploads need a key with the `upload` scope, webhook settings one with the `webhooks` scope \
            (403 insufficient_scope without it); an expired key is 401."
    ),
    servers((url = "/extension/v1")),
    paths(
        scrapes::upload,
        webhooks::list,
        webhooks::create,
        webhooks::disable,
        webhooks::deliveries,
        webhooks::redeliver,
        webhooks::rotate_secret,
        webhooks::test
    ),
    modifiers(&BearerAuth, &SCOPES),
)]
pub struct ExtensionApiDoc;

/// `/scrapes` uploads; every other path is a webhook setting.
const SCOPES: KeyScopes = KeyScopes(|path| {
    Some(match path.starts_with("/scrapes") {
        true => Scope::Upload,
        false => Scope::Webhooks,
    })
});

/// The document, rendered once.
pub fn document_json() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        ExtensionApiDoc::openapi()
            .to_pretty_json()
            .unwrap_or_default()
    })
}

pub async fn document() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document_json(),
    )
}
