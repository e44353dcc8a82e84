//! Integration tests of agentic-runtime: real processes, real kernel protections.

mod escape;
mod lifecycle;
mod sandbox;

use std::time::Duration;

use agentic_runtime::{ExecutionOutcome, ExecutionRequest, IsolatedTaskRuntime, SubprocessRuntime, Workspace};

/// A subprocess runtime whose workspaces live under the system temporary directory.
pub(crate) fn runtime() -> SubprocessRuntime {
    SubprocessRuntime::new().with_kill_grace(Duration::from_millis(500))
}

/// Runs `request` in a fresh workspace and returns the outcome with the workspace (not cleaned up).
pub(crate) async fn run(runtime: &SubprocessRuntime, request: ExecutionRequest) -> (ExecutionOutcome, Workspace) {
    let workspace = runtime.setup().await.expect("workspace");
    let outcome = runtime.execute(&workspace, &request).await.expect("the program starts");
    (outcome, workspace)
}

/// `sh -c script` with the default policy and a safety timeout.
pub(crate) fn sh(script: &str) -> ExecutionRequest {
    ExecutionRequest::new(["sh", "-c", script]).with_timeout(Duration::from_secs(20))
}

/// A `sleep` duration unique to this test process and call, like `3001.482913`: it marks the
/// processes of one test in `/proc` by their argv, which works whatever PID namespace they run in
/// (`$$` and `$!` inside a PID namespace are not host pids).
pub(crate) fn marker() -> String {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}.{}", 3000 + count, std::process::id())
}

/// A live (not zombie) process whose argv contains a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marked {
    pub(crate) pid: u32,
    /// Its process group (host ids).
    pub(crate) group: u32,
    /// Its session.
    pub(crate) session: u32,
}

/// Every live process whose argv contains `marker` (zombies excluded; this process excluded).
pub(crate) fn processes_with(marker: &str) -> Vec<Marked> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !cmdline.split(|byte| *byte == 0).any(|arg| String::from_utf8_lossy(arg).contains(marker)) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (name) state ppid pgrp session ...`
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        if fields.len() < 4 || matches!(fields[0], "Z" | "X") {
            continue;
        }
        let (Ok(group), Ok(session)) = (fields[2].parse(), fields[3].parse()) else {
            continue;
        };
        found.push(Marked { pid, group, session });
    }
    found
}

/// Polls (bounded: 5 s) until no live process carries `marker`; returns the survivors.
pub(crate) async fn wait_until_gone(marker: &str) -> Vec<Marked> {
    for _ in 0..100 {
        if processes_with(marker).is_empty() {
            return Vec::new();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    processes_with(marker)
}

/// Polls (bounded: 10 s) until at least `count` live processes carry `marker`; returns them.
pub(crate) async fn wait_for_processes(marker: &str, count: usize) -> Vec<Marked> {
    for _ in 0..200 {
        let found = processes_with(marker);
        if found.len() >= count {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {count} processes with marker {marker} ever ran: {:?}", processes_with(marker));
}

/// Runs `request` in a fresh workspace while watching `/proc` for processes with `marker`.
///
/// Returns the outcome, the workspace, the largest set of marked processes seen alive during the
/// run, and how long `execute` took.
pub(crate) async fn run_watching(
    runtime: &SubprocessRuntime,
    request: ExecutionRequest,
    marker: &str,
) -> (ExecutionOutcome, Workspace, Vec<Marked>, Duration) {
    let workspace = runtime.setup().await.expect("workspace");
    let done = std::sync::atomic::AtomicBool::new(false);
    let started = std::time::Instant::now();
    let execute = async {
        let outcome = runtime.execute(&workspace, &request).await.expect("the program starts");
        let elapsed = started.elapsed();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        (outcome, elapsed)
    };
    let watch = async {
        let mut most = Vec::new();
        // Bounded by the run itself (every request here has a timeout) and 60 s.
        for _ in 0..3000 {
            if done.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            let found = processes_with(marker);
            if found.len() > most.len() {
                most = found;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        most
    };
    let ((outcome, elapsed), seen) = tokio::join!(execute, watch);
    (outcome, workspace, seen, elapsed)
}
