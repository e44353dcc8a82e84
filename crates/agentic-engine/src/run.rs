//! One pass over the DAG: the eager ready-queue scheduler, step execution with retries and
//! timeouts, and the resolution of workflow outputs.
//!
//! **Invariant:** a step starts the moment its last dependency reaches a terminal state
//! (and a slot under `max_parallel` is free); nothing waits for a "layer" to finish.
//! **Invariant:** every step of the workflow has exactly one result when a pass ends, and
//! every transition emits exactly one event.

use std::collections::VecDeque;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use agentic_adapters::{AgentAdapter, AgentRequest, ToolAdapter, ToolCall, ToolRegistry};
use agentic_core::expr::Template;
use agentic_core::workflow::{RetrySpec, RuntimeSpec, Step, StepKind, ValueType};
use agentic_core::{
    CanonicalEvent, ErrorClass, EventStatus, EventType, StepError, StepResult, StepStatus, ValidatedWorkflow,
    WorkflowResult,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;

type StepFuture = Pin<Box<dyn Future<Output = (usize, StepResult)> + Send>>;

use crate::cancel::CancelToken;
use crate::command::{CommandRunner, CommandSpec};
use crate::context::{
    build_context, dependency_satisfied, evaluate_when, extract_json, render_prompt, render_text, resolve_with,
    step_entry,
};
use crate::evaluate::skipped_by_failure;
use crate::events::EventBus;
use crate::rundir::{RunDir, file_stem};

/// Everything a run shares between its steps.
pub(crate) struct RunShared {
    pub(crate) workflow: Arc<ValidatedWorkflow>,
    pub(crate) agent: Option<Arc<dyn AgentAdapter>>,
    pub(crate) tools: Arc<ToolRegistry>,
    pub(crate) commands: Arc<dyn CommandRunner>,
    pub(crate) bus: Arc<EventBus>,
    pub(crate) cancel: CancelToken,
    pub(crate) workspace: PathBuf,
    pub(crate) run_dir: Option<RunDir>,
    pub(crate) inputs: Map<String, Value>,
    pub(crate) max_parallel: usize,
    pub(crate) run_id: String,
    pub(crate) metadata: Map<String, Value>,
}

/// What differs between attempts of an iterative run.
pub(crate) struct AttemptEnv {
    /// The attempt number, in iterative runs.
    pub(crate) number: Option<u32>,
    /// The `attempt` object of the expression context.
    pub(crate) attempt: Value,
    /// Where step logs go.
    pub(crate) logs_dir: Option<PathBuf>,
}

fn event(event_type: EventType, step: &str) -> CanonicalEvent {
    CanonicalEvent::new(event_type, Utc::now()).with_step(step)
}

fn event_status(status: StepStatus) -> EventStatus {
    match status {
        StepStatus::Succeeded | StepStatus::Pending | StepStatus::Running => EventStatus::Ok,
        StepStatus::Failed | StepStatus::Errored => EventStatus::Error,
        StepStatus::TimedOut => EventStatus::Timeout,
        StepStatus::Cancelled => EventStatus::Cancelled,
        StepStatus::Skipped => EventStatus::Skipped,
    }
}

fn kind_data(kind: StepKind) -> Value {
    let mut data = Map::new();
    data.insert("kind".into(), Value::String(kind.as_str().to_owned()));
    Value::Object(data)
}

/// Whether a step reads the expression context at all (a `noop` tool step does not).
fn needs_context(step: &Step) -> bool {
    step.when.is_some()
        || !step.with.is_empty()
        || step.prompt.is_some()
        || step.argv.is_some()
        || !step.env.is_empty()
        || step.stdin.is_some()
        || step.system.is_some()
        || step.model.is_some()
}

fn elapsed_ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// Runs every step of the workflow once and resolves its outputs.
pub(crate) async fn run_dag(shared: &Arc<RunShared>, env: Arc<AttemptEnv>) -> WorkflowResult {
    let workflow = shared.workflow.workflow();
    let count = workflow.steps.len();
    let started = Instant::now();
    let started_at = Utc::now();
    if let Some(logs) = &env.logs_dir {
        let _ = std::fs::create_dir_all(logs);
    }
    let mut results: Vec<Option<StepResult>> = vec![None; count];
    let mut waiting: Vec<usize> = (0..count).map(|idx| shared.workflow.dependencies(idx).len()).collect();
    let mut ready: VecDeque<(usize, Instant, Value)> = VecDeque::new();
    let mut running: JoinSet<(usize, StepResult)> = JoinSet::new();
    // Steps whose dependencies are all terminal, to be decided (skip, or queue).
    let mut unblocked: Vec<usize> = (0..count).filter(|idx| waiting[*idx] == 0).collect();
    let mut cancel_seen = false;
    let cancelled = shared.cancel.cancelled();
    tokio::pin!(cancelled);
    let mut inline_streak = 0u32;
    loop {
        while let Some(idx) = unblocked.pop() {
            let decision = decide(shared, &env, idx, &results);
            match decision {
                Decision::Run(context) => {
                    shared.bus.publish_with(|| {
                        let mut scheduled = event(EventType::StepScheduled, &workflow.steps[idx].name);
                        scheduled.data = kind_data(workflow.steps[idx].kind);
                        scheduled
                    });
                    ready.push_back((idx, Instant::now(), context));
                }
                Decision::Skip(result) => {
                    finish_skipped(shared, &result);
                    results[idx] = Some(*result);
                    release(shared, idx, &mut waiting, &mut unblocked);
                }
            }
        }
        if !cancel_seen && shared.cancel.is_cancelled() {
            cancel_seen = true;
        }
        let mut finished_inline = false;
        while running.len() < shared.max_parallel && !cancel_seen {
            let Some((idx, ready_at, context)) = ready.pop_front() else { break };
            let task_shared = shared.clone();
            let task_env = env.clone();
            let mut step: StepFuture = Box::pin(async move {
                let result = execute_step(&task_shared, &task_env, idx, context, ready_at).await;
                (idx, result)
            });
            // Poll once in place: a step that finishes without waiting (a built-in tool, a
            // cached answer) costs no task spawn and no cross-thread wake-up. A step that
            // waits is spawned; it is polled again with the task's real waker.
            match step.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready((idx, result)) => {
                    results[idx] = Some(result);
                    release(shared, idx, &mut waiting, &mut unblocked);
                    finished_inline = true;
                }
                Poll::Pending => {
                    running.spawn(step);
                }
            }
        }
        if finished_inline {
            // Long chains of instant steps still let other tasks run now and then.
            inline_streak += 1;
            if inline_streak.is_multiple_of(256) {
                tokio::task::yield_now().await;
            }
            continue;
        }
        if running.is_empty() {
            break;
        }
        let joined = if cancel_seen {
            running.join_next().await
        } else {
            tokio::select! {
                joined = running.join_next() => joined,
                () = &mut cancelled => { cancel_seen = true; continue; }
            }
        };
        match joined {
            Some(Ok((idx, result))) => {
                results[idx] = Some(result);
                release(shared, idx, &mut waiting, &mut unblocked);
            }
            Some(Err(join_error)) => {
                // A panicking step must not take the run down; the step is lost, so record
                // every unfinished step we cannot attribute as errored below.
                let mut error = CanonicalEvent::new(EventType::Error, Utc::now());
                error.data = json!({"message": format!("a step task failed: {join_error}")});
                shared.bus.publish(error);
            }
            None => break,
        }
    }
    // Steps that never ran: cancelled before their turn, or lost.
    for (idx, slot) in results.iter_mut().enumerate() {
        if slot.is_none() {
            let step = &workflow.steps[idx];
            let (status, class, message) = if cancel_seen {
                (
                    StepStatus::Cancelled,
                    ErrorClass::Cancelled,
                    "the run was cancelled before the step started".to_owned(),
                )
            } else {
                (StepStatus::Errored, ErrorClass::Infra, "the step's task ended without a result".to_owned())
            };
            let mut result = StepResult::new(step.name.clone(), step.kind, status);
            result.critical = step.critical;
            result.error = Some(StepError { class, message, error_type: Some(status.as_str().to_owned()) });
            let mut end = event(EventType::StepEnd, &step.name);
            end.status = Some(event_status(status));
            end.data = json!({"status": status.as_str(), "attempts": 0, "duration_ms": 0.0});
            shared.bus.publish(end);
            *slot = Some(result);
        }
    }
    let steps: Vec<StepResult> = results.into_iter().map(|result| result.expect("every slot is filled")).collect();
    finish_result(shared, &env, steps, cancel_seen, started, started_at)
}

