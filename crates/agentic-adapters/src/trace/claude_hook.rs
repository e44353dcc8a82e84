//! Claude Code hook input records (the stdin JSON of a hook, one per line).
//!
//! | `hook_event_name` | canonical |
//! |---|---|
//! | `PreToolUse` | `tool_call_start` |
//! | `PostToolUse` | `tool_call_end`, status `ok` (it fires only on success), `data.output` = `tool_response` |
//! | `PostToolUseFailure` | `tool_call_end`, status `error` (`cancelled` when `is_interrupt`), `error.message` = `error` |
//! | `SubagentStart` / `SubagentStop` | `agent_invoke_start` / `agent_invoke_end`, span id = `agent_id` (a stop without `agent_id` is `custom`) |
//! | anything else | `custom` with `data.kind` = the hook name |
//!
//! Span: trace id = `session_id`, span id = `tool_use_id`, parent = `agent_id` (inside a
//! subagent). A tool record inside a subagent whose `SubagentStart` was not captured (a
//! capture of the tool hooks only) carries `agent_id` and `agent_type`: the first such record
//! of an agent (or a `SubagentStop` of an agent not seen before) is preceded by an inferred
//! `agent_invoke_start` (attribute `x.claude_hook.inferred`), so `within: {agent: ...}`
//! scopes and agent counts see the subagent; a `SubagentStart` that comes after it is kept as
//! a `custom` event.
//!
//! A subagent's start is linked to the tool call that spawned it: hook records carry no such
//! link, so the adapter keeps the spawning calls in flight (a `PreToolUse` of `Task` or
//! `Agent`, or of any tool whose `tool_input` has a `subagent_type`, until its `PostToolUse`
//! or `PostToolUseFailure`) and gives a starting subagent (real or inferred) the oldest one
//! of the same session whose `subagent_type` is its `agent_type` (a call without
//! `subagent_type` takes a subagent of any type when no call names it) as its parent span,
//! with the attribute `x.claude_hook.spawned_by`. A call spawns one subagent. So
//! `within: {tool: Task}` holds the subagent's calls, as it does in tooltrace and OTLP traces.
//! A background call (`run_in_background`) that ended before a subagent linked to it
//! links the next subagent of its type that starts with no call in flight.
//! A spawning call without `tool_use_id` (older Claude Code) gets an id made from its
//! start's line (`#L<line>`), which the end holding the same tool and input takes.
//! A subagent that starts again after its stop (resumed under its `agent_id`) is a new run,
//! linked to the call in flight then; so is one that starts again without a captured stop
//! once the call of its run has ended, its earlier run ended by an inferred stop. When no
//! spawning call is in flight (its `PreToolUse` was not captured: a capture of the end hooks
//! only, or a `PreToolUse` hook that matches some tools), the spawning call's only record
//! comes after its subagent's: the subagent
//! gets a stand-in parent span, and the end of a spawning call whose start was not read (by
//! type, the first stopped subagent, else the oldest running one, never the subagent the
//! call ran in) takes the stand-in as its span id (attribute `x.claude_hook.spawner_stand_in` on
//! both), so the subagent's calls are under that call.
//!
//! A repeated record (a capture hook registered twice writes each record twice: a second
//! `PreToolUse` of a call in flight, an end of a call among the latest ended, a second
//! `SubagentStop`) becomes a `custom` event with `data.repeated: true`, so a call counts once.
//! A `PreToolUse` of an id whose call ended is a new call (as in tooltrace v2).
//!
//! Hook payloads carry no time: a `timestamp` field added by the capture script is used when
//! present, otherwise the event gets the Unix epoch and `x.time.clock: absent` (order comes
//! from the file).

use agentic_core::event::{EventError, EventSource, SpanContext};
use agentic_core::{CanonicalEvent, ErrorClass, EventStatus, EventType};
use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::sync::Arc;

use super::ends::{LatestEnds, LineIds, started_again};
use super::{
    IdMap, TraceAdapter, TraceFormat, hash_json, kind_of, member, no_time, opt_id, opt_str, other_format_note,
    record_time,
};

