//! `agentic run`: the real binary on the bundled examples (replay provider, offline), exit
//! codes, and recording a cassette from a real OpenAI-compatible HTTP server on 127.0.0.1.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::agentic;

fn run_agentic(args: &[&str], runs_dir: &Path) -> Output {
    let mut command = agentic();
    command.arg("run").args(args).arg("--runs-dir").arg(runs_dir).env_remove("OPENAI_API_KEY");
    command.output().expect("the agentic binary runs")
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not JSON ({error}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write_workflow(dir: &Path, yaml: &str) -> String {
    let path = dir.join("workflow.yaml");
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

#[test]
fn code_review_runs_offline_on_the_replay_provider() {
    let runs = tempfile::tempdir().unwrap();
    let output = run_agentic(
        &[
            "examples/workflows/code_review.yaml",
            "--dataset",
            "examples/datasets/code_review.jsonl",
            "--provider",
            "replay",
            "--json",
        ],
        runs.path(),
    );
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", stderr(&output));
    let report = stdout_json(&output);
    assert_eq!(report["total"], json!(3));
    assert_eq!(report["passed"], json!(3));
    let first = &report["runs"][0];
    assert_eq!(first["sample"], json!("cr-001"));
    assert_eq!(first["status"], json!("succeeded"));
    let steps: Vec<(&str, &str)> = first["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| (step["name"].as_str().unwrap(), step["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("static_facts", "succeeded"),
            ("review", "succeeded"),
            ("summarize", "succeeded"),
            ("check_findings", "succeeded")
        ]
    );
    assert!(first["steps"][0]["duration_ms"].is_number());
    assert_eq!(first["steps"][1]["attempts"], json!(1));
    assert_eq!(first["outputs"]["review"]["verdict"], json!("request_changes"));
    assert_eq!(first["outputs"]["line_count"], json!(8));
    assert_eq!(first["evaluation"]["passed"], json!(true));
    assert!(first["evaluation"]["hard_gates"].is_object());
    // Profile B, scored by hand: the recorded judge gives (correctness, completeness,
    // documentation) = (4, 4, 4), (5, 4, 4), (4, 3, 4) on 1..5; precision is 1.0 (every
    // finding cites a real line); efficiency is 1.0 (well under the 10 s SLO).
    // cr-001: .35*.75 + .25*.75 + .20*1 + .10*.75 + .10*1 = .825
    let expected = [("cr-001", "B", 82.5), ("cr-002", "A", 91.25), ("cr-003", "C", 76.25)];
    for (run, (sample, grade, score)) in report["runs"].as_array().unwrap().iter().zip(expected) {
        let evaluation = &run["evaluation"];
        assert_eq!(run["sample"], json!(sample));
        assert_eq!(evaluation["evaluator"], json!("scoring"));
        assert_eq!(evaluation["grade"], json!(grade), "{sample}: {evaluation}");
        assert_eq!(evaluation["weighted_score"], json!(score), "{sample}");
        assert_eq!(evaluation["hard_gate_failures"], json!([]));
        assert_eq!(evaluation["hard_gates"]["outputs_parseable"], json!(true), "profile B's extra gate");
        assert_eq!(evaluation["score_sources"]["correctness_rubric"]["source"], json!("judge"));
        assert_eq!(evaluation["score_sources"]["efficiency"]["source"], json!("metric.duration_s"));
        assert_eq!(evaluation["score_sources"]["tool_data_precision"]["raw_score"], json!(1.0));
        assert_eq!(evaluation["judge"]["judges"][0]["model"], json!("judge"));
        assert_eq!(evaluation["judge"]["judges"][0]["prompt_id"], json!("pointwise"));
        assert!(evaluation["judge"]["evidence"]["correctness_rubric"].as_str().unwrap().starts_with("the output says"));
    }
    // The run directory holds the run record and the event stream.
    let run_dir = Path::new(first["run_dir"].as_str().unwrap());
    assert!(run_dir.starts_with(runs.path()));
    let run_json: Value = serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["metadata"]["dataset"]["sample_id"], json!("cr-001"));
    assert_eq!(run_json["metadata"]["model_provider"]["provider"], json!("replay"));
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    assert!(events.lines().count() >= 10);
}

#[test]
fn fullstack_generation_writes_and_tests_generated_code() {
    let runs = tempfile::tempdir().unwrap();
    let output = run_agentic(
        &[
            "examples/workflows/fullstack_generation.yaml",
            "--dataset",
            "examples/datasets/fullstack_generation.json",
            "--sample",
            "fs-002",
            "--json",
        ],
        runs.path(),
    );
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", stderr(&output));
    let report = stdout_json(&output);
    assert_eq!(report["sample"], json!("fs-002"));
    assert_eq!(report["outputs"]["test_exit_code"], json!(0));
    // 3/3 tests pass (0.60), the judge gives 5/5 (0.25), efficiency 1.0 (0.15): 100.
    let evaluation = &report["evaluation"];
    assert_eq!(evaluation["weighted_score"], json!(100.0), "{evaluation}");
    assert_eq!(evaluation["hard_gates"]["tests_fail_to_pass_all_green"], json!(true));
    assert_eq!(evaluation["hard_gates"]["patch_applies"], json!(true));
    assert_eq!(evaluation["facts"]["swe_tests"]["value"]["fail_to_pass"], json!({"passed": 3, "total": 3}));
    let run_dir = Path::new(report["run_dir"].as_str().unwrap());
    assert!(run_dir.join("workspace/stats.py").is_file());
    assert!(run_dir.join("workspace/test_stats.py").is_file());
}

#[test]
fn experimental_workflows_need_the_opt_in_and_repair_iteratively() {
    let runs = tempfile::tempdir().unwrap();
    let args =
        ["examples/workflows/plan_implementation.yaml", "--input", "task=Add a --json flag to the report command"];
    let output = run_agentic(&args, runs.path());
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--allow-experimental"), "{}", stderr(&output));
    let mut with_opt_in = args.to_vec();
    with_opt_in.extend(["--allow-experimental", "--json"]);
    let output = run_agentic(&with_opt_in, runs.path());
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", stderr(&output));
    let report = stdout_json(&output);
    assert_eq!(report["strategy"], json!("iterative_repair"));
    let attempts = report["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["passed"], json!(false));
    assert_eq!(attempts[1]["passed"], json!(true));
    let run_dir = Path::new(report["run_dir"].as_str().unwrap());
    assert!(run_dir.join("attempts/1/feedback.json").is_file());
    assert!(run_dir.join("attempts/2/result.json").is_file());
}

#[test]
fn runs_that_cannot_start_exit_2_with_reasons() {
    let runs = tempfile::tempdir().unwrap();
    let output = run_agentic(
        &["examples/workflows/code_review.yaml", "--dataset", "examples/datasets/incompatible_for_code_review.jsonl"],
        runs.path(),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("missing: code"), "{}", stderr(&output));

    let output = run_agentic(
        &["examples/workflows/code_review.yaml", "--dataset", "examples/datasets/code_review_empty_code.jsonl"],
        runs.path(),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("required input `code` is empty"), "{}", stderr(&output));

    let output = run_agentic(&["examples/workflows/hello_command.yaml", "--input", "nobody=1"], runs.path());
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("unknown input `nobody`"), "{}", stderr(&output));

    let dir = tempfile::tempdir().unwrap();
    let workflow = write_workflow(dir.path(), "name: broken\nsteps:\n  - {name: a, kind: comand}\n");
    let output = run_agentic(&[&workflow], runs.path());
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("workflow.yaml:3:") && text.contains("did you mean `command`?"), "{text}");
    // Nothing ran, so no run directory was created.
    assert_eq!(std::fs::read_dir(runs.path()).unwrap().count(), 0);
}

