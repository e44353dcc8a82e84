//! The seed's tool-trace JSONL (v1 and the recommended v2 fields).
//!
//! `{"timestamp", "tool_name", "span_type": "parent"|"child", "trace_id", "parent_trace_id", "args"}`
//! becomes one `tool_call_end` (the capture hook runs after the call, so the clock is
//! `post_only`): `step_name` = `tool_name`, span id = `trace_id` (else `tool_use_id`),
//! parent = `parent_trace_id` (else `agent_id`), `data.input` = `args`, and
//! `x.tooltrace.span_type` keeps the span type. v2 `phase: pre` gives a `tool_call_start`,
//! `phase: post_failure` (or `status: error`) an end with status `error`; a start whose
//! span id would be a `tool_use_id` that another session's open call has gets
//! `ID@SESSION` (span ids are file-wide), and its end takes it; an end with no start of its
//! own while another session's call of its id is open gets `ID@SESSION` too.

use agentic_core::event::{EventError, EventSource, SpanContext};
use agentic_core::{CanonicalEvent, ErrorClass, EventStatus, EventType};
use std::ops::Range;
use std::sync::Arc;

use agentic_core::json_scan::{JsonScanner, KeySet};

use super::ends::{LatestEnds, LineIds, started_again};
use super::layout::{Layouts, Member};
use serde_json::{Map, Value, json};

use super::{TraceAdapter, TraceFormat, kind_of, member, no_time, opt_id, opt_str, record_time};

/// Reads tooltrace records.
///
/// v2 pairs a `phase: pre` record with its `post` or `post_failure` by `tool_use_id` (the
/// hook pairs them that way): a writer that numbers every record's `trace_id` (as v1 does)
/// gives the pre and the post different ones, and the end takes its start's span id, so the
/// call counts once. A v2 record written twice (a `pre` of a call in flight, or a `post` of
/// one of the id's latest ends, with the same session, caller, tool, arguments and outcome) is kept
/// as a `custom` event with `data.repeated: true`.
#[derive(Debug, Clone, Default)]
pub struct TooltraceAdapter {
    /// Calls started (`phase: pre` with a `tool_use_id`) and not ended, by `tool_use_id`:
    /// each one's session and span id (at most [`MAX_OPEN_CALLS`] ids). A record whose span
    /// id would be a `tool_use_id` that another session's call has open gets `ID@SESSION`
    /// instead, since tooltrace span ids are file-wide.
    open_calls: super::IdMap<String, Vec<OpenCall>>,
    /// What the latest v2 calls that ended held, by `tool_use_id`, to tell a repeated end
    /// record.
    ended_calls: LatestEnds<String, EndedCall>,
    /// Span ids made from a line number.
    line_ids: LineIds,
}

/// A v2 call that ended: its session, tool, hash of its arguments and caller (as for
/// [`OpenCall`]), whether it failed, and the same hash of its `pre` when one was read.
type EndedCall = (Option<String>, String, u64, bool, Option<u64>);

/// A v2 call in flight: its session, its span id, its tool, a hash of its arguments and
/// caller (`agent_id`, `parent_trace_id`)
/// ([`hash_json`](super::hash_json): the same arguments in any key order), and a hash of the
/// caller alone.
type OpenCall = (Option<String>, Option<String>, String, u64, u64);

/// The most `tool_use_id`s of v2 calls in flight whose end is paired by them.
const MAX_OPEN_CALLS: usize = 65_536;

/// The most v2 calls in flight under one `tool_use_id`.
const MAX_OPEN_PER_ID: usize = 256;

impl TraceAdapter for TooltraceAdapter {
    fn format(&self) -> TraceFormat {
        TraceFormat::Tooltrace
    }

