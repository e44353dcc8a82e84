//! Integration tests of agentic-eval: published schemas, property tests and fixtures.

mod properties;
mod schema;
mod snapshots;
