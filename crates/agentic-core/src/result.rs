//! Run results shared by the engine, the scoring engine and the server.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::workflow::{ErrorClass, StepKind};

/// The state of a step, or of a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started yet.
    Pending,
    /// Started and not finished.
    Running,
    /// Finished and did what it should.
    Succeeded,
    /// Finished and its own logic failed (non-zero exit, missing required output).
    Failed,
    /// Could not run properly: the runtime, adapter or provider broke.
    Errored,
    /// Ran out of time.
    TimedOut,
    /// Cancelled before it finished.
    Cancelled,
    /// Did not run: its `when` was false or a dependency did not succeed.
    Skipped,
}

impl StepStatus {
    /// True once the status can no longer change.
    pub fn is_terminal(self) -> bool {
        !matches!(self, StepStatus::Pending | StepStatus::Running)
    }

    /// True for outcomes that count as a failure of the step.
    pub fn is_failure(self) -> bool {
        matches!(self, StepStatus::Failed | StepStatus::Errored | StepStatus::TimedOut | StepStatus::Cancelled)
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::Running => "running",
            StepStatus::Succeeded => "succeeded",
            StepStatus::Failed => "failed",
            StepStatus::Errored => "errored",
            StepStatus::TimedOut => "timed_out",
            StepStatus::Cancelled => "cancelled",
            StepStatus::Skipped => "skipped",
        }
    }
}

/// Why a step did not succeed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepError {
    /// The error class; retry policies match on it.
    pub class: ErrorClass,
    /// What went wrong, for people.
    pub message: String,
    /// A specific type, for example `missing_required_output` or `nonzero_exit`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
}

/// The result of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepResult {
    /// The step name.
    pub name: String,
    /// The step kind.
    pub kind: StepKind,
    /// Final status.
    pub status: StepStatus,
    /// Whether a failure of this step fails the `no_critical_step_failures` gate.
    #[serde(default = "critical_default")]
    pub critical: bool,
    /// Outputs by name (command steps: `exit_code`, `stdout`, `stderr`, `json`).
    #[serde(default)]
    pub outputs: Map<String, Value>,
    /// Why it did not succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StepError>,
    /// Attempts made (0 when skipped).
    #[serde(default)]
    pub attempts: u32,
    /// When the first attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    /// When the step reached its final status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<DateTime<Utc>>,
    /// Time from start to end, in milliseconds.
    #[serde(default)]
    pub duration_ms: f64,
    /// Time between becoming ready and starting, in milliseconds.
    #[serde(default)]
    pub queue_wait_ms: f64,
    /// The model (or tier) used by an agent step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Extra facts, for example token usage.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

fn critical_default() -> bool {
    true
}

impl StepResult {
    /// A result with the given status and nothing else.
    pub fn new(name: impl Into<String>, kind: StepKind, status: StepStatus) -> StepResult {
        StepResult {
            name: name.into(),
            kind,
            status,
            critical: true,
            outputs: Map::new(),
            error: None,
            attempts: 0,
            started_at: None,
            ended_at: None,
            duration_ms: 0.0,
            queue_wait_ms: 0.0,
            model: None,
            metadata: Map::new(),
        }
    }
}

/// The result of running a workflow once (one attempt of a strategy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowResult {
    /// The run id.
    pub run_id: String,
    /// The workflow name.
    pub workflow: String,
    /// The workflow version.
    #[serde(default)]
    pub workflow_version: String,
    /// Overall status: `succeeded` only when no critical step failed and the run was not
    /// cancelled or timed out.
    pub overall_status: StepStatus,
    /// Every step, in the workflow's order.
    pub steps: Vec<StepResult>,
    /// Resolved workflow outputs by name (`null` when they did not resolve).
    #[serde(default)]
    pub outputs: Map<String, Value>,
    /// Required outputs that resolved to `null`; never empty when an output is missing.
    #[serde(default)]
    pub unresolved_required_outputs: Vec<String>,
    /// The inputs the run used, after defaults.
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// When the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    /// When the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<DateTime<Utc>>,
    /// Wall time, in milliseconds.
    #[serde(default)]
    pub duration_ms: f64,
    /// The attempt number for iterative strategies (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Extra facts (dataset id and sample, sandbox report, ...).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl WorkflowResult {
    /// The step result of `name`.
    pub fn step(&self, name: &str) -> Option<&StepResult> {
        self.steps.iter().find(|step| step.name == name)
    }
}