    fn ingest(&mut self, record: Value, line: u64, out: &mut Vec<CanonicalEvent>) -> Result<(), String> {
        let Value::Object(object) = &record else {
            return Err(format!("expected a JSON object, found {}", kind_of(&record)));
        };
        // A Claude Code hook record in a tooltrace file (a capture that changed format part
        // way through): read as tooltrace, its arguments (`tool_input`) would be lost and a
        // call counted at its start and again at its end. (Before `tool_name`: hook records
        // of other events have none.)
        if let Some(field) = ["hook_event_name", "tool_input"].into_iter().find(|field| member(object, field).is_some())
        {
            return Err(format!(
                "`{field}` is a field of Claude Code hook records, not of tooltrace (whose arguments are `args`): \
                 keep each format in a file of its own and read the hook records with `--trace-format claude_hook`"
            ));
        }
        let tool_name = match member(object, "tool_name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            Some(other) => return Err(format!("`tool_name` must be a non-empty string, found {other}")),
            None => {
                let why = super::other_format_note(&record, TraceFormat::Tooltrace).unwrap_or_default();
                return Err(format!("missing `tool_name`{why}"));
            }
        };
        let record_time = record_time(object, "timestamp");
        let timestamp = record_time.time;
        let span_type = opt_str(object, "span_type")?;
        if let Some(kind) = &span_type
            && kind != "parent"
            && kind != "child"
        {
            return Err(format!("`span_type` must be \"parent\" or \"child\", found \"{kind}\""));
        }
        let trace_id = opt_id(object, "trace_id")?;
        let parent_trace_id = opt_id(object, "parent_trace_id")?;
        let tool_use_id = opt_id(object, "tool_use_id")?;
        let agent_id = opt_id(object, "agent_id")?;
        let session_id = opt_id(object, "session_id")?;
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
        record_time.mark(&mut event);
        let mut data = Map::new();
        if let Some(args) = member(object, "args") {
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
        let mut span_id = trace_id.clone().or_else(|| tool_use_id.clone());
        if phase.is_some()
            && let Some(call) = &tool_use_id
        {
            let open = self.open_calls.get(call);
            // Who made the call, and the arguments with it (two agents' calls are never copies
            // of each other; an end by another agent still ends a call in flight of its tool).
            use std::hash::{Hash, Hasher};
            let caller = {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                (&agent_id, &parent_trace_id).hash(&mut hasher);
                hasher.finish()
            };
            let args = {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                if let Some(args) = member(object, "args") {
                    super::hash_json(args, &mut hasher);
                }
                caller.hash(&mut hasher);
                hasher.finish()
            };
            let same_session = |calls: &Vec<OpenCall>| calls.iter().any(|(session, ..)| *session == session_id);
            let failed = status == EventStatus::Error;
            // A record written twice (a capture registered twice) is a repeat: a start that
            // holds the session, tool and arguments of a call in flight under its id, or an
            // end that holds those (and the outcome) of one of the id's latest ends and ends
            // no call in flight with the same arguments.
            // Not a repeat of an end whose arguments were not its `pre`'s while a call that
            // started as that one did is in flight (`started_again`).
            let in_flight = |start: &u64| {
                open.is_some_and(|calls| {
                    calls.iter().any(|(session, _, tool, hash, _)| {
                        *session == session_id && *tool == tool_name && hash == start
                    })
                })
            };
            let repeats_end = event_type == EventType::ToolCallEnd
                && self.ended_calls.of(call).iter().any(|(session, tool, hash, fail, start)| {
                    *session == session_id
                        && *tool == tool_name
                        && *hash == args
                        && *fail == failed
                        && !started_again(start.as_ref(), hash, in_flight)
                });
            // An end ends this session's call in flight under the id with the same arguments,
            // else (unless it repeats an end) the latest of its tool by the same caller, else
            // the latest of its tool (compared as JSON values; an older one is more likely a
            // start a crashed run left open; a writer may leave the caller out of the end).
            // Another tool's end, and a start while this session has a call in flight under
            // the id, is a call of its own: its span id is made unique by its line (unless it
            // has a `trace_id`), and the calls in flight stay so.
            let mine = |(session, _, tool, ..): &&OpenCall| *session == session_id && *tool == tool_name;
            let at = if event_type == EventType::ToolCallEnd {
                open.and_then(|calls| {
                    calls.iter().position(|call| mine(&call) && call.3 == args).or_else(|| {
                        let latest = |by_caller: bool| {
                            calls.iter().rposition(|call| mine(&call) && (!by_caller || call.4 == caller))
                        };
                        (!repeats_end).then(|| latest(true).or_else(|| latest(false))).flatten()
                    })
                })
            } else {
                None
            };
            let repeated = if event_type == EventType::ToolCallStart {
                open.is_some_and(|calls| calls.iter().any(|call| mine(&call) && call.3 == args))
            } else {
                at.is_none() && repeats_end
            };
            if repeated {
                // Kept as a `custom` event (nothing is lost): counting it would count one
                // call twice.
                let mut repeat = CanonicalEvent::new(EventType::Custom, event.timestamp);
                let kind = phase.clone().unwrap_or_default();
                repeat.data = json!({ "kind": kind, "repeated": true });
                repeat.span = Some(SpanContext {
                    trace_id: session_id,
                    span_id: None,
                    parent_span_id: parent_trace_id.or(agent_id),
                });
                repeat.source = Some(EventSource {
                    format: TraceFormat::Tooltrace.name().to_owned(),
                    native_id: Some(call.clone()),
                    native_type: phase,
                    line: Some(line),
                    raw: Some(Arc::new(record)),
                });
                out.push(repeat);
                return Ok(());
            }
            if at.is_none() && open.is_some_and(same_session) && trace_id.is_none() {
                span_id = Some(self.line_ids.make(call, line));
            }
            if trace_id.is_none() && at.is_none() && open.is_some() && span_id.as_deref() == Some(call.as_str()) {
                // Another session's call of this id is in flight: the same span id would make
                // this start and that call one call, or make this end (of a call of its own)
                // end that one.
                span_id = Some(format!("{call}@{}", session_id.as_deref().unwrap_or("")));
            }
            let entry = (session_id.clone(), span_id.clone(), tool_name.clone(), args, caller);
            if event_type == EventType::ToolCallStart {
                if let Some(calls) = self.open_calls.get_mut(call) {
                    // Memory stays bounded: the oldest call in flight is forgotten (its end then
                    // counts as a call of its own).
                    if calls.len() == MAX_OPEN_PER_ID {
                        calls.remove(0);
                    }
                    calls.push(entry);
                } else if self.open_calls.len() < MAX_OPEN_CALLS {
                    self.open_calls.insert(call.clone(), vec![entry]);
                }
            } else {
                let mut started_as = None;
                if let (Some(calls), Some(at)) = (self.open_calls.get_mut(call), at) {
                    let ended = calls.remove(at);
                    span_id = ended.1;
                    started_as = Some(ended.3);
                    if calls.is_empty() {
                        self.open_calls.remove(call);
                    }
                }
                self.ended_calls.note(call.clone(), (session_id.clone(), tool_name.clone(), args, failed, started_as));
            }
        }
        event.span = Some(SpanContext { trace_id: session_id, span_id, parent_span_id: parent_trace_id.or(agent_id) });
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
            raw: Some(Arc::new(record)),
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
    /// The call failed: `phase: post_failure`, or `status: error` (also `failed`, `failure`).
    pub failed: bool,
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
    /// `session_id` (it keys no id: tooltrace ids are file-wide; a file of several sessions
    /// is warned about).
    pub session_id: Option<&'a str>,
}

/// A field's byte range in the scanned bytes, or no value (absent or `null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    start: u32,
    end: u32,
}

/// A field starts absent.
impl Default for Field {
    fn default() -> Field {
        Field::ABSENT
    }
}

impl Field {
    /// The key did not occur.
    const ABSENT: Field = Field { start: u32::MAX, end: u32::MAX };
    /// The key occurred with `null`.
    const NULL: Field = Field { start: u32::MAX, end: 0 };

