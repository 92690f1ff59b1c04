//! GraphQL tests.
