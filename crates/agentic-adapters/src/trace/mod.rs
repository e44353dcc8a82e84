//! Trace ingest: foreign trace files into canonical events, streaming, lossless.
//!
//! A [`TraceAdapter`] turns one parsed record of its format into [`CanonicalEvent`]s.
//! [`TraceReader`] reads any `BufRead` record by record (one JSON value per line, or a
//! pretty-printed document spanning lines), detects the format from the first record unless
//! one is given, and yields events in trace order with `seq` numbered from 1. Memory is
//! bounded by the largest record, not by the file.
//!
//! Formats (see `docs/checkpoints.md` for the field mapping):
//!
//! - [`TraceFormat::Tooltrace`]: the seed's JSONL (`timestamp`, `tool_name`, `span_type`
//!   parent|child, `trace_id`, `parent_trace_id`, `args`), including the v2 fields
//!   (`phase`, `tool_use_id`, `session_id`, `agent_id`, `status`, `error`);
//! - [`TraceFormat::ClaudeHook`]: Claude Code hook input records (PreToolUse, PostToolUse,
//!   PostToolUseFailure, SubagentStart, SubagentStop, and others as `custom`);
//! - [`TraceFormat::OtlpJson`]: OTLP/JSON trace exports with the OpenTelemetry GenAI
//!   conventions (`execute_tool`, `invoke_agent`, `gen_ai.*`), hex or base64 ids.
//!
//! [`TraceInput::open`] opens a trace file by its content (gzip is decompressed as a stream).
//!
//! **Lossless:** every event carries its raw record in `source.raw` with the 1-based line.
//! **Never panics on input:** a malformed record is a [`TraceError`] naming its line; the
//! reader then continues with the next record, so the caller decides to skip or stop.

mod claude_hook;
mod ends;
mod input;
mod layout;
mod otlp;
mod parallel;
mod tooltrace;

use std::collections::VecDeque;
use std::fmt;
use std::io::{BufRead, Read};
use std::ops::{ControlFlow, Range};

use agentic_core::CanonicalEvent;
pub(crate) use agentic_core::json_strict::member;
use chrono::{DateTime, Utc};
use serde_json::Value;

pub use claude_hook::ClaudeHookAdapter;
pub use input::TraceInput;
pub use otlp::{ORDER_WINDOW_BYTES, ORDER_WINDOW_SPANS, OtlpJsonAdapter};
pub use parallel::{
    BLOCK_BYTES, Batch, IN_FLIGHT_PER_WORKER, LINE_TAIL_BYTES, LineWork, ReadAt, RecordRef, Records,
    for_each_batch_parallel, for_each_item_parallel,
};
pub use tooltrace::{TooltraceAdapter, TooltraceView};

/// A map keyed by ids a trace holds (`tool_use_id`s, sessions, agent ids), for the adapters'
/// pairing state. foldhash hashes a short id several times faster than std's SipHash, which
/// took about 7% of reading a Claude Code hook trace; it is seeded at random per map, so a
/// trace cannot be written with ids that collide.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The largest record accepted, in bytes.
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// The UTF-8 byte-order mark, skipped at the start of a trace.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The trace formats agentic ingests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// The seed's tool-trace JSONL.
    Tooltrace,
    /// Claude Code hook input records.
    ClaudeHook,
    /// OTLP/JSON traces.
    OtlpJson,
}

impl TraceFormat {
    /// Every format.
    pub const ALL: [TraceFormat; 3] = [TraceFormat::Tooltrace, TraceFormat::ClaudeHook, TraceFormat::OtlpJson];

    /// The name used in `source.format` and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Tooltrace => "tooltrace",
            TraceFormat::ClaudeHook => "claude_hook",
            TraceFormat::OtlpJson => "otlp_json",
        }
    }

    /// Parses a name (also accepts `otlp` and `hook`).
    pub fn from_name(name: &str) -> Option<TraceFormat> {
        match name {
            "tooltrace" => Some(TraceFormat::Tooltrace),
            "claude_hook" | "hook" | "claude-hook" => Some(TraceFormat::ClaudeHook),
            "otlp_json" | "otlp" | "otlp-json" => Some(TraceFormat::OtlpJson),
            _ => None,
        }
    }

    /// The format a record looks like, if any.
    pub fn detect(record: &Value) -> Option<TraceFormat> {
        let object = match record {
            Value::Object(object) => object,
            Value::Array(items) => return items.first().and_then(TraceFormat::detect),
            _ => return None,
        };
        if object.contains_key("resourceSpans") {
            Some(TraceFormat::OtlpJson)
        } else if object.contains_key("hook_event_name") {
            Some(TraceFormat::ClaudeHook)
        } else if object.contains_key("tool_name") {
            Some(TraceFormat::Tooltrace)
        } else {
            None
        }
    }

    fn adapter(self) -> Box<dyn TraceAdapter> {
        match self {
            TraceFormat::Tooltrace => Box::new(TooltraceAdapter::default()),
            TraceFormat::ClaudeHook => Box::new(ClaudeHookAdapter::default()),
            TraceFormat::OtlpJson => Box::new(OtlpJsonAdapter::new()),
        }
    }
}

/// For a record that lacks what `read_as` needs: when it is a record of another format (the
/// first record of a file tells its format), a clause that says so and how to read it.
pub(crate) fn other_format_note(record: &Value, read_as: TraceFormat) -> Option<String> {
    let other = TraceFormat::detect(record).filter(|other| *other != read_as)?;
    Some(format!(
        ": this is a `{other}` record in a file read as `{read_as}` (the format is told from the first record); keep \
         each format in a file of its own and read it with `--trace-format {other}`"
    ))
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Turns records of one format into canonical events.
///
/// Implementations must not panic on any JSON value: a record they cannot map is an `Err`
/// with a message saying which field is wrong and what was expected.
pub trait TraceAdapter {
    /// The format this adapter reads.
    fn format(&self) -> TraceFormat;

    /// Appends the events of one record (read at 1-based `line`) to `out`, in trace order.
    /// `seq` is left at 0; the reader numbers events.
    fn ingest(&mut self, record: Value, line: u64, out: &mut Vec<CanonicalEvent>) -> Result<(), String>;

    /// [`TraceAdapter::ingest`] for a reader that reports every problem of a record read in
    /// parts (an OTLP document's spans): one message per bad part goes to `problems`, and
    /// the good parts to `out`. By default, the one message of `ingest`.
    fn ingest_parts(&mut self, record: Value, line: u64, out: &mut Vec<CanonicalEvent>, problems: &mut Vec<String>) {
        if let Err(problem) = self.ingest(record, line, out) {
            problems.push(problem);
        }
    }
}

/// One item of [`TraceReader::for_each_item`].
#[derive(Debug)]
pub enum TraceItem<'a> {
    /// A canonical event.
    Event(Box<CanonicalEvent>),
    /// A well-formed tooltrace line, borrowed.
    Tooltrace(TooltraceView<'a>),
}

/// A record that could not be read or mapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct TraceError {
    /// The 1-based line where the record starts.
    pub line: u64,
    /// What is wrong.
    pub message: String,
    /// The input itself could not be read there (an I/O error, a corrupt compressed file):
    /// nothing after it was read, so it is never a record to skip.
    pub unreadable: bool,
}

