//! Isolated task runtimes for agentic: the setup -> execute -> collect artifacts -> cleanup
//! lifecycle behind [`IsolatedTaskRuntime`], with [`SubprocessRuntime`] as the default.
//!
//! This crate runs processes. It knows nothing of workflows, expressions, scoring or HTTP: the
//! engine turns a command step into an [`ExecutionRequest`] and gets an [`ExecutionOutcome`] back.
//! It is NOT a security boundary against a determined attacker (no seccomp, no mount namespace,
//! no cgroups); it keeps honest-but-buggy agent code from harming the host and
//! records in a [`ProtectionReport`] exactly which protections applied to each run.
//!
//! # Use
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentic_runtime::RuntimeError> {
//! use std::time::Duration;
//! use agentic_core::workflow::RuntimeSpec;
//! use agentic_runtime::{ExecutionRequest, runtime_for};
//!
//! let spec = RuntimeSpec::default(); // the workflow's or step's `runtime:` block
//! let runtime = runtime_for(&spec)?; // subprocess unless `kind: docker`
//! let workspace = runtime.setup().await?; // a fresh directory
//! let request = ExecutionRequest::new(["sh", "-c", "echo hello > out.txt; cat out.txt"])
//!     .with_runtime_spec(&spec)
//!     .with_timeout(Duration::from_secs(30));
//! let outcome = runtime.execute(&workspace, &request).await?;
//! assert!(outcome.success());
//! println!("{}", outcome.stdout.text);
//! println!("{}", outcome.protections.render_text());
//! let artifacts = runtime.collect_artifacts(&workspace).await?; // files under work/
//! runtime.cleanup(&workspace).await?; // removes the directory
//! # let _ = artifacts; Ok(()) }
//! ```
//!
//! # Contract
//!
//! - `execute` returns `Ok` whenever the program started: a non-zero exit, a signal, a timeout
//!   or a resource limit is an [`ExecutionOutcome`] ([`Termination`] says which). `Err` means the
//!   run could not happen ([`RuntimeError`]: program not found, bad request, sandbox failure).
//! - **Cancellation:** `execute` is cancel-safe. Dropping its future (for example the losing
//!   branch of `tokio::select!` with the engine's cancellation token) sends `SIGKILL` to the whole
//!   process group at once; a blocking thread then reaps the leader.
//! - When the program ends (exit, timeout or cancel) every process left in its group is killed:
//!   no orphan survives. When the engine itself dies, even by `SIGKILL`, a supervisor process
//!   that leads the group kills it. A process that starts its own session (`setsid`, a daemon)
//!   dies too: where the kernel allows, the step runs in its own PID namespace under an init that
//!   the runtime writes, and the kernel kills the whole namespace when that init exits; elsewhere
//!   the supervisor is a child subreaper that kills every descendant. What remains: in the
//!   fallback, a descendant outside the group survives if the supervisor itself is killed with
//!   `SIGKILL` from outside the runtime; with the namespace, `/proc` still shows host pids.
//! - `cleanup` is idempotent; a workspace is not removed on drop.
//!
//! # Wiring it into the engine
//!
//! A command step maps onto one request: `argv`, `env`, `stdin` and `timeout_s` of the step;
//! limits, network, allow-list and output cap from the effective `runtime:` block
//! ([`ExecutionRequest::with_runtime_spec`]). Use [`IsolatedTaskRuntime::setup_in`] to run in the
//! engine's own run directory, and race `execute` against the cancel signal:
//!
//! ```no_run
//! # async fn demo(
//! #     runtime: &dyn agentic_runtime::IsolatedTaskRuntime,
//! #     run_dir: &std::path::Path,
//! #     step: &agentic_core::Step,
//! #     spec: &agentic_core::workflow::RuntimeSpec,
//! #     cancelled: impl std::future::Future<Output = ()>,
//! # ) -> Result<(), agentic_runtime::RuntimeError> {
//! use std::time::Duration;
//! use agentic_runtime::ExecutionRequest;
//!
//! let workspace = runtime.setup_in(run_dir).await?;
//! let mut request = ExecutionRequest::new(step.argv.clone().unwrap_or_default()).with_runtime_spec(spec);
//! request.env = step.env.iter().map(|(name, value)| (name.clone(), value.clone())).collect();
//! request.stdin = step.stdin.clone();
//! request.timeout = step.timeout_s.and_then(|seconds| Duration::try_from_secs_f64(seconds).ok());
//! tokio::select! {
//!     outcome = runtime.execute(&workspace, &request) => {
//!         let outcome = outcome?;
//!         // Store `outcome.protections` (serde) with the step result.
//!         let _ = outcome;
//!     }
//!     () = cancelled => { /* the dropped future already killed the process group */ }
//! }
//! runtime.cleanup(&workspace).await?; // leaves `run_dir` itself alone
//! # Ok(()) }
//! ```
//!
//! What each protection does, what applies on the development machines and how to read the
//! report: `docs/runtime.md`.

mod docker;
mod error;
mod outcome;
mod report;
mod request;
mod sandbox;
mod subprocess;
mod workspace;

use agentic_core::workflow::{RuntimeKind, RuntimeSpec};
use async_trait::async_trait;

pub use docker::DockerRuntime;
pub use error::{Result, RuntimeError};
pub use outcome::{CapturedOutput, ExecutionOutcome, ResourceUsage, Termination};
pub use report::{Protection, ProtectionReport, ProtectionStatus};
pub use request::{
    DEFAULT_ENV_ALLOW, DEFAULT_OUTPUT_LIMIT_BYTES, ExecutionRequest, FALLBACK_PATH, MemoryLimitKind, ResourceLimits,
};
pub use sandbox::{HostCapabilities, RunAs, host_capabilities};
pub use subprocess::{DEFAULT_KILL_GRACE, SubprocessRuntime};
pub use workspace::{Artifact, MAX_ARTIFACTS, Workspace};

/// A runtime that runs command steps in isolation, in four phases.
///
/// One workspace may serve several `execute` calls (for example the attempts of an iterative
/// step); artifacts are the files left in [`Workspace::work_dir`].
#[async_trait]
pub trait IsolatedTaskRuntime: Send + Sync + std::fmt::Debug {
    /// Which kind of runtime this is.
    fn kind(&self) -> RuntimeKind;

    /// Creates a fresh workspace.
    async fn setup(&self) -> Result<Workspace>;

    /// Creates a workspace whose work directory is the existing directory `work_dir` (for
    /// example the engine's per-run directory). `cleanup` leaves `work_dir` itself alone.
    async fn setup_in(&self, work_dir: &std::path::Path) -> Result<Workspace>;

    /// Runs one process in `workspace`. Cancel-safe: dropping the future kills the process group.
    async fn execute(&self, workspace: &Workspace, request: &ExecutionRequest) -> Result<ExecutionOutcome>;

    /// Lists the files the runs left in the workspace's work directory.
    async fn collect_artifacts(&self, workspace: &Workspace) -> Result<Vec<Artifact>>;

    /// Removes the workspace. Idempotent.
    async fn cleanup(&self, workspace: &Workspace) -> Result<()>;
}

/// Chooses the runtime a `runtime:` block asks for: `subprocess` (the default) or `docker`.
///
/// `docker` returns a [`DockerRuntime`], which fails at `setup` in this build (no Docker client
/// yet); it needs `image`.
pub fn runtime_for(spec: &RuntimeSpec) -> Result<Box<dyn IsolatedTaskRuntime>> {
    match spec.kind {
        RuntimeKind::Subprocess => Ok(Box::new(SubprocessRuntime::new())),
        RuntimeKind::Docker => {
            let image = spec.image.clone().filter(|image| !image.trim().is_empty()).ok_or_else(|| {
                RuntimeError::InvalidConfig {
                    reason: "`runtime.kind: docker` needs `runtime.image`, the image to run the step in".to_owned(),
                }
            })?;
            Ok(Box::new(DockerRuntime { image }))
        }
    }
}
