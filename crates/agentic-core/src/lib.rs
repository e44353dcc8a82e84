//! The agentic data model: workflow YAML, `${...}` expressions, validation diagnostics,
//! datasets, run results and canonical events.
//!
//! **Architecture Invariant:** agentic-core does no IO. It parses a `&str` into a workflow and
//! never opens files, spawns processes or calls the network; callers read files and pass text.
//! It depends on no async runtime, HTTP client, Docker client or database driver (a tidy test
//! checks this with `cargo tree`).

pub mod dataset;
pub mod diagnostic;
pub mod document;
pub mod event;
pub mod expr;
pub mod json_scan;
pub mod json_strict;
pub mod result;
pub mod validate;
pub mod workflow;
pub mod yaml;

pub use dataset::{
    Dataset, DatasetDescriptor, Sample, adapt_sample_to_workflow_inputs, check_inputs, match_workflow_dataset,
};
pub use diagnostic::{Diagnostic, Position, Severity};
pub use event::{CanonicalEvent, EventStatus, EventType};
pub use result::{StepError, StepResult, StepStatus, WorkflowResult};
pub use validate::{ValidatedWorkflow, WorkflowLoad, load_workflow};
pub use workflow::{ErrorClass, RunMetric, ScoreSource, Step, StepKind, Workflow};

/// `seconds` (a timeout, a wait, a deadline from a file or a service) as a duration: negative
/// and NaN as zero, beyond what a `Duration` holds (or infinite) as the longest one, never a
/// panic as `Duration::from_secs_f64` would.
pub fn seconds_to_duration(seconds: f64) -> std::time::Duration {
    std::time::Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(std::time::Duration::MAX)
}
