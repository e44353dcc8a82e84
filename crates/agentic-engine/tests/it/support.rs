//! Shared helpers: load a workflow from YAML, build an engine, run, read events.

use std::path::Path;
use std::sync::Arc;

use agentic_adapters::{AgentSettings, CassetteEntry, ChatRequest, ChatResponse, ProviderAgent, ReplayProvider};
use agentic_core::{CanonicalEvent, ValidatedWorkflow, load_workflow};
use agentic_engine::{Engine, EngineSettings, RunOutcome, RunRequest, SandboxRunner};
use serde_json::{Map, Value};

/// Loads a workflow, failing the test with its diagnostics when it does not validate.
#[track_caller]
pub(crate) fn workflow(yaml: &str) -> Arc<ValidatedWorkflow> {
    let load = load_workflow(yaml, "test.yaml");
    match load.workflow {
        Some(workflow) => Arc::new(workflow),
        None => panic!("workflow does not validate: {:#?}", load.diagnostics),
    }
}

/// An engine with the sandboxed subprocess runtime and the built-in tools.
pub(crate) fn engine() -> Engine {
    Engine::new(Arc::new(SandboxRunner::subprocess()))
        .with_settings(EngineSettings { max_parallel: 8, allow_experimental: true })
}

/// An engine whose agent answers from `entries` through the replay provider.
pub(crate) fn engine_with_replay(entries: Vec<CassetteEntry>) -> Engine {
    let provider = Arc::new(ReplayProvider::from_entries("test cassette".into(), entries));
    let settings = AgentSettings { default_model: "test-model".into(), ..AgentSettings::default() };
    engine().with_agent(Arc::new(ProviderAgent::new(provider, settings)))
}

/// A recorded exchange answering `request` with `content`.
pub(crate) fn exchange(caller: &str, request: ChatRequest, content: &str) -> CassetteEntry {
    CassetteEntry {
        key: agentic_adapters::request_key(&request),
        caller: caller.into(),
        response: ChatResponse {
            content: content.into(),
            model: request.model.clone(),
            usage: agentic_adapters::Usage { prompt_tokens: 10, completion_tokens: 5 },
            finish_reason: Some("stop".into()),
        },
        request,
    }
}

/// Inputs from a JSON object literal.
pub(crate) fn inputs(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// Runs `workflow` with `request`, which must start.
pub(crate) async fn run(engine: &Engine, workflow: &Arc<ValidatedWorkflow>, request: RunRequest) -> RunOutcome {
    engine.run(workflow.clone(), request).await.expect("the run starts")
}

/// The events written to `runs/<id>/events.jsonl`.
pub(crate) fn read_events(run_dir: &Path) -> Vec<CanonicalEvent> {
    let text = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events.jsonl exists");
    text.lines().map(|line| serde_json::from_str(line).expect("each line is an event")).collect()
}

/// Whether process `pid` is gone (absent, or a zombie waiting to be reaped).
pub(crate) fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(") ").next().is_some_and(|rest| rest.starts_with('Z')),
    }
}

/// Waits up to two seconds for `pid` to be gone.
pub(crate) async fn wait_gone(pid: i32) -> bool {
    for _ in 0..40 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    process_gone(pid)
}
