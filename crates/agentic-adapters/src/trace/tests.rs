//! Tests of trace ingest: one golden trace per format, malformed input, and fuzzing.

use agentic_core::{EventStatus, EventType};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::parallel::{Batch, LineWork};
use super::*;

fn read(text: &str, format: Option<TraceFormat>) -> Vec<Result<CanonicalEvent, TraceError>> {
    TraceReader::new(text.as_bytes(), format).collect()
}

/// Each item's line and step name, or the line of its error.
fn lines_and_names(items: &[Result<CanonicalEvent, TraceError>]) -> Vec<Result<(u64, String), u64>> {
    items
        .iter()
        .map(|item| match item {
            Ok(e) => Ok((e.source.as_ref().unwrap().line.unwrap(), e.step_name.clone().unwrap())),
            Err(e) => Err(e.line),
        })
        .collect()
}

fn events(text: &str) -> Vec<CanonicalEvent> {
    read(text, None).into_iter().map(|r| r.expect("valid trace")).collect()
}

#[test]
fn tooltrace_seed_lines_become_post_only_tool_calls() {
    let text = r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Task","span_type":"parent","trace_id":"abc123"}
{"timestamp":"2026-02-19T10:00:05Z","tool_name":"Read","span_type":"child","parent_trace_id":"abc123","args":{"file_path":"skills/skill.md"}}
"#;
    let got = events(text);
    assert_eq!(got.len(), 2);
    let (task, read) = (&got[0], &got[1]);
    assert_eq!((task.seq, read.seq), (1, 2));
    assert_eq!(task.event_type, EventType::ToolCallEnd);
    assert_eq!(task.step_name.as_deref(), Some("Task"));
    assert_eq!(task.span.as_ref().unwrap().span_id.as_deref(), Some("abc123"));
    assert_eq!(task.attributes["x.tooltrace.span_type"], json!("parent"));
    assert_eq!(task.attributes["x.time.clock"], json!("post_only"));
    assert_eq!(read.span.as_ref().unwrap().parent_span_id.as_deref(), Some("abc123"));
    assert_eq!(read.data["input"]["file_path"], json!("skills/skill.md"));
    assert_eq!(read.timestamp.to_rfc3339(), "2026-02-19T10:00:05+00:00");
    let source = read.source.as_ref().unwrap();
    assert_eq!((source.format.as_str(), source.line), ("tooltrace", Some(2)));
    assert_eq!(source.raw.as_ref().unwrap()["args"], json!({"file_path": "skills/skill.md"}));
}

#[test]
fn tooltrace_v2_phases_pair_and_fail() {
    let text = r#"{"schema":"tooltrace/2","phase":"pre","timestamp":"2026-02-19T10:00:00Z","tool_name":"Bash","tool_use_id":"toolu_1","session_id":"s1","args":{"command":"false"}}
{"schema":"tooltrace/2","phase":"post_failure","timestamp":"2026-02-19T10:00:01Z","tool_name":"Bash","tool_use_id":"toolu_1","session_id":"s1","error":"exit 1"}
"#;
    let got = events(text);
    assert_eq!(got[0].event_type, EventType::ToolCallStart);
    assert_eq!(got[1].event_type, EventType::ToolCallEnd);
    assert_eq!(got[1].status, Some(EventStatus::Error));
    assert_eq!(got[1].error.as_ref().unwrap().message, "exit 1");
    assert_eq!(got[1].span.as_ref().unwrap().span_id.as_deref(), Some("toolu_1"));
    assert_eq!(got[1].span.as_ref().unwrap().trace_id.as_deref(), Some("s1"));
}

#[test]
fn claude_hook_records_map_to_calls_and_agents() {
    let text = r#"{"session_id":"abc123","transcript_path":"/h/t.jsonl","cwd":"/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/p/a.rs","content":"x"},"tool_use_id":"toolu_01"}
{"session_id":"abc123","cwd":"/p","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"file_path":"/p/a.rs","content":"x"},"tool_response":{"filePath":"/p/a.rs","success":true},"tool_use_id":"toolu_01"}
{"session_id":"abc123","hook_event_name":"SubagentStart","agent_id":"ag_1","agent_type":"code-reviewer"}
{"session_id":"abc123","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":"toolu_02","agent_id":"ag_1","agent_type":"code-reviewer"}
{"session_id":"abc123","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":"toolu_02","error":"permission denied","agent_id":"ag_1"}
{"session_id":"abc123","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{},"tool_use_id":"toolu_03","error":"interrupted","is_interrupt":true}
{"session_id":"abc123","hook_event_name":"SubagentStop","agent_id":"ag_1","agent_type":"code-reviewer"}
{"session_id":"abc123","hook_event_name":"Stop"}
"#;
    let got = events(text);
    let types: Vec<EventType> = got.iter().map(|e| e.event_type).collect();
    use EventType::*;
    assert_eq!(
        types,
        vec![
            ToolCallStart,
            ToolCallEnd,
            AgentInvokeStart,
            ToolCallStart,
            ToolCallEnd,
            ToolCallEnd,
            AgentInvokeEnd,
            Custom
        ]
    );
    assert_eq!(got[1].status, Some(EventStatus::Ok));
    assert_eq!(got[1].data["output"]["success"], json!(true));
    assert_eq!(got[2].step_name.as_deref(), Some("code-reviewer"));
    assert_eq!(got[2].span.as_ref().unwrap().span_id.as_deref(), Some("ag_1"));
    assert_eq!(got[3].span.as_ref().unwrap().parent_span_id.as_deref(), Some("ag_1"));
    assert_eq!(got[4].status, Some(EventStatus::Error));
    assert_eq!(got[5].status, Some(EventStatus::Cancelled));
    assert_eq!(got[7].data["kind"], json!("Stop"));
    assert_eq!(got[0].attributes["x.time.clock"], json!("absent"));
    assert_eq!(got[0].source.as_ref().unwrap().native_type.as_deref(), Some("PreToolUse"));
}

/// A capture of the tool hooks only: tool records inside a subagent carry `agent_id` and
/// `agent_type`, and the subagent's start is inferred once, before its first record; a
/// `SubagentStart` after that is kept as a custom event (no second start).
#[test]
fn claude_hook_subagents_without_their_start_are_inferred() {
    let text = r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"t1"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{},"tool_use_id":"t2","agent_id":"ag_1","agent_type":"code-reviewer"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":"t3","agent_id":"ag_1","agent_type":"code-reviewer"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_1","agent_type":"code-reviewer"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":"t4","agent_id":"ag_2"}
"#;
    let got = events(text);
    let types: Vec<EventType> = got.iter().map(|e| e.event_type).collect();
    use EventType::*;
    assert_eq!(types, vec![ToolCallEnd, AgentInvokeStart, ToolCallEnd, ToolCallEnd, Custom, ToolCallEnd]);
    let inferred = &got[1];
    assert_eq!(inferred.step_name.as_deref(), Some("code-reviewer"));
    assert_eq!(inferred.span.as_ref().unwrap().span_id.as_deref(), Some("ag_1"));
    assert_eq!(inferred.attributes["x.claude_hook.inferred"], json!(true));
    assert_eq!(inferred.source.as_ref().unwrap().line, Some(2));
    assert_eq!(got[2].span.as_ref().unwrap().parent_span_id.as_deref(), Some("ag_1"));
    assert_eq!(got[4].data["kind"], json!("SubagentStart"));
    // Without `agent_type` there is no name to scope by: nothing is inferred.
    assert_eq!(got[5].span.as_ref().unwrap().parent_span_id.as_deref(), Some("ag_2"));
}

/// A capture without `PreToolUse` records: a spawning call's only record (its end) comes
/// after its subagent's. The subagent's start gets a stand-in parent span, and the end of the
/// call that spawned it (by `subagent_type`, oldest first, one subagent per call, same
/// session) takes the stand-in as its span id, so the subagent is under that call.
#[test]
fn claude_hook_post_only_spawning_calls_claim_their_subagents_later() {
    let text = r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{},"tool_use_id":"t1","agent_id":"ag_1","agent_type":"reviewer"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_2","agent_type":"explorer"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"t2","agent_id":"ag_2","agent_type":"explorer"}
{"session_id":"s2","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"explorer"},"tool_use_id":"task_0"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"explorer"},"tool_use_id":"task_1"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer"},"tool_use_id":"task_2"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer"},"tool_use_id":"task_3"}
"#;
    let got = events(text);
    let span = |idx: usize| got[idx].span.clone().unwrap();
    // The inferred reviewer and the explorer: stand-in parents, named in an attribute.
    let (reviewer, explorer) = (span(0), span(2));
    assert_eq!(got[0].event_type, EventType::AgentInvokeStart);
    assert_eq!(got[2].event_type, EventType::AgentInvokeStart);
    let (reviewer_parent, explorer_parent) = (reviewer.parent_span_id.unwrap(), explorer.parent_span_id.unwrap());
    assert_ne!(reviewer_parent, explorer_parent);
    assert_eq!(got[0].attributes["x.claude_hook.spawner_stand_in"], json!(reviewer_parent));
    assert!(!got[0].attributes.contains_key("x.claude_hook.spawned_by"));
    // The Task of another session claims nothing; each Task of `s` claims the subagent of
    // its type; a second reviewer Task finds none left and keeps its own id.
    let ends: Vec<_> = got.iter().filter(|e| e.step_name.as_deref() == Some("Task")).collect();
    let ids: Vec<_> = ends.iter().map(|e| e.span.clone().unwrap().span_id.unwrap()).collect();
    assert_eq!(ids, vec!["task_0".to_owned(), explorer_parent.clone(), reviewer_parent.clone(), "task_3".to_owned()]);
    assert_eq!(ends[1].attributes["x.claude_hook.spawner_stand_in"], json!(explorer_parent));
    assert_eq!(ends[1].attributes["gen_ai.tool.call.id"], json!("task_1"));
    // A `PreToolUse` of another call (a hook that matches some tools) changes nothing.
    let with_pre = format!(
        "{}\n{text}",
        r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"t0"}"#
    );
    let got = events(&with_pre);
    let ids: Vec<_> = got
        .iter()
        .filter(|e| e.step_name.as_deref() == Some("Task"))
        .map(|e| e.span.clone().unwrap().span_id.unwrap())
        .collect();
    assert_eq!(ids, vec!["task_0".to_owned(), explorer_parent, reviewer_parent, "task_3".to_owned()]);
}

/// A spawning call made inside a subagent never claims that subagent's stand-in (the link
/// would be a loop), and a stopped subagent is claimed before a running one (a call ends
/// after its subagent).
#[test]
fn claude_hook_post_only_calls_claim_a_stopped_subagent_other_than_their_own() {
    let text = r#"{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"general-purpose"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"a2","agent_type":"general-purpose"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_use_id":"b1","agent_id":"a2","agent_type":"general-purpose"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a2","agent_type":"general-purpose"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"prompt":"p2"},"tool_use_id":"t2","agent_id":"a1","agent_type":"general-purpose"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"general-purpose"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"prompt":"p1"},"tool_use_id":"t1"}
"#;
    let got = events(text);
    let parent_of = |agent: &str| agent_parent(&got, agent);
    let span_of = |call: &str| call_span(&got, call);
    assert_eq!(span_of("t2"), parent_of("a2"));
    assert_eq!(span_of("t1"), parent_of("a1"));
    // The inner Task is under the outer subagent, so no loop.
    let t2 = got.iter().find(|e| e.attributes.get("gen_ai.tool.call.id") == Some(&json!("t2"))).unwrap();
    assert_eq!(t2.span.as_ref().unwrap().parent_span_id.as_deref(), Some("a1"));
}

/// The end of a call that started while its subagent ran, read after the subagent's stop,
/// is no new run of the subagent; a nested spawning call that spawned nothing does not mark
/// the call whose subagent it ran in as misattributed; a spawning call whose start was not
/// read claims the first stopped of the waiting subagents of its type.
#[test]
fn claude_hook_late_ends_nested_calls_and_stop_order() {
    let late_end = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"A"},"tool_use_id":"t1"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"t4","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"t4","tool_response":{},"agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"A"},"tool_use_id":"t1","tool_response":{}}
"#;
    let got = events(late_end);
    assert_eq!(got.iter().filter(|e| e.event_type == EventType::AgentInvokeStart).count(), 1, "{got:?}");
    // The same in a capture without `PreToolUse`: the late end is under the run that
    // stopped, which the `Task` end then claims.
    let post_only = r#"{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"X"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"X"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"b1","tool_response":{},"agent_id":"a1","agent_type":"X"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"X"},"tool_use_id":"t1","tool_response":{}}
{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Task","tool_input":{"subagent_type":"X"},"tool_use_id":"t2","error":"denied"}
"#;
    let got = events(post_only);
    assert_eq!(got.iter().filter(|e| e.event_type == EventType::AgentInvokeStart).count(), 1, "{got:?}");
    assert_eq!(call_span(&got, "t1"), agent_parent(&got, "a1"));
    assert_eq!(call_span(&got, "t2"), "t2");
    // A subagent whose first record is its stop (no start captured, its call's end after the
    // stop): its start is inferred before the stop, under the `Task` in flight or, without
    // the `Task`'s start, under the stand-in its end claims.
    for with_pre in [true, false] {
        let pre = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"X"},"tool_use_id":"t1"}
"#;
        let rest = r#"{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"X"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"b1","tool_response":{},"agent_id":"a1","agent_type":"X"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"X"},"tool_use_id":"t1","tool_response":{}}
"#;
        let text = if with_pre { format!("{pre}{rest}") } else { rest.to_owned() };
        let got = events(&text);
        let kinds: Vec<EventType> = got.iter().map(|e| e.event_type).collect();
        let starts = kinds.iter().filter(|&&kind| kind == EventType::AgentInvokeStart).count();
        assert_eq!(starts, 1, "{got:?}");
        let start = kinds.iter().position(|&kind| kind == EventType::AgentInvokeStart).unwrap();
        assert_eq!(kinds[start + 1], EventType::AgentInvokeEnd, "{got:?}");
        assert_eq!(call_span(&got, "t1"), agent_parent(&got, "a1"), "{text}");
    }
    // A call of a stopped subagent that starts is a new run (a resume without its
    // `SubagentStart`).
    let resumed = post_only.replace(r#""PostToolUse","tool_name":"Bash""#, r#""PreToolUse","tool_name":"Bash""#);
    let got = events(&resumed);
    assert_eq!(got.iter().filter(|e| e.event_type == EventType::AgentInvokeStart).count(), 2, "{got:?}");

    let nested = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"A"},"tool_use_id":"t1"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"A"},"tool_use_id":"t2","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Task","tool_input":{"subagent_type":"A"},"tool_use_id":"t2","error":"no","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"A"},"tool_use_id":"t1","tool_response":{}}
"#;
    let got = events(nested);
    assert!(got.iter().all(|e| !e.attributes.contains_key(agentic_core::event::SPAWN_MISATTRIBUTED)), "{got:?}");

    // Two tasks of one type whose subagents stop in the other order than they started, each
    // task ending after its own subagent.
    let parallel = r#"{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"a2","agent_type":"A"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a2","agent_type":"A"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"A"},"tool_use_id":"p2","tool_response":{}}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"A"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"A"},"tool_use_id":"p1","tool_response":{}}
"#;
    let got = events(parallel);
    let parent_of = |agent: &str| agent_parent(&got, agent);
    let span_of = |call: &str| call_span(&got, call);
    assert_eq!((span_of("p1"), span_of("p2")), (parent_of("a1"), parent_of("a2")));
}

/// The parent span id of subagent `agent`'s start among `events`.
fn agent_parent(events: &[CanonicalEvent], agent: &str) -> String {
    events
        .iter()
        .find(|e| {
            e.event_type == EventType::AgentInvokeStart && e.span.as_ref().unwrap().span_id.as_deref() == Some(agent)
        })
        .and_then(|e| e.span.clone().unwrap().parent_span_id)
        .unwrap()
}

/// The span id of the first event of tool call `call` (its `tool_use_id`) among `events`.
fn call_span(events: &[CanonicalEvent], call: &str) -> String {
    events
        .iter()
        .find(|e| e.attributes.get("gen_ai.tool.call.id") == Some(&json!(call)))
        .and_then(|e| e.span.clone().unwrap().span_id)
        .unwrap()
}

/// The spawning call of each subagent start in `text`, by agent id, in order: `None` when
/// none was in flight (the parent is then a stand-in, for a later end to claim).
fn spawned(text: &str) -> Vec<(String, Option<String>)> {
    events(text)
        .into_iter()
        .filter(|event| event.event_type == EventType::AgentInvokeStart)
        .map(|event| {
            let span = event.span.expect("span");
            let parent = span.parent_span_id.expect("a spawning call or a stand-in");
            let spawner = match event.attributes.get("x.claude_hook.spawned_by") {
                Some(spawner) => {
                    assert_eq!(spawner, &json!(parent));
                    Some(parent)
                }
                None => {
                    assert_eq!(event.attributes["x.claude_hook.spawner_stand_in"], json!(parent));
                    None
                }
            };
            (span.span_id.expect("agent id"), spawner)
        })
        .collect()
}

fn owned_links(links: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    links.iter().map(|(agent, task)| ((*agent).to_owned(), task.map(str::to_owned))).collect()
}

/// Hook records do not say which `Task` call started a subagent: the adapter links the
/// subagent to the oldest call in flight that asked for its type, so `within: {tool: Task}`
/// holds the subagent's calls.
#[test]
fn claude_hook_subagents_are_linked_to_the_call_that_spawned_them() {
    // Two tasks in parallel; the subagents start in the other order and are told apart by type.
    let text = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"explorer","prompt":"a"},"tool_use_id":"task_1"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer","prompt":"b"},"tool_use_id":"task_2"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_r","agent_type":"reviewer"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"t3","agent_id":"ag_e","agent_type":"explorer"}
"#;
    assert_eq!(spawned(text), owned_links(&[("ag_r", Some("task_2")), ("ag_e", Some("task_1"))]));
    let got = events(text);
    assert_eq!(got[4].span.as_ref().unwrap().parent_span_id.as_deref(), Some("ag_e"));

    // Same type twice: the oldest call first; a call spawns one subagent.
    let text = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"x"},"tool_use_id":"task_1"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"x"},"tool_use_id":"task_2"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_1","agent_type":"x"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_2","agent_type":"x"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_3","agent_type":"x"}
"#;
    assert_eq!(spawned(text), owned_links(&[("ag_1", Some("task_1")), ("ag_2", Some("task_2")), ("ag_3", None)]));

    // A call without `subagent_type` (the default agent) takes a subagent no call names; an
    // `Agent` tool, or any tool with `subagent_type`, spawns too.
    let text = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"prompt":"a"},"tool_use_id":"task_1"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Agent","tool_input":{"subagent_type":"y"},"tool_use_id":"task_2"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"mcp__team__delegate","tool_input":{"subagent_type":"z"},"tool_use_id":"task_3"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_z","agent_type":"z"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_g","agent_type":"general-purpose"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_y","agent_type":"y"}
"#;
    assert_eq!(
        spawned(text),
        owned_links(&[("ag_z", Some("task_3")), ("ag_g", Some("task_1")), ("ag_y", Some("task_2"))])
    );

    // No link: the call ended (also by failure) before the start, it named another type, it
    // was in another session, or it is not a spawning tool.
    let text = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"x"},"tool_use_id":"task_1"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"x"},"tool_use_id":"task_1"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"x"},"tool_use_id":"task_2"}
{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Task","tool_input":{"subagent_type":"x"},"tool_use_id":"task_2","error":"denied"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"other"},"tool_use_id":"task_3"}
{"session_id":"t","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"x"},"tool_use_id":"task_4"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t5"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_1","agent_type":"x"}
"#;
    assert_eq!(spawned(text), owned_links(&[("ag_1", None)]));
}

/// A background `Task` ends as soon as it launches its subagent, whose `SubagentStart` may
/// be written after the call's end: it still links to that call. A call that ran in the
/// foreground and ended spawned nothing after its end.
#[test]
fn claude_hook_a_background_call_links_the_subagent_that_starts_after_its_end() {
    let text = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"bg","run_in_background":true},"tool_use_id":"task_1"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"bg","run_in_background":true},"tool_response":{"status":"async_launched"},"tool_use_id":"task_1"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_1","agent_type":"bg"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_2","agent_type":"bg"}
"#;
    assert_eq!(spawned(text), owned_links(&[("ag_1", Some("task_1")), ("ag_2", None)]));
    let foreground = text.replace(r#","run_in_background":true"#, "");
    assert_eq!(spawned(&foreground), owned_links(&[("ag_1", None), ("ag_2", None)]));
    // A background call that failed launched nothing.
    let failed = text.replace(r#""hook_event_name":"PostToolUse""#, r#""hook_event_name":"PostToolUseFailure""#);
    assert_eq!(spawned(&failed), owned_links(&[("ag_1", None), ("ag_2", None)]));
    // Another session's subagent is not its.
    assert_eq!(
        spawned(&text.replace(
            r#"{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_1""#,
            r#"{"session_id":"t","hook_event_name":"SubagentStart","agent_id":"ag_1""#
        )),
        owned_links(&[("ag_1", None), ("ag_2", Some("task_1"))])
    );
}

/// A `SubagentStop` without `agent_id` (Claude Code before subagent ids) names no subagent:
/// it is a `custom` event, not the end of a nameless agent call.
#[test]
fn claude_hook_a_subagent_stop_without_agent_id_is_no_call() {
    let text = r#"{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_1","agent_type":"x"}
{"session_id":"s","hook_event_name":"SubagentStop","stop_hook_active":false}
"#;
    let got = events(text);
    assert_eq!(
        got.iter().map(|event| event.event_type).collect::<Vec<_>>(),
        [EventType::AgentInvokeStart, EventType::Custom]
    );
    assert_eq!(got[1].data["kind"], "SubagentStop");
}

/// Spawning calls without `tool_use_id` (older Claude Code, or `""` from a capture): the
/// start and the end that holds the same pair under an id made from the start's line, and
/// the subagent that starts in between links to that call, as with ids; an end that holds
/// other input (rewritten) is not taken for the start.
#[test]
fn claude_hook_spawning_calls_without_ids_pair_and_link() {
    let text = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"x","prompt":"a"}}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_1","agent_type":"x"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Grep","tool_input":{"pattern":"p"},"agent_id":"ag_1","agent_type":"x"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"ag_1"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"x","prompt":"a"},"tool_response":{}}
