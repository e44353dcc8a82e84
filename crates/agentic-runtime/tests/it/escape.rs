//! Processes that leave the step's process group (`setsid`, a double-forked daemon) must still
//! die on timeout, on cancellation and when the program exits: by the PID namespace where the
//! kernel allows it, by the subreaper supervisor otherwise. Every test runs both ways, and
//! checks the report against what this host can do.

use std::time::Duration;

use agentic_runtime::{
    ExecutionOutcome, ExecutionRequest, IsolatedTaskRuntime, ProtectionStatus, SubprocessRuntime, Termination,
};

use crate::{Marked, marker, run_watching, runtime, wait_for_processes, wait_until_gone};

/// Both ways of killing every descendant: the PID namespace (where available) and the fallback.
fn runtimes() -> [(SubprocessRuntime, bool); 2] {
    [(runtime(), true), (runtime().with_pid_namespace(false), false)]
}

/// A script that starts escapees marked with `mark`: a `setsid` shell with a sleep, a double
/// fork whose middle process exits at once (a daemon), then `tail` for the program itself.
fn escaping_script(mark: &str, tail: &str) -> String {
    format!(
        "setsid sh -c 'sleep {mark}' & \
         sh -c 'setsid sleep {mark} & exit 0'; \
         sleep {mark} & \
         {tail}"
    )
}

/// Checks the report: the PID namespace as this host allows, and the kill-all protection applied.
fn check_report(outcome: &ExecutionOutcome, pid_namespace_asked: bool) {
    let protections = &outcome.protections;
    let host = SubprocessRuntime::host_capabilities();
    let expected = match (pid_namespace_asked, &host.pid_namespace) {
        (false, _) => ProtectionStatus::NotRequested,
        (true, Ok(())) if protections.user_namespace.is_applied() => ProtectionStatus::Applied,
        (true, _) => ProtectionStatus::NotAvailable,
    };
    if expected == ProtectionStatus::NotAvailable {
        // Running as root without a user namespace, a plain PID namespace may still apply.
        assert_ne!(protections.pid_namespace.status, ProtectionStatus::NotRequested, "{protections:?}");
    } else {
        assert_eq!(protections.pid_namespace.status, expected, "{:?}", protections.pid_namespace);
    }
    assert!(!protections.pid_namespace.detail.is_empty());
    assert_eq!(protections.kill_all_descendants.status, ProtectionStatus::Applied);
    let mechanism = if protections.pid_namespace.is_applied() { "PID namespace" } else { "child subreaper" };
    assert!(protections.kill_all_descendants.detail.starts_with(mechanism), "{protections:?}");
}

/// At least two sessions among `seen`: some process really left the program's session.
fn assert_escaped(seen: &[Marked]) {
    let first = seen.first().map(|process| process.session);
    assert!(seen.iter().any(|process| Some(process.session) != first), "no process left the session: {seen:?}");
}

#[tokio::test]
async fn setsid_escapees_die_on_timeout() {
    for (runtime, pid_namespace) in runtimes() {
        let mark = marker();
        let request = ExecutionRequest::new(["sh", "-c", &escaping_script(&mark, &format!("sleep {mark}"))])
            .with_timeout(Duration::from_secs(1));
        let (outcome, workspace, seen, elapsed) = run_watching(&runtime, request, &mark).await;
        eprintln!("pid namespace asked {pid_namespace}: 1 s timeout took {elapsed:?}");
        assert_eq!(outcome.termination, Termination::TimedOut, "{outcome:?}");
        assert!(outcome.timed_out);
        assert_eq!(outcome.signal, Some(libc::SIGTERM));
        assert!(elapsed >= Duration::from_millis(900), "took {elapsed:?}");
        assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
        // Two setsid sleeps, the setsid shell, the background sleep, the program's sleep, the program.
        assert!(seen.len() >= 5, "{seen:?}");
        assert_escaped(&seen);
        let survivors = wait_until_gone(&mark).await;
        assert!(survivors.is_empty(), "pid namespace asked {pid_namespace}: survived the timeout: {survivors:?}");
        check_report(&outcome, pid_namespace);
        runtime.cleanup(&workspace).await.unwrap();
    }
}

#[tokio::test]
async fn setsid_escapees_die_when_sigterm_is_ignored() {
    for (runtime, pid_namespace) in runtimes() {
        let mark = marker();
        let script = format!("trap '' TERM; {}", escaping_script(&mark, &format!("sleep {mark}")));
        let request = ExecutionRequest::new(["sh", "-c", &script]).with_timeout(Duration::from_secs(1));
        let (outcome, workspace, seen, elapsed) = run_watching(&runtime, request, &mark).await;
        eprintln!("pid namespace asked {pid_namespace}: 1 s timeout + 0.5 s grace took {elapsed:?}");
        assert_eq!(outcome.termination, Termination::TimedOut, "{outcome:?}");
        assert_eq!(outcome.signal, Some(libc::SIGKILL));
        assert!(elapsed < Duration::from_secs(4), "took {elapsed:?}");
        assert_escaped(&seen);
        let survivors = wait_until_gone(&mark).await;
        assert!(survivors.is_empty(), "pid namespace asked {pid_namespace}: survived SIGKILL: {survivors:?}");
        runtime.cleanup(&workspace).await.unwrap();
    }
}

