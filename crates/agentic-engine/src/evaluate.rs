//! The evaluation port: judges a finished attempt, so that `iterative_repair` knows whether
//! to stop and what feedback to give the next attempt, and `agentic run` can report a verdict.
//!
//! [`GateEvaluator`] is the built-in fallback: the engine-side hard gates only
//! (`required_outputs_present`, `overall_status_success`, `no_critical_step_failures`). The
//! scoring engine (`agentic-eval`) supplies the full evaluation with scores and grades.

use std::collections::BTreeSet;

use agentic_core::{StepStatus, ValidatedWorkflow, WorkflowResult};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The verdict on one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvaluation {
    /// Whether the attempt passes.
    pub passed: bool,
    /// The full report (`passed`, `hard_gates`, `hard_gate_failures`, and, from the scoring
    /// engine, `grade`, `weighted_score`, ...).
    pub report: Value,
    /// Names of the failed checks, for feedback and repeat detection.
    pub failures: Vec<String>,
}

/// Judges attempts. Asynchronous, because a full evaluation may ask an LLM judge.
#[async_trait]
pub trait RunEvaluator: Send + Sync {
    /// A short name recorded with the report.
    fn name(&self) -> &str;

    /// Judges `result`, one attempt of `workflow`.
    async fn evaluate(&self, workflow: &ValidatedWorkflow, result: &WorkflowResult) -> RunEvaluation;
}

/// The engine's own hard gates; passes when all hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct GateEvaluator;

/// The hard gates the engine itself can decide, with a reason for each failure.
pub fn engine_gates(result: &WorkflowResult) -> Vec<(&'static str, bool, Option<String>)> {
    let failed_critical: Vec<String> = result
        .steps
        .iter()
        .filter(|step| step.critical && (step.status.is_failure() || skipped_by_failure(step)))
        .map(|step| format!("{} ({})", step.name, step.status.as_str()))
        .collect();
    vec![
        (
            "required_outputs_present",
            result.unresolved_required_outputs.is_empty(),
            (!result.unresolved_required_outputs.is_empty())
                .then(|| format!("unresolved required outputs: {}", result.unresolved_required_outputs.join(", "))),
        ),
        (
            "overall_status_success",
            result.overall_status == StepStatus::Succeeded,
            (result.overall_status != StepStatus::Succeeded)
                .then(|| format!("overall status is `{}`", result.overall_status.as_str())),
        ),
        (
            "no_critical_step_failures",
            failed_critical.is_empty(),
            (!failed_critical.is_empty()).then(|| format!("critical steps failed: {}", failed_critical.join(", "))),
        ),
    ]
}

/// Whether a skipped step was skipped because a dependency did not succeed (as opposed to
/// its own `when:` being false).
pub fn skipped_by_failure(step: &agentic_core::StepResult) -> bool {
    step.status == StepStatus::Skipped
        && step.metadata.get("skip_reason").and_then(Value::as_str) == Some("dependency_not_succeeded")
}

#[async_trait]
impl RunEvaluator for GateEvaluator {
    fn name(&self) -> &str {
        "engine_gates"
    }

    async fn evaluate(&self, _workflow: &ValidatedWorkflow, result: &WorkflowResult) -> RunEvaluation {
        gate_evaluation(result)
    }
}

/// The verdict of the engine's own gates on `result` (what [`GateEvaluator`] reports).
pub fn gate_evaluation(result: &WorkflowResult) -> RunEvaluation {
    let gates = engine_gates(result);
    let failures: Vec<String> =
        gates.iter().filter(|(_, passed, _)| !passed).map(|(name, _, _)| (*name).to_owned()).collect();
    let hard_gates: serde_json::Map<String, Value> =
        gates.iter().map(|(name, passed, _)| ((*name).to_owned(), json!(passed))).collect();
    let reasons: serde_json::Map<String, Value> = gates
        .iter()
        .filter_map(|(name, _, reason)| reason.as_ref().map(|reason| ((*name).to_owned(), json!(reason))))
        .collect();
    RunEvaluation {
        passed: failures.is_empty(),
        report: json!({
            "evaluator": "engine_gates",
            "passed": failures.is_empty(),
            "hard_gates": hard_gates,
            "hard_gate_failures": failures,
            "hard_gate_reasons": reasons,
        }),
        failures,
    }
}

