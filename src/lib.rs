//! Vitrina serves marketplace product data to v1 REST clients and GraphQL
//! dashboards from one query layer, and merges scraper uploads in background jobs.
//!
//! The modules, top-down by layer: each uses only modules listed after it
//! (`tests/it/modules.rs` keeps them free of cycles).
//!
//! Entry points:
//! - [`cli`]: the `vitrina` command and its subcommands;
//! - [`app`]: the service put together (state, routes, jobs, shutdown), for `serve` and the tests;
//! - [`seed`]: the deterministic demo and benchmark dataset;
//! - [`server`]: the HTTP application: the one route table, its middleware, serving;
//!
//! HTTP surfaces:
//! - [`extension`]: the extension API (`/extension/v1`): scraper uploads, webhook subscriptions;
//! - [`rest`]: REST v1 (`/v1`), read-only, and its OpenAPI document;
//! - [`graphql`]: GraphQL (`/graphql`): the schema, its resolvers, its HTTP and WebSocket transport;
//! - [`web`]: the browser pages: GraphiQL with its built-in assets, the demo dashboard;
//! - [`http`]: what the surfaces share: the error that becomes a response, admission of a caller;
//! - [`views`]: the output shapes REST and GraphQL share;
//! - [`state`]: the application state every handler reaches;
//!
//! Domain and background work:
//! - [`jobs`]: background work over the database (merging uploads, snapshots, retention);
//! - [`webhooks`]: webhook subscriptions and the delivery of their events;
//! - [`limits`]: the per-account rate limit and daily data quota;
//! - [`accounts`]: accounts and API keys;
//! - [`query`]: the one query layer: filters, paging and ordering over the entities;
//! - [`events`]: live session progress, for GraphQL subscriptions, and the writes of every process;
//! - [`cache`]: answers kept until the data they were worked out from changes;
//! - [`metrics`]: Prometheus metrics on a listener of their own;
//!
//! Foundations:
//! - [`db`]: connecting to SQLite or PostgreSQL and migrating;
//! - [`config`]: the typed configuration: flags with environment overrides;
//! - [`text`]: text normalization shared by what is stored and what is searched;
//! - [`clock`]: the injectable time source;
//! - [`error`]: errors of the process level: start-up, CLI commands, jobs.

// The futures of GraphQL resolvers nest deeply (a resolver awaits the query
// layer, which awaits sea-orm, ...): proving them `Send` takes more steps than
// the default limit of 128 allows since the query layer pages through one
// generic function (`query::offset_page`).
#![recursion_limit = "256"]

pub mod accounts;
pub mod app;
pub mod cache;
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
pub mod state;
pub mod text;
pub mod views;
pub mod web;
pub mod webhooks;

pub use error::Error;
