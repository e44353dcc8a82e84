//! What to run: [`ExecutionRequest`] and its [`ResourceLimits`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agentic_core::workflow::RuntimeSpec;
use serde::{Deserialize, Serialize};

/// Largest captured stdout or stderr by default (1 MiB per stream).
pub const DEFAULT_OUTPUT_LIMIT_BYTES: u64 = 1024 * 1024;

/// Environment variables passed through from the caller's environment to every step
/// (when the caller has them). `ExecutionRequest::env_allow` adds more.
pub const DEFAULT_ENV_ALLOW: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/// PATH given to the step when the caller has none.
pub const FALLBACK_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Which kernel limit implements [`ResourceLimits::memory_mb`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryLimitKind {
    /// `RLIMIT_DATA`: heap and private writable mappings (the default; leaves
    /// address-space reservations of JVM, Go or ASan alone).
    #[default]
    Data,
    /// `RLIMIT_AS`: the whole virtual address space (strict; breaks runtimes that reserve a lot).
    AddressSpace,
}

/// Per-process resource limits (`setrlimit`). `None` leaves the caller's limit in place.
///
/// The limits apply to each process of the step; they are inherited by the processes it starts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// CPU time in seconds (`RLIMIT_CPU`): `SIGXCPU` at the limit, `SIGKILL` one second later.
    pub cpu_time_s: Option<u64>,
    /// Memory in MiB (see [`MemoryLimitKind`]): allocations beyond it fail.
    pub memory_mb: Option<u64>,
    /// Which kernel limit implements `memory_mb`.
    pub memory_kind: MemoryLimitKind,
    /// Processes (`RLIMIT_NPROC`); counted per user, so only meaningful inside a user namespace.
    pub max_processes: Option<u64>,
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub max_open_files: Option<u64>,
    /// Largest file the step may write, in MiB (`RLIMIT_FSIZE`; `SIGXFSZ` beyond it).
    pub max_file_size_mb: Option<u64>,
}

impl ResourceLimits {
    /// The limits a workflow's [`RuntimeSpec`] asks for.
    pub fn from_spec(spec: &RuntimeSpec) -> Self {
        Self {
            cpu_time_s: spec.cpu_time_s,
            memory_mb: spec.memory_mb,
            memory_kind: MemoryLimitKind::default(),
            max_processes: spec.max_processes,
            max_open_files: spec.max_open_files,
            max_file_size_mb: None,
        }
    }
}

/// One process to run inside a [`Workspace`](crate::Workspace).
///
/// Build it with [`ExecutionRequest::new`] and adjust the public fields, or take the policy of a
/// workflow's `runtime:` block with [`ExecutionRequest::with_runtime_spec`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionRequest {
    /// The program and its arguments; never a shell string. `argv[0]` is searched in the step's PATH.
    pub argv: Vec<String>,
    /// Extra environment variables set for the step (after the allow-list; they win).
    pub env: BTreeMap<String, String>,
    /// Names of variables passed through from the caller's environment, besides [`DEFAULT_ENV_ALLOW`].
    pub env_allow: Vec<String>,
    /// Text written to standard input, which is then closed; `None` connects the null device.
    pub stdin: Option<String>,
    /// Wall-clock limit; when it passes the whole process group gets `SIGTERM`, then `SIGKILL`.
    pub timeout: Option<Duration>,
    /// Resource limits.
    pub limits: ResourceLimits,
    /// Allow network access. `false` (the default) cuts the network where the kernel allows.
    pub network: bool,
    /// Largest captured stdout and largest captured stderr, in bytes; the rest is read and dropped.
    pub output_limit_bytes: u64,
    /// Working directory relative to the workspace's work directory (default: the work directory).
    pub workdir: Option<PathBuf>,
}

impl ExecutionRequest {
    /// A request with the default policy: no network, default allow-list, 1 MiB output cap,
    /// no timeout, no resource limits.
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            argv: argv.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            env_allow: Vec::new(),
            stdin: None,
            timeout: None,
            limits: ResourceLimits::default(),
            network: false,
            output_limit_bytes: DEFAULT_OUTPUT_LIMIT_BYTES,
            workdir: None,
        }
    }

    /// Applies a workflow's `runtime:` settings: limits, network, allow-list and output cap.
    pub fn with_runtime_spec(mut self, spec: &RuntimeSpec) -> Self {
        self.limits = ResourceLimits::from_spec(spec);
        self.network = spec.network;
        self.env_allow = spec.env_allow.clone();
        self.output_limit_bytes = spec.output_limit_bytes.unwrap_or(DEFAULT_OUTPUT_LIMIT_BYTES);
        self
    }

    /// Sets the wall-clock timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the text written to standard input.
    pub fn with_stdin(mut self, stdin: impl Into<String>) -> Self {
        self.stdin = Some(stdin.into());
        self
    }

    /// Adds one environment variable.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_spec_maps_onto_the_request() {
        let spec = RuntimeSpec {
            network: true,
            memory_mb: Some(256),
            cpu_time_s: Some(5),
            max_processes: Some(32),
            max_open_files: Some(64),
            env_allow: vec!["HOME_DIR".into()],
            output_limit_bytes: Some(10),
            ..RuntimeSpec::default()
        };
        let request = ExecutionRequest::new(["true"]).with_runtime_spec(&spec);
        assert!(request.network);
        assert_eq!(request.limits.memory_mb, Some(256));
        assert_eq!(request.limits.cpu_time_s, Some(5));
        assert_eq!(request.limits.max_processes, Some(32));
        assert_eq!(request.limits.max_open_files, Some(64));
        assert_eq!(request.env_allow, ["HOME_DIR"]);
        assert_eq!(request.output_limit_bytes, 10);
        let default = ExecutionRequest::new(["true"]).with_runtime_spec(&RuntimeSpec::default());
        assert!(!default.network);
        assert_eq!(default.output_limit_bytes, DEFAULT_OUTPUT_LIMIT_BYTES);
    }
}
