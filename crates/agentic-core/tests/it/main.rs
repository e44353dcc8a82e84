//! Integration tests of agentic-core: data-driven workflow fixtures with snapshots.

mod fixtures;