"#;
    assert_eq!(spawned(text), owned_links(&[("ag_1", Some("#L1"))]));
    let got = events(text);
    let span = |at: usize| got[at].span.clone().unwrap().span_id;
    assert_eq!((got[0].event_type, span(0).as_deref()), (EventType::ToolCallStart, Some("#L1")));
    let end = got.iter().rposition(|event| event.event_type == EventType::ToolCallEnd).unwrap();
    assert_eq!(span(end).as_deref(), Some("#L1"), "the end takes its start's made id");
    assert!(got.iter().all(|event| !event.attributes.contains_key("gen_ai.tool.call.id")), "no id was recorded");
    assert!(got.iter().all(|event| !event.attributes.contains_key("x.claude_hook.spawner_stand_in")));
    // `""` ids read the same.
    assert_eq!(spawned(&text.replace(r#""tool_input""#, r#""tool_use_id":"","tool_input""#)), spawned(text));
    // An end without input pairs with the start of its tool.
    let bare =
        text.replace(r#","tool_input":{"subagent_type":"x","prompt":"a"},"tool_response""#, r#","tool_response""#);
    let got = events(&bare);
    let end = got.iter().rposition(|event| event.event_type == EventType::ToolCallEnd).unwrap();
    assert_eq!(got[end].span.clone().unwrap().span_id.as_deref(), Some("#L1"));
    // An end with other input is not that call's: the start keeps its made id alone.
    let rewritten = text.replace(r#","prompt":"a"},"tool_response""#, r#","prompt":"b"},"tool_response""#);
    let got = events(&rewritten);
    let end = got.iter().rposition(|event| event.event_type == EventType::ToolCallEnd).unwrap();
    assert_ne!(got[end].span.clone().unwrap().span_id.as_deref(), Some("#L1"));
}

/// An empty id is no id, as `null` is (a capture that writes `jq '.id // ""'`): two hook
/// calls without ids are two calls, a main-thread record with `agent_id: ""` is no
/// subagent, and tooltrace lines with `trace_id: ""` do not nest under each other.
#[test]
fn empty_ids_are_absent_ids() {
    let hooks = r#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"","agent_id":"","agent_type":""}
{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":""}
{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{},"tool_use_id":""}
{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_response":{},"tool_use_id":""}
"#;
    let without = hooks.replace(r#","tool_use_id":"""#, "").replace(r#","agent_id":"","agent_type":"""#, "");
    let shape = |text: &str| -> Vec<(EventType, Option<agentic_core::event::SpanContext>)> {
        events(text).into_iter().map(|event| (event.event_type, event.span)).collect()
    };
    assert_eq!(shape(hooks), shape(&without));
    assert!(!shape(hooks).iter().any(|(kind, _)| *kind == EventType::AgentInvokeStart || *kind == EventType::Custom));

    let v2 = r#"{"schema":"tooltrace/2","phase":"pre","timestamp":"2026-02-19T10:00:00Z","session_id":"s1","tool_use_id":"u1","tool_name":"Bash","span_type":"parent","trace_id":"","parent_trace_id":"","args":{"command":"ls"}}
{"schema":"tooltrace/2","phase":"post","timestamp":"2026-02-19T10:00:01Z","session_id":"s1","tool_use_id":"u1","tool_name":"Bash","span_type":"parent","trace_id":"","parent_trace_id":"","args":{"command":"ls"}}
{"schema":"tooltrace/2","phase":"pre","timestamp":"2026-02-19T10:00:02Z","session_id":"","tool_use_id":"u2","tool_name":"Bash","span_type":"parent","trace_id":"","parent_trace_id":"","agent_id":"","args":{"command":"pwd"}}
"#;
    for event in events(v2) {
        let span = event.span.clone().unwrap();
        assert_eq!(span.parent_span_id, None, "{event:?}");
        assert!(matches!(span.span_id.as_deref(), Some("u1" | "u2")), "{event:?}");
        assert_ne!(span.trace_id.as_deref(), Some(""), "{event:?}");
    }
    assert_parallel_agrees(v2.as_bytes(), None);
}

/// A v2 end takes its start's span id by `tool_use_id`, whatever `trace_id` each carries
/// (a writer that numbers every record, as v1 does), so the engine sees one call.
#[test]
fn v2_ends_pair_with_their_starts_by_tool_use_id() {
    let line = |phase: &str, call: &str, trace: Option<&str>, session: &str| {
        let trace = trace.map_or(String::new(), |trace| format!(",\"trace_id\":\"{trace}\""));
        format!(
            "{{\"schema\":\"tooltrace/2\",\"phase\":\"{phase}\",\"timestamp\":\"2026-02-19T10:00:04Z\",\"session_id\":\"{session}\",\"tool_use_id\":\"{call}\"{trace},\"tool_name\":\"Bash\",\"span_type\":\"parent\",\"args\":{{\"command\":\"git push\"}}}}\n"
        )
    };
    let text = [
        line("pre", "toolu_9", Some("t-17"), "s1"),
        line("post", "toolu_9", Some("t-18"), "s1"),
        line("pre", "toolu_10", Some("t-19"), "s1"),
        line("post_failure", "toolu_10", None, "s1"),
        // Another session's call of the same id is another call.
        line("pre", "toolu_11", None, "s1"),
        line("post", "toolu_11", Some("t-20"), "s2"),
        // Without ids on the start, the end keeps its own.
        line("post", "toolu_12", Some("t-21"), "s1"),
    ]
    .concat();
    let spans: Vec<(EventType, Option<String>)> =
        events(&text).into_iter().map(|event| (event.event_type, event.span.and_then(|span| span.span_id))).collect();
    let start = |id: &str| (EventType::ToolCallStart, Some(id.to_owned()));
    let end = |id: &str| (EventType::ToolCallEnd, Some(id.to_owned()));
    assert_eq!(
        spans,
        vec![start("t-17"), end("t-17"), start("t-19"), end("t-19"), start("toolu_11"), end("t-20"), end("t-21")]
    );
    assert_parallel_agrees(text.as_bytes(), None);
}

/// A denied Task call ends without a record, so the next subagent of its type is linked to
/// it; when the call that really spawned the subagent ends without one, its end carries the
/// earlier call's id (the engine warns). Parallel calls that each got their subagent do not.
#[test]
fn a_link_that_a_later_end_contradicts_is_marked() {
    let pre = |id: &str| {
        format!(
            r#"{{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{{"subagent_type":"gp"}},"tool_use_id":"{id}"}}"#
        )
    };
    let post = |id: &str| {
        format!(
            r#"{{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{{"subagent_type":"gp"}},"tool_response":{{}},"tool_use_id":"{id}"}}"#
        )
    };
    let start = |agent: &str| {
        format!(r#"{{"session_id":"s1","hook_event_name":"SubagentStart","agent_id":"{agent}","agent_type":"gp"}}"#)
    };
    let stop = |agent: &str| {
        format!(r#"{{"session_id":"s1","hook_event_name":"SubagentStop","agent_id":"{agent}","agent_type":"gp"}}"#)
    };
    let marks = |lines: Vec<String>| -> Vec<(Option<String>, String)> {
        events(&(lines.join("\n") + "\n"))
            .into_iter()
            .filter_map(|event| {
                let mark = event.attributes.get(agentic_core::event::SPAWN_MISATTRIBUTED)?.as_str()?.to_owned();
                Some((event.span.and_then(|span| span.span_id), mark))
            })
            .collect()
    };
    let denied = vec![pre("A"), pre("B"), start("ag-1"), stop("ag-1"), post("B")];
    assert_eq!(marks(denied), vec![(Some("B".to_owned()), "A".to_owned())]);
    let parallel =
        vec![pre("A"), pre("B"), start("ag-1"), start("ag-2"), stop("ag-2"), post("B"), stop("ag-1"), post("A")];
    assert_eq!(marks(parallel), vec![]);
}

const OTLP: &str = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"agent"}}]},
  "scopeSpans":[{"scope":{"name":"agent_framework","version":"1.x"},
   "spans":[
    {"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","parentSpanId":"a1b2c3d4e5f60718","name":"execute_tool get_weather","kind":1,
     "startTimeUnixNano":"1718000000000000000","endTimeUnixNano":"1718000001200000000",
     "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},
                   {"key":"gen_ai.tool.name","value":{"stringValue":"get_weather"}},
                   {"key":"gen_ai.tool.call.id","value":{"stringValue":"call_VSPy"}},
                   {"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\"location\":\"Paris\"}"}}],
     "status":{"code":2,"message":"boom"}},
    {"traceId":"S/kvNXezTaajzpKdDg5HNg==","spanId":"obLD1OX2Bxg=","name":"invoke_agent weather-bot","kind":1,
     "startTimeUnixNano":"1717999999000000000","endTimeUnixNano":"1718000002000000000",
     "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}},
                   {"key":"gen_ai.agent.name","value":{"stringValue":"weather-bot"}},
                   {"key":"gen_ai.usage.input_tokens","value":{"intValue":"12"}}]}
   ]}]}]}
"#;

/// `create_agent` builds an agent without running it: a step, not an agent invocation (an
/// agent count or an agent scope must not see it).
#[test]
fn otlp_create_agent_is_a_step() {
    let text = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"create_agent weather-bot","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"create_agent"}},{"key":"gen_ai.agent.name","value":{"stringValue":"weather-bot"}}]}]}]}]}"#;
    let types: Vec<EventType> = events(text).iter().map(|e| e.event_type).collect();
    assert_eq!(types, vec![EventType::StepStart, EventType::StepEnd]);
}

/// OTLP before 0.15 named `scopeSpans` `instrumentationLibrarySpans` (older exporters and
/// collector dumps still write it): its spans are read, not silently dropped.
#[test]
fn otlp_legacy_instrumentation_library_spans_are_read() {
    let span = |id: &str, name: &str| {
        json!({"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": id, "name": name,
               "startTimeUnixNano": "1", "endTimeUnixNano": "2",
               "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]})
    };
    let legacy = json!({"resourceSpans": [{
        "instrumentationLibrarySpans": [{"instrumentationLibrary": {"name": "old"}, "spans": [span("b7ad6b7169203331", "execute_tool Read")]}],
    }]});
    let names: Vec<Option<String>> = events(&legacy.to_string()).iter().map(|e| e.step_name.clone()).collect();
    assert_eq!(names, vec![Some("Read".to_owned()), Some("Read".to_owned())]);
    // Both names in one resource: the spans of both are read.
    let both = json!({"resourceSpans": [{
        "scopeSpans": [{"spans": [span("b7ad6b7169203331", "execute_tool Read")]}],
        "instrumentationLibrarySpans": [{"spans": [span("00f067aa0ba902b7", "execute_tool Bash")]}],
    }]});
    assert_eq!(events(&both.to_string()).len(), 4);
    let wrong = json!({"resourceSpans": [{"instrumentationLibrarySpans": {"spans": []}}]}).to_string();
    let got = read(&wrong, None);
    let error = &got[0].as_ref().unwrap_err().message;
    assert!(error.contains("`resourceSpans[0].instrumentationLibrarySpans` must be a list"), "{error}");
}

/// Tool names when `gen_ai.tool.name` is absent: the span name after its operation word, or
/// the whole name when it does not start with it; a span that names its tool but not its
/// operation is a tool call; an all-zero `parentSpanId` is no parent.
#[test]
fn otlp_tool_names_come_from_the_span_name_and_zero_parents_are_none() {
    let span = |name: &str, attributes: Value, parent: &str| {
        json!({"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "parentSpanId": parent,
               "name": name, "startTimeUnixNano": "1", "endTimeUnixNano": "2", "attributes": attributes})
    };
    let operation = json!([{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]);
    let tool = json!([{"key": "gen_ai.tool.name", "value": {"stringValue": "get_weather"}}]);
    let cases = [
        (span("get_weather", operation.clone(), ""), EventType::ToolCallStart, Some("get_weather"), None),
        (span("execute_tool get_weather", operation.clone(), ""), EventType::ToolCallStart, Some("get_weather"), None),
        (span("execute_tool", operation, ""), EventType::ToolCallStart, None, None),
        (span("weather lookup", tool.clone(), "0000000000000000"), EventType::ToolCallStart, Some("get_weather"), None),
        (span("weather lookup", tool, "AAAAAAAAAAA="), EventType::ToolCallStart, Some("get_weather"), None),
        (span("plan", json!([]), "00f067aa0ba902b7"), EventType::StepStart, Some("plan"), Some("00f067aa0ba902b7")),
    ];
    for (span, kind, name, parent) in cases {
        let text = json!({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).to_string();
        let got = events(&text);
        assert_eq!(got[0].event_type, kind, "{text}");
        assert_eq!(got[0].step_name.as_deref(), name, "{text}");
        assert_eq!(got[0].span.as_ref().unwrap().parent_span_id.as_deref(), parent, "{text}");
        // No `gen_ai.tool.call.arguments`: no input is made up for the call.
        assert_eq!(got[0].data.get("input"), None, "{text}");
    }
}

/// Two sessions that reuse a `tool_use_id` in records without `trace_id` (span ids are
/// file-wide): the second session's start gets `ID@SESSION`, and each end takes its own
/// session's start, so each call is one call.
#[test]
fn tooltrace_v2_calls_of_two_sessions_with_one_id_stay_apart() {
    let line = |phase: &str, session: &str, c: u32| {
        format!(
            r#"{{"schema":"tooltrace/2","phase":"{phase}","timestamp":"2026-02-19T10:00:00Z","tool_name":"Bash","span_type":"parent","tool_use_id":"u1","session_id":"{session}","args":{{"c":{c}}}}}"#
        )
    };
    for order in [["s1", "s2", "s1", "s2"], ["s1", "s2", "s2", "s1"]] {
        let text: String = order
            .iter()
            .enumerate()
            .map(|(idx, session)| {
                let c = if *session == "s1" { 1 } else { 2 };
                line(if idx < 2 { "pre" } else { "post" }, session, c) + "\n"
            })
            .collect();
        let got = events(&text);
        let span_of = |idx: usize| got[idx].span.as_ref().unwrap().span_id.clone().unwrap();
        let session_of = |idx: usize| got[idx].span.as_ref().unwrap().trace_id.clone().unwrap();
        assert_eq!((span_of(0).as_str(), span_of(1).as_str()), ("u1", "u1@s2"), "{text}");
        for end in 2..4 {
            let start = if session_of(end) == "s1" { 0 } else { 1 };
            assert_eq!(span_of(end), span_of(start), "{text}");
        }
        // Once the first call ended, the id is free again.
        let again = format!("{text}{}\n", line("pre", "s3", 3));
        assert_eq!(events(&again)[4].span.as_ref().unwrap().span_id.as_deref(), Some("u1"));
        assert_parallel_agrees(text.as_bytes(), None);
    }
    // An end without a start of its own, while another session's call of the id is in
    // flight, is a call of its own: it does not end that call.
    let text = format!("{}\n{}\n", line("pre", "s1", 1), line("post", "s2", 2));
    let got = events(&text);
    assert_eq!(got[1].span.as_ref().unwrap().span_id.as_deref(), Some("u1@s2"));
    assert_parallel_agrees(text.as_bytes(), None);
}

#[test]
fn otlp_spans_become_ordered_start_and_end_events() {
    let got = events(OTLP);
    let summary: Vec<(EventType, Option<&str>)> = got.iter().map(|e| (e.event_type, e.step_name.as_deref())).collect();
    use EventType::*;
    assert_eq!(
        summary,
        vec![
            (AgentInvokeStart, Some("weather-bot")),
            (ToolCallStart, Some("get_weather")),
            (ToolCallEnd, Some("get_weather")),
            (AgentInvokeEnd, Some("weather-bot")),
        ]
    );
    let agent_span = got[0].span.as_ref().unwrap();
    // Base64 ids decode to the same hex as the tool span's parent.
    assert_eq!(agent_span.trace_id.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    assert_eq!(agent_span.span_id.as_deref(), Some("a1b2c3d4e5f60718"));
    assert_eq!(got[1].span.as_ref().unwrap().parent_span_id.as_deref(), Some("a1b2c3d4e5f60718"));
    assert_eq!(got[1].data["input"], json!({"location": "Paris"}));
    assert_eq!(got[2].status, Some(EventStatus::Error));
    assert_eq!(got[2].error.as_ref().unwrap().message, "boom");
    assert_eq!(got[0].attributes["gen_ai.usage.input_tokens"], json!(12));
    assert_eq!(got[0].attributes["x.otlp.resource.service.name"], json!("agent"));
    assert_eq!(got[1].timestamp.timestamp(), 1_718_000_000);
    // The document spans several lines: each event cites the line of its span's `spanId`.
    for event in &got {
        let source = event.source.as_ref().unwrap();
        assert_eq!(source.line, Some(span_line(OTLP, source)), "{event:?}");
    }
    assert!(got.iter().any(|e| e.source.as_ref().unwrap().line != Some(1)));
    assert_eq!(got[1].source.as_ref().unwrap().raw.as_ref().unwrap()["name"], json!("execute_tool get_weather"));
}

#[test]
fn pretty_printed_documents_span_lines() {
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(OTLP).unwrap()).unwrap();
    // The second document is another trace (the same spans again would be a repeat).
    let other = OTLP
        .replace('\n', "")
        .replace("S/kvNXezTaajzpKdDg5HNg==", "0af7651916cd43dd8448eb211c80319c")
        .replace("4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c");
    let text = format!("{pretty}\n{other}\n");
    let got = read(&text, None);
    assert_eq!(got.len(), 8, "{got:?}");
    // The two documents' spans are ordered together (by time, and here the times are the
    // same); the second document's events cite its one line.
    let second: Vec<_> = got
        .iter()
        .map(|event| event.as_ref().unwrap())
        .filter(|event| event.span.as_ref().unwrap().trace_id.as_deref() == Some("0af7651916cd43dd8448eb211c80319c"))
        .collect();
    assert_eq!(second.len(), 4);
    for event in second {
        assert_eq!(event.source.as_ref().unwrap().line, Some(pretty.lines().count() as u64 + 1));
    }
}

/// A pretty-printed object that went wrong part way (closed too early, or a string left
/// open) takes the lines indented deeper than its first line, and its closing line, as its
/// rest: a nested object among them is no record, and the record after it is read.
#[test]
fn a_broken_pretty_object_takes_its_member_lines_along() {
    let names = |text: &str| lines_and_names(&read(text, None));
    let rest = "  \"args\": {\n    \"x\": [\n      {\n        \"tool_name\": \"Nested\"\n      }\n    ]\n  }\n}\n{\"tool_name\": \"Write\"}\n";
    for first in ["{\n  \"tool_name\": \"Read\"},\n", "{\n  \"tool_name\": \"Read\",\n  \"k\": \"open\n"] {
        let text = format!("{first}{rest}");
        let write = text.lines().count() as u64;
        assert_eq!(names(&text), vec![Err(1), Ok((write, "Write".to_owned()))], "{text}");
        let message = read(&text, None).into_iter().find_map(Result::err).unwrap().message;
        let taken = format!("up to line {}, indented deeper than its first line", write - 1);
        assert!(message.contains(&taken), "{message}");
        assert_parallel_agrees(text.as_bytes(), None);
    }
    // A record in the first column right after it is not taken.
    let next = "{\n  \"tool_name\": \"Read\"},\n  \"k\": 1\n{\"tool_name\": \"Write\"}\n";
    assert_eq!(names(next), vec![Err(1), Ok((4, "Write".to_owned()))]);
    assert_parallel_agrees(next.as_bytes(), None);
}

/// An OTLP document given back by a broken list (a batch of exports, one element broken)
/// cites the lines of its spans' `spanId`s, as it does on its own.
#[test]
fn a_document_given_back_by_a_broken_list_cites_its_span_lines() {
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(OTLP).unwrap()).unwrap();
    let lines = |text: &str| {
        let mut lines: Vec<_> =
            read(text, None).iter().filter_map(|r| r.as_ref().ok()?.source.as_ref()?.line).collect();
        lines.sort_unstable();
        lines
    };
    let alone = lines(&format!("{pretty}\n"));
    assert!(alone.iter().any(|&line| line > 1), "{alone:?}");
    // The same document as the first element of a list (one line down), then a broken one.
    let in_list = format!("[\n{pretty},\n{{\"resourceSpans\": oops}}\n]\n");
    assert_eq!(lines(&in_list), alone.iter().map(|line| line + 1).collect::<Vec<_>>());
    // What is left of the list after it went wrong early is named as such.
    let errors: Vec<_> = read("[\n{\"tool_name\": \"Read\"}},\n{\"tool_name\": \"Bash\"}\n]\n", None)
        .into_iter()
        .filter_map(Result::err)
        .map(|error| error.message)
        .collect();
    assert!(errors.iter().any(|message| message.contains("a line that only closes brackets (`]`)")), "{errors:?}");
}

/// A printer that does not indent (Python's `json.dumps(doc, indent=0)`) puts the objects of
/// a list in the first column: they continue the document. A record cut after `{` or after
/// `,` between members still ends at the next line that opens an object.
#[test]
fn unindented_documents_span_lines_and_cut_records_still_end() {
    let value = serde_json::from_str::<Value>(OTLP).unwrap();
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    let flat: String = pretty.lines().map(|line| format!("{}\n", line.trim_start())).collect();
    assert!(flat.lines().filter(|line| line.starts_with('{')).count() > 2, "{flat}");
    let got = read(&flat, None);
    assert!(got.iter().all(Result::is_ok), "{got:?}");
    assert_eq!(got.len(), 4, "{got:?}");
    for event in got.iter().flatten() {
        let source = event.source.as_ref().unwrap();
        assert_eq!(source.line, Some(span_line(&flat, source)), "{event:?}");
    }
    assert_parallel_agrees(flat.as_bytes(), None);

    let next = "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Read\"}\n";
    for cut in ["{\"timestamp\":\"2026-02-19T10:00:00Z\",\n", "{\n", "{\"args\": {\n\"a\": [\n1\n],\n"] {
        let got = read(&format!("{cut}{next}{next}"), None);
        assert_eq!(got.len(), 3, "{cut:?}: {got:?}");
        assert!(got[0].as_ref().unwrap_err().message.contains("is not closed before line"), "{cut:?}: {got:?}");
        assert!(got[1..].iter().all(Result::is_ok), "{cut:?}: {got:?}");
    }
}

/// A bad span of a pretty-printed document is reported at its `spanId`'s line and named by
/// its id; the other span is read.
#[test]
fn a_bad_span_of_a_pretty_document_is_cited_at_its_line() {
    let bad = OTLP.replace("\"startTimeUnixNano\":\"1718000000000000000\"", "\"startTimeUnixNano\":\"abc\"");
    assert_ne!(bad, OTLP);
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(&bad).unwrap()).unwrap();
    let got = read(&pretty, None);
    let errors: Vec<&TraceError> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{got:?}");
    let id_line = pretty.lines().position(|l| l.contains("\"spanId\": \"00f067aa0ba902b7\"")).unwrap() as u64 + 1;
    assert_eq!(errors[0].line, id_line, "{}", errors[0]);
    assert!(
        errors[0].message.contains("span 0 (spanId \"00f067aa0ba902b7\", `execute_tool get_weather`)"),
        "{}",
        errors[0]
    );
    assert!(errors[0].message.contains("\"abc\" is not a whole number of nanoseconds"), "{}", errors[0]);
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 2, "{got:?}");
}

/// Every bad span of a document is reported on its own, at its `spanId`'s line; the good
/// ones are read.
#[test]
fn every_bad_span_of_a_document_is_reported_at_its_line() {
    let bad = OTLP
        .replace("\"startTimeUnixNano\":\"1718000000000000000\"", "\"startTimeUnixNano\":\"abc\"")
        .replace("\"startTimeUnixNano\":\"1717999999000000000\"", "\"startTimeUnixNano\":\"xyz\"");
    assert_eq!(bad.matches("\"abc\"").count() + bad.matches("\"xyz\"").count(), 2, "{bad}");
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(&bad).unwrap()).unwrap();
    for text in [bad.replace('\n', ""), pretty.clone()] {
        let got = read(&text, None);
        let errors: Vec<&TraceError> = got.iter().filter_map(|r| r.as_ref().err()).collect();
        assert_eq!(errors.len(), 2, "{got:?}");
        assert!(errors[0].message.contains("\"abc\" is not a whole number"), "{}", errors[0]);
        assert!(errors[1].message.contains("\"xyz\" is not a whole number"), "{}", errors[1]);
        assert_ne!(errors[0].message, errors[1].message);
        assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 0, "{got:?}");
    }
    // In the pretty document each error cites its own span's line.
    let got = read(&pretty, None);
    let lines: Vec<u64> = got.iter().filter_map(|r| r.as_ref().err()).map(|e| e.line).collect();
    assert_ne!(lines[0], lines[1], "{got:?}");
}

