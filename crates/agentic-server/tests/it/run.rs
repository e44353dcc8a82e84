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
    assert_eq!(steps, [("static_facts", "succeeded"), ("review", "succeeded"), ("summarize", "succeeded")]);
    assert!(first["steps"][0]["duration_ms"].is_number());
    assert_eq!(first["steps"][1]["attempts"], json!(1));
    assert_eq!(first["outputs"]["review"]["verdict"], json!("request_changes"));
    assert_eq!(first["outputs"]["line_count"], json!(8));
    assert_eq!(first["evaluation"]["passed"], json!(true));
    assert!(first["evaluation"]["hard_gates"].is_object());
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
