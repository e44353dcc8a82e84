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
