//! Calls from browser pages of other origins (CORS) to `/graphql` and
//! `/v1`, for dashboards served apart from the API. Allowed only for the
//! origins `VITRINA_CORS_ORIGINS` lists; with none (the default) nothing
//! is added, and browsers keep pages of other origins out.

use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, ETAG, IF_NONE_MATCH, RETRY_AFTER};
use axum::http::{HeaderName, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use tower::ServiceBuilder;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::config::CorsOrigin;
use crate::http::access::RATE_HEADERS;
use crate::http::sized::TRUNCATED_HEADER;
use crate::state::AppState;

/// How long a browser may reuse a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

/// `router`, answering preflights and marking its answers for `origins`.
pub fn allow(router: Router<AppState>, origins: &[CorsOrigin]) -> Router<AppState> {
    let Some(allowed) = allowed_origins(origins) else {
        return router;
    };
    let exposed = [ETAG, RETRY_AFTER, HeaderName::from_static(TRUNCATED_HEADER)]
        .into_iter()
        .chain(RATE_HEADERS.map(HeaderName::from_static));
    let cors = CorsLayer::new()
        .allow_origin(allowed)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([AUTHORIZATION, CONTENT_TYPE, IF_NONE_MATCH])
        .expose_headers(exposed.collect::<Vec<_>>())
        .max_age(PREFLIGHT_MAX_AGE);
    router.layer(
        ServiceBuilder::new()
            .layer(axum::middleware::from_fn(preflight_without_content))
            .layer(cors),
    )
}

/// Any origin for `*`, else the origins listed; `None` for none.
fn allowed_origins(origins: &[CorsOrigin]) -> Option<AllowOrigin> {
    if origins.is_empty() {
        return None;
    }
    if origins.contains(&CorsOrigin::Any) {
        return Some(AllowOrigin::any());
    }
    let exact = origins.iter().filter_map(|origin| match origin {
        CorsOrigin::Exact(value) => Some(value.clone()),
        CorsOrigin::Any => None,
    });
    Some(AllowOrigin::list(exact))
}

/// A preflight is answered 204 No Content (tower-http answers an empty
/// 200): it has no content, and clients and proxies read 204 as such.
async fn preflight_without_content(request: Request, next: Next) -> Response {
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(axum::http::header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = next.run(request).await;
    if preflight && response.status() == StatusCode::OK {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}