#[test]
fn failed_runs_exit_1() {
    let runs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workflow = write_workflow(
        dir.path(),
        r#"
name: fails
outputs:
  answer:
    from: "${steps.ask.outputs.json.answer}"
steps:
  - {name: ask, kind: command, argv: [printf, '{"other": 1}']}
  - {name: broken, kind: command, argv: [sh, -c, "echo boom >&2; exit 3"]}
"#,
    );
    let output = run_agentic(&[&workflow, "--json"], runs.path());
    assert_eq!(output.status.code(), Some(1), "stderr:\n{}", stderr(&output));
    let report = stdout_json(&output);
    assert_eq!(report["status"], json!("failed"));
    assert_eq!(report["passed"], json!(false));
    assert_eq!(report["unresolved_required_outputs"], json!(["answer"]));
    assert_eq!(report["evaluation"]["hard_gates"]["required_outputs_present"], json!(false));
    let broken = &report["steps"][1];
    assert_eq!(broken["status"], json!("failed"));
    assert_eq!(broken["error"]["type"], json!("nonzero_exit"));
}

#[test]
fn a_replay_miss_names_the_step() {
    let runs = tempfile::tempdir().unwrap();
    let output = run_agentic(
        &[
            "examples/workflows/code_review.yaml",
            "--input",
            "code_file=src/new.py",
            "--input",
            "code=print('never recorded')",
            "--json",
        ],
        runs.path(),
    );
    assert_eq!(output.status.code(), Some(1), "stderr:\n{}", stderr(&output));
    let report = stdout_json(&output);
    let review = &report["steps"][1];
    assert_eq!(review["status"], json!("failed"));
    assert_eq!(review["error"]["type"], json!("replay_miss"));
    let message = review["error"]["message"].as_str().unwrap();
    assert!(message.contains("step `review`") && message.contains("code_review.jsonl"), "{message}");
    assert!(message.contains("agentic run --provider openai --record"), "{message}");
    assert_eq!(report["steps"][2]["status"], json!("skipped"));
}

