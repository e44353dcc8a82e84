//! Execution strategies: how many passes over the DAG a run makes, and what each pass sees.
//!
//! - [`DagOnce`] (the default) runs the DAG once.
//! - [`IterativeRepair`] runs it, evaluates the attempt, and when it fails runs it again with
//!   structured feedback (`${attempt.number}`, `${attempt.feedback}`, `${attempt.previous}`),
//!   stopping on a pass, at `max_attempts`, or when the same failure repeats. Each attempt
//!   is saved under `runs/<run_id>/attempts/<N>/`.

use std::sync::Arc;

use agentic_core::workflow::{Strategy, StrategyKind};
use agentic_core::{CanonicalEvent, EventStatus, EventType, StepStatus, WorkflowResult};
use async_trait::async_trait;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::evaluate::{RunEvaluation, RunEvaluator, failure_signature, feedback_text, structured_feedback};
use crate::run::{AttemptEnv, RunShared, run_dag, steps_summary};

/// What a strategy gives an attempt to see as `${attempt...}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AttemptInput {
    /// The attempt number (1-based); `None` for strategies without attempts.
    pub number: Option<u32>,
    /// The most attempts the strategy makes.
    pub max_attempts: u32,
    /// Feedback text from the previous attempt.
    pub feedback: Option<String>,
    /// The previous attempt: outputs, status, steps and structured feedback.
    pub previous: Option<Value>,
}

/// A summary of one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptSummary {
    /// The attempt number (1-based).
    pub number: u32,
    /// The attempt's overall status.
    pub status: StepStatus,
    /// Whether its evaluation passed.
    pub passed: bool,
    /// What failed, as a comparable signature (empty when it passed).
    pub failure_signature: String,
    /// Wall time, in milliseconds.
    pub duration_ms: f64,
}

/// Why an iterative run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The single pass of `dag_once` finished.
    Completed,
    /// An attempt passed.
    Passed,
    /// `max_attempts` were used.
    MaxAttempts,
    /// Two attempts in a row failed the same way.
    NoProgress,
    /// The run was cancelled.
    Cancelled,
}

/// What a strategy returns.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyOutcome {
    /// The final attempt's result.
    pub result: WorkflowResult,
    /// The final attempt's evaluation.
    pub evaluation: RunEvaluation,
    /// Every attempt (empty for `dag_once`).
    pub attempts: Vec<AttemptSummary>,
    /// Why the strategy stopped.
    pub stop_reason: StopReason,
}

/// A run in progress, as strategies see it: run the DAG, evaluate, record attempts.
pub struct RunHandle {
    pub(crate) shared: Arc<RunShared>,
    pub(crate) evaluator: Arc<dyn RunEvaluator>,
}

impl RunHandle {
    /// Runs every step once with `attempt` as the `${attempt...}` context.
    pub async fn run_dag(&self, attempt: &AttemptInput) -> WorkflowResult {
        let logs_dir = self.shared.run_dir.as_ref().map(|run_dir| run_dir.logs_dir(attempt.number));
        let value = json!({
            "number": attempt.number.unwrap_or(1),
            "max_attempts": attempt.max_attempts.max(1),
            "feedback": attempt.feedback,
            "previous": attempt.previous,
        });
        self.shared.bus.set_attempt(attempt.number);
        let env = Arc::new(AttemptEnv { number: attempt.number, attempt: value, logs_dir });
        run_dag(&self.shared, env).await
    }

    /// Evaluates an attempt's result.
    pub async fn evaluate(&self, result: &WorkflowResult) -> RunEvaluation {
        self.evaluator.evaluate(&self.shared.workflow, result).await
    }

    /// Emits an event on the run's stream.
    pub fn emit(&self, event: CanonicalEvent) {
        self.shared.bus.publish(event);
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }

    /// Saves an attempt's artifacts under `attempts/<N>/` (when the run has a directory).
    pub fn save_attempt(&self, number: u32, result: &WorkflowResult, evaluation: &RunEvaluation, feedback: &Value) {
        let Some(run_dir) = &self.shared.run_dir else { return };
        let base = std::path::Path::new("attempts").join(number.to_string());
        // Artifacts are best effort: a full disk must not turn a passing attempt into a failure.
        let _ = run_dir.write_json(base.join("result.json"), result);
        let _ = run_dir.write_json(base.join("evaluation.json"), &evaluation.report);
        let _ = run_dir.write_json(base.join("feedback.json"), feedback);
    }
}

/// How a run passes over the DAG.
#[async_trait]
pub trait ExecutionStrategy: Send + Sync {
    /// The strategy's name as written in YAML, for example `dag_once`.
    fn name(&self) -> &'static str;

