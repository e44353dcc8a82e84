//! What came out of a run: [`ExecutionOutcome`], its [`Termination`] class and [`ResourceUsage`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::report::ProtectionReport;

/// How the process ended, classified for retries and reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Termination {
    /// The process exited by itself with this code.
    Exited {
        /// The exit code (0 is success).
        code: i32,
    },
    /// The process was killed by a signal that none of the limits below explains.
    Signaled {
        /// The signal number.
        signal: i32,
        /// The signal name, like `SIGSEGV`.
        name: String,
    },
    /// The wall-clock timeout passed and the runtime killed the process group.
    TimedOut,
    /// The CPU-time limit was reached (`SIGXCPU`, or `SIGKILL` at the hard limit).
    CpuLimit {
        /// The signal that ended the process.
        signal: i32,
    },
    /// The file-size limit was reached (`SIGXFSZ`).
    FileSizeLimit,
}

/// Resources the process (and the children it waited for) used, from `wait4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResourceUsage {
    /// User CPU time in milliseconds.
    pub user_cpu_ms: u64,
    /// System CPU time in milliseconds.
    pub system_cpu_ms: u64,
    /// Peak resident set size in KiB.
    pub max_rss_kib: u64,
}

/// A captured output stream.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CapturedOutput {
    /// The captured text (invalid UTF-8 replaced), at most the output limit in bytes.
    pub text: String,
    /// Bytes the process wrote in total, including the dropped ones.
    pub total_bytes: u64,
    /// `true` when the process wrote more than the limit and the rest was dropped.
    pub truncated: bool,
    /// `true` when reading stopped because a process outside the group still held the pipe
    /// open after the step ended (the text may miss a tail).
    pub incomplete: bool,
}

/// The result of one [`execute`](crate::IsolatedTaskRuntime::execute) call.
///
/// A process that ran and failed is still an outcome; check [`ExecutionOutcome::success`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionOutcome {
    /// How the process ended.
    pub termination: Termination,
    /// The exit code, when the process exited by itself.
    pub exit_code: Option<i32>,
    /// The signal number, when a signal ended the process.
    pub signal: Option<i32>,
    /// `true` when the wall-clock timeout ended the run.
    pub timed_out: bool,
    /// Captured standard output.
    pub stdout: CapturedOutput,
    /// Captured standard error.
    pub stderr: CapturedOutput,
    /// Wall-clock time from spawn to reaping.
    #[serde(with = "duration_ms")]
    pub duration: Duration,
    /// CPU time and peak memory.
    pub usage: ResourceUsage,
    /// Which protections applied to this run and which did not, and why.
    pub protections: ProtectionReport,
}

impl ExecutionOutcome {
    /// `true` when the process exited with code 0 within its timeout.
    pub fn success(&self) -> bool {
        matches!(self.termination, Termination::Exited { code: 0 })
    }
}

/// Serializes a [`Duration`] as whole milliseconds (`duration_ms`).
mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Protection;

    #[test]
    fn outcome_round_trips_through_json_with_tagged_termination() {
        let protection = Protection::applied("yes");
        let report = ProtectionReport {
            runtime: "subprocess".into(),
            user: Protection::not_requested("root"),
            workspace: protection.clone(),
            process_group: protection.clone(),
            parent_death_signal: protection.clone(),
            timeout: protection.clone(),
            environment: protection.clone(),
            output_cap: protection.clone(),
            cpu_time_limit: protection.clone(),
            memory_limit: protection.clone(),
            process_limit: Protection::not_available("uid 0"),
            open_files_limit: protection.clone(),
            file_size_limit: protection.clone(),
            core_dumps_disabled: protection.clone(),
            user_namespace: protection.clone(),
            network_namespace: protection.clone(),
            pid_namespace: protection.clone(),
            kill_all_descendants: protection.clone(),
            landlock_filesystem: protection.clone(),
            landlock_network: protection,
        };
        let outcome = ExecutionOutcome {
            termination: Termination::CpuLimit { signal: 24 },
            exit_code: None,
            signal: Some(24),
            timed_out: false,
            stdout: CapturedOutput { text: "out".into(), total_bytes: 3, truncated: false, incomplete: false },
            stderr: CapturedOutput::default(),
            duration: Duration::from_millis(1500),
            usage: ResourceUsage { user_cpu_ms: 1000, system_cpu_ms: 5, max_rss_kib: 2048 },
            protections: report,
        };
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(json["termination"], serde_json::json!({"kind": "cpu_limit", "signal": 24}));
        assert_eq!(json["duration"], 1500);
        assert_eq!(json["protections"]["process_limit"]["status"], "not_available");
        let back: ExecutionOutcome = serde_json::from_value(json).unwrap();
        assert_eq!(back, outcome);
        assert!(!back.success());
    }
}
