//! The agentic workflow engine: builds the step DAG from a validated workflow, schedules
//! steps eagerly, applies execution strategies and records runs.
//!
//! It does not parse YAML (that is `agentic-core`) and does not score (that is
//! `agentic-eval`). Nothing here is implemented yet; the execution-engine issue fills it.
