//! Requests by method, route and status, and how long they took to answer.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use metrics::{SharedString, counter, histogram};

use super::{HTTP_DURATION, HTTP_REQUESTS, enabled};

/// The route of a request that matched none (the raw path is never a label).
const UNMATCHED: &str = "(unmatched)";
/// The method of a request with a method HTTP does not define.
const OTHER_METHOD: &str = "(other)";

/// Middleware counting each request under its route (the template, e.g.
/// `/v1/products/{id}`) and timing it to its response head.
pub async fn record(request: Request, next: Next) -> Response {
    if !enabled() {
        return next.run(request).await;
    }
    let method = method_label(request.method());
    let route = match request.extensions().get::<MatchedPath>() {
        Some(path) => SharedString::from_owned(path.as_str().to_owned()),
        None => SharedString::const_str(UNMATCHED),
    };
    let started = Instant::now();
    let response = next.run(request).await;
    let seconds = started.elapsed().as_secs_f64();
    let status = response.status().as_u16().to_string();
    counter!(HTTP_REQUESTS, "method" => method, "route" => route.clone(), "status" => status)
        .increment(1);
    histogram!(HTTP_DURATION, "method" => method, "route" => route).record(seconds);
    response
}

/// The method's name when HTTP defines it; clients may send any token.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => OTHER_METHOD,
    }
}
