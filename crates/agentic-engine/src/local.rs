//! [`LocalRunner`]: a minimal command runner without a sandbox: its own process group,
//! an environment allow-list, an output cap, and the group killed on timeout, on cancel and
//! after the main process exits. The sandboxed runner of `agentic-runtime` is the default;
//! this one serves hosts and tests where that is not wanted.

use std::process::Stdio;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::cancel::CancelToken;
use crate::command::{CommandError, CommandOutput, CommandRunner, CommandSpec};

const DEFAULT_ENV_ALLOW: [&str; 5] = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];
const DEFAULT_OUTPUT_LIMIT: u64 = 1024 * 1024;

/// Runs commands as plain child processes in their own process group.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalRunner;

async fn read_capped(mut stream: impl AsyncRead + Unpin, limit: u64) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(count) => {
                let room = usize::try_from(limit).unwrap_or(usize::MAX).saturating_sub(kept.len());
                if count > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buffer[..count.min(room)]);
            }
        }
    }
    (kept, truncated)
}

fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
        // ESRCH (the group is already gone) is the normal case after a clean exit.
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

#[async_trait]
impl CommandRunner for LocalRunner {
    fn name(&self) -> &str {
        "local"
    }

    fn protections(&self) -> Value {
        json!({
            "runner": "local",
            "process_group": true,
            "timeout_kills_group": true,
            "env_allow_list": true,
            "output_cap": true,
            "rlimits": false,
            "landlock": false,
            "network_namespace": false,
        })
    }

    async fn run(&self, spec: CommandSpec, cancel: CancelToken) -> Result<CommandOutput, CommandError> {
        let program = spec.argv.first().cloned().unwrap_or_default();
        let mut command = tokio::process::Command::new(&program);
        command.args(&spec.argv[1..]).current_dir(&spec.workdir).env_clear().process_group(0).kill_on_drop(true);
        for name in DEFAULT_ENV_ALLOW.iter().copied().chain(spec.runtime.env_allow.iter().map(String::as_str)) {
            if let Ok(value) = std::env::var(name) {
                command.env(name, value);
            }
        }
        command.envs(&spec.env);
        command.stdin(if spec.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|error| CommandError::Spawn { program: program.clone(), message: error.to_string() })?;
        let pid = child.id();
        if let (Some(text), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
            tokio::spawn(async move {
                let _ = stdin.write_all(text.as_bytes()).await;
            });
        }
        let limit = spec.runtime.output_limit_bytes.unwrap_or(DEFAULT_OUTPUT_LIMIT);
        let stdout = tokio::spawn(read_capped(child.stdout.take().expect("stdout is piped"), limit));
        let stderr = tokio::spawn(read_capped(child.stderr.take().expect("stderr is piped"), limit));
        let timeout = spec.timeout.unwrap_or(Duration::from_secs(365 * 24 * 3600));
        let mut timed_out = false;
        let mut cancelled = false;
        let status = tokio::select! {
            status = child.wait() => status.ok(),
            () = tokio::time::sleep(timeout) => { timed_out = true; None }
            () = cancel.cancelled() => { cancelled = true; None }
        };
        kill_group(pid);
        let status = match status {
            Some(status) => Some(status),
            None => child.wait().await.ok(),
        };
        let collect = |handle: tokio::task::JoinHandle<(Vec<u8>, bool)>| async move {
            match tokio::time::timeout(Duration::from_secs(2), handle).await {
                Ok(Ok(output)) => output,
                _ => (Vec::new(), false),
            }
        };
        let (stdout, stdout_truncated) = collect(stdout).await;
        let (stderr, stderr_truncated) = collect(stderr).await;
        use std::os::unix::process::ExitStatusExt;
        Ok(CommandOutput {
            exit_code: if timed_out || cancelled { None } else { status.and_then(|status| status.code()) },
            signal: status.and_then(|status| status.signal()),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            timed_out,
            cancelled,
            truncated: stdout_truncated || stderr_truncated,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            details: Value::Null,
        })
    }
}