#[test]
fn malformed_records_name_their_line_and_reading_continues() {
    let text = "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Read\"}\n\
                {\"timestamp\":\"2026-02-19T10:00:0\n\
                \n\
                {\"timestamp\":\"2026-02-19T10:00:02Z\",\"tool_name\":\"Read\",\"phase\":\"later\"}\n\
                {\"tool_name\":42}\n\
                [1,2]\n\
                {\"timestamp\":\"2026-02-19T10:00:09Z\",\"tool_name\":\"Bash\",\"span_type\":\"sibling\"}\n\
                {\"timestamp\":\"2026-02-19T10:00:10Z\",\"tool_name\":\"Bash\"}\n";
    let got = read(text, None);
    let lines: Vec<Result<u64, u64>> = got
        .iter()
        .map(|r| match r {
            Ok(event) => Ok(event.source.as_ref().unwrap().line.unwrap()),
            Err(error) => Err(error.line),
        })
        .collect();
    // Each bad element of a list is reported on its own.
    assert_eq!(lines, vec![Ok(1), Err(2), Err(4), Err(5), Err(6), Err(6), Err(7), Ok(8)]);
    let messages: Vec<String> = got.iter().filter_map(|r| r.as_ref().err()).map(ToString::to_string).collect();
    assert!(messages[0].starts_with("line 2: invalid JSON"), "{messages:?}");
    assert!(messages[1].contains("`phase` must be pre, post or post_failure"), "{messages:?}");
    assert!(messages[2].contains("`tool_name` must be a non-empty string"), "{messages:?}");
    assert!(messages[3].contains("list element 0: expected a JSON object"), "{messages:?}");
    assert!(messages[4].contains("list element 1: expected a JSON object"), "{messages:?}");
    assert_eq!(got.iter().filter_map(|r| r.as_ref().ok()).map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2]);
}

/// A time that does not read costs a record its time, never its call: tooltrace and hook
/// records are ordered by their place in the file, and a dropped call could be the one a rule
/// forbids. A time without a zone (Python's `isoformat()`) reads as UTC. Both are marked.
#[test]
fn a_time_that_does_not_read_keeps_its_call() {
    let text = "{\"timestamp\":\"2026-02-19T10:00:03.5\",\"tool_name\":\"Bash\",\"args\":{\"command\":\"ls\"}}\n\
                {\"timestamp\":\"2026-02-19 10:00:04\",\"tool_name\":\"Read\"}\n\
                {\"timestamp\":\"yesterday\",\"tool_name\":\"Bash\",\"args\":{\"command\":\"rm -rf /\"}}\n\
                {\"timestamp\":1771495200,\"tool_name\":\"Edit\"}\n\
                {\"timestamp\":\"2026-02-19T10:00:06Z\",\"tool_name\":\"Write\"}\n";
    let events: Vec<CanonicalEvent> = read(text, None).into_iter().map(Result::unwrap).collect();
    let seen: Vec<(&str, String, Option<&Value>)> = events
        .iter()
        .map(|e| {
            (
                e.step_name.as_deref().unwrap(),
                e.timestamp.to_rfc3339(),
                e.attributes.get(agentic_core::event::TIME_UNREAD),
            )
        })
        .collect();
    let (no_zone, unread) = (json!("no_zone"), json!("not_rfc3339"));
    assert_eq!(
        seen,
        vec![
            ("Bash", "2026-02-19T10:00:03.500+00:00".to_owned(), Some(&no_zone)),
            ("Read", "2026-02-19T10:00:04+00:00".to_owned(), Some(&no_zone)),
            ("Bash", "1970-01-01T00:00:00+00:00".to_owned(), Some(&unread)),
            ("Edit", "1970-01-01T00:00:00+00:00".to_owned(), Some(&unread)),
            ("Write", "2026-02-19T10:00:06+00:00".to_owned(), None),
        ]
    );
    assert_eq!(events[2].attributes["x.time.clock"], json!("absent"));
    assert_eq!(events[2].data["input"]["command"], json!("rm -rf /"));
    // Hook records (which carry a time only when the capture adds one) read it the same way.
    let hook = "{\"session_id\":\"s\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{},\"tool_use_id\":\"u1\",\"timestamp\":\"soon\"}\n";
    let events: Vec<CanonicalEvent> = read(hook, None).into_iter().map(Result::unwrap).collect();
    assert_eq!(events[0].attributes.get(agentic_core::event::TIME_UNREAD), Some(&unread));
}

/// A Claude Code hook record appended to a tooltrace file (a capture that changed format
/// part way) is malformed, not a call with its arguments (`tool_input`) dropped; and a
/// tooltrace record in a hook file likewise.
#[test]
fn hook_records_in_a_tooltrace_file_are_malformed() {
    let text = "{\"timestamp\":\"2026-02-19T10:00:01Z\",\"tool_name\":\"Read\",\"args\":{\"file_path\":\"x\"}}\n\
                {\"session_id\":\"s1\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf /tmp/x\"},\"tool_use_id\":\"toolu_1\"}\n\
                {\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf /\"}}\n";
    let got = read(text, Some(TraceFormat::Tooltrace));
    assert!(got[0].is_ok());
    let message = |idx: usize| got[idx].as_ref().unwrap_err().to_string();
    assert!(message(1).contains("`hook_event_name` is a field of Claude Code hook records"), "{}", message(1));
    assert!(message(2).contains("`tool_input` is a field of Claude Code hook records"), "{}", message(2));
    assert!(message(2).contains("--trace-format claude_hook"), "{}", message(2));
    assert_parallel_agrees(text.as_bytes(), Some(TraceFormat::Tooltrace));
    // The mirror case: a tool record with tooltrace's `args` in a hook file.
    let text = "{\"session_id\":\"s1\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Read\",\"tool_input\":{},\"tool_use_id\":\"u0\"}\n\
                {\"session_id\":\"s1\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"args\":{\"command\":\"rm -rf /\"},\"tool_use_id\":\"u1\"}\n";
    let got = read(text, Some(TraceFormat::ClaudeHook));
    assert!(got[0].is_ok());
    let message = got[1].as_ref().unwrap_err().to_string();
    assert!(message.contains("`args` is a field of tooltrace records"), "{message}");
    assert!(message.contains("--trace-format tooltrace"), "{message}");
}

#[test]
fn ids_are_strings_or_integers_and_other_numbers_are_malformed() {
    let text = "{\"tool_name\":\"Task\",\"span_type\":\"parent\",\"trace_id\":7}\n\
                {\"tool_name\":\"Read\",\"span_type\":\"child\",\"parent_trace_id\":\"7\"}\n\
                {\"tool_name\":\"Read\",\"trace_id\":1.0}\n\
                {\"tool_name\":\"Read\",\"parent_trace_id\":1e0}\n\
                {\"tool_name\":\"Read\",\"trace_id\":true}\n\
                {\"tool_name\":\"Read\",\"span_type\":1}\n\
                {\"tool_name\":\"Read\",\"trace_id\":18446744073709551615}\n\
                {\"tool_name\":\"Read\",\"trace_id\":18446744073709551616}\n";
    let got = read(text, None);
    let task = got[0].as_ref().unwrap();
    let child = got[1].as_ref().unwrap();
    // `7` and `"7"` are one id: the child is under the task.
    assert_eq!(task.span.as_ref().unwrap().span_id.as_deref(), Some("7"));
    assert_eq!(child.span.as_ref().unwrap().parent_span_id.as_deref(), Some("7"));
    let message = |idx: usize| got[idx].as_ref().unwrap_err().to_string();
    assert!(message(2).contains("`trace_id` 1.0 is not an integer"), "{}", message(2));
    assert!(message(3).contains("`parent_trace_id` 1.0 is not an integer"), "{}", message(3));
    assert!(message(4).contains("`trace_id` must be a string or an integer, found a boolean"), "{}", message(4));
    assert!(message(5).contains("`span_type` must be a string, found a number"), "{}", message(5));
    assert_eq!(got[6].as_ref().unwrap().span.as_ref().unwrap().span_id.as_deref(), Some("18446744073709551615"));
    // One past 64 bits: the digits are lost in reading, so the message asks for quotes and
    // does not offer a spelling of its own.
    assert!(message(7).contains("too long to keep); write the id in quotes"), "{}", message(7));
    // The fast reader leaves such records to the adapter: both read them alike.
    assert_parallel_agrees(text.as_bytes(), None);
    let hook =
        r#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","tool_use_id":2.5,"tool_input":{}}"#;
    let error = read(hook, None).remove(0).unwrap_err().to_string();
    assert!(error.contains("`tool_use_id` 2.5 is not an integer"), "{error}");
    let failure = r#"{"hook_event_name":"PostToolUseFailure","session_id":"s","tool_name":"Bash","tool_use_id":"u","is_interrupt":"yes"}"#;
    let error = read(failure, None).remove(0).unwrap_err().to_string();
    assert!(error.contains("`is_interrupt` must be true or false, found a string"), "{error}");
}

#[test]
fn a_byte_order_mark_before_a_record_is_skipped() {
    let tooltrace = "{\"tool_name\":\"Read\",\"trace_id\":\"a\"}\r\n{\"tool_name\":\"Edit\"}\n";
    let hooks = "{\"session_id\":\"s\",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{},\"tool_response\":{},\"tool_use_id\":\"t\"}\n";
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(OTLP).unwrap()).unwrap();
    for (text, count) in [(tooltrace, 2), (hooks, 1), (OTLP, 4), (pretty.as_str(), 4)] {
        let with_bom = format!("\u{feff}{text}");
        let got = read(&with_bom, None);
        assert!(got.iter().all(Result::is_ok), "{got:?}");
        assert_eq!(got.len(), count, "{got:?}");
        let source = got[0].as_ref().unwrap().source.as_ref().unwrap();
        let first_line =
            if text.contains("resourceSpans") && text.trim_end().contains('\n') { span_line(text, source) } else { 1 };
        assert_eq!(source.line, Some(first_line));
        assert_parallel_agrees(with_bom.as_bytes(), None);
    }
    // At the start of a line too (files that each had one, concatenated with `cat`).
    let inside = format!("{tooltrace}\u{feff}{{\"tool_name\":\"Bash\"}}\n");
    let got = read(&inside, None);
    assert!(got.iter().all(Result::is_ok), "{got:?}");
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[2].as_ref().unwrap().source.as_ref().unwrap().line, Some(3));
    assert_parallel_agrees(inside.as_bytes(), None);
}

#[test]
fn unknown_formats_and_bytes_are_errors() {
    let got = read("{\"hello\":1}\n", None);
    assert!(got[0].as_ref().unwrap_err().message.contains("cannot tell the trace format"));
    let got: Vec<_> = TraceReader::new(&b"\xff\xfe{}\n"[..], None).collect();
    assert!(got[0].as_ref().unwrap_err().message.contains("not UTF-8"));
    let got = read("{\"resourceSpans\": 3}\n", Some(TraceFormat::OtlpJson));
    assert!(got[0].as_ref().unwrap_err().message.contains("`resourceSpans` must be a list"));
    // Near misses of an OTLP export say what they are, detected or read as OTLP.
    for (record, said) in [
        (r#"{"resource_spans": [{"scope_spans": []}]}"#, "it has `resource_spans`: protobuf's own field names"),
        (r#"[{"resource_spans": []}]"#, "it has `resource_spans`"),
        (r#"{"resource": {}, "scopeSpans": [{"spans": []}]}"#, "it is one `ResourceSpans` entry"),
        (
            r#"{"name": "execute_tool Bash", "context": {"trace_id": "0x1", "span_id": "0x2"}, "kind": "SpanKind.INTERNAL"}"#,
            "console exporter output",
        ),
    ] {
        for format in [None, Some(TraceFormat::OtlpJson)] {
            let got = read(&format!("{record}\n"), format);
            let message = &got[0].as_ref().unwrap_err().message;
            assert!(message.contains(said), "{format:?}: {message}");
        }
    }
    let got = read("{\n\"resourceSpans\": [\n", None);
    assert!(got[0].as_ref().unwrap_err().message.contains("not closed"));
}

/// A pretty-printed document that goes wrong part way (a line that is not UTF-8, or more
/// than the record limit in all) is one malformed record at its first line, naming where it
/// went wrong; its other lines are not read as records, and the next document is read.
#[test]
fn a_document_that_goes_wrong_part_way_is_one_malformed_record() {
    let doc = |tool: &str, value: &str| {
        let span = json!({"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
            "name": format!("execute_tool {tool}"), "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": "gen_ai.tool.call.arguments", "value": {"stringValue": value}}]});
        serde_json::to_string_pretty(&json!({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})).unwrap()
    };
    let first = doc("Read", "MARK");
    let bad_line = first.lines().position(|line| line.contains("MARK")).unwrap() as u64 + 1;
    let mut bytes = first.replace("MARK", "a\u{1}b").into_bytes();
    let at = bytes.windows(3).position(|w| w == "a\u{1}b".as_bytes()).unwrap();
    bytes[at + 1] = 0xff;
    bytes.push(b'\n');
    let got = one_bad_document_then_bash(bytes, bad_line);
    let names: Vec<_> = got.iter().filter_map(|r| r.as_ref().ok()?.step_name.clone()).collect();
    assert_eq!(names, vec!["Bash".to_owned(), "Bash".to_owned()]);
    // Over the record limit: one malformed record, then the next document.
    let big = "x".repeat(1024);
    let mut text = String::from("{\n\"resourceSpans\": [\n");
    while text.len() <= MAX_RECORD_BYTES {
        text.push_str(&format!("  {{\"big\": \"{big}\"}},\n"));
    }
    text.push_str("  {}\n]\n}\n");
    text.push_str(&doc("Bash", "{}"));
    text.push('\n');
    let got = read(&text, Some(TraceFormat::OtlpJson));
    let errors: Vec<_> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{:?}", &errors[..errors.len().min(3)]);
    assert!(errors[0].message.contains("record is longer than"), "{}", errors[0].message);
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 2);
    // The bad byte on the document's first line: the same.
    let mut bytes = b"{\"resourceSpans\": [{\"resource\": {\"attributes\": [{\"key\": \"s\", \"value\": {\"stringValue\": \"we\xffather\"}}]},\n".to_vec();
    bytes.extend_from_slice(b"\"scopeSpans\": [{\"spans\": [\n{\"traceId\": \"4bf92f3577b34da6a3ce929d0e0e4736\",\n\"spanId\": \"00f067aa0ba902b7\"}\n]}]}]}\n");
    let got = one_bad_document_then_bash(bytes, 1);
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 2);
    // A first line that is only its opening bracket and the bad byte; a list of one-line
    // documents opened so: none of its documents is read.
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(OTLP_ONE_SPAN).unwrap()).unwrap();
    let mut bytes = b"{\xff".to_vec();
    bytes.extend_from_slice(&pretty.as_bytes()[1..]);
    bytes.push(b'\n');
    let got = one_bad_document_then_bash(bytes, 1);
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 2);
    let mut list = b"[\xff\n".to_vec();
    list.extend_from_slice(format!("{OTLP_ONE_SPAN},\n{OTLP_ONE_SPAN}\n]\n").as_bytes());
    let got = one_bad_document_then_bash(list, 1);
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 2);
}

/// One OTLP document (one line) of one `Read` span.
const OTLP_ONE_SPAN: &str = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"execute_tool Read","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}"#;

/// Reads `bytes` (a document with a line that is not UTF-8, line `bad_line`) followed by a
/// one-span document of `Bash`: one malformed record at line 1 naming the bad line, the same
/// on the parallel reader.
fn one_bad_document_then_bash(mut bytes: Vec<u8>, bad_line: u64) -> Vec<Result<CanonicalEvent, TraceError>> {
    let span = json!({"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
        "name": "execute_tool Bash", "startTimeUnixNano": "1", "endTimeUnixNano": "2"});
    let doc = serde_json::to_string_pretty(&json!({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})).unwrap();
    bytes.extend_from_slice(doc.as_bytes());
    bytes.push(b'\n');
    let got: Vec<_> = TraceReader::new(&bytes[..], None).collect();
    let errors: Vec<_> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{got:?}");
    assert_eq!(errors[0].line, 1);
    assert!(errors[0].message.contains(&format!("not UTF-8 text (line {bad_line}:")), "{}", errors[0].message);
    assert_parallel_agrees(&bytes, None);
    got
}

#[test]
fn forced_format_reads_records_of_that_format_only() {
    let got = read(OTLP, Some(TraceFormat::Tooltrace));
    let message = &got[0].as_ref().unwrap_err().message;
    assert!(
        message.contains("missing `tool_name`: this is a `otlp_json` record in a file read as `tooltrace`"),
        "{message}"
    );
    assert!(message.contains("`--trace-format otlp_json`"), "{message}");
    // A record of neither format is missing the field.
    let got = read("{\"name\": \"x\"}\n", Some(TraceFormat::Tooltrace));
    assert!(got[0].as_ref().unwrap_err().message.contains("missing `tool_name`"));
    assert_eq!(TraceFormat::from_name("otlp"), Some(TraceFormat::OtlpJson));
    assert_eq!(TraceFormat::from_name("nope"), None);
}

/// seq, type, name, span id, parent span id, post-only parent, args, line, failed.
type EventShape =
    (u64, EventType, Option<String>, Option<String>, Option<String>, bool, Option<Value>, Option<u64>, bool);
type Shape = Result<EventShape, (u64, String)>;

fn shape_of_event(event: &CanonicalEvent) -> EventShape {
    let span = event.span.clone().unwrap_or_default();
    (
        event.seq,
        event.event_type,
        event.step_name.clone(),
        span.span_id,
        span.parent_span_id,
        event.attributes.get("x.tooltrace.span_type") == Some(&json!("parent")),
        event.data.get("input").cloned(),
        event.source.as_ref().and_then(|s| s.line),
        event.status == Some(EventStatus::Error),
    )
}

fn shape_of_view(view: &TooltraceView<'_>) -> EventShape {
    (
        view.seq,
        view.event_type,
        Some(view.tool_name.clone().into_owned()),
        view.span_id.clone().map(|s| s.into_owned()),
        view.parent_span_id.clone().map(|s| s.into_owned()),
        view.span_type_parent,
        view.args.map(|a| serde_json::from_str(a).unwrap()),
        Some(view.line),
        view.failed,
    )
}

/// What the iterator yields and what `for_each_item` yields, in the same comparable shape.
fn both_paths(text: &str) -> (Vec<Shape>, Vec<Shape>, usize) {
    let slow = reference_path(text.as_bytes(), None);
    let mut fast = Vec::new();
    let mut views = 0;
    TraceReader::new(text.as_bytes(), None).for_each_item(|item| {
        fast.push(match item {
            Ok(TraceItem::Event(event)) => Ok(shape_of_event(&event)),
            Ok(TraceItem::Tooltrace(view)) => {
                views += 1;
                Ok(shape_of_view(&view))
            }
            Err(error) => Err((error.line, error.message)),
        });
        std::ops::ControlFlow::Continue(())
    });
    (slow, fast, views)
}

/// The reference: the iterator, which builds every canonical event with the full adapter.
fn reference_path(bytes: &[u8], format: Option<TraceFormat>) -> Vec<Shape> {
    TraceReader::new(bytes, format).map(|r| r.map(|e| shape_of_event(&e)).map_err(|e| (e.line, e.message))).collect()
}

/// The parallel reader with `workers` threads and blocks of `block` bytes. Checks on the way
/// that what the worker prepared belongs to the view it comes with.
fn parallel_path(bytes: &[u8], format: Option<TraceFormat>, workers: usize, block: usize) -> (Vec<Shape>, usize) {
    parallel_path_on(bytes, format, workers, (block, LINE_TAIL_BYTES))
}

/// [`parallel_path`] on any input, with block size and line tail.
fn parallel_path_on<F: ReadAt + ?Sized>(
    input: &F,
    format: Option<TraceFormat>,
    workers: usize,
    sizes: (usize, usize),
) -> (Vec<Shape>, usize) {
    let mut items = Vec::new();
    let mut views = 0;
    parallel::run(
        input,
        format,
        workers,
        sizes,
        || |view: &TooltraceView<'_>| shape_of_view(view),
        |item, prepared| {
            items.push(match item {
                Ok(TraceItem::Event(event)) => {
                    assert!(prepared.is_none());
                    Ok(shape_of_event(&event))
                }
                Ok(TraceItem::Tooltrace(view)) => {
                    views += 1;
                    let shape = shape_of_view(&view);
                    let prepared = prepared.expect("a view comes with its prepared value");
                    // The worker saw the view before it had a line and seq.
                    assert_eq!(
                        (&prepared.1, &prepared.2, &prepared.3, &prepared.4),
                        (&shape.1, &shape.2, &shape.3, &shape.4)
                    );
                    assert_eq!((prepared.5, &prepared.6), (shape.5, &shape.6));
                    Ok(shape)
                }
                Err(error) => Err((error.line, error.message)),
            });
            std::ops::ControlFlow::Continue(())
        },
    );
    (items, views)
}

