//! Sandbox tests: timeout and process-group kill, cancellation, output cap, environment,
//! resource limits, Landlock and the network namespace, each checked against the report.
//!
//! Where a protection depends on the kernel, the test reads the run's `ProtectionReport` and
//! asserts the behaviour that the report claims: blocked when it says applied, allowed and
//! reported as not available otherwise. A control run with the protection off shows the check
//! can tell the two apart.

use std::path::PathBuf;
use std::time::Duration;

use agentic_runtime::{ExecutionRequest, IsolatedTaskRuntime, ProtectionStatus, RunAs, RuntimeError, Termination};

use crate::{Marked, marker, processes_with, run, run_watching, runtime, sh, wait_for_processes, wait_until_gone};

#[tokio::test]
async fn timeout_kills_the_whole_group_in_about_a_second() {
    let runtime = runtime();
    let mark = marker();
    let request = ExecutionRequest::new(["sh", "-c", &format!("sleep {mark} & sleep {mark}")])
        .with_timeout(Duration::from_secs(1));
    let (outcome, workspace, seen, elapsed) = run_watching(&runtime, request, &mark).await;
    assert!(outcome.timed_out, "{outcome:?}");
    assert_eq!(outcome.termination, Termination::TimedOut);
    assert_eq!(outcome.signal, Some(libc::SIGTERM));
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(900), "took {elapsed:?}");
    // The shell and both sleeps ran.
    assert!(seen.len() >= 3, "{seen:?}");
    // SIGKILL is delivered asynchronously: allow the kernel a moment to finish the processes.
    let survivors = wait_until_gone(&mark).await;
    assert!(survivors.is_empty(), "survived the timeout: {survivors:?}");
    assert_eq!(outcome.protections.timeout.status, ProtectionStatus::Applied);
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn timeout_kills_a_group_that_ignores_sigterm() {
    let runtime = runtime();
    let mark = marker();
    // `trap '' TERM` makes the shell and the sleep it starts ignore SIGTERM: only SIGKILL works.
    let script = format!("trap '' TERM; sleep {mark} & sleep {mark}");
    let request = ExecutionRequest::new(["sh", "-c", &script]).with_timeout(Duration::from_secs(1));
    let (outcome, workspace, seen, elapsed) = run_watching(&runtime, request, &mark).await;
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_eq!(outcome.termination, Termination::TimedOut);
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert!(seen.len() >= 3, "{seen:?}");
    let survivors = wait_until_gone(&mark).await;
    assert!(survivors.is_empty(), "survived SIGKILL: {survivors:?}");
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn background_process_is_killed_when_the_program_exits() {
    let runtime = runtime();
    let mark = marker();
    let request = sh(&format!("sleep {mark} & sleep 0.5; echo done"));
    let (outcome, workspace, seen, _) = run_watching(&runtime, request, &mark).await;
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.stdout.text, "done\n");
    assert!(!outcome.stdout.incomplete);
    assert!(seen.len() >= 2, "{seen:?}");
    let survivors = wait_until_gone(&mark).await;
    assert!(survivors.is_empty(), "background process survived its parent: {survivors:?}");
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn dropping_execute_kills_the_process_group() {
    let runtime = runtime();
    let workspace = runtime.setup().await.unwrap();
    let mark = marker();
    let request = sh(&format!("sleep {mark} & wait"));
    tokio::select! {
        outcome = runtime.execute(&workspace, &request) => panic!("the program ended by itself: {outcome:?}"),
        // The shell (its script names the marker) and the sleep.
        seen = wait_for_processes(&mark, 2) => assert!(seen.len() >= 2),
    }
    // The execute future is dropped here: the whole group must die.
    let survivors = wait_until_gone(&mark).await;
    assert!(survivors.is_empty(), "survived cancellation: {survivors:?}");
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn output_cap_truncates_and_says_so() {
    let runtime = runtime();
    let mut request = sh("head -c 100000 /dev/zero | tr '\\0' a; echo small >&2");
    request.output_limit_bytes = 1000;
    let (outcome, workspace) = run(&runtime, request).await;
    assert!(outcome.success(), "{outcome:?}");
    assert!(outcome.stdout.truncated);
    assert_eq!(outcome.stdout.text, "a".repeat(1000));
    assert_eq!(outcome.stdout.total_bytes, 100_000);
    assert!(!outcome.stderr.truncated);
    assert_eq!(outcome.stderr.text, "small\n");
    assert_eq!(outcome.protections.output_cap.detail, "1000 bytes per stream");
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn stdin_is_written_and_closed() {
    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, ExecutionRequest::new(["cat"]).with_stdin("line one\nline two\n")).await;
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.stdout.text, "line one\nline two\n");
    runtime.cleanup(&workspace).await.unwrap();
}

fn environment_names(text: &str) -> Vec<&str> {
    let mut names: Vec<&str> = text.lines().filter_map(|line| line.split_once('=').map(|(name, _)| name)).collect();
    names.sort_unstable();
    names
}

#[tokio::test]
async fn environment_is_cleared_to_the_allow_list() {
    // cargo sets CARGO_MANIFEST_DIR for the test process; the step must not see it unless allowed.
    let secret = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR for tests");
    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, ExecutionRequest::new(["env"]).with_env("STEP_VAR", "step value")).await;
    assert!(outcome.success(), "{outcome:?}");
    let names = environment_names(&outcome.stdout.text);
    for required in ["HOME", "PATH", "PWD", "STEP_VAR", "TMPDIR"] {
        assert!(names.contains(&required), "{required} missing from {names:?}");
    }
    let allowed = ["HOME", "LANG", "LC_ALL", "LC_CTYPE", "PATH", "PWD", "STEP_VAR", "TMPDIR", "TZ"];
    for name in &names {
        assert!(allowed.contains(name), "`{name}` is not on the allow-list but the step sees it");
    }
    assert!(outcome.stdout.text.contains("STEP_VAR=step value\n"));
    assert!(outcome.stdout.text.contains(&format!("HOME={}\n", workspace.home_dir().display())));
    assert!(outcome.stdout.text.contains(&format!("TMPDIR={}\n", workspace.tmp_dir().display())));

    // Once allowed, the variable passes through with its value.
    let mut request = ExecutionRequest::new(["env"]);
    request.env_allow = vec!["CARGO_MANIFEST_DIR".into()];
    let outcome = runtime.execute(&workspace, &request).await.unwrap();
    assert!(outcome.stdout.text.contains(&format!("CARGO_MANIFEST_DIR={secret}\n")), "{}", outcome.stdout.text);
    assert!(outcome.protections.environment.detail.contains("CARGO_MANIFEST_DIR"));
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn workdir_outside_the_workspace_is_refused() {
    let runtime = runtime();
    let workspace = runtime.setup().await.unwrap();
    let mut request = ExecutionRequest::new(["pwd"]);
    request.workdir = Some(PathBuf::from("../.."));
    let error = runtime.execute(&workspace, &request).await.unwrap_err();
    assert!(matches!(error, RuntimeError::InvalidRequest { .. }), "{error:?}");
    assert!(error.to_string().contains("`../..`"), "{error}");

    std::os::unix::fs::symlink("/etc", workspace.work_dir().join("escape")).unwrap();
    request.workdir = Some(PathBuf::from("escape"));
    let error = runtime.execute(&workspace, &request).await.unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");

    std::fs::create_dir(workspace.work_dir().join("sub")).unwrap();
    request.workdir = Some(PathBuf::from("sub"));
    let outcome = runtime.execute(&workspace, &request).await.unwrap();
    assert_eq!(outcome.stdout.text.trim_end(), workspace.work_dir().join("sub").display().to_string());
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn cpu_time_limit_kills_a_busy_loop() {
    let runtime = runtime();
    let mut request = sh("while :; do :; done");
    request.limits.cpu_time_s = Some(1);
    let (outcome, workspace) = run(&runtime, request).await;
    assert_eq!(outcome.protections.cpu_time_limit.status, ProtectionStatus::Applied);
    assert!(
        matches!(outcome.termination, Termination::CpuLimit { signal } if signal == libc::SIGXCPU || signal == libc::SIGKILL),
        "{outcome:?}"
    );
    assert!(!outcome.timed_out);
    let cpu_ms = outcome.usage.user_cpu_ms + outcome.usage.system_cpu_ms;
    assert!(cpu_ms >= 500, "only {cpu_ms} ms of CPU before the kill: {outcome:?}");
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn memory_limit_makes_a_large_allocation_fail() {
    let runtime = runtime();
    let script = "x = bytearray(256 * 1024 * 1024); print('allocated', len(x))";
    let mut request = ExecutionRequest::new(["python3", "-c", script]).with_timeout(Duration::from_secs(30));
    request.limits.memory_mb = Some(64);
    let (outcome, workspace) = run(&runtime, request.clone()).await;
    assert_eq!(outcome.protections.memory_limit.status, ProtectionStatus::Applied);
    assert!(!outcome.success(), "{outcome:?}");
    assert!(outcome.stderr.text.contains("MemoryError"), "{}", outcome.stderr.text);
    assert!(!outcome.stdout.text.contains("allocated"));

    // Control: the same allocation works without the limit.
    request.limits.memory_mb = None;
    let outcome = runtime.execute(&workspace, &request).await.unwrap();
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.stdout.text, "allocated 268435456\n");
    assert!(outcome.usage.max_rss_kib >= 256 * 1024, "{:?}", outcome.usage);
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn open_files_limit_applies() {
    let runtime = runtime();
    let mut request = sh("ulimit -n; exec 3</dev/null 4</dev/null 5</dev/null 6</dev/null 7</dev/null");
    request.limits.max_open_files = Some(5);
    let (outcome, workspace) = run(&runtime, request).await;
    assert_eq!(outcome.protections.open_files_limit.status, ProtectionStatus::Applied);
    assert_eq!(outcome.stdout.text, "5\n");
    // With 5 descriptors (0..=4), opening descriptor 5 and above fails.
    assert!(!outcome.success(), "{outcome:?}");
    runtime.cleanup(&workspace).await.unwrap();
}

fn process_limit_request() -> ExecutionRequest {
    let mut request =
        sh("grep 'Max processes' /proc/self/limits; for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1 & done; wait");
    request.limits.max_processes = Some(4);
    request
}

/// Checks a run of [`process_limit_request`] against what its report claims.
fn check_process_limit(outcome: &agentic_runtime::ExecutionOutcome) {
    let protection = &outcome.protections.process_limit;
    match protection.status {
        ProtectionStatus::Applied => {
            let limits_line = outcome.stdout.text.lines().next().unwrap_or_default();
            // The step gets 4; the supervisor (and the PID namespace's init) take more.
            let helpers = if outcome.protections.pid_namespace.is_applied() { 2 } else { 1 };
            let expected = (4 + helpers).to_string();
            assert!(limits_line.split_whitespace().nth(2) == Some(expected.as_str()), "{limits_line:?}");
            assert!(protection.detail.contains(&format!("4 for the step and {helpers} for")), "{protection:?}");
            assert!(outcome.stderr.text.contains("fork"), "ten forks passed a limit of 4: {outcome:?}");
        }
        ProtectionStatus::NotAvailable => {
            assert!(protection.detail.contains("exempts uid 0"), "{protection:?}");
            assert!(!outcome.stderr.text.contains("fork"), "{outcome:?}");
        }
        ProtectionStatus::NotRequested => panic!("a requested limit is reported as not requested"),
    }
}

#[tokio::test]
async fn process_limit_applies_as_the_report_says() {
    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, process_limit_request()).await;
    check_process_limit(&outcome);
    if nix_is_root() {
        // As root the kernel ignores the limit; the report must say so.
        assert_eq!(outcome.protections.process_limit.status, ProtectionStatus::NotAvailable);
    }
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn run_as_makes_the_process_limit_bite() {
    let runtime = runtime().with_run_as(RunAs::NOBODY);
    let (outcome, workspace) = run(&runtime, process_limit_request()).await;
    check_process_limit(&outcome);
    if nix_is_root() {
        assert_eq!(outcome.protections.user.status, ProtectionStatus::Applied, "{:?}", outcome.protections.user);
        assert_eq!(outcome.protections.process_limit.status, ProtectionStatus::Applied);
        let id = runtime.execute(&workspace, &ExecutionRequest::new(["id", "-u"])).await.unwrap();
        assert_eq!(id.stdout.text, "65534\n");
        // The workspace belongs to the step's user, so it can write there.
        let outcome = runtime.execute(&workspace, &sh("echo ok > written.txt && cat written.txt")).await.unwrap();
        assert_eq!(outcome.stdout.text, "ok\n", "{outcome:?}");
    }
    runtime.cleanup(&workspace).await.unwrap();
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| status.lines().find(|line| line.starts_with("Uid:")).map(str::to_owned))
        .is_some_and(|line| line.split_whitespace().nth(2) == Some("0"))
}

#[tokio::test]
async fn writes_outside_the_workspace_fail_when_landlock_applied() {
    let outside = std::env::temp_dir().join(format!("agentic-landlock-probe-{}", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let script = format!("echo inside > inside.txt && echo outside > '{}'", outside.display());

    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, sh(&script)).await;
    let landlock = &outcome.protections.landlock_filesystem;
    assert!(workspace.work_dir().join("inside.txt").is_file(), "{outcome:?}");
    match landlock.status {
        ProtectionStatus::Applied => {
            assert!(!outcome.success(), "{outcome:?}");
            assert!(outcome.stderr.text.contains("Permission denied"), "{}", outcome.stderr.text);
            assert!(!outside.exists(), "the sandboxed step wrote {}", outside.display());
        }
        ProtectionStatus::NotAvailable => {
            assert!(!landlock.detail.is_empty());
            assert!(outcome.success(), "without Landlock the write outside works: {outcome:?}");
            std::fs::remove_file(&outside).unwrap();
        }
        ProtectionStatus::NotRequested => panic!("Landlock is on by default: {landlock:?}"),
    }
    runtime.cleanup(&workspace).await.unwrap();

    // Control: with Landlock switched off the same write succeeds and the report says so.
    let unprotected = runtime.clone().with_landlock(false);
    let (outcome, workspace) = run(&unprotected, sh(&script)).await;
    assert_eq!(outcome.protections.landlock_filesystem.status, ProtectionStatus::NotRequested);
    assert!(outcome.success(), "{outcome:?}");
    assert!(outside.is_file());
    std::fs::remove_file(&outside).unwrap();
    unprotected.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn no_network_means_loopback_connect_fails() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let request = ExecutionRequest::new(["bash", "-c", script.as_str()]).with_timeout(Duration::from_secs(20));

    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, request.clone()).await;
    let report = &outcome.protections;
    if report.network_cut() {
        assert!(!outcome.success(), "connected although the report says the network is cut: {outcome:?}");
        assert!(!outcome.stdout.text.contains("connected"));
    } else {
        assert_eq!(report.network_namespace.status, ProtectionStatus::NotAvailable, "{report:?}");
        assert_eq!(report.landlock_network.status, ProtectionStatus::NotAvailable, "{report:?}");
        assert!(outcome.success(), "{outcome:?}");
    }

    // Control: with `network: true` the same connect works.
    let mut allowed = request;
    allowed.network = true;
    let outcome = runtime.execute(&workspace, &allowed).await.unwrap();
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.stdout.text, "connected\n");
    assert_eq!(outcome.protections.network_namespace.status, ProtectionStatus::NotRequested);
    runtime.cleanup(&workspace).await.unwrap();
    drop(listener);
}

/// Set in the environment of a copy of this test binary that plays the engine: the marker of its step.
const ENGINE_MARKER_ENV: &str = "AGENTIC_RUNTIME_TEST_ENGINE_MARKER";
/// Set with it: `0` to run the step without a PID namespace (the subreaper fallback).
const ENGINE_PID_NAMESPACE_ENV: &str = "AGENTIC_RUNTIME_TEST_ENGINE_PID_NAMESPACE";

async fn engine_death_kills_the_whole_step(pid_namespace: bool, test_name: &str) {
    if let Ok(mark) = std::env::var(ENGINE_MARKER_ENV) {
        // Engine role: start a long step, then wait to be killed by the test below.
        let pid_namespace = std::env::var(ENGINE_PID_NAMESPACE_ENV).as_deref() != Ok("0");
        let runtime = runtime().with_pid_namespace(pid_namespace);
        let workspace = runtime.setup().await.unwrap();
        let script = format!("sleep {mark} & setsid sleep {mark} & exec sleep {mark}");
        let _ = runtime.execute(&workspace, &sh(&script)).await;
        panic!("the engine role must be killed before its step ends");
    }
    let mark = marker();
    let mut engine = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test_name, "--exact", "--test-threads=1"])
        .env(ENGINE_MARKER_ENV, &mark)
        .env(ENGINE_PID_NAMESPACE_ENV, if pid_namespace { "1" } else { "0" })
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The program (exec'd sleep), the background sleep and the setsid one. The last calls
    // `setsid` a moment after it is forked (it carries the marker before), so the sessions
    // are polled until one differs (bounded: 10 s).
    let left_the_session = |seen: &[Marked]| seen.iter().any(|process| process.session != seen[0].session);
    let mut seen = wait_for_processes(&mark, 3).await;
    for _ in 0..200 {
        if left_the_session(&seen) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        seen = processes_with(&mark);
    }
    assert!(left_the_session(&seen), "no process left the session: {seen:?}");
    engine.kill().unwrap();
    engine.wait().unwrap();
    let survivors = wait_until_gone(&mark).await;
    assert!(survivors.is_empty(), "survived the engine's death: {survivors:?}");
}