    pub(super) fn of(range: Range<usize>) -> Field {
        Field { start: range.start as u32, end: range.end as u32 }
    }

    /// A value (not absent, not `null`).
    #[inline(always)]
    pub(crate) fn is_present(self) -> bool {
        self.start != u32::MAX
    }

    /// An empty string (`""`).
    #[inline(always)]
    pub(crate) fn is_empty_text(self) -> bool {
        self.start == self.end && self.start != u32::MAX
    }

    /// The range of a string value.
    #[inline(always)]
    pub(crate) fn range(self) -> Option<Range<usize>> {
        (self.start != u32::MAX).then_some(self.start as usize..self.end as usize)
    }

    /// The text of a string value.
    #[inline(always)]
    pub(crate) fn text(self, bytes: &[u8]) -> Option<&[u8]> {
        bytes.get(self.range()?)
    }

    /// The text of a string value, in checked UTF-8.
    #[inline(always)]
    pub(crate) fn str(self, text: &str) -> Option<&str> {
        text.get(self.range()?)
    }

    /// The first value of two (`a`, else `b`).
    fn or(self, other: Field) -> Field {
        if self.start != u32::MAX { self } else { other }
    }
}

/// A well-formed tooltrace record found by [`scan_line`]: what a [`TooltraceView`] holds, as
/// byte ranges.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    pub(crate) event_type: EventType,
    /// An end with status `error` (`phase: post_failure`, or `status: error`).
    pub(crate) failed: bool,
    pub(crate) span_type_parent: bool,
    pub(crate) tool_name: Field,
    pub(crate) span_id: Field,
    pub(crate) parent_span_id: Field,
    pub(crate) args: Field,
    /// The record's text without the whitespace around it.
    pub(crate) raw: Field,
    pub(crate) session_id: Field,
}