impl TraceError {
    /// A record at `line` that cannot be read as one.
    pub(crate) fn malformed(line: u64, message: impl Into<String>) -> TraceError {
        TraceError { line, message: message.into(), unreadable: false }
    }

    /// The input could not be read before `line`; it ends there.
    pub(crate) fn unreadable(line: u64, error: &std::io::Error) -> TraceError {
        TraceError { line, message: format!("cannot read the trace: {error}"), unreadable: true }
    }
}

/// Reads a trace record by record and yields canonical events.
pub struct TraceReader<R> {
    reader: R,
    adapter: Option<Box<dyn TraceAdapter>>,
    line: u64,
    seq: u64,
    /// Bytes of `reader` consumed as lines so far.
    consumed: u64,
    pending: VecDeque<CanonicalEvent>,
    /// OTLP events held to be ordered with the next exports' (see
    /// [`otlp::ORDER_WINDOW_SPANS`]), not yet numbered; and how many spans they hold.
    held_events: Vec<CanonicalEvent>,
    held_spans: usize,
    /// Where the records of the held events start (bytes of `reader` consumed before them).
    held_since: u64,
    /// The latest time among the OTLP events given out before the end of the input (in
    /// nanoseconds): a span that starts earlier is out of order (see
    /// [`agentic_core::event::OUT_OF_ORDER`]).
    given_out_until: Option<i128>,
    /// The problems of the record just read after the first (which was returned), reported
    /// before its events.
    pending_errors: VecDeque<TraceError>,
    scratch: Vec<CanonicalEvent>,
    buffer: Vec<u8>,
    /// The text of the multi-line document just read, for the lines of its spans.
    document: Option<String>,
    /// For the list record just read: its elements that are not strict JSON (a key repeated
    /// in one), by index, with why; they stand as `null` in the list.
    bad_elements: Vec<(usize, String)>,
    /// Lines read (and counted) that are to be read again, taken before new input: the line
    /// that starts the next record, where a document that did not close stopped, and the
    /// records a document that did not parse took in (see [`TraceReader::read_document`]).
    replay: VecDeque<Replayed>,
    /// Where the line read last ends in the input (for a line read again, where it ended
    /// then): the position the OTLP window measures its bytes by.
    at: u64,
    /// The line the text in `buffer` starts at: `line`, except for an element of a cut list
    /// given back that spans lines (it ends at `line`).
    first_line: u64,
    done: bool,
}

/// The `seq` of a held copy of a span's start that was given out already (see
/// [`TraceReader::give_out_older`]): held events are numbered only as they go out, so no
/// other held event has it. Such a copy is dropped when it comes out again.
const CARRIED: u64 = u64::MAX;

/// Where to cut `ordered` (OTLP events in order, `total` spans) to give out its older half:
/// the first position at or past half its spans where no span is open; failing that (a span
/// that lasts the whole window, as an agent's root span does when its record comes first),
/// the first position at or past half where at most a quarter of the spans are open, with
/// the positions of their starts. `None` when neither exists.
fn cut_past_half(ordered: &[CanonicalEvent], total: usize) -> Option<(usize, Vec<usize>)> {
    // Open spans by id, the latest start last (as `order_events` pairs them).
    let mut open: IdMap<(Option<&str>, &str), Vec<usize>> = IdMap::default();
    let mut open_count = 0;
    let mut starts = 0;
    let mut first_past_half = None;
    for (idx, event) in ordered.iter().enumerate() {
        if starts > 0 && starts * 2 >= total {
            if open_count == 0 {
                return Some((idx, Vec::new()));
            }
            if first_past_half.is_none() && open_count * 4 <= total {
                let mut at: Vec<usize> = open.values().flatten().copied().collect();
                at.sort_unstable();
                first_past_half = Some((idx, at));
            }
        }
        let Some(key) = otlp::span_key(event) else {
            continue;
        };
        if otlp::starts_span(event.event_type) {
            starts += 1;
            open.entry(key).or_default().push(idx);
            open_count += 1;
        } else if otlp::ends_span(event.event_type) && open.get_mut(&key).and_then(Vec::pop).is_some() {
            open_count -= 1;
        }
    }
    first_past_half
}

/// The lines that end a document spread over lines, while each is a record on its own (or
/// blank): the first one's number and where it starts in the document's text, and where
/// each ends in the input.
#[derive(Debug)]
struct Tail {
    line: u64,
    at: usize,
    ends: Vec<u64>,
}

/// A line given back to be read again: its text, line number and where it ends in the input
/// (an element of a cut list given back may span lines: `line` to `last`).
#[derive(Debug)]
struct Replayed {
    text: Vec<u8>,
    line: u64,
    last: u64,
    end: u64,
}

impl<R> fmt::Debug for TraceReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceReader")
            .field("format", &self.adapter.as_ref().map(|adapter| adapter.format()))
            .field("line", &self.line)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// Where [`TraceReader::drain_queued`] stopped.
pub(super) enum Queued {
    /// The trace ended, or the visitor asked to stop.
    Stop,
    /// The next record is a tooltrace line: read it.
    ReadLine,
}

/// Hashes a JSON value as a value: the keys of an object in sorted order, so two writers
/// that order keys differently write the same record (adapters tell repeats and pairs by it).
pub(super) fn hash_json(value: &Value, hasher: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    match value {
        Value::Null => 1u8.hash(hasher),
        Value::Bool(flag) => (2u8, flag).hash(hasher),
        Value::Number(number) => (3u8, number.to_string()).hash(hasher),
        Value::String(text) => (4u8, text).hash(hasher),
        Value::Array(items) => {
            (5u8, items.len()).hash(hasher);
            for item in items {
                hash_json(item, hasher);
            }
        }
        Value::Object(map) => {
            (6u8, map.len()).hash(hasher);
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                key.hash(hasher);
                hash_json(&map[key], hasher);
            }
        }
    }
}

/// What is wrong with a record's JSON. Nesting deeper than `serde_json` reads is valid JSON,
/// and saying "invalid" would mislead: it is named as such.
fn json_problem(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.strip_prefix("recursion limit exceeded") {
        Some(at) => format!(
            "nested more than 128 levels deep, which is more than agentic reads{at}: the record is skipped, so no \
             rule sees it; flatten deep values (arguments) in the capture"
        ),
        None => format!("invalid JSON: {text}"),
    }
}

impl<R: BufRead> TraceReader<R> {
    /// A reader; `format` `None` detects the format from the first record.
    pub fn new(reader: R, format: Option<TraceFormat>) -> TraceReader<R> {
        TraceReader {
            reader,
            adapter: format.map(TraceFormat::adapter),
            line: 0,
            seq: 0,
            consumed: 0,
            pending: VecDeque::new(),
            held_events: Vec::new(),
            held_spans: 0,
            held_since: 0,
            given_out_until: None,
            pending_errors: VecDeque::new(),
            scratch: Vec::new(),
            buffer: Vec::new(),
            document: None,
            bad_elements: Vec::new(),
            replay: VecDeque::new(),
            at: 0,
            first_line: 0,
            done: false,
        }
    }

    /// The format in use (known after the first record when detecting).
    pub fn format(&self) -> Option<TraceFormat> {
        self.adapter.as_ref().map(|adapter| adapter.format())
    }

