//! OTLP/JSON traces (`{"resourceSpans": [...]}`, one export per line or one pretty document;
//! spans under `scopeSpans`, or the `instrumentationLibrarySpans` of OTLP before 0.15) with
//! the OpenTelemetry GenAI conventions.
//!
//! Each span gives a start and an end event, chosen by `gen_ai.operation.name` (or the
//! first word of the span name; a span with `gen_ai.tool.name` and neither is a tool call):
//! `execute_tool` and `retrieval` → `tool_call_*` (step name `gen_ai.tool.name`, else the
//! span name after its operation word, else the whole span name when it does not start
//! with the operation; `data.input` = parsed `gen_ai.tool.call.arguments`, `data.output` =
//! `gen_ai.tool.call.result`); `invoke_agent` → `agent_invoke_*` (step name
//! `gen_ai.agent.name`); `chat`, `text_completion`, `generate_content`, `embeddings` →
//! `llm_request`/`llm_response`; anything else (including `invoke_workflow`, and
//! `create_agent`, which builds an agent without running it) → `step_start`/`step_end`. Ids
//! are normalised to lowercase hex (base64 from protobuf-JSON exporters is decoded).
//! `status.code` 2 gives status `error` with `status.message`.
//! Within one export, events are ordered by time (parents start before children and end
//! after them, also when the children's clock says otherwise); [`TraceReader`](super::TraceReader)
//! orders the events of several exports together the same way ([`order_events`], up to
//! [`ORDER_WINDOW_SPANS`] spans and [`ORDER_WINDOW_BYTES`] of records held), as an SDK
//! exports a span when it ends. Span attributes are copied
//! into `attributes`; resource attributes go under `x.otlp.resource.*`; the raw span is kept
//! on both events.
//!
//! A span exported again (a retried export batch: the same `traceId` and `spanId` as a span
//! among the latest [`SEEN_SPANS_WINDOW`]) becomes one `custom` event with
//! `data.repeated: true`, so its call counts once.

use agentic_core::event::{EventError, EventSource, SpanContext};
use agentic_core::{CanonicalEvent, ErrorClass, EventStatus, EventType};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::sync::Arc;

use super::{IdMap, TraceAdapter, TraceFormat, first_problem, kind_of, member, no_time, other_format_note};

/// How many spans are remembered (by a hash of their trace and span id) to tell one exported
/// again.
pub(super) const SEEN_SPANS_WINDOW: usize = 262_144;

/// Reads OTLP/JSON trace exports.
#[derive(Debug, Clone, Default)]
pub struct OtlpJsonAdapter {
    /// Hashes of the spans read (of their trace and span id), with a hash of what each holds
    /// and the order they came in (the oldest is forgotten first).
    seen: std::collections::HashMap<u64, u64>,
    seen_order: std::collections::VecDeque<u64>,
}

impl OtlpJsonAdapter {
    /// An adapter that has read nothing.
    pub fn new() -> OtlpJsonAdapter {
        OtlpJsonAdapter::default()
    }

    /// True when the span was read before (among the latest [`SEEN_SPANS_WINDOW`]): the same
    /// trace and span id with the same name, times and data, as a retried export writes it.
    /// Another span under those ids (a writer reusing them) is a span of its own: dropping it
    /// would hide a call. Otherwise notes it.
    fn repeated(&mut self, span: &ParsedSpan) -> bool {
        use std::hash::{Hash, Hasher};
        let hash = |parts: &dyn Fn(&mut std::hash::DefaultHasher)| {
            let mut hasher = std::hash::DefaultHasher::new();
            parts(&mut hasher);
            hasher.finish()
        };
        let key = hash(&|hasher| (span.trace_id.as_deref(), span.span_id.as_deref()).hash(hasher));
        let holds = hash(&|hasher| {
            (span.start.step_name.as_deref(), span.start_nanos, span.end_nanos, span.parent_span_id.as_deref())
                .hash(hasher);
            super::hash_json(&span.start.data, hasher);
            super::hash_json(&span.end.data, hasher);
        });
        match self.seen.insert(key, holds) {
            Some(before) if before == holds => return true,
            Some(_) => return false,
            None => {}
        }
        self.seen_order.push_back(key);
        if self.seen_order.len() > SEEN_SPANS_WINDOW
            && let Some(oldest) = self.seen_order.pop_front()
        {
            self.seen.remove(&oldest);
        }
        false
    }
}

/// What an event is to the order of events at one time (in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Moment {
    /// The end of a span that lasted.
    EndAfterStart,
    /// A start.
    Start,
    /// The end of a span that took no time, or of one a span inside it starts as it ends:
    /// after its own start and the starts inside it.
    EndAtStart,
}

struct Pending {
    time: i128,
    moment: Moment,
    /// The span's place in the span tree: before-children order for a start, after-children
    /// order for an end (see [`span_order`]).
    rank: usize,
    /// The span, by position, and whether this is its end.
    event: (usize, bool),
}

