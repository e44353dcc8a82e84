//! The scheduler: parallelism, timeouts, retries, skips, cancellation and events.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentic_adapters::{EventSink, MemorySink};
use agentic_core::{EventType, StepStatus};
use agentic_engine::{CancelToken, RunRequest};
use serde_json::json;

use crate::support::{engine, inputs, read_events, run, wait_gone, workflow};

#[tokio::test]
async fn command_timeout_kills_the_process_group_in_about_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let flow = workflow(
        r#"
name: slow
steps:
  - name: sleeper
    kind: command
    argv: [sh, -c, "sh -c 'read pid _ < /proc/self/stat; echo $pid > child.pid; exec sleep 30' & sleep 30"]
    timeout_s: 1
"#,
    );
    let started = Instant::now();
    let outcome =
        run(&engine(), &flow, RunRequest { workspace: Some(dir.path().to_owned()), ..RunRequest::default() }).await;
    let elapsed = started.elapsed();
    let step = outcome.result.step("sleeper").unwrap();
    assert_eq!(step.status, StepStatus::TimedOut, "{step:?}");
    assert_eq!(step.error.as_ref().unwrap().error_type.as_deref(), Some("timeout"));
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(900), "took {elapsed:?}");
    let child: i32 = std::fs::read_to_string(dir.path().join("child.pid")).unwrap().trim().parse().unwrap();
    assert!(wait_gone(child).await, "background child {child} survived the timeout");
    assert_eq!(outcome.result.overall_status, StepStatus::Failed);
}

#[tokio::test]
async fn independent_steps_run_in_parallel() {
    let flow = workflow(
        r#"
name: parallel
steps:
  - {name: a, kind: command, argv: [sleep, "1"]}
  - {name: b, kind: command, argv: [sleep, "1"]}
  - {name: join, kind: tool, tool: noop, depends_on: [a, b]}
"#,
    );
    let started = Instant::now();
    let outcome = run(&engine(), &flow, RunRequest::default()).await;
    let elapsed = started.elapsed();
    assert_eq!(outcome.result.overall_status, StepStatus::Succeeded);
    assert!(elapsed < Duration::from_millis(1800), "two 1 s steps took {elapsed:?}");
    let join = outcome.result.step("join").unwrap();
    assert_eq!(join.status, StepStatus::Succeeded);
}

#[tokio::test]
async fn max_parallel_one_serializes_steps() {
    let flow = workflow(
        r#"
name: serial
max_parallel: 1
steps:
  - {name: a, kind: tool, tool: sleep, with: {seconds: 0.3}}
  - {name: b, kind: tool, tool: sleep, with: {seconds: 0.3}}
"#,
    );
    let started = Instant::now();
    let outcome = run(&engine(), &flow, RunRequest::default()).await;
    assert!(started.elapsed() >= Duration::from_millis(600), "{:?}", started.elapsed());
    // The second step waited in the queue for the first.
    let waits: Vec<f64> = outcome.result.steps.iter().map(|step| step.queue_wait_ms).collect();
    assert!(waits.iter().any(|wait| *wait >= 250.0), "{waits:?}");
}

#[tokio::test]
async fn a_step_starts_when_its_own_dependencies_finish() {
    // `fast_child` depends only on `fast`; it must not wait for `slow`.
    let flow = workflow(
        r#"
name: eager
steps:
  - {name: slow, kind: tool, tool: sleep, with: {seconds: 0.8}}
  - {name: fast, kind: tool, tool: noop}
  - {name: fast_child, kind: tool, tool: noop, depends_on: [fast]}
  - {name: end, kind: tool, tool: noop, depends_on: [slow, fast_child]}
"#,
    );
    let outcome = run(&engine(), &flow, RunRequest::default()).await;
    let slow = outcome.result.step("slow").unwrap();
    let fast_child = outcome.result.step("fast_child").unwrap();
    assert!(fast_child.ended_at.unwrap() < slow.ended_at.unwrap());
    let end = outcome.result.step("end").unwrap();
    assert!(end.started_at.unwrap() >= slow.ended_at.unwrap());
}

#[tokio::test]
async fn retry_with_backoff_only_retries_configured_classes() {
    // read_file on a missing file is an `infra` error.
    let flow = |retry_on: &str| {
        workflow(&format!(
            r#"
name: retries
steps:
  - name: read
    kind: tool
    tool: read_file
    with: {{path: missing.txt}}
    retry: {{max_attempts: 3, initial_interval_s: 0.1, backoff_factor: 2, jitter: false, retry_on: [{retry_on}]}}
"#
        ))
    };
    let sink = Arc::new(MemorySink::default());
    let started = Instant::now();
    let outcome = run(
        &engine(),
        &flow("infra"),
        RunRequest { sinks: vec![sink.clone() as Arc<dyn EventSink>], ..RunRequest::default() },
    )
    .await;
    let step = outcome.result.step("read").unwrap();
    assert_eq!(step.attempts, 3);
    assert_eq!(step.status, StepStatus::Errored);
    // Waits of 0.1 s and 0.2 s without jitter.
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    let retries: Vec<_> = sink.events().into_iter().filter(|event| event.event_type == EventType::StepRetry).collect();
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[1].data["delay_ms"], json!(200.0));

    let outcome = run(&engine(), &flow("transient, timeout"), RunRequest::default()).await;
    let step = outcome.result.step("read").unwrap();
    assert_eq!(step.attempts, 1, "an infra error must not retry when only transient and timeout do");
}

