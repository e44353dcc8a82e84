//! The command port: how the engine runs a `command` step's argv.
//!
//! [`CommandRunner`] is what the engine needs from a runtime: run one argv in a directory with
//! a timeout, stop it (its whole process group) when the run is cancelled, and return what
//! it printed. The sandboxed implementation comes from `agentic-runtime`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentic_core::workflow::RuntimeSpec;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cancel::CancelToken;

/// One process to run for a command step.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandSpec {
    /// The step it belongs to.
    pub step: String,
    /// The program and its arguments; never run through a shell.
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Text written to standard input.
    pub stdin: Option<String>,
    /// The working directory (the run's workspace).
    pub workdir: PathBuf,
    /// Wall-clock limit of this attempt; the whole process group is killed when it passes.
    pub timeout: Option<Duration>,
    /// Sandbox settings: the workflow's `runtime:` with the step's on top.
    pub runtime: RuntimeSpec,
}

/// What a finished (or stopped) command produced.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CommandOutput {
    /// The exit code, when the process exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Captured standard output (possibly truncated).
    pub stdout: String,
    /// Captured standard error (possibly truncated).
    pub stderr: String,
    /// The timeout passed and the process group was killed.
    pub timed_out: bool,
    /// The run was cancelled and the process group was killed.
    pub cancelled: bool,
    /// Output beyond the limit was dropped.
    pub truncated: bool,
    /// Wall-clock time.
    pub duration_ms: f64,
    /// Runtime-specific facts (termination class, resource usage, sandbox report).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

/// Why a command could not be run at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The program could not be started.
    #[error("cannot start `{program}`: {message}")]
    Spawn {
        /// `argv[0]`.
        program: String,
        /// Why, and what to do.
        message: String,
    },
    /// The runtime failed around the process (sandbox setup, pipes).
    #[error("runtime failure: {0}")]
    Runtime(String),
    /// The step asks for something this runtime cannot provide.
    #[error("unsupported by this runtime: {0}")]
    Unsupported(String),
}

/// Runs command steps.
#[async_trait]
pub trait CommandRunner: Send + Sync {
    /// A short name, for example `subprocess`.
    fn name(&self) -> &str;

    /// Which protections this runner applies (recorded in `run.json`).
    fn protections(&self) -> Value;

    /// Runs `spec`. Must kill the whole process group on timeout and when `cancel` fires,
    /// and must leave no process behind when it returns.
    async fn run(&self, spec: CommandSpec, cancel: CancelToken) -> Result<CommandOutput, CommandError>;

    /// Releases what the runner set up for `workdir` (called once when a run ends).
    async fn finish(&self, _workdir: &Path) {}
}
