//! `GET /v1/openapi.json`: the OpenAPI 3.1 document of REST v1, generated
//! from the handlers and shapes above, never written by hand.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{Object, Ref, Schema, SchemaType, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, RefOr, Required};
use utoipa::{Modify, OpenApi};

use super::{catalog, products, rate_limit, scrapes, sellers};
use crate::accounts::Scope;
use crate::query::MAX_TEXT_LEN;

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

/// Documents what the key of each keyed operation (one that answers 401)
/// must be: unexpired, and holding the scope the function gives for its
/// path (403 `insufficient_scope` without it), when it gives one. The
/// routers name the same scopes (`access::require_key`); a test walks both
/// documents and asks each operation with a key lacking its scope.
pub struct KeyScopes(pub fn(&str) -> Option<Scope>);

impl Modify for KeyScopes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let error = Content::new(Some(Ref::from_schema_name("ErrorBody")));
        for (path, item) in &mut openapi.paths.paths {
            let scope = (self.0)(path);
            let methods = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for operation in methods.into_iter().flatten() {
                let responses = &mut operation.responses.responses;
                let Some(RefOr::T(unauthorized)) = responses.get_mut("401") else {
                    continue;
                };
                unauthorized.description = "unauthorized: the API key is missing, malformed, \
                    unknown, revoked or expired (then the message says when it expired)."
                    .into();
                let Some(scope) = scope else { continue };
                let forbidden = ResponseBuilder::new()
                    .description(format!(
                        "insufficient_scope: the API key lacks the `{scope}` scope this \
                         operation needs."
                    ))
                    .content("application/json", error.clone())
                    .build();
                responses.insert("403".into(), RefOr::T(forbidden));
            }
        }
    }
}

/// Documents the rule every text parameter passes (see `params.rs`): a
/// plain string parameter without a limit of its own gets `maxLength`
/// [`MAX_TEXT_LEN`], and the description says the rest.
pub struct TextParameters;

impl Modify for TextParameters {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let rule = format!(
            " Text parameters are UTF-8 without NUL and at most {MAX_TEXT_LEN} characters long \
            (`maxLength`); any other is 400 invalid_parameter. A page number too large for 64 bits \
            reads as {}; a page past the end of a list is empty.",
            u64::MAX
        );
        openapi
            .info
            .description
            .get_or_insert_with(String::new)
            .push_str(&rule);
        let operations = openapi
            .paths
            .paths
            .values_mut()
            .flat_map(|item| &mut item.get);
        let parameters = operations.flat_map(|op| op.parameters.iter_mut().flatten());
        for parameter in parameters {
            if let Some(RefOr::T(Schema::Object(schema))) = &mut parameter.schema {
                let plain = schema.format.is_none() && schema.enum_values.is_none();
                let string = match &schema.schema_type {
                    SchemaType::Type(t) => *t == Type::String,
                    SchemaType::Array(types) => types.contains(&Type::String),
                    SchemaType::AnyValue => false,
                };
                if plain && string && schema.max_length.is_none() {
                    schema.max_length = Some(MAX_TEXT_LEN);
                }
            }
        }
    }
}

/// Documents conditional requests (`http::conditional`) on every GET: the
/// `If-None-Match` parameter, the `ETag` and `Cache-Control` of a 200, and
/// the 304 that answers a tag the client holds.
pub struct ConditionalRequests;

impl Modify for ConditionalRequests {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let if_none_match = ParameterBuilder::new()
            .name("If-None-Match")
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "ETags of answers the client holds (several headers form one list; `*` is any \
                 answer; a list of more than 64 tags or 8 KiB is not read); when one is this \
                 answer's, it is 304 Not Modified, which counts against the rate limit but \
                 charges no quota.",
            ))
            .schema(Some(Object::with_type(Type::String)))
            .build();
        let header = |description: &str| {
            HeaderBuilder::new()
                .schema(Object::with_type(Type::String))
                .description(Some(description))
                .build()
        };
        let etag = header("Weak tag of this answer, for If-None-Match.");
        let cache_control = header(
            "`private, no-cache` (revalidate with the ETag), or `private, max-age=N` for the \
             daily snapshots.",
        );
        let not_modified = ResponseBuilder::new()
            .description("The answer the client holds (If-None-Match) is current; no body.")
            .header("ETag", etag.clone())
            .header("Cache-Control", cache_control.clone())
            .build();
        let operations = openapi
            .paths
            .paths
            .values_mut()
            .flat_map(|item| &mut item.get);
        for operation in operations {
            operation
                .parameters
                .get_or_insert_with(Vec::new)
                .push(if_none_match.clone());
            let responses = &mut operation.responses.responses;
            if let Some(RefOr::T(ok)) = responses.get_mut("200") {
                ok.headers.insert("ETag".into(), etag.clone());
                ok.headers
                    .insert("Cache-Control".into(), cache_control.clone());
            }
            responses.insert("304".into(), RefOr::T(not_modified.clone()));
        }
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
            X-RateLimit-Reset (Unix seconds when the minute window ends). Every data endpoint needs a key \
            with the `read` scope (403 insufficient_scope without it); an expired key is 401. Every successful GET carries an \
            ETag; sent back in If-None-Match, an unchanged answer is 304 Not Modified, which counts against \
            the rate limit like any request (its answer is worked out to compare it) but charges no quota. \
            GET /rate_limit is free. An answer larger than the server's response size limit (16 MiB by \
            default) is 422 response_too_large: ask for a smaller page_size."
    ),
    servers((url = "/v1")),
    paths(
        products::list, products::get, products::price_history, sellers::find,
        catalog::categories, catalog::brands, scrapes::list, scrapes::get, scrapes::products,
        rate_limit::standing,
    ),
    modifiers(&BearerAuth, &TextParameters, &ConditionalRequests, &READ_SCOPE),
)]
pub struct ApiDoc;

/// Every operation but the free `GET /rate_limit` reads data.
const READ_SCOPE: KeyScopes = KeyScopes(|path| (path != "/rate_limit").then_some(Scope::Read));

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