/// Reads Claude Code hook records.
#[derive(Debug, Clone, Default)]
pub struct ClaudeHookAdapter {
    /// Subagents seen, by session and agent id (at most [`MAX_AGENTS`]): running (their start
    /// was read or inferred, no stop yet) or stopped (a second stop is a repeated record, a
    /// start is the agent resumed).
    agents: IdMap<(Option<String>, String), Run>,
    /// Tool calls started and not ended, by session and `tool_use_id` (at most
    /// [`MAX_OPEN_TOOLS`] ids), with what each start record holds and its span id: several
    /// when a writer reused an id for a call while another was in flight.
    open_tools: IdMap<ToolKey, Vec<(Holds, String)>>,
    /// What the latest tool calls that ended held, by session and id, to tell a repeated
    /// end record from another call's: the end record, and the start record when one was
    /// read.
    ended_tools: LatestEnds<ToolKey, (Holds, Option<Holds>)>,
    /// Span ids made from a line number, for stray ends.
    line_ids: LineIds,
    /// Calls that may spawn a subagent, started and not yet ended or linked, oldest first
    /// (at most [`MAX_SPAWNERS`]).
    spawners: VecDeque<Spawner>,
    /// Spawning calls linked to a subagent and not yet ended, oldest first (at most
    /// [`MAX_SPAWNERS`]).
    linked: VecDeque<Spawner>,
    /// For a `tool_use_id` started again after its call ended: which call of that id this
    /// is (2, 3, ...). Its span id is `ID#N`, so the earlier call, and a subagent it
    /// spawned, keep their own place in the span tree (at most [`MAX_OPEN_TOOLS`] ids).
    generations: IdMap<ToolKey, u32>,
    /// Subagents that started with no spawning call in flight (its `PreToolUse` was not
    /// captured), oldest first (at most [`MAX_SPAWNERS`]): their parent span is a stand-in
    /// that the end of the call that spawned them takes as its span id.
    unclaimed: VecDeque<Unclaimed>,
    /// How many stand-ins were made (each is unique).
    stand_ins: u64,
    /// How many `SubagentStop` records were read (to order the stops of `unclaimed`).
    stops: u64,
    /// How many records were read (to order a spawning call's start and a subagent's link).
    records: u64,
    /// Subagents whose spawning call ran in the background (`run_in_background`) and ended
    /// while they ran, oldest first (at most [`MAX_SPAWNERS`]), until they stop: such a call
    /// ends at once, so a later `SubagentStart` of the subagent repeats its start rather than
    /// resuming it.
    background_runs: VecDeque<(Option<String>, String)>,
    /// Spawning calls started without a `tool_use_id` (older Claude Code writes none, a
    /// capture may write `""`) and not ended, oldest first (at most [`MAX_SPAWNERS`]): their
    /// session, what the start held, and the id made for them (`#L<line>`), which the end
    /// that holds the same takes, so that the call pairs, and the subagent it spawned links
    /// to it, as with an id.
    idless_spawners: VecDeque<(Option<String>, Holds, String)>,
    /// Background spawning calls (`run_in_background`) that ended before any subagent was
    /// linked to them, oldest first (at most [`MAX_SPAWNERS`]): such a call ends as soon as
    /// it launches its subagent, whose `SubagentStart` may be written after the call's end.
    launched: VecDeque<Spawner>,
}

/// A subagent whose spawning call has not been read yet (see
/// [`ClaudeHookAdapter::unclaimed`]).
#[derive(Debug, Clone)]
struct Unclaimed {
    session_id: Option<String>,
    agent_id: String,
    agent_type: Option<String>,
    /// When its `SubagentStop` was read (the adapter's count of stops), if it was.
    stopped: Option<u64>,
    /// The subagent's parent span id, for the spawning call to take.
    stand_in: String,
}

/// A tool call in flight that may spawn a subagent.
#[derive(Debug, Clone)]
struct Spawner {
    tool_use_id: String,
    session_id: Option<String>,
    /// The `subagent_type` it asked for.
    subagent_type: Option<String>,
    /// Once linked: the `agent_id` of the subagent it spawned.
    subagent: Option<String>,
    /// When its `PreToolUse` was read, and when a subagent was linked to it (the adapter's
    /// count of records): a call that started after a subagent started did not spawn it.
    started: u64,
    linked: u64,
    /// It runs its subagent in the background (`tool_input.run_in_background`): it ends at
    /// once, while the subagent runs on.
    background: bool,
    /// The subagent it resumes (`tool_input.resume`, an `agent_id`).
    resumes: Option<String>,
}

/// A tool call's session and `tool_use_id`.
type ToolKey = (Option<String>, String);

/// What [`ClaudeHookAdapter::note_tool_record`] tells of a tool record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// It repeats a record already read (the same hook, tool and input).
    Repeated,
    /// The end of a call whose start was read.
    EndOfStarted,
    /// A start, or the end of a call whose start was not read.
    New,
    /// The end of another tool than the call in flight under its id: a call of its own,
    /// which must not end that one (its span id is made unique with its line).
    Stray,
}

/// What a tool record holds, to tell a repeated record (the same tool and input) from
/// another call that reuses its id, and an end from the end of another tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Holds {
    /// A hash of the tool name and the agent that wrote the record.
    tool: u64,
    /// A hash of the tool name, the input and the agent that wrote the record.
    input: u64,
}

impl Holds {
    /// What a record of `tool_name` with `input`, written by `agent` (a subagent's id, none
    /// for the main agent), holds: records of two agents are never copies of each other.
    fn of(tool_name: &str, input: Option<&Value>, agent: Option<&str>) -> Holds {
        use std::hash::{Hash, Hasher};
        let mut tool = std::collections::hash_map::DefaultHasher::new();
        tool_name.hash(&mut tool);
        agent.hash(&mut tool);
        let mut both = tool.clone();
        match input {
            Some(input) => hash_json(input, &mut both),
            None => 0u8.hash(&mut both),
        }
        Holds { tool: tool.finish(), input: both.finish() }
    }
}

/// Where a subagent is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    Running,
    Stopped,
}

/// The attribute of a subagent start whose spawning call was not read yet, and of the end
/// of the call that then claims it: the stand-in span id that links the two (the subagent's
/// parent, the call's span).
const SPAWNER_STAND_IN: &str = "x.claude_hook.spawner_stand_in";

/// The most subagents the adapter remembers; later ones are not inferred.
const MAX_AGENTS: usize = 65_536;

/// The most tool calls in flight whose records are checked for duplicates.
const MAX_OPEN_TOOLS: usize = 65_536;

/// The most spawning calls kept in flight; beyond it the oldest is forgotten (its subagent
/// then has no parent span).
const MAX_SPAWNERS: usize = 4_096;

impl ClaudeHookAdapter {
    fn running(&self, key: &(Option<String>, String)) -> bool {
        self.agents.get(key) == Some(&Run::Running)
    }