impl Record {
    /// The view of this record in `text` (the bytes it was scanned from).
    #[inline(always)]
    pub(crate) fn view<'a>(&self, text: &'a str, line: u64, seq: u64) -> Option<TooltraceView<'a>> {
        Some(TooltraceView {
            event_type: self.event_type,
            failed: self.failed,
            tool_name: std::borrow::Cow::Borrowed(self.tool_name.str(text)?),
            span_id: self.span_id.str(text).map(std::borrow::Cow::Borrowed),
            parent_span_id: self.parent_span_id.str(text).map(std::borrow::Cow::Borrowed),
            span_type_parent: self.span_type_parent,
            args: self.args.str(text),
            line,
            seq,
            raw: self.raw.str(text)?,
            session_id: self.session_id.str(text),
        })
    }
}

/// What [`scan_line`] found.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Line {
    /// A well-formed tooltrace record.
    Record(Record),
    /// Only spaces, tabs and carriage returns.
    Blank,
    /// Anything else: the full reader decides (it may still be a record, or an error).
    Other,
}

/// The fields of one record: `Field::ABSENT` until the key is seen.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Fields {
    pub(super) timestamp: Field,
    pub(super) tool_name: Field,
    pub(super) span_type: Field,
    pub(super) trace_id: Field,
    pub(super) parent_trace_id: Field,
    pub(super) tool_use_id: Field,
    pub(super) agent_id: Field,
    pub(super) session_id: Field,
    pub(super) phase: Field,
    pub(super) status: Field,
    pub(super) args: Field,
}

/// A top-level key of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Timestamp,
    ToolName,
    SpanType,
    TraceId,
    ParentTraceId,
    ToolUseId,
    AgentId,
    SessionId,
    Phase,
    Status,
    Args,
    Other,
}

/// The field a key's plain string fills (`None` for `args` and unknown keys).
#[inline(always)]
pub(super) fn field_slot(fields: &mut Fields, key: Key) -> Option<&mut Field> {
    Some(match key {
        Key::Timestamp => &mut fields.timestamp,
        Key::ToolName => &mut fields.tool_name,
        Key::SpanType => &mut fields.span_type,
        Key::TraceId => &mut fields.trace_id,
        Key::ParentTraceId => &mut fields.parent_trace_id,
        Key::ToolUseId => &mut fields.tool_use_id,
        Key::AgentId => &mut fields.agent_id,
        Key::SessionId => &mut fields.session_id,
        Key::Phase => &mut fields.phase,
        Key::Status => &mut fields.status,
        Key::Args | Key::Other => return None,
    })
}

