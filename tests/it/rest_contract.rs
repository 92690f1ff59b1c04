//! REST v1 tests.