/// What [`span_order`] needs of a span: its ids, times and clock.
struct SpanTimes<'a> {
    trace_id: Option<&'a str>,
    span_id: Option<&'a str>,
    parent_span_id: Option<&'a str>,
    start_nanos: i128,
    end_nanos: i128,
    /// The span's start event, whose resource attributes tell its clock ([`clock_of`]) and
    /// whose raw span its kind ([`is_consumer`]), looked at only when a span ends after its
    /// parent.
    start: &'a CanonicalEvent,
}

/// How far a span of another resource than its parent's may end after its parent and still be
/// read as the parent's clock being behind its own (see [`span_order`]): 1 s.
pub(super) const CLOCK_SKEW_BOUND_NANOS: i128 = 1_000_000_000;

impl<'a> SpanTimes<'a> {
    fn of(span: &'a ParsedSpan) -> SpanTimes<'a> {
        SpanTimes {
            trace_id: span.trace_id.as_deref(),
            span_id: span.span_id.as_deref(),
            parent_span_id: span.parent_span_id.as_deref(),
            start_nanos: span.start_nanos,
            end_nanos: span.end_nanos,
            start: &span.start,
        }
    }

    /// The span whose start and end events these are (ids from the start, times from both).
    fn of_events(start: &'a CanonicalEvent, end: &CanonicalEvent) -> SpanTimes<'a> {
        let span = start.span.as_ref();
        SpanTimes {
            trace_id: span.and_then(|span| span.trace_id.as_deref()),
            span_id: span.and_then(|span| span.span_id.as_deref()),
            parent_span_id: span.and_then(|span| span.parent_span_id.as_deref()),
            start_nanos: nanos_of(&start.timestamp),
            end_nanos: nanos_of(&end.timestamp),
            start,
        }
    }
}

/// The clock of a span's event: a hash of its resource's attributes (`x.otlp.resource.*`).
fn clock_of(event: &CanonicalEvent) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for (key, value) in event.attributes.iter().filter(|(key, _)| key.starts_with(RESOURCE_PREFIX)) {
        key.hash(&mut hasher);
        value.to_string().hash(&mut hasher);
    }
    hasher.finish()
}

/// Whether a span's event is of a messaging consumer (`kind` 5, `"SPAN_KIND_CONSUMER"`).
fn is_consumer(event: &CanonicalEvent) -> bool {
    let kind = event.source.as_ref().and_then(|source| source.raw.as_deref()).and_then(|raw| raw.get("kind"));
    matches!(kind, Some(Value::Number(n)) if n.as_u64() == Some(5))
        || matches!(kind, Some(Value::String(k)) if k == "SPAN_KIND_CONSUMER")
}

/// What a record that is not an OTLP/JSON export (no `resourceSpans`) looks like, when it
/// looks like a near miss: protobuf JSON with the `.proto` field names, one `ResourceSpans`
/// entry without its wrapper, or the OpenTelemetry SDK's console exporter output.
pub(super) fn misspelt_export(record: &Value) -> Option<&'static str> {
    let object = match record {
        Value::Object(object) => object,
        Value::Array(items) => return items.first().and_then(misspelt_export),
        _ => return None,
    };
    if object.contains_key("resource_spans") {
        Some(
            "it has `resource_spans`: protobuf's own field names, which OTLP/JSON does not use (its keys are \
             lowerCamelCase: `resourceSpans`, `spanId`, `startTimeUnixNano`); write the export with them (protobuf's \
             `MessageToJson` does unless told `preserving_proto_field_name`)",
        )
    } else if SCOPE_SPAN_LISTS.iter().any(|key| object.contains_key(*key)) {
        Some("it is one `ResourceSpans` entry: wrap it as `{\"resourceSpans\": [...]}`, as an OTLP export is")
    } else if object.get("context").and_then(Value::as_object).is_some_and(|context| context.contains_key("span_id")) {
        Some(
            "it looks like the OpenTelemetry SDK's console exporter output (`context.span_id`), which is not OTLP; \
             export OTLP/JSON (the OpenTelemetry Collector's `file` exporter writes it)",
        )
    } else {
        None
    }
}

/// The prefix of resource attributes among a span's attributes.
const RESOURCE_PREFIX: &str = "x.otlp.resource.";

/// The keys of a `resourceSpans` item that list its spans by scope: `scopeSpans`, and
/// `instrumentationLibrarySpans`, the name OTLP used before 0.15 (same shape).
const SCOPE_SPAN_LISTS: [&str; 2] = ["scopeSpans", "instrumentationLibrarySpans"];

impl TraceAdapter for OtlpJsonAdapter {
    fn format(&self) -> TraceFormat {
        TraceFormat::OtlpJson
    }

    fn ingest(&mut self, record: Value, line: u64, out: &mut Vec<CanonicalEvent>) -> Result<(), String> {
        let mut bad = Vec::new();
        self.read_document(record, line, out, &mut bad)?;
        first_problem(&bad, "bad span(s)", "; the document's other spans are fine")
    }