    /// Reads one physical line into `buffer` (without the newline); false at end of input.
    fn read_line(&mut self) -> Result<bool, TraceError> {
        if let Some(replayed) = self.replay.pop_front() {
            self.buffer = replayed.text;
            self.first_line = replayed.line;
            self.line = replayed.last;
            self.at = replayed.end;
            return Ok(true);
        }
        self.buffer.clear();
        let limit = (MAX_RECORD_BYTES + 1) as u64;
        let read = (&mut self.reader).take(limit).read_until(b'\n', &mut self.buffer).map_err(|error| {
            // The input ends at a read error: it is reported once.
            self.done = true;
            TraceError::unreadable(self.line + 1, &error)
        })?;
        if read == 0 {
            return Ok(false);
        }
        self.consumed += read as u64;
        self.at = self.consumed;
        self.line += 1;
        self.first_line = self.line;
        // A byte-order mark (editors on Windows write one) is not part of a record: at the
        // start of the file, or of a line (files that each had one, concatenated).
        if self.buffer.starts_with(UTF8_BOM) {
            self.buffer.drain(..UTF8_BOM.len());
        }
        if self.buffer.len() > MAX_RECORD_BYTES {
            // Skip the rest of this overlong line.
            loop {
                self.buffer.clear();
                let more = (&mut self.reader).take(limit).read_until(b'\n', &mut self.buffer).unwrap_or(0);
                self.consumed += more as u64;
                self.at = self.consumed;
                if more == 0 || self.buffer.ends_with(b"\n") {
                    break;
                }
            }
            return Err(TraceError::malformed(self.line, format!("record is longer than {MAX_RECORD_BYTES} bytes")));
        }
        if self.buffer.ends_with(b"\n") {
            self.buffer.pop();
            if self.buffer.ends_with(b"\r") {
                self.buffer.pop();
            }
        }
        Ok(true)
    }

    /// Reads the next record: one line, or several lines of one pretty-printed document.
    fn next_record(&mut self) -> Option<Result<(Value, u64), TraceError>> {
        loop {
            match self.read_line() {
                Err(error) => return Some(Err(error)),
                Ok(false) => return None,
                Ok(true) => {}
            }
            if let Some(record) = self.parse_current() {
                return Some(record);
            }
        }
    }

    /// Parses the line in `buffer` (and, for a multi-line document, the lines after it);
    /// `None` for a blank line.
    fn parse_current(&mut self) -> Option<Result<(Value, u64), TraceError>> {
        let start = self.first_line;
        let text = match std::str::from_utf8(&self.buffer) {
            Ok(text) => text.trim(),
            Err(error) => {
                // The first line of a document spread over lines (it opens brackets it does
                // not close, outside a string): the whole document is one bad record.
                let bytes = self.buffer.trim_ascii();
                let mut nesting = Nesting::default();
                nesting.feed(bytes);
                if matches!(bytes.first(), Some(b'{' | b'[')) && nesting.depth > 0 && !nesting.in_string {
                    let bad = not_utf8_document(start, start, &error);
                    let object = bytes.first() == Some(&b'{');
                    return Some(self.skip_document(nesting, object).and(Err(bad)));
                }
                return Some(Err(TraceError::malformed(start, format!("line is not UTF-8 text ({error})"))));
            }
        };
        if text.is_empty() {
            return None;
        }
        // Strict: a key repeated in one object makes the record mean two things.
        // A lone UTF-16 surrogate escape (a JavaScript string cut inside an emoji) spells no
        // text: it reads as U+FFFD instead of costing the record (the raw line is kept).
        match agentic_core::json_strict::from_str_lenient_surrogates(text) {
            Ok(value) => {
                // An element of a list given back, spread over lines (only those span
                // lines here): its spans cite the lines of their `spanId`s, as in any
                // document spread over lines.
                if self.line > start {
                    self.document = Some(text.to_owned());
                }
                Some(Ok((value, start)))
            }
            // A line that ends before its record does (a document printed over lines, a
            // record whose last `}` went to the next line, or one cut short) is read on as a
            // document: `read_document` ends it at the next record's line.
            Err(error) if error.is_eof() => {
                let first = text.to_owned();
                let indent = self.buffer.len() - self.buffer.trim_ascii_start().len();
                Some(self.read_document(first, start, indent))
            }
            Err(error) => {
                // A list (an exporter's batch) whose only fault is inside some elements: the
                // others are read, as for any bad element.
                if text.trim_start().starts_with('[')
                    && let Ok(items) = serde_json::from_str::<Vec<Box<serde_json::value::RawValue>>>(text)
                {
                    self.bad_elements.clear();
                    let mut values = Vec::with_capacity(items.len());
                    for (index, item) in items.iter().enumerate() {
                        match agentic_core::json_strict::from_str_lenient_surrogates(item.get()) {
                            Ok(value) => values.push(value),
                            Err(error) => {
                                self.bad_elements.push((index, json_problem(&error)));
                                values.push(Value::Null);
                            }
                        }
                    }
                    return Some(Ok((Value::Array(values), start)));
                }
                // A line that only closes brackets starts no record.
                if only_closes_brackets(text.as_bytes()) {
                    return Some(Err(TraceError::malformed(
                        start,
                        format!(
                            "a line that only closes brackets (`{text}`) starts no record: most likely the end of a \
                             document that went wrong before it (fix that one), or a bracket too many (remove it)"
                        ),
                    )));
                }
                // A list on one line broken part way (its brackets close, but an element
                // does not parse): its whole elements are read on their own, as for a list
                // spread over lines.
                let given_back = if text.starts_with('[') {
                    let document = text.to_owned();
                    // Before the lines still queued to be read again: they come after this one.
                    let queued = self.replay.len();
                    let given_back = self.give_back(&document, None, start, &[self.at]);
                    self.replay.rotate_left(queued);
                    given_back
                } else {
                    String::new()
                };
                Some(Err(TraceError::malformed(start, format!("{}{given_back}", json_problem(&error)))))
            }
        }
    }

