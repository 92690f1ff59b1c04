//! Layers every response passes through: request ids (a client's kept only
//! when [`super::request_id`] accepts it), structured access
//! logs, request metrics, compression when the client asks for it, bounds
//! on request bodies (size and pace), and a panic answered as an error
//! instead of a dropped connection.

use std::any::Any;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, Response};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::classify::ServerErrorsFailureClass;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::map_response_body::MapResponseBodyLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tracing::Span;

use super::body_rate::{self, BodyRate};
use super::request_id::{self, REQUEST_ID};
use crate::config::HttpConfig;

/// Request bodies above this are refused with 413 `payload_too_large`; the
/// largest body any endpoint takes is a scrape upload.
pub const MAX_BODY_BYTES: usize = 8 << 20;

/// Wraps the router in one stack, outermost first: a request id is set (or
/// the client's kept when it is short and safe to log), logged with the request and echoed in the response.
/// One `ServiceBuilder` layer instead of a `Router::layer` per layer: axum
/// boxes each of those around every route, and each box is cloned per
/// request at every level below it (their cost grew with the square of
/// their number).
pub fn apply(router: Router, http: &HttpConfig) -> Router {
    let trace = TraceLayer::new_for_http()
        .make_span_with(|request: &Request<Body>| {
            let id = request.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("");
            tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id = %id)
        })
        .on_response(|response: &Response<_>, latency: Duration, _span: &Span| {
            tracing::info!(status = response.status().as_u16(), latency_ms = latency.as_millis() as u64, "served");
        })
        .on_failure(|class: ServerErrorsFailureClass, _latency: Duration, _span: &Span| {
            tracing::warn!(%class, "request failed");
        });
    let max_request_id = http.http_max_request_id_chars;
    router.layer(
        ServiceBuilder::new()
            .map_request(move |mut request: Request<Body>| {
                request_id::drop_unacceptable(&mut request, max_request_id);
                request
            })
            .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
            .layer(trace)
            .layer(axum::middleware::from_fn(crate::metrics::http::record))
            .layer(PropagateRequestIdLayer::new(REQUEST_ID))
            .layer(CompressionLayer::new())
            .layer(axum::middleware::map_response(json_payload_too_large))
            .layer(MapResponseBodyLayer::new(Body::new))
            // The bound on every body is the one below; axum's extractors
            // keep their own (2 MB) unless told it is enough.
            .layer(DefaultBodyLimit::disable())
            .layer(axum::middleware::from_fn_with_state(
                BodyRate::new(http),
                body_rate::enforce,
            ))
            .layer(CatchPanicLayer::custom(internal_error))
            .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES)),
    )
}

/// The body limit answers 413 in plain text; every error here is JSON.
async fn json_payload_too_large(response: axum::response::Response) -> axum::response::Response {
    use axum::response::IntoResponse;
    if response.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        return crate::http::ApiError::PayloadTooLarge.into_response();
    }
    response
}

/// A panic while serving: logged with its message, answered 500
/// `internal_error` without it.
fn internal_error(panic: Box<dyn Any + Send>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let message = crate::error::panic_message(&*panic);
    crate::http::ApiError::internal(format_args!("request handler panicked: {message}"))
        .into_response()
}