    fn ingest_parts(&mut self, record: Value, line: u64, out: &mut Vec<CanonicalEvent>, problems: &mut Vec<String>) {
        let mut bad = Vec::new();
        match self.read_document(record, line, out, &mut bad) {
            Err(problem) => problems.push(problem),
            Ok(()) => {
                let fine = if bad.len() == 1 { "; the document's other spans are fine" } else { "" };
                problems.extend(bad.into_iter().map(|problem| format!("{problem}{fine}")));
            }
        }
    }
}

impl OtlpJsonAdapter {
    /// Reads one document: its good spans to `out`, one message per bad span to `bad`; `Err`
    /// when the document itself is not an OTLP export (nothing is read then).
    fn read_document(
        &mut self,
        record: Value,
        line: u64,
        out: &mut Vec<CanonicalEvent>,
        bad: &mut Vec<String>,
    ) -> Result<(), String> {
        let Value::Object(mut object) = record else {
            return Err(format!("expected a JSON object, found {}", kind_of(&record)));
        };
        let resource_spans = match object.remove("resourceSpans") {
            Some(Value::Array(items)) => items,
            Some(other) => return Err(format!("`resourceSpans` must be a list, found {}", kind_of(&other))),
            None => {
                let record = Value::Object(object);
                let why = other_format_note(&record, TraceFormat::OtlpJson)
                    .unwrap_or_else(|| misspelt_export(&record).map_or_else(String::new, |why| format!("; {why}")));
                return Err(format!("missing `resourceSpans`{why}"));
            }
        };
        let mut spans: Vec<(Map<String, Value>, Map<String, Value>)> = Vec::new();
        for (resource_idx, resource_span) in resource_spans.into_iter().enumerate() {
            let Value::Object(mut resource_span) = resource_span else {
                return Err(format!("`resourceSpans[{resource_idx}]` must be an object"));
            };
            let mut resource_attributes = Map::new();
            if let Some(Value::Object(resource)) = member(&resource_span, "resource") {
                match attributes(member(resource, "attributes")) {
                    Ok(read) => {
                        for (key, value) in read {
                            resource_attributes.insert(format!("{RESOURCE_PREFIX}{key}"), value);
                        }
                    }
                    // The resource's spans are skipped (their resource would be a guess), and
                    // said; the document's other resources are read.
                    Err(problem) => {
                        bad.push(format!(
                            "`resourceSpans[{resource_idx}].resource`: {problem}; its {} span(s) are skipped",
                            count_spans(&resource_span)
                        ));
                        continue;
                    }
                }
            }
            // `instrumentationLibrarySpans` is the name OTLP used before 0.15 (older exporters and
            // collector dumps still write it), with the same shape.
            let mut scope_spans = Vec::new();
            for key in SCOPE_SPAN_LISTS {
                match resource_span.remove(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(items)) => scope_spans.extend(items.into_iter().map(|item| (key, item))),
                    Some(other) => {
                        return Err(format!(
                            "`resourceSpans[{resource_idx}].{key}` must be a list, found {}",
                            kind_of(&other)
                        ));
                    }
                }
            }
            for (key, scope_span) in scope_spans {
                let Value::Object(mut scope_span) = scope_span else {
                    return Err(format!("`resourceSpans[{resource_idx}].{key}` items must be objects"));
                };
                match scope_span.remove("spans") {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(items)) => {
                        for span in items {
                            let Value::Object(span) = span else {
                                return Err("every span must be an object".to_owned());
                            };
                            spans.push((span, resource_attributes.clone()));
                        }
                    }
                    Some(other) => return Err(format!("`spans` must be a list, found {}", kind_of(&other))),
                }
            }
        }
        // A bad span is reported and skipped; the document's other spans are read.
        let mut parsed = Vec::with_capacity(spans.len());
        let mut repeated = Vec::new();
        for (idx, (span, resource_attributes)) in spans.into_iter().enumerate() {
            match parse_span(span, resource_attributes, idx, line) {
                Ok(span) if self.repeated(&span) => repeated.push(repeated_event(span)),
                Ok(span) => parsed.push(span),
                Err(message) => bad.push(message),
            }
        }
        order_spans(parsed, out);
        out.extend(repeated);
        Ok(())
    }
}

/// How many spans [`TraceReader`](super::TraceReader) holds to order spans of several exports
/// (one export per span, or batches of a long run) with each other: a span is exported when
/// it ends, so an agent comes after the calls inside it; held together, they are ordered by
/// time as one export's are. Past this many, or past [`ORDER_WINDOW_BYTES`] of records,
/// the older half of what is held (in time order, where no span is open, or where few are:
/// those stay held whole, their starts given out) is given out and the later half stays
/// held, to be ordered with the exports that follow.
pub const ORDER_WINDOW_SPANS: usize = 8_192;