enum Decision {
    Run(Value),
    Skip(Box<StepResult>),
}

/// Decides whether an unblocked step runs: dependencies must have succeeded (unless every
/// reference to them is optional), and `when:` must hold.
fn decide(shared: &RunShared, env: &AttemptEnv, idx: usize, results: &[Option<StepResult>]) -> Decision {
    let step = &shared.workflow.workflow().steps[idx];
    let dependencies = shared.workflow.dependencies(idx);
    for dependency in dependencies {
        let Some(result) = &results[dependency.step] else { continue };
        if !dependency.optional && !dependency_satisfied(result.status) {
            let mut skipped = StepResult::new(step.name.clone(), step.kind, StepStatus::Skipped);
            skipped.critical = step.critical;
            skipped.metadata.insert("skip_reason".into(), json!("dependency_not_succeeded"));
            skipped.metadata.insert("dependency".into(), json!(result.name));
            skipped.metadata.insert("dependency_status".into(), json!(result.status.as_str()));
            return Decision::Skip(Box::new(skipped));
        }
    }
    if !needs_context(step) {
        return Decision::Run(Value::Null);
    }
    let context = build_context(
        &shared.inputs,
        &env.attempt,
        &Map::new(),
        dependencies.iter().filter_map(|dependency| results[dependency.step].as_ref()),
    );
    if let Some(condition) = &step.when {
        match evaluate_when(condition, &context) {
            Ok(true) => {}
            Ok(false) => {
                let mut skipped = StepResult::new(step.name.clone(), step.kind, StepStatus::Skipped);
                skipped.critical = step.critical;
                skipped.metadata.insert("skip_reason".into(), json!("when_false"));
                skipped.metadata.insert("when".into(), json!(condition));
                return Decision::Skip(Box::new(skipped));
            }
            Err(message) => {
                let mut errored = StepResult::new(step.name.clone(), step.kind, StepStatus::Errored);
                errored.critical = step.critical;
                errored.error =
                    Some(StepError { class: ErrorClass::Validation, message, error_type: Some("when_error".into()) });
                return Decision::Skip(Box::new(errored));
            }
        }
    }
    Decision::Run(context)
}

