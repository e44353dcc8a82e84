//! The runtime's error type: every variant names the offending value and says what to do.

use std::path::PathBuf;

/// What went wrong while preparing, running or tearing down an isolated task.
///
/// A process that starts and then fails (non-zero exit, signal, timeout) is *not* an error:
/// it is an [`ExecutionOutcome`](crate::ExecutionOutcome). Errors are for runs that could not
/// happen at all or infrastructure that broke.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The request has no program to run.
    #[error("the command has an empty `argv`; give the program to run as `argv[0]`")]
    EmptyArgv,
    /// `argv[0]` could not be found.
    #[error(
        "program `{program}` not found; check `argv[0]` or add its directory to PATH \
         (the step sees PATH=`{path}`; pass the caller's PATH with `env_allow: [PATH]`)"
    )]
    ProgramNotFound {
        /// The program as written in `argv[0]`.
        program: String,
        /// The PATH the step process would have searched.
        path: String,
    },
    /// `argv[0]` or the working directory is not accessible.
    #[error(
        "program `{program}` could not be started in `{workdir}`: permission denied; check that the program is an \
         executable file and that the step's user can reach both"
    )]
    ProgramNotExecutable {
        /// The program as written in `argv[0]`.
        program: String,
        /// The working directory of the step.
        workdir: PathBuf,
    },
    /// The request is malformed (for example a NUL byte or a working directory outside the workspace).
    #[error("invalid command request: {reason}")]
    InvalidRequest {
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// Starting the process failed for another reason.
    #[error("could not start program `{program}`: {source}")]
    Spawn {
        /// The program as written in `argv[0]`.
        program: String,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// A sandbox step that the capability probe said would work failed in the child.
    #[error(
        "sandbox step `{stage}` failed in the child process: {source}; \
         this is an infrastructure problem, not a failure of the step (report it with the kernel version)"
    )]
    Sandbox {
        /// The sandbox step that failed (`setsid`, `user_namespace`, `landlock`, ...).
        stage: &'static str,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the process failed.
    #[error("waiting for program `{program}` failed: {source}")]
    Wait {
        /// The program as written in `argv[0]`.
        program: String,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// Creating, reading or removing the workspace failed.
    #[error(
        "workspace `{path}`: {action} failed: {source}; check that the directory is writable and the disk is not full"
    )]
    Workspace {
        /// The path that was being worked on.
        path: PathBuf,
        /// What was being done (`create`, `remove`, `list`).
        action: &'static str,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// The runtime kind was chosen but cannot work in this build or on this machine.
    #[error("{runtime} runtime is not available: {reason}")]
    Unavailable {
        /// The runtime kind (`docker`).
        runtime: &'static str,
        /// Why, and what to do instead.
        reason: String,
    },
    /// The runtime settings are inconsistent.
    #[error("invalid runtime settings: {reason}")]
    InvalidConfig {
        /// What is wrong and how to fix it.
        reason: String,
    },
}

/// Result with [`RuntimeError`] as the default error.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;
