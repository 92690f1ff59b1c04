//! Answers within the response size limit (`VITRINA_MAX_RESPONSE_MB`): the
//! products a request reads are counted against its budget as they arrive
//! (`query::budget`), and the JSON written from them is written only up to
//! the limit, so an answer that would pass it is refused
//! (`response_too_large`) with no more than the limit held.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::ApiError;
use crate::query::budget::ResponseBudget;
use crate::state::AppState;
use crate::views::size::to_json_within;

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
    pub fn to_bytes(&self) -> Result<Vec<u8>, ApiError> {
        to_json_within(&self.value, self.limit).map_err(|reached| ApiError::ResponseTooLarge {
            limit: self.limit,
            reached,
        })
    }
}

impl<T: Serialize> IntoResponse for Within<T> {
    fn into_response(self) -> Response {
        match self.to_bytes() {
            Ok(bytes) => {
                let json = HeaderValue::from_static("application/json");
                ([(header::CONTENT_TYPE, json)], bytes).into_response()
            }
            Err(refused) => refused.into_response(),
        }
    }
}