fn finish_skipped(shared: &RunShared, result: &StepResult) {
    if result.status == StepStatus::Skipped {
        let mut skipped = event(EventType::StepSkipped, &result.name);
        skipped.status = Some(EventStatus::Skipped);
        skipped.data = Value::Object(result.metadata.clone());
        shared.bus.publish(skipped);
    } else {
        let mut end = event(EventType::StepEnd, &result.name);
        end.status = Some(event_status(result.status));
        end.data = json!({"status": result.status.as_str(), "attempts": 0, "duration_ms": 0.0});
        end.error = result.error.as_ref().map(|error| agentic_core::event::EventError {
            class: error.class,
            message: error.message.clone(),
            error_type: error.error_type.clone(),
            retryable: false,
        });
        shared.bus.publish(end);
    }
}

fn release(shared: &RunShared, idx: usize, waiting: &mut [usize], unblocked: &mut Vec<usize>) {
    for &dependent in shared.workflow.dependents(idx) {
        waiting[dependent] -= 1;
        if waiting[dependent] == 0 {
            unblocked.push(dependent);
        }
    }
}

fn finish_result(
    shared: &RunShared,
    env: &AttemptEnv,
    steps: Vec<StepResult>,
    cancelled: bool,
    started: Instant,
    started_at: DateTime<Utc>,
) -> WorkflowResult {
    let workflow = shared.workflow.workflow();
    // Only the steps the outputs refer to go into the context (a big DAG has few outputs).
    let referenced: std::collections::HashSet<&str> = workflow
        .outputs
        .values()
        .filter_map(|spec| Template::parse(&spec.from).ok())
        .flat_map(|template| {
            template.expressions().filter_map(|e| e.step_name().map(str::to_owned)).collect::<Vec<_>>()
        })
        .filter_map(|name| steps.iter().find(|step| step.name == name).map(|step| step.name.as_str()))
        .collect();
    let context = build_context(
        &shared.inputs,
        &env.attempt,
        &Map::new(),
        steps.iter().filter(|step| referenced.contains(step.name.as_str())),
    );
    let mut outputs = Map::new();
    let mut unresolved = Vec::new();
    let mut type_errors = Vec::new();
    for (name, spec) in &workflow.outputs {
        let (value, missing) = match Template::parse(&spec.from) {
            Ok(template) => {
                let value = template.render(&context);
                // Text with an embedded expression never renders to null, so a required
                // output also counts as unresolved when any non-optional part is missing.
                let missing = value.is_null()
                    || template
                        .expressions()
                        .any(|expression| !expression.is_optional() && expression.resolve(&context).is_null());
                (value, missing)
            }
            Err(_) => (Value::Null, true),
        };
        if spec.required && missing {
            unresolved.push(name.clone());
        }
        if let Some(value_type) = spec.value_type
            && !value.is_null()
            && !value_type.accepts(&value)
        {
            type_errors.push(json!({"output": name, "expected": value_type.as_str(), "value": value}));
        }
        let mut output = CanonicalEvent::new(EventType::WorkflowOutput, Utc::now());
        output.data = json!({"name": name, "value": value, "resolved": !missing, "required": spec.required});
        shared.bus.publish(output);
        outputs.insert(name.clone(), value);
    }
    let overall_status = if cancelled {
        StepStatus::Cancelled
    } else if steps.iter().any(|step| step.critical && (step.status.is_failure() || skipped_by_failure(step))) {
        StepStatus::Failed
    } else {
        StepStatus::Succeeded
    };
    let mut metadata = shared.metadata.clone();
    if !type_errors.is_empty() {
        metadata.insert("output_type_errors".into(), Value::Array(type_errors));
    }
    WorkflowResult {
        run_id: shared.run_id.clone(),
        workflow: workflow.name.clone(),
        workflow_version: workflow.version.to_string(),
        overall_status,
        steps,
        outputs,
        unresolved_required_outputs: unresolved,
        inputs: shared.inputs.clone(),
        started_at: Some(started_at),
        ended_at: Some(Utc::now()),
        duration_ms: elapsed_ms(started),
        attempt: env.number,
        metadata,
    }
}

