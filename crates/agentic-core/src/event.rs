//! The canonical event: one shape for everything that happens in a run or an ingested trace.
//!
//! The engine emits these for every transition; trace adapters turn foreign formats (OTLP,
//! Claude Code hooks, the seed's tool-trace JSONL) into them. The required core is `type`,
//! `timestamp`, `step_name` and `data`; the envelope fields are optional, so older producers
//! stay valid. An ingested event keeps its raw record in `source`, so nothing is lost.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

use crate::workflow::ErrorClass;

/// What happened. Unknown kinds deserialize as `custom`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// A run started.
    WorkflowStart,
    /// A workflow output was resolved.
    WorkflowOutput,
    /// A run ended.
    WorkflowEnd,
    /// An iterative-repair attempt started.
    AttemptStart,
    /// An iterative-repair attempt ended.
    AttemptEnd,
    /// Feedback for the next repair attempt.
    RepairFeedback,
    /// A step's dependencies are done and it waits for a slot.
    StepScheduled,
    /// A step attempt started.
    StepStart,
    /// A step attempt failed and will be retried.
    StepRetry,
    /// A step produced an output.
    StepOutput,
    /// A step was skipped.
    StepSkipped,
    /// A step ended.
    StepEnd,
    /// An agent call started.
    AgentInvokeStart,
    /// An agent call ended.
    AgentInvokeEnd,
    /// A model request was sent.
    LlmRequest,
    /// A streamed model delta.
    LlmDelta,
    /// A model response arrived.
    LlmResponse,
    /// A tool call started.
    ToolCallStart,
    /// A tool call ended.
    ToolCallEnd,
    /// A chat message.
    Message,
    /// State changed.
    StateUpdate,
    /// A checkpoint was saved.
    CheckpointSaved,
    /// The run asks for input.
    Interrupt,
    /// The run resumed.
    Resume,
    /// A framework superstep marker.
    Superstep,
    /// A runtime was set up.
    RuntimeSetup,
    /// A process started.
    ProcessStart,
    /// A process exited.
    ProcessExit,
    /// A log chunk.
    Log,
    /// An artifact was written.
    Artifact,
    /// Evaluation started.
    EvaluationStart,
    /// One evaluation result.
    EvaluationResult,
    /// Evaluation finished.
    EvaluationComplete,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// Anything else; `data.kind` names it.
    #[serde(other)]
    Custom,
}

/// The outcome carried by terminal events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// Succeeded.
    Ok,
    /// Failed.
    Error,
    /// Ran out of time.
    Timeout,
    /// Was cancelled.
    Cancelled,
    /// Did not run.
    Skipped,
}

/// Trace and span identity, kept as the source wrote it (hex, UUID, `toolu_...`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SpanContext {
    /// The trace (or session) id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// This span's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// The parent span's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
}

/// An error attached to an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventError {
    /// The error class.
    pub class: ErrorClass,
    /// What went wrong.
    pub message: String,
    /// A more specific type, for example `missing_required_output`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Whether a retry may help.
    #[serde(default)]
    pub retryable: bool,
}

/// Where an ingested event came from, with its raw record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct EventSource {
    /// The format, for example `otlp_json`, `claude_hook`, `tooltrace`, `native`.
    pub format: String,
    /// The native id of the record, for example a `tool_use_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_id: Option<String>,
    /// The native type, for example `PostToolUse`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_type: Option<String>,
    /// The 1-based line of the record in its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The raw record as read, one copy shared by the events read from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Arc<Value>>,
}

/// The attribute an ingest adapter puts on the end of a call that contradicts a link it made
/// from a subagent to its spawning call: a call that could have spawned a subagent and
/// spawned none, while an earlier such call of its session, linked to a subagent, has not
/// ended (a Claude Code call that was denied ends without a record); or a linked call that
/// ends while its subagent still runs, while another linked call of its type, whose
/// subagent has stopped, has not ended (parallel subagents that started in another order
/// than their calls). Its value is that
/// other call's id. Scopes may hold the subagent's calls under the wrong call; the tier-2
/// engine warns in the notes of scoped rules.
pub const SPAWN_MISATTRIBUTED: &str = "x.claude_hook.spawn_misattributed";