/// The most record text whose spans [`TraceReader`](super::TraceReader) holds to order them
/// (held as events, a span takes about 20 times its text in memory).
pub const ORDER_WINDOW_BYTES: u64 = 2 * 1024 * 1024;

/// Orders the events of spans read from several exports (as the adapter gave them out, in
/// the order they were read) like the spans of one export: see [`order_spans`]. Events that
/// are not a span's start or end (a span exported again), and any event whose pair is
/// missing, follow, in the order they came.
pub(super) fn order_events(events: Vec<CanonicalEvent>) -> Vec<CanonicalEvent> {
    // A start waits for its end; the span takes the place of its start. Pairs are found
    // first, by position, so the events move only once.
    let mut end_of: Vec<Option<usize>> = vec![None; events.len()];
    let mut open: IdMap<(Option<&str>, &str), Vec<usize>> = IdMap::default();
    for (idx, event) in events.iter().enumerate() {
        let Some(key) = span_key(event) else {
            continue;
        };
        if starts_span(event.event_type) {
            open.entry(key).or_default().push(idx);
        } else if ends_span(event.event_type)
            && let Some(at) = open.get_mut(&key).and_then(Vec::pop)
        {
            end_of[at] = Some(idx);
        }
    }
    drop(open);
    let pairs: Vec<(usize, usize)> =
        end_of.iter().enumerate().filter_map(|(start, end)| Some((start, (*end)?))).collect();
    let times: Vec<SpanTimes<'_>> =
        pairs.iter().map(|&(start, end)| SpanTimes::of_events(&events[start], &events[end])).collect();
    let order = span_order(&times);
    drop(times);
    let mut slots: Vec<Option<CanonicalEvent>> = events.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for (span, is_end) in order {
        let (start, end) = pairs[span];
        out.extend(slots[if is_end { end } else { start }].take());
    }
    // The events without a pair follow, as they came.
    out.extend(slots.into_iter().flatten());
    out
}

/// The span an event of this adapter's belongs to: its trace and span id (span ids are
/// those of one trace).
pub(super) fn span_key(event: &CanonicalEvent) -> Option<(Option<&str>, &str)> {
    event.span.as_ref().and_then(|span| Some((span.trace_id.as_deref(), span.span_id.as_deref()?)))
}

/// A time in nanoseconds since 1970 (as OTLP writes it).
pub(super) fn nanos_of(time: &DateTime<Utc>) -> i128 {
    i128::from(time.timestamp()) * 1_000_000_000 + i128::from(time.timestamp_subsec_nanos())
}

/// Whether an event of this adapter's is the start of a span (see [`call_events`]).
pub(super) fn starts_span(kind: EventType) -> bool {
    matches!(
        kind,
        EventType::ToolCallStart | EventType::AgentInvokeStart | EventType::LlmRequest | EventType::StepStart
    )
}

/// Whether an event of this adapter's is the end of a span.
pub(super) fn ends_span(kind: EventType) -> bool {
    matches!(kind, EventType::ToolCallEnd | EventType::AgentInvokeEnd | EventType::LlmResponse | EventType::StepEnd)
}

/// Appends the events of `parsed` (spans in the order they came) to `out`, ordered by time:
/// parents start before their children and end after them, also when the children's clock
/// says otherwise; events at one time by the span tree ([`tree_ranks`]).
fn order_spans(parsed: Vec<ParsedSpan>, out: &mut Vec<CanonicalEvent>) {
    let times: Vec<SpanTimes<'_>> = parsed.iter().map(SpanTimes::of).collect();
    let order = span_order(&times);
    drop(times);
    let mut events: Vec<(Option<CanonicalEvent>, Option<CanonicalEvent>)> =
        parsed.into_iter().map(|span| (Some(span.start), Some(span.end))).collect();
    out.reserve(order.len());
    for (span, is_end) in order {
        let pair = &mut events[span];
        out.extend(if is_end { pair.1.take() } else { pair.0.take() });
    }
}