/// The outcome of one attempt of a step.
struct AttemptOutcome {
    status: StepStatus,
    error: Option<StepError>,
    outputs: Map<String, Value>,
    model: Option<String>,
    metadata: Map<String, Value>,
    logs: Vec<(&'static str, String)>,
}

impl AttemptOutcome {
    fn failure(status: StepStatus, class: ErrorClass, error_type: &str, message: String) -> AttemptOutcome {
        AttemptOutcome {
            status,
            error: Some(StepError { class, message, error_type: Some(error_type.to_owned()) }),
            outputs: Map::new(),
            model: None,
            metadata: Map::new(),
            logs: Vec::new(),
        }
    }

    fn success(outputs: Map<String, Value>) -> AttemptOutcome {
        AttemptOutcome {
            status: StepStatus::Succeeded,
            error: None,
            outputs,
            model: None,
            metadata: Map::new(),
            logs: Vec::new(),
        }
    }
}

/// The policy of a step without `retry:`: one attempt.
static NO_RETRY: std::sync::LazyLock<RetrySpec> =
    std::sync::LazyLock::new(|| RetrySpec { max_attempts: 1, ..RetrySpec::default() });

fn jitter_factor() -> f64 {
    // 0.5 ..= 1.5, from the process's random hasher keys (no RNG dependency needed).
    let random = RandomState::new().hash_one(Instant::now());
    0.5 + (random as f64 / u64::MAX as f64)
}

/// The wait before retry number `retry` (1-based).
pub(crate) fn backoff_delay(policy: &RetrySpec, retry: u32) -> Duration {
    let exponent = i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX);
    let base = policy.initial_interval_s * policy.backoff_factor.powi(exponent);
    let base = base.min(policy.max_interval_s).max(0.0);
    let seconds = if policy.jitter { (base * jitter_factor()).min(policy.max_interval_s) } else { base };
    agentic_core::seconds_to_duration(seconds)
}

