//! [`SandboxRunner`]: the command port implemented by an `agentic-runtime` runtime (the
//! sandboxed [`SubprocessRuntime`] by default).
//!
//! The run's workspace directory is adopted as the runtime workspace's work directory
//! (`setup_in`), so tool steps and command steps see the same files. Each command's
//! `ProtectionReport` is kept in the step's metadata.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentic_runtime::{ExecutionRequest, IsolatedTaskRuntime, RuntimeError, SubprocessRuntime, Termination, Workspace};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::cancel::CancelToken;
use crate::command::{CommandError, CommandOutput, CommandRunner, CommandSpec};

/// Runs command steps through an [`IsolatedTaskRuntime`].
#[derive(Debug)]
pub struct SandboxRunner {
    runtime: Arc<dyn IsolatedTaskRuntime>,
    workspaces: Mutex<HashMap<PathBuf, Workspace>>,
}

impl SandboxRunner {
    /// A runner over `runtime`.
    pub fn new(runtime: Arc<dyn IsolatedTaskRuntime>) -> SandboxRunner {
        SandboxRunner { runtime, workspaces: Mutex::new(HashMap::new()) }
    }

    /// A runner over the default sandboxed subprocess runtime.
    pub fn subprocess() -> SandboxRunner {
        SandboxRunner::new(Arc::new(SubprocessRuntime::new()))
    }

    async fn workspace_for(&self, workdir: &Path) -> Result<Workspace, RuntimeError> {
        let mut workspaces = self.workspaces.lock().await;
        if let Some(workspace) = workspaces.get(workdir) {
            return Ok(workspace.clone());
        }
        let workspace = self.runtime.setup_in(workdir).await?;
        workspaces.insert(workdir.to_owned(), workspace.clone());
        Ok(workspace)
    }
}

fn command_error(error: RuntimeError) -> CommandError {
    match error {
        RuntimeError::ProgramNotFound { .. } | RuntimeError::ProgramNotExecutable { .. } | RuntimeError::EmptyArgv => {
            CommandError::Spawn { program: String::new(), message: error.to_string() }
        }
        RuntimeError::InvalidConfig { .. } => CommandError::Unsupported(error.to_string()),
        other => CommandError::Runtime(other.to_string()),
    }
}

#[async_trait]
impl CommandRunner for SandboxRunner {
    fn name(&self) -> &str {
        "subprocess"
    }

    fn protections(&self) -> Value {
        let host = SubprocessRuntime::host_capabilities();
        let state = |result: &Result<(), String>| match result {
            Ok(()) => json!("available"),
            Err(reason) => json!({"unavailable": reason}),
        };
        json!({
            "runner": "subprocess",
            "runtime_kind": format!("{:?}", self.runtime.kind()).to_lowercase(),
            "euid": host.euid,
            "user_namespace": state(&host.user_namespace),
            "network_namespace": state(&host.network_namespace),
            "pid_namespace": state(&host.pid_namespace),
            "landlock_abi": match &host.landlock_abi {
                Ok(abi) => json!(abi),
                Err(reason) => json!({"unavailable": reason}),
            },
            "per_step_report": "steps[].metadata.process.details.protections",
        })
    }

    async fn run(&self, spec: CommandSpec, cancel: CancelToken) -> Result<CommandOutput, CommandError> {
        let workspace = self.workspace_for(&spec.workdir).await.map_err(command_error)?;
        let mut request = ExecutionRequest::new(spec.argv.clone()).with_runtime_spec(&spec.runtime);
        request.env = spec.env;
        request.stdin = spec.stdin;
        request.timeout = spec.timeout;
        let outcome = tokio::select! {
            outcome = self.runtime.execute(&workspace, &request) => outcome,
            // Dropping `execute` kills the whole process group (the runtime's contract).
            () = cancel.cancelled() => {
                return Ok(CommandOutput { cancelled: true, ..CommandOutput::default() });
            }
        };
        let outcome = outcome.map_err(|error| match error {
            RuntimeError::ProgramNotFound { program, .. } | RuntimeError::ProgramNotExecutable { program, .. } => {
                CommandError::Spawn {
                    message: format!(
                        "not found or not executable; check `argv[0]` (`{program}`) and that it is on the step's PATH"
                    ),
                    program,
                }
            }
            other => command_error(other),
        })?;
        let details = json!({
            "termination": outcome.termination,
            "usage": outcome.usage,
            "protections": outcome.protections,
            "stdout_bytes": outcome.stdout.total_bytes,
            "stderr_bytes": outcome.stderr.total_bytes,
        });
        Ok(CommandOutput {
            exit_code: match outcome.termination {
                Termination::Exited { code } => Some(code),
                _ => None,
            },
            signal: outcome.signal,
            stdout: outcome.stdout.text,
            stderr: outcome.stderr.text,
            timed_out: outcome.timed_out || matches!(outcome.termination, Termination::TimedOut),
            cancelled: false,
            truncated: outcome.stdout.truncated || outcome.stderr.truncated,
            duration_ms: outcome.duration.as_secs_f64() * 1000.0,
            details,
        })
    }

    async fn finish(&self, workdir: &Path) {
        let workspace = self.workspaces.lock().await.remove(workdir);
        if let Some(workspace) = workspace {
            // The adopted work directory itself stays; only the runtime's home and tmp go.
            let _ = self.runtime.cleanup(&workspace).await;
        }
    }
}
