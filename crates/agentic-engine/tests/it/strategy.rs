//! Execution strategies (tickets P2-T001 and P2-T002).

use std::sync::Arc;

use agentic_adapters::{EventSink, MemorySink};
use agentic_core::workflow::{Strategy, StrategyKind};
use agentic_core::{EventType, StepStatus};
use agentic_engine::{
    AttemptInput, DagOnce, ExecutionStrategy, IterativeRepair, RunHandle, RunRequest, StopReason, StrategyOutcome,
    strategy_for,
};
use async_trait::async_trait;
use serde_json::json;

use crate::support::{engine, run, workflow};

/// Runs the DAG directly, without any strategy logic, for comparison.
struct DirectDag;

#[async_trait]
impl ExecutionStrategy for DirectDag {
    fn name(&self) -> &'static str {
        "direct"
    }

    async fn execute(&self, run: &RunHandle) -> StrategyOutcome {
        let result = run.run_dag(&AttemptInput { number: None, max_attempts: 1, ..AttemptInput::default() }).await;
        let evaluation = run.evaluate(&result).await;
        StrategyOutcome { result, evaluation, attempts: Vec::new(), stop_reason: StopReason::Completed }
    }
}

const PLAIN: &str = r#"
name: plain
outputs:
  out:
    from: "${steps.b.outputs.stdout}"
steps:
  - {name: a, kind: command, argv: [printf, A]}
  - {name: b, kind: command, argv: [printf, "%sB", "${steps.a.outputs.stdout}"]}
  - {name: c, kind: command, argv: [sh, -c, "exit 4"], critical: false}
"#;

#[tokio::test]
async fn test_dag_once_strategy_matches_current_behavior() {
    let flow = workflow(PLAIN);
    let once = run(&engine(), &flow, RunRequest { strategy: Some(Arc::new(DagOnce)), ..RunRequest::default() }).await;
    let direct =
        run(&engine(), &flow, RunRequest { strategy: Some(Arc::new(DirectDag)), ..RunRequest::default() }).await;
    let shape = |outcome: &agentic_engine::RunOutcome| {
        outcome
            .result
            .steps
            .iter()
            .map(|step| (step.name.clone(), step.status, step.outputs.clone(), step.attempts))
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&once), shape(&direct));
    assert_eq!(once.result.outputs, direct.result.outputs);
    assert_eq!(once.result.overall_status, direct.result.overall_status);
    assert_eq!(once.evaluation.passed, direct.evaluation.passed);
    assert_eq!(once.result.outputs["out"], json!("AB"));
    assert_eq!(once.result.step("c").unwrap().status, StepStatus::Failed);
}

#[tokio::test]
async fn test_strategy_factory_default_dag_once() {
    assert_eq!(strategy_for(&Strategy::default()).name(), "dag_once");
    let iterative = Strategy { kind: StrategyKind::IterativeRepair, ..Strategy::default() };
    assert_eq!(strategy_for(&iterative).name(), "iterative_repair");
    let outcome = run(&engine(), &workflow(PLAIN), RunRequest::default()).await;
    assert_eq!(outcome.strategy, "dag_once");
}

#[test]
fn test_strategy_is_abstract() {
    // `ExecutionStrategy` is a trait: only implementations can become strategy objects, and
    // each keeps its own behaviour behind the common interface.
    let strategies: Vec<Box<dyn ExecutionStrategy>> = vec![
        Box::new(DagOnce),
        Box::new(IterativeRepair { max_attempts: 2, stop_on_repeat: true }),
        Box::new(DirectDag),
    ];
    let names: Vec<&str> = strategies.iter().map(|strategy| strategy.name()).collect();
    assert_eq!(names, ["dag_once", "iterative_repair", "direct"]);
}

/// A workflow whose `check` step fails until the workspace holds `passes_after` markers.
fn repairable(max_attempts: u32, passes_after: u32, stop_on_repeat: bool) -> String {
    format!(
        r#"
name: repair
outputs:
  feedback_seen:
    from: "${{steps.note.outputs.result.feedback}}"
    required: false
strategy:
  kind: iterative_repair
  max_attempts: {max_attempts}
  stop_on_repeat: {stop_on_repeat}
steps:
  - name: note
    kind: tool
    tool: echo
    with:
      number: "${{attempt.number}}"
      feedback: "${{attempt.feedback ?? ''}}"
  - name: check
    kind: command
    depends_on: [note]
    argv: [sh, -c, "echo x >> tries; n=$(wc -l < tries); echo attempt $n >&2; [ $n -ge {passes_after} ]"]
"#
    )
}