/// Attribute on the start of an OTLP span read after the reader had given out events that
/// started later than it (more spans came in between than it holds to order them): the span
/// is placed after them, out of time order; the tier-2 engine warns in the notes of order
/// rules.
pub const OUT_OF_ORDER: &str = "x.otlp.out_of_order";

/// Attribute on the start of an OTLP span without `startTimeUnixNano` (or with `"0"`, the
/// protobuf default: unset): the span is placed at its end time (it took no time), or before
/// every event when it has no end either; the tier-2 engine warns in the notes of order rules.
pub const START_MISSING: &str = "x.otlp.start_missing";

/// Attribute on an ingested event whose record's time did not read as written: `"no_zone"`
/// (a time without a zone, such as Python's `isoformat()` writes, read as UTC) or
/// `"not_rfc3339"` (not a time: the event has none). Tooltrace and hook records are ordered
/// by their place in the file, so the call is kept; `agentic check` warns.
pub const TIME_UNREAD: &str = "x.time.unread";

/// [`TIME_UNREAD`]'s value for a time without a zone, read as UTC.
pub const TIME_NO_ZONE: &str = "no_zone";

/// [`TIME_UNREAD`]'s value for a time that does not read: the event has none.
pub const TIME_NOT_RFC3339: &str = "not_rfc3339";

/// One canonical event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CanonicalEvent {
    /// Monotonic per run (or per ingested trace); orders events when clocks tie.
    #[serde(default)]
    pub seq: u64,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// When it happened (UTC).
    pub timestamp: DateTime<Utc>,
    /// The step (or tool, for ingested tool calls) it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_name: Option<String>,
    /// Type-specific payload.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub data: Value,
    /// The run it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The iterative-repair attempt number (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Span identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<SpanContext>,
    /// Outcome, on terminal events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<EventStatus>,
    /// Error details, on failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<EventError>,
    /// Extra attributes, for example `gen_ai.tool.name`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub attributes: Map<String, Value>,
    /// Where an ingested event came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EventSource>,
}

impl CanonicalEvent {
    /// A new event of `event_type` at `timestamp` with everything else empty.
    pub fn new(event_type: EventType, timestamp: DateTime<Utc>) -> CanonicalEvent {
        CanonicalEvent {
            seq: 0,
            event_type,
            timestamp,
            step_name: None,
            data: Value::Null,
            run_id: None,
            attempt: None,
            span: None,
            status: None,
            error: None,
            attributes: Map::new(),
            source: None,
        }
    }

    /// Sets the step name.
    pub fn with_step(mut self, step_name: impl Into<String>) -> CanonicalEvent {
        self.step_name = Some(step_name.into());
        self
    }

    /// Sets the payload.
    pub fn with_data(mut self, data: Value) -> CanonicalEvent {
        self.data = data;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_canonical_event_serializable() {
        let mut event = CanonicalEvent::new(EventType::ToolCallEnd, "2026-03-01T12:00:00.123456789Z".parse().unwrap())
            .with_step("Read")
            .with_data(serde_json::json!({"input": {"path": "a.md"}}));
        event.seq = 42;
        event.status = Some(EventStatus::Ok);
        event.source = Some(EventSource {
            format: "claude_hook".into(),
            native_id: Some("toolu_1".into()),
            native_type: Some("PostToolUse".into()),
            line: Some(3),
            raw: Some(Arc::new(serde_json::json!({"tool_name": "Read"}))),
        });
        let text = serde_json::to_string(&event).unwrap();
        assert!(text.contains("\"type\":\"tool_call_end\""));
        let back: CanonicalEvent = serde_json::from_str(&text).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn unknown_event_types_become_custom() {
        let event: CanonicalEvent =
            serde_json::from_str(r#"{"type": "something_new", "timestamp": "2026-01-01T00:00:00Z"}"#).unwrap();
        assert_eq!(event.event_type, EventType::Custom);
    }
}