/// A key right after its opening quote, moved past its closing quote: the keys the reader
/// knows are recognised by their first eight bytes and compared whole (closing quote
/// included) without scanning; any other key is scanned (`None` for one with escapes).
#[inline(always)]
fn key(scanner: &mut JsonScanner<'_>) -> Option<Key> {
    /// The first eight bytes of `text` (zero-padded) as a little-endian number.
    const fn head(text: &[u8]) -> u64 {
        let mut out = 0u64;
        let mut idx = 0;
        while idx < text.len() && idx < 8 {
            out |= (text[idx] as u64) << (8 * idx);
            idx += 1;
        }
        out
    }
    const TIMESTAMP: u64 = head(b"timestam");
    const TOOL_NAME: u64 = head(b"tool_nam");
    const SPAN_TYPE: u64 = head(b"span_typ");
    const TRACE_ID: u64 = head(b"trace_id");
    const AGENT_ID: u64 = head(b"agent_id");
    const SESSION_ID: u64 = head(b"session_");
    const TOOL_USE_ID: u64 = head(b"tool_use");
    const PARENT_TRACE_ID: u64 = head(b"parent_t");
    const ARGS: u64 = head(b"args\"");
    const PHASE: u64 = head(b"phase\"");
    const STATUS: u64 = head(b"status\"");
    let bytes = scanner.bytes();
    let pos = scanner.pos();
    if let Some(first) = bytes.get(pos..pos + 8) {
        let first = u64::from_le_bytes(first.try_into().ok()?);
        let rest = |tail: &[u8]| bytes.get(pos + 8..pos + 8 + tail.len()) == Some(tail);
        // (key, length with the closing quote)
        let known = match first {
            TIMESTAMP if rest(b"p\"") => Some((Key::Timestamp, 10)),
            TOOL_NAME if rest(b"e\"") => Some((Key::ToolName, 10)),
            SPAN_TYPE if rest(b"e\"") => Some((Key::SpanType, 10)),
            TRACE_ID if rest(b"\"") => Some((Key::TraceId, 9)),
            AGENT_ID if rest(b"\"") => Some((Key::AgentId, 9)),
            SESSION_ID if rest(b"id\"") => Some((Key::SessionId, 11)),
            TOOL_USE_ID if rest(b"_id\"") => Some((Key::ToolUseId, 12)),
            PARENT_TRACE_ID if rest(b"race_id\"") => Some((Key::ParentTraceId, 16)),
            _ if first & 0xff_ffff_ffff == ARGS => Some((Key::Args, 5)),
            _ if first & 0xffff_ffff_ffff == PHASE => Some((Key::Phase, 6)),
            _ if first & 0xff_ffff_ffff_ffff == STATUS => Some((Key::Status, 7)),
            _ => None,
        };
        if let Some((key, len)) = known {
            scanner.advance(len);
            return Some(key);
        }
    }
    let start = scanner.pos();
    let (end, escaped) = scanner.string_tail()?;
    if escaped {
        return None;
    }
    Some(match &bytes[start..end] {
        b"timestamp" => Key::Timestamp,
        b"tool_name" => Key::ToolName,
        b"span_type" => Key::SpanType,
        b"trace_id" => Key::TraceId,
        b"parent_trace_id" => Key::ParentTraceId,
        b"tool_use_id" => Key::ToolUseId,
        b"agent_id" => Key::AgentId,
        b"session_id" => Key::SessionId,
        b"phase" => Key::Phase,
        b"status" => Key::Status,
        b"args" => Key::Args,
        // Claude Code hook fields: the full adapter refuses the record.
        b"hook_event_name" | b"tool_input" => return None,
        _ => Key::Other,
    })
}

/// A plain string (no escapes) or `null`; anything else is `None`.
#[inline(always)]
fn plain_or_null(scanner: &mut JsonScanner<'_>) -> Option<Field> {
    match scanner.peek() {
        b'"' => match scanner.string()? {
            (range, false) => Some(Field::of(range)),
            (_, true) => None,
        },
        b'n' => {
            scanner.literal(b"null")?;
            Some(Field::NULL)
        }
        _ => None,
    }
}