    /// Streams every item to `visit` in trace order, like the iterator, except that
    /// well-formed tooltrace lines come as borrowed [`TooltraceView`]s without building a
    /// [`CanonicalEvent`]. Every other record (and every malformed one) goes through the
    /// adapter exactly as with the iterator. `visit` returns `Break` to stop early.
    pub fn for_each_item(&mut self, mut visit: impl FnMut(Result<TraceItem<'_>, TraceError>) -> ControlFlow<()>) {
        let mut visit = |item: Result<TraceItem<'_>, TraceError>, _: Option<&()>| visit(item);
        self.for_each_prepared(&mut |_| (), &mut visit);
    }

    /// [`TraceReader::for_each_item`] with `prepare` run on every tooltrace view and its
    /// result passed along (`None` for events of the full adapter and errors).
    pub(super) fn for_each_prepared<S>(
        &mut self,
        prepare: &mut impl FnMut(&TooltraceView<'_>) -> S,
        visit: &mut impl FnMut(Result<TraceItem<'_>, TraceError>, Option<&S>) -> ControlFlow<()>,
    ) {
        while let Queued::ReadLine = self.drain_queued(visit) {
            if self.step_line(prepare, visit).is_break() {
                return;
            }
        }
    }

    /// The first part of [`TraceReader::for_each_item`]: visits queued events and records of
    /// other formats (which always go through the adapter) until the next record is a
    /// tooltrace line to read (`ReadLine`), the trace ends or the visitor stops (`Stop`).
    pub(super) fn drain_queued<S>(
        &mut self,
        visit: &mut impl FnMut(Result<TraceItem<'_>, TraceError>, Option<&S>) -> ControlFlow<()>,
    ) -> Queued {
        loop {
            let flow = if let Some(error) = self.pending_errors.pop_front() {
                visit(Err(error), None)
            } else if let Some(event) = self.pending.pop_front() {
                visit(Ok(TraceItem::Event(Box::new(event))), None)
            } else if self.done {
                if self.give_out_held() {
                    continue;
                }
                return Queued::Stop;
            } else if self.format() != Some(TraceFormat::Tooltrace) {
                let Some(item) = self.next() else { return Queued::Stop };
                visit(item.map(|event| TraceItem::Event(Box::new(event))), None)
            } else {
                return Queued::ReadLine;
            };
            if flow.is_break() {
                return Queued::Stop;
            }
        }
    }

    /// The second part: reads one tooltrace line; a well-formed one is visited as a borrowed
    /// view (with what `prepare` makes of it), any other goes through the adapter.
    pub(super) fn step_line<S>(
        &mut self,
        prepare: &mut impl FnMut(&TooltraceView<'_>) -> S,
        visit: &mut impl FnMut(Result<TraceItem<'_>, TraceError>, Option<&S>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        match self.read_line() {
            Err(error) => return visit(Err(error), None),
            Ok(false) => {
                self.done = true;
                return ControlFlow::Break(());
            }
            Ok(true) => {}
        }
        let line = self.first_line;
        let view = std::str::from_utf8(&self.buffer)
            .ok()
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .and_then(|text| TooltraceAdapter::view(text, line));
        if let Some(mut view) = view {
            self.seq += 1;
            view.seq = self.seq;
            let prepared = prepare(&view);
            return visit(Ok(TraceItem::Tooltrace(view)), Some(&prepared));
        }
        if let Some(parsed) = self.parse_current() {
            let outcome = match parsed {
                Err(error) => Err(error),
                Ok((record, start)) => self.ingest(record, start),
            };
            if let Err(error) = outcome {
                return visit(Err(error), None);
            }
        }
        ControlFlow::Continue(())
    }

    /// Accumulates lines until they form one JSON document. The text is parsed only once its
    /// brackets close (or it cannot be valid any more), so a pretty-printed document of many
    /// lines is parsed once, not once per line.
    ///
    /// A document that is an object (its first line starts with `{`) ends, unclosed, at a
    /// line that starts with `{` or `[` in its first column where the document cannot take
    /// a value (after `{`, or after `,` between members): that is the next record (a line
    /// cut after a `,` or `{`, a pretty-printed batch cut off by a crash, then more records).
    /// Where it can (after `:`, or in a list after `[` or `,`), the line goes on with the
    /// document: a printer that does not indent (`json.dumps(..., indent=0)`) writes the
    /// elements of a list in the first column. The document is
    /// malformed and the line is read again as the next record, so one cut record never
    /// swallows the records after it. (A document that is a list may hold its elements in
    /// the first column, so it reads on.)
    ///
    /// A document that then does not parse (it never closes, or it goes wrong part way)
    /// gives back what it took of the next records: from its first later line that starts
    /// in the first column with `{` or `[` and is a whole JSON value on its own (a record,
    /// perhaps with the `,` of a list after it), its lines are read again as lines of their
    /// own. So a batch cut after one of its elements (`[{...}, {...},`) costs only itself,
    /// while a pretty-printed document that goes wrong stays one malformed record.
    fn read_document(&mut self, first: String, start: u64, indent: usize) -> Result<(Value, u64), TraceError> {
        let mut nesting = Nesting::default();
        nesting.feed(first.as_bytes());
        let object = first.starts_with('{');
        if !object {
            // As for the lines after it (below).
            nesting.end_line();
        }
        let mut document = first;
        // Where each of the document's lines ends in the input.
        let mut ends = vec![self.at];
        // The run of lines that ends the document so far while each is a record on its own
        // (or blank): only such a tail is given back.
        let mut tail: Option<Tail> = None;
        loop {
            match self.read_line()? {
                false => {
                    let given_back = self.give_back(&document, tail.as_ref(), start, &ends);
                    return Err(TraceError::malformed(
                        start,
                        format!("the JSON document starting here is not closed before the end of the file{given_back}"),
                    ));
                }
                true => {
                    if object && matches!(self.buffer.first(), Some(b'{' | b'[')) && !nesting.wants_value() {
                        let next = self.line;
                        let given_back = self.give_back(&document, tail.as_ref(), start, &ends);
                        // After the lines given back, in file order.
                        self.hold_line();
                        return Err(TraceError::malformed(
                            start,
                            format!(
                                "the JSON document starting here is not closed before line {next}, which starts \
                                 the next record (is this line cut short?){given_back}"
                            ),
                        ));
                    }
                    nesting.feed(&self.buffer);
                    if !object {
                        // A string left open in a list's element ends with its line: the
                        // list reads on to where its brackets close, so that
                        // `list_elements` gives back its elements after the broken one.
                        nesting.end_line();
                    }
                    let text = match std::str::from_utf8(&self.buffer) {
                        Ok(text) => text,
                        Err(error) => {
                            let bad = not_utf8_document(start, self.line, &error);
                            self.skip_document(nesting, object)?;
                            return Err(bad);
                        }
                    };
                    if document.len() + 1 + text.len() > MAX_RECORD_BYTES {
                        if !object && let Some(given_back) = self.give_back_long_list(&document, start, &ends) {
                            return Err(TraceError::malformed(
                                start,
                                format!(
                                    "the JSON list starting here is not closed within {MAX_RECORD_BYTES} bytes (line \
                                     {}): it is read in parts, as a list that long was most likely cut short and \
                                     took in the records after it (close a cut batch with `]`, or write fewer \
                                     records per list){given_back}",
                                    self.line
                                ),
                            ));
                        }
                        drop(document);
                        self.skip_document(nesting, object)?;
                        return Err(TraceError::malformed(
                            start,
                            format!(
                                "record is longer than {MAX_RECORD_BYTES} bytes (a document up to line {}); it is \
                                 skipped: export fewer spans per document",
                                self.line
                            ),
                        ));
                    }
                    document.push('\n');
                    ends.push(self.at);
                    // A line of another kind ends the run (reading a document's lines one by
                    // one would report each of them); a later record starts a new one.
                    let record = is_record_line(text);
                    tail = match tail {
                        Some(mut run) if record || text.trim().is_empty() => {
                            run.ends.push(self.at);
                            Some(run)
                        }
                        _ if record => Some(Tail { line: self.line, at: document.len(), ends: vec![self.at] }),
                        _ => None,
                    };
                    document.push_str(text);
                    if !nesting.may_be_complete() {
                        continue;
                    }
                    match agentic_core::json_strict::from_str_lenient_surrogates(&document) {
                        Ok(value) => {
                            self.document = Some(document);
                            return Ok((value, start));
                        }
                        Err(error) if error.is_eof() => continue,
                        Err(error) => {
                            // serde_json counts lines within the document; say the file's line.
                            let text = error.to_string();
                            let position = format!(" at line {} column {}", error.line(), error.column());
                            let what = text.strip_suffix(&position).unwrap_or(&text);
                            let line = start + error.line() as u64 - 1;
                            let mut given_back = self.give_back(&document, tail.as_ref(), start, &ends);
                            if object
                                && given_back.is_empty()
                                && let Some(rest) = self.skip_members(indent)?
                            {
                                given_back = format!(
                                    "; the lines after it up to line {rest}, indented deeper than its first line, \
                                     are taken as the rest of it"
                                );
                            }
                            return Err(TraceError::malformed(
                                start,
                                format!(
                                    "invalid JSON in the document starting here: {what} at line {line} column {}{given_back}",
                                    error.column()
                                ),
                            ));
                        }
                    }
                }
            }
        }
    }

    /// After an object document (its first line indented by `indent`) that went wrong and
    /// gave nothing back, reads on over the lines indented further (its members, when it
    /// closed too early or a string in it was left open) and a line at its indentation that
    /// only closes brackets (its real end), so that they are not read as records of their
    /// own (a nested object among them would count as a call). Stops before any other line
    /// (it is read again), at a blank line's next line as at any other. The last line taken,
    /// if any.
    fn skip_members(&mut self, indent: usize) -> Result<Option<u64>, TraceError> {
        let mut last = None;
        while self.read_line()? {
            let body = self.buffer.trim_ascii_start();
            if body.is_empty() {
                continue;
            }
            let depth = self.buffer.len() - body.len();
            if depth > indent {
                last = Some(self.line);
                continue;
            }
            if depth == indent && only_closes_brackets(body) {
                return Ok(Some(self.line));
            }
            self.hold_line();
            return Ok(last);
        }
        Ok(last)
    }

    /// Queues the line just read (it starts the next record) to be read again.
    fn hold_line(&mut self) {
        let text = std::mem::take(&mut self.buffer);
        self.replay.push_back(Replayed { text, line: self.line, last: self.line, end: self.at });
    }

    /// Queues what a failed `document` (its first line `start`, its lines ending at `ends` in
    /// the input) took in to be read again on its own; what to add to the error (`""` when
    /// nothing is given back). A list gives back its whole elements ([`list_elements`]);
    /// another document the lines that `tail` covers.
    fn give_back(&mut self, document: &str, tail: Option<&Tail>, start: u64, ends: &[u64]) -> String {
        if document.starts_with('[') {
            let found = list_elements(document);
            return self.give_back_elements(document, &found, start, ends, true);
        }
        let Some(tail) = tail else { return String::new() };
        for ((number, text), &end) in (tail.line..).zip(document[tail.at..].split('\n')).zip(&tail.ends) {
            // An element of the cut list is read as the record it is, without the list's `,`.
            let text = text.trim_end();
            let text = text.strip_suffix(',').unwrap_or(text);
            self.replay.push_back(Replayed { text: text.as_bytes().to_vec(), line: number, last: number, end });
        }
        format!("; the records it took in from line {} on are given back to be read on their own", tail.line)
    }

    /// Queues the elements `found` in a list `document` (as for [`TraceReader::give_back`]);
    /// what to add to the error. With `to_end`, the line count goes on after the document's
    /// last line, else after the last element's.
    fn give_back_elements(
        &mut self,
        document: &str,
        found: &ListElements,
        start: u64,
        ends: &[u64],
        to_end: bool,
    ) -> String {
        let (elements, in_list) = (&found.ranges, found.in_list);
        let (mut line, mut counted) = (start, 0);
        // The lines the elements given back start and end at.
        let (mut first, mut last) = (None, start);
        for (index, element) in elements.iter().enumerate() {
            line += newlines(&document[counted..element.start]);
            let element_line = line;
            (line, counted) = (line + newlines(&document[element.clone()]), element.end);
            first.get_or_insert(element_line);
            last = line;
            // The last element reads to the document's end (the lines after it are the
            // broken rest), so the line count goes on from there.
            let through = if to_end && index + 1 == elements.len() { start + ends.len() as u64 - 1 } else { line };
            let end = ends.get((through - start) as usize).copied().unwrap_or(self.at);
            let text = document[element.clone()].as_bytes().to_vec();
            self.replay.push_back(Replayed { text, line: element_line, last: through, end });
        }
        let Some(first) = first else { return String::new() };
        let lines = if first == last { format!("line {first}") } else { format!("lines {first}-{last}") };
        let count = |count: usize, one: &str, more: &str| format!("{count} {}", if count == 1 { one } else { more });
        let what = match in_list {
            Some(0) => format!("the {} after its `]`", count(elements.len(), "record", "records")),
            Some(inside) if inside < elements.len() => format!(
                "its {} and the {} after its `]`",
                count(inside, "whole element", "whole elements"),
                count(elements.len() - inside, "record", "records")
            ),
            _ => format!("its {}", count(elements.len(), "whole element", "whole elements")),
        };
        let read =
            if elements.len() == 1 { "is read as a record of its own" } else { "are read as records of their own" };
        format!("; {what} ({lines}) {read}")
    }

    /// A list document that reached [`MAX_RECORD_BYTES`] before its brackets closed, at the
    /// line just read: most likely a batch cut short that took in the records after it (a
    /// list reads on past lines in the first column, as its elements may be there). Its whole
    /// elements are given back, then the rest of it and the line just read are read again:
    /// as the rest of the list when the last element is followed by a `,` (a `[` is put
    /// before them), else as lines of their own. What to add to the error; `None` when the
    /// document holds no whole element (it is then skipped as one overlong record).
    fn give_back_long_list(&mut self, document: &str, start: u64, ends: &[u64]) -> Option<String> {
        let found = list_elements(document);
        let last = found.ranges.last()?.end;
        let given_back = self.give_back_elements(document, &found, start, ends, false);
        let mut rest = last + (document[last..].len() - document[last..].trim_start().len());
        let mid_list = found.in_list.is_none() && document[rest..].starts_with(',');
        if mid_list {
            rest += 1;
        }
        let first_line = start + newlines(&document[..rest]);
        let mut opened = !mid_list;
        let at = self.at;
        let pieces = (first_line..).zip(document[rest..].split('\n')).map(|(line, piece)| {
            let end = ends.get((line - start) as usize).copied().unwrap_or(at);
            (piece.as_bytes().to_vec(), line, end)
        });
        let held = (std::mem::take(&mut self.buffer), self.line, self.at);
        for (mut text, line, end) in pieces.chain(std::iter::once(held)) {
            if !opened && !text.trim_ascii().is_empty() {
                text.insert(0, b'[');
                opened = true;
            }
            self.replay.push_back(Replayed { text, line, last: line, end });
        }
        Some(given_back)
    }

    /// Reads on to the end of a document that went wrong part way (a line that is not UTF-8,
    /// or more than [`MAX_RECORD_BYTES`] in all), tracking only its brackets, so that its
    /// other lines are not read as records of their own: to where its brackets close, to the
    /// next record's line (as [`TraceReader::read_document`] tells one), or to the end.
    fn skip_document(&mut self, mut nesting: Nesting, object: bool) -> Result<(), TraceError> {
        loop {
            nesting.end_line();
            if nesting.depth <= 0 || !self.read_line()? {
                return Ok(());
            }
            if object && matches!(self.buffer.first(), Some(b'{' | b'[')) && !nesting.wants_value() {
                self.hold_line();
                return Ok(());
            }
            nesting.feed(&self.buffer);
        }
    }

    fn ingest(&mut self, record: Value, line: u64) -> Result<(), TraceError> {
        if self.adapter.is_none() {
            // An empty batch holds no record, so it tells no format either.
            if matches!(&record, Value::Array(items) if items.is_empty()) {
                return Ok(());
            }
            let format = TraceFormat::detect(&record).ok_or_else(|| {
                let why = otlp::misspelt_export(&record).map_or_else(String::new, |why| format!("; {why}"));
                TraceError::malformed(
                    line,
                    format!(
                        "cannot tell the trace format from the first record: expected `resourceSpans` (OTLP/JSON), \
                         `hook_event_name` (Claude Code hook) or `tool_name` (tooltrace JSONL){why}"
                    ),
                )
            })?;
            self.adapter = Some(format.adapter());
        }
        let adapter = self.adapter.as_mut().expect("set above");
        self.scratch.clear();
        // Every problem is reported on its own (a bad span at its `spanId`'s line), the first
        // one now and the others before the record's events.
        let mut problems = Vec::new();
        match record {
            // A list of records (an exporter's batch) is read record by record: each bad one
            // is reported and the others are read; an empty list holds no record.
            Value::Array(items) => {
                let faults = std::mem::take(&mut self.bad_elements);
                let mut parts = Vec::new();
                for (index, item) in items.into_iter().enumerate() {
                    if let Some((_, message)) = faults.iter().find(|(at, _)| *at == index) {
                        problems.push(format!("list element {index}: {message}"));
                        continue;
                    }
                    adapter.ingest_parts(item, line, &mut self.scratch, &mut parts);
                    problems.extend(parts.drain(..).map(|message| format!("list element {index}: {message}")));
                }
            }
            record => adapter.ingest_parts(record, line, &mut self.scratch, &mut problems),
        }
        // In a document spread over lines, a span's events cite the line of its `spanId`.
        let span_lines = self.document.take().map(|text| span_lines(&text, line)).unwrap_or_default();
        // What the adapter read is kept even when part of the record failed (a bad span of
        // an OTLP document, a bad element of a list): the failure is reported first.
        let format = adapter.format();
        for mut event in self.scratch.drain(..) {
            if !span_lines.is_empty()
                && let Some(source) = event.source.as_mut()
                && let Some(id) = source.raw.as_ref().and_then(|raw| raw.get("spanId")).and_then(Value::as_str)
                && let Some(&span_line) = span_lines.get(id)
            {
                source.line = Some(span_line);
            }
            if format == TraceFormat::OtlpJson {
                // Spans are exported as they end: held to be ordered with later exports'.
                if otlp::starts_span(event.event_type) {
                    self.held_spans += 1;
                    if self.given_out_until.is_some_and(|until| otlp::nanos_of(&event.timestamp) < until) {
                        event.attributes.insert(agentic_core::event::OUT_OF_ORDER.to_owned(), Value::Bool(true));
                    }
                }
                self.held_events.push(event);
            } else {
                self.seq += 1;
                event.seq = self.seq;
                self.pending.push_back(event);
            }
        }
        if self.held_spans >= otlp::ORDER_WINDOW_SPANS
            || self.at.saturating_sub(self.held_since) >= otlp::ORDER_WINDOW_BYTES
        {
            self.give_out_older();
        }
        let mut errors = problems.into_iter().map(|message| {
            // A bad span of a document spread over lines is cited at its `spanId`'s line.
            let line = otlp::cited_span_id(&message).and_then(|id| span_lines.get(id)).copied().unwrap_or(line);
            TraceError::malformed(line, format!("{format} record: {message}"))
        });
        match errors.next() {
            None => Ok(()),
            Some(first) => {
                self.pending_errors.extend(errors);
                Err(first)
            }
        }
    }
}

impl<R> TraceReader<R> {
    /// Orders the held OTLP events and queues them, numbered; false when none were held.
    fn give_out_held(&mut self) -> bool {
        self.held_since = self.at;
        if self.held_events.is_empty() {
            return false;
        }
        self.held_spans = 0;
        let mut ordered = otlp::order_events(std::mem::take(&mut self.held_events));
        ordered.retain(|event| event.seq != CARRIED);
        self.queue_numbered(ordered);
        true
    }

    /// Queues `events`, numbered in the order they come.
    fn queue_numbered(&mut self, events: Vec<CanonicalEvent>) {
        for mut event in events {
            self.seq += 1;
            event.seq = self.seq;
            self.pending.push_back(event);
        }
    }

    /// With the window full: orders what is held and gives out the older half of it (at a
    /// point where no span is open, so spans stay whole, or else where few are: their starts
    /// go out and a copy of each stays held with its end, see [`CARRIED`]), keeping the later
    /// half held to be ordered with the next exports. So whether a span is ordered with the
    /// spans that came just before it never depends on where a window happened to end: a span
    /// is misplaced only when more than half a window of records came between it and spans
    /// that started later than it.
    fn give_out_older(&mut self) {
        let mut ordered = otlp::order_events(std::mem::take(&mut self.held_events));
        let total = ordered.iter().filter(|event| otlp::starts_span(event.event_type)).count();
        let (later, open_starts) = match cut_past_half(&ordered, total) {
            Some((cut, open)) => (ordered.split_off(cut), open),
            None => (Vec::new(), Vec::new()),
        };
        // Only spans are held on; the events that follow the window's spans (spans exported
        // again, events without their pair) go out with the older half, as they came, so
        // they never pile up.
        let (mut kept, others): (Vec<CanonicalEvent>, Vec<CanonicalEvent>) = later
            .into_iter()
            .partition(|event| otlp::starts_span(event.event_type) || otlp::ends_span(event.event_type));
        // The spans open at the cut are held whole again (a copy of each start first, as they
        // started before the rest, marked to be dropped when it comes out), and their starts
        // are given out now, unless they were given out before.
        if !open_starts.is_empty() {
            let starts = open_starts.iter().map(|&at| CanonicalEvent { seq: CARRIED, ..ordered[at].clone() });
            kept.splice(0..0, starts);
        }
        ordered.retain(|event| event.seq != CARRIED);
        ordered.extend(others);
        let latest = ordered.iter().map(|event| otlp::nanos_of(&event.timestamp)).max();
        self.given_out_until = self.given_out_until.max(latest);
        self.queue_numbered(ordered);
        // The kept spans stand for their share of the window's bytes.
        let kept_spans = kept.iter().filter(|event| otlp::starts_span(event.event_type)).count();
        let window = self.at.saturating_sub(self.held_since);
        let share = if total == 0 { 0 } else { window * kept_spans as u64 / total as u64 };
        self.held_since = self.at - share;
        self.held_spans = kept_spans;
        self.held_events = kept;
    }
}

impl<R: BufRead + std::io::Seek> TraceReader<R> {
    /// Whether lines read are waiting to be read again (see [`TraceReader::read_document`]).
    pub(super) fn holds_line(&self) -> bool {
        !self.replay.is_empty()
    }

    /// Goes on reading at `offset` of the underlying input (a line start), keeping the line
    /// and event numbering.
    pub(super) fn reposition(&mut self, offset: u64) -> std::io::Result<()> {
        self.reader.seek(std::io::SeekFrom::Start(offset))?;
        self.consumed = offset;
        self.at = offset;
        self.done = false;
        self.replay.clear();
        Ok(())
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<CanonicalEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(error) = self.pending_errors.pop_front() {
                return Some(Err(error));
            }
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                if self.give_out_held() {
                    continue;
                }
                return None;
            }
            match self.next_record() {
                None => {
                    self.done = true;
                    continue;
                }
                Some(Err(error)) => return Some(Err(error)),
                Some(Ok((record, line))) => {
                    if let Err(error) = self.ingest(record, line) {
                        return Some(Err(error));
                    }
                }
            }
        }
    }
}

/// The Unix epoch, used when a record carries no time (Claude Code hooks never do).
pub(crate) fn no_time() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH
}

/// The first of `problems` and how many more there are (`what`), then `after`; `Ok` when
/// there are none. For records read in parts (a list's elements, a document's spans) whose
/// good parts are kept.
pub(crate) fn first_problem(problems: &[String], what: &str, after: &str) -> Result<(), String> {
    match problems {
        [] => Ok(()),
        [only] => Err(format!("{only}{after}")),
        [first, rest @ ..] => Err(format!("{first} (and {} more {what}){after}", rest.len())),
    }
}

/// A record's time field, read leniently: tooltrace and hook records are ordered by their
/// place in the file, never by time, so a time that does not read costs the record its time,
/// not its call (dropping the call would hide it from every rule).
pub(crate) struct RecordTime {
    /// The time: RFC 3339, or a time without a zone (Python's `isoformat()`) read as UTC.
    pub time: Option<DateTime<Utc>>,
    /// Why the time is not as written: [`agentic_core::event::TIME_UNREAD`]'s values.
    pub unread: Option<&'static str>,
}

impl RecordTime {
    /// Marks `event` with why its time is not as written, when it is not.
    pub(crate) fn mark(&self, event: &mut CanonicalEvent) {
        if let Some(why) = self.unread {
            event.attributes.insert(agentic_core::event::TIME_UNREAD.to_owned(), Value::from(why));
        }
    }
}

/// Reads a time field (see [`RecordTime`]); absent or `null` is no time, and no mark.
pub(crate) fn record_time(record: &serde_json::Map<String, Value>, key: &str) -> RecordTime {
    use agentic_core::event::{TIME_NO_ZONE, TIME_NOT_RFC3339};
    let unread = |why| RecordTime { time: None, unread: Some(why) };
    match member(record, key) {
        None | Some(Value::Null) => RecordTime { time: None, unread: None },
        Some(Value::String(text)) => match DateTime::parse_from_rfc3339(text) {
            Ok(time) => RecordTime { time: Some(time.with_timezone(&Utc)), unread: None },
            Err(_) => ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
                .iter()
                .find_map(|format| chrono::NaiveDateTime::parse_from_str(text, format).ok())
                .map_or_else(
                    || unread(TIME_NOT_RFC3339),
                    |naive| RecordTime { time: Some(naive.and_utc()), unread: Some(TIME_NO_ZONE) },
                ),
        },
        Some(_) => unread(TIME_NOT_RFC3339),
    }
}

/// An optional string field; a non-string value is an error.
pub(crate) fn opt_str(record: &serde_json::Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match member(record, key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!("`{key}` must be a string, found {}", kind_of(other))),
    }
}

/// An optional id field: a string, or an integer taken as its decimal text (`7` and `"7"`
/// are the same id). Any other number is an error, since `1`, `1.0` and `1e0` would
/// otherwise be the same number but different ids, or the reverse, depending on how a
/// writer formats it. An empty string is no id (`jq '.tool_use_id // ""'` writes one for a
/// missing id), as `null` is.
pub(crate) fn opt_id(record: &serde_json::Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match member(record, key) {
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::Number(number)) if number.is_i64() || number.is_u64() => Ok(Some(number.to_string())),
        // A fraction, an exponent, or an integer beyond 64 bits (read as a float, so its
        // digits are gone): only the writer knows the id it meant.
        Some(Value::Number(number)) => Err(format!(
            "`{key}` {number} is not an integer id of at most 64 bits (a fraction, an exponent, or an integer \
             too long to keep); write the id in quotes, as a string, exactly as the trace's other records spell it"
        )),
        Some(other @ (Value::Bool(_) | Value::Array(_) | Value::Object(_))) => {
            Err(format!("`{key}` must be a string or an integer, found {}", kind_of(other)))
        }
        _ => opt_str(record, key),
    }
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;

/// The error for a document starting at line `start` whose line `line` is not UTF-8: the
/// whole document is skipped.
fn not_utf8_document(start: u64, line: u64, error: &std::str::Utf8Error) -> TraceError {
    TraceError::malformed(
        start,
        format!(
            "the JSON document starting here has a line that is not UTF-8 text (line {line}: {error}); the whole \
             document is skipped: write the trace as UTF-8 (`iconv -f LATIN1 -t UTF-8` converts Latin-1)"
        ),
    )
}

/// The whole elements of a JSON list that does not parse as a whole (cut short, or broken
/// part way), as byte ranges of `document` (which starts with its `[`): each value that
/// parses on its own, in order, and then the values after the list's `]` (a list that went
/// wrong took in the records after it). An element that is not a record (an object) or a
/// batch (a list of records) is taken for a piece of a broken one. A broken element whose brackets close is passed
/// over. One whose brackets never close, or close only after whole records started
/// ([`broken_element_end`]), took in what follows it: the search goes on at the next of
/// those records (or at the next line that is a whole record on its own). A missing `,`
/// between elements is passed over.
fn list_elements(document: &str) -> ListElements {
    let mut found = ListElements::default();
    let bytes = document.as_bytes();
    let mut pos = 1;
    // The column of the list's elements: that of the first (a pretty-printer puts every
    // element there, and their nested values further in).
    let first = document[1..].find(|c: char| !c.is_ascii_whitespace()).map_or(1, |at| at + 1);
    let column = first - document[..first].rfind('\n').map_or(0, |nl| nl + 1);
    loop {
        while pos < bytes.len() && (bytes[pos].is_ascii_whitespace() || bytes[pos] == b',') {
            pos += 1;
        }
        if pos >= bytes.len() {
            return found;
        }
        if bytes[pos] == b']' {
            // The list's end; what follows it was taken in from later lines.
            found.in_list.get_or_insert(found.ranges.len());
            pos += 1;
            continue;
        }
        // Only a record (an object, or a batch: a list of records) is an element here:
        // another value is part of a broken element.
        let mut values = serde_json::Deserializer::from_str(&document[pos..]).into_iter::<serde::de::IgnoredAny>();
        if matches!(bytes[pos], b'{' | b'[')
            && let Some(Ok(_)) = values.next()
        {
            let end = pos + values.byte_offset();
            // One that the strict reading refuses (a key repeated) is what the list's error
            // names: it is not read again, to be reported twice.
            let other_list = match agentic_core::json_strict::from_str_lenient_surrogates(&document[pos..end]) {
                Ok(value) if bytes[pos] == b'{' || is_batch(&value) => {
                    found.ranges.push(pos..end);
                    false
                }
                // A list that is no batch: followed as a broken element (below).
                Ok(_) => true,
                Err(_) => false,
            };
            if !other_list {
                pos = end;
                continue;
            }
        }
        match broken_element_end(document, pos, column) {
            Some(end) => pos = end,
            None => {
                // Past the broken element's line: to the next whole record on a line.
                let mut at = document[pos..].find('\n').map_or(bytes.len(), |nl| pos + nl + 1);
                loop {
                    if at >= bytes.len() {
                        return found;
                    }
                    let line_end = document[at..].find('\n').map_or(bytes.len(), |nl| at + nl);
                    let line = &document[at..line_end];
                    let text = line.trim_start();
                    if is_record_line(text) {
                        pos = at + (line.len() - text.len());
                        break;
                    }
                    at = line_end + 1;
                }
            }
        }
    }
}

/// What [`list_elements`] finds.
#[derive(Debug, Default)]
struct ListElements {
    ranges: Vec<Range<usize>>,
    /// How many of `ranges` are elements of the list (the rest follow its `]`); `None`
    /// when the list's `]` was not found.
    in_list: Option<usize>,
}

/// Where a broken list element at `pos` ends, following its brackets with [`Nesting`] (a
/// string never runs over a line end): after its closing bracket, or for a value without
/// brackets at the next `,` or `]`. While its brackets are open, a later line that starts
/// a record where an element of the list (at `column`) would ([`starts_element`]) ends it there: the
/// element lost a closing bracket and took in the elements after it. `None` when its
/// brackets never close.
fn broken_element_end(document: &str, pos: usize, column: usize) -> Option<usize> {
    let bytes = document.as_bytes();
    let mut nesting = Nesting::default();
    for (offset, &byte) in bytes[pos..].iter().enumerate() {
        if byte == b'\n' {
            nesting.end_line();
            let next = pos + offset + 1;
            if nesting.depth > 0
                && let Some(start) = starts_element(document, next, column)
            {
                return Some(start);
            }
        }
        let (outside, before) = (!nesting.in_string, nesting.depth);
        nesting.feed(&[byte]);
        if outside {
            match byte {
                b',' | b']' if before == 0 => return Some(pos + offset),
                // A stray `}` (the end of an element closed already) ends the broken piece.
                b'}' if before == 0 => return Some(pos + offset + 1),
                b'}' | b']' if before == 1 => return Some(pos + offset + 1),
                _ => {}
            }
        }
    }
    None
}

/// Where the line at `at` starts a record as an element of a list whose broken element
/// starts at `column` would: at that column or before it, a record on one line
/// ([`is_record_line`]), or a record or a batch over several lines, at that column
/// when it is indented (a pretty-printer's element: its nested values are indented
/// further) or before it (outside the list: a record after it). (At the column of an
/// unindented list, a nested object spread over lines looks the same as an element, so
/// only whole lines count there.)
fn starts_element(document: &str, at: usize, column: usize) -> Option<usize> {
    let rest = &document[at..];
    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let text = line.trim_start();
    let indent = line.len() - text.len();
    if indent > column || !text.starts_with(['{', '[']) {
        return None;
    }
    if is_record_line(text) {
        return Some(at + indent);
    }
    if indent == column && indent == 0 {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(&rest[indent..]).into_iter::<Value>();
    match values.next() {
        Some(Ok(value)) if is_record(&value) || is_batch(&value) => Some(at + indent),
        _ => None,
    }
}

/// How many line feeds `text` holds.
fn newlines(text: &str) -> u64 {
    memchr::memchr_iter(b'\n', text.as_bytes()).count() as u64
}

/// A line that only closes brackets (`]`, `}`, `},`): the end of a document, no record.
fn only_closes_brackets(line: &[u8]) -> bool {
    line.iter().all(|&b| matches!(b, b']' | b'}' | b',') || b.is_ascii_whitespace())
}

/// A line that is a whole record on its own: it starts in the first column with `{` or `[`
/// and is one JSON object with a member, or a list of such objects (a batch); a list
/// element may carry the `,` after it. (`{}`, `[]` or `[[], []]` on a line of their own are
/// pieces of a document printed without indentation, not records.)
fn is_record_line(text: &str) -> bool {
    if !text.starts_with(['{', '[']) {
        return false;
    }
    let value = text.trim_end();
    let value = value.strip_suffix(',').unwrap_or(value);
    serde_json::from_str::<Value>(value).is_ok_and(|value| is_record(&value) || is_batch(&value))
}

/// An object with a member.
fn is_record(value: &Value) -> bool {
    value.as_object().is_some_and(|object| !object.is_empty())
}

/// A list of records (an exporter's batch).
fn is_batch(value: &Value) -> bool {
    value.as_array().is_some_and(|items| !items.is_empty() && items.iter().all(is_record))
}

/// The bracket depth of JSON text fed line by line (outside strings), to tell when a
/// document spread over lines may be complete.
#[derive(Debug, Default)]
struct Nesting {
    depth: i64,
    in_string: bool,
    escaped: bool,
    /// The brackets open (`{` or `[`), innermost last.
    open: Vec<u8>,
    /// The last byte outside strings that is not whitespace.
    last: u8,
}

impl Nesting {
    fn feed(&mut self, text: &[u8]) {
        for &byte in text {
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    self.open.push(byte);
                }
                b'}' | b']' => {
                    self.depth -= 1;
                    self.open.pop();
                }
                _ => {}
            }
            if !byte.is_ascii_whitespace() {
                self.last = byte;
            }
        }
    }