/// The order of the events of `parsed` (spans in the order they came), by time: each span's
/// position and whether the event is its end. Parents start before their children and end
/// after them, also when the children's clock says otherwise; events at one time by the span
/// tree ([`tree_ranks`]).
fn span_order(parsed: &[SpanTimes<'_>]) -> Vec<(usize, bool)> {
    // Each span's parent among these spans, by position. Span ids are those of one trace: a
    // parent is looked up in its child's trace.
    type Key<'a> = (Option<&'a str>, &'a str);
    let index: IdMap<Key<'_>, usize> =
        parsed.iter().enumerate().filter_map(|(idx, p)| p.span_id.map(|id| ((p.trace_id, id), idx))).collect();
    let parent_of: Vec<Option<usize>> = parsed
        .iter()
        .enumerate()
        .map(|(idx, p)| p.parent_span_id.and_then(|id| index.get(&(p.trace_id, id)).copied()).filter(|&up| up != idx))
        .collect();
    // Depth of each span, to move times outer spans first (a loop of parent ids stops after
    // as many steps as there are spans).
    let depths: Vec<usize> = (0..parsed.len())
        .map(|idx| std::iter::successors(parent_of[idx], |&up| parent_of[up]).take(parsed.len()).count())
        .collect();
    // The times events are ordered by: a span inside another here starts no
    // earlier than it and ends no later (clocks of two processes disagree by a little; the
    // parent id says which came first). The events keep their own times.
    let mut outer_first: Vec<usize> = (0..parsed.len()).collect();
    outer_first.sort_by_key(|&idx| depths[idx]);
    // A span of another resource than its parent's (another process, maybe another host's
    // clock) that ends after its parent by up to `CLOCK_SKEW_BOUND_NANOS` (a remote sub-agent
    // whose clock is ahead of its caller's) is moved back to end with its parent, and the
    // spans of its resource under it with it, so its calls stay before what its caller did
    // next. Within one resource, and for messaging consumers, a span after its parent's end
    // is real (a background task) and keeps its time.
    let mut shift = vec![0_i128; parsed.len()];
    for &idx in &outer_first {
        let Some(up) = parent_of[idx] else { continue };
        let overrun = parsed[idx].end_nanos - (parsed[up].end_nanos + shift[up]);
        // (Clocks are told apart only where it matters: most spans end inside their parent.)
        if shift[up] == 0 && overrun <= 0 {
            continue;
        }
        shift[idx] = if clock_of(parsed[idx].start) == clock_of(parsed[up].start) {
            shift[up]
        } else if overrun > 0 && overrun <= CLOCK_SKEW_BOUND_NANOS && !is_consumer(parsed[idx].start) {
            -overrun
        } else {
            0
        };
    }
    let mut starts: Vec<i128> = parsed.iter().zip(&shift).map(|(p, shift)| p.start_nanos + shift).collect();
    for &idx in &outer_first {
        if let Some(up) = parent_of[idx] {
            starts[idx] = starts[idx].max(starts[up]);
        }
    }
    let mut ends: Vec<i128> =
        parsed.iter().zip(&starts).zip(&shift).map(|((p, &start), shift)| (p.end_nanos + shift).max(start)).collect();
    for &idx in outer_first.iter().rev() {
        if let Some(up) = parent_of[idx] {
            ends[up] = ends[up].max(ends[idx]);
        }
    }
    // The latest start inside each span (its own, or a descendant's): an end at that time
    // comes after the starts inside it.
    let mut inner_start = starts.clone();
    for &idx in outer_first.iter().rev() {
        if let Some(up) = parent_of[idx] {
            inner_start[up] = inner_start[up].max(inner_start[idx]);
        }
    }
    let (before_children, after_children) = tree_ranks(&parent_of, &starts, parsed);
    let mut pending = Vec::with_capacity(parsed.len() * 2);
    for idx in 0..parsed.len() {
        let (start, end) = (starts[idx], ends[idx]);
        let moment = if end <= inner_start[idx] { Moment::EndAtStart } else { Moment::EndAfterStart };
        pending.push(Pending { time: start, moment: Moment::Start, rank: before_children[idx], event: (idx, false) });
        pending.push(Pending { time: end, moment, rank: after_children[idx], event: (idx, true) });
    }
    // Same time: ends of spans that lasted, then starts, then ends of spans that took no time
    // (or in which a span starts as they end); among starts, and among ends, the span tree
    // decides: a parent starts before its children and ends after them, and spans in
    // different branches follow the order of the branches (siblings by their times, moved and
    // then their own, and only then the listing order). So two spans whose clocks say the
    // same time (an SDK that writes milliseconds) are ordered by where they sit, never by
    // how deep.
    pending.sort_by(|a, b| a.time.cmp(&b.time).then(a.moment.cmp(&b.moment)).then(a.rank.cmp(&b.rank)));
    pending.into_iter().map(|p| p.event).collect()
}

/// Each span's place in a walk of the span tree: before its children (`.0`) and after them
/// (`.1`). Siblings (and the spans without a parent here) go in the order of their moved
/// start, their own start, then their position; spans in a loop of parent ids are walked as
/// if the first of them had no parent.
fn tree_ranks(parent_of: &[Option<usize>], starts: &[i128], parsed: &[SpanTimes<'_>]) -> (Vec<usize>, Vec<usize>) {
    let count = parent_of.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut roots = Vec::new();
    for (idx, parent) in parent_of.iter().enumerate() {
        match parent {
            Some(up) => children[*up].push(idx),
            None => roots.push(idx),
        }
    }
    let key = |&idx: &usize| (starts[idx], parsed[idx].start_nanos, idx);
    for list in &mut children {
        list.sort_by_key(key);
    }
    roots.sort_by_key(key);
    // Spans no root reaches (a loop of parent ids) are walked after the others.
    let mut rest: Vec<usize> = (0..count).collect();
    rest.sort_by_key(key);
    let (mut before, mut after) = (vec![usize::MAX; count], vec![usize::MAX; count]);
    let (mut next_before, mut next_after) = (0, 0);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in roots.into_iter().chain(rest) {
        if before[root] != usize::MAX {
            continue;
        }
        before[root] = next_before;
        next_before += 1;
        stack.push((root, 0));
        while let Some((idx, child)) = stack.pop() {
            match children[idx].get(child) {
                Some(&next) if before[next] == usize::MAX => {
                    stack.push((idx, child + 1));
                    before[next] = next_before;
                    next_before += 1;
                    stack.push((next, 0));
                }
                Some(_) => stack.push((idx, child + 1)),
                None => {
                    after[idx] = next_after;
                    next_after += 1;
                }
            }
        }
    }
    (before, after)
}

struct ParsedSpan {
    trace_id: Option<String>,
    span_id: Option<String>,
    parent_span_id: Option<String>,
    start_nanos: i128,
    end_nanos: i128,
    start: CanonicalEvent,
    end: CanonicalEvent,
}

fn parse_span(
    span: Map<String, Value>,
    resource_attributes: Map<String, Value>,
    idx: usize,
    line: u64,
) -> Result<ParsedSpan, String> {
    // Protobuf's JSON mapping reads a missing or null field as its default: the empty name
    // (a span with `gen_ai.tool.name` is still a call).
    let name = match member(&span, "name") {
        Some(Value::String(name)) => name.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => return Err(format!("span {idx}: `name` must be a string, found {}", kind_of(other))),
    };
    let span_id = id_field(&span, "spanId", 8).map_err(|message| format!("span {idx} (`{name}`): {message}"))?;
    if span_id.is_none() {
        return Err(format!("span {idx} (`{name}`): missing `spanId`"));
    }
    // Errors past this point name the span by its id as written, which the reader turns into
    // the line of its `spanId` in a document spread over lines.
    let raw_id = member(&span, "spanId").and_then(Value::as_str).unwrap_or_default();
    // The id comes before the name, which is the trace's text and could look like a citation.
    let named = |message: String| format!("span {idx} ({}, `{name}`): {message}", cite_span_id(raw_id));
    let trace_id = id_field(&span, "traceId", 16).map_err(named)?;
    if trace_id.is_none() {
        return Err(named("missing `traceId` (span ids are unique only within their trace)".to_owned()));
    }
    // The all-zero id is OTLP's "no parent" (some exporters write it for root spans).
    let parent_span_id = id_field(&span, "parentSpanId", 8).map_err(named)?.filter(|id| !id.bytes().all(|b| b == b'0'));
    // No start (or `"0"`, protobuf's unset): the span is placed at its end, as one that took
    // no time, and marked, so order rules warn (at time 0 it would come before its siblings).
    let start_read = nanos(&span, "startTimeUnixNano").map_err(named)?.filter(|&start| start != 0);
    let end_read = nanos(&span, "endTimeUnixNano").map_err(named)?;
    let start_missing = start_read.is_none();
    let start_nanos = start_read.or(end_read);
    // No end, or an end before the start (a clock step, `"0"`): the span took no time.
    let end_nanos = match (start_nanos, end_read) {
        (Some(start), Some(end)) => Some(end.max(start)),
        (start, end) => end.or(start),
    };
    let mut attrs = attributes(member(&span, "attributes")).map_err(named)?;
    let first_word = name.split_whitespace().next().unwrap_or_default();
    let operation = match member(&attrs, "gen_ai.operation.name").and_then(Value::as_str) {
        Some(operation) => operation.to_owned(),
        // A span that names its tool but not its operation is a tool call.
        None if call_events(first_word).is_none() && member(&attrs, "gen_ai.tool.name").is_some() => {
            "execute_tool".to_owned()
        }
        None => first_word.to_owned(),
    };
    // The name after the operation (`execute_tool get_weather`), or the whole name when it
    // does not start with the operation (`get_weather`).
    let rest_of_name = if first_word == operation {
        name.split_once(' ').map(|(_, rest)| rest.trim().to_owned()).filter(|rest| !rest.is_empty())
    } else {
        Some(name.clone()).filter(|name| !name.is_empty())
    };
    let (start_type, end_type) = call_events(&operation).unwrap_or((EventType::StepStart, EventType::StepEnd));
    let step_name = match start_type {
        EventType::ToolCallStart => {
            member(&attrs, "gen_ai.tool.name").and_then(Value::as_str).map(str::to_owned).or(rest_of_name)
        }
        EventType::AgentInvokeStart => {
            member(&attrs, "gen_ai.agent.name").and_then(Value::as_str).map(str::to_owned).or(rest_of_name)
        }
        _ => Some(name.clone()),
    };
    let mut data = Map::new();
    if let Some(arguments) = member(&attrs, "gen_ai.tool.call.arguments") {
        let input = match arguments {
            // JSON text is read strictly (a repeated key is refused); other text stays text.
            // A lone surrogate escape (a JavaScript string cut inside an emoji) reads as
            // U+FFFD, as in a record.
            Value::String(text) => match agentic_core::json_strict::from_str_lenient_surrogates(text) {
                Ok(value) => value,
                Err(error) if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() => {
                    return Err(named(format!("`gen_ai.tool.call.arguments`: {error}")));
                }
                Err(_) => arguments.clone(),
            },
            other => other.clone(),
        };
        data.insert("input".to_owned(), input);
    }
    let mut end_data = data.clone();
    if let Some(result) = member(&attrs, "gen_ai.tool.call.result") {
        end_data.insert("output".to_owned(), result.clone());
    }
    let (status, error) = match member(&span, "status") {
        Some(Value::Object(status)) => {
            let code = member(status, "code").and_then(|c| c.as_i64().or_else(|| c.as_str().map(status_code)));
            let message = member(status, "message").and_then(Value::as_str).unwrap_or_default();
            if code == Some(2) {
                let message = if message.is_empty() { "span status ERROR".to_owned() } else { message.to_owned() };
                (
                    EventStatus::Error,
                    Some(EventError {
                        class: ErrorClass::User,
                        message,
                        error_type: member(&attrs, "error.type").and_then(Value::as_str).map(str::to_owned),
                        retryable: false,
                    }),
                )
            } else {
                (EventStatus::Ok, None)
            }
        }
        _ => (EventStatus::Ok, None),
    };
    attrs.extend(resource_attributes);
    attrs.insert("x.otlp.span_name".to_owned(), Value::String(name.clone()));
    let context =
        SpanContext { trace_id: trace_id.clone(), span_id: span_id.clone(), parent_span_id: parent_span_id.clone() };
    let raw = Value::Object(span);
    let source = EventSource {
        format: TraceFormat::OtlpJson.name().to_owned(),
        native_id: span_id.clone(),
        native_type: Some(operation),
        line: Some(line),
        raw: Some(Arc::new(raw)),
    };
    let mut start = CanonicalEvent::new(start_type, to_time(start_nanos));
    start.step_name = step_name.clone();
    start.data = if data.is_empty() { Value::Null } else { Value::Object(data) };
    start.span = Some(context.clone());
    start.attributes = attrs.clone();
    if start_missing {
        start.attributes.insert(agentic_core::event::START_MISSING.to_owned(), Value::Bool(true));
    }
    start.source = Some(source.clone());
    let mut end = CanonicalEvent::new(end_type, to_time(end_nanos));
    end.step_name = step_name;
    end.data = if end_data.is_empty() { Value::Null } else { Value::Object(end_data) };
    end.span = Some(context);
    end.attributes = attrs;
    end.status = Some(status);
    end.error = error;
    end.source = Some(source);
    Ok(ParsedSpan {
        trace_id,
        span_id,
        parent_span_id,
        start_nanos: start_nanos.unwrap_or(0),
        end_nanos: end_nanos.unwrap_or(0),
        start,
        end,
    })
}

/// The `custom` event of a span exported again: its start's data, under `data.input` if it
/// had any, with `kind` (the span's first event type) and `repeated: true`; the raw span
/// rides along in `source`.
fn repeated_event(span: ParsedSpan) -> CanonicalEvent {
    let mut event = span.start;
    let mut data = Map::new();
    data.insert("kind".to_owned(), serde_json::to_value(event.event_type).unwrap_or(Value::Null));
    data.insert("repeated".to_owned(), Value::Bool(true));
    if let Value::Object(mut old) = std::mem::take(&mut event.data)
        && let Some(input) = old.remove("input")
    {
        data.insert("input".to_owned(), input);
    }
    event.event_type = EventType::Custom;
    event.data = Value::Object(data);
    event
}

fn status_code(text: &str) -> i64 {
    match text {
        "STATUS_CODE_OK" => 1,
        "STATUS_CODE_ERROR" => 2,
        other => other.parse().unwrap_or(0),
    }
}

fn to_time(nanos: Option<i128>) -> DateTime<Utc> {
    match nanos {
        Some(nanos) => {
            let secs = nanos.div_euclid(1_000_000_000);
            let sub = nanos.rem_euclid(1_000_000_000) as u32;
            i64::try_from(secs).ok().and_then(|secs| DateTime::from_timestamp(secs, sub)).unwrap_or_else(no_time)
        }
        None => no_time(),
    }
}

fn nanos(span: &Map<String, Value>, key: &str) -> Result<Option<i128>, String> {
    match member(span, key) {
        None | Some(Value::Null) => Ok(None),
        // OTLP times are unsigned 64-bit nanoseconds since the Unix epoch.
        Some(Value::String(text)) => text.parse::<u64>().map(|n| Some(i128::from(n))).map_err(|_| {
            format!("`{key}` \"{text}\" is not a whole number of nanoseconds since 1970 (0 to 18446744073709551615)")
        }),
        Some(Value::Number(number)) => number
            .as_u64()
            .map(|n| Some(i128::from(n)))
            .ok_or_else(|| format!("`{key}` {number} is not a whole number of nanoseconds")),
        Some(other) => Err(format!("`{key}` must be a string of nanoseconds, found {}", kind_of(other))),
    }
}

/// How an error message cites a span by its id as written (see [`cited_span_id`]).
fn cite_span_id(raw_id: &str) -> String {
    format!("spanId \"{raw_id}\"")
}

/// The span id an error message cites, as written in the trace (the first citation: the
/// span's own, which comes before anything the trace wrote).
pub(crate) fn cited_span_id(message: &str) -> Option<&str> {
    let rest = &message[message.find("spanId \"")? + "spanId \"".len()..];
    rest.split('"').next()
}

/// The start and end events of a span of `operation` when it is a tool call, an agent
/// invocation or a model call (see the module docs); other spans are steps.
fn call_events(operation: &str) -> Option<(EventType, EventType)> {
    match operation {
        "execute_tool" | "retrieval" => Some((EventType::ToolCallStart, EventType::ToolCallEnd)),
        "invoke_agent" => Some((EventType::AgentInvokeStart, EventType::AgentInvokeEnd)),
        "chat" | "text_completion" | "generate_content" | "embeddings" => {
            Some((EventType::LlmRequest, EventType::LlmResponse))
        }
        _ => None,
    }
}

/// An id field as lowercase hex: hex is kept, base64 of `bytes` bytes is decoded, anything
/// else is kept as written (never lost).
fn id_field(span: &Map<String, Value>, key: &str, bytes: usize) -> Result<Option<String>, String> {
    match member(span, key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(normalize_id(text, bytes))),
        Some(other) => Err(format!("`{key}` must be a string, found {}", kind_of(other))),
    }
}

/// Normalises an OTLP id to lowercase hex.
pub(crate) fn normalize_id(text: &str, bytes: usize) -> String {
    if text.len() == bytes * 2 && text.chars().all(|c| c.is_ascii_hexdigit()) {
        return text.to_ascii_lowercase();
    }
    match decode_base64(text) {
        Some(decoded) if decoded.len() == bytes => decoded.iter().map(|b| format!("{b:02x}")).collect(),
        _ => text.to_owned(),
    }
}

fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The spans under one `resourceSpans` item (for a message).
fn count_spans(resource_span: &Map<String, Value>) -> usize {
    SCOPE_SPAN_LISTS
        .iter()
        .filter_map(|key| resource_span.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|scope| scope.get("spans").and_then(Value::as_array))
        .map(Vec::len)
        .sum()
}

/// OTLP `[{key, value: {stringValue|intValue|...}}]` into a JSON map.
fn attributes(list: Option<&Value>) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    let items = match list {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(format!("`attributes` must be a list, found {}", kind_of(other))),
    };
    for item in items {
        let Some(key) = item.get("key").and_then(Value::as_str) else {
            return Err("every attribute needs a string `key`".to_owned());
        };
        // The same attribute twice would mean two things (a tool name, then another).
        if member(&out, key).is_some() {
            return Err(format!("attribute `{key}` is given twice"));
        }
        out.insert(key.to_owned(), any_value(item.get("value").unwrap_or(&Value::Null)));
    }
    Ok(out)
}