/// One record from the scanner's position to the end of its line (a line feed, which is
/// consumed, or the end of the bytes); `None` when it is not a plain record. With `members`,
/// the record's members are listed there (for [`Layouts::learn`]; a known key with `null`
/// is left out: its bytes are part of the layout).
#[inline(always)]
fn record(
    scanner: &mut JsonScanner<'_>,
    fields: &mut Fields,
    mut members: Option<&mut Vec<Member>>,
) -> Option<Range<usize>> {
    scanner.ws();
    let start = scanner.pos();
    scanner.eat(b'{')?;
    scanner.ws();
    // Other keys seen, to leave a record that repeats one to the full parse (known keys are
    // checked through their fields).
    let mut others = KeySet::default();
    if scanner.eat(b'}').is_none() {
        loop {
            scanner.eat(b'"')?;
            let key_start = scanner.pos();
            let key = key(scanner)?;
            // `key` consumed the closing quote.
            if key == Key::Other && !others.first_time(scanner.bytes(), key_start..scanner.pos().checked_sub(1)?) {
                return None;
            }
            scanner.ws();
            scanner.eat(b':')?;
            scanner.ws();
            let value_start = scanner.pos();
            let member = match field_slot(fields, key) {
                Some(slot) => {
                    if *slot != Field::ABSENT {
                        return None;
                    }
                    *slot = plain_or_null(scanner)?;
                    slot.range().map(|content| Member { key, value: (content.start, content.end), plain: true })
                }
                None => {
                    scanner.value(1)?;
                    if key == Key::Args {
                        if fields.args != Field::ABSENT {
                            return None;
                        }
                        fields.args = Field::of(value_start..scanner.pos());
                    }
                    Some(Member { key, value: (value_start, scanner.pos()), plain: false })
                }
            };
            if let (Some(list), Some(member)) = (members.as_deref_mut(), member) {
                list.push(member);
            }
            scanner.ws();
            if scanner.eat(b',').is_some() {
                scanner.ws();
                continue;
            }
            scanner.eat(b'}')?;
            break;
        }
    }
    let raw = start..scanner.pos();
    line_end(scanner)?;
    Some(raw)
}

/// Whitespace and then the end of the line: moves past its line feed (or to the end of the
/// bytes); `None` when anything else follows.
#[inline(always)]
fn line_end(scanner: &mut JsonScanner<'_>) -> Option<()> {
    if scanner.peek() != b'\n' {
        scanner.ws();
    }
    match scanner.peek() {
        b'\n' => scanner.advance(1),
        _ if scanner.at_end() => {}
        _ => return None,
    }
    Some(())
}

/// The record of `fields` when the full adapter would read it the same way.
#[inline(always)]
fn accept(bytes: &[u8], fields: &Fields, raw: Range<usize>, hour: &mut CheckedHour) -> Option<Record> {
    if fields.tool_name.text(bytes)?.is_empty() {
        return None;
    }
    // v2 calls are paired by `tool_use_id` and session (state the full adapter keeps): a
    // start or an end with a `tool_use_id` goes to the full adapter.
    if fields.phase.is_present() && fields.tool_use_id.is_present() {
        return None;
    }
    // An empty id is an absent one: the full adapter reads such a line.
    if fields.trace_id.is_empty_text()
        | fields.parent_trace_id.is_empty_text()
        | fields.tool_use_id.is_empty_text()
        | fields.agent_id.is_empty_text()
        | fields.session_id.is_empty_text()
    {
        return None;
    }
    if let Some(timestamp) = fields.timestamp.text(bytes)
        && !hour.plausible(timestamp)
    {
        chrono::DateTime::parse_from_rfc3339(std::str::from_utf8(timestamp).ok()?).ok()?;
    }
    let span_type_parent = match fields.span_type.text(bytes) {
        None | Some(b"child") => false,
        Some(b"parent") => true,
        Some(_) => return None,
    };
    let (event_type, failed) = match fields.phase.text(bytes) {
        None | Some(b"post") => {
            (EventType::ToolCallEnd, matches!(fields.status.text(bytes), Some(b"error" | b"failed" | b"failure")))
        }
        Some(b"post_failure") => (EventType::ToolCallEnd, true),
        Some(b"pre") => (EventType::ToolCallStart, false),
        Some(_) => return None,
    };
    Some(Record {
        event_type,
        failed,
        span_type_parent,
        tool_name: fields.tool_name,
        span_id: fields.trace_id.or(fields.tool_use_id),
        parent_span_id: fields.parent_trace_id.or(fields.agent_id),
        args: fields.args,
        raw: Field::of(raw),
        session_id: fields.session_id,
    })
}

