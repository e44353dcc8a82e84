//! The agentic workflow engine: builds the step DAG from a validated workflow, schedules
//! steps eagerly on tokio, applies execution strategies and records runs.
//!
//! Entry point: [`Engine::run`] with a [`RunRequest`]. The engine talks to the outside
//! through ports: [`CommandRunner`] (command steps; the sandboxed implementation is in
//! `agentic-runtime`), `agentic_adapters::AgentAdapter` (agent steps),
//! `agentic_adapters::ToolAdapter` (tool steps), [`RunEvaluator`] (verdicts) and
//! `agentic_adapters::EventSink` (canonical events).
//!
//! It does not parse YAML (that is `agentic-core`), does not score (that is `agentic-eval`)
//! and knows no wire format of any model service (that is `agentic-adapters`).
//!
//! **Invariant:** every transition of a run is one canonical event with a strictly
//! increasing `seq`; `runs/<run_id>/events.jsonl` holds the same stream.
//! **Invariant:** a required workflow output that does not resolve is listed in
//! `WorkflowResult::unresolved_required_outputs`; it is never a silent success.

mod cancel;
mod command;
mod context;
mod engine;
mod evaluate;
mod events;
mod local;
mod run;
mod rundir;
mod sandbox;
mod strategy;

pub use cancel::CancelToken;
pub use command::{CommandError, CommandOutput, CommandRunner, CommandSpec};
pub use context::{build_context, evaluate_when, extract_json, render_prompt, truthy};
pub use engine::{Engine, EngineError, EngineSettings, RunOutcome, RunRequest};
pub use evaluate::{
    GateEvaluator, RunEvaluation, RunEvaluator, engine_gates, failure_signature, feedback_text, gate_evaluation,
    skipped_by_failure, structured_feedback,
};
pub use events::EventBus;
pub use local::LocalRunner;
pub use rundir::{AttemptArtifacts, RunDir, list_attempts};
pub use sandbox::SandboxRunner;
pub use strategy::{
    AttemptInput, AttemptSummary, DagOnce, ExecutionStrategy, IterativeRepair, RunHandle, StopReason, StrategyOutcome,
    strategy_for,
};
