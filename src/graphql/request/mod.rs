//! What happens to a request before and around execution: the HTTP and
//! WebSocket endpoints (`transport.rs`) and responses (`response.rs`), the
//! document's limits, parse cache and persisted queries, each request's
//! share of the database pool, and what async-graphql leaves to do on its
//! answers (error codes, field order).

pub(super) mod cached;
pub(super) mod document_limits;
pub(super) mod error_codes;
pub(super) mod field_order;
pub(super) mod parsed;
pub(super) mod persisted;
pub(super) mod pool_share;
pub(super) mod response;
pub(super) mod transport;
