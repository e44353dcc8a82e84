//! [`ProtectionReport`]: which isolation measures applied to a run, and why others did not.
//!
//! Scores from runs with different isolation must not be silently mixed, so every outcome
//! carries this report and the engine stores it with the step result.

use serde::{Deserialize, Serialize};

/// Whether one protection applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtectionStatus {
    /// The protection was in force when the program started.
    Applied,
    /// The request did not ask for it (for example `network: true`, or no limit set).
    NotRequested,
    /// The request asked for it but this kernel or this process cannot provide it.
    NotAvailable,
}

/// The status of one protection with a human-readable detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protection {
    /// Applied, not requested, or not available.
    pub status: ProtectionStatus,
    /// What exactly applied (a value, an ABI version) or why it did not.
    pub detail: String,
}

impl Protection {
    pub(crate) fn applied(detail: impl Into<String>) -> Self {
        Self { status: ProtectionStatus::Applied, detail: detail.into() }
    }

    pub(crate) fn not_requested(detail: impl Into<String>) -> Self {
        Self { status: ProtectionStatus::NotRequested, detail: detail.into() }
    }

    pub(crate) fn not_available(detail: impl Into<String>) -> Self {
        Self { status: ProtectionStatus::NotAvailable, detail: detail.into() }
    }

    /// For reports stored before a protection existed: not available, and says so.
    fn not_recorded() -> Self {
        Self::not_available("not recorded (the report predates this protection)")
    }

    /// `true` when the protection was in force.
    pub fn is_applied(&self) -> bool {
        self.status == ProtectionStatus::Applied
    }
}

/// Every protection the runtime knows, for one run.
///
/// Serialized as a JSON object with one key per protection, each `{status, detail}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectionReport {
    /// The runtime that ran the step (`subprocess`).
    pub runtime: String,
    /// The user the step runs as: an unprivileged one, or root.
    pub user: Protection,
    /// A fresh workspace directory as working directory, `HOME` and `TMPDIR`.
    pub workspace: Protection,
    /// Own session and process group; the whole group is killed on timeout, cancel and exit.
    pub process_group: Protection,
    /// A supervisor with `PR_SET_PDEATHSIG` leads the group and kills it when the engine process dies.
    pub parent_death_signal: Protection,
    /// Wall-clock timeout.
    pub timeout: Protection,
    /// Environment cleared to an allow-list.
    pub environment: Protection,
    /// Captured output capped in size.
    pub output_cap: Protection,
    /// `RLIMIT_CPU`.
    pub cpu_time_limit: Protection,
    /// `RLIMIT_DATA` or `RLIMIT_AS`.
    pub memory_limit: Protection,
    /// `RLIMIT_NPROC`.
    pub process_limit: Protection,
    /// `RLIMIT_NOFILE`.
    pub open_files_limit: Protection,
    /// `RLIMIT_FSIZE`.
    pub file_size_limit: Protection,
    /// `RLIMIT_CORE = 0`.
    pub core_dumps_disabled: Protection,
    /// A user namespace: the process has no capabilities on the host, so it cannot raise its limits.
    pub user_namespace: Protection,
    /// A network namespace with only a loopback device that is down: no network at all.
    pub network_namespace: Protection,
    /// A PID namespace under an init process: when the init exits the kernel kills every process in it.
    #[serde(default = "Protection::not_recorded")]
    pub pid_namespace: Protection,
    /// No process of the step survives its end, timeout or cancellation, not even one that left
    /// the group with `setsid`: by the PID namespace, or by a child-subreaper supervisor.
    #[serde(default = "Protection::not_recorded")]
    pub kill_all_descendants: Protection,
    /// Landlock filesystem rules: read and execute everywhere, write only in the workspace.
    pub landlock_filesystem: Protection,
    /// Landlock network rules: no TCP bind or connect (TCP only).
    pub landlock_network: Protection,
}

impl ProtectionReport {
    /// Every protection with its field name, in a stable order.
    pub fn entries(&self) -> [(&'static str, &Protection); 19] {
        [
            ("user", &self.user),
            ("workspace", &self.workspace),
            ("process_group", &self.process_group),
            ("parent_death_signal", &self.parent_death_signal),
            ("timeout", &self.timeout),
            ("environment", &self.environment),
            ("output_cap", &self.output_cap),
            ("cpu_time_limit", &self.cpu_time_limit),
            ("memory_limit", &self.memory_limit),
            ("process_limit", &self.process_limit),
            ("open_files_limit", &self.open_files_limit),
            ("file_size_limit", &self.file_size_limit),
            ("core_dumps_disabled", &self.core_dumps_disabled),
            ("user_namespace", &self.user_namespace),
            ("network_namespace", &self.network_namespace),
            ("pid_namespace", &self.pid_namespace),
            ("kill_all_descendants", &self.kill_all_descendants),
            ("landlock_filesystem", &self.landlock_filesystem),
            ("landlock_network", &self.landlock_network),
        ]
    }

    /// `true` when some protection cut the network (namespace or Landlock TCP rules).
    pub fn network_cut(&self) -> bool {
        self.network_namespace.is_applied() || self.landlock_network.is_applied()
    }

    /// One line per protection, like `landlock_filesystem  applied  ABI 7: ...`.
    pub fn render_text(&self) -> String {
        let mut text = String::new();
        for (name, protection) in self.entries() {
            let status = match protection.status {
                ProtectionStatus::Applied => "applied",
                ProtectionStatus::NotRequested => "not requested",
                ProtectionStatus::NotAvailable => "NOT AVAILABLE",
            };
            text.push_str(&format!("{name:<20} {status:<14} {}\n", protection.detail));
        }
        text
    }
}