/// The reference and the parallel reader at several thread counts and block sizes (tiny
/// blocks put block boundaries everywhere) agree item for item.
fn assert_parallel_agrees(bytes: &[u8], format: Option<TraceFormat>) {
    let reference = reference_path(bytes, format);
    for (workers, block) in [(0, 7), (1, 1), (1, 13), (2, 5), (2, 64), (3, 4096), (2, 1 << 20)] {
        let (parallel, _) = parallel_path(bytes, format, workers, block);
        assert_eq!(reference, parallel, "{workers} worker(s), {block}-byte blocks");
    }
    // Lines longer than a block and its tail go to the one-thread reader.
    for (workers, block, tail) in [(1, 16, 1), (2, 32, 7), (3, 50, 24)] {
        let (parallel, _) = parallel_path_on(bytes, format, workers, (block, tail));
        assert_eq!(reference, parallel, "{workers} worker(s), {block}-byte blocks, {tail}-byte tail");
    }
}

#[test]
fn the_parallel_reader_equals_the_reference_on_every_format() {
    let tooltrace = r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Task","span_type":"parent","trace_id":"abc123"}
{"timestamp":"2026-02-19T10:00:05Z","tool_name":"Re\u0061d","span_type":"child","parent_trace_id":"abc123","args":{"file_path":"a \"b\".md"}}
  {"args":{"command":"ls -la /tmp/é ✓ 😀"},"trace_id":"t-2","tool_name":"Bash"}  
{"tool_name":"Bash","phase":"pre","tool_use_id":"toolu_1","agent_id":"ag","args":"ls"}
[{"tool_name":"Bash","trace_id":"x"},{"tool_name":"Read","trace_id":"y"}]
{"tool_name":"Bash","trace_id":17}
{"timestamp":"yesterday","tool_name":"Read"}
{"tool_name":"Read","tool_name":"Write"}

{"tool_name":""}
not json
{"tool_name":"Edit",
 "args": {"file_path": "x.rs"}}
{"tool_name":"Edit","span_type":"sibling"}
{"tool_name":"Edit","phase":"post_failure","status":"error","error":"boom"}
{"tool_name":"Grep","args":{"pattern":"\ud800"}}
{"tool_name":"Grep","args":{"n":1e400}}
{"tool_name":"Glob","args":{"pattern":"**/*.rs"}}
{"tool_name":"Glob","args":{"pattern":"**/*.rs"}}
{"tool_name":"Glob","args":{"pattern":"unclosed"}
"#;
    let crlf = tooltrace.replace('\n', "\r\n");
    let no_final_newline = tooltrace.trim_end();
    for text in [tooltrace, crlf.as_str(), no_final_newline] {
        assert_parallel_agrees(text.as_bytes(), None);
        assert_parallel_agrees(text.as_bytes(), Some(TraceFormat::Tooltrace));
    }
    let (_, views) = parallel_path(tooltrace.as_bytes(), None, 2, 64);
    assert!(views >= 4, "{views} lines took the fast path");
    let hooks = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{},"tool_use_id":"toolu_1"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"ag_1","agent_type":"code-reviewer"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"ag_1","agent_type":"code-reviewer"}
"#;
    assert_parallel_agrees(hooks.as_bytes(), None);
    let otlp = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"execute_tool Read","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"Read"}}]}]}]}]}
"#;
    assert_parallel_agrees(otlp.as_bytes(), None);
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(otlp).unwrap()).unwrap();
    assert_parallel_agrees(pretty.as_bytes(), None);
}

#[test]
fn the_parallel_reader_handles_bytes_that_are_not_utf8() {
    let mut bytes = b"{\"tool_name\":\"Read\"}\n{\"tool_name\":\"Bash\",\"args\":\"\xff\"}\n".to_vec();
    bytes.extend_from_slice(b"{\"tool_name\":\"Write\"}\n\xc3\n{\"tool_name\":\"Edit\"}");
    assert_parallel_agrees(&bytes, None);
}

#[test]
fn the_parallel_reader_stops_when_asked() {
    let text = "{\"tool_name\":\"Read\"}\n".repeat(10_000);
    let mut seen = 0;
    parallel::run(
        text.as_bytes(),
        None,
        2,
        (64, LINE_TAIL_BYTES),
        || |_: &TooltraceView<'_>| (),
        |_, _| {
            seen += 1;
            if seen == 100 { std::ops::ControlFlow::Break(()) } else { std::ops::ControlFlow::Continue(()) }
        },
    );
    assert_eq!(seen, 100);
}

#[test]
fn the_fast_tooltrace_path_equals_the_adapter() {
    let text = r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Task","span_type":"parent","trace_id":"abc123"}
{"timestamp":"2026-02-19T10:00:05Z","tool_name":"Re\u0061d","span_type":"child","parent_trace_id":"abc123","args":{"file_path":"a \"b\".md"}}
{"tool_name":"Bash","phase":"pre","tool_use_id":"toolu_1","agent_id":"ag","args":"ls"}
[{"tool_name":"Bash","trace_id":"x"},{"tool_name":"Read","trace_id":"y"}]
{"tool_name":"Bash","trace_id":17}
{"timestamp":"yesterday","tool_name":"Read"}

{"tool_name":""}
not json
{"tool_name":"Edit","span_type":"sibling"}
{"tool_name":"Edit","phase":"post_failure","status":"error","error":"boom"}
"#;
    let (slow, fast, views) = both_paths(text);
    assert_eq!(slow, fast);
    // Line 11 takes the fast path; line 1 detects the format, and the escaped tool name, the
    // v2 start with a `tool_use_id` (paired by session), the array, the numeric id and the
    // errors go through the adapter, as does the time that does not read (its call is kept).
    assert_eq!(views, 1);
    assert_eq!(slow.iter().filter(|r| r.is_err()).count(), 3);
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("\"tool_name\":".to_owned()),
        Just("\"hook_event_name\":\"PostToolUse\",".to_owned()),
        Just("\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[".to_owned()),
        Just("{\"name\":\"execute_tool x\",\"spanId\":\"AAAAAAAAAAA=\",\"startTimeUnixNano\":\"-5\"}".to_owned()),
        Just("\"timestamp\":\"2026-02-19T10:00:00Z\",".to_owned()),
        Just("\"args\":{\"a\":[1,2,{}]},".to_owned()),
        Just("\"span_type\":\"parent\",".to_owned()),
        Just("null".to_owned()),
        Just("\n".to_owned()),
        Just(",".to_owned()),
        Just("\"tool_name\":\"Bash\",".to_owned()),
        Just("\"trace_id\":\"t-1\",\"parent_trace_id\":null,".to_owned()),
        Just("\"phase\":\"pre\",".to_owned()),
        Just("\"phase\":\"post_failure\",".to_owned()),
        Just("\"status\":\"error\",".to_owned()),
        Just("\"status\":\"ok\",".to_owned()),
        Just("\"args\":\"a\\\"b\\u00e9\\ud83d\\ude00\",".to_owned()),
        Just("\"args\":[1.5,-0,1e5,true,false,null,{\"k\":[]}],".to_owned()),
        Just("\"x\":01,".to_owned()),
        Just("\"timestamp\":\"2026-02-30T10:00:00Z\",".to_owned()),
        Just("\"timestamp\":\"2026-02-19T10:00:00.5+01:00\",".to_owned()),
        Just("\"tool_name\":\"Read\"}".to_owned()),
        Just("\r\n".to_owned()),
        Just("  ".to_owned()),
        Just("\"args\":{\"file_path\":\"/é/✓/😀.rs\",\"file_path\":\"x\"},".to_owned()),
        Just("{\"tool_name\":\"Bash\",\"args\":{\"command\":\"rm -rf /\"},\"trace_id\":\"t-9\"}\n".to_owned()),
        Just("{\"span_type\":\"child\",\"parent_trace_id\":\"t-1\",\"tool_name\":\"Write\"}\n".to_owned()),
        "[ -~]{0,12}".prop_map(|s| s),
    ]
}

/// The `args` of a line of a repeated shape: objects read member by member by a layout,
/// wide ones, and values that must be refused (repeated keys, bad escapes, bad numbers).
fn args_value() -> impl Strategy<Value = String> {
    let text = prop_oneof![
        Just(String::new()),
        Just("/repo/src/a.rs".to_owned()),
        Just("a \\\"b\\\" \\u00e9 \\n".to_owned()),
        Just("\\x".to_owned()),
        Just("\\ud83d\\ude00".to_owned()),
        Just("tab\there".to_owned()),
        Just("é✓😀".to_owned()),
        "[ -!#-\\[\\]-~]{0,40}".prop_map(|s| s),
    ];
    let value = prop_oneof![
        Just("1".to_owned()),
        Just("-0.5".to_owned()),
        Just("01".to_owned()),
        Just("1e5".to_owned()),
        Just("true".to_owned()),
        Just("null".to_owned()),
        Just("[1,{\"k\":\"v\"}]".to_owned()),
        Just("{\"k\":{\"k\":1},\"j\":2}".to_owned()),
        Just("{\"k\":1,\"k\":2}".to_owned()),
        text.clone().prop_map(|t| format!("\"{t}\"")),
    ];
    prop_oneof![
        text.clone().prop_map(|t| format!("{{\"file_path\":\"{t}\"}}")),
        (text.clone(), value.clone()).prop_map(|(t, v)| format!("{{\"command\":\"{t}\",\"timeout\":{v}}}")),
        (text.clone(), value.clone()).prop_map(|(t, v)| format!("{{ \"command\" : \"{t}\" , \"timeout\" : {v} }}")),
        value.clone().prop_map(|v| format!("{{\"command\":{v}}}")),
        text.clone().prop_map(|t| format!("{{\"command\":\"{t}\",\"command\":\"x\"}}")),
        value.clone().prop_map(|v| format!("{{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":{v}}}")),
        text.clone().prop_map(|t| format!("{{\"an_argument_name_longer_than_a_layout_keeps\":\"{t}\"}}")),
        Just("{}".to_owned()),
        value,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Layouts learn `args` objects member by member: lines of a few shapes with any values
    /// read the same through them as through the adapter.
    #[test]
    fn the_parallel_reader_agrees_on_repeated_argument_shapes(
        args in proptest::collection::vec(args_value(), 1..60),
        tools in proptest::collection::vec(0usize..3, 60),
        workers in 1usize..3,
    ) {
        let mut text = String::new();
        for (n, (args, tool)) in args.iter().zip(&tools).enumerate() {
            let tool = ["Read", "Bash", "Edit"][*tool];
            text.push_str(&format!(
                "{{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"{tool}\",\"trace_id\":\"t-{n}\",\"args\":{args}}}\n"
            ));
            if n % 3 == 0 {
                text.push_str(&format!("{{\"tool_name\":\"{tool}\",\"args\":{args},\"span_type\":\"parent\"}}\n"));
            }
        }
        let reference = reference_path(text.as_bytes(), None);
        let (parallel, _) = parallel_path(text.as_bytes(), None, workers, 1 << 16);
        prop_assert_eq!(reference, parallel);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), forced in 0usize..4) {
        let format = TraceFormat::ALL.get(forced).copied();
        let count = TraceReader::new(&bytes[..], format).take(10_000).count();
        prop_assert!(count <= 10_000);
    }

    #[test]
    fn fast_and_full_paths_agree_on_random_lines(parts in proptest::collection::vec(fragment(), 0..40)) {
        let text = format!("{{\"tool_name\":\"Read\"}}\n{}", parts.concat());
        let (slow, fast, _) = both_paths(&text);
        prop_assert_eq!(slow, fast);
    }

    #[test]
    fn the_parallel_reader_agrees_on_random_lines(parts in proptest::collection::vec(fragment(), 0..40), forced in 0usize..4, workers in 0usize..4, block in 1usize..96) {
        let text = format!("{{\"tool_name\":\"Read\"}}\n{}", parts.concat());
        let format = TraceFormat::ALL.get(forced).copied();
        let reference = reference_path(text.as_bytes(), format);
        let (parallel, _) = parallel_path(text.as_bytes(), format, workers, block);
        prop_assert_eq!(reference, parallel);
    }

    /// Whole lines of records, cut batches and pieces of documents printed over lines: what
    /// failed documents give back reads the same on every path, in file order.
    #[test]
    fn the_parallel_reader_agrees_on_cut_documents(
        lines in proptest::collection::vec(prop_oneof![
            Just("{\"tool_name\":\"Bash\",\"trace_id\":\"b\"}"),
            Just("{\"tool_name\":\"Read\",\"trace_id\":\"r\"},"),
            Just("[{\"tool_name\":\"Edit\",\"trace_id\":\"e\"},"),
            Just("["),
            Just("]"),
            Just("{"),
            Just("\"tool_name\": \"Write\","),
            Just("\"trace_id\": \"w\""),
            Just("}"),
            Just("},"),
            Just("{},"),
            Just("{\"tool_name\":\"Glob\",\"trace_id\":\"g\""),
            Just("[]"),
            Just(""),
            Just("oops"),
        ], 0..30),
        workers in 0usize..4,
        block in 1usize..64,
    ) {
        let text = format!("{{\"tool_name\":\"Read\"}}\n{}\n", lines.join("\n"));
        let reference = reference_path(text.as_bytes(), None);
        // Every record comes once, in file order.
        let lines_of: Vec<u64> = reference.iter().filter_map(|item| item.as_ref().ok()).filter_map(|shape| shape.7).collect();
        prop_assert!(lines_of.windows(2).all(|pair| pair[0] <= pair[1]), "{:?}", lines_of);
        let (parallel, _) = parallel_path(text.as_bytes(), None, workers, block);
        prop_assert_eq!(reference, parallel);
    }

    #[test]
    fn the_parallel_reader_agrees_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512), workers in 0usize..3, block in 1usize..64) {
        let reference = reference_path(&bytes, None);
        let (parallel, _) = parallel_path(&bytes, None, workers, block);
        prop_assert_eq!(reference, parallel);
    }

    #[test]
    fn random_record_lines_never_panic(parts in proptest::collection::vec(fragment(), 0..40), forced in 0usize..4) {
        let text: String = parts.concat();
        let format = TraceFormat::ALL.get(forced).copied();
        for event in TraceReader::new(text.as_bytes(), format).take(10_000).flatten() {
            prop_assert!(event.seq > 0);
            prop_assert!(event.source.is_some());
        }
    }
}

/// A line the scanner parses whole but the adapter rejects (a bad timestamp) ends at its own
/// line feed: the next line (a duplicate key) still gets its own line number and event.
#[test]
fn a_record_rejected_after_scanning_ends_at_its_own_line() {
    let text = "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Task\",\"span_type\":\"parent\",\"trace_id\":\"abc123\"}\n{\"tool_name\":\"Bash\",\"trace_id\":17}\n{\"timestamp\":\"yesterday\",\"tool_name\":\"Read\"}\n{\"tool_name\":\"Read\",\"tool_name\":\"Write\"}\n\n{\"tool_name\":\"\"}\n";
    let reference = reference_path(text.as_bytes(), None);
    assert_eq!(reference.len(), 5);
    for workers in 1..3 {
        assert_eq!(parallel_path(text.as_bytes(), None, workers, 4096).0, reference);
    }
}

/// Input that fails to read from `fail_at` on.
struct FailingAt<'a> {
    bytes: &'a [u8],
    fail_at: usize,
}

impl ReadAt for FailingAt<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let offset = offset as usize;
        if offset >= self.fail_at {
            return Err(std::io::Error::other("disk on fire"));
        }
        let end = (offset + buf.len()).min(self.fail_at).min(self.bytes.len());
        let count = end.saturating_sub(offset);
        buf[..count].copy_from_slice(&self.bytes[offset..offset + count]);
        Ok(count)
    }
}

impl std::io::Read for FailingAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = ReadAt::read_at(self, buf, 0)?;
        self.bytes = &self.bytes[read..];
        self.fail_at -= read;
        Ok(read)
    }
}

#[test]
fn a_read_error_is_reported_once_after_the_lines_before_it() {
    let text = "{\"tool_name\":\"Read\",\"trace_id\":\"t-1\"}\n".repeat(300);
    for fail_at in [0, 1, 100, 2000, 5000, text.len() - 3] {
        let reference: Vec<Shape> = TraceReader::new(
            std::io::BufReader::with_capacity(64, FailingAt { bytes: text.as_bytes(), fail_at }),
            None,
        )
        .map(|r| r.map(|e| shape_of_event(&e)).map_err(|e| (e.line, e.message)))
        .collect();
        assert!(matches!(reference.last(), Some(Err((_, message))) if message.contains("disk on fire")));
        assert_eq!(reference.iter().filter(|r| r.is_err()).count(), 1);
        for (workers, block) in [(1, 64), (2, 100), (3, 1000)] {
            let input = FailingAt { bytes: text.as_bytes(), fail_at };
            let (parallel, _) = parallel_path_on(&input, None, workers, (block, LINE_TAIL_BYTES));
            assert_eq!(parallel, reference, "fail at {fail_at}, {workers} worker(s), {block}-byte blocks");
        }
    }
}

/// Input that seems to end at `visible` until a read has hit that end, then shows the rest
/// (a trace still being written).
struct Growing<'a> {
    bytes: &'a [u8],
    visible: usize,
    grown: std::sync::atomic::AtomicBool,
}

impl ReadAt for Growing<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        use std::sync::atomic::Ordering;
        let limit = if self.grown.load(Ordering::SeqCst) { self.bytes.len() } else { self.visible };
        let offset = (offset as usize).min(limit);
        let count = buf.len().min(limit - offset);
        if count == 0 {
            self.grown.store(true, Ordering::SeqCst);
        }
        buf[..count].copy_from_slice(&self.bytes[offset..offset + count]);
        Ok(count)
    }
}

#[test]
fn lines_written_while_the_trace_is_read_are_read_too() {
    let line = "{\"tool_name\":\"Bash\",\"trace_id\":\"t\",\"args\":{\"command\":\"ls\"}}\n";
    let text = line.repeat(200);
    let reference = reference_path(text.as_bytes(), None);
    for cut_lines in [1, 7, 100, 199] {
        for (workers, block) in [(1, 128), (2, 300)] {
            let input = Growing { bytes: text.as_bytes(), visible: cut_lines * line.len(), grown: false.into() };
            let (parallel, _) = parallel_path_on(&input, None, workers, (block, LINE_TAIL_BYTES));
            assert_eq!(parallel, reference, "first {cut_lines} lines, {workers} worker(s)");
        }
    }
}

/// Counts lines per block; the visitor checks each batch of records against its items.
struct CountLines(usize);

impl LineWork for CountLines {
    type Line = u64;
    type Block = usize;

    fn line(&mut self, view: &TooltraceView<'_>) -> u64 {
        self.0 += 1;
        view.tool_name.len() as u64
    }

    fn item(&mut self, view: &TooltraceView<'_>) -> u64 {
        view.tool_name.len() as u64
    }

    fn wanted(&self, line: &u64) -> bool {
        line.is_multiple_of(2)
    }

    fn block(&mut self) -> usize {
        std::mem::take(&mut self.0)
    }
}

#[test]
fn blocks_of_records_come_as_batches_with_their_positions() {
    let mut text = String::new();
    for idx in 0..500 {
        text.push_str(&format!("{{\"tool_name\":\"T{}\",\"trace_id\":\"t-{idx}\"}}\n", idx % 13));
        if idx % 97 == 0 {
            text.push('\n');
        }
        if idx == 250 {
            text.push_str("not json\n");
        }
        // Records the scanner leaves to the full parse (an escaped name, a line longer than
        // a block reads on), read on the calling thread between its blocks: counted in no
        // block's result.
        if idx % 61 == 30 {
            text.push_str(&format!("{{\"tool_name\":\"T\\u0031\",\"trace_id\":\"e-{idx}\"}}\n"));
        }
        if idx % 89 == 40 {
            text.push_str(&format!("{{\"tool_name\":\"Long\",\"args\":{{\"pad\":\"{}\"}}}}\n", "x".repeat(700)));
        }
    }
    let reference = reference_path(text.as_bytes(), None);
    let (mut items, mut batches) = (Vec::new(), 0);
    parallel::run_batches(
        text.as_bytes(),
        None,
        2,
        (400, 600),
        || CountLines(0),
        |batch| {
            match batch {
                Batch::Item(item, _) => items.push(
                    item.map(|item| match item {
                        TraceItem::Event(event) => shape_of_event(&event),
                        TraceItem::Tooltrace(view) => shape_of_view(&view),
                    })
                    .map_err(|e| (e.line, e.message)),
                ),
                Batch::Records(records) => {
                    batches += 1;
                    assert_eq!(*records.block(), records.len(), "the block's work saw its records");
                    for (k, record) in records.iter().enumerate() {
                        let view = record.view().expect("a record");
                        assert_eq!(records.position(k), Some((view.line, view.seq)));
                        assert_eq!(*record.data(), view.tool_name.len() as u64);
                        items.push(Ok(shape_of_view(&view)));
                    }
                    assert_eq!(records.position(records.len()), None);
                    let at = |record: parallel::RecordRef<'_, u64>| (record.line(), record.seq(), *record.data());
                    let wanted: Vec<_> = records.wanted().map(at).collect();
                    let expected: Vec<_> =
                        records.iter().filter(|record| record.data().is_multiple_of(2)).map(at).collect();
                    assert_eq!(wanted, expected, "the wanted records are the ones the work picked");
                    for n in [0, 1, 2, records.len().saturating_sub(1), records.len(), records.len() + 5] {
                        let last: Vec<_> = records.last(n).map(at).collect();
                        let skipped: Vec<_> = records.iter().skip(records.len().saturating_sub(n)).map(at).collect();
                        assert_eq!(last, skipped, "the last {n} records");
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        },
    );
    assert!(batches > 10, "{batches} batches");
    assert_eq!(items, reference);
}

/// A line may hold a list of records (an exporter's batch): read in order, with the line's
/// number; a bad element is named by its index and skipped, the others are read.
#[test]
fn a_line_with_a_list_of_records_reads_them_in_order() {
    let text = "[{\"tool_name\":\"A\",\"trace_id\":\"a\"},{\"tool_name\":\"B\",\"trace_id\":\"b\"}]\n[{\"tool_name\":\"C\"},1]\n[]\n";
    let got = read(text, None);
    let names: Vec<String> = got.iter().filter_map(|r| r.as_ref().ok()).filter_map(|e| e.step_name.clone()).collect();
    assert_eq!(names, ["A", "B", "C"]);
    let errors: Vec<&TraceError> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].line, 2);
    assert!(
        errors[0].message.contains("list element 1: expected a JSON object, found a number"),
        "{}",
        errors[0].message
    );
    // An element that repeats a key is a bad element too; the others are read.
    let text = "[{\"tool_name\":\"D\"},{\"tool_name\":\"E\",\"args\":{\"a\":1,\"a\":2}},{\"tool_name\":\"F\"}]\n";
    let got = read(text, None);
    let names: Vec<String> = got.iter().filter_map(|r| r.as_ref().ok()).filter_map(|e| e.step_name.clone()).collect();
    assert_eq!(names, ["D", "F"]);
    let errors: Vec<&TraceError> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(errors[0].message.contains("list element 1: invalid JSON: duplicate key `a`"), "{errors:?}");
}

/// A document spread over lines is parsed once its brackets close: brackets and escaped
/// quotes inside strings do not count, and a string running over a line end (never valid
/// JSON) is an error at the document's first line, not a wait for the end of the file.
#[test]
fn multi_line_documents_close_by_their_brackets() {
    let text = "{\n  \"tool_name\": \"Bash\",\n  \"trace_id\": \"a\",\n  \"args\": {\"command\": \"echo \\\"}]\\\" [{\"}\n}\n{\"tool_name\":\"Read\",\"trace_id\":\"b\"}\n";
    let got = events(text);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].data["input"]["command"], json!("echo \"}]\" [{"));
    assert_eq!(got[0].source.as_ref().unwrap().line, Some(1));
    assert_eq!(got[1].source.as_ref().unwrap().line, Some(6));
    let broken = "{\n  \"tool_name\": \"Ba\nsh\"\n}\n{\"tool_name\":\"Read\",\"trace_id\":\"b\"}\n";
    let got = read(broken, None);
    let error = got.iter().find_map(|r| r.as_ref().err()).expect("an error");
    assert_eq!(error.line, 1, "{error:?}");
    assert!(got.iter().any(|r| r.as_ref().is_ok_and(|e| e.step_name.as_deref() == Some("Read"))), "{got:?}");
}