    /// A line ended: JSON strings never span lines, so a string open at a line's end was cut
    /// (or left open) and ends there.
    fn end_line(&mut self) {
        (self.in_string, self.escaped) = (false, false);
    }

    /// True when the brackets closed (or closed too often), or when a string runs over the
    /// end of a line, which JSON never allows: parsing then tells what the text is.
    fn may_be_complete(&self) -> bool {
        self.depth <= 0 || self.in_string
    }

    /// True when the document so far wants a value next (after `:`, or after `[` or `,`
    /// inside a list), so a line that opens an object or a list can continue it.
    fn wants_value(&self) -> bool {
        !self.in_string && (self.last == b':' || (self.open.last() == Some(&b'[') && matches!(self.last, b'[' | b',')))
    }
}

/// The line of each `"spanId": "..."` in a document that starts at line `start` (the first
/// occurrence of an id wins).
fn span_lines(text: &str, start: u64) -> std::collections::HashMap<String, u64> {
    let mut lines = std::collections::HashMap::new();
    let (mut line, mut counted) = (start, 0);
    for (at, _) in text.match_indices("\"spanId\"") {
        let rest = text[at + "\"spanId\"".len()..].trim_start();
        let Some(value) = rest.strip_prefix(':').map(str::trim_start).and_then(|rest| rest.strip_prefix('"')) else {
            continue;
        };
        let Some(id) = value.split('"').next().filter(|id| !id.contains('\\')) else { continue };
        line += newlines(&text[counted..at]);
        counted = at;
        lines.entry(id.to_owned()).or_insert(line);
    }
    lines
}