/// Scans the line of `bytes` (valid UTF-8) that starts at `start`, and returns what it is
/// and where the next line starts. Only a line the full reader reads as exactly this record
/// is a [`Line::Record`]; a line with anything unusual (escapes in the fields the reader
/// takes as text, other whitespace, numbers outside the simple forms) is [`Line::Other`].
/// A line of a shape in `layouts` is read by its layout; the shapes of other accepted lines
/// are learned.
pub(crate) fn scan_line(bytes: &[u8], start: usize, layouts: &mut Layouts) -> (Line, usize) {
    if bytes.len() >= u32::MAX as usize {
        return other_line(bytes, start, start);
    }
    let mut fields = Fields::default();
    if let Some((raw, end)) = layouts.read(bytes, start, &mut fields) {
        let mut scanner = JsonScanner::new(bytes, end);
        if line_end(&mut scanner).is_some() {
            return match accept(bytes, &fields, raw, &mut layouts.hour) {
                Some(record) => (Line::Record(record), scanner.pos()),
                None => (Line::Other, scanner.pos()),
            };
        }
    }
    // A layout may have filled some fields before it failed.
    fields = Fields::default();
    let mut members = layouts.take_members();
    let mut scanner = JsonScanner::new(bytes, start);
    let line = match record(&mut scanner, &mut fields, Some(&mut members)) {
        // The scanner is at the next line.
        Some(raw) => match accept(bytes, &fields, raw.clone(), &mut layouts.hour) {
            Some(record) => {
                layouts.learn(bytes, start, &members, raw);
                (Line::Record(record), scanner.pos())
            }
            None => (Line::Other, scanner.pos()),
        },
        None => other_line(bytes, start, scanner.pos()),
    };
    layouts.give_members(members);
    line
}

/// A line that is not a record: blank, or for the full reader; `from` is a position in it.
fn other_line(bytes: &[u8], start: usize, from: usize) -> (Line, usize) {
    // Nothing of a line is scanned past its line feed.
    let from = from.min(bytes.len());
    let end = memchr::memchr(b'\n', &bytes[from..]).map_or(bytes.len(), |nl| from + nl);
    let next = (end + 1).min(bytes.len());
    if bytes[start..end].iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return (Line::Blank, next);
    }
    (Line::Other, next)
}

impl TooltraceAdapter {
    /// Reads one line (without its line feed) on the fast path; `None` when the line needs
    /// the full adapter (anything unusual, including every malformed record, goes there for
    /// its error).
    pub fn view(text: &str, line: u64) -> Option<TooltraceView<'_>> {
        let mut scanner = JsonScanner::new(text.as_bytes(), 0);
        if text.len() >= u32::MAX as usize {
            return None;
        }
        let mut fields = Fields::default();
        let raw = record(&mut scanner, &mut fields, None)?;
        if !scanner.at_end() {
            return None;
        }
        accept(text.as_bytes(), &fields, raw, &mut CheckedHour::default())?.view(text, line, 0)
    }
}

/// Checks that a timestamp is `YYYY-MM-DDTHH:MM:SSZ` with valid ranges (the common case,
/// without chrono; anything else, such as fractions or offsets, is left to chrono). It
/// remembers the date and hour (`YYYY-MM-DDTHH:`) of the last timestamp whose date and hour
/// were valid: a trace's next timestamps mostly share them, so only their minutes and
/// seconds are left to check.
#[derive(Debug, Default)]
pub(super) struct CheckedHour([u8; 14]);

impl CheckedHour {
    /// Whether `text` is a plain valid timestamp (see [`CheckedHour`]).
    #[inline(always)]
    fn plausible(&mut self, text: &[u8]) -> bool {
        let Ok(b) = <&[u8; 20]>::try_from(text) else { return false };
        if b[..14] != self.0 {
            if !plausible_date_hour(b) {
                return false;
            }
            self.0.copy_from_slice(&b[..14]);
        }
        plausible_minutes(b)
    }
}