#[test]
fn record_from_a_real_http_provider_then_replay_offline() {
    use agentic_adapters::provider::testing::{Reply, TestServer};

    let runs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("cassettes/summary.jsonl");
    let cassette_arg = cassette.display().to_string();
    let common = [
        "examples/workflows/agent_summary.yaml",
        "--input",
        "text=Rust 2024 shipped.",
        "--cassette",
        &cassette_arg,
        "--json",
    ];
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let server = runtime
        .block_on(TestServer::start(|request| {
            assert!(request.prompt_text().contains("Rust 2024 shipped."));
            Reply::chat("Rust 2024 is out.")
        }))
        .unwrap();
    // The server answers on the runtime's thread while the binary runs.
    let base_url = server.base_url();
    let recorded = runtime.block_on(async {
        let mut args = common.to_vec();
        args.extend(["--provider", "openai", "--base-url", &base_url, "--record", "--model", "small"]);
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentic"));
        command.current_dir(crate::project_root()).arg("run").args(&args).arg("--runs-dir").arg(runs.path());
        command.env_remove("OPENAI_API_KEY").output().await.unwrap()
    });
    assert_eq!(recorded.status.code(), Some(0), "stderr:\n{}", stderr(&recorded));
    assert_eq!(server.request_count(), 1);
    assert_eq!(stdout_json(&recorded)["outputs"]["summary"], json!("Rust 2024 is out."));
    drop(server);
    drop(runtime);
    let lines = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(lines.lines().count(), 1);
    let entry: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(entry["caller"], json!("summarize"));
    assert_eq!(entry["request"]["model"], json!("writer"));

    // The server is gone: the replay answers from the cassette alone.
    let mut args = common.to_vec();
    args.extend(["--provider", "replay", "--model", "small"]);
    let replayed = run_agentic(&args, runs.path());
    assert_eq!(replayed.status.code(), Some(0), "stderr:\n{}", stderr(&replayed));
    assert_eq!(stdout_json(&replayed)["outputs"]["summary"], json!("Rust 2024 is out."));

    let output = run_agentic(&["examples/workflows/agent_summary.yaml", "--input", "text=x", "--record"], runs.path());
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("`--record` needs a real provider"), "{}", stderr(&output));
}

/// A workflow with a command step whose output is judged, plus scored criteria of every
/// source kind; `{extra}` goes into its evaluation block.
fn judged_workflow(extra_outputs: &str, extra_criteria: &str) -> String {
    format!(
        r#"
name: judged
description: Answer a question.
inputs:
  question: {{type: string}}
outputs:
  answer:
    from: "${{steps.answer.outputs.stdout}}"
{extra_outputs}
steps:
  - name: answer
    kind: command
    argv: [python3, -c, "print('Paris is the capital of France.')"]
evaluation:
  pass_threshold: 70
  criteria:
    - name: correctness
      weight: 3
      formula_id: likert_1_5
      anchors: {{"1": wrong, "2": mostly wrong, "3": partly right, "4": right, "5": right and precise}}
    - name: succeeded
      weight: 1
      formula_id: zero_one
      score_from: metric.step_success_rate
{extra_criteria}
"#
    )
}

/// Runs `workflow` against an OpenAI-compatible judge on 127.0.0.1 that gives `score` to every
/// criterion; returns the exit code, the JSON report and the judge's request count.
fn run_with_http_judge(workflow: &str, score: i64) -> (Option<i32>, Value, usize) {
    use agentic_adapters::provider::testing::{Reply, TestServer};

    let dir = tempfile::tempdir().unwrap();
    let path = write_workflow(dir.path(), workflow);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let server = runtime
        .block_on(TestServer::start(move |request| {
            let prompt = request.prompt_text();
            assert!(prompt.contains("Paris is the capital of France."), "the judge sees the outputs: {prompt}");
            assert!(prompt.contains("Answer a question."), "the judge sees the task: {prompt}");
            let names: Vec<&str> =
                prompt.lines().filter_map(|line| line.strip_prefix("### ")?.split(' ').next()).collect();
            let criteria: Vec<Value> = names
                .iter()
                .map(|name| json!({"name": name, "score": score, "evidence": "Paris is the capital"}))
                .collect();
            Reply::chat(json!({"criteria": criteria}).to_string())
        }))
        .unwrap();
    let base_url = server.base_url();
    let output = runtime.block_on(async {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentic"));
        command.current_dir(crate::project_root()).arg("run").arg(&path);
        command.args(["--input", "question=capital of France?", "--provider", "openai", "--base-url", &base_url]);
        command.args(["--tier", "judge=judge-small", "--json", "--runs-dir"]).arg(dir.path());
        command.env_remove("OPENAI_API_KEY").output().await.unwrap()
    });
    let report = stdout_json(&output);
    (output.status.code(), report, server.request_count())
}

