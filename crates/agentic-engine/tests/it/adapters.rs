//! The adapter contracts (ticket P1-T001) and agent steps answered by the replay provider.

use std::sync::Arc;

use agentic_adapters::{
    AgentAdapter, AgentError, AgentRequest, AgentResponse, AgentSettings, ChatMessage, ChatRequest, EventSink,
    MemorySink, ProviderAgent, ReplayProvider, Role, ToolAdapter, ToolCall, ToolError, ToolRegistry, ToolResult, Usage,
    WorkflowAdapter,
};
use agentic_core::{CanonicalEvent, EventType, StepStatus};
use agentic_engine::RunRequest;
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::support::{engine, engine_with_replay, exchange, inputs, run, workflow};

fn chat(model: &str, system: Option<&str>, prompt: &str, schema: Option<Value>) -> ChatRequest {
    let mut messages = Vec::new();
    if let Some(system) = system {
        messages.push(ChatMessage::new(Role::System, system));
    }
    messages.push(ChatMessage::new(Role::User, prompt));
    ChatRequest {
        model: model.into(),
        messages,
        temperature: None,
        max_tokens: None,
        response_schema: schema,
        seed: None,
    }
}

#[tokio::test]
async fn test_agent_adapter_is_abstract() {
    // `AgentAdapter` is a trait: it has no values of its own, and a trait object can only be
    // made from an implementation. Build one from `ProviderAgent` and check that calls
    // dispatch to that implementation.
    let request = chat("tiered-model", None, "ping", None);
    let provider = Arc::new(ReplayProvider::from_entries("mem".into(), vec![exchange("s", request, "pong")]));
    let settings = AgentSettings {
        default_model: "default".into(),
        tiers: [("fast".to_owned(), "tiered-model".to_owned())].into(),
        ..AgentSettings::default()
    };
    let agent: Arc<dyn AgentAdapter> = Arc::new(ProviderAgent::new(provider, settings));
    let ask = AgentRequest {
        step: "s".into(),
        role: None,
        model: Some("fast".into()),
        system: None,
        prompt: "ping".into(),
        response_schema: None,
    };
    let sink = MemorySink::default();
    let response = agent.invoke(&ask, &sink).await.unwrap();
    assert_eq!(response.text, "pong");
    assert_eq!(agent.name(), "replay");
    let miss = agent.invoke(&AgentRequest { prompt: "other".into(), ..ask }, &sink).await.unwrap_err();
    assert!(matches!(miss, AgentError::Provider(_)));
    assert!(miss.to_string().contains("step `s`"), "{miss}");
}

/// A concrete stub of every adapter trait.
struct Stub {
    seen: MemorySink,
}

#[async_trait]
impl AgentAdapter for Stub {
    fn name(&self) -> &str {
        "stub"
    }

    fn resolve_model(&self, requested: Option<&str>) -> String {
        requested.unwrap_or("stub-model").to_owned()
    }

    async fn invoke(&self, request: &AgentRequest, events: &dyn EventSink) -> Result<AgentResponse, AgentError> {
        events.emit(
            &CanonicalEvent::new(EventType::AgentInvokeStart, chrono::Utc::now()).with_step(request.step.clone()),
        );
        Ok(AgentResponse {
            text: json!({"shout": request.prompt.to_uppercase()}).to_string(),
            model: self.resolve_model(request.model.as_deref()),
            usage: Usage::default(),
            finish_reason: None,
        })
    }
}

#[async_trait]
impl ToolAdapter for Stub {
    fn tools(&self) -> Vec<String> {
        vec!["reverse".into()]
    }

    async fn execute(&self, call: &ToolCall) -> Result<ToolResult, ToolError> {
        let text = call.args.get("text").and_then(Value::as_str).unwrap_or_default();
        Ok(ToolResult { result: json!({"reversed": text.chars().rev().collect::<String>()}) })
    }
}

impl EventSink for Stub {
    fn emit(&self, event: &CanonicalEvent) {
        self.seen.emit(event);
    }
}

#[tokio::test]
async fn test_adapter_subclass_contract() {
    let stub = Arc::new(Stub { seen: MemorySink::default() });
    let mut tools = ToolRegistry::with_builtins();
    tools.register(stub.clone() as Arc<dyn ToolAdapter>);
    let engine = engine().with_agent(stub.clone() as Arc<dyn AgentAdapter>).with_tools(tools);
    let flow = workflow(
        r#"
name: contract
inputs:
  word: {type: string}
outputs:
  shout:
    from: "${steps.ask.outputs.shout}"
  reversed:
    from: "${steps.flip.outputs.reversed}"
steps:
  - name: ask
    kind: agent
    prompt: "${inputs.word}"
    outputs:
      shout: {type: string, required: true}
  - name: flip
    kind: tool
    tool: reverse
    with: {text: "${steps.ask.outputs.shout}"}
    outputs:
      reversed: {type: string, required: true}
"#,
    );
    // The engine itself is a `WorkflowAdapter`; the stub is its `EventSink`.
    let adapter: &dyn WorkflowAdapter = &engine;
    let result = adapter.run(&flow, inputs(json!({"word": "abc"})), stub.clone() as Arc<dyn EventSink>).await.unwrap();
    assert_eq!(result.overall_status, StepStatus::Succeeded, "{:#?}", result.steps);
    assert_eq!(result.outputs["shout"], json!("ABC"));
    assert_eq!(result.outputs["reversed"], json!("CBA"));
    assert_eq!(result.step("ask").unwrap().model.as_deref(), Some("stub-model"));
    let events = stub.seen.events();
    assert!(events.iter().any(|event| event.event_type == EventType::AgentInvokeStart));
    assert_eq!(events.last().unwrap().event_type, EventType::WorkflowEnd);
}

