//! Answers within the response size limit (`VITRINA_MAX_RESPONSE_MB`): the
//! products a request reads are counted against its budget as they arrive
//! (`query::budget`), and the JSON written from them is written only up to
//! the limit, so an answer that would pass it is refused
//! (`response_too_large`) with no more than the limit held. Lists that
//! stop at their bound instead of refusing (a seller lookup, the snapshot
//! lists) say so with [`TRUNCATED_HEADER`].
//!
//! Every successful answer of REST v1 is written here: [`require_within`]
//! refuses one that is not (a handler that built its JSON with axum's
//! `Json`, with no bound), so an endpoint that forgets the limit fails its
//! first request instead of answering without one.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::ApiError;
use crate::query::budget::ResponseBudget;
use crate::state::AppState;
use crate::views::size::to_json_within;

/// The response header of a list cut at its bound: `true` when more
/// entries exist than the answer lists (a seller lookup over its limit, a
/// snapshot list over its entries or the answer's bytes), else `false`.
pub const TRUNCATED_HEADER: &str = "x-result-truncated";

/// [`TRUNCATED_HEADER`] saying whether a list was cut.
pub fn truncated(cut: bool) -> (HeaderName, HeaderValue) {
    let value = HeaderValue::from_static(if cut { "true" } else { "false" });
    (HeaderName::from_static(TRUNCATED_HEADER), value)
}

/// The budget of one answer of `state`'s server.
pub fn budget(state: &AppState) -> ResponseBudget {
    let sizes = &state.settings.sizes;
    ResponseBudget::new(sizes.max_response_bytes(), sizes.max_product_bytes())
}

/// `value` as the JSON body of an answer, refused past the limit.
pub fn within<T: Serialize>(state: &AppState, value: T) -> Within<T> {
    Within {
        value,
        limit: state.settings.sizes.max_response_bytes(),
    }
}

/// A JSON answer written only up to `limit` bytes; past it, the refusal.
pub struct Within<T> {
    value: T,
    limit: u64,
}

impl<T: Serialize> Within<T> {
    /// The JSON of the answer, or its refusal.
    pub fn to_bytes(&self) -> Result<Written, ApiError> {
        to_json_within(&self.value, self.limit)
            .map(Written)
            .map_err(|reached| ApiError::ResponseTooLarge {
                limit: self.limit,
                reached,
            })
    }
}

impl<T: Serialize> IntoResponse for Within<T> {
    fn into_response(self) -> Response {
        match self.to_bytes() {
            Ok(written) => written.into_response(),
            Err(refused) => refused.into_response(),
        }
    }
}

/// The JSON of an answer, written within the limit by [`Within::to_bytes`]
/// (the only way to make one).
pub struct Written(Vec<u8>);

impl Written {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Marks, in a response's extensions, an answer written here.
#[derive(Debug, Clone, Copy)]
struct Bounded;

impl IntoResponse for Written {
    fn into_response(self) -> Response {
        let json = HeaderValue::from_static("application/json");
        let mut response = ([(header::CONTENT_TYPE, json)], self.0).into_response();
        response.extensions_mut().insert(Bounded);
        response
    }
}

/// Middleware of REST v1 routes: a successful answer not written by
/// [`Within`] is logged and refused 500, since nothing bounded its size.
pub async fn require_within(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    if !response.status().is_success() || response.extensions().get::<Bounded>().is_some() {
        return response;
    }
    ApiError::internal(format_args!(
        "the answer of GET {path} was not written within the response size limit \
         (http::sized::within)"
    ))
    .into_response()
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tower::Service;

    use super::*;

    async fn status_of(router: Router) -> StatusCode {
        let mut router = router.route_layer(axum::middleware::from_fn(require_within));
        let request = Request::get("/answer").body(Body::empty()).unwrap();
        router.call(request).await.unwrap().status()
    }

    #[tokio::test]
    async fn only_answers_written_within_the_limit_pass() {
        let within = || async {
            Within {
                value: [1, 2, 3],
                limit: 64,
            }
        };
        let unbounded = || async { axum::Json([1, 2, 3]) };
        let refused = || async { ApiError::NotFound };
        let router = |route| Router::new().route("/answer", route);
        assert_eq!(status_of(router(get(within))).await, StatusCode::OK);
        assert_eq!(
            status_of(router(get(unbounded))).await,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(status_of(router(get(refused))).await, StatusCode::NOT_FOUND);
    }
}