#[test]
fn runs_are_graded_with_a_judge_over_real_http() {
    // test_hybrid_score_with_mock_judge: 4/5 from the judge (0.75 * 3) and 1.0 (* 1): 81.25.
    let (code, report, requests) = run_with_http_judge(&judged_workflow("", ""), 4);
    let evaluation = &report["evaluation"];
    assert_eq!(code, Some(0), "{evaluation}");
    assert_eq!(requests, 1, "one judge call grades every judged criterion");
    assert_eq!(evaluation["passed"], json!(true));
    assert_eq!(evaluation["weighted_score"], json!(81.25));
    assert_eq!(evaluation["grade"], json!("B"));
    assert_eq!(evaluation["judge"]["judges"][0]["model"], json!("judge-small"));
    assert_eq!(evaluation["judge"]["judges"][0]["temperature"], json!(0.0));
    assert!(evaluation["judge"]["judges"][0]["prompt_version"].is_string(), "test_judge_logs_model_version");

    // Below the threshold: 2/5 -> 0.25 * 3 + 1 = 1.75 / 4 = 43.75, exit 1.
    let (code, report, _) = run_with_http_judge(&judged_workflow("", ""), 2);
    assert_eq!(code, Some(1));
    assert_eq!(report["evaluation"]["passed"], json!(false));
    assert_eq!(report["evaluation"]["weighted_score"], json!(43.75));
    assert_eq!(report["evaluation"]["reason"], json!("below_pass_threshold"));
}

#[test]
fn hard_gates_override_a_perfect_judge_score() {
    // test_hybrid_hard_gates_still_override: the judge gives 5/5, but a required output does
    // not resolve, so the run fails with grade F whatever its weighted score.
    let missing = "  verdict:\n    from: \"${steps.answer.outputs.json.verdict}\"\n";
    let (code, report, _) = run_with_http_judge(&judged_workflow(missing, ""), 5);
    let evaluation = &report["evaluation"];
    assert_eq!(code, Some(1), "{evaluation}");
    assert_eq!(evaluation["passed"], json!(false));
    assert_eq!(evaluation["grade"], json!("F"));
    assert_eq!(evaluation["weighted_score"], json!(100.0));
    assert!(evaluation["hard_gate_failures"].as_array().unwrap().contains(&json!("required_outputs_present")));
}

#[test]
fn a_criterion_without_a_score_is_never_guessed() {
    // A metric criterion that says nowhere where its score comes from, and a gate whose
    // evidence condition is false: the run fails and the report says why.
    let extra = "    - name: coverage\n      weight: 1\n      formula_id: zero_one\n  gates: [patch_applies]\n  facts:\n    gates:\n      patch_applies: \"steps.answer.status == 'failed'\"\n";
    let (code, report, _) = run_with_http_judge(&judged_workflow("", extra), 5);
    let evaluation = &report["evaluation"];
    assert_eq!(code, Some(1), "{evaluation}");
    let failures = evaluation["hard_gate_failures"].as_array().unwrap();
    assert!(failures.contains(&json!("schema_contract_valid")), "{evaluation}");
    assert!(failures.contains(&json!("patch_applies")), "{evaluation}");
    let reason = evaluation["hard_gate_reasons"]["schema_contract_valid"].as_str().unwrap();
    assert!(reason.contains("`coverage`") && reason.contains("score_from"), "{reason}");
    assert_eq!(evaluation["facts"]["gates.patch_applies"]["value"], json!(false));
    assert!(evaluation["score_sources"]["coverage"]["missing"].is_string());
}

#[test]
fn a_judge_the_cassette_does_not_know_fails_loudly() {
    // Offline: the replay provider answers the judge too; an unrecorded judge request leaves
    // the judged criterion unscored (never a default score) and names the caller.
    let runs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = write_workflow(dir.path(), &judged_workflow("", ""));
    let cassette = dir.path().join("empty.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let cassette = cassette.display().to_string();
    let output = run_agentic(&[&path, "--input", "question=q", "--cassette", &cassette, "--json"], runs.path());
    assert_eq!(output.status.code(), Some(1), "stderr:\n{}", stderr(&output));
    let evaluation = &stdout_json(&output)["evaluation"];
    let missing = evaluation["score_sources"]["correctness"]["missing"].as_str().unwrap();
    assert!(missing.contains("judge:judge:judged:inputs-") && missing.contains("empty.jsonl"), "{missing}");
    assert!(evaluation["hard_gate_failures"].as_array().unwrap().contains(&json!("schema_contract_valid")));
}
