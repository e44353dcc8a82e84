//! The seed's tool-trace JSONL (v1 and the recommended v2 fields).
//!
//! `{"timestamp", "tool_name", "span_type": "parent"|"child", "trace_id", "parent_trace_id", "args"}`
//! becomes one `tool_call_end` (the capture hook runs after the call, so the clock is
//! `post_only`): `step_name` = `tool_name`, span id = `trace_id` (else `tool_use_id`),
//! parent = `parent_trace_id` (else `agent_id`), `data.input` = `args`, and
//! `x.tooltrace.span_type` keeps the span type. v2 `phase: pre` gives a `tool_call_start`,
//! `phase: post_failure` (or `status: error`) an end with status `error`.

use agentic_core::event::{EventError, EventSource, SpanContext};
use agentic_core::{CanonicalEvent, ErrorClass, EventStatus, EventType};
use serde_json::{Map, Value, json};

use super::{TraceAdapter, TraceFormat, kind_of, no_time, opt_str, rfc3339};

/// Reads tooltrace records.
#[derive(Debug, Clone, Copy, Default)]
pub struct TooltraceAdapter;

impl TraceAdapter for TooltraceAdapter {
    fn format(&self) -> TraceFormat {
        TraceFormat::Tooltrace
    }

    fn ingest(&mut self, record: Value, line: u64, out: &mut Vec<CanonicalEvent>) -> Result<(), String> {
        let Value::Object(object) = &record else {
            return Err(format!("expected a JSON object, found {}", kind_of(&record)));
        };
        let tool_name = match object.get("tool_name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            Some(other) => return Err(format!("`tool_name` must be a non-empty string, found {other}")),
            None => return Err("missing `tool_name`".to_owned()),
        };
        let timestamp = rfc3339(object, "timestamp")?;
        let span_type = opt_str(object, "span_type")?;
        if let Some(kind) = &span_type
            && kind != "parent"
            && kind != "child"
        {
            return Err(format!("`span_type` must be \"parent\" or \"child\", found \"{kind}\""));
        }
        let trace_id = opt_str(object, "trace_id")?;
        let parent_trace_id = opt_str(object, "parent_trace_id")?;
        let tool_use_id = opt_str(object, "tool_use_id")?;
        let agent_id = opt_str(object, "agent_id")?;
        let session_id = opt_str(object, "session_id")?;
        let phase = opt_str(object, "phase")?;
        let status_text = opt_str(object, "status")?;
        let (event_type, status) = match phase.as_deref() {
            None | Some("post") => {
                let failed = matches!(status_text.as_deref(), Some("error" | "failed" | "failure"));
                (EventType::ToolCallEnd, if failed { EventStatus::Error } else { EventStatus::Ok })
            }
            Some("pre") => (EventType::ToolCallStart, EventStatus::Ok),
            Some("post_failure") => (EventType::ToolCallEnd, EventStatus::Error),
            Some(other) => return Err(format!("`phase` must be pre, post or post_failure, found \"{other}\"")),
        };
        let mut event = CanonicalEvent::new(event_type, timestamp.unwrap_or_else(no_time)).with_step(tool_name.clone());
        let mut data = Map::new();
        if let Some(args) = object.get("args") {
            data.insert("input".to_owned(), args.clone());
        }
        if event_type == EventType::ToolCallEnd {
            event.status = Some(status);
        }
        if status == EventStatus::Error {
            let message = opt_str(object, "error").ok().flatten().unwrap_or_else(|| "tool call failed".to_owned());
            event.error = Some(EventError {
                class: ErrorClass::User,
                message,
                error_type: Some("tool_error".to_owned()),
                retryable: false,
            });
        }
        event.data = if data.is_empty() { Value::Null } else { Value::Object(data) };
        event.span = Some(SpanContext {
            trace_id: session_id,
            span_id: trace_id.clone().or_else(|| tool_use_id.clone()),
            parent_span_id: parent_trace_id.or(agent_id),
        });
        let attributes = &mut event.attributes;
        attributes.insert("gen_ai.operation.name".to_owned(), json!("execute_tool"));
        attributes.insert("gen_ai.tool.name".to_owned(), Value::String(tool_name));
        if let Some(id) = &tool_use_id {
            attributes.insert("gen_ai.tool.call.id".to_owned(), Value::String(id.clone()));
        }
        if let Some(kind) = &span_type {
            attributes.insert("x.tooltrace.span_type".to_owned(), Value::String(kind.clone()));
        }
        let clock = match (timestamp.is_some(), event_type) {
            (false, _) => "absent",
            (true, EventType::ToolCallStart) => "observed",
            (true, _) => "post_only",
        };
        attributes.insert("x.time.clock".to_owned(), json!(clock));
        event.source = Some(EventSource {
            format: TraceFormat::Tooltrace.name().to_owned(),
            native_id: tool_use_id.or(trace_id),
            native_type: Some(phase.or(span_type).unwrap_or_else(|| "post".to_owned())),
            line: Some(line),
            raw: Some(record),
        });
        out.push(event);
        Ok(())
    }
}

