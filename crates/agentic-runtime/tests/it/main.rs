//! Integration tests of agentic-runtime: real processes, real kernel protections.

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

/// `true` when `pid` is gone or a zombie (no longer executing).
pub(crate) fn process_is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
            matches!(state, Some('Z' | 'X'))
        }
    }
}