/// A list (an exporter's batch) cut after one of its elements, or an object document cut
/// inside a list, reads on where a list can take a value, so it takes in the records after
/// it; when it then never closes, it gives them back. A list gives back every whole element
/// (its own and those it took in, one line or many, in file order, each with the line it
/// starts at); an object document, from its first later line that is a whole record in the
/// first column, its lines. By the iterator and by the parallel reader alike.
#[test]
fn a_cut_list_gives_back_the_records_it_took_in() {
    let record = |tool: &str, id: &str| format!(r#"{{"tool_name":"{tool}","trace_id":"{id}"}}"#);
    let names = |text: &str| lines_and_names(&read(text, None));
    // A compact batch cut after an element; a lone `[`; an unindented list whose elements
    // carry the list's `,` (read without it).
    let cut_batch = format!(
        "{}\n[{}, {},\n{}\n{}\n",
        record("Read", "a"),
        record("Read", "b"),
        record("Bash", "c"),
        record("Bash", "d"),
        record("Bash", "e")
    );
    assert_eq!(
        names(&cut_batch),
        vec![
            Ok((1, "Read".to_owned())),
            Err(2),
            Ok((2, "Read".to_owned())),
            Ok((2, "Bash".to_owned())),
            Ok((3, "Bash".to_owned())),
            Ok((4, "Bash".to_owned()))
        ]
    );
    let error = read(&cut_batch, None).into_iter().find_map(Result::err).unwrap().message;
    assert!(error.contains("its 4 whole elements (lines 2-4) are read as records of their own"), "{error}");
    let lone = format!("[\n{}\n{}\n", record("Bash", "d"), record("Write", "e"));
    assert_eq!(names(&lone), vec![Err(1), Ok((2, "Bash".to_owned())), Ok((3, "Write".to_owned()))]);
    let elements = format!("[\n{},\n{},\n", record("Bash", "d"), record("Write", "e"));
    assert_eq!(names(&elements), vec![Err(1), Ok((2, "Bash".to_owned())), Ok((3, "Write".to_owned()))]);
    // A pretty-printed batch cut after its first element: that element (lines 2-5) and the
    // record after it are given back.
    let pretty =
        format!("[\n  {{\n    \"tool_name\": \"Read\",\n    \"trace_id\": \"p\"\n  }},\n{}\n", record("Bash", "q"));
    assert_eq!(names(&pretty), vec![Err(1), Ok((2, "Read".to_owned())), Ok((6, "Bash".to_owned()))]);
    // An object cut inside a list takes in one line, then ends at the next record's line:
    // both are read, in order.
    let in_list = format!("{{\"resourceSpans\": [\n{}\n{}\n", record("Bash", "r"), record("Edit", "s"));
    assert_eq!(names(&in_list), vec![Err(1), Ok((2, "Bash".to_owned())), Ok((3, "Edit".to_owned()))]);
    // A pretty document that goes wrong without taking in a record stays one bad record,
    // also one printed without indentation, whose pieces (`{},`, `[]`) stand in the first
    // column.
    let broken = "{\n  \"resourceSpans\": [\n    {\"x\": nope}\n  ]\n}\n";
    assert_eq!(read(broken, None).len(), 1);
    let unindented =
        "{\n\"tool_name\": \"Read\",\n\"args\": {\n\"a\": [\n{},\n{}\n],\n\"b\": [\n[],\n[]\n]\n},\noops\n}\n";
    assert_eq!(read(unindented, None).len(), 1, "{:?}", read(unindented, None));
    // An element that is a document of its own (a whole batch printed over lines) is given
    // back whole, not line by line (which would report each of its lines); a missing `,`
    // between elements is passed over.
    let nested = format!(
        "[\n{},\n[\n{},\n{}\n]\n{}\n{}\n",
        record("Read", "a"),
        record("Read", "b"),
        record("Read", "c"),
        record("Bash", "d"),
        record("Write", "e")
    );
    assert_eq!(
        names(&nested),
        vec![
            Err(1),
            Ok((2, "Read".to_owned())),
            Ok((3, "Read".to_owned())),
            Ok((3, "Read".to_owned())),
            Ok((7, "Bash".to_owned())),
            Ok((8, "Write".to_owned()))
        ]
    );
    for text in [&cut_batch, &lone, &elements, &pretty, &in_list, &nested] {
        assert_parallel_agrees(text.as_bytes(), None);
    }
    // The first record of the trace may be such a list: what it gives back is read before
    // the parallel blocks start.
    let first = format!(
        "[{},\n{}\n{}\n{}\n",
        record("Read", "a"),
        record("Bash", "b"),
        record("Bash", "c"),
        record("Bash", "d")
    );
    assert_eq!(names(&first).len(), 5);
    assert_parallel_agrees(first.as_bytes(), None);
}

/// A record cut short after a `{`, `,`, `[` or `:` (an interrupted writer) would open a
/// multi-line document that swallows every record after it: a line that starts with `{` or
/// `[` in the first column ends such a document instead, which is reported as malformed at
/// its first line, and that line is read as the next record. In every format, by the
/// iterator and by the parallel reader.
#[test]
fn a_record_cut_short_does_not_swallow_the_records_after_it() {
    let tooltrace = "{\"tool_name\":\"Read\",\"trace_id\":\"a\"}\n\
                     {\"tool_name\":\"Bash\",\"args\":{\n\
                     {\"tool_name\":\"Bash\",\"trace_id\":\"b\",\"args\":{\"command\":\"rm -rf /\"}}\n\
                     {\"tool_name\":\"Edit\",\n\
                     \n\
                     [{\"tool_name\":\"Write\",\"trace_id\":\"c\"}]\n\
                     {\"tool_name\":\"Grep\",\"args\":\n";
    let got = read(tooltrace, None);
    let shape = lines_and_names(&got);
    assert_eq!(
        shape,
        vec![
            Ok((1, "Read".to_owned())),
            Err(2),
            Ok((3, "Bash".to_owned())),
            Err(4),
            Ok((6, "Write".to_owned())),
            Err(7)
        ]
    );
    let error = got[1].as_ref().unwrap_err().to_string();
    assert!(error.contains("not closed before line 3, which starts the next record"), "{error}");
    assert_parallel_agrees(tooltrace.as_bytes(), None);

    let hook = |command: &str, id: &str| {
        format!(
            r#"{{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"{command}"}},"tool_use_id":"{id}"}}"#
        )
    };
    let cut = hook("ls", "u1");
    let hooks =
        [&cut[..cut.find("\"tool_input\":").unwrap() + 14], &hook("rm -rf /", "u2"), &hook("pwd", "u3")].join("\n");
    let got = read(&hooks, None);
    assert!(got[0].is_err(), "{got:?}");
    let commands: Vec<Value> =
        got.iter().filter_map(|r| r.as_ref().ok()).map(|e| e.data["input"]["command"].clone()).collect();
    assert_eq!(commands, vec![json!("rm -rf /"), json!("pwd")]);

    // A pretty-printed OTLP batch cut off by a crash, then the batches appended after it.
    let whole: Value = serde_json::from_str(&otlp_doc(&[("a1", None, "execute_tool", Some("1"), Some("2"))])).unwrap();
    let pretty = serde_json::to_string_pretty(&whole).unwrap();
    let cut_at = pretty.find("\"spans\"").unwrap();
    let next = otlp_doc(&[("a2", None, "execute_tool", Some("3"), Some("4"))]);
    let text = format!("{}\n{pretty}\n{next}\n", &pretty[..cut_at]);
    let got = read(&text, None);
    let errors: Vec<u64> = got.iter().filter_map(|r| r.as_ref().err()).map(|e| e.line).collect();
    assert_eq!(errors, vec![1], "{got:?}");
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 4, "two spans of two events each: {got:?}");
}

/// A record whose closing brackets were written on the next line is one record (of the
/// line it starts on); a cut record followed by the next record stays malformed, and that
/// record is read on its own.
#[test]
fn a_record_closed_on_the_next_line_is_one_record() {
    let tooltrace = "{\"tool_name\":\"Read\",\"trace_id\":\"a\",\"args\":{\"file_path\":\"x\"}\n\
                     }\n\
                     {\"tool_name\":\"Bash\",\"args\":{\"command\":\"ls\"\n\
                     \t}  }\n\
                     {\"tool_name\":\"Edit\",\"trace_id\":\"e\"\n\
                     {\"tool_name\":\"Write\",\"trace_id\":\"w\"}\n\
                     {\"tool_name\":\"Grep\",\"trace_id\":\"g\"\n\
                     ]\n\
                     {\"tool_name\":\"Glob\"";
    let got = read(tooltrace, None);
    let shape = lines_and_names(&got);
    assert_eq!(
        shape,
        vec![
            Ok((1, "Read".to_owned())),
            Ok((3, "Bash".to_owned())),
            Err(5),
            Ok((6, "Write".to_owned())),
            Err(7),
            Err(9)
        ]
    );
    assert_eq!(got[0].as_ref().unwrap().data["input"]["file_path"], json!("x"));
    let wrong = got[4].as_ref().unwrap_err().to_string();
    assert!(wrong.contains("expected `,` or `}` at line 8 column 1"), "{wrong}");
    let cut = got[2].as_ref().unwrap_err().to_string();
    assert!(cut.contains("not closed before line 6, which starts the next record"), "{cut}");
    assert_parallel_agrees(tooltrace.as_bytes(), None);
}

/// The line of the first `spanId` in `text` holding the id of `source`'s raw span.
fn span_line(text: &str, source: &agentic_core::event::EventSource) -> u64 {
    let id = source.raw.as_ref().and_then(|raw| raw["spanId"].as_str()).expect("a span id");
    let at = text
        .match_indices("\"spanId\"")
        .map(|(at, _)| at)
        .find(|&at| text[at..].split_once(',').is_some_and(|(member, _)| member.contains(&format!("\"{id}\""))))
        .expect("the id is in the text");
    1 + text[..at].matches('\n').count() as u64
}

/// One bad span of an OTLP document is reported and skipped; the document's other spans
/// are read.
#[test]
fn a_bad_otlp_span_does_not_drop_its_document() {
    let mut document: Value = serde_json::from_str(OTLP).unwrap();
    let spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array_mut().unwrap();
    let good = spans.len();
    let mut bad = spans[0].clone();
    bad["startTimeUnixNano"] = json!("notanumber");
    spans.push(bad);
    let text = format!("{document}\n");
    let got = read(&text, None);
    let errors: Vec<&TraceError> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{got:?}");
    assert!(errors[0].message.contains("; the document's other spans are fine"), "{}", errors[0].message);
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 2 * good, "{got:?}");
    assert_parallel_agrees(text.as_bytes(), None);
}

/// A span for [`otlp_doc`]: `(span id, parent id, name, start, end)`.
type SpanRow<'a> = (&'a str, Option<&'a str>, &'a str, Option<&'a str>, Option<&'a str>);

/// One OTLP document of `spans`; `None` leaves the key out.
fn otlp_doc(spans: &[SpanRow<'_>]) -> String {
    otlp_export(spans.iter().map(otlp_span).collect())
}

/// The span of `row`, of trace `4bf92f35...`; `None` leaves the key out.
fn otlp_span(&(id, parent, name, start, end): &SpanRow<'_>) -> Value {
    let mut span = json!({"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": id, "name": name});
    if let Some(parent) = parent {
        span["parentSpanId"] = json!(parent);
    }
    if let Some(start) = start {
        span["startTimeUnixNano"] = json!(start);
    }
    if let Some(end) = end {
        span["endTimeUnixNano"] = json!(end);
    }
    span
}

/// One OTLP export document of `spans`.
fn otlp_export(spans: Vec<Value>) -> String {
    json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).to_string()
}

/// An SDK exports a span when it ends (one export per span with a simple processor; batches
/// of a long run with a batching one), so an agent comes after the calls inside it: the
/// spans of several exports are ordered together, as those of one export are.
#[test]
fn otlp_spans_exported_one_at_a_time_are_ordered_like_one_export() {
    let rows: [SpanRow<'_>; 4] = [
        ("00000000000000a1", None, "invoke_agent main", Some("100"), Some("1000")),
        ("00000000000000a2", Some("00000000000000a1"), "invoke_agent helper", Some("200"), Some("500")),
        ("00000000000000a3", Some("00000000000000a2"), "execute_tool Write", Some("300"), Some("400")),
        ("00000000000000a4", Some("00000000000000a1"), "execute_tool Read", Some("600"), Some("700")),
    ];
    let names = |text: &str| -> Vec<String> {
        events(text).iter().map(|e| format!("{:?} {}", e.event_type, e.step_name.as_deref().unwrap_or(""))).collect()
    };
    let expected = [
        "AgentInvokeStart main",
        "AgentInvokeStart helper",
        "ToolCallStart Write",
        "ToolCallEnd Write",
        "AgentInvokeEnd helper",
        "ToolCallStart Read",
        "ToolCallEnd Read",
        "AgentInvokeEnd main",
    ];
    assert_eq!(names(&otlp_doc(&rows)), expected);
    // One export per span, in the order they ended; and two batches.
    let per_span: String = [2, 1, 3, 0].iter().map(|&idx| otlp_doc(&rows[idx..=idx]) + "\n").collect();
    assert_eq!(names(&per_span), expected, "{per_span}");
    let batches = format!("{}\n{}\n", otlp_doc(&[rows[2], rows[1]]), otlp_doc(&[rows[3], rows[0]]));
    assert_eq!(names(&batches), expected, "{batches}");
    // Each event still cites its own line.
    let lines: Vec<Option<u64>> = events(&per_span).iter().map(|e| e.source.as_ref().unwrap().line).collect();
    assert_eq!(lines, [Some(4), Some(2), Some(1), Some(1), Some(2), Some(3), Some(3), Some(4)]);
    assert_parallel_agrees(per_span.as_bytes(), None);
    // Memory is bounded: when the window fills, its older half is given out (the later half
    // stays held), so a span that comes after that many others is ordered only among the
    // later half and those after it.
    let window = super::otlp::ORDER_WINDOW_SPANS;
    let mut text = String::new();
    for idx in 0..window {
        let id = format!("{:016x}", idx + 16);
        let start = (10_000 + idx).to_string();
        text.push_str(&otlp_doc(&[(&id, None, "execute_tool Bash", Some(&start), Some(&start))]));
        text.push('\n');
    }
    text.push_str(&otlp_doc(&[("0000000000000001", None, "execute_tool Early", Some("1"), Some("2"))]));
    text.push('\n');
    let got = events(&text);
    assert_eq!(got.len(), 2 * (window + 1));
    assert_eq!(got[0].step_name.as_deref(), Some("Bash"));
    assert_eq!(got[window].step_name.as_deref(), Some("Early"), "after the older half: {window} events");
    // Where the window ends does not decide: a child that fills the window is still ordered
    // after its agent, exported right after it.
    let mut text = String::new();
    for idx in 0..window - 1 {
        // Calls of another run, before this one (ids apart from the rows').
        let id = format!("{:016x}", idx + 0x1000);
        text.push_str(&otlp_doc(&[(&id, None, "chat m", Some("1"), Some("2"))]));
        text.push('\n');
    }
    text.push_str(&otlp_doc(&[rows[2]]));
    text.push('\n');
    text.push_str(&otlp_doc(&[rows[1]]));
    text.push('\n');
    for text in [text.clone(), format!("[\n{text}")] {
        // The second: a batch cut right at the start takes in every export after it and
        // gives them back; the window measures them by where they are in the file.
        let got: Vec<CanonicalEvent> = read(&text, None).into_iter().filter_map(Result::ok).collect();
        let at = |name: &str| got.iter().position(|e| e.step_name.as_deref() == Some(name)).unwrap();
        assert!(at("helper") < at("Write"), "the agent starts before the call inside it");
        assert!(!got.iter().any(|e| e.attributes.contains_key(agentic_core::event::OUT_OF_ORDER)));
    }
    // Memory is bounded by the text held too: a few large spans fill the window.
    let big = "x".repeat(300_000);
    let large = |id: &str, name: &str, start: &str| {
        let mut span = otlp_span(&(id, None, name, Some(start), Some(start)));
        span["attributes"] = json!([{"key": "note", "value": {"stringValue": big}}]);
        otlp_export(vec![span]) + "\n"
    };
    let per_window = (super::otlp::ORDER_WINDOW_BYTES / 300_000) as usize + 1;
    let mut text: String =
        (0..per_window).map(|idx| large(&format!("{:016x}", idx + 16), "execute_tool Bash", "100")).collect();
    text.push_str(&large("0000000000000001", "execute_tool Early", "1"));
    let got = events(&text);
    assert_eq!(got[0].step_name.as_deref(), Some("Bash"));
    // These spans share one time, so their starts come before all their ends: with no
    // point where none is open, the whole window was given out before it.
    assert_eq!(got[2 * per_window].step_name.as_deref(), Some("Early"));
    // A span placed after events that started later is marked, so rules can warn; the spans
    // ordered in time are not.
    let marked: Vec<_> = got.iter().filter(|e| e.attributes.contains_key(agentic_core::event::OUT_OF_ORDER)).collect();
    assert_eq!(marked.len(), 1);
    assert_eq!((marked[0].event_type, marked[0].step_name.as_deref()), (EventType::ToolCallStart, Some("Early")));
}

/// A full window keeps only spans held: the repeats of spans exported again go out with the
/// older half, near where they came, instead of piling up to the end of the input.
#[test]
fn otlp_repeats_go_out_with_the_older_half_of_a_full_window() {
    let window = super::otlp::ORDER_WINDOW_SPANS;
    let mut text = String::new();
    for idx in 0..window + window / 2 {
        let id = format!("{:016x}", idx + 0x1000);
        let start = (10_000 + idx).to_string();
        let doc = otlp_doc(&[(&id, None, "execute_tool Bash", Some(&start), Some(&start))]);
        // Every span exported twice (a retried export).
        text.push_str(&format!("{doc}\n{doc}\n"));
    }
    let got = events(&text);
    let repeats: Vec<usize> =
        got.iter().enumerate().filter(|(_, e)| e.data["repeated"] == json!(true)).map(|(at, _)| at).collect();
    assert_eq!(repeats.len(), window + window / 2);
    // The first repeats came out with the first half window, long before the end.
    assert!(repeats[0] < got.len() / 2, "first repeat at {} of {}", repeats[0], got.len());
}

