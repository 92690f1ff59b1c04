//! Vitrina serves marketplace product data to v1 REST clients and GraphQL
//! dashboards from one query layer, and merges scraper uploads in background jobs.
//!
//! Modules by part of the system:
//! - [`cli`], [`config`]: the `vitrina` command and its typed configuration;
//! - [`db`]: connecting to SQLite or PostgreSQL and migrating;
//! - [`accounts`]: accounts and API keys;
//! - [`server`]: the HTTP application and its routes;
//! - [`web`]: the browser pages: GraphiQL with its built-in assets, the demo dashboard;
//! - [`seed`]: the deterministic demo and benchmark dataset;
//! - [`jobs`]: background work over the database (snapshots, ...);
//! - [`metrics`]: Prometheus metrics on a listener of their own;
//! - [`clock`]: the injectable time source of jobs.

// The futures of GraphQL resolvers nest deeply (a resolver awaits the query
// layer, which awaits sea-orm, ...): proving them `Send` takes more steps than
// the default limit of 128 allows since the query layer pages through one
// generic function (`query::offset_page`).
#![recursion_limit = "256"]

pub mod accounts;
pub mod cli;
pub mod clock;
pub mod config;
pub mod db;
pub mod error;
pub mod events;
pub mod extension;
pub mod graphql;
pub mod http;
pub mod jobs;
pub mod limits;
pub mod metrics;
pub mod query;
pub mod rest;
pub mod seed;
pub mod server;
pub mod text;
pub mod web;
pub mod webhooks;

pub use error::Error;
