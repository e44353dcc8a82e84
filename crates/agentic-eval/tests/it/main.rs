//! Integration tests of agentic-eval: published schemas, property tests and fixtures.

mod compliance_fuzz;
mod properties;
mod schema;
mod snapshots;