/// A span open across the whole window (an agent's root span whose record comes first, as
/// in a trace written in order of start times, one span per line) leaves no point where no
/// span is open: its start goes out with the older half and it stays held, so its end still
/// comes after every call inside it and the calls are not marked out of order.
#[test]
fn otlp_a_span_open_across_full_windows_stays_around_its_children() {
    let window = super::otlp::ORDER_WINDOW_SPANS;
    let calls = 2 * window + window / 3;
    let end = (10 * (calls + 2)).to_string();
    // One line per span after `first`, the calls under `parent`.
    let trace = |first: &[SpanRow<'_>], parent: &str| {
        let mut text: String = first.iter().map(|row| otlp_doc(&[*row]) + "\n").collect();
        for idx in 0..calls {
            let id = format!("{:016x}", idx + 0x1000);
            let (start, stop) = ((10 * (idx + 1)).to_string(), (10 * (idx + 1) + 5).to_string());
            text.push_str(&otlp_doc(&[(&id, Some(parent), "execute_tool Bash", Some(&start), Some(&stop))]));
            text.push('\n');
        }
        text
    };
    let main = ("00000000000000a1", None, "invoke_agent main", Some("1"), Some(end.as_str()));
    let text = trace(&[main], "00000000000000a1");
    let got = events(&text);
    assert_eq!(got.len(), 2 * (calls + 1), "every span once: no start given out twice");
    assert_eq!((got[0].event_type, got[0].step_name.as_deref()), (EventType::AgentInvokeStart, Some("main")));
    let last = got.last().unwrap();
    assert_eq!((last.event_type, last.step_name.as_deref()), (EventType::AgentInvokeEnd, Some("main")));
    assert!(!got.iter().any(|e| e.attributes.contains_key(agentic_core::event::OUT_OF_ORDER)));
    let times: Vec<_> = got.iter().map(|e| e.timestamp).collect();
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "events in time order");
    let seqs: Vec<u64> = got.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=got.len() as u64).collect::<Vec<_>>());
    // A later run in the same file that numbers its span ids afresh: its agent, under the
    // carried agent's id, is not taken for the carried copy and dropped (where it goes among
    // the calls is not defined: span ids must be unique within a file).
    let (again, again_end) = ((10 * (calls + 3)).to_string(), (10 * (calls + 4)).to_string());
    let mut text = trace(&[main], "00000000000000a1");
    text.push_str(&otlp_doc(&[("00000000000000a1", None, "invoke_agent main", Some(&again), Some(&again_end))]));
    text.push('\n');
    let got = events(&text);
    assert_eq!(got.len(), 2 * (calls + 2));
    let starts = got.iter().filter(|e| e.event_type == EventType::AgentInvokeStart).count();
    assert_eq!(starts, 2, "both agents start once");
    // Nested: a sub-agent open across the cuts as well, its calls read after it.
    let helper = ("00000000000000a2", Some("00000000000000a1"), "invoke_agent helper", Some("2"), Some(end.as_str()));
    let text = trace(&[main, helper], "00000000000000a2");
    let got = events(&text);
    let names: Vec<_> = got.iter().map(|e| (e.event_type, e.step_name.as_deref())).collect();
    assert_eq!(names.len(), 2 * (calls + 2));
    assert_eq!(
        names[..2],
        [(EventType::AgentInvokeStart, Some("main")), (EventType::AgentInvokeStart, Some("helper"))]
    );
    assert_eq!(
        names[names.len() - 2..],
        [(EventType::AgentInvokeEnd, Some("helper")), (EventType::AgentInvokeEnd, Some("main"))]
    );
    assert!(!got.iter().any(|e| e.attributes.contains_key(agentic_core::event::OUT_OF_ORDER)));
}

/// A span exported again (a retried batch, or listed twice in one document) is one
/// `custom` event with `data.repeated: true`, so its call counts once; the same span id in
/// another trace is another span. The spans of the exports are ordered together; the
/// `custom` events follow them in the order they came.
#[test]
fn otlp_spans_exported_again_count_once() {
    use EventType::*;
    let first = otlp_doc(&[
        ("00000000000000a1", None, "execute_tool deploy", Some("1"), Some("2")),
        ("00000000000000a1", None, "execute_tool deploy", Some("1"), Some("2")),
    ]);
    let other_trace = first.replace("4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c");
    let text = format!("{first}\n{first}\n{other_trace}\n");
    let got: Vec<(EventType, Option<u64>, Option<bool>)> = events(&text)
        .iter()
        .map(|e| (e.event_type, e.source.as_ref().and_then(|s| s.line), e.data["repeated"].as_bool()))
        .collect();
    assert_eq!(
        got,
        vec![
            (ToolCallStart, Some(1), None),
            (ToolCallStart, Some(3), None),
            (ToolCallEnd, Some(1), None),
            (ToolCallEnd, Some(3), None),
            (Custom, Some(1), Some(true)),
            (Custom, Some(2), Some(true)),
            (Custom, Some(2), Some(true)),
            (Custom, Some(3), Some(true)),
        ]
    );
    let repeated = &events(&text)[4];
    assert_eq!(repeated.data["kind"], json!("tool_call_start"));
    assert!(repeated.source.as_ref().unwrap().raw.is_some(), "the raw span rides along");
    assert_parallel_agrees(text.as_bytes(), None);
}

/// An SDK that writes start times in whole milliseconds (the JS SDK) gives a quick run's
/// spans one start time: the span tree orders them (each span before the spans inside it,
/// a branch before the next), never their depth, so a call inside a sub-agent does not move
/// after a later call of the outer agent.
#[test]
fn otlp_spans_that_start_at_one_time_follow_the_span_tree() {
    let rows: [SpanRow<'_>; 4] = [
        ("00000000000000c3", Some("00000000000000c2"), "execute_tool Grep", Some("1000"), Some("1010")),
        ("00000000000000c2", Some("00000000000000c1"), "invoke_agent helper", Some("1000"), Some("1020")),
        ("00000000000000c4", Some("00000000000000c1"), "execute_tool Bash", Some("1000"), Some("1030")),
        ("00000000000000c1", None, "invoke_agent main", Some("1000"), Some("1040")),
    ];
    let expected = [
        "AgentInvokeStart main",
        "AgentInvokeStart helper",
        "ToolCallStart Grep",
        "ToolCallStart Bash",
        "ToolCallEnd Grep",
        "AgentInvokeEnd helper",
        "ToolCallEnd Bash",
        "AgentInvokeEnd main",
    ];
    let names = |text: &str| -> Vec<String> {
        events(text).iter().map(|e| format!("{:?} {}", e.event_type, e.step_name.as_deref().unwrap_or(""))).collect()
    };
    assert_eq!(names(&otlp_doc(&rows)), expected);
    let per_span: String = rows.iter().map(|row| otlp_doc(std::slice::from_ref(row)) + "\n").collect();
    assert_eq!(names(&per_span), expected);
    // A parent that ends as a span inside it starts (both at one time) ends after that start.
    let rows: [SpanRow<'_>; 2] = [
        ("00000000000000d2", Some("00000000000000d1"), "execute_tool Read", Some("2000"), Some("2000")),
        ("00000000000000d1", None, "invoke_agent main", Some("1000"), Some("2000")),
    ];
    assert_eq!(
        names(&otlp_doc(&rows)),
        ["AgentInvokeStart main", "ToolCallStart Read", "ToolCallEnd Read", "AgentInvokeEnd main"]
    );
}

/// A span that took no time (an end equal to its start, before it, or missing) still starts
/// before it ends, and spans inside it start and end inside it: each call is one call.
#[test]
fn otlp_spans_that_take_no_time_start_before_they_end() {
    use EventType::*;
    let text = otlp_doc(&[
        ("00000000000000b1", Some("00000000000000a1"), "execute_tool Bash", Some("5"), Some("5")),
        ("00000000000000a1", None, "invoke_agent coder", Some("5"), Some("5")),
        ("00000000000000b2", Some("00000000000000a1"), "execute_tool Read", Some("5"), Some("0")),
        ("00000000000000b3", None, "execute_tool Grep", Some("5"), None),
        ("00000000000000b4", None, "execute_tool Edit", Some("3"), Some("5")),
    ]);
    let got: Vec<(EventType, String)> =
        events(&text).iter().map(|e| (e.event_type, e.step_name.clone().unwrap_or_default())).collect();
    let expected = [
        (ToolCallStart, "Edit"),
        // At 5: the span that lasted ends first, then the starts, each span before the spans
        // inside it and a branch before the next (`coder` is listed before `Grep`), then the
        // ends of the spans that took no time, inner first.
        (ToolCallEnd, "Edit"),
        (AgentInvokeStart, "coder"),
        (ToolCallStart, "Bash"),
        (ToolCallStart, "Read"),
        (ToolCallStart, "Grep"),
        (ToolCallEnd, "Bash"),
        (ToolCallEnd, "Read"),
        (AgentInvokeEnd, "coder"),
        (ToolCallEnd, "Grep"),
    ];
    let expected: Vec<(EventType, String)> = expected.iter().map(|(t, n)| (*t, (*n).to_owned())).collect();
    assert_eq!(got, expected);
    // An end before the start is taken as the start: no negative durations.
    let read = events(&text).into_iter().filter(|e| e.step_name.as_deref() == Some("Read")).collect::<Vec<_>>();
    assert_eq!(read[0].timestamp, read[1].timestamp);
}

/// A span without a start time (or with `"0"`, protobuf's unset) is placed at its end, as a
/// span that took no time, and marked: at time 0 it would come before its siblings.
#[test]
fn otlp_a_span_without_a_start_is_placed_at_its_end() {
    use EventType::*;
    let text = otlp_doc(&[
        ("00000000000000a1", None, "invoke_agent planner", Some("1000"), Some("10000")),
        ("00000000000000b1", Some("00000000000000a1"), "execute_tool Read", Some("1000"), Some("2000")),
        ("00000000000000b2", Some("00000000000000a1"), "execute_tool Bash", None, Some("5000")),
        ("00000000000000b3", Some("00000000000000a1"), "execute_tool Grep", Some("0"), Some("6000")),
    ]);
    let got: Vec<(EventType, String, bool)> = events(&text)
        .iter()
        .map(|e| {
            let marked = e.attributes.contains_key(agentic_core::event::START_MISSING);
            (e.event_type, e.step_name.clone().unwrap_or_default(), marked)
        })
        .collect();
    let expected = [
        (AgentInvokeStart, "planner", false),
        (ToolCallStart, "Read", false),
        (ToolCallEnd, "Read", false),
        (ToolCallStart, "Bash", true),
        (ToolCallEnd, "Bash", false),
        (ToolCallStart, "Grep", true),
        (ToolCallEnd, "Grep", false),
        (AgentInvokeEnd, "planner", false),
    ];
    let expected: Vec<(EventType, String, bool)> = expected.iter().map(|(t, n, m)| (*t, (*n).to_owned(), *m)).collect();
    assert_eq!(got, expected);
}

/// Clocks of two processes disagree: a tool span that says it started 1 ms before its agent
/// (or ended after it) is still ordered inside the agent, as its parent id says; events keep
/// their own times, and a span whose start moves past its own end takes no time.
#[test]
fn otlp_children_whose_clock_is_off_stay_inside_their_parent() {
    use EventType::*;
    let text = otlp_doc(&[
        ("00000000000000a1", None, "invoke_agent researcher", Some("2000000"), Some("9000000")),
        ("00000000000000b1", Some("00000000000000a1"), "execute_tool search", Some("1000000"), Some("3000000")),
        ("00000000000000b2", Some("00000000000000a1"), "execute_tool fetch", Some("4000000"), Some("9500000")),
        ("00000000000000c1", Some("00000000000000b2"), "execute_tool inner", Some("100"), Some("200")),
        ("00000000000000d1", None, "execute_tool later", Some("9200000"), Some("9300000")),
    ]);
    let got = events(&text);
    let order: Vec<(EventType, String)> =
        got.iter().map(|e| (e.event_type, e.step_name.clone().unwrap_or_default())).collect();
    let expected = [
        (AgentInvokeStart, "researcher"),
        (ToolCallStart, "search"),
        (ToolCallEnd, "search"),
        (ToolCallStart, "fetch"),
        (ToolCallStart, "inner"),
        (ToolCallEnd, "inner"),
        (ToolCallStart, "later"),
        (ToolCallEnd, "later"),
        (ToolCallEnd, "fetch"),
        (AgentInvokeEnd, "researcher"),
    ];
    let expected: Vec<(EventType, String)> = expected.iter().map(|(t, n)| (*t, (*n).to_owned())).collect();
    assert_eq!(order, expected);
    let search = got.iter().find(|e| e.step_name.as_deref() == Some("search")).unwrap();
    assert_eq!(search.timestamp.timestamp_nanos_opt(), Some(1_000_000), "events keep their own times");
}

/// A remote sub-agent (another resource: another process, maybe another host) whose clock is
/// ahead of its caller's says it ran after its calling span ended, past the caller's next
/// call: it is moved back to end with the calling span, with its own calls. Within one
/// resource (one clock), for a messaging consumer, or beyond the bound, a span that starts
/// after its parent ended really ran then (a background task) and keeps its time.
#[test]
fn otlp_a_remote_child_whose_clock_is_ahead_stays_inside_its_caller() {
    let ms = |ms: u64| (ms * 1_000_000).to_string();
    let span = |id: &str, parent: Option<&str>, name: &str, start: u64, end: u64| {
        let mut span = json!({"traceId": TRACE_A, "spanId": id, "name": name,
                              "startTimeUnixNano": ms(start), "endTimeUnixNano": ms(end)});
        if let Some(parent) = parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    };
    let resource = |service: &str, spans: Vec<Value>| {
        json!({"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
               "scopeSpans": [{"spans": spans}]})
    };
    // The remote agent's clock is `ahead` ms ahead: it truly ran from 540 to 600 ms, inside
    // `call_remote` (100-600 ms), before `Write` (620 ms).
    let doc = |remote_service: &str, ahead: u64, kind: Option<u64>| {
        let mut agent =
            span("00000000000000b1", Some("00000000000000a2"), "invoke_agent searcher", 540 + ahead, 600 + ahead);
        if let Some(kind) = kind {
            agent["kind"] = json!(kind);
        }
        let remote = vec![
            agent,
            span("00000000000000b2", Some("00000000000000b1"), "execute_tool Grep", 545 + ahead, 560 + ahead),
            span("00000000000000b3", Some("00000000000000b1"), "execute_tool Bash", 565 + ahead, 590 + ahead),
        ];
        let caller = vec![
            span("00000000000000a1", None, "invoke_agent main", 1, 2000),
            span("00000000000000a2", Some("00000000000000a1"), "execute_tool call_remote", 100, 600),
            span("00000000000000a3", Some("00000000000000a1"), "execute_tool Write", 620, 650),
        ];
        json!({"resourceSpans": [resource("orchestrator", caller), resource(remote_service, remote)]}).to_string()
    };
    let starts = |text: &str| -> Vec<String> {
        events(text)
            .iter()
            .filter(|e| matches!(e.event_type, EventType::ToolCallStart | EventType::AgentInvokeStart))
            .filter_map(|e| e.step_name.clone())
            .collect()
    };
    let inside = ["main", "call_remote", "searcher", "Grep", "Bash", "Write"];
    for ahead in [0, 25, 100, 900] {
        assert_eq!(starts(&doc("searcher", ahead, None)), inside, "{ahead} ms ahead");
    }
    let text = doc("searcher", 100, None);
    let grep = events(&text).into_iter().find(|e| e.step_name.as_deref() == Some("Grep")).unwrap();
    assert_eq!(grep.timestamp.timestamp_nanos_opt(), Some(645_000_000), "events keep their own times");
    let after = ["main", "call_remote", "Write", "searcher", "Grep", "Bash"];
    // One resource is one clock: the agent really started after `Write`.
    assert_eq!(starts(&doc("orchestrator", 100, None)), after);
    // A messaging consumer (span kind 5) may start after its producer ended.
    assert_eq!(starts(&doc("searcher", 100, Some(5))), after);
    // More than a second after its caller ended is not read as a clock.
    assert_eq!(starts(&doc("searcher", 1_500, None)), after);
    assert_parallel_agrees(doc("searcher", 100, None).as_bytes(), None);
}

/// A span of [`otlp_doc_in_traces`]: `(trace, span id, parent id, name, start, end)`.
type TraceSpan<'a> = (&'a str, &'a str, Option<&'a str>, String, u64, u64);

/// One OTLP document of `spans`.
fn otlp_doc_in_traces(spans: &[TraceSpan<'_>]) -> String {
    let spans: Vec<Value> = spans
        .iter()
        .map(|(trace, id, parent, name, start, end)| {
            let mut span = json!({"traceId": trace, "spanId": id, "name": name,
                                  "startTimeUnixNano": start.to_string(), "endTimeUnixNano": end.to_string()});
            if let Some(parent) = parent {
                span["parentSpanId"] = json!(parent);
            }
            span
        })
        .collect();
    otlp_export(spans)
}

const TRACE_A: &str = "11111111111111111111111111111111";
const TRACE_B: &str = "22222222222222222222222222222222";

/// Siblings whose clocks both run ahead of their parent are ordered by their own times, not
/// by where the export lists them; a parent id is looked up in its span's own trace (the same
/// span id in another trace of the export is another span).
#[test]
fn otlp_order_follows_times_and_traces_not_the_listing() {
    let name = |text: &str| text.to_owned();
    let agent = (TRACE_A, "00000000000000a1", None, name("invoke_agent coder"), 1000, 2000);
    let search = (TRACE_A, "00000000000000b1", Some("00000000000000a1"), name("execute_tool search"), 900, 1500);
    let edit = (TRACE_A, "00000000000000b2", Some("00000000000000a1"), name("execute_tool edit"), 950, 1600);
    let names = |text: &str| -> Vec<String> {
        events(text)
            .iter()
            .filter(|e| e.event_type == EventType::ToolCallStart)
            .filter_map(|e| e.step_name.clone())
            .collect()
    };
    for listing in
        [[&agent, &search, &edit], [&agent, &edit, &search], [&edit, &search, &agent], [&search, &agent, &edit]]
    {
        let spans: Vec<_> = listing.iter().map(|&span| span.clone()).collect();
        assert_eq!(names(&otlp_doc_in_traces(&spans)), ["search", "edit"], "{spans:?}");
    }
    // `search` names a parent id that only a span of another trace has: it is not inside
    // that span, so its own (earlier) time orders it.
    let other = (TRACE_B, "0000000000000001", None, name("execute_tool edit"), 300, 400);
    let orphan = (TRACE_A, "0000000000000002", Some("0000000000000001"), name("execute_tool search"), 50, 60);
    assert_eq!(names(&otlp_doc_in_traces(&[other.clone(), orphan.clone()])), ["search", "edit"]);
    assert_eq!(names(&otlp_doc_in_traces(&[orphan, other])), ["search", "edit"]);
}

proptest! {
    // Cheap cases, and the clock skew that matters (siblings both before their parent) is
    // one shape among many: enough cases to meet it.
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]
    /// Whatever order an export lists its spans in, the events come out in one order (spans
    /// have distinct times here; with equal times the listing breaks the tie). Starts are
    /// never 0: that is OTLP's unset time, and such a span is placed at its end, which may
    /// be another span's start.
    #[test]
    fn otlp_event_order_does_not_depend_on_the_listing(
        shape in proptest::collection::vec((proptest::option::of(0usize..6), 1u64..1000, 1u64..500, proptest::bool::ANY), 1..7),
        listing in Just((0..6usize).collect::<Vec<_>>()).prop_shuffle(),
    ) {
        let distinct = |times: &[u64]| times.iter().collect::<std::collections::HashSet<_>>().len() == times.len();
        let starts: Vec<u64> = shape.iter().map(|s| s.1).collect();
        let ends: Vec<u64> = shape.iter().map(|s| s.1 + s.2).collect();
        prop_assume!(distinct(&starts) && distinct(&ends));
        let ids: Vec<String> = (0..shape.len()).map(|i| format!("{:016x}", i + 1)).collect();
        let spans: Vec<TraceSpan<'_>> = shape
            .iter()
            .enumerate()
            .map(|(i, (parent, start, _, other_trace))| {
                // A parent among the earlier spans (no loops); some spans sit in a second trace.
                let parent = parent.filter(|&p| p < i).map(|p| ids[p].as_str());
                let trace = if *other_trace { TRACE_B } else { TRACE_A };
                (trace, ids[i].as_str(), parent, format!("execute_tool t{i}"), *start, ends[i])
            })
            .collect();
        let order = |spans: &[TraceSpan<'_>]| -> Vec<(EventType, Option<String>)> {
            events(&otlp_doc_in_traces(spans)).into_iter().map(|e| (e.event_type, e.step_name)).collect()
        };
        // The same spans listed in another order (the shuffled positions that exist).
        let shuffled: Vec<TraceSpan<'_>> =
            listing.iter().filter(|&&at| at < spans.len()).map(|&at| spans[at].clone()).collect();
        prop_assert_eq!(order(&shuffled), order(&spans));
    }
}

/// A span without `traceId` or with a time outside OTLP's unsigned nanoseconds is malformed.
#[test]
fn otlp_spans_need_a_trace_id_and_unsigned_times() {
    let no_trace = otlp_doc(&[("00000000000000b1", None, "execute_tool Bash", Some("1"), Some("2"))])
        .replace("\"traceId\":\"4bf92f3577b34da6a3ce929d0e0e4736\",", "");
    let got = read(&no_trace, None);
    let error = got.iter().find_map(|r| r.as_ref().err()).expect("an error");
    assert!(error.message.contains("missing `traceId`"), "{error}");
    for time in ["-5", "99999999999999999999999"] {
        let text = otlp_doc(&[("00000000000000b1", None, "execute_tool Bash", Some(time), Some("2"))]);
        let got = read(&text, None);
        let error = got.iter().find_map(|r| r.as_ref().err()).expect("an error");
        assert!(error.message.contains("is not a whole number of nanoseconds since 1970"), "{time}: {error}");
    }
}

/// Invalid JSON inside a document spread over lines names the file's line of the fault.
#[test]
fn invalid_json_in_a_multi_line_document_names_the_file_line() {
    let text = "\n{\n  \"resourceSpans\": [\n    {\"a\": 1 \"b\": 2}\n  ]\n}\n";
    let got = read(text, Some(TraceFormat::OtlpJson));
    let error = got.iter().find_map(|r| r.as_ref().err()).expect("an error");
    assert_eq!(error.line, 2, "{error}");
    assert!(error.message.ends_with("at line 4 column 13"), "{error}");
}

/// An empty batch (`[]`) holds no record: it is no error and tells no format.
#[test]
fn an_empty_batch_is_no_record() {
    let text = format!("[]\n{}\n", otlp_doc(&[("00000000000000b1", None, "execute_tool Bash", Some("1"), Some("2"))]));
    let got = read(&text, None);
    assert!(got.iter().all(Result::is_ok), "{got:?}");
    assert_eq!(got.len(), 2);
}

/// A subagent resumed under a second `Task` (the same `agent_id` starts again after its stop)
/// is a new run linked to that call; a start while it runs, or a second stop, is a repeat.
#[test]
fn claude_hook_resumed_subagents_start_again_under_their_new_call() {
    let text = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"first"},"tool_use_id":"k1"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"g1","agent_type":"rev"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"g1","agent_type":"rev"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"g1","agent_type":"rev"}
{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"g1","agent_type":"rev"}
{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev"},"tool_use_id":"k1"}
{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"continue"},"tool_use_id":"k2"}
{"session_id":"s","hook_event_name":"SubagentStart","agent_id":"g1","agent_type":"rev"}
"#;
    assert_eq!(spawned(text), owned_links(&[("g1", Some("k1")), ("g1", Some("k2"))]));
    let types: Vec<EventType> = events(text).iter().map(|e| e.event_type).collect();
    use EventType::*;
    assert_eq!(
        types,
        vec![
            ToolCallStart,
            AgentInvokeStart,
            Custom,
            AgentInvokeEnd,
            Custom,
            ToolCallEnd,
            ToolCallStart,
            AgentInvokeStart
        ]
    );
}