/// Runs one step to its final status: attempts, retries with backoff, timeouts, deadline.
async fn execute_step(
    shared: &RunShared,
    env: &AttemptEnv,
    idx: usize,
    context: Value,
    ready_at: Instant,
) -> StepResult {
    let step = &shared.workflow.workflow().steps[idx];
    let started = Instant::now();
    let started_at = Utc::now();
    let queue_wait_ms = started.duration_since(ready_at).as_secs_f64() * 1000.0;
    let policy = step.retry.as_ref().unwrap_or_else(|| &NO_RETRY);
    // A deadline too far away to represent is no deadline.
    let deadline = step.deadline_s.and_then(|seconds| started.checked_add(agentic_core::seconds_to_duration(seconds)));
    let mut attempt_number = 0u32;
    let mut outcome = loop {
        attempt_number += 1;
        shared.bus.publish_with(|| {
            let mut start = event(EventType::StepStart, &step.name);
            let mut data = Map::new();
            data.insert("kind".into(), Value::String(step.kind.as_str().to_owned()));
            data.insert("step_attempt".into(), Value::from(attempt_number));
            start.data = Value::Object(data);
            start
        });
        let mut timeout = step.timeout_s.map(agentic_core::seconds_to_duration);
        if let Some(deadline) = deadline {
            let remaining = deadline.saturating_duration_since(Instant::now());
            timeout = Some(timeout.map_or(remaining, |timeout| timeout.min(remaining)));
        }
        let mut outcome = run_attempt(shared, step, &context, timeout).await;
        let deadline_passed = deadline.is_some_and(|deadline| Instant::now() >= deadline);
        if outcome.status == StepStatus::TimedOut
            && deadline_passed
            && let Some(error) = &mut outcome.error
        {
            error.error_type = Some("deadline_exceeded".into());
            error.message = format!(
                "the step's deadline of {:.1}s passed (attempt {attempt_number})",
                step.deadline_s.unwrap_or_default()
            );
        }
        let Some(error) = outcome.error.clone() else { break outcome };
        let retry_allowed = attempt_number < policy.max_attempts
            && policy.retry_on.contains(&error.class)
            && !shared.cancel.is_cancelled()
            && outcome.status != StepStatus::Cancelled;
        if !retry_allowed {
            break outcome;
        }
        let delay = backoff_delay(policy, attempt_number);
        if deadline.is_some_and(|deadline| Instant::now() + delay >= deadline) {
            break outcome;
        }
        let mut retry = event(EventType::StepRetry, &step.name);
        retry.status = Some(EventStatus::Error);
        retry.data = json!({
            "step_attempt": attempt_number,
            "next_attempt": attempt_number + 1,
            "delay_ms": delay.as_secs_f64() * 1000.0,
            "status": outcome.status.as_str(),
        });
        retry.error = Some(agentic_core::event::EventError {
            class: error.class,
            message: error.message.clone(),
            error_type: error.error_type.clone(),
            retryable: true,
        });
        shared.bus.publish(retry);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shared.cancel.cancelled() => {
                break AttemptOutcome::failure(
                    StepStatus::Cancelled,
                    ErrorClass::Cancelled,
                    "cancelled",
                    "the run was cancelled while the step waited to retry".into(),
                );
            }
        }
    };
    if let Some(logs) = &env.logs_dir {
        for (suffix, text) in std::mem::take(&mut outcome.logs) {
            let path = logs.join(format!("{}.{suffix}", file_stem(&step.name)));
            let _ = tokio::fs::write(path, text).await;
        }
    }
    let ended_at = Utc::now();
    let duration_ms = elapsed_ms(started);
    let result = StepResult {
        name: step.name.clone(),
        kind: step.kind,
        status: outcome.status,
        critical: step.critical,
        outputs: outcome.outputs,
        error: outcome.error,
        attempts: attempt_number,
        started_at: Some(started_at),
        ended_at: Some(ended_at),
        duration_ms,
        queue_wait_ms,
        model: outcome.model,
        metadata: outcome.metadata,
    };
    shared.bus.publish_with(|| {
        let mut end = event(EventType::StepEnd, &step.name);
        end.status = Some(event_status(result.status));
        let mut data = Map::new();
        data.insert("status".into(), Value::String(result.status.as_str().to_owned()));
        data.insert("kind".into(), Value::String(step.kind.as_str().to_owned()));
        data.insert("attempts".into(), Value::from(result.attempts));
        data.insert("duration_ms".into(), Value::from(duration_ms));
        data.insert("queue_wait_ms".into(), Value::from(queue_wait_ms));
        if let Some(model) = &result.model {
            data.insert("model".into(), Value::String(model.clone()));
        }
        let keys = result.outputs.keys().map(|key| Value::String(key.clone())).collect();
        data.insert("outputs".into(), Value::Array(keys));
        end.data = Value::Object(data);
        end.error = result.error.as_ref().map(|error| agentic_core::event::EventError {
            class: error.class,
            message: error.message.clone(),
            error_type: error.error_type.clone(),
            retryable: false,
        });
        end
    });
    result
}

