//! Integration tests: the real application over HTTP and the real `vitrina`
//! binary, on a fresh database per test (SQLite, or PostgreSQL when
//! `TEST_DATABASE_URL` is set).

mod fixtures;
mod helpers;

mod cli;
mod foundation;
mod rest_access;
mod rest_contract;
mod rest_products;
mod rest_sessions;