/// A tooltrace line read without building an event: borrowed fields of the record.
///
/// [`super::TraceReader::next_item`] yields these for well-formed tooltrace lines; the
/// fields equal those of the [`CanonicalEvent`] the adapter would build (a test checks
/// this), and `raw` is the record's text, so nothing is lost.
#[derive(Debug, Clone)]
pub struct TooltraceView<'a> {
    /// `tool_call_start` for `phase: pre`, otherwise `tool_call_end`.
    pub event_type: EventType,
    /// `tool_name`.
    pub tool_name: std::borrow::Cow<'a, str>,
    /// `trace_id`, else `tool_use_id`.
    pub span_id: Option<std::borrow::Cow<'a, str>>,
    /// `parent_trace_id`, else `agent_id`.
    pub parent_span_id: Option<std::borrow::Cow<'a, str>>,
    /// `span_type` is `parent`.
    pub span_type_parent: bool,
    /// The JSON text of `args`.
    pub args: Option<&'a str>,
    /// The 1-based line.
    pub line: u64,
    /// The event's sequence number.
    pub seq: u64,
    /// The record's text.
    pub raw: &'a str,
}

#[derive(serde::Deserialize)]
struct BorrowedRecord<'a> {
    #[serde(borrow, default)]
    timestamp: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    tool_name: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    span_type: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    trace_id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    parent_trace_id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    agent_id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    session_id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    phase: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    status: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    args: Option<&'a serde_json::value::RawValue>,
}

/// The string inside a raw JSON value; `Err` when it is not a plain string.
fn raw_string(raw: Option<&serde_json::value::RawValue>) -> Result<Option<std::borrow::Cow<'_, str>>, ()> {
    let Some(raw) = raw else { return Ok(None) };
    let text = raw.get();
    if text == "null" {
        return Ok(None);
    }
    if text.len() < 2 || !text.starts_with('"') {
        return Err(());
    }
    if text.contains('\\') {
        return serde_json::from_str::<String>(text).map(|s| Some(std::borrow::Cow::Owned(s))).map_err(|_| ());
    }
    Ok(Some(std::borrow::Cow::Borrowed(&text[1..text.len() - 1])))
}

impl TooltraceAdapter {
    /// Reads one line on the fast path; `None` when the line needs the full adapter
    /// (anything unusual, including every malformed record, goes there for its error).
    pub fn view(text: &str, line: u64) -> Option<TooltraceView<'_>> {
        let record: BorrowedRecord<'_> = serde_json::from_str(text).ok()?;
        let tool_name = raw_string(record.tool_name).ok()??;
        if tool_name.is_empty() {
            return None;
        }
        if let Some(timestamp) = raw_string(record.timestamp).ok()? {
            chrono::DateTime::parse_from_rfc3339(&timestamp).ok()?;
        }
        let span_type = raw_string(record.span_type).ok()?;
        let span_type_parent = match span_type.as_deref() {
            None | Some("child") => false,
            Some("parent") => true,
            Some(_) => return None,
        };
        let trace_id = raw_string(record.trace_id).ok()?;
        let parent_trace_id = raw_string(record.parent_trace_id).ok()?;
        let tool_use_id = raw_string(record.tool_use_id).ok()?;
        let agent_id = raw_string(record.agent_id).ok()?;
        raw_string(record.session_id).ok()?;
        raw_string(record.status).ok()?;
        let event_type = match raw_string(record.phase).ok()?.as_deref() {
            None | Some("post" | "post_failure") => EventType::ToolCallEnd,
            Some("pre") => EventType::ToolCallStart,
            Some(_) => return None,
        };
        Some(TooltraceView {
            event_type,
            tool_name,
            span_id: trace_id.or(tool_use_id),
            parent_span_id: parent_trace_id.or(agent_id),
            span_type_parent,
            args: record.args.map(serde_json::value::RawValue::get),
            line,
            seq: 0,
            raw: text,
        })
    }
}
