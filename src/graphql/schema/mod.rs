//! The schema's types and how their fields read: the query and
//! subscription roots, products, sellers, sessions, Relay's `Node` and
//! connections; dataloaders and the products of one page; and what a
//! resolver reaches through the context (`context.rs`, `reads.rs`).

pub(super) mod context;
pub(super) mod inline;
pub(super) mod loaders;
pub(super) mod node;
pub(super) mod page;
pub(super) mod product;
pub(super) mod query;
pub(super) mod reads;
pub(super) mod relay_connection;
pub(super) mod seller;
pub(super) mod series;
pub(super) mod session;
pub(super) mod subscription;
pub(super) mod trends;
