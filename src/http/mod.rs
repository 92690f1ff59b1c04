//! What the HTTP surfaces (REST v1, GraphQL, the extension API) share: the
//! error type that becomes a response, and admission of a caller (API key
//! and per-minute rate limit).

pub mod access;
pub mod error;

pub use access::{Admission, admit};
pub use error::ApiError;
