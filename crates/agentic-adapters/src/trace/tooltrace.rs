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

/// The fields of one record the fast path reads: `Some(None)` is an explicit `null`.
#[derive(Default)]
struct Fields<'a> {
    timestamp: Option<Option<&'a str>>,
    tool_name: Option<Option<&'a str>>,
    span_type: Option<Option<&'a str>>,
    trace_id: Option<Option<&'a str>>,
    parent_trace_id: Option<Option<&'a str>>,
    tool_use_id: Option<Option<&'a str>>,
    agent_id: Option<Option<&'a str>>,
    session_id: Option<Option<&'a str>>,
    phase: Option<Option<&'a str>>,
    status: Option<Option<&'a str>>,
    args: Option<&'a str>,
}

/// A top-level key of a record.
#[derive(Clone, Copy)]
enum Key {
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

/// The deepest nesting the scanner follows; deeper records take the full path.
const MAX_SCAN_DEPTH: usize = 100;

/// A strict, allocation-free scanner for one JSON object per line. It accepts only a
/// subset of JSON (plain-text field values, simple numbers); whenever it returns `None`
/// the full adapter decides, so it can never accept what the adapter would reject.
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    #[inline(always)]
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.bytes.get(self.pos) == Some(&byte)).then(|| self.pos += 1)
    }

    /// A string; returns its inner text and whether it has escapes.
    #[inline(always)]
    fn string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            // Skip plain bytes eight at a time.
            self.pos += find_special(self.bytes.get(self.pos..)?)?;
            match *self.bytes.get(self.pos)? {
                b'"' => {
                    let inner = &self.text[start..self.pos];
                    self.pos += 1;
                    return Some((inner, escaped));
                }
                b'\\' => {
                    escaped = true;
                    match *self.bytes.get(self.pos + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 2,
                        b'u' => {
                            let hex = self.bytes.get(self.pos + 2..self.pos + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            // Surrogates need pairing rules: leave them to the full parser.
                            if matches!(hex[0], b'd' | b'D') {
                                return None;
                            }
                            self.pos += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => self.pos += 1,
            }
        }
    }

    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let digits = self.bytes[self.pos..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 15 || (digits > 1 && self.bytes[self.pos] == b'0') {
            return None;
        }
        self.pos += digits;
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            let fraction = self.bytes[self.pos..].iter().take_while(|b| b.is_ascii_digit()).count();
            if fraction == 0 || fraction > 15 {
                return None;
            }
            self.pos += fraction;
        }
        // Exponents (and so out-of-range numbers) take the full path.
        if matches!(self.bytes.get(self.pos), Some(b'e' | b'E')) {
            return None;
        }
        (self.pos > start).then_some(())
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_SCAN_DEPTH {
            return None;
        }
        match *self.bytes.get(self.pos)? {
            b'"' => self.string().map(|_| ()),
            b'{' => {
                self.pos += 1;
                self.ws();
                if self.eat(b'}').is_some() {
                    return Some(());
                }
                loop {
                    self.ws();
                    self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    if self.eat(b',').is_some() {
                        continue;
                    }
                    return self.eat(b'}');
                }
            }
            b'[' => {
                self.pos += 1;
                self.ws();
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    if self.eat(b',').is_some() {
                        continue;
                    }
                    return self.eat(b']');
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    fn literal(&mut self, literal: &[u8]) -> Option<()> {
        if self.bytes[self.pos..].starts_with(literal) {
            self.pos += literal.len();
            Some(())
        } else {
            None
        }
    }

    /// A plain string (no escapes) or `null`; anything else is `None`.
    #[inline(always)]
    fn plain_or_null(&mut self) -> Option<Option<&'a str>> {
        if self.bytes.get(self.pos) == Some(&b'n') {
            self.literal(b"null")?;
            return Some(None);
        }
        match self.string()? {
            (text, false) => Some(Some(text)),
            (_, true) => None,
        }
    }

    /// An object key without escapes (a key with escapes is `None`). The keys the reader
    /// knows are compared whole, closing quote included, before any byte search.
    #[inline(always)]
    fn key(&mut self) -> Option<Key> {
        let rest = self.bytes.get(self.pos..)?;
        // Constant-size comparisons (no `memcmp` call).
        fn is<const N: usize>(rest: &[u8], quoted: &[u8; N]) -> bool {
            rest.first_chunk::<N>() == Some(quoted)
        }
        let known = match rest.get(1) {
            Some(b't') if is(rest, b"\"timestamp\"") => Some((Key::Timestamp, 11)),
            Some(b't') if is(rest, b"\"tool_name\"") => Some((Key::ToolName, 11)),
            Some(b't') if is(rest, b"\"trace_id\"") => Some((Key::TraceId, 10)),
            Some(b't') if is(rest, b"\"tool_use_id\"") => Some((Key::ToolUseId, 13)),
            Some(b's') if is(rest, b"\"span_type\"") => Some((Key::SpanType, 11)),
            Some(b's') if is(rest, b"\"session_id\"") => Some((Key::SessionId, 12)),
            Some(b's') if is(rest, b"\"status\"") => Some((Key::Status, 8)),
            Some(b'p') if is(rest, b"\"parent_trace_id\"") => Some((Key::ParentTraceId, 17)),
            Some(b'p') if is(rest, b"\"phase\"") => Some((Key::Phase, 7)),
            Some(b'a') if is(rest, b"\"args\"") => Some((Key::Args, 6)),
            Some(b'a') if is(rest, b"\"agent_id\"") => Some((Key::AgentId, 10)),
            _ => None,
        };
        if let Some((key, len)) = known {
            self.pos += len;
            return Some(key);
        }
        let (text, escaped) = self.string()?;
        if escaped {
            return None;
        }
        Some(match text.as_bytes() {
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
            _ => Key::Other,
        })
    }

    fn record(mut self) -> Option<Fields<'a>> {
        let mut fields = Fields::default();
        self.ws();
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_none() {
            loop {
                self.ws();
                let key = self.key()?;
                self.ws();
                self.eat(b':')?;
                self.ws();
                let slot = match key {
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
                    Key::Args => {
                        if fields.args.is_some() {
                            return None;
                        }
                        let start = self.pos;
                        self.value(1)?;
                        fields.args = Some(&self.text[start..self.pos]);
                        self.ws();
                        if self.eat(b',').is_some() {
                            continue;
                        }
                        self.eat(b'}')?;
                        break;
                    }
                    Key::Other => {
                        self.value(1)?;
                        self.ws();
                        if self.eat(b',').is_some() {
                            continue;
                        }
                        self.eat(b'}')?;
                        break;
                    }
                };
                if slot.is_some() {
                    return None;
                }
                *slot = Some(self.plain_or_null()?);
                self.ws();
                if self.eat(b',').is_some() {
                    continue;
                }
                self.eat(b'}')?;
                break;
            }
        }
        self.ws();
        (self.pos == self.bytes.len()).then_some(fields)
    }
}

impl TooltraceAdapter {
    /// Reads one line on the fast path; `None` when the line needs the full adapter
    /// (anything unusual, including every malformed record, goes there for its error).
    pub fn view(text: &str, line: u64) -> Option<TooltraceView<'_>> {
        let fields = Scanner { text, bytes: text.as_bytes(), pos: 0 }.record()?;
        let tool_name = fields.tool_name.flatten()?;
        if tool_name.is_empty() {
            return None;
        }
        if let Some(timestamp) = fields.timestamp.flatten()
            && !plausible_rfc3339(timestamp)
        {
            chrono::DateTime::parse_from_rfc3339(timestamp).ok()?;
        }
        let span_type_parent = match fields.span_type.flatten() {
            None | Some("child") => false,
            Some("parent") => true,
            Some(_) => return None,
        };
        let event_type = match fields.phase.flatten() {
            None | Some("post" | "post_failure") => EventType::ToolCallEnd,
            Some("pre") => EventType::ToolCallStart,
            Some(_) => return None,
        };
        Some(TooltraceView {
            event_type,
            tool_name: std::borrow::Cow::Borrowed(tool_name),
            span_id: borrowed(fields.trace_id).or(borrowed(fields.tool_use_id)),
            parent_span_id: borrowed(fields.parent_trace_id).or(borrowed(fields.agent_id)),
            span_type_parent,
            args: fields.args,
            line,
            seq: 0,
            raw: text,
        })
    }
}