    /// Executes the run.
    async fn execute(&self, run: &RunHandle) -> StrategyOutcome;
}

/// Runs the DAG once.
#[derive(Debug, Clone, Copy, Default)]
pub struct DagOnce;

#[async_trait]
impl ExecutionStrategy for DagOnce {
    fn name(&self) -> &'static str {
        "dag_once"
    }

    async fn execute(&self, run: &RunHandle) -> StrategyOutcome {
        let result = run.run_dag(&AttemptInput { number: None, max_attempts: 1, ..AttemptInput::default() }).await;
        let evaluation = run.evaluate(&result).await;
        let stop_reason = if run.is_cancelled() { StopReason::Cancelled } else { StopReason::Completed };
        StrategyOutcome { result, evaluation, attempts: Vec::new(), stop_reason }
    }
}

/// Re-runs the DAG with feedback until an attempt passes.
#[derive(Debug, Clone, Copy)]
pub struct IterativeRepair {
    /// The most attempts (at least 1).
    pub max_attempts: u32,
    /// Stop when two attempts in a row fail the same way.
    pub stop_on_repeat: bool,
}

#[async_trait]
impl ExecutionStrategy for IterativeRepair {
    fn name(&self) -> &'static str {
        "iterative_repair"
    }

    async fn execute(&self, run: &RunHandle) -> StrategyOutcome {
        let max_attempts = self.max_attempts.max(1);
        let mut attempts = Vec::new();
        let mut input = AttemptInput { number: Some(1), max_attempts, feedback: None, previous: None };
        let mut last_signature: Option<String> = None;
        loop {
            let number = input.number.unwrap_or(1);
            let mut start = CanonicalEvent::new(EventType::AttemptStart, Utc::now());
            start.attempt = Some(number);
            start.data = json!({"attempt_number": number, "max_attempts": max_attempts});
            run.emit(start);
            let result = run.run_dag(&input).await;
            let evaluation = run.evaluate(&result).await;
            let signature = if evaluation.passed { String::new() } else { failure_signature(&result, &evaluation) };
            let feedback = structured_feedback(&result, &evaluation);
            run.save_attempt(number, &result, &evaluation, &feedback);
            let mut end = CanonicalEvent::new(EventType::AttemptEnd, Utc::now());
            end.attempt = Some(number);
            end.status = Some(if evaluation.passed { EventStatus::Ok } else { EventStatus::Error });
            end.data = json!({
                "attempt_number": number,
                "passed": evaluation.passed,
                "overall_status": result.overall_status.as_str(),
                "failure_signature": signature,
                "duration_ms": result.duration_ms,
            });
            run.emit(end);
            attempts.push(AttemptSummary {
                number,
                status: result.overall_status,
                passed: evaluation.passed,
                failure_signature: signature.clone(),
                duration_ms: result.duration_ms,
            });
            let stop_reason = if run.is_cancelled() {
                Some(StopReason::Cancelled)
            } else if evaluation.passed {
                Some(StopReason::Passed)
            } else if number >= max_attempts {
                Some(StopReason::MaxAttempts)
            } else if self.stop_on_repeat && last_signature.as_deref() == Some(signature.as_str()) {
                Some(StopReason::NoProgress)
            } else {
                None
            };
            if let Some(stop_reason) = stop_reason {
                return StrategyOutcome { result, evaluation, attempts, stop_reason };
            }
            let text = feedback_text(&feedback);
            let mut repair = CanonicalEvent::new(EventType::RepairFeedback, Utc::now());
            repair.attempt = Some(number);
            repair.data = json!({"attempt_number": number, "next_attempt": number + 1, "feedback": feedback});
            run.emit(repair);
            input = AttemptInput {
                number: Some(number + 1),
                max_attempts,
                feedback: Some(text),
                previous: Some(json!({
                    "number": number,
                    "status": result.overall_status.as_str(),
                    "outputs": result.outputs,
                    "steps": steps_summary(&result),
                    "feedback": feedback,
                })),
            };
            last_signature = Some(signature);
        }
    }
}

/// The strategy a workflow asks for (`dag_once` when it says nothing).
pub fn strategy_for(strategy: &Strategy) -> Box<dyn ExecutionStrategy> {
    match strategy.kind {
        StrategyKind::DagOnce => Box::new(DagOnce),
        StrategyKind::IterativeRepair => {
            Box::new(IterativeRepair { max_attempts: strategy.max_attempts, stop_on_repeat: strategy.stop_on_repeat })
        }
    }
}