async fn run_repair(yaml: &str, sink: Option<Arc<MemorySink>>) -> (agentic_engine::RunOutcome, tempfile::TempDir) {
    let runs = tempfile::tempdir().unwrap();
    let request = RunRequest {
        runs_dir: Some(runs.path().to_owned()),
        sinks: sink.into_iter().map(|sink| sink as Arc<dyn EventSink>).collect(),
        ..RunRequest::default()
    };
    (run(&engine(), &workflow(yaml), request).await, runs)
}

#[tokio::test]
async fn test_iterative_stops_on_success() {
    let (outcome, _runs) = run_repair(&repairable(3, 1, true), None).await;
    assert_eq!(outcome.attempts.len(), 1);
    assert_eq!(outcome.stop_reason, StopReason::Passed);
    assert!(outcome.evaluation.passed);
    assert_eq!(outcome.result.attempt, Some(1));
}

#[tokio::test]
async fn test_iterative_retries_on_failure() {
    let (outcome, _runs) = run_repair(&repairable(3, 2, true), None).await;
    assert_eq!(outcome.attempts.len(), 2);
    assert!(!outcome.attempts[0].passed);
    assert!(outcome.attempts[1].passed);
    assert_eq!(outcome.stop_reason, StopReason::Passed);
    assert_eq!(outcome.result.overall_status, StepStatus::Succeeded);
    // Attempt 2 saw its number and the structured feedback of attempt 1.
    let note = &outcome.result.step("note").unwrap().outputs["result"];
    assert_eq!(note["number"], json!(2));
    let feedback = note["feedback"].as_str().unwrap();
    assert!(feedback.contains("Step `check` failed"), "{feedback}");
    assert!(feedback.contains("attempt 1"), "the stderr tail reaches the next attempt: {feedback}");
}

#[tokio::test]
async fn test_iterative_respects_max_attempts() {
    let (outcome, _runs) = run_repair(&repairable(3, 99, false), None).await;
    assert_eq!(outcome.attempts.len(), 3);
    assert_eq!(outcome.stop_reason, StopReason::MaxAttempts);
    assert_eq!(outcome.result.overall_status, StepStatus::Failed);
    assert!(!outcome.evaluation.passed);
}

#[tokio::test]
async fn iterative_stops_when_the_same_failure_repeats() {
    let yaml = repairable(5, 99, true);
    let (outcome, _runs) = run_repair(&yaml, None).await;
    assert_eq!(outcome.attempts.len(), 2);
    assert_eq!(outcome.stop_reason, StopReason::NoProgress);
    assert_eq!(outcome.attempts[0].failure_signature, outcome.attempts[1].failure_signature);
}

#[tokio::test]
async fn test_iterative_emits_attempt_events() {
    let sink = Arc::new(MemorySink::default());
    let (_outcome, _runs) = run_repair(&repairable(3, 2, true), Some(sink.clone())).await;
    let events = sink.events();
    let attempt_events: Vec<_> = events
        .iter()
        .filter(|event| matches!(event.event_type, EventType::AttemptStart | EventType::AttemptEnd))
        .collect();
    assert_eq!(attempt_events.len(), 4);
    let numbers: Vec<u64> = attempt_events.iter().map(|event| event.data["attempt_number"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [1, 1, 2, 2]);
    // Step events inside an attempt carry its number too.
    let step_attempts: Vec<Option<u32>> = events
        .iter()
        .filter(|event| event.event_type == EventType::StepEnd && event.step_name.as_deref() == Some("check"))
        .map(|event| event.attempt)
        .collect();
    assert_eq!(step_attempts, [Some(1), Some(2)]);
    assert!(events.iter().any(|event| event.event_type == EventType::RepairFeedback));
}

#[tokio::test]
async fn test_dag_once_backward_compatible() {
    let sink = Arc::new(MemorySink::default());
    let outcome = run(
        &engine(),
        &workflow(PLAIN),
        RunRequest { sinks: vec![sink.clone() as Arc<dyn EventSink>], ..RunRequest::default() },
    )
    .await;
    assert_eq!(outcome.strategy, "dag_once");
    assert!(outcome.attempts.is_empty());
    assert_eq!(outcome.result.attempt, None);
    assert!(
        sink.events().iter().all(|event| event.attempt.is_none()
            && !matches!(event.event_type, EventType::AttemptStart | EventType::AttemptEnd))
    );
}
