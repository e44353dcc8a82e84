//! `agentic score`, `agentic compare`, `agentic promote` and rubric linting, run as the real
//! binary on the sample inputs in `examples/scoring/` and `examples/rubrics/`.

use std::io::Write;
use std::process::{Output, Stdio};

use serde_json::Value;

use crate::agentic;

fn run(args: &[&str]) -> Output {
    agentic().args(args).output().expect("the agentic binary runs")
}

fn run_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = agentic()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agentic binary runs");
    child.stdin.take().expect("stdin is piped").write_all(stdin.as_bytes()).expect("stdin accepts the request");
    child.wait_with_output().expect("the agentic binary finishes")
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is JSON ({error}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited normally")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn score_latency_slo_example_gives_0_818() {
    let output = run(&["score", "examples/scoring/latency-slo.json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let result = json(&output);
    let norm = result["criteria"][0]["normalized_score"].as_f64().unwrap();
    assert_eq!((norm * 1000.0).round() / 1000.0, 0.818);
    assert_eq!(result["weighted_score"], 81.82);
    assert_eq!(result["grade"], "B");
    assert_eq!(result["passed"], true);
}

#[test]
fn score_pairwise_example_gives_0_7() {
    let output = run(&["score", "examples/scoring/pairwise.json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let result = json(&output);
    assert_eq!(result["criteria"][0]["normalized_score"], 0.7);
    assert_eq!(result["weighted_score"], 70.0);
    assert_eq!(result["grade"], "C");
}

#[test]
fn score_payload_has_every_contract_field() {
    let output = run(&["score", "examples/scoring/code-review.json"]);
    let result = json(&output);
    for key in [
        "passed",
        "grade",
        "weighted_score",
        "hard_gates",
        "hard_gate_failures",
        "floor_violations",
        "grade_capped",
        "criteria",
        "reason",
        "rubric_id",
        "rubric_version",
    ] {
        assert!(result.get(key).is_some(), "missing `{key}`");
    }
    for key in [
        "name",
        "raw_score",
        "formula_id",
        "normalized_score",
        "adjusted_score",
        "weight",
        "critical_floor",
        "floor_passed",
    ] {
        assert!(result["criteria"][0].get(key).is_some(), "missing `criteria[].{key}`");
    }
    assert_eq!(result["rubric_id"], "profile_B");
}

#[test]
fn score_floor_miss_caps_at_d_and_exits_1() {
    let output = run(&["score", "examples/scoring/floor-capped.json"]);
    assert_eq!(code(&output), 1);
    let result = json(&output);
    assert_eq!(result["band_grade"], "A");
    assert_eq!(result["grade"], "D");
    assert_eq!(result["grade_capped"], true);
    assert_eq!(result["floor_violations"], serde_json::json!(["correctness"]));
    assert_eq!(result["criteria"][0]["critical_floor"], 0.75, "{{raw: 4}} on 1..5 is 0.75");
}

#[test]
fn score_gate_failure_forces_f_but_keeps_the_score() {
    let output = run(&["score", "examples/scoring/gate-failed.json"]);
    assert_eq!(code(&output), 1);
    let result = json(&output);
    assert_eq!(result["grade"], "F");
    assert_eq!(result["weighted_score"], 100.0);
    assert_eq!(result["reason"], "hard_gate_failure");
    assert_eq!(result["hard_gate_failures"], serde_json::json!(["required_outputs_present"]));
}

#[test]
fn score_out_of_scale_raw_is_invalid_input() {
    let output = run(&["score", "examples/scoring/invalid-out-of-scale.json"]);
    assert_eq!(code(&output), 2);
    assert!(output.stdout.is_empty());
    let message = stderr(&output);
    assert!(message.contains("criteria[0].raw_score") && message.contains("1..5"), "{message}");
}

#[test]
fn score_reads_stdin_and_names_bad_fields() {
    let request = r#"{"criteria": [{"name": "q", "raw_score": 3, "formula_id": "likert_1_5", "weight": "heavy"}]}"#;
    let output = run_with_stdin(&["score", "-"], request);
    assert_eq!(code(&output), 2);
    let message = stderr(&output);
    assert!(message.contains("<stdin>:1:") && message.contains("`weight` must be a number"), "{message}");

    let unknown = r#"{"criteria": [{"name": "q", "raw_score": 3, "formula_id": "likert_1_4", "weight": 1}]}"#;
    let output = run_with_stdin(&["score", "-"], unknown);
    assert_eq!(code(&output), 2);
    let message = stderr(&output);
    assert!(message.contains("unknown formula `likert_1_4`") && message.contains("likert_1_5"), "{message}");

    let no_gates = r#"{"criteria": [{"name": "q", "raw_score": 5, "formula_id": "likert_1_5", "weight": 1}]}"#;
    let output = run_with_stdin(&["score", "-"], no_gates);
    assert_eq!(code(&output), 1, "required gates that were not evaluated are not proven");
    let result = json(&output);
    assert_eq!(result["hard_gate_failures"].as_array().unwrap().len(), 5);
    assert!(result["hard_gate_reasons"]["schema_contract_valid"].as_str().unwrap().starts_with("not proven"));
}

#[test]
fn compare_all_metrics_at_three_give_sixty() {
    let output = run(&["compare", "examples/scoring/suites/all-three.json", "examples/scoring/suites/all-three.json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let comparison = json(&output);
    assert_eq!(comparison["base"]["weighted_metrics_score_pct"], 60.0);
    assert_eq!(comparison["regression_detected"], false);
}

#[test]
fn compare_detects_the_regressed_candidate() {
    let output =
        run(&["compare", "examples/scoring/suites/baseline.json", "examples/scoring/suites/candidate-regressed.json"]);
    assert_eq!(code(&output), 1);
    let comparison = json(&output);
    assert_eq!(comparison["regression_detected"], true);
    assert_eq!(comparison["pass_rate_delta"], -20.0);
    let order_status = comparison["cases"].as_array().unwrap().iter().find(|c| c["case_id"] == "order-status").unwrap();
    assert_eq!(order_status["change"], "regression");
    assert_eq!(comparison["paired"]["n"], 5);
}

#[test]
fn compare_improved_candidate_passes_with_a_positive_interval() {
    let output = run(&[
        "compare",
        "examples/scoring/suites/baseline.json",
        "examples/scoring/suites/candidate-improved.json",
        "--format",
        "text",
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("no regression"), "{text}");
    assert!(text.contains("(better)"), "{text}");
}

#[test]
fn compare_case_delta_is_configurable() {
    let base = "examples/scoring/suites/baseline.json";
    let candidate = "examples/scoring/suites/candidate-improved.json";
    let default = json(&run(&["compare", base, candidate]));
    let loose = json(&run(&["compare", base, candidate, "--case-delta", "10"]));
    assert_eq!(default["case_improvements"], 3);
    assert_eq!(loose["case_improvements"], 0);
}

#[test]
fn promote_allows_the_better_candidate() {
    let output = run(&[
        "promote",
        "--baseline",
        "examples/scoring/promote/baseline.json",
        "--candidate",
        "examples/scoring/promote/candidate-better.json",
    ]);
    assert_eq!(code(&output), 0, "{}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(json(&output)["verdict"], "promote");
}

#[test]
fn promote_blocks_the_worse_candidate_with_every_reason() {
    let output = run(&[
        "promote",
        "--baseline",
        "examples/scoring/promote/baseline.json",
        "--candidate",
        "examples/scoring/promote/candidate-worse.json",
    ]);
    assert_eq!(code(&output), 1);
    let report = json(&output);
    assert_eq!(report["verdict"], "block");
    let reasons: Vec<String> =
        report["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()).collect();
    for needle in ["floor regression on `correctness`", "`schema_contract_valid` fails more often", "severe"] {
        assert!(reasons.iter().any(|r| r.contains(needle)), "no reason with `{needle}`: {reasons:?}");
    }
}

#[test]
fn promote_blocks_too_few_samples_and_rejects_bad_files() {
    let output = run(&[
        "promote",
        "--baseline",
        "examples/scoring/promote/baseline.json",
        "--candidate",
        "examples/scoring/promote/candidate-few-samples.json",
    ]);
    assert_eq!(code(&output), 1);
    assert!(json(&output)["reasons"][0].as_str().unwrap().contains("insufficient samples"));
    let output = run(&[
        "promote",
        "--baseline",
        "examples/scoring/promote/baseline.json",
        "--candidate",
        "examples/scoring/latency-slo.json",
    ]);
    assert_eq!(code(&output), 2, "a score request is not a list of results");
    assert!(stderr(&output).contains("latency-slo.json"));
}

#[test]
fn lint_accepts_the_example_rubric() {
    let output = run(&["lint", "examples/rubrics/fullstack_generation_v1.yaml"]);
    assert_eq!(code(&output), 0, "{}", String::from_utf8_lossy(&output.stdout));
}

#[test]
fn lint_reports_every_rubric_problem_with_positions() {
    let output = run(&["lint", "crates/agentic-eval/test_data/rubrics/err/ambiguous_floor.yaml"]);
    assert_eq!(code(&output), 1);
    let text = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "ambiguous_floor.yaml:8:21: error[ambiguous-floor]",
        "error[missing-anchors]",
        "error[unknown-formula]: criterion `style` uses unknown formula `likert_1_7`",
        "did you mean `likert_1_5`?",
        "error[invalid-weight]",
        "error[invalid-params]",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
}

#[test]
fn compare_rejects_bad_thresholds_and_files() {
    let base = "examples/scoring/suites/baseline.json";
    let output = run(&["compare", base, base, "--max-avg-score-drop=-1"]);
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("--max-avg-score-drop"), "{}", stderr(&output));
    let output = run(&["compare", base, "examples/scoring/latency-slo.json"]);
    assert_eq!(code(&output), 2, "a score request is not a suite run");
    assert!(stderr(&output).contains("latency-slo.json:"), "{}", stderr(&output));
}

#[test]
fn score_batch_feeds_promote() {
    let single = std::fs::read_to_string(crate::project_root().join("examples/scoring/latency-slo.json"))
        .expect("the example exists");
    let batch = format!("[{}]", [single.as_str(); 10].join(","));
    let output = run_with_stdin(&["score", "-", "--compact"], &batch);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let results = json(&output);
    assert_eq!(results.as_array().unwrap().len(), 10);
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("results.json");
    std::fs::write(&file, &output.stdout).expect("results are written");
    let path = file.to_str().expect("utf-8 path");
    let output = run(&["promote", "--baseline", path, "--candidate", path]);
    assert_eq!(code(&output), 0, "a version is non-inferior to itself: {}", String::from_utf8_lossy(&output.stdout));

    let bad = format!(
        "[{single}, {}]",
        r#"{"criteria": [{"name": "q", "raw_score": 9, "formula_id": "likert_1_5", "weight": 1}]}"#
    );
    let output = run_with_stdin(&["score", "-"], &bad);
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("field `[1].criteria[0].raw_score`"), "{}", stderr(&output));
}