    /// Notes where a subagent is; false when it is new and [`MAX_AGENTS`] are known already.
    fn note_agent(&mut self, key: &(Option<String>, String), run: Run) -> bool {
        if let Some(known) = self.agents.get_mut(key) {
            *known = run;
        } else if self.agents.len() < MAX_AGENTS {
            self.agents.insert(key.clone(), run);
        } else {
            return false;
        }
        true
    }

    /// Notes a tool record with an id: whether it repeats one already read (a capture hook
    /// registered twice writes every record twice: a second start of a call in flight, or an
    /// end of a call that ended, with the same tool and input), whether an end ends a call
    /// whose start was read, and the call's span id. An end ends the call in flight under its
    /// id with the same input, else the latest of the same tool (a PreToolUse hook may rewrite
    /// the input; an older start is more likely one a crashed run left open). A start under an
    /// id in flight or ended, with another tool or input, is a call of its own (`ID#N`), and
    /// so is an end under an ended id with another tool or input, or an end of another tool
    /// than every call in flight under its id (`ID#L<line>`): ids are
    /// unique in Claude Code, so this is a writer reusing them, and counting one call for two
    /// would hide one.
    fn note_tool_record(&mut self, hook: &str, key: ToolKey, holds: Holds, line: u64) -> (Seen, String) {
        let span_of = |adapter: &ClaudeHookAdapter, key: &ToolKey| match adapter.generations.get(key) {
            Some(generation) => format!("{}#{generation}", key.1),
            None => key.1.clone(),
        };
        let in_flight = self.open_tools.get(&key).map_or(&[][..], Vec::as_slice);
        if hook == "PreToolUse" {
            if let Some((_, span)) = in_flight.iter().find(|(open, _)| *open == holds) {
                return (Seen::Repeated, span.clone());
            }
            if !in_flight.is_empty() || self.ended_tools.contains(&key) {
                self.next_generation(&key);
            }
            let span = span_of(self, &key);
            if self.open_tools.len() < MAX_OPEN_TOOLS || self.open_tools.contains_key(&key) {
                self.open_tools.entry(key).or_default().push((holds, span.clone()));
            }
            return (Seen::New, span);
        }
        // A repeat of an end of this id read before, unless that end showed another input than
        // its start (a PreToolUse hook rewrote it) and a call that started as that one did is
        // in flight: that is the same call made again under a reused id, rewritten alike.
        let repeats = self.ended_tools.of(&key).iter().any(|(end, start)| {
            *end == holds
                && !started_again(start.as_ref(), end, |start| in_flight.iter().any(|(open, _)| open == start))
        });
        // The call in flight this record ends: the same input; else, unless it is a repeat,
        // the latest of the same tool (both of the same agent): an older one is more likely a
        // start a crashed run left open.
        let ends = in_flight
            .iter()
            .position(|(open, _)| *open == holds)
            .or_else(|| (!repeats).then(|| in_flight.iter().rposition(|(open, _)| open.tool == holds.tool)).flatten());
        let others_in_flight = !in_flight.is_empty();
        let mut started_as = None;
        let ended_call = ends.and_then(|at| {
            let calls = self.open_tools.get_mut(&key)?;
            let (start, span) = calls.remove(at);
            started_as = Some(start);
            if calls.is_empty() {
                self.open_tools.remove(&key);
            }
            Some(span)
        });
        let (seen, span) = match ended_call {
            Some(span) => (Seen::EndOfStarted, span),
            None if repeats => return (Seen::Repeated, key.1.clone()),
            None if others_in_flight => (Seen::Stray, self.line_ids.make(&key.1, line)),
            None => {
                // Another call's end under an id that ended: a call of its own.
                if self.ended_tools.contains(&key) {
                    self.next_generation(&key);
                }
                (Seen::New, span_of(self, &key))
            }
        };
        self.ended_tools.note(key, (holds, started_as));
        (seen, span)
    }

    /// The next call of a reused id gets the span id `ID#N`.
    fn next_generation(&mut self, key: &ToolKey) {
        if self.generations.len() < MAX_OPEN_TOOLS || self.generations.contains_key(key) {
            *self.generations.entry(key.clone()).or_insert(1) += 1;
        }
    }