#[tokio::test]
async fn nonzero_exit_retries_when_user_errors_are_configured() {
    let dir = tempfile::tempdir().unwrap();
    let flow = workflow(
        r#"
name: flaky
steps:
  - name: flaky
    kind: command
    argv: [sh, -c, "if [ -f seen ]; then echo ok; else touch seen; exit 3; fi"]
    retry: {max_attempts: 2, initial_interval_s: 0, retry_on: [user]}
"#,
    );
    let outcome =
        run(&engine(), &flow, RunRequest { workspace: Some(dir.path().to_owned()), ..RunRequest::default() }).await;
    let step = outcome.result.step("flaky").unwrap();
    assert_eq!((step.status, step.attempts), (StepStatus::Succeeded, 2));
    assert_eq!(step.outputs["stdout"], json!("ok\n"));
}

#[tokio::test]
async fn deadline_bounds_the_whole_step() {
    let flow = workflow(
        r#"
name: deadline
steps:
  - name: slow
    kind: tool
    tool: sleep
    with: {seconds: 5}
    timeout_s: 0.3
    deadline_s: 0.8
    retry: {max_attempts: 10, initial_interval_s: 0, jitter: false, retry_on: [timeout]}
"#,
    );
    let started = Instant::now();
    let outcome = run(&engine(), &flow, RunRequest::default()).await;
    let step = outcome.result.step("slow").unwrap();
    assert_eq!(step.status, StepStatus::TimedOut);
    assert!(step.attempts >= 2 && step.attempts <= 4, "attempts {}", step.attempts);
    assert_eq!(step.error.as_ref().unwrap().error_type.as_deref(), Some("deadline_exceeded"));
    assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
}

#[tokio::test]
async fn skips_propagate_unless_the_reference_is_optional() {
    let flow = workflow(
        r#"
name: skips
inputs:
  deep: {type: boolean, default: false}
outputs:
  fallback:
    from: "${steps.tolerant.outputs.stdout}"
steps:
  - name: broken
    kind: command
    argv: [sh, -c, "exit 1"]
    critical: false
  - name: needs_broken
    kind: command
    argv: [echo, "${steps.broken.outputs.stdout}"]
  - name: tolerant
    kind: command
    argv: [printf, "%s", "${steps.broken.outputs.json.value ?? 'none'}"]
  - name: gated
    kind: tool
    tool: noop
    when: "${inputs.deep}"
    critical: false
  - name: after_gated
    kind: tool
    tool: echo
    with: {x: "${steps.gated.outputs.result}"}
    critical: false
  - name: after_gated_optional
    kind: tool
    tool: echo
    with: {x: "${steps.gated.outputs.result ?? 'skipped upstream'}"}
"#,
    );
    let outcome = run(&engine(), &flow, RunRequest::default()).await;
    let status = |name: &str| outcome.result.step(name).unwrap().status;
    assert_eq!(status("broken"), StepStatus::Failed);
    assert_eq!(status("needs_broken"), StepStatus::Skipped);
    let skipped = outcome.result.step("needs_broken").unwrap();
    assert_eq!(skipped.metadata["skip_reason"], json!("dependency_not_succeeded"));
    assert_eq!(status("tolerant"), StepStatus::Succeeded);
    assert_eq!(outcome.result.outputs["fallback"], json!("none"));
    assert_eq!(status("gated"), StepStatus::Skipped);
    assert_eq!(outcome.result.step("gated").unwrap().metadata["skip_reason"], json!("when_false"));
    assert_eq!(status("after_gated"), StepStatus::Skipped);
    assert_eq!(status("after_gated_optional"), StepStatus::Succeeded);
    assert_eq!(
        outcome.result.step("after_gated_optional").unwrap().outputs["result"],
        json!({"x": "skipped upstream"})
    );
    // `needs_broken` is critical and was skipped because of a failure: the run failed.
    assert_eq!(outcome.result.overall_status, StepStatus::Failed);

    let outcome =
        run(&engine(), &flow, RunRequest { inputs: inputs(json!({"deep": true})), ..RunRequest::default() }).await;
    assert_eq!(outcome.result.step("gated").unwrap().status, StepStatus::Succeeded);
}

