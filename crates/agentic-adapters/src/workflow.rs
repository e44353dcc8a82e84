//! The workflow port: something that runs a whole workflow and returns its result.
//!
//! The agentic engine implements it; adapters for other frameworks (a LangGraph or MAF
//! program run as an external process) implement it too, so that the same workflow and
//! dataset can be run and scored through either.

use std::sync::Arc;

use agentic_core::{ValidatedWorkflow, WorkflowResult};
use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::sink::EventSink;

/// Why a workflow could not be run at all (a run that ran and failed is a
/// [`WorkflowResult`] with a failed status, not an error).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkflowError {
    /// The inputs do not fit the workflow.
    #[error("invalid inputs for workflow `{workflow}`: {}", reasons.join("; "))]
    InvalidInputs {
        /// The workflow.
        workflow: String,
        /// One reason per problem.
        reasons: Vec<String>,
    },
    /// The workflow needs something this adapter does not have (an unknown tool, an
    /// experimental opt-in, a missing provider).
    #[error("workflow `{workflow}` cannot run here: {reason}")]
    Unsupported {
        /// The workflow.
        workflow: String,
        /// What is missing and how to provide it.
        reason: String,
    },
    /// Setting up the run failed (run directory, workspace).
    #[error("cannot set up the run of workflow `{workflow}`: {reason}")]
    Setup {
        /// The workflow.
        workflow: String,
        /// What failed.
        reason: String,
    },
}

/// Runs whole workflows.
#[async_trait]
pub trait WorkflowAdapter: Send + Sync {
    /// A short name for logs and reports, for example `agentic` or `langgraph`.
    fn name(&self) -> &str;

    /// Runs `workflow` once with `inputs`, reporting canonical events on `events`.
    async fn run(
        &self,
        workflow: &ValidatedWorkflow,
        inputs: Map<String, Value>,
        events: Arc<dyn EventSink>,
    ) -> Result<WorkflowResult, WorkflowError>;
}