fn any_value(value: &Value) -> Value {
    let Value::Object(object) = value else { return value.clone() };
    if let Some(v) = member(object, "stringValue") {
        return v.clone();
    }
    if let Some(v) = member(object, "boolValue") {
        return v.clone();
    }
    if let Some(v) = member(object, "intValue") {
        return match v {
            Value::String(text) => text.parse::<i64>().map(Value::from).unwrap_or_else(|_| v.clone()),
            other => other.clone(),
        };
    }
    if let Some(v) = member(object, "doubleValue") {
        return v.clone();
    }
    if let Some(v) = member(object, "bytesValue") {
        return v.clone();
    }
    if let Some(Value::Object(array)) = member(object, "arrayValue") {
        let values =
            member(array, "values").and_then(Value::as_array).map(|items| items.iter().map(any_value).collect());
        return Value::Array(values.unwrap_or_default());
    }
    if let Some(Value::Object(kvlist)) = member(object, "kvlistValue") {
        let mut map = Map::new();
        for item in member(kvlist, "values").and_then(Value::as_array).into_iter().flatten() {
            if let Some(key) = item.get("key").and_then(Value::as_str) {
                map.insert(key.to_owned(), any_value(item.get("value").unwrap_or(&Value::Null)));
            }
        }
        return Value::Object(map);
    }
    Value::Null
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_normalise_from_hex_and_base64() {
        assert_eq!(normalize_id("4BF92F3577B34DA6A3CE929D0E0E4736", 16), "4bf92f3577b34da6a3ce929d0e0e4736");
        // base64 of the bytes 00 f0 67 aa 0b a9 02 b7.
        assert_eq!(normalize_id("APBnqgupArc=", 8), "00f067aa0ba902b7");
        assert_eq!(normalize_id("not an id!", 8), "not an id!");
    }
}