/// One attempt, bounded by `timeout` and by cancellation.
async fn run_attempt(shared: &RunShared, step: &Step, context: &Value, timeout: Option<Duration>) -> AttemptOutcome {
    if step.kind == StepKind::Command {
        // The runner enforces the timeout and cancellation itself, killing the process group.
        return run_command(shared, step, context, timeout).await;
    }
    let work = async {
        match step.kind {
            StepKind::Agent => run_agent(shared, step, context).await,
            StepKind::Tool => run_tool(shared, step, context).await,
            StepKind::Command => unreachable!("handled above"),
        }
    };
    let cancelled = || {
        AttemptOutcome::failure(
            StepStatus::Cancelled,
            ErrorClass::Cancelled,
            "cancelled",
            "the run was cancelled".into(),
        )
    };
    let Some(limit) = timeout else {
        // No timer to register: only cancellation can cut the attempt short.
        return tokio::select! {
            biased;
            outcome = work => outcome,
            () = shared.cancel.cancelled() => cancelled(),
        };
    };
    tokio::select! {
        biased;
        outcome = tokio::time::timeout(limit, work) => match outcome {
            Ok(outcome) => outcome,
            Err(_) => AttemptOutcome::failure(
                StepStatus::TimedOut,
                ErrorClass::Timeout,
                "timeout",
                format!("the attempt took longer than {:.1}s", limit.as_secs_f64()),
            ),
        },
        () = shared.cancel.cancelled() => cancelled(),
    }
}

fn validation_failure(error_type: &str, message: String) -> AttemptOutcome {
    AttemptOutcome::failure(StepStatus::Errored, ErrorClass::Validation, error_type, message)
}

/// Adds a step's declared outputs from `source` (the parsed JSON reply or stdout, or the
/// tool result) and checks required ones and types.
fn declared_outputs(step: &Step, source: Option<&Value>, outcome: &mut AttemptOutcome) {
    let mut missing = Vec::new();
    let mut wrong_type = Vec::new();
    for (name, spec) in &step.outputs {
        if step.kind.builtin_outputs().contains(&name.as_str()) {
            continue;
        }
        let value = source.and_then(|source| source.get(name)).filter(|value| !value.is_null());
        match value {
            Some(value) => {
                if let Some(value_type) = spec.value_type
                    && value_type != ValueType::Any
                    && !value_type.accepts(value)
                {
                    wrong_type.push(format!("`{name}` should be of type `{}`, got {value}", value_type.as_str()));
                }
                outcome.outputs.insert(name.clone(), value.clone());
            }
            None if spec.required => missing.push(name.clone()),
            None => {}
        }
    }
    if outcome.error.is_some() {
        return;
    }
    let what = match step.kind {
        StepKind::Agent => "the reply's JSON",
        StepKind::Tool => "the tool result",
        StepKind::Command => "the JSON on stdout",
    };
    if !missing.is_empty() {
        outcome.status = StepStatus::Failed;
        outcome.error = Some(StepError {
            class: ErrorClass::Validation,
            message: format!(
                "required output(s) {} missing: {what} has no such top-level key",
                missing.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
            ),
            error_type: Some("missing_required_output".into()),
        });
    } else if !wrong_type.is_empty() {
        outcome.status = StepStatus::Failed;
        outcome.error = Some(StepError {
            class: ErrorClass::Validation,
            message: format!("output type mismatch: {}", wrong_type.join("; ")),
            error_type: Some("invalid_output_type".into()),
        });
    }
}

fn response_schema(step: &Step) -> Option<Value> {
    if step.outputs.is_empty() {
        return None;
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, spec) in &step.outputs {
        let schema = match spec.value_type {
            Some(ValueType::Path) => json!({"type": "string"}),
            Some(ValueType::Any) | None => json!({}),
            Some(value_type) => json!({"type": value_type.as_str()}),
        };
        properties.insert(name.clone(), schema);
        if spec.required {
            required.push(json!(name));
        }
    }
    Some(json!({"type": "object", "properties": properties, "required": required}))
}

