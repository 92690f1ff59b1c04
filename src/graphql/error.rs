//! GraphQL errors: the same [`ApiError`] situations as REST, with the code
//! upper-cased in `extensions.code` and no internal text.

use async_graphql::ErrorExtensions;

use crate::http::ApiError;
use crate::query::QueryError;

/// Converts any error of the lower layers into a GraphQL error.
/// Refusals that can be retried also carry `extensions.retryAfter` (seconds).
pub fn gql(err: impl Into<ApiError>) -> async_graphql::Error {
    let err: ApiError = err.into();
    let code = err.code().to_uppercase();
    let retry_after = err.retry_after();
    async_graphql::Error::new(err.message()).extend_with(|_, ext| {
        ext.set("code", code);
        if let Some(seconds) = retry_after {
            ext.set("retryAfter", seconds);
        }
    })
}

impl From<QueryError> for async_graphql::Error {
    fn from(err: QueryError) -> Self {
        gql(err)
    }
}

impl From<ApiError> for async_graphql::Error {
    fn from(err: ApiError) -> Self {
        gql(err)
    }
}
