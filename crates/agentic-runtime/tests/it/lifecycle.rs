//! The P1-T003 lifecycle tests: echo, failure, cleanup, runtime factory and the Docker choice.

use agentic_core::workflow::{RuntimeKind, RuntimeSpec};
use agentic_runtime::{ExecutionRequest, IsolatedTaskRuntime, RuntimeError, Termination, runtime_for};

use crate::{run, runtime, sh};

#[tokio::test]
async fn test_subprocess_runtime_echo() {
    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, ExecutionRequest::new(["echo", "hello"])).await;
    assert_eq!(outcome.termination, Termination::Exited { code: 0 });
    assert!(outcome.success());
    assert_eq!(outcome.stdout.text, "hello\n");
    assert!(!outcome.stdout.truncated);
    assert_eq!(outcome.stderr.text, "");
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn test_subprocess_runtime_failure() {
    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, sh("echo broken >&2; exit 3")).await;
    assert!(!outcome.success());
    assert_eq!(outcome.exit_code, Some(3));
    assert_eq!(outcome.termination, Termination::Exited { code: 3 });
    assert_eq!(outcome.stderr.text, "broken\n");

    // A program that does not exist is an error that names it and says what to check.
    let error = runtime
        .execute(&workspace, &ExecutionRequest::new(["agentic-no-such-program-xyz", "--flag"]))
        .await
        .unwrap_err();
    assert!(matches!(error, RuntimeError::ProgramNotFound { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("`agentic-no-such-program-xyz`") && message.contains("PATH"), "{message}");

    let error = runtime.execute(&workspace, &ExecutionRequest::new(Vec::<String>::new())).await.unwrap_err();
    assert!(matches!(error, RuntimeError::EmptyArgv), "{error:?}");
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn test_subprocess_runtime_cleanup() {
    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, sh("mkdir -p out/deep && echo data > out/deep/result.txt")).await;
    assert!(outcome.success(), "{outcome:?}");
    assert!(workspace.root().is_dir());
    let artifacts = runtime.collect_artifacts(&workspace).await.unwrap();
    assert_eq!(artifacts.len(), 1);
    assert_eq!(artifacts[0].relative_path, std::path::Path::new("out/deep/result.txt"));
    assert_eq!(artifacts[0].size_bytes, 5);

    runtime.cleanup(&workspace).await.unwrap();
    assert!(!workspace.root().exists(), "{} still exists after cleanup", workspace.root().display());
    // Cleanup is idempotent.
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn test_docker_runtime_not_available() {
    let spec =
        RuntimeSpec { kind: RuntimeKind::Docker, image: Some("python:3.12-slim".into()), ..RuntimeSpec::default() };
    let runtime = runtime_for(&spec).unwrap();
    let error = runtime.setup().await.unwrap_err();
    assert!(matches!(error, RuntimeError::Unavailable { runtime: "docker", .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with("docker runtime is not available"), "{message}");
    assert!(message.contains("`python:3.12-slim`") && message.contains("kind: subprocess"), "{message}");

    // Without an image the choice itself is refused, naming the missing field.
    let error = runtime_for(&RuntimeSpec { kind: RuntimeKind::Docker, ..RuntimeSpec::default() }).unwrap_err();
    assert!(error.to_string().contains("`runtime.image`"), "{error}");
}

#[tokio::test]
async fn test_runtime_factory_default_subprocess() {
    let runtime = runtime_for(&RuntimeSpec::default()).unwrap();
    assert_eq!(runtime.kind(), RuntimeKind::Subprocess);
    let workspace = runtime.setup().await.unwrap();
    let outcome = runtime.execute(&workspace, &ExecutionRequest::new(["echo", "via factory"])).await.unwrap();
    assert_eq!(outcome.stdout.text, "via factory\n");
    assert_eq!(outcome.protections.runtime, "subprocess");
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn test_runtime_factory_docker_opt_in() {
    let spec: RuntimeSpec = serde_json::from_value(serde_json::json!({"kind": "docker", "image": "alpine:3"})).unwrap();
    let runtime = runtime_for(&spec).unwrap();
    assert_eq!(runtime.kind(), RuntimeKind::Docker);
    // This build has no Docker client: the choice is honoured, and setup says it cannot work.
    let error = runtime.setup().await.unwrap_err();
    assert!(error.to_string().contains("no Docker client"), "{error}");
}

#[tokio::test]
async fn setup_in_adopts_an_existing_directory_and_cleanup_keeps_it() {
    let run_dir = std::env::temp_dir().join(format!("agentic-run-dir-test-{}", std::process::id()));
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("input.txt"), "from the engine\n").unwrap();
    let runtime = runtime();
    let workspace = runtime.setup_in(&run_dir).await.unwrap();
    assert!(workspace.is_adopted());
    assert_eq!(workspace.work_dir(), run_dir.canonicalize().unwrap());
    let outcome = runtime.execute(&workspace, &sh("cat input.txt; echo step > output.txt; echo $HOME")).await.unwrap();
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.stdout.text, format!("from the engine\n{}\n", workspace.home_dir().display()));
    let names: Vec<_> = runtime
        .collect_artifacts(&workspace)
        .await
        .unwrap()
        .into_iter()
        .map(|artifact| artifact.relative_path.display().to_string())
        .collect();
    assert_eq!(names, ["input.txt", "output.txt"]);

    runtime.cleanup(&workspace).await.unwrap();
    assert!(!workspace.root().exists());
    assert_eq!(std::fs::read_to_string(run_dir.join("output.txt")).unwrap(), "step\n");
    std::fs::remove_dir_all(&run_dir).unwrap();

    // A workspace that is gone gives a clear error, not a confusing spawn failure.
    let error = runtime.execute(&workspace, &sh("true")).await.unwrap_err();
    assert!(error.to_string().contains("is gone"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_executions_keep_their_outputs_apart() {
    let runtime = std::sync::Arc::new(runtime());
    let mut handles = Vec::new();
    for index in 0..6 {
        let runtime = std::sync::Arc::clone(&runtime);
        handles.push(tokio::spawn(async move {
            let workspace = runtime.setup().await.unwrap();
            let script = format!("i=0; while [ $i -lt 200 ]; do echo run{index}; i=$((i+1)); done");
            let outcome = runtime.execute(&workspace, &sh(&script)).await.unwrap();
            runtime.cleanup(&workspace).await.unwrap();
            (index, outcome)
        }));
    }
    for handle in handles {
        let (index, outcome) = handle.await.unwrap();
        assert!(outcome.success(), "{outcome:?}");
        assert_eq!(outcome.stdout.text, format!("run{index}\n").repeat(200));
    }
}

#[tokio::test]
async fn common_device_writes_work_in_the_sandbox() {
    let runtime = runtime();
    let script =
        "echo out > /dev/stdout; echo err > /dev/stderr; echo gone > /dev/null; head -c 4 /dev/urandom | wc -c";
    let (outcome, workspace) = run(&runtime, sh(script)).await;
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.stdout.text, "out\n4\n");
    assert_eq!(outcome.stderr.text, "err\n");
    runtime.cleanup(&workspace).await.unwrap();
}