/// The last `max_chars` characters of `text`, starting at a line boundary when possible.
pub(crate) fn tail(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    let cut: String = text.chars().skip(count - max_chars).collect();
    match cut.find('\n') {
        Some(newline) if newline + 1 < cut.len() => cut[newline + 1..].to_owned(),
        _ => cut,
    }
}

/// Structured feedback on a failed attempt: failed checks, failed steps with their errors
/// and output tails, and unresolved outputs.
pub fn structured_feedback(result: &WorkflowResult, evaluation: &RunEvaluation) -> Value {
    let failed_steps: Vec<Value> = result
        .steps
        .iter()
        .filter(|step| step.status.is_failure())
        .map(|step| {
            let text_of = |key: &str| step.outputs.get(key).and_then(Value::as_str).map(|text| tail(text, 2000));
            json!({
                "step": step.name,
                "status": step.status.as_str(),
                "error": step.error.as_ref().map(|error| error.message.clone()),
                "error_type": step.error.as_ref().and_then(|error| error.error_type.clone()),
                "exit_code": step.outputs.get("exit_code"),
                "stdout_tail": text_of("stdout"),
                "stderr_tail": text_of("stderr"),
            })
        })
        .collect();
    json!({
        "failed_checks": evaluation.failures,
        "failed_steps": failed_steps,
        "unresolved_required_outputs": result.unresolved_required_outputs,
        "report": evaluation.report,
    })
}

/// Feedback as text for prompts (`${attempt.feedback}`).
pub fn feedback_text(feedback: &Value) -> String {
    let mut lines = Vec::new();
    if let Some(checks) = feedback.get("failed_checks").and_then(Value::as_array)
        && !checks.is_empty()
    {
        let names: Vec<&str> = checks.iter().filter_map(Value::as_str).collect();
        lines.push(format!("Failed checks: {}.", names.join(", ")));
    }
    for step in feedback.get("failed_steps").and_then(Value::as_array).into_iter().flatten() {
        let name = step.get("step").and_then(Value::as_str).unwrap_or("?");
        let status = step.get("status").and_then(Value::as_str).unwrap_or("failed");
        let mut line = format!("Step `{name}` {status}");
        if let Some(error) = step.get("error").and_then(Value::as_str) {
            line.push_str(&format!(": {error}"));
        }
        lines.push(line);
        for key in ["stderr_tail", "stdout_tail"] {
            if let Some(text) = step.get(key).and_then(Value::as_str).filter(|text| !text.trim().is_empty()) {
                lines.push(format!("{}:\n{}", key.replace('_', " "), tail(text.trim_end(), 600)));
            }
        }
    }
    if let Some(outputs) = feedback.get("unresolved_required_outputs").and_then(Value::as_array)
        && !outputs.is_empty()
    {
        let names: Vec<&str> = outputs.iter().filter_map(Value::as_str).collect();
        lines.push(format!("Missing required outputs: {}.", names.join(", ")));
    }
    lines.join("\n")
}

/// A signature of what failed; two attempts with the same signature made no progress.
pub fn failure_signature(result: &WorkflowResult, evaluation: &RunEvaluation) -> String {
    let mut parts: BTreeSet<String> = evaluation.failures.iter().map(|name| format!("check:{name}")).collect();
    for step in result.steps.iter().filter(|step| step.status.is_failure()) {
        let error_type = step.error.as_ref().and_then(|error| error.error_type.clone()).unwrap_or_default();
        let exit = step.outputs.get("exit_code").map(Value::to_string).unwrap_or_default();
        parts.insert(format!("step:{}:{}:{error_type}:{exit}", step.name, step.status.as_str()));
    }
    for output in &result.unresolved_required_outputs {
        parts.insert(format!("output:{output}"));
    }
    parts.into_iter().collect::<Vec<_>>().join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end() {
        assert_eq!(tail("short", 10), "short");
        assert_eq!(tail("line one\nline two\nline three", 12), "line three");
    }
}