    /// Notes a tool record: a started call that may spawn a subagent is kept, an ended one
    /// is dropped. For the end of a call that spawned nothing while an earlier call of the
    /// same session and subagent type, linked to a subagent, has not ended: that earlier
    /// call (the subagent was most likely this call's, and the earlier call was denied,
    /// which ends without a record), unless this call ran inside that subagent (a nested
    /// call that spawned nothing says nothing of the link, nor does a call that started after
    /// that subagent did). For the end of a linked call while its subagent still runs: another
    /// linked call of its type that has not ended while its subagent has stopped (the two
    /// subagents most likely started in another order than their calls).
    fn track_spawner(
        &mut self,
        hook: &str,
        object: &Map<String, Value>,
        tool_use_id: Option<&String>,
        session_id: Option<&String>,
        caller: Option<&String>,
    ) -> Option<String> {
        let id = tool_use_id?;
        if hook != "PreToolUse" {
            // The same id in another session is another call.
            let this = |spawner: &Spawner| &spawner.tool_use_id == id && spawner.session_id.as_ref() == session_id;
            let kinds_meet = |a: &Option<String>, b: &Option<String>| a.is_none() || b.is_none() || a == b;
            if let Some(at) = self.linked.iter().position(this) {
                let ended = self.linked.remove(at)?;
                // A call ends after the subagent it spawned stops. One that ends while the
                // subagent linked to it still runs, while another call of its type, linked to a
                // subagent that has stopped, has not ended, most likely spawned that subagent
                // instead (parallel subagents of one type that started in the other order than
                // their calls). A capture without `SubagentStop` records, a background task
                // (which ends at once) and an end written just before its own subagent's stop
                // show no stopped subagent of an unended call, so they are not taken for this.
                let agent_runs = |session: &Option<String>, agent: &Option<String>, run: Run| {
                    agent.as_ref().is_some_and(|agent| self.agents.get(&(session.clone(), agent.clone())) == Some(&run))
                };
                if !agent_runs(&ended.session_id, &ended.subagent, Run::Running) {
                    return None;
                }
                // A background call ends at once, while its subagent runs on.
                if ended.background {
                    if let Some(agent) = ended.subagent {
                        push_bounded(&mut self.background_runs, (ended.session_id, agent));
                    }
                    return None;
                }
                return self
                    .linked
                    .iter()
                    .find(|other| {
                        other.session_id == ended.session_id
                            && kinds_meet(&other.subagent_type, &ended.subagent_type)
                            && agent_runs(&other.session_id, &other.subagent, Run::Stopped)
                    })
                    .map(|other| other.tool_use_id.clone());
            }
            let at = self.spawners.iter().position(this)?;
            let ended = self.spawners.remove(at)?;
            // (A call that failed launched nothing.)
            if ended.background && hook == "PostToolUse" {
                push_bounded(&mut self.launched, ended.clone());
            }
            // Only a subagent that started while this call was in flight can have been its.
            return self
                .linked
                .iter()
                .find(|linked| {
                    linked.session_id == ended.session_id
                        && kinds_meet(&linked.subagent_type, &ended.subagent_type)
                        && (linked.subagent.is_none() || linked.subagent.as_ref() != caller)
                        && linked.linked > ended.started
                })
                .map(|linked| linked.tool_use_id.clone());
        }
        let subagent_type = spawning_call(object)?;
        let input = member(object, "tool_input");
        push_bounded(
            &mut self.spawners,
            Spawner {
                tool_use_id: id.clone(),
                session_id: session_id.cloned(),
                subagent_type: subagent_type.map(str::to_owned),
                subagent: None,
                started: self.records,
                linked: 0,
                background: input.and_then(|input| input.get("run_in_background")) == Some(&Value::Bool(true)),
                resumes: input.and_then(|input| input.get("resume")).and_then(Value::as_str).map(str::to_owned),
            },
        );
        None
    }

    /// The parent span of a subagent starting now without a spawning call in flight (the
    /// call's `PreToolUse` was not captured): a stand-in that the end record of the call that
    /// spawned it (read later: a call ends after its subagent) takes as its span id, so
    /// calls inside the subagent are under that call.
    fn stand_in(&mut self, agent_id: &str, agent_type: Option<&str>, session_id: Option<&String>) -> String {
        self.stand_ins += 1;
        let stand_in = format!("{agent_id}#spawner{}", self.stand_ins);
        push_bounded(
            &mut self.unclaimed,
            Unclaimed {
                session_id: session_id.cloned(),
                agent_id: agent_id.to_owned(),
                agent_type: agent_type.map(str::to_owned),
                stopped: None,
                stand_in: stand_in.clone(),
            },
        );
        stand_in
    }

    /// Marks the latest subagent of `key` still waiting for its call as stopped now (at the
    /// latest `SubagentStop` read).
    fn mark_stopped(&mut self, key: &(Option<String>, String)) {
        let stops = self.stops;
        if let Some(waiting) =
            self.unclaimed.iter_mut().rev().find(|agent| agent.session_id == key.0 && agent.agent_id == key.1)
        {
            waiting.stopped.get_or_insert(stops);
        }
    }

    /// For the end of a spawning call whose start was not read: the stand-in parent span
    /// of the subagent it spawned (taken out), among the session's subagents waiting for
    /// their call, other than the subagent the call itself ran in: one whose type is the
    /// call's `subagent_type` (a call without one takes a `general-purpose` subagent, else
    /// one of any type), a stopped one before a running one (a call ends after its
    /// subagent; the first stopped first), else the oldest running one. One subagent per
    /// call.
    fn claim_subagent(
        &mut self,
        object: &Map<String, Value>,
        session_id: Option<&String>,
        caller: Option<&String>,
    ) -> Option<String> {
        if self.unclaimed.is_empty() {
            return None;
        }
        let subagent_type = spawning_call(object)?;
        let candidate = |agent: &Unclaimed, kind: Option<&str>| {
            agent.session_id.as_ref() == session_id
                && Some(&agent.agent_id) != caller
                && kind.is_none_or(|kind| agent.agent_type.as_deref() == Some(kind))
        };
        let find = |kind: Option<&str>| {
            let candidates = self.unclaimed.iter().enumerate().filter(|(_, agent)| candidate(agent, kind));
            let first_stopped =
                candidates.clone().filter_map(|(at, agent)| Some((agent.stopped?, at))).min().map(|(_, at)| at);
            first_stopped.or_else(|| candidates.map(|(at, _)| at).next())
        };
        let at = match subagent_type {
            Some(kind) => find(Some(kind)),
            None => find(Some("general-purpose")).or_else(|| find(None)),
        }?;
        self.unclaimed.remove(at).map(|agent| agent.stand_in)
    }