#[tokio::test]
async fn cancellation_kills_running_processes() {
    let dir = tempfile::tempdir().unwrap();
    let flow = workflow(
        r#"
name: cancel
steps:
  - name: long
    kind: command
    argv: [sh, -c, "read pid _ < /proc/self/stat; echo $pid > leader.pid; sh -c 'read pid _ < /proc/self/stat; echo $pid > child.pid; exec sleep 30' & wait"]
  - name: later
    kind: tool
    tool: noop
    depends_on: [long]
"#,
    );
    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    let pid_file = dir.path().join("child.pid");
    tokio::spawn(async move {
        for _ in 0..100 {
            if pid_file.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let outcome =
        run(&engine(), &flow, RunRequest { workspace: Some(dir.path().to_owned()), cancel, ..RunRequest::default() })
            .await;
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(outcome.result.overall_status, StepStatus::Cancelled);
    assert_eq!(outcome.result.step("long").unwrap().status, StepStatus::Cancelled);
    assert_eq!(outcome.result.step("later").unwrap().status, StepStatus::Skipped);
    for file in ["leader.pid", "child.pid"] {
        let pid: i32 = std::fs::read_to_string(dir.path().join(file)).unwrap().trim().parse().unwrap();
        assert!(wait_gone(pid).await, "{file} process {pid} survived cancellation");
    }
}

#[tokio::test]
async fn events_have_strictly_increasing_seq_and_cover_every_transition() {
    let runs = tempfile::tempdir().unwrap();
    let flow = workflow(
        r#"
name: events
steps:
  - {name: a, kind: tool, tool: noop}
  - {name: b, kind: tool, tool: noop}
  - {name: c, kind: tool, tool: noop, depends_on: [a, b]}
  - {name: d, kind: tool, tool: noop, when: "steps.c.status == 'nope'"}
"#,
    );
    let sink = Arc::new(MemorySink::default());
    let outcome = run(
        &engine(),
        &flow,
        RunRequest {
            runs_dir: Some(runs.path().to_owned()),
            sinks: vec![sink.clone() as Arc<dyn EventSink>],
            ..RunRequest::default()
        },
    )
    .await;
    let events = read_events(outcome.run_dir.as_ref().unwrap());
    assert_eq!(events, sink.events(), "the file and the channel carry the same stream");
    for pair in events.windows(2) {
        assert!(pair[0].seq < pair[1].seq, "seq {} then {}", pair[0].seq, pair[1].seq);
    }
    assert_eq!(events.first().unwrap().event_type, EventType::WorkflowStart);
    assert_eq!(events.last().unwrap().event_type, EventType::WorkflowEnd);
    let count = |event_type: EventType| events.iter().filter(|event| event.event_type == event_type).count();
    assert_eq!(count(EventType::StepScheduled), 3);
    assert_eq!(count(EventType::StepStart), 3);
    assert_eq!(count(EventType::StepEnd), 3);
    assert_eq!(count(EventType::StepSkipped), 1);
    assert!(events.iter().all(|event| event.run_id.as_deref() == Some(outcome.result.run_id.as_str())));
    // c is scheduled only after a and b ended.
    let position = |event_type: EventType, step: &str| {
        events.iter().position(|event| event.event_type == event_type && event.step_name.as_deref() == Some(step))
    };
    assert!(position(EventType::StepScheduled, "c") > position(EventType::StepEnd, "a"));
    assert!(position(EventType::StepScheduled, "c") > position(EventType::StepEnd, "b"));
}

#[tokio::test]
async fn run_directory_holds_run_json_logs_and_result() {
    let runs = tempfile::tempdir().unwrap();
    let flow = workflow(
        r#"
name: files
steps:
  - {name: say, kind: command, argv: [sh, -c, "echo out; echo err >&2"]}
"#,
    );
    let outcome =
        run(&engine(), &flow, RunRequest { runs_dir: Some(runs.path().to_owned()), ..RunRequest::default() }).await;
    let run_dir = outcome.run_dir.unwrap();
    assert!(run_dir.ends_with(&outcome.result.run_id));
    let uuid = uuid::Uuid::parse_str(&outcome.result.run_id).unwrap();
    assert_eq!(uuid.get_version_num(), 7);
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["workflow"]["name"], json!("files"));
    assert_eq!(run_json["status"], json!("succeeded"));
    assert!(run_json["protections"]["commands"].is_object());
    assert!(run_json["versions"]["agentic"].is_string());
    assert_eq!(std::fs::read_to_string(run_dir.join("logs/say.stdout")).unwrap(), "out\n");
    assert_eq!(std::fs::read_to_string(run_dir.join("logs/say.stderr")).unwrap(), "err\n");
    assert!(run_dir.join("result.json").is_file());
}

#[tokio::test]
async fn local_runner_also_kills_the_group_on_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let flow = workflow(
        r#"
name: slow
steps:
  - name: sleeper
    kind: command
    argv: [sh, -c, "sh -c 'read pid _ < /proc/self/stat; echo $pid > child.pid; exec sleep 30' & sleep 30"]
    timeout_s: 0.5
"#,
    );
    let engine = agentic_engine::Engine::new(Arc::new(agentic_engine::LocalRunner));
    let started = Instant::now();
    let outcome =
        run(&engine, &flow, RunRequest { workspace: Some(dir.path().to_owned()), ..RunRequest::default() }).await;
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(outcome.result.step("sleeper").unwrap().status, StepStatus::TimedOut);
    let child: i32 = std::fs::read_to_string(dir.path().join("child.pid")).unwrap().trim().parse().unwrap();
    assert!(wait_gone(child).await, "background child {child} survived the timeout");
}
