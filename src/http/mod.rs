//! What the HTTP surfaces (REST v1, GraphQL, the extension API) share: the
//! error type that becomes a response, admission of a caller (API key and
//! per-minute rate limit), and the watch that ends a revoked key's sockets.

pub mod access;
pub mod error;
pub mod revocations;

pub use access::{Admission, admit};
pub use error::ApiError;