#[tokio::test]
async fn agent_steps_render_prompts_and_replay_answers() {
    let flow = workflow(
        r#"
name: review
inputs:
  code: {type: string}
outputs:
  verdict:
    from: "${steps.review.outputs.verdict}"
  summary:
    from: "${steps.summarize.outputs.text}"
steps:
  - name: review
    kind: agent
    model: reviewer
    system: You review code.
    prompt: "Review {{ with.lang }}: ${inputs.code}"
    with: {lang: python}
    outputs:
      verdict: {type: string, required: true}
  - name: summarize
    kind: agent
    prompt: "Summarize: ${steps.review.outputs.verdict}"
"#,
    );
    let schema = json!({"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]});
    let entries = vec![
        exchange(
            "review",
            chat("reviewer", Some("You review code."), "Review python: x = {{ 1 }}", Some(schema)),
            "```json\n{\"verdict\": \"approve\"}\n```",
        ),
        exchange("summarize", chat("test-model", None, "Summarize: approve", None), "Looks good."),
    ];
    let runs = tempfile::tempdir().unwrap();
    let outcome = run(
        &engine_with_replay(entries),
        &flow,
        RunRequest {
            inputs: inputs(json!({"code": "x = {{ 1 }}"})),
            runs_dir: Some(runs.path().to_owned()),
            ..RunRequest::default()
        },
    )
    .await;
    assert_eq!(outcome.result.overall_status, StepStatus::Succeeded, "{:#?}", outcome.result.steps);
    assert_eq!(outcome.result.outputs["verdict"], json!("approve"));
    assert_eq!(outcome.result.outputs["summary"], json!("Looks good."));
    let review = outcome.result.step("review").unwrap();
    assert_eq!(review.model.as_deref(), Some("reviewer"));
    assert_eq!(review.metadata["usage"]["prompt_tokens"], json!(10));
    let run_dir = outcome.run_dir.unwrap();
    assert_eq!(std::fs::read_to_string(run_dir.join("logs/review.prompt")).unwrap(), "Review python: x = {{ 1 }}");
}

#[tokio::test]
async fn a_replay_miss_fails_the_step_loudly_and_names_it() {
    let flow = workflow(
        r#"
name: miss
steps:
  - {name: ask, kind: agent, prompt: "something never recorded"}
  - {name: after, kind: tool, tool: noop, depends_on: [ask]}
"#,
    );
    let entries = vec![exchange("ask", chat("test-model", None, "something else", None), "x")];
    let outcome = run(&engine_with_replay(entries), &flow, RunRequest::default()).await;
    let ask = outcome.result.step("ask").unwrap();
    assert_eq!(ask.status, StepStatus::Failed);
    let error = ask.error.as_ref().unwrap();
    assert_eq!(error.error_type.as_deref(), Some("replay_miss"));
    assert!(error.message.contains("step `ask`"), "{}", error.message);
    assert!(error.message.contains(", at character"), "{}", error.message);
    assert_eq!(outcome.result.step("after").unwrap().status, StepStatus::Skipped);
    assert!(!outcome.evaluation.passed);
}

#[tokio::test]
async fn tools_cannot_escape_the_workspace_in_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let flow = workflow(
        r#"
name: escape
steps:
  - {name: sneak, kind: tool, tool: write_file, with: {path: ../outside.txt, content: x}}
"#,
    );
    let workspace = dir.path().join("ws");
    let outcome =
        run(&engine(), &flow, RunRequest { workspace: Some(workspace.clone()), ..RunRequest::default() }).await;
    let step = outcome.result.step("sneak").unwrap();
    assert_eq!(step.status, StepStatus::Failed);
    assert_eq!(step.error.as_ref().unwrap().error_type.as_deref(), Some("path_escapes_workspace"));
    assert!(!dir.path().join("outside.txt").exists());
}

#[tokio::test]
async fn unknown_tools_and_missing_agents_stop_the_run_before_it_starts() {
    let flow = workflow("name: t\nsteps:\n  - {name: a, kind: tool, tool: raed_file}\n");
    let error = engine().run(flow, RunRequest::default()).await.unwrap_err();
    assert!(error.to_string().contains("did you mean `read_file`"), "{error}");
    let flow = workflow("name: t\nsteps:\n  - {name: a, kind: agent, prompt: hi}\n");
    let error = engine().run(flow, RunRequest::default()).await.unwrap_err();
    assert!(error.to_string().contains("--provider"), "{error}");
}