/// Bytes 0..16 of a plain timestamp (see [`CheckedHour`]): a valid date and hour (`YYYY-MM-DDTHH:`)
/// and two digits after them.
#[inline(always)]
fn plausible_date_hour(b: &[u8; 20]) -> bool {
    // Two words: bytes 0..8 and 8..16. In each, `digits` marks the bytes that must be digits
    // and the other bytes are separators, which must equal the expected ones.
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    const fn mask(positions: &[usize]) -> u64 {
        let mut out = 0u64;
        let mut idx = 0;
        while idx < positions.len() {
            out |= 0xff << (8 * positions[idx]);
            idx += 1;
        }
        out
    }
    const fn bytes(text: &[u8; 8]) -> u64 {
        u64::from_le_bytes(*text)
    }
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    const SIXES: u64 = 0x0606_0606_0606_0606;
    const HIGH: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    let digits_ok = |word: u64, digits: u64| {
        (word & digits & HIGH) == (ZEROS & digits) && ((word + (SIXES & digits)) & digits & HIGH) == (ZEROS & digits)
    };
    // "YYYY-MM-", "DDTHH:MM".
    let (w0, w1) = (word(0), word(8));
    let ok = digits_ok(w0, mask(&[0, 1, 2, 3, 5, 6]))
        && w0 & mask(&[4, 7]) == bytes(b"\0\0\0\0-\0\0-")
        && digits_ok(w1, mask(&[0, 1, 3, 4, 6, 7]))
        && w1 & mask(&[2, 5]) == bytes(b"\0\0T\0\0:\0\0");
    if !ok {
        return false;
    }
    let digit = |idx: usize| u32::from(b[idx] - b'0');
    let year = digit(0) * 1000 + digit(1) * 100 + digit(2) * 10 + digit(3);
    let (month, day, hour) = (digit(5) * 10 + digit(6), digit(8) * 10 + digit(9), digit(11) * 10 + digit(12));
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day) && hour < 24
}

/// Bytes 14..20 of a plain timestamp (see [`CheckedHour`]): valid minutes and seconds (`MM:SSZ`).
#[inline(always)]
fn plausible_minutes(b: &[u8; 20]) -> bool {
    let below_sixty = |at: usize| matches!(b[at], b'0'..=b'5') && b[at + 1].is_ascii_digit();
    below_sixty(14) && b[16] == b':' && below_sixty(17) && b[19] == b'Z'
}

#[cfg(test)]
mod tests {
    use super::CheckedHour;

    /// The check of a timestamp with nothing remembered.
    fn plausible_rfc3339(text: &[u8]) -> bool {
        CheckedHour::default().plausible(text)
    }
    use proptest::prelude::*;

    #[test]
    fn plain_times_are_checked_like_chrono() {
        // (text, taken by the fast check); everything else goes to chrono.
        for (text, fast) in [
            ("2026-02-19T10:00:00Z", true),
            ("2024-02-29T23:59:59Z", true),
            ("2000-02-29T00:00:00Z", true),
            ("1900-02-29T00:00:00Z", false),
            ("2023-02-29T00:00:00Z", false),
            ("2026-13-01T00:00:00Z", false),
            ("2026-00-10T00:00:00Z", false),
            ("2026-04-31T00:00:00Z", false),
            ("2026-04-30T24:00:00Z", false),
            ("2026-04-30T23:60:00Z", false),
            ("2026-04-30T23:59:60Z", false),
            ("2026-04-30 23:59:59Z", false),
            ("2026-04-30T23:59:59z", false),
            ("2026-04-3OT23:59:59Z", false),
            ("20:6-04-30T23:59:59Z", false),
            ("2026-04-30T23:59:59+", false),
        ] {
            assert_eq!(plausible_rfc3339(text.as_bytes()), fast, "{text}");
            if fast {
                assert!(chrono::DateTime::parse_from_rfc3339(text).is_ok(), "{text}");
            }
        }
    }

    proptest! {
        #[test]
        fn never_accepts_what_chrono_rejects(text in "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z|[0-9:T Zz/-]{20}") {
            if plausible_rfc3339(text.as_bytes()) {
                prop_assert!(chrono::DateTime::parse_from_rfc3339(&text).is_ok(), "{}", text);
            }
        }

        /// Remembering the last date and hour changes no answer, whatever follows it.
        #[test]
        fn a_remembered_hour_answers_like_the_full_check(
            hour in "2026-02-(28|29|30)T(0[0-9]|2[3-5]):",
            tails in proptest::collection::vec("[0-9:Z ]{6}|[0-6][0-9]:[0-6][0-9]Z", 1..20),
        ) {
            let mut checked = CheckedHour::default();
            for tail in &tails {
                let text = format!("{hour}{tail}");
                prop_assert_eq!(checked.plausible(text.as_bytes()), plausible_rfc3339(text.as_bytes()), "{}", text);
            }
        }
    }
}