#[tokio::test]
async fn killing_the_engine_kills_the_whole_step() {
    engine_death_kills_the_whole_step(true, "sandbox::killing_the_engine_kills_the_whole_step").await;
}

#[tokio::test]
async fn killing_the_engine_kills_the_whole_step_without_a_pid_namespace() {
    engine_death_kills_the_whole_step(
        false,
        "sandbox::killing_the_engine_kills_the_whole_step_without_a_pid_namespace",
    )
    .await;
}

#[tokio::test]
async fn landlock_alone_blocks_tcp_when_the_report_says_so() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let request = ExecutionRequest::new(["bash", "-c", script.as_str()]).with_timeout(Duration::from_secs(20));

    // Without namespaces only Landlock's TCP rules can cut the network.
    let runtime = runtime().with_user_namespace(false).with_network_namespace(false);
    let (outcome, workspace) = run(&runtime, request.clone()).await;
    let report = &outcome.protections;
    assert_eq!(report.network_namespace.status, ProtectionStatus::NotRequested, "{report:?}");
    match report.landlock_network.status {
        ProtectionStatus::Applied => {
            assert!(!outcome.success(), "connected although Landlock denies TCP connect: {outcome:?}");
            assert!(outcome.stderr.text.contains("Permission denied"), "{}", outcome.stderr.text);
        }
        ProtectionStatus::NotAvailable => assert!(outcome.success(), "{outcome:?}"),
        ProtectionStatus::NotRequested => panic!("network: false must request the Landlock rules"),
    }
    runtime.cleanup(&workspace).await.unwrap();

    // Control: with Landlock off too, nothing cuts the network and the connect works.
    let open = runtime.with_landlock(false);
    let (outcome, workspace) = run(&open, request).await;
    assert!(!outcome.protections.network_cut());
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.stdout.text, "connected\n");
    open.cleanup(&workspace).await.unwrap();
    drop(listener);
}