/// A capture hook registered twice writes every record twice (both hooks run for each event,
/// so the copies come before the next event of the call): a second start of a call in
/// flight, or an end of a call that ended, is kept as a `custom` event (`data.repeated`), not
/// a call. A start of an id whose call ended is a new call: hiding it could hide a call a
/// `never` rule is about.
#[test]
fn claude_hook_repeated_tool_records_are_not_calls() {
    let pre = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t2"}"#;
    let post = r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t2"}"#;
    let other_session = post.replace("\"s\"", "\"other\"");
    let reused = pre.replace("\"ls\"", "\"rm -rf /\"");
    let reused_end = post.replace("\"ls\"", "\"rm -rf /\"");
    let text = [pre, pre, post, post, &other_session, &reused, &reused, &reused_end, &reused_end, post].join("\n");
    let got = events(&text);
    let types: Vec<EventType> = got.iter().map(|e| e.event_type).collect();
    use EventType::*;
    assert_eq!(
        types,
        vec![
            ToolCallStart,
            Custom,
            ToolCallEnd,
            Custom,
            ToolCallEnd,
            ToolCallStart,
            Custom,
            ToolCallEnd,
            Custom,
            Custom
        ]
    );
    assert_eq!(got[1].data["repeated"], json!(true));
    assert_eq!(got[1].data["kind"], json!("PreToolUse"));
    assert_eq!(got[5].data["input"]["command"], json!("rm -rf /"));
}

/// The window of ended calls forgets the oldest first, by the number of its end: a call id
/// that ended, started again and ended again stays known as ended after its first end leaves.
#[test]
fn claude_hook_ended_calls_are_remembered_by_their_latest_end() {
    let record = |hook: &str, id: &str| {
        format!(
            r#"{{"session_id":"s","hook_event_name":"{hook}","tool_name":"Read","tool_input":{{}},"tool_use_id":"{id}"}}"#
        )
    };
    let mut lines = vec![record("PreToolUse", "a"), record("PostToolUse", "a")];
    lines.push(record("PreToolUse", "a"));
    lines.push(record("PostToolUse", "a"));
    // Push the first end of `a` out of the window; its second end is still in it.
    for idx in 0..super::ends::ENDED_TOOLS_WINDOW - 1 {
        lines.push(record("PostToolUse", &format!("x{idx}")));
    }
    lines.push(record("PostToolUse", "a"));
    let got = events(&lines.join("\n"));
    let last = got.last().unwrap();
    assert_eq!(last.event_type, EventType::Custom, "{last:?}");
    assert_eq!(last.data["repeated"], json!(true));
}

/// An OTLP span that gives an attribute twice, or whose tool arguments repeat a key, means
/// two things: it is malformed (named, with the document's other spans read), never read as
/// its last value.
#[test]
fn otlp_spans_with_repeated_attributes_or_argument_keys_are_malformed() {
    let arguments = r#"{\"location\":\"Paris\"}"#;
    for (bad, expected) in [
        (
            OTLP.replacen(arguments, r#"{\"location\":\"Paris\",\"location\":\"Rome\"}"#, 1),
            "`gen_ai.tool.call.arguments`: duplicate key `location`",
        ),
        (
            OTLP.replacen(
                r#"{"key":"gen_ai.tool.call.arguments""#,
                r#"{"key":"gen_ai.tool.name","value":{"stringValue":"noop"}},{"key":"gen_ai.tool.call.arguments""#,
                1,
            ),
            "attribute `gen_ai.tool.name` is given twice",
        ),
    ] {
        assert_ne!(bad, OTLP);
        let got = read(&bad, None);
        let errors: Vec<&TraceError> = got.iter().filter_map(|r| r.as_ref().err()).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].message.contains(expected), "{}", errors[0].message);
        assert!(got.iter().any(|r| r.is_ok()), "the other spans are read");
    }
}

/// A resource that gives an attribute twice costs its own spans (said, with their number),
/// not the document's other resources.
#[test]
fn otlp_resource_with_a_repeated_attribute_costs_only_its_spans() {
    let service = r#"{"key":"service.name","value":{"stringValue":"agent"}}"#;
    let doubled = OTLP.replacen(service, &format!("{service},{service}"), 1);
    assert_ne!(doubled, OTLP);
    // A second resource, with one tool span of its own, after the bad one.
    let other = OTLP_ONE_SPAN.strip_prefix(r#"{"resourceSpans":["#).and_then(|rest| rest.strip_suffix("]}")).unwrap();
    let first = doubled.trim_end().strip_suffix("]}").unwrap();
    let document = format!("{first},{other}]}}");
    let got = read(&document, None);
    let errors: Vec<&TraceError> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].message.contains("`resourceSpans[0].resource`: attribute `service.name` is given twice; its"),
        "{}",
        errors[0].message
    );
    let names: Vec<String> =
        got.iter().filter_map(|r| r.as_ref().ok()).filter_map(|event| event.step_name.clone()).collect();
    assert_eq!(names, vec!["Read".to_owned(), "Read".to_owned()], "only the second resource's span is read");
}

/// A call id reused by another call never hides it: an end of another tool than the call in
/// flight under its id is a call of its own (Claude Code hooks and tooltrace v2), and so is a
/// second start or a late end under that id with another tool or input; only a record that
/// repeats one read before (the same tool and input) is a repeat. The same for OTLP: another
/// span under a trace and span id already read is a span of its own.
#[test]
fn a_reused_call_id_never_hides_another_call() {
    let hook = |event: &str, tool: &str, input: &str, id: &str| {
        format!(
            r#"{{"session_id":"s","hook_event_name":"{event}","tool_name":"{tool}","tool_input":{input},"tool_use_id":"{id}"}}"#
        )
    };
    // (records, the (type, tool, span id) of every event that is not a repeat)
    type Call<'a> = (EventType, &'a str, &'a str);
    let read = r#"{"file_path":"/a"}"#;
    let rm = r#"{"command":"rm -rf /"}"#;
    let cases: Vec<(Vec<String>, Vec<Call<'_>>)> = vec![
        // The end of another tool than the call in flight.
        (
            vec![
                hook("PreToolUse", "Grep", "{}", "u2"),
                hook("PostToolUse", "Bash", rm, "u2"),
                hook("PostToolUse", "Grep", "{}", "u2"),
            ],
            vec![
                (EventType::ToolCallStart, "Grep", "u2"),
                (EventType::ToolCallEnd, "Bash", "u2#L2"),
                (EventType::ToolCallEnd, "Grep", "u2"),
            ],
        ),
        // A second start of a call in flight with another tool.
        (
            vec![hook("PreToolUse", "Read", read, "u1"), hook("PreToolUse", "Bash", rm, "u1")],
            vec![(EventType::ToolCallStart, "Read", "u1"), (EventType::ToolCallStart, "Bash", "u1#2")],
        ),
        // An end of a call that ended, with another tool: a call of its own.
        (
            vec![
                hook("PreToolUse", "Read", read, "u1"),
                hook("PostToolUse", "Read", read, "u1"),
                hook("PostToolUse", "Bash", rm, "u1"),
            ],
            vec![
                (EventType::ToolCallStart, "Read", "u1"),
                (EventType::ToolCallEnd, "Read", "u1"),
                (EventType::ToolCallEnd, "Bash", "u1#2"),
            ],
        ),
        // Two calls in flight under one id: each end ends its own (same input, else same tool).
        (
            vec![
                hook("PreToolUse", "Read", read, "u1"),
                hook("PreToolUse", "Bash", rm, "u1"),
                hook("PostToolUse", "Read", read, "u1"),
                hook("PostToolUse", "Bash", rm, "u1"),
            ],
            vec![
                (EventType::ToolCallStart, "Read", "u1"),
                (EventType::ToolCallStart, "Bash", "u1#2"),
                (EventType::ToolCallEnd, "Read", "u1"),
                (EventType::ToolCallEnd, "Bash", "u1#2"),
            ],
        ),
        (
            vec![
                hook("PreToolUse", "Read", read, "u1"),
                hook("PreToolUse", "Read", r#"{"file_path":"/b"}"#, "u1"),
                hook("PostToolUse", "Read", read, "u1"),
                hook("PostToolUse", "Read", r#"{"file_path":"/b"}"#, "u1"),
            ],
            vec![
                (EventType::ToolCallStart, "Read", "u1"),
                (EventType::ToolCallStart, "Read", "u1#2"),
                (EventType::ToolCallEnd, "Read", "u1"),
                (EventType::ToolCallEnd, "Read", "u1#2"),
            ],
        ),
        // The end may carry an input a PreToolUse hook rewrote: still the end of its call.
        (
            vec![
                hook("PreToolUse", "Bash", r#"{"command":"ls"}"#, "u3"),
                hook("PostToolUse", "Bash", r#"{"command":"ls -a"}"#, "u3"),
            ],
            vec![(EventType::ToolCallStart, "Bash", "u3"), (EventType::ToolCallEnd, "Bash", "u3")],
        ),
        // ... and of several in flight of its tool, the latest (an older one is more likely a
        // start a crashed run left open).
        (
            vec![
                hook("PreToolUse", "Bash", r#"{"command":"ls"}"#, "u3"),
                hook("PreToolUse", "Bash", r#"{"command":"git status"}"#, "u3"),
                hook("PostToolUse", "Bash", r#"{"command":"git status; rm x"}"#, "u3"),
            ],
            vec![
                (EventType::ToolCallStart, "Bash", "u3"),
                (EventType::ToolCallStart, "Bash", "u3#2"),
                (EventType::ToolCallEnd, "Bash", "u3#2"),
            ],
        ),
    ];
    for (records, expected) in cases {
        let got = events(&records.join("\n"));
        let calls: Vec<Call<'_>> = got
            .iter()
            .filter(|event| event.event_type != EventType::Custom)
            .map(|event| {
                let span = event.span.as_ref().and_then(|span| span.span_id.as_deref()).unwrap_or_default();
                (event.event_type, event.step_name.as_deref().unwrap_or_default(), span)
            })
            .collect();
        assert_eq!(calls, expected, "{records:?}");
        assert!(got.iter().all(|event| event.data.get("repeated").is_none()), "{got:?}");
    }
    // The calls a record stands for, after the repeats: (starts, ends) that are not repeats.
    let counted = |records: &[String]| {
        let got = events(&records.join("\n"));
        let count = |kind: EventType| got.iter().filter(|e| e.event_type == kind).count();
        (count(EventType::ToolCallStart), count(EventType::ToolCallEnd))
    };
    // An end written twice never closes another call of its tool still in flight.
    let b = r#"{"file_path":"/b"}"#;
    let records = [
        hook("PreToolUse", "Read", read, "u1"),
        hook("PreToolUse", "Read", b, "u1"),
        hook("PostToolUse", "Read", b, "u1"),
        hook("PostToolUse", "Read", b, "u1"),
        hook("PostToolUse", "Read", read, "u1"),
    ];
    assert_eq!(counted(&records), (2, 2));
    // A call made again under a reused id, its input rewritten the same way (PreToolUse `ls`,
    // PostToolUse `rm`, twice): the second end ends the second call, it is no copy of the
    // first; an end written twice is still one, also when it repeats a rewritten end.
    let pre = hook("PreToolUse", "Bash", r#"{"command":"ls"}"#, "u1");
    let post = hook("PostToolUse", "Bash", r#"{"command":"rm -rf x"}"#, "u1");
    assert_eq!(counted(&[pre.clone(), post.clone(), pre.clone(), post.clone()]), (2, 2));
    assert_eq!(counted(&[pre.clone(), pre, post.clone(), post]), (1, 1));
    // Key order in the input does not make another call (writers order keys differently).
    let records = [
        hook("PreToolUse", "Read", r#"{"file_path":"/a","limit":1}"#, "u1"),
        hook("PreToolUse", "Read", r#"{"limit":1,"file_path":"/a"}"#, "u1"),
    ];
    assert_eq!(counted(&records), (1, 0));
    // An id reused for many calls, every record written twice: each call counts once.
    let mut records = Vec::new();
    for idx in 0..12 {
        let input = format!(r#"{{"file_path":"/{idx}"}}"#);
        for _ in 0..2 {
            records.push(hook("PreToolUse", "Read", &input, "u1"));
        }
        for _ in 0..2 {
            records.push(hook("PostToolUse", "Read", &input, "u1"));
        }
    }
    assert_eq!(counted(&records), (12, 12));
    // The same record written by two agents is two calls, not a copy.
    let in_agent = |agent: &str| {
        let record = hook("PostToolUse", "Bash", rm, "u9");
        format!("{},\"agent_id\":\"{agent}\"}}", &record[..record.len() - 1])
    };
    let records = [in_agent("a1"), in_agent("a1"), in_agent("a2")];
    assert_eq!(counted(&records), (0, 2));
    // An end of another agent under the id of a call in flight is a call of its own: the
    // call in flight ends at its own end.
    let main = hook("PreToolUse", "Bash", rm, "u8");
    let main_end = hook("PostToolUse", "Bash", rm, "u8");
    let agent_end = format!("{},\"agent_id\":\"a1\"}}", &main_end[..main_end.len() - 1]);
    let got = events(&[main, agent_end, main_end].join("\n"));
    let spans: Vec<(EventType, &str)> = got
        .iter()
        .map(|e| (e.event_type, e.span.as_ref().and_then(|s| s.span_id.as_deref()).unwrap_or_default()))
        .collect();
    assert_eq!(
        spans,
        vec![(EventType::ToolCallStart, "u8"), (EventType::ToolCallEnd, "u8#L2"), (EventType::ToolCallEnd, "u8")]
    );
    // A stray end written twice (a hook registered twice) is one call.
    let records = [
        hook("PreToolUse", "Read", read, "u1"),
        hook("PostToolUse", "Bash", rm, "u1"),
        hook("PostToolUse", "Bash", rm, "u1"),
        hook("PostToolUse", "Read", read, "u1"),
    ];
    let got = events(&records.join("\n"));
    let kinds: Vec<(EventType, Option<&str>)> = got.iter().map(|e| (e.event_type, e.step_name.as_deref())).collect();
    assert_eq!(
        kinds,
        vec![
            (EventType::ToolCallStart, Some("Read")),
            (EventType::ToolCallEnd, Some("Bash")),
            (EventType::Custom, None),
            (EventType::ToolCallEnd, Some("Read"))
        ]
    );
    // Tooltrace v2: a `post` of another tool than the `pre` in flight under its `tool_use_id`.
    let text = r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Read","phase":"pre","tool_use_id":"q1","args":{"file_path":"/a"}}
{"timestamp":"2026-02-19T10:00:01Z","tool_name":"Bash","phase":"post","tool_use_id":"q1","args":{"command":"rm -rf /"}}
{"timestamp":"2026-02-19T10:00:02Z","tool_name":"Read","phase":"post","tool_use_id":"q1","args":{"file_path":"/a"}}"#;
    let spans: Vec<(String, String)> = events(text)
        .iter()
        .map(|event| (event.step_name.clone().unwrap(), event.span.as_ref().unwrap().span_id.clone().unwrap()))
        .collect();
    let owned =
        |pairs: &[(&str, &str)]| pairs.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect::<Vec<_>>();
    assert_eq!(spans, owned(&[("Read", "q1"), ("Bash", "q1#L2"), ("Read", "q1")]));
    // Two calls in flight under one `tool_use_id`: each `post` ends its own tool's `pre`.
    let text = r#"{"tool_name":"Read","phase":"pre","tool_use_id":"q1"}
{"tool_name":"Bash","phase":"pre","tool_use_id":"q1"}
{"tool_name":"Bash","phase":"post","tool_use_id":"q1"}
{"tool_name":"Read","phase":"post","tool_use_id":"q1"}"#;
    let spans: Vec<(String, String)> = events(text)
        .iter()
        .map(|event| (event.step_name.clone().unwrap(), event.span.as_ref().unwrap().span_id.clone().unwrap()))
        .collect();
    assert_eq!(spans, owned(&[("Read", "q1"), ("Bash", "q1#L2"), ("Bash", "q1#L2"), ("Read", "q1")]));
    // Two calls of one tool in flight under one id: each `post` ends the `pre` with its
    // arguments, whatever the order.
    let text = r#"{"tool_name":"Read","phase":"pre","tool_use_id":"q1","args":{"file_path":"/a"}}
{"tool_name":"Read","phase":"pre","tool_use_id":"q1","args":{"file_path":"/b"}}
{"tool_name":"Read","phase":"post","tool_use_id":"q1","args":{"file_path":"/a"}}
{"tool_name":"Read","phase":"post","tool_use_id":"q1","args":{"file_path":"/b"}}"#;
    let spans: Vec<String> =
        events(text).iter().map(|event| event.span.as_ref().unwrap().span_id.clone().unwrap()).collect();
    assert_eq!(spans, vec!["q1", "q1#L2", "q1", "q1#L2"]);
    // OTLP: the same ids, another span (another tool, later): both are calls; the same span
    // exported again is a repeat.
    let span = |name: &str, start: u64| {
        format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"a000000000000001","name":"execute_tool {name}","startTimeUnixNano":"{start}","endTimeUnixNano":"{}"}}]}}]}}]}}"#,
            start + 10
        )
    };
    let text = [span("Read", 100), span("Bash", 200), span("Bash", 200)].join("\n");
    let got = events(&text);
    let starts: Vec<&str> = got
        .iter()
        .filter(|e| e.event_type == EventType::ToolCallStart)
        .filter_map(|e| e.step_name.as_deref())
        .collect();
    assert_eq!(starts, vec!["Read", "Bash"]);
    assert_eq!(got.iter().filter(|e| e.data.get("repeated") == Some(&json!(true))).count(), 1, "{got:?}");
}

/// JSON nested deeper than the reader follows is valid JSON: the record is skipped with a
/// message that says why, not "invalid JSON".
#[test]
fn a_record_nested_too_deep_says_so() {
    let deep = format!(
        "{{\"tool_name\":\"Bash\",\"trace_id\":\"t1\",\"args\":{{\"command\":\"rm -rf /\",\"x\":{}{}}}}}\n",
        "[".repeat(130),
        "]".repeat(130)
    );
    let got = read(&deep, None);
    let message = got[0].as_ref().unwrap_err().to_string();
    assert!(message.starts_with("line 1: nested more than 128 levels deep"), "{message}");
    assert!(!message.contains("invalid JSON"), "{message}");
}

/// A lone UTF-16 surrogate escape (Claude Code runs on Node, whose `JSON.stringify` writes a
/// string cut inside an emoji that way) does not cost the record: it reads as U+FFFD.
#[test]
fn a_lone_surrogate_escape_reads_as_the_replacement_character() {
    let text = "{\"session_id\":\"s\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"echo \\ud83d; rm -rf /\"},\"tool_use_id\":\"u1\"}\n\
                {\"tool_name\":\"Bash\",\"trace_id\":\"t1\",\"args\":{\"command\":\"\\udc00 rm -rf /\"}}\n";
    let hook = read(text.lines().next().unwrap(), None);
    let event = hook[0].as_ref().expect("the record is read");
    assert_eq!(event.data["input"]["command"], json!("echo \u{fffd}; rm -rf /"));
    let tooltrace = text.lines().nth(1).unwrap();
    let got = read(tooltrace, None);
    assert_eq!(got[0].as_ref().unwrap().data["input"]["command"], json!("\u{fffd} rm -rf /"));
    assert_parallel_agrees(format!("{tooltrace}\n{tooltrace}\n").as_bytes(), None);
}

/// A hook name in another case is malformed with the right spelling suggested (read as an
/// unknown hook, its call would be lost); an OTLP span without a name, or with `null`
/// (protobuf's JSON mapping reads both as the empty name), is still a call by its
/// `gen_ai.tool.name`.
#[test]
fn misspelt_hook_names_are_malformed_and_nameless_otlp_spans_are_read() {
    let text =
        r#"{"session_id":"s","hook_event_name":"pretooluse","tool_name":"Bash","tool_input":{},"tool_use_id":"u1"}"#;
    for spelled in ["pretooluse", "pre_tool_use", "PreToolUse ", "Pre-Tool-Use"] {
        let text = text.replace("pretooluse", spelled);
        let message = read(&text, Some(TraceFormat::ClaudeHook))[0].as_ref().unwrap_err().to_string();
        assert!(message.contains("did you mean \"PreToolUse\""), "{spelled}: {message}");
    }
    for name in ["\"name\":null,", ""] {
        let text = format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"a000000000000001",{name}"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{{"key":"gen_ai.tool.name","value":{{"stringValue":"Bash"}}}}]}}]}}]}}]}}"#
        );
        let got = events(&text);
        assert_eq!(got[0].event_type, EventType::ToolCallStart, "{name}: {got:?}");
        assert_eq!(got[0].step_name.as_deref(), Some("Bash"), "{name}");
    }
}

