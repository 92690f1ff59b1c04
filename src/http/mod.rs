//! What the HTTP surfaces (REST v1, GraphQL, the extension API) share: the
//! error type that becomes a response, admission of a caller (API key
//! and per-minute rate limit), conditional GETs, and answers within the
//! response size limit.

pub mod access;
mod body_clock;
pub mod conditional;
pub mod error;
pub mod sized;

pub use access::{Admission, admit};
pub use error::ApiError;
