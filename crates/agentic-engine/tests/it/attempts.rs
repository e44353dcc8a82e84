//! Attempt artifacts under `runs/<run_id>/attempts/<N>/` (ticket P2-T003).

use std::path::PathBuf;

use agentic_engine::{RunRequest, list_attempts};

use crate::support::{engine, run, workflow};

const FLAKY: &str = r#"
name: flaky
strategy: {kind: iterative_repair, max_attempts: 3}
steps:
  - name: check
    kind: command
    argv: [sh, -c, "echo try >> tries; n=$(wc -l < tries); echo out $n; [ $n -ge 2 ]"]
"#;

async fn flaky_run() -> (PathBuf, tempfile::TempDir) {
    let runs = tempfile::tempdir().unwrap();
    let outcome = run(
        &engine(),
        &workflow(FLAKY),
        RunRequest { runs_dir: Some(runs.path().to_owned()), ..RunRequest::default() },
    )
    .await;
    assert_eq!(outcome.attempts.len(), 2);
    (outcome.run_dir.unwrap(), runs)
}

#[tokio::test]
async fn test_attempt_artifacts_saved() {
    let (run_dir, _runs) = flaky_run().await;
    for number in ["1", "2"] {
        let attempt = run_dir.join("attempts").join(number);
        assert!(attempt.join("result.json").is_file(), "attempts/{number}/result.json");
        assert!(attempt.join("evaluation.json").is_file());
        assert!(attempt.join("feedback.json").is_file());
        let log = std::fs::read_to_string(attempt.join("logs/check.stdout")).unwrap();
        assert_eq!(log, format!("out {number}\n"));
    }
    let evaluation: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("attempts/1/evaluation.json")).unwrap()).unwrap();
    assert_eq!(evaluation["passed"], serde_json::json!(false));
}

#[tokio::test]
async fn test_attempt_artifacts_retrievable() {
    let (run_dir, _runs) = flaky_run().await;
    let attempts = list_attempts(&run_dir).unwrap();
    assert_eq!(attempts.iter().map(|attempt| attempt.number).collect::<Vec<_>>(), [1, 2]);
    let files: Vec<String> = attempts[0].files.iter().map(|path| path.display().to_string()).collect();
    assert_eq!(files, ["evaluation.json", "feedback.json", "logs/check.stderr", "logs/check.stdout", "result.json"]);
    assert!(list_attempts(&run_dir.join("nonexistent")).unwrap().is_empty());
}
