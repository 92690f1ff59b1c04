//! Integration tests: the real application over HTTP and the real `vitrina`
//! binary, on a fresh database per test (SQLite, or PostgreSQL when
//! `TEST_DATABASE_URL` is set).

// Shared test support. Until every test module of the branch uses all of it,
// some helpers are unused; drop these allows once they all are.
#[allow(dead_code)]
mod fixtures;
#[allow(dead_code)]
mod helpers;

mod cli;
mod cli_errors;
mod codegen_docs;
mod conditional;
mod connections;
mod cors;
mod counts;
mod db_time;
mod db_unavailable;
mod deep_pages;
mod foundation;
mod graphql_batch_limits;
mod graphql_batching;
mod graphql_catalog;
mod graphql_connections;
mod graphql_error_codes;
mod graphql_errors;
mod graphql_fields;
mod graphql_http;
mod graphql_internals;
mod graphql_limits;
mod graphql_node;
mod graphql_persisted;
mod graphql_persisted_shares;
mod graphql_reads;
mod graphql_schema;
mod graphql_sessions;
mod healthcheck;
mod hostile_conditional;
mod hostile_connections;
mod hostile_costs;
mod hostile_numbers;
mod hostile_params;
mod hostile_request_id;
mod hostile_sellers;
mod hostile_sizes;
mod hostile_snapshots;
mod idempotency;
mod known_keys;
mod merge_outage;
mod metrics;
mod modules;
mod pipeline;
mod playground;
mod playground_cdn;
mod poison;
mod price_changed;
mod price_filters;
mod price_series;
mod price_trends;
mod product_orders;
mod product_stats;
mod rate_redis;
mod release;
mod rest_access;
mod rest_contract;
mod rest_products;
mod rest_sessions;
mod retention_batches;
mod seeding;
mod serve;
mod shutdown;
mod unmergeable_rows;
mod visible_limits;
mod watch_list;
mod webhook_url_length;
mod webhooks;
mod ws;