fn borrowed(field: Option<Option<&str>>) -> Option<std::borrow::Cow<'_, str>> {
    field.flatten().map(std::borrow::Cow::Borrowed)
}

/// The index of the first `"`, `\\` or control character (below 0x20) in `bytes`, looking at
/// eight bytes per step (SWAR: the classic "has zero byte" and "has byte less than" tricks;
/// the lowest flagged byte is always a true hit, false hits can only follow it).
#[inline(always)]
pub(crate) fn find_special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let hits = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word))
            & HIGH;
        if hits != 0 {
            return Some(offset + (hits.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks.remainder().iter().position(|b| matches!(b, b'"' | b'\\' | 0..=0x1f)).map(|found| offset + found)
}

/// The index of the first `needle` in `bytes`, eight bytes per step.
pub(crate) fn find_byte(needle: u8, bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let pattern = ONES * u64::from(needle);
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word) ^ pattern;
        let hits = word.wrapping_sub(ONES) & !word & HIGH;
        if hits != 0 {
            return Some(offset + (hits.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks.remainder().iter().position(|b| *b == needle).map(|found| offset + found)
}

/// `YYYY-MM-DDTHH:MM:SSZ` with valid ranges: the common case, checked without chrono.
/// Anything else (fractions, offsets) is checked by chrono.
fn plausible_rfc3339(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'Z'
    {
        return false;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |acc, c| c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0')))
    };
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) =
        (num(0..4), num(5..7), num(8..10), num(11..13), num(14..16), num(17..19))
    else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day) && hour < 24 && minute < 60 && second < 60
}