    /// Where in the calls in flight is the one that would spawn a subagent of `agent_type`
    /// starting now in `session_id` (see [`ClaudeHookAdapter::take_spawner`]).
    fn find_spawner(&self, agent_type: Option<&str>, session_id: Option<&String>) -> Option<usize> {
        spawner_for(&self.spawners, agent_type, session_id)
    }

    /// Where in the calls in flight of `session_id` is one that names `agent_id` as the
    /// subagent it resumes (`tool_input.resume`).
    fn resuming_spawner(&self, session_id: Option<&String>, agent_id: &str) -> Option<usize> {
        self.spawners.iter().position(|spawner| {
            spawner.session_id.as_ref() == session_id && spawner.resumes.as_deref() == Some(agent_id)
        })
    }

    /// Whether a `SubagentStart` of a subagent that runs (no `SubagentStop` was read for its
    /// run) starts a new run: the call its run was linked to has ended (a call ends after its
    /// subagent stops), no end of a spawning call is awaited for it, and a call that can
    /// spawn it is in flight. Claude Code resumes a subagent under its `agent_id`; the stop of
    /// the earlier run was not captured. Otherwise the record repeats a start (a real one
    /// after an inferred one, or a capture hook registered twice).
    fn resumes_without_stop(&self, key: &(Option<String>, String), agent_type: Option<&str>) -> bool {
        let (session_id, agent_id) = key;
        // A call in flight that says it resumes this subagent settles it.
        if self.resuming_spawner(session_id.as_ref(), agent_id).is_some() {
            return true;
        }
        // A subagent left running by a background call has not stopped: this repeats its start.
        if self.background_runs.contains(key) {
            return false;
        }
        let linked = self
            .linked
            .iter()
            .any(|spawner| &spawner.session_id == session_id && spawner.subagent.as_ref() == Some(agent_id));
        let awaited = self.unclaimed.iter().any(|agent| &agent.session_id == session_id && &agent.agent_id == agent_id);
        !linked && !awaited && self.find_spawner(agent_type, session_id.as_ref()).is_some()
    }

    /// The call that spawned a subagent of `agent_type` starting now in `session_id` (taken
    /// out of the calls in flight): the oldest that asked for that type, else the oldest that
    /// asked for none.
    fn take_spawner(
        &mut self,
        agent_type: Option<&str>,
        session_id: Option<&String>,
        agent_id: Option<&str>,
    ) -> Option<String> {
        // A call that names the subagent it resumes (`tool_input.resume`) spawned it.
        let resumed_by = agent_id.and_then(|agent| self.resuming_spawner(session_id, agent));
        let Some(at) = resumed_by.or_else(|| self.find_spawner(agent_type, session_id)) else {
            // A background call that ended before its subagent started: its subagent runs
            // after it, as a background subagent does.
            let at = spawner_for(&self.launched, agent_type, session_id)?;
            let spawner = self.launched.remove(at)?;
            if let Some(agent) = agent_id {
                push_bounded(&mut self.background_runs, (session_id.cloned(), agent.to_owned()));
            }
            return Some(spawner.tool_use_id);
        };
        let mut spawner = self.spawners.remove(at)?;
        spawner.subagent = agent_id.map(str::to_owned);
        spawner.linked = self.records;
        let id = spawner.tool_use_id.clone();
        push_bounded(&mut self.linked, spawner);
        Some(id)
    }
}

impl TraceAdapter for ClaudeHookAdapter {
    fn format(&self) -> TraceFormat {
        TraceFormat::ClaudeHook
    }