#[tokio::test]
async fn setsid_escapees_die_on_cancellation() {
    for (runtime, pid_namespace) in runtimes() {
        let workspace = runtime.setup().await.unwrap();
        let mark = marker();
        let request = ExecutionRequest::new(["sh", "-c", &escaping_script(&mark, &format!("sleep {mark}"))])
            .with_timeout(Duration::from_secs(30));
        let seen = tokio::select! {
            outcome = runtime.execute(&workspace, &request) => panic!("the program ended by itself: {outcome:?}"),
            seen = wait_for_processes(&mark, 5) => seen,
        };
        // The execute future is dropped here: every process of the step must die.
        let started = std::time::Instant::now();
        assert_escaped(&seen);
        let survivors = wait_until_gone(&mark).await;
        eprintln!("pid namespace asked {pid_namespace}: all gone {:?} after the cancel", started.elapsed());
        assert!(survivors.is_empty(), "pid namespace asked {pid_namespace}: survived cancellation: {survivors:?}");
        runtime.cleanup(&workspace).await.unwrap();
    }
}

#[tokio::test]
async fn setsid_escapees_die_when_the_program_exits_and_output_and_status_are_kept() {
    for (runtime, pid_namespace) in runtimes() {
        let mark = marker();
        let tail = "sleep 0.5; read line; echo \"out $line\"; echo err >&2; exit 3";
        let request = ExecutionRequest::new(["sh", "-c", &escaping_script(&mark, tail)])
            .with_stdin("from stdin\n")
            .with_timeout(Duration::from_secs(20));
        let (outcome, workspace, seen, elapsed) = run_watching(&runtime, request, &mark).await;
        assert_eq!(outcome.termination, Termination::Exited { code: 3 }, "{outcome:?}");
        assert_eq!(outcome.exit_code, Some(3));
        assert!(!outcome.timed_out);
        assert_eq!(outcome.stdout.text, "out from stdin\n");
        assert_eq!(outcome.stderr.text, "err\n");
        // The escapees held the output pipes: they were killed, so the capture is complete.
        assert!(!outcome.stdout.incomplete && !outcome.stderr.incomplete, "{outcome:?}");
        assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
        assert_escaped(&seen);
        let survivors = wait_until_gone(&mark).await;
        assert!(survivors.is_empty(), "pid namespace asked {pid_namespace}: survived the exit: {survivors:?}");
        check_report(&outcome, pid_namespace);
        runtime.cleanup(&workspace).await.unwrap();
    }
}

#[tokio::test]
async fn signals_and_exit_codes_are_mirrored_both_ways() {
    for (runtime, pid_namespace) in runtimes() {
        let workspace = runtime.setup().await.unwrap();
        let run = |script: &str| ExecutionRequest::new(["sh", "-c", script]).with_timeout(Duration::from_secs(20));
        let outcome = runtime.execute(&workspace, &run("echo before; kill -SEGV $$; echo after")).await.unwrap();
        assert_eq!(
            outcome.termination,
            Termination::Signaled { signal: libc::SIGSEGV, name: "SIGSEGV".into() },
            "pid namespace asked {pid_namespace}"
        );
        assert_eq!(outcome.stdout.text, "before\n");
        let outcome = runtime.execute(&workspace, &run("exit 42")).await.unwrap();
        assert_eq!(outcome.termination, Termination::Exited { code: 42 });
        let outcome = runtime.execute(&workspace, &ExecutionRequest::new(["cat"]).with_stdin("a\nb\n")).await.unwrap();
        assert!(outcome.success(), "{outcome:?}");
        assert_eq!(outcome.stdout.text, "a\nb\n");
        // A program that is its namespace's PID 2 sees PID 1 as its parent.
        let outcome = runtime.execute(&workspace, &run("echo $$ $PPID")).await.unwrap();
        if outcome.protections.pid_namespace.is_applied() {
            assert_eq!(outcome.stdout.text, "2 1\n");
        } else {
            assert_ne!(outcome.stdout.text, "2 1\n");
        }
        runtime.cleanup(&workspace).await.unwrap();
    }
}

#[tokio::test]
async fn a_step_finds_its_host_pid_in_proc_self() {
    // In a PID namespace `$$` is 2, but `/proc` is the host's, so `/proc/self/stat` gives the host
    // pid (the shell opens it itself for the builtin `read`): what docs/runtime.md tells step authors.
    for (runtime, pid_namespace) in runtimes() {
        let mark = marker();
        let script = format!("read pid _ < /proc/self/stat; echo $pid; exec sleep {mark}");
        let request = ExecutionRequest::new(["sh", "-c", &script]).with_timeout(Duration::from_secs(1));
        let (outcome, workspace, seen, _) = run_watching(&runtime, request, &mark).await;
        assert_eq!(outcome.termination, Termination::TimedOut, "{outcome:?}");
        let pid: u32 = outcome.stdout.text.trim().parse().unwrap_or_else(|error| panic!("{outcome:?}: {error}"));
        assert!(
            seen.iter().any(|process| process.pid == pid),
            "pid namespace asked {pid_namespace}: {pid} is not the program {seen:?}"
        );
        assert!(wait_until_gone(&mark).await.is_empty());
        runtime.cleanup(&workspace).await.unwrap();
    }
}
