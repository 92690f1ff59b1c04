//! `GET /v1/openapi.json`: the OpenAPI 3.1 document of REST v1, generated
//! from the handlers and shapes above, never written by hand.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{catalog, products, scrapes, sellers};

/// Declares the `bearerAuth` security scheme.
pub struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearerAuth",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Vitrina REST v1",
        version = "1",
        description = "Read-only marketplace product data. Every endpoint needs `Authorization: Bearer <API_KEY>`. \
            Errors are `{\"error\": {\"code\", \"message\"}}`. `page` and `page_size` never fail: invalid values \
            fall back to 1 and 100. Every response carries X-RateLimit-Limit, X-RateLimit-Remaining and \
            X-RateLimit-Reset (Unix seconds when the minute window ends)."
    ),
    servers((url = "/v1")),
    paths(
        products::list, products::get, products::price_history, sellers::find,
        catalog::categories, catalog::brands, scrapes::list, scrapes::get, scrapes::products,
    ),
    modifiers(&BearerAuth),
)]
pub struct ApiDoc;

/// The document, rendered once.
pub fn document_json() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| ApiDoc::openapi().to_pretty_json().unwrap_or_default())
}

pub async fn document() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document_json(),
    )
}