/// OTLP tool arguments are JSON text inside the span: a lone surrogate escape in that text
/// reads as U+FFFD too; and a span exported again is not a second call without arguments.
#[test]
fn otlp_argument_text_with_a_lone_surrogate_is_read_and_repeats_are_not_counted_as_calls() {
    let span = |arguments: Option<&str>| {
        let mut attributes = vec![json!({"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}})];
        if let Some(text) = arguments {
            attributes.push(json!({"key": "gen_ai.tool.call.arguments", "value": {"stringValue": text}}));
        }
        json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": "a000000000000001", "name": "execute_tool Bash", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": attributes}]}]}]})
        .to_string()
    };
    let got = events(&span(Some(r#"{"command":"echo \ud83d rm -rf /"}"#)));
    assert_eq!(got[0].data["input"]["command"], json!("echo \u{fffd} rm -rf /"));
    let once = span(None);
    let got = events(&[once.as_str(), once.as_str()].join("\n"));
    // The copy is no call (so not a second call without arguments either).
    let calls = got.iter().filter(|e| e.event_type == EventType::ToolCallStart).count();
    assert_eq!(calls, 1, "{got:?}");
    assert!(got.iter().any(|e| e.event_type == EventType::Custom && e.data["repeated"] == json!(true)), "{got:?}");
}

/// A pretty-printed list cut short by a crash, or broken part way, keeps its whole elements:
/// each is read as the record it is, at the line it starts, and the line count goes on after
/// the list; only the broken part is the malformed record. By the iterator and by the
/// parallel reader alike.
#[test]
fn a_broken_pretty_list_keeps_its_whole_elements() {
    let names = |text: &str| lines_and_names(&read(text, None));
    // `json.dumps(records, indent=2)` cut inside its third element.
    let cut = "[\n  {\n    \"tool_name\": \"Read\",\n    \"trace_id\": \"a\"\n  },\n  {\n    \"tool_name\": \"Bash\",\n    \"args\": {\"command\": \"ls\"}\n  },\n  {\n    \"tool_name\": \"Ed";
    assert_eq!(names(cut), vec![Err(1), Ok((2, "Read".to_owned())), Ok((6, "Bash".to_owned()))]);
    let error = read(cut, None).into_iter().find_map(Result::err).unwrap().message;
    assert!(error.contains("not closed before the end of the file; its 2 whole elements (lines 2-9)"), "{error}");
    // A list broken in its second element, closed, then more records: the third element
    // and the record after the list keep their lines.
    let broken = "[\n  {\"tool_name\": \"Read\",\n   \"trace_id\": \"a\"},\n  {\"tool_name\": oops},\n  {\"tool_name\": \"Edit\", \"trace_id\": \"c\"}\n]\n{\"tool_name\":\"Write\",\"trace_id\":\"d\"}\n";
    assert_eq!(
        names(broken),
        vec![Err(1), Ok((2, "Read".to_owned())), Ok((5, "Edit".to_owned())), Ok((7, "Write".to_owned()))]
    );
    // A cut list whose elements are records of one line and of several, with a `,` missing.
    let mixed = "[\n{\"tool_name\":\"Read\",\"trace_id\":\"a\"},\n{\n  \"tool_name\": \"Bash\",\n  \"trace_id\": \"c\"\n}\n{\"tool_name\":\"Write\",\"trace_id\":\"d\"}\n";
    assert_eq!(
        names(mixed),
        vec![Err(1), Ok((2, "Read".to_owned())), Ok((3, "Bash".to_owned())), Ok((7, "Write".to_owned()))]
    );
    // Nothing whole: one malformed record, nothing given back.
    assert_eq!(names("[\n  {\n    \"tool_name\": \"Re"), vec![Err(1)]);
    for text in [cut, broken, mixed] {
        assert_parallel_agrees(text.as_bytes(), None);
    }
}

/// A list that went wrong in other ways still gives back every whole record it took in:
/// broken part way on one line; an element that lost its closing bracket, before whole
/// one-line elements and a record after the list; a string left open in a pretty-printed
/// element; a pretty-printed element that lost its closing line.
#[test]
fn a_broken_list_gives_back_every_whole_record() {
    let names = |text: &str| lines_and_names(&read(text, None));
    // One malformed record (the list, at line 1), then these records at their lines; the
    // parallel reader agrees.
    let gives = |text: &str, records: &[(u64, &str)]| {
        let records = records.iter().map(|&(line, name)| Ok((line, name.to_owned())));
        assert_eq!(names(text), std::iter::once(Err(1)).chain(records).collect::<Vec<_>>(), "{text}");
        assert_parallel_agrees(text.as_bytes(), None);
    };
    let says = |text: &str, wanted: &str| {
        let message = read(text, None).into_iter().find_map(Result::err).unwrap().message;
        assert!(message.contains(wanted), "{message}");
    };
    let one_line = "[{\"tool_name\": \"Bash\"}, {\"tool_name\": \"Read\", \"args\": {\"k\" 1}}, {\"tool_name\": \"Grep\"}]\n{\"tool_name\": \"Edit\"}\n";
    gives(one_line, &[(1, "Bash"), (1, "Grep"), (2, "Edit")]);
    says(one_line, "its 2 whole elements (line 1) are read as records of their own");
    let unclosed = "[\n{\"tool_name\": \"Bash\", \"args\": {\"k\": 1},\n{\"tool_name\": \"Read\"},\n{\"tool_name\": \"Edit\"}\n]\n{\"tool_name\": \"Write\"}\n";
    gives(unclosed, &[(3, "Read"), (4, "Edit"), (6, "Write")]);
    says(unclosed, "its 2 whole elements and the 1 record after its `]` (lines 3-6) are read");
    let open_string = "[\n  {\n    \"tool_name\": \"Bash\",\n    \"args\": {\"k\": \"1 }\n  },\n  {\n    \"tool_name\": \"Read\"\n  },\n  {\n    \"tool_name\": \"Edit\"\n  }\n]\n{\"tool_name\": \"Write\"}\n";
    gives(open_string, &[(6, "Read"), (9, "Edit"), (13, "Write")]);
    let lost_line = "[\n  {\n    \"tool_name\": \"Bash\",\n    \"args\": {\"k\": 1}\n  {\n    \"tool_name\": \"Read\"\n  },\n  {\n    \"tool_name\": \"Edit\"\n  }\n]\n";
    gives(lost_line, &[(5, "Read"), (8, "Edit")]);
    // A record in the first column, over lines, after a cut indented list.
    gives(
        "[\n  {\n    \"tool_name\": \"Read\"\n  },\n  {\n    \"tool_name\": \"Ba\n{\n  \"tool_name\": \"Edit\"\n}\n{\"tool_name\": \"Write\"}\n",
        &[(2, "Read"), (7, "Edit"), (10, "Write")],
    );
    // An element that lost its opening line: its members and nested objects are no records.
    let lost_open = "[\n  {\n    \"tool_name\": \"Read\"\n  },\n    \"tool_name\": \"Bash\",\n    \"args\": {\n      \"x\": [\n        {\n          \"tool_name\": \"Nested\"\n        }\n      ]\n    }\n  },\n  {\n    \"tool_name\": \"Edit\"\n  }\n]\n";
    let got = names(lost_open);
    assert!(got.contains(&Ok((2, "Read".to_owned()))) && got.contains(&Ok((14, "Edit".to_owned()))), "{got:?}");
    assert!(got.iter().all(|item| item.as_ref().map_or(true, |(_, name)| name != "Nested")), "{got:?}");
    assert_parallel_agrees(lost_open.as_bytes(), None);
    // A key repeated in one element of a pretty list: reported once, by the list's error.
    let repeated_key = "[\n  {\n    \"tool_name\": \"Read\",\n    \"tool_name\": \"Bash\"\n  },\n  {\n    \"tool_name\": \"Edit\"\n  }\n]\n";
    gives(repeated_key, &[(6, "Edit")]);
    says(repeated_key, "its 1 whole element (lines 6-8) is read as a record of its own");
    // After a cut list, batches (on one line, over lines, or a doubled `[`) are read.
    gives(
        "[\n  {\n    \"tool_name\": \"Read\"\n  },\n  {\"tool_na\n[{\"tool_name\": \"Bash\"}, {\"tool_name\": \"Edit\"}]\n[\n  {\n    \"tool_name\": \"Write\"\n  }\n]\n",
        &[(2, "Read"), (6, "Bash"), (6, "Edit"), (7, "Write")],
    );
    gives("[\n[\n{\"tool_name\": \"Read\"},\n{\"tool_name\": \"Bash\"}\n]\n", &[(2, "Read"), (2, "Bash")]);
    // A stray `}` after an element closed already ends there: the record after it is read.
    gives("[\n  {\n    \"tool_name\": \"Read\"\n  }\n}\n{\"tool_name\": \"Bash\"}\n", &[(2, "Read"), (6, "Bash")]);
}

/// A list still open at the record limit is read in parts, not skipped: a batch cut short
/// that took in more than [`MAX_RECORD_BYTES`] of records after it loses none of them, and
/// a list that long, closed or not, one element per line or pretty-printed, keeps every
/// element (the part after the limit is read as the rest of the list).
#[test]
fn a_list_open_at_the_record_limit_is_read_in_parts() {
    let big = "x".repeat(4000);
    let record = |n: usize| format!(r#"{{"tool_name": "Read", "trace_id": "t{n}", "args": {{"big": "{big}"}}}}"#);
    let count = |text: &str| {
        let got = read(text, None);
        let errors: Vec<_> = got.iter().filter_map(|r| r.as_ref().err()).map(|e| (e.line, e.message.clone())).collect();
        (got.iter().filter(|r| r.is_ok()).count(), errors)
    };
    // Cut inside its element, then one-line records.
    let mut cut = String::from("[\n  {\n    \"tool_name\": \"Ed\n");
    let mut n = 0;
    while cut.len() <= MAX_RECORD_BYTES + 100_000 {
        cut.push_str(&record(n));
        cut.push('\n');
        n += 1;
    }
    let (events, errors) = count(&cut);
    assert_eq!(events, n, "{errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].1.contains("is read in parts"), "{}", errors[0].1);
    let (parallel, _) = parallel_path(cut.as_bytes(), None, 2, 1 << 20);
    assert_eq!(parallel, reference_path(cut.as_bytes(), None));
    // A closed list that long, one element per line and pretty-printed: every element.
    for style in [0, 1] {
        let mut list = String::from("[\n");
        let mut n = 0;
        while list.len() <= MAX_RECORD_BYTES + 100_000 {
            if n > 0 {
                list.push_str(",\n");
            }
            let element = record(n);
            let element = if style == 0 { element } else { batch_element(&serde_json::from_str(&element).unwrap(), 1) };
            list.push_str(&element);
            n += 1;
        }
        list.push_str("\n]\n{\"tool_name\": \"Write\"}\n");
        let (events, errors) = count(&list);
        assert_eq!(events, n + 1, "style {style}: {errors:?}");
        assert_eq!(errors.len(), 1, "style {style}: {errors:?}");
    }
}

/// Tooltrace v2 written twice (a capture registered twice): a `pre` that repeats a call in
/// flight under its `tool_use_id`, or a `post` that repeats one of the id's latest ends, is
/// a `custom` event with `data.repeated: true`, so the call counts once; the same id with
/// other arguments, another tool or another outcome is a call of its own.
#[test]
fn a_repeated_v2_record_counts_once() {
    let pre = |tool: &str, command: &str| {
        format!(
            r#"{{"tool_name":"{tool}","phase":"pre","tool_use_id":"u1","session_id":"s","args":{{"command":"{command}"}}}}"#
        )
    };
    let post = |tool: &str, phase: &str, command: &str| {
        format!(
            r#"{{"tool_name":"{tool}","phase":"{phase}","tool_use_id":"u1","session_id":"s","args":{{"command":"{command}"}}}}"#
        )
    };
    let kinds = |lines: &[String]| {
        events(&lines.join("\n"))
            .iter()
            .map(|event| (event.event_type, event.data.get("repeated") == Some(&json!(true))))
            .collect::<Vec<_>>()
    };
    use EventType::{Custom, ToolCallEnd, ToolCallStart};
    // Every record twice.
    let twice = [pre("Bash", "ls"), pre("Bash", "ls"), post("Bash", "post", "ls"), post("Bash", "post", "ls")];
    assert_eq!(kinds(&twice), vec![(ToolCallStart, false), (Custom, true), (ToolCallEnd, false), (Custom, true)]);
    // A call made again under the id, its arguments rewritten the same way: its end is its
    // own, no copy of the first call's.
    let again = [pre("Bash", "ls"), post("Bash", "post", "rm"), pre("Bash", "ls"), post("Bash", "post", "rm")];
    assert_eq!(
        kinds(&again),
        vec![(ToolCallStart, false), (ToolCallEnd, false), (ToolCallStart, false), (ToolCallEnd, false)]
    );
    // An end written twice after the id's next call started: the copy does not end it.
    let reused = [
        pre("Bash", "ls"),
        post("Bash", "post", "ls"),
        pre("Bash", "pwd"),
        post("Bash", "post", "ls"),
        post("Bash", "post", "pwd"),
    ];
    assert_eq!(
        kinds(&reused),
        vec![
            (ToolCallStart, false),
            (ToolCallEnd, false),
            (ToolCallStart, false),
            (Custom, true),
            (ToolCallEnd, false)
        ]
    );
    // Not repeats: other arguments, another tool, another outcome.
    let others = [
        post("Bash", "post", "ls"),
        post("Bash", "post", "pwd"),
        post("Read", "post", "ls"),
        post("Bash", "post_failure", "ls"),
    ];
    assert!(kinds(&others).iter().all(|&(kind, repeated)| kind == ToolCallEnd && !repeated), "{:?}", kinds(&others));
    // Two agents' calls under one id (the same session, tool and arguments) are two calls.
    let by = |agent: &str| pre("Bash", "ls").replacen('{', &format!("{{\"agent_id\":\"{agent}\","), 1);
    assert_eq!(
        kinds(&[by("a1"), by("a2"), by("a2")]),
        vec![(ToolCallStart, false), (ToolCallStart, false), (Custom, true)]
    );
    // Three calls started under one id by the records of one list (they share its line),
    // then ended: three calls, each ended by its own end.
    let pres = (0..3).map(|n| pre("Bash", &n.to_string())).collect::<Vec<_>>().join(", ");
    let posts = (0..3).map(|n| post("Bash", "post", &n.to_string())).collect::<Vec<_>>();
    let got = events(&format!("[{pres}]\n{}", posts.join("\n")));
    let spans = |kind: EventType| {
        got.iter()
            .filter(|e| e.event_type == kind)
            .filter_map(|e| e.span.as_ref()?.span_id.clone())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(spans(ToolCallStart).len(), 3, "{:?}", spans(ToolCallStart));
    assert_eq!(spans(ToolCallStart), spans(ToolCallEnd));
    // Nothing is lost: every record is an event, with its line.
    let got = events(&twice.join("\n"));
    let raw_lines: Vec<u64> = got.iter().filter_map(|e| e.source.as_ref()?.line).collect();
    assert_eq!(raw_lines, vec![1, 2, 3, 4], "every record is kept, with its line");
}

/// A batch's element as `style` prints it: on one line (0), with `indent=2` (1), and with
/// `indent=0` (2: every line in the first column).
fn batch_element(record: &Value, style: usize) -> String {
    let pretty = serde_json::to_string_pretty(record).unwrap();
    match style {
        0 => serde_json::to_string(record).unwrap(),
        1 => pretty.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"),
        _ => pretty.lines().map(str::trim_start).collect::<Vec<_>>().join("\n"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A batch printed on one line, indented or not, and cut anywhere (a crash) loses only
    /// the element it was cut in: every element whole before the cut and the records written
    /// after it are read, at the line each starts, the cut list is one malformed record, and
    /// the parallel reader agrees.
    #[test]
    fn a_cut_batch_loses_only_its_unfinished_element(
        tools in proptest::collection::vec(0usize..4, 1..8),
        style in 0usize..3,
        cut in 0.0f64..1.0,
    ) {
        let names = ["Read", "Bash", "Edit", "Task"];
        let mut text = String::from(if style == 0 { "[" } else { "[\n" });
        // Each element's first line and where it ends in the text.
        let mut elements = Vec::new();
        for (n, tool) in tools.iter().enumerate() {
            if n > 0 {
                text.push_str(if style == 0 { "," } else { ",\n" });
            }
            let record = json!({"tool_name": names[*tool], "trace_id": format!("t{n}"), "args": {"n": n, "list": [1, {"k": "v"}]}});
            let printed = batch_element(&record, style);
            let line = 1 + text.matches('\n').count() as u64;
            text.push_str(&printed);
            elements.push((line, names[*tool].to_owned(), text.len()));
        }
        // Cut before the closing `]`: the list never closes.
        let at = 1 + ((text.len() - 1) as f64 * cut) as usize;
        let mut cut_text = format!("{}\n", &text[..at.min(text.len())]);
        let mut expected = vec![Err(1)];
        expected.extend(elements.iter().filter(|(_, _, end)| *end <= at).map(|(line, name, _)| Ok((*line, name.clone()))));
        // Then the records written after the crash: over lines in the first column (before
        // the column of an indented or one-line list's elements: not for an unindented
        // list, whose nested objects may stand there too), and on one line.
        let lines = 1 + cut_text.matches('\n').count() as u64;
        if style != 2 {
            cut_text.push_str("{\n  \"tool_name\": \"Write\",\n  \"trace_id\": \"w\"\n}\n");
            expected.push(Ok((lines, "Write".to_owned())));
        }
        expected.push(Ok((1 + cut_text.matches('\n').count() as u64, "Grep".to_owned())));
        cut_text.push_str("{\"tool_name\": \"Grep\", \"trace_id\": \"g\"}\n");
        prop_assert_eq!(lines_and_names(&read(&cut_text, None)), expected, "{}", cut_text);
        assert_parallel_agrees(cut_text.as_bytes(), None);
    }

    /// A batch on one line, indented or not, with one element broken (a value that is not
    /// JSON; a string left open, when printed over lines; its closing line lost, when
    /// indented), closed and followed by a record, loses only that element: every other
    /// element and the record after the list are read at their lines.
    #[test]
    fn a_broken_batch_loses_only_its_broken_element(
        tools in proptest::collection::vec(0usize..4, 1..8),
        style in 0usize..3,
        broken in 0usize..8,
        how in 0usize..3,
    ) {
        let names = ["Read", "Bash", "Edit", "Task"];
        let broken = broken % tools.len();
        let how = [0, how, how % 2][style];
        let mut text = String::from(if style == 0 { "[" } else { "[\n" });
        let mut expected = vec![Err(1)];
        for (n, tool) in tools.iter().enumerate() {
            if n > 0 {
                text.push_str(if style == 0 { "," } else { ",\n" });
            }
            let record = json!({"tool_name": names[*tool], "trace_id": format!("t{n}"), "args": {"n": n, "list": [1, {"k": "v"}]}});
            let mut printed = batch_element(&record, style);
            if n == broken {
                printed = match how {
                    0 => printed.replacen(&format!("\"t{n}\""), "oops", 1),
                    1 => printed.replacen("\"v\"", "\"v", 1),
                    _ => printed.rsplit_once('\n').unwrap().0.to_owned(),
                };
            } else {
                expected.push(Ok((1 + text.matches('\n').count() as u64, names[*tool].to_owned())));
            }
            text.push_str(&printed);
        }
        text.push_str(if style == 0 { "]\n" } else { "\n]\n" });
        expected.push(Ok((1 + text.matches('\n').count() as u64, "Write".to_owned())));
        text.push_str("{\"tool_name\": \"Write\", \"trace_id\": \"w\"}\n");
        prop_assert_eq!(lines_and_names(&read(&text, None)), expected, "{}", text);
        assert_parallel_agrees(text.as_bytes(), None);
    }
}

/// One OTLP span of a generated run (see `otlp_runs_keep_every_span_once_and_nested`).
struct GenSpan {
    id: String,
    parent: Option<String>,
    name: String,
    start: u64,
    end: u64,
}

/// A run of `calls` tool calls under a root agent and `helpers` sub-agents (each over a
/// stretch of the run, in turn); `pick` chooses which calls go to the root.
fn generated_run(calls: u64, helpers: u64, pick: &[bool]) -> Vec<GenSpan> {
    let end = 10 * (calls + 2);
    let mut spans =
        vec![GenSpan { id: format!("{:016x}", 1), parent: None, name: "invoke_agent root".into(), start: 1, end }];
    let stretch = calls / helpers.max(1);
    for helper in 0..helpers {
        let (from, to) = (10 * (helper * stretch + 1) - 2, 10 * ((helper + 1) * stretch + 1) - 2);
        spans.push(GenSpan {
            id: format!("{:016x}", 2 + helper),
            parent: Some(format!("{:016x}", 1)),
            name: format!("invoke_agent helper{helper}"),
            start: from,
            end: to,
        });
    }
    for call in 0..calls {
        let helper = (call / stretch.max(1)).min(helpers.saturating_sub(1));
        let to_root = helpers == 0 || pick[call as usize % pick.len()];
        let parent = if to_root { 1 } else { 2 + helper };
        let start = 10 * (call + 1);
        spans.push(GenSpan {
            id: format!("{:016x}", 0x1000 + call),
            parent: Some(format!("{parent:016x}")),
            name: "execute_tool Bash".into(),
            start,
            end: start + 5,
        });
    }
    spans
}

/// The span of a generated run, with `padding` as an attribute (so fewer spans fill the
/// order window).
fn gen_span_json(span: &GenSpan, padding: &str) -> Value {
    let (start, end) = (span.start.to_string(), span.end.to_string());
    let mut value = otlp_span(&(&span.id, span.parent.as_deref(), &span.name, Some(&start), Some(&end)));
    value["attributes"] = json!([{"key": "padding", "value": {"stringValue": padding}}]);
    value
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Runs longer than the order window, written in three layouts (by start time, one span
    /// per line; as an SDK exports them, each span as it ends; and in batches of such):
    /// every span starts and ends once, its start first; a span inside another is ordered
    /// inside it unless the reader marked the outer one out of order; and a run written by
    /// start time has nothing out of order.
    #[test]
    fn otlp_runs_keep_every_span_once_and_nested(
        helpers in 0u64..4,
        pick in proptest::collection::vec(any::<bool>(), 1..8),
        layout in 0usize..3,
    ) {
        let spans = generated_run(2_500, helpers, &pick);
        let padding = "p".repeat(1_500);
        let mut listed: Vec<&GenSpan> = spans.iter().collect();
        match layout {
            0 => listed.sort_by_key(|span| span.start),
            _ => listed.sort_by_key(|span| (span.end, std::cmp::Reverse(span.start))),
        }
        let batch = if layout == 2 { 64 } else { 1 };
        let text: String = listed
            .chunks(batch)
            .map(|chunk| {
                otlp_export(chunk.iter().map(|span| gen_span_json(span, &padding)).collect()) + "\n"
            })
            .collect();
        let got = events(&text);
        prop_assert_eq!(got.len(), 2 * spans.len());
        let mut at: std::collections::HashMap<(String, bool), usize> = std::collections::HashMap::new();
        let mut marked = std::collections::HashSet::new();
        for (idx, event) in got.iter().enumerate() {
            let id = event.span.as_ref().and_then(|span| span.span_id.clone()).unwrap();
            let is_end = otlp::ends_span(event.event_type);
            prop_assert!(at.insert((id.clone(), is_end), idx).is_none(), "{} given out twice", id);
            if event.attributes.contains_key(agentic_core::event::OUT_OF_ORDER) {
                marked.insert(id);
            }
        }
        for span in &spans {
            let (start, end) = (at[&(span.id.clone(), false)], at[&(span.id.clone(), true)]);
            prop_assert!(start < end, "{} ends before it starts", span.id);
            if let Some(parent) = &span.parent
                && !marked.contains(parent)
            {
                prop_assert!(at[&(parent.clone(), false)] < start, "{} starts before its parent", span.id);
                prop_assert!(end < at[&(parent.clone(), true)], "{} ends after its parent", span.id);
            }
        }
        if layout == 0 {
            prop_assert!(marked.is_empty(), "{} span(s) out of order", marked.len());
        }
    }
}