    fn ingest(&mut self, record: Value, line: u64, out: &mut Vec<CanonicalEvent>) -> Result<(), String> {
        self.records += 1;
        // One copy of the record, shared by its event and an inferred subagent start.
        let record = Arc::new(record);
        let Value::Object(object) = &*record else {
            return Err(format!("expected a JSON object, found {}", kind_of(&record)));
        };
        let hook = match member(object, "hook_event_name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            Some(other) => return Err(format!("`hook_event_name` must be a non-empty string, found {other}")),
            None => {
                let why = other_format_note(&record, TraceFormat::ClaudeHook).unwrap_or_default();
                return Err(format!("missing `hook_event_name`{why}"));
            }
        };
        // A hook this adapter reads, spelled another way (`pretooluse`, `pre_tool_use`,
        // `PreToolUse `: a capture script that changed it): read as an unknown hook, its call
        // would be lost without a word.
        // (No two of the names have the same letters, so one spelled exactly is not looked at.)
        const KNOWN: [&str; 5] = ["PreToolUse", "PostToolUse", "PostToolUseFailure", "SubagentStart", "SubagentStop"];
        let letters = |name: &str| name.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_lowercase();
        if !KNOWN.contains(&hook.as_str())
            && let Some(known) = KNOWN.into_iter().find(|known| letters(known) == letters(&hook))
        {
            return Err(format!(
                "`hook_event_name` {hook:?} is not a Claude Code hook name; did you mean \"{known}\"? (names are \
                 exact and case-sensitive)"
            ));
        }
        let record_time = record_time(object, "timestamp");
        let timestamp = record_time.time;
        let session_id = opt_id(object, "session_id")?;
        let agent_id = opt_id(object, "agent_id")?;
        let agent_type = opt_str(object, "agent_type")?.filter(|text| !text.is_empty());
        let tool_use_id = opt_id(object, "tool_use_id")?;
        // A subagent is known by its session and id (one id may recur in another session).
        let agent_key = agent_id.clone().map(|id| (session_id.clone(), id));
        let is_tool_event = matches!(hook.as_str(), "PreToolUse" | "PostToolUse" | "PostToolUseFailure");
        let tool_name = if is_tool_event {
            match member(object, "tool_name") {
                Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
                Some(other) => return Err(format!("`tool_name` must be a non-empty string, found {other}")),
                None => return Err(format!("{hook} record without `tool_name`")),
            }
        } else {
            None
        };
        // A tooltrace record in a hook file (a capture that changed format part way through):
        // read as a hook record, its arguments (`args`) would be lost without a word, and a
        // rule on arguments could not see them.
        if is_tool_event && member(object, "args").is_some() {
            return Err("`args` is a field of tooltrace records, not of Claude Code hook records (whose arguments \
                        are `tool_input`): keep each format in a file of its own and read the tooltrace records with \
                        `--trace-format tooltrace`"
                .to_owned());
        }
        // Whether the subagent was seen before this record (a `SubagentStop` first is one
        // whose start was not captured).
        let agent_seen = agent_key.as_ref().is_some_and(|key| self.agents.contains_key(key));
        // What a tool record with an id, or of a spawning call, holds.
        let holds = match &tool_name {
            Some(name) if is_tool_event && (tool_use_id.is_some() || spawning_call(object).is_some()) => {
                Some(Holds::of(name, member(object, "tool_input"), agent_id.as_deref()))
            }
            _ => None,
        };
        // A spawning call without an id gets one made from its start's line.
        let made_id = match (&tool_use_id, holds) {
            (None, Some(holds)) if hook == "PreToolUse" => {
                let id = format!("#L{line}");
                push_bounded(&mut self.idless_spawners, (session_id.clone(), holds, id.clone()));
                Some(id)
            }
            (None, Some(holds)) => {
                // The same input; an end without input pairs with any of its tool.
                let bare = matches!(member(object, "tool_input"), None | Some(Value::Null));
                let at = self.idless_spawners.iter().position(|(session, started, _)| {
                    *session == session_id && (*started == holds || bare && started.tool == holds.tool)
                });
                at.and_then(|at| self.idless_spawners.remove(at)).map(|(_, _, id)| id)
            }
            _ => None,
        };
        let (seen, tool_span) = match (tool_use_id.as_ref().or(made_id.as_ref()), holds) {
            (Some(id), Some(holds)) => {
                let (seen, span) = self.note_tool_record(&hook, (session_id.clone(), id.clone()), holds, line);
                (seen, Some(span))
            }
            _ => (Seen::New, None),
        };
        let started = seen == Seen::EndOfStarted;
        let repeated = if is_tool_event {
            seen == Seen::Repeated
        } else {
            hook == "SubagentStop" && agent_key.as_ref().is_some_and(|key| self.agents.get(key) == Some(&Run::Stopped))
        };
        // The span of this call: its id, or `ID#N` for the N-th call of a reused id; the
        // stand-in parent of the subagent it spawned when its start was not captured.
        let claimed = if is_tool_event && !repeated && hook != "PreToolUse" && !started {
            self.claim_subagent(object, session_id.as_ref(), agent_id.as_ref())
        } else {
            None
        };
        let call_span = claimed.clone().or(tool_span);
        let mut data = Map::with_capacity(2);
        let mut status = None;
        let mut error = None;
        // A subagent start whose parent is a stand-in (see `stand_in`).
        let mut awaits_spawner = false;
        let (event_type, span_id, parent_span_id, step_name) = match hook.as_str() {
            // A repeated record is kept as a `custom` event: counting it would count one call twice.
            _ if repeated => {
                data.insert("kind".to_owned(), Value::String(hook.clone()));
                data.insert("repeated".to_owned(), Value::Bool(true));
                (EventType::Custom, None, agent_id.clone(), None)
            }
            "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => {
                if let Some(input) = member(object, "tool_input") {
                    data.insert("input".to_owned(), input.clone());
                }
                let event_type = if hook == "PreToolUse" {
                    EventType::ToolCallStart
                } else {
                    if hook == "PostToolUse" {
                        status = Some(EventStatus::Ok);
                        if let Some(output) = member(object, "tool_response") {
                            data.insert("output".to_owned(), output.clone());
                        }
                    } else {
                        let interrupted = match member(object, "is_interrupt") {
                            None | Some(Value::Null) => false,
                            Some(Value::Bool(flag)) => *flag,
                            Some(other) => {
                                return Err(format!("`is_interrupt` must be true or false, found {}", kind_of(other)));
                            }
                        };
                        status = Some(if interrupted { EventStatus::Cancelled } else { EventStatus::Error });
                        let message = opt_str(object, "error")?.unwrap_or_else(|| "tool call failed".to_owned());
                        error = Some(EventError {
                            class: if interrupted { ErrorClass::Cancelled } else { ErrorClass::User },
                            message,
                            error_type: Some("tool_error".to_owned()),
                            retryable: false,
                        });
                    }
                    EventType::ToolCallEnd
                };
                (event_type, call_span.clone(), agent_id.clone(), tool_name.clone())
            }
            // After an inferred start, the real one would count the agent twice.
            "SubagentStart"
                if agent_key
                    .as_ref()
                    .is_some_and(|key| self.running(key) && !self.resumes_without_stop(key, agent_type.as_deref())) =>
            {
                data.insert("kind".to_owned(), Value::String(hook.clone()));
                (EventType::Custom, agent_id.clone(), None, agent_type.clone())
            }
            "SubagentStart" => {
                // A stopped agent that starts again was resumed: a new run. One that runs (see
                // `resumes_without_stop`) stops first, as its uncaptured stop would have.
                if let Some(key) = &agent_key {
                    if self.running(key) {
                        let from = InferredFrom { session_id: session_id.clone(), timestamp, line, record: &record };
                        out.push(inferred_stop(&key.1, agent_type.as_deref(), from));
                        self.background_runs.retain(|run| run != key);
                    }
                    self.note_agent(key, Run::Running);
                }
                let mut spawner = self.take_spawner(agent_type.as_deref(), session_id.as_ref(), agent_id.as_deref());
                if spawner.is_none()
                    && let Some(id) = agent_id.as_deref()
                {
                    spawner = Some(self.stand_in(id, agent_type.as_deref(), session_id.as_ref()));
                    awaits_spawner = true;
                }
                (EventType::AgentInvokeStart, agent_id.clone(), spawner, agent_type.clone())
            }
            // A stop without `agent_id` (as Claude Code wrote it before subagent ids) names no
            // subagent: it ends none, and it is no call.
            "SubagentStop" if agent_key.is_some() => {
                if let Some(key) = &agent_key {
                    self.background_runs.retain(|run| run != key);
                    self.note_agent(key, Run::Stopped);
                    self.stops += 1;
                    self.mark_stopped(key);
                }
                status = Some(EventStatus::Ok);
                (EventType::AgentInvokeEnd, agent_id.clone(), None, agent_type.clone())
            }
            _ => {
                data.insert("kind".to_owned(), Value::String(hook.clone()));
                (EventType::Custom, None, agent_id.clone(), None)
            }
        };
        // A subagent never seen starts here; a stopped one runs again only when a call of it
        // starts (an end read after the subagent's stop belongs to the run that stopped).
        let runs_again = |run: Option<&Run>| match run {
            None => true,
            Some(Run::Stopped) => hook == "PreToolUse",
            Some(Run::Running) => false,
        };
        // A `SubagentStop` of a subagent never seen (its start and its calls' records were
        // not captured, or its calls' ends come after the stop) is preceded by its start too.
        let stop_first = hook == "SubagentStop" && !repeated && !agent_seen;
        if let (Some(key), Some(kind)) = (agent_key, &agent_type)
            && ((is_tool_event
                && !repeated
                && runs_again(self.agents.get(&key))
                && self.note_agent(&key, Run::Running))
                || stop_first)
        {
            let id = key.1.clone();
            let mut spawner = self.take_spawner(Some(kind), session_id.as_ref(), Some(&id)).map(|id| (id, false));
            if spawner.is_none() {
                spawner = Some((self.stand_in(&id, Some(kind), session_id.as_ref()), true));
                if stop_first {
                    self.mark_stopped(&key);
                }
            }
            let from = InferredFrom { session_id: session_id.clone(), timestamp, line, record: &record };
            out.push(inferred_start(&id, kind, spawner, from));
        }
        let misattributed = if is_tool_event && !repeated {
            self.track_spawner(&hook, object, call_span.as_ref(), session_id.as_ref(), agent_id.as_ref())
        } else {
            None
        };
        let mut event = CanonicalEvent::new(event_type, timestamp.unwrap_or_else(no_time));
        // Room for the attributes written below (a map that grows rehashes every key).
        event.attributes = Map::with_capacity(12);
        record_time.mark(&mut event);
        event.step_name = step_name;
        event.status = status;
        event.error = error;
        event.data = if data.is_empty() { Value::Null } else { Value::Object(data) };
        if event_type == EventType::AgentInvokeStart
            && let Some(spawner) = &parent_span_id
        {
            let key = if awaits_spawner { SPAWNER_STAND_IN } else { "x.claude_hook.spawned_by" };
            event.attributes.insert(key.to_owned(), json!(spawner));
        }
        if let Some(stand_in) = &claimed {
            event.attributes.insert(SPAWNER_STAND_IN.to_owned(), json!(stand_in));
        }
        event.span = Some(SpanContext { trace_id: session_id, span_id, parent_span_id });
        let attributes = &mut event.attributes;
        if let Some(earlier) = misattributed {
            attributes.insert(agentic_core::event::SPAWN_MISATTRIBUTED.to_owned(), Value::String(earlier));
        }
        if let Some(name) = &tool_name {
            attributes.insert("gen_ai.operation.name".to_owned(), json!("execute_tool"));
            attributes.insert("gen_ai.tool.name".to_owned(), Value::String(name.clone()));
        }
        if let Some(id) = &tool_use_id {
            attributes.insert("gen_ai.tool.call.id".to_owned(), Value::String(id.clone()));
        }
        if let Some(id) = &agent_id {
            attributes.insert("gen_ai.agent.id".to_owned(), Value::String(id.clone()));
        }
        if let Some(kind) = &agent_type {
            attributes.insert("gen_ai.agent.name".to_owned(), Value::String(kind.clone()));
        }
        for attribute in [
            "x.claude_hook.cwd",
            "x.claude_hook.permission_mode",
            "x.claude_hook.transcript_path",
            "x.claude_hook.model",
            "x.claude_hook.turn_id",
        ] {
            // The record's key is the attribute's name without the prefix.
            let key = &attribute["x.claude_hook.".len()..];
            if let Some(Value::String(value)) = member(object, key) {
                attributes.insert(attribute.to_owned(), Value::String(value.clone()));
            }
        }
        attributes.insert("x.time.clock".to_owned(), json!(if timestamp.is_some() { "observed" } else { "absent" }));
        event.source = Some(EventSource {
            format: TraceFormat::ClaudeHook.name().to_owned(),
            native_id: tool_use_id.or(agent_id),
            native_type: Some(hook),
            line: Some(line),
            raw: Some(record),
        });
        out.push(event);
        Ok(())
    }
}