async fn run_agent(shared: &RunShared, step: &Step, context: &Value) -> AttemptOutcome {
    let Some(agent) = &shared.agent else {
        return AttemptOutcome::failure(
            StepStatus::Errored,
            ErrorClass::Infra,
            "no_agent",
            "no model provider is configured for agent steps; pass `--provider`".into(),
        );
    };
    let with = match resolve_with(&step.with, context) {
        Ok(with) => with,
        Err(message) => return validation_failure("expression_error", message),
    };
    let prompt = match render_prompt(step.prompt.as_deref().unwrap_or_default(), context, &with) {
        Ok(prompt) => prompt,
        Err(message) => return validation_failure("template_error", message),
    };
    let render_optional = |text: &Option<String>| text.as_deref().map(|text| render_text(text, context)).transpose();
    let (system, model) = match (render_optional(&step.system), render_optional(&step.model)) {
        (Ok(system), Ok(model)) => (system, model),
        (Err(message), _) | (_, Err(message)) => return validation_failure("expression_error", message),
    };
    let request = AgentRequest {
        step: step.name.clone(),
        role: step.role.clone(),
        model,
        system,
        prompt: prompt.clone(),
        response_schema: response_schema(step),
    };
    let resolved_model = agent.resolve_model(request.model.as_deref());
    let mut outcome = match agent.invoke(&request, shared.bus.as_ref()).await {
        Ok(response) => {
            let json = extract_json(&response.text);
            let mut outputs = Map::new();
            outputs.insert("text".into(), Value::String(response.text.clone()));
            if let Some(json) = &json {
                outputs.insert("json".into(), json.clone());
            }
            let mut outcome = AttemptOutcome::success(outputs);
            outcome.model = Some(response.model.clone());
            outcome.metadata.insert("usage".into(), json!(response.usage));
            if let Some(reason) = &response.finish_reason {
                outcome.metadata.insert("finish_reason".into(), json!(reason));
            }
            outcome.logs.push(("stdout", response.text));
            declared_outputs(step, json.as_ref(), &mut outcome);
            outcome
        }
        Err(error) => {
            let status = if error.class() == ErrorClass::User { StepStatus::Failed } else { StepStatus::Errored };
            let mut outcome = AttemptOutcome::failure(status, error.class(), error.error_type(), error.to_string());
            outcome.model = Some(resolved_model.clone());
            outcome
        }
    };
    if let Some(role) = &step.role {
        outcome.metadata.insert("role".into(), json!(role));
    }
    if outcome.model.is_none() {
        outcome.model = Some(resolved_model);
    }
    outcome.logs.push(("prompt", prompt));
    outcome
}

async fn run_tool(shared: &RunShared, step: &Step, context: &Value) -> AttemptOutcome {
    let tool = step.tool.as_deref().unwrap_or_default();
    let args = if step.with.is_empty() {
        Value::Object(Map::new())
    } else {
        match resolve_with(&step.with, context) {
            Ok(with) => Value::Object(with),
            Err(message) => return validation_failure("expression_error", message),
        }
    };
    let call = ToolCall { step: step.name.clone(), tool: tool.to_owned(), args, workspace: shared.workspace.clone() };
    match shared.tools.execute(&call).await {
        Ok(result) => {
            let mut outputs = Map::new();
            outputs.insert("result".into(), result.result);
            // Tool results are in result.json and the events; no per-step log file, which
            // would cost a file creation per step in big DAGs.
            let mut outcome = AttemptOutcome::success(outputs);
            if !step.outputs.is_empty() {
                let result = outcome.outputs["result"].clone();
                declared_outputs(step, Some(&result), &mut outcome);
            }
            outcome
        }
        Err(error) => {
            let status = match error.class() {
                ErrorClass::User | ErrorClass::Validation => StepStatus::Failed,
                _ => StepStatus::Errored,
            };
            AttemptOutcome::failure(status, error.class(), error.error_type(), error.to_string())
        }
    }
}

fn merged_runtime(shared: &RunShared, step: &Step) -> RuntimeSpec {
    let base = shared.workflow.workflow().runtime.clone().unwrap_or_default();
    let Some(over) = &step.runtime else { return base };
    RuntimeSpec {
        kind: over.kind,
        image: over.image.clone().or(base.image),
        network: over.network || base.network,
        memory_mb: over.memory_mb.or(base.memory_mb),
        cpu_time_s: over.cpu_time_s.or(base.cpu_time_s),
        max_processes: over.max_processes.or(base.max_processes),
        max_open_files: over.max_open_files.or(base.max_open_files),
        env_allow: if over.env_allow.is_empty() { base.env_allow } else { over.env_allow.clone() },
        output_limit_bytes: over.output_limit_bytes.or(base.output_limit_bytes),
    }
}