#[tokio::test]
async fn file_size_limit_stops_a_large_write() {
    let runtime = runtime();
    let mut request = sh("exec head -c 2097152 /dev/zero > big.bin");
    request.limits.max_file_size_mb = Some(1);
    let (outcome, workspace) = run(&runtime, request.clone()).await;
    assert_eq!(outcome.protections.file_size_limit.status, ProtectionStatus::Applied);
    assert_eq!(outcome.termination, Termination::FileSizeLimit, "{outcome:?}");
    let written = std::fs::metadata(workspace.work_dir().join("big.bin")).unwrap().len();
    assert_eq!(written, 1024 * 1024);

    // Control: without the limit the whole file is written.
    request.limits.max_file_size_mb = None;
    let outcome = runtime.execute(&workspace, &request).await.unwrap();
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(std::fs::metadata(workspace.work_dir().join("big.bin")).unwrap().len(), 2 * 1024 * 1024);
    runtime.cleanup(&workspace).await.unwrap();
}

#[tokio::test]
async fn a_signal_that_ends_the_program_is_reported_as_such() {
    let runtime = runtime();
    let (outcome, workspace) = run(&runtime, sh("echo before; kill -SEGV $$; echo after")).await;
    assert_eq!(outcome.termination, Termination::Signaled { signal: libc::SIGSEGV, name: "SIGSEGV".into() });
    assert_eq!(outcome.signal, Some(libc::SIGSEGV));
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.stdout.text, "before\n");
    runtime.cleanup(&workspace).await.unwrap();
}