/// For a tool record of a call that may spawn a subagent (`Task`, `Agent`, or any tool whose
/// `tool_input` has a `subagent_type`): the `subagent_type` it asks for, if any.
fn spawning_call(object: &Map<String, Value>) -> Option<Option<&str>> {
    let subagent_type =
        member(object, "tool_input").and_then(|input| input.get("subagent_type")).and_then(Value::as_str);
    let named = matches!(member(object, "tool_name").and_then(Value::as_str), Some("Task" | "Agent"));
    (named || subagent_type.is_some()).then_some(subagent_type)
}

/// Appends to a queue of at most [`MAX_SPAWNERS`] entries, the oldest going first.
/// Where in `spawners` is the oldest call of `session_id` that would spawn a subagent of
/// `agent_type`: one that names the type, else one that names none.
fn spawner_for(spawners: &VecDeque<Spawner>, agent_type: Option<&str>, session_id: Option<&String>) -> Option<usize> {
    let same_session = |spawner: &Spawner| spawner.session_id.as_ref() == session_id;
    agent_type
        .and_then(|kind| {
            spawners.iter().position(|spawner| same_session(spawner) && spawner.subagent_type.as_deref() == Some(kind))
        })
        .or_else(|| spawners.iter().position(|spawner| same_session(spawner) && spawner.subagent_type.is_none()))
}