async fn run_command(shared: &RunShared, step: &Step, context: &Value, timeout: Option<Duration>) -> AttemptOutcome {
    let mut argv = Vec::new();
    for arg in step.argv.iter().flatten() {
        match render_text(arg, context) {
            Ok(text) => argv.push(text),
            Err(message) => return validation_failure("expression_error", message),
        }
    }
    let mut env = std::collections::BTreeMap::new();
    for (name, value) in &step.env {
        match render_text(value, context) {
            Ok(text) => {
                env.insert(name.clone(), text);
            }
            Err(message) => return validation_failure("expression_error", message),
        }
    }
    let stdin = match step.stdin.as_deref().map(|text| render_text(text, context)).transpose() {
        Ok(stdin) => stdin,
        Err(message) => return validation_failure("expression_error", message),
    };
    if argv.first().is_none_or(|program| program.trim().is_empty()) {
        return validation_failure("empty_argv", "the command's program (argv[0]) resolved to an empty string".into());
    }
    let spec = CommandSpec {
        step: step.name.clone(),
        argv,
        env,
        stdin,
        workdir: shared.workspace.clone(),
        timeout,
        runtime: merged_runtime(shared, step),
    };
    let output = match shared.commands.run(spec, shared.cancel.clone()).await {
        Ok(output) => output,
        Err(error) => {
            let error_type = match error {
                crate::command::CommandError::Spawn { .. } => "spawn_failed",
                crate::command::CommandError::Unsupported(_) => "unsupported",
                _ => "runtime_error",
            };
            return AttemptOutcome::failure(StepStatus::Errored, ErrorClass::Infra, error_type, error.to_string());
        }
    };
    let mut outputs = Map::new();
    outputs.insert("exit_code".into(), output.exit_code.map_or(Value::Null, |code| json!(code)));
    outputs.insert("stdout".into(), Value::String(output.stdout.clone()));
    outputs.insert("stderr".into(), Value::String(output.stderr.clone()));
    let parsed = serde_json::from_str::<Value>(output.stdout.trim()).ok();
    if let Some(json) = &parsed {
        outputs.insert("json".into(), json.clone());
    }
    let mut outcome = AttemptOutcome::success(outputs);
    outcome.logs.push(("stdout", output.stdout.clone()));
    outcome.logs.push(("stderr", output.stderr.clone()));
    outcome.metadata.insert(
        "process".into(),
        json!({
            "exit_code": output.exit_code,
            "signal": output.signal,
            "truncated": output.truncated,
            "duration_ms": output.duration_ms,
            "details": output.details,
        }),
    );
    let failure = if output.cancelled {
        Some((
            StepStatus::Cancelled,
            ErrorClass::Cancelled,
            "cancelled",
            "the run was cancelled; the process group was killed".to_owned(),
        ))
    } else if output.timed_out {
        Some((
            StepStatus::TimedOut,
            ErrorClass::Timeout,
            "timeout",
            format!(
                "the command ran longer than {:.1}s; its process group was killed",
                timeout.unwrap_or_default().as_secs_f64()
            ),
        ))
    } else {
        match (output.exit_code, output.signal) {
            (Some(0), _) => None,
            (Some(code), _) => Some((
                StepStatus::Failed,
                ErrorClass::User,
                "nonzero_exit",
                format!(
                    "`{}` exited with code {code}",
                    step.argv.as_ref().and_then(|a| a.first()).map_or("", String::as_str)
                ),
            )),
            (None, Some(signal)) => Some((
                StepStatus::Failed,
                ErrorClass::User,
                "signaled",
                format!("the process was killed by signal {signal}"),
            )),
            (None, None) => Some((
                StepStatus::Errored,
                ErrorClass::Infra,
                "no_exit_status",
                "the process ended without an exit status".to_owned(),
            )),
        }
    };
    if let Some((status, class, error_type, message)) = failure {
        outcome.status = status;
        outcome.error = Some(StepError { class, message, error_type: Some(error_type.to_owned()) });
        return outcome;
    }
    declared_outputs(step, parsed.as_ref(), &mut outcome);
    outcome
}

/// The `steps.<name>` entries of a finished attempt, for `attempt.previous`.
pub(crate) fn steps_summary(result: &WorkflowResult) -> Value {
    Value::Object(result.steps.iter().map(|step| (step.name.clone(), step_entry(step))).collect())
}