fn push_bounded<T>(queue: &mut VecDeque<T>, item: T) {
    if queue.len() == MAX_SPAWNERS {
        queue.pop_front();
    }
    queue.push_back(item);
}

/// The record an inferred subagent event is read from: its session, time and line.
struct InferredFrom<'r> {
    session_id: Option<String>,
    timestamp: Option<chrono::DateTime<chrono::Utc>>,
    line: u64,
    record: &'r Arc<Value>,
}

/// A subagent's start or end that no `SubagentStart` or `SubagentStop` record gave: its span
/// is the agent id (under `parent`), it is marked `x.claude_hook.inferred`, and `lead` (an
/// attribute naming the spawning call) comes first among its attributes.
fn inferred_agent_event(
    event_type: EventType,
    agent_id: &str,
    agent_type: Option<&str>,
    parent: Option<(String, &str)>,
    from: InferredFrom<'_>,
) -> CanonicalEvent {
    let InferredFrom { session_id, timestamp, line, record } = from;
    let mut event = CanonicalEvent::new(event_type, timestamp.unwrap_or_else(no_time));
    event.step_name = agent_type.map(str::to_owned);
    let attributes = &mut event.attributes;
    if let Some((spawner, key)) = &parent {
        attributes.insert((*key).to_owned(), json!(spawner));
    }
    attributes.insert("gen_ai.operation.name".to_owned(), json!("invoke_agent"));
    attributes.insert("gen_ai.agent.id".to_owned(), json!(agent_id));
    if let Some(agent_type) = agent_type {
        attributes.insert("gen_ai.agent.name".to_owned(), json!(agent_type));
    }
    attributes.insert("x.claude_hook.inferred".to_owned(), json!(true));
    attributes.insert("x.time.clock".to_owned(), json!(if timestamp.is_some() { "observed" } else { "absent" }));
    event.span = Some(SpanContext {
        trace_id: session_id,
        span_id: Some(agent_id.to_owned()),
        parent_span_id: parent.map(|(spawner, _)| spawner),
    });
    let hook = if event_type == EventType::AgentInvokeStart { "SubagentStart" } else { "SubagentStop" };
    event.source = Some(EventSource {
        format: TraceFormat::ClaudeHook.name().to_owned(),
        native_id: Some(agent_id.to_owned()),
        native_type: Some(format!("{hook} (inferred)")),
        line: Some(line),
        raw: Some(Arc::clone(record)),
    });
    event
}

/// The end of a subagent's run whose `SubagentStop` was not captured, read from the record
/// that starts its next run (see [`ClaudeHookAdapter::resumes_without_stop`]).
fn inferred_stop(agent_id: &str, agent_type: Option<&str>, from: InferredFrom<'_>) -> CanonicalEvent {
    let mut event = inferred_agent_event(EventType::AgentInvokeEnd, agent_id, agent_type, None, from);
    event.status = Some(EventStatus::Ok);
    event
}

/// The start of a subagent known only from a tool record inside it, under the call that
/// spawned it (`true`: a stand-in for that call, see [`SPAWNER_STAND_IN`]).
fn inferred_start(
    agent_id: &str,
    agent_type: &str,
    spawner: Option<(String, bool)>,
    from: InferredFrom<'_>,
) -> CanonicalEvent {
    let parent = spawner
        .map(|(spawner, stand_in)| (spawner, if stand_in { SPAWNER_STAND_IN } else { "x.claude_hook.spawned_by" }));
    inferred_agent_event(EventType::AgentInvokeStart, agent_id, Some(agent_type), parent, from)
}
