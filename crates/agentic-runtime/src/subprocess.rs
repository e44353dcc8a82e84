//! [`SubprocessRuntime`]: runs a step as a sandboxed local process group.
//!
//! Lifecycle of one `execute`: build the environment from the allow-list, plan the sandbox
//! against the probed host capabilities, spawn with the child setup (new session, death signal,
//! namespaces, rlimits, Landlock, then a supervisor fork that leads the group and mirrors the
//! program's exit status), stream stdout and stderr into capped buffers while a blocking
//! thread waits for the leader (`waitid(WNOWAIT)`), kills the rest of the group, and reaps it with
//! `wait4` for the resource usage. A timer sends `SIGTERM` then `SIGKILL` to the group on timeout,
//! and a drop guard sends `SIGKILL` to the group when the future is dropped (cancellation).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use agentic_core::workflow::RuntimeKind;

use crate::IsolatedTaskRuntime;
use crate::error::{Result, RuntimeError};
use crate::outcome::{CapturedOutput, ExecutionOutcome, ResourceUsage, Termination};
use crate::report::ProtectionReport;
use crate::request::{DEFAULT_ENV_ALLOW, ExecutionRequest, FALLBACK_PATH, ResourceLimits};
use crate::sandbox::{self, HostCapabilities, RunAs, SandboxOptions, Stage, StepIdentity};
use crate::workspace::{Artifact, Workspace};

/// Default time between `SIGTERM` and `SIGKILL` when a timeout ends a run.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// How long output is still read after the process group is gone, in case a process that left
/// the group (its own `setsid`) still holds the pipe open.
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// The default runtime: each step is a local process in its own session and process group,
/// in a fresh workspace, with the protections the kernel allows (see [`ProtectionReport`]).
#[derive(Debug, Clone)]
pub struct SubprocessRuntime {
    base_dir: PathBuf,
    options: SandboxOptions,
}

impl Default for SubprocessRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl SubprocessRuntime {
    /// A runtime that creates workspaces in the system temporary directory, with user namespaces
    /// and Landlock on where available and a 2 s kill grace.
    pub fn new() -> Self {
        Self {
            base_dir: std::env::temp_dir(),
            options: SandboxOptions {
                run_as: None,
                user_namespace: true,
                network_namespace: true,
                pid_namespace: true,
                landlock: true,
                kill_grace: DEFAULT_KILL_GRACE,
            },
        }
    }

    /// Creates workspaces under `base_dir` instead of the system temporary directory.
    pub fn with_base_dir(mut self, base_dir: impl Into<PathBuf>) -> Self {
        self.base_dir = base_dir.into();
        self
    }

    /// Sets the time between `SIGTERM` and `SIGKILL` on timeout.
    pub fn with_kill_grace(mut self, grace: Duration) -> Self {
        self.options.kill_grace = grace;
        self
    }

    /// When the engine runs as root, runs every step as this unprivileged user instead (the
    /// workspace is handed to it). This makes `max_processes` enforceable (the kernel exempts
    /// uid 0) and file permissions meaningful; the step then cannot read root-only paths such as
    /// toolchains installed under `/root`. Ignored when the engine is not root.
    pub fn with_run_as(mut self, run_as: RunAs) -> Self {
        self.options.run_as = Some(run_as);
        self
    }

    /// Switches the user namespace on or off (on by default where the kernel allows).
    pub fn with_user_namespace(mut self, enabled: bool) -> Self {
        self.options.user_namespace = enabled;
        self
    }

    /// Switches network namespaces on or off (on by default where the kernel allows). Off, a
    /// step without network is only cut off by Landlock's TCP rules, where available.
    pub fn with_network_namespace(mut self, enabled: bool) -> Self {
        self.options.network_namespace = enabled;
        self
    }

    /// Switches PID namespaces on or off (on by default where the kernel allows). Off, the
    /// supervisor is a child subreaper that kills every descendant instead (see `docs/runtime.md`).
    pub fn with_pid_namespace(mut self, enabled: bool) -> Self {
        self.options.pid_namespace = enabled;
        self
    }

    /// Switches Landlock on or off (on by default where the kernel allows).
    pub fn with_landlock(mut self, enabled: bool) -> Self {
        self.options.landlock = enabled;
        self
    }

    async fn create_workspace(&self, work_dir: Option<PathBuf>) -> Result<Workspace> {
        let base_dir = self.base_dir.clone();
        // Probe the host now, so the first `execute` does not pay for it.
        let identity = StepIdentity::resolve(sandbox::host_capabilities(), self.options);
        let owner = identity.switched.then_some((identity.uid, identity.gid));
        tokio::task::spawn_blocking(move || Workspace::create(&base_dir, work_dir.as_deref(), owner)).await.map_err(
            |error| RuntimeError::Workspace {
                path: self.base_dir.clone(),
                action: "create",
                source: io::Error::other(error),
            },
        )?
    }

    /// The protections `request` would get in `workspace`, without running anything.
    ///
    /// The same planning as `execute`; the report of a real run can only differ when building the
    /// Landlock ruleset fails at spawn time (then it says so).
    pub fn planned_protections(&self, workspace: &Workspace, request: &ExecutionRequest) -> ProtectionReport {
        let capabilities = sandbox::host_capabilities();
        let identity = StepIdentity::resolve(capabilities, self.options);
        let (_, environment_detail) = build_environment(request, workspace, workspace.work_dir());
        let (_, report) = sandbox::plan(
            request,
            capabilities,
            &identity,
            self.options,
            &workspace.writable_dirs(),
            environment_detail,
            &sandbox::own_hard_limit,
        );
        report
    }

    /// What this host allows (probed once per process, then cached).
    pub fn host_capabilities() -> &'static HostCapabilities {
        sandbox::host_capabilities()
    }
}

#[async_trait]
impl IsolatedTaskRuntime for SubprocessRuntime {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Subprocess
    }

    async fn setup(&self) -> Result<Workspace> {
        self.create_workspace(None).await
    }

    async fn setup_in(&self, work_dir: &Path) -> Result<Workspace> {
        self.create_workspace(Some(work_dir.to_path_buf())).await
    }

    async fn execute(&self, workspace: &Workspace, request: &ExecutionRequest) -> Result<ExecutionOutcome> {
        execute(self.options, workspace, request).await
    }

    async fn collect_artifacts(&self, workspace: &Workspace) -> Result<Vec<Artifact>> {
        let workspace = workspace.clone();
        let root = workspace.root().to_path_buf();
        tokio::task::spawn_blocking(move || workspace.list_artifacts())
            .await
            .map_err(|error| RuntimeError::Workspace { path: root, action: "list", source: io::Error::other(error) })?
    }

    async fn cleanup(&self, workspace: &Workspace) -> Result<()> {
        let workspace = workspace.clone();
        let root = workspace.root().to_path_buf();
        tokio::task::spawn_blocking(move || workspace.remove()).await.map_err(|error| RuntimeError::Workspace {
            path: root,
            action: "remove",
            source: io::Error::other(error),
        })?
    }
}

fn validate(request: &ExecutionRequest) -> Result<String> {
    let program = request.argv.first().ok_or(RuntimeError::EmptyArgv)?;
    if program.is_empty() {
        return Err(RuntimeError::EmptyArgv);
    }
    if let Some(arg) = request.argv.iter().find(|arg| arg.contains('\0')) {
        return Err(RuntimeError::InvalidRequest {
            reason: format!("argument `{}` contains a NUL byte; remove it", arg.escape_debug()),
        });
    }
    for (name, value) in &request.env {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            return Err(RuntimeError::InvalidRequest {
                reason: format!(
                    "environment variable `{}` is invalid; names must be non-empty without `=` or NUL, values without NUL",
                    name.escape_debug()
                ),
            });
        }
    }
    Ok(program.clone())
}

/// The step's environment: the allow-list from the caller, `HOME`, `TMPDIR`, then the step's variables.
fn build_environment(
    request: &ExecutionRequest,
    workspace: &Workspace,
    cwd: &Path,
) -> (BTreeMap<String, OsString>, String) {
    let mut env = BTreeMap::new();
    let mut passed = Vec::new();
    let allowed = DEFAULT_ENV_ALLOW.iter().map(|name| (*name).to_owned()).chain(request.env_allow.iter().cloned());
    for name in allowed {
        if env.contains_key(&name) {
            continue;
        }
        if let Some(value) = std::env::var_os(&name) {
            passed.push(name.clone());
            env.insert(name, value);
        }
    }
    env.entry("PATH".to_owned()).or_insert_with(|| OsString::from(FALLBACK_PATH));
    env.insert("HOME".to_owned(), workspace.home_dir().into_os_string());
    env.insert("TMPDIR".to_owned(), workspace.tmp_dir().into_os_string());
    env.insert("PWD".to_owned(), cwd.as_os_str().to_owned());
    for (name, value) in &request.env {
        env.insert(name.clone(), OsString::from(value));
    }
    let step_names: Vec<&str> = request.env.keys().map(String::as_str).collect();
    let detail = format!(
        "cleared; passed through: [{}]; set: [HOME, TMPDIR, PWD]; step variables: [{}]",
        passed.join(", "),
        step_names.join(", ")
    );
    (env, detail)
}

async fn execute(
    options: SandboxOptions,
    workspace: &Workspace,
    request: &ExecutionRequest,
) -> Result<ExecutionOutcome> {
    let program = validate(request)?;
    let cwd = workspace.resolve_workdir(request.workdir.as_deref())?;
    let (env, environment_detail) = build_environment(request, workspace, &cwd);
    let capabilities = sandbox::host_capabilities();
    let identity = StepIdentity::resolve(capabilities, options);
    let (plan, mut report) = sandbox::plan(
        request,
        capabilities,
        &identity,
        options,
        &workspace.writable_dirs(),
        environment_detail,
        &sandbox::own_hard_limit,
    );
    let setup = sandbox::prepare(&plan, &identity, &workspace.writable_dirs(), &mut report);
    // Without a PID namespace a group-wide SIGKILL would kill the subreaper supervisor before
    // it could kill the processes that left the group, so the supervisor is asked to do it.
    let kill_through_supervisor = !plan.pid_namespace();

    let mut command = std::process::Command::new(&program);
    command
        .args(&request.argv[1..])
        .env_clear()
        .envs(&env)
        .current_dir(&cwd)
        .stdin(if request.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if identity.switched {
        // std drops the supplementary groups, then sets the gid and the uid, before our setup runs.
        command.uid(identity.uid).gid(identity.gid);
    }
    let started = Instant::now();
    let mut child =
        sandbox::spawn_on_spawner(command, setup, kill_through_supervisor).await.map_err(|(stage, error)| {
            spawn_error(&program, &cwd, env.get("PATH").map(|path| path.to_string_lossy().into_owned()), stage, error)
        })?;
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let group = Arc::new(ProcessGroup { leader: pid, reaped: Mutex::new(false), kill_through_supervisor });
    let _kill_on_drop = KillOnDrop(Arc::clone(&group));
    // Start reaping at once: whatever happens below, the leader is waited for and never left a zombie.
    let waiter = tokio::task::spawn_blocking({
        let group = Arc::clone(&group);
        move || group.wait()
    });

    let stdin = child.stdin.take().map(tokio::process::ChildStdin::from_std).transpose();
    let stdout = child.stdout.take().map(tokio::process::ChildStdout::from_std).transpose();
    let stderr = child.stderr.take().map(tokio::process::ChildStderr::from_std).transpose();
    // The std `Child` has no drop side effects; the process group owns the process from here on.
    drop(child);
    let (stdin, stdout, stderr) = match (stdin, stdout, stderr) {
        (Ok(stdin), Ok(stdout), Ok(stderr)) => (stdin, stdout, stderr),
        (Err(source), _, _) | (_, Err(source), _) | (_, _, Err(source)) => {
            // `_kill_on_drop` kills the group; the waiter reaps the leader.
            return Err(RuntimeError::Spawn { program, source });
        }
    };

    let (exited_sender, exited) = watch::channel(false);
    let limit = request.output_limit_bytes;
    let supervise = async {
        let waited = supervise(waiter, &group, request.timeout, options.kill_grace).await;
        let _ = exited_sender.send(true);
        waited
    };
    let (stdout, stderr, (), (waited, timed_out)) = tokio::join!(
        capture(stdout, limit, exited.clone(), OUTPUT_DRAIN),
        capture(stderr, limit, exited, OUTPUT_DRAIN),
        feed(stdin, request.stdin.as_deref()),
        supervise,
    );
    let duration = started.elapsed();
    let (raw_status, usage) = waited.map_err(|source| RuntimeError::Wait { program: program.clone(), source })?;
    let (termination, exit_code, signal) = classify(pid, raw_status, timed_out, &request.limits, usage);
    Ok(ExecutionOutcome {
        termination,
        exit_code,
        signal,
        timed_out,
        stdout,
        stderr,
        duration,
        usage,
        protections: report,
    })
}

fn spawn_error(
    program: &str,
    workdir: &std::path::Path,
    path: Option<String>,
    stage: Option<Stage>,
    error: io::Error,
) -> RuntimeError {
    if let Some(stage) = stage {
        return RuntimeError::Sandbox { stage: stage.name(), source: error };
    }
    match error.kind() {
        io::ErrorKind::NotFound => {
            RuntimeError::ProgramNotFound { program: program.to_owned(), path: path.unwrap_or_default() }
        }
        // `execvp` reports EACCES when some PATH entry was unreadable, even if the program exists nowhere.
        io::ErrorKind::PermissionDenied if !program.contains('/') && !on_path(program, path.as_deref()) => {
            RuntimeError::ProgramNotFound { program: program.to_owned(), path: path.unwrap_or_default() }
        }
        io::ErrorKind::PermissionDenied => {
            RuntimeError::ProgramNotExecutable { program: program.to_owned(), workdir: workdir.to_owned() }
        }
        _ => RuntimeError::Spawn { program: program.to_owned(), source: error },
    }
}

/// Whether a file named `program` exists in one of the directories of `path`.
fn on_path(program: &str, path: Option<&str>) -> bool {
    path.unwrap_or(FALLBACK_PATH)
        .split(':')
        .filter(|dir| !dir.is_empty())
        .any(|dir| std::path::Path::new(dir).join(program).is_file())
}

/// Waits for the leader under the timeout; on timeout sends `SIGTERM`, then `SIGKILL` after the grace.
async fn supervise(
    mut waiter: tokio::task::JoinHandle<io::Result<(i32, ResourceUsage)>>,
    group: &ProcessGroup,
    timeout: Option<Duration>,
    grace: Duration,
) -> (io::Result<(i32, ResourceUsage)>, bool) {
    let flatten = |joined: std::result::Result<io::Result<(i32, ResourceUsage)>, tokio::task::JoinError>| {
        joined.unwrap_or_else(|error| Err(io::Error::other(error)))
    };
    let Some(timeout) = timeout else {
        return (flatten((&mut waiter).await), false);
    };
    if let Ok(joined) = tokio::time::timeout(timeout, &mut waiter).await {
        return (flatten(joined), false);
    }
    group.signal(Signal::SIGTERM);
    if let Ok(joined) = tokio::time::timeout(grace, &mut waiter).await {
        return (flatten(joined), true);
    }
    group.signal(Signal::SIGKILL);
    if group.kill_through_supervisor {
        if let Ok(joined) = tokio::time::timeout(SUPERVISOR_KILL_BOUND, &mut waiter).await {
            return (flatten(joined), true);
        }
        group.kill_group();
    }
    (flatten(waiter.await), true)
}

/// How long a subreaper supervisor may take to kill every descendant before the engine kills
/// the group itself (the supervisor gives up after about 5 s).
const SUPERVISOR_KILL_BOUND: Duration = Duration::from_secs(6);

/// Reads a stream into a buffer of at most `limit` bytes, draining (and counting) the rest.
async fn capture<R: AsyncRead + Unpin>(
    reader: Option<R>,
    limit: u64,
    mut exited: watch::Receiver<bool>,
    drain: Duration,
) -> CapturedOutput {
    let Some(mut reader) = reader else {
        return CapturedOutput::default();
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut buffer = Vec::new();
    let mut chunk = vec![0_u8; 64 * 1024];
    let mut total_bytes: u64 = 0;
    let mut incomplete = false;
    let deadline = async {
        let _ = exited.wait_for(|exited| *exited).await;
        tokio::time::sleep(drain).await;
    };
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            read = reader.read(&mut chunk) => match read {
                Ok(0) | Err(_) => break,
                Ok(count) => {
                    total_bytes = total_bytes.saturating_add(count as u64);
                    let room = limit.saturating_sub(buffer.len());
                    buffer.extend_from_slice(&chunk[..count.min(room)]);
                }
            },
            () = &mut deadline => {
                incomplete = true;
                break;
            }
        }
    }
    CapturedOutput {
        text: String::from_utf8_lossy(&buffer).into_owned(),
        total_bytes,
        truncated: total_bytes > buffer.len() as u64,
        incomplete,
    }
}

/// Writes the request's standard input, then closes the pipe. A process that exits without
/// reading it is fine.
async fn feed(stdin: Option<tokio::process::ChildStdin>, text: Option<&str>) {
    if let (Some(mut pipe), Some(text)) = (stdin, text) {
        let _ = pipe.write_all(text.as_bytes()).await;
        let _ = pipe.shutdown().await;
    }
}

fn classify(
    pid: Pid,
    raw_status: i32,
    timed_out: bool,
    limits: &ResourceLimits,
    usage: ResourceUsage,
) -> (Termination, Option<i32>, Option<i32>) {
    let (exit_code, signal) = match WaitStatus::from_raw(pid, raw_status) {
        Ok(WaitStatus::Exited(_, code)) => (Some(code), None),
        Ok(WaitStatus::Signaled(_, signal, _)) => (None, Some(signal as i32)),
        _ => (None, None),
    };
    let cpu_ms = usage.user_cpu_ms.saturating_add(usage.system_cpu_ms);
    let termination = if timed_out {
        Termination::TimedOut
    } else if let Some(code) = exit_code {
        Termination::Exited { code }
    } else if let Some(signal) = signal {
        let at_cpu_limit = limits.cpu_time_s.is_some_and(|seconds| cpu_ms >= seconds.saturating_mul(1000));
        if signal == Signal::SIGXCPU as i32 || (signal == Signal::SIGKILL as i32 && at_cpu_limit) {
            Termination::CpuLimit { signal }
        } else if signal == Signal::SIGXFSZ as i32 {
            Termination::FileSizeLimit
        } else {
            let name = Signal::try_from(signal).map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_owned());
            Termination::Signaled { signal, name }
        }
    } else {
        Termination::Signaled { signal: 0, name: format!("unknown wait status {raw_status:#x}") }
    };
    (termination, exit_code, signal)
}

/// The step's process group, named by its leader's pid (the leader called `setsid`).
///
/// The leader is reaped only under the `reaped` lock, so a signal sent under the same lock can
/// never reach a recycled process group id.
struct ProcessGroup {
    leader: Pid,
    reaped: Mutex<bool>,
    /// `SIGKILL` means "ask the subreaper supervisor to kill every descendant" (no PID namespace).
    kill_through_supervisor: bool,
}

impl ProcessGroup {
    fn signal(&self, signal: Signal) {
        let reaped = self.reaped.lock().unwrap_or_else(PoisonError::into_inner);
        if !*reaped {
            if signal == Signal::SIGKILL && self.kill_through_supervisor {
                let _ = nix::sys::signal::kill(self.leader, sandbox::KILL_ALL_SIGNAL);
            } else {
                let _ = killpg(self.leader, signal);
            }
        }
    }

    /// Sends `SIGKILL` to the whole group, supervisor included.
    fn kill_group(&self) {
        let reaped = self.reaped.lock().unwrap_or_else(PoisonError::into_inner);
        if !*reaped {
            let _ = killpg(self.leader, Signal::SIGKILL);
        }
    }

    fn is_reaped(&self) -> bool {
        *self.reaped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until the leader exits, kills what is left of the group, reaps the leader.
    fn wait(&self) -> io::Result<(i32, ResourceUsage)> {
        loop {
            match waitid(Id::Pid(self.leader), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                Ok(_) => break,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(errno) => return Err(errno.into()),
            }
        }
        let mut reaped = self.reaped.lock().unwrap_or_else(PoisonError::into_inner);
        // The leader is a zombie, so its pid (the group id) cannot be reused yet.
        let _ = killpg(self.leader, Signal::SIGKILL);
        let result = reap_with_usage(self.leader);
        *reaped = true;
        result
    }
}

/// Kills the group when `execute` is dropped before the leader was reaped (cancellation).
struct KillOnDrop(Arc<ProcessGroup>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.signal(Signal::SIGKILL);
        if self.0.kill_through_supervisor && !self.0.is_reaped() {
            // Backstop: should the supervisor not finish, kill the group after the bound.
            let group = Arc::clone(&self.0);
            let _ = std::thread::Builder::new().name("agentic-kill-backstop".to_owned()).spawn(move || {
                let deadline = Instant::now() + SUPERVISOR_KILL_BOUND;
                while Instant::now() < deadline && !group.is_reaped() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                group.kill_group();
            });
        }
    }
}

/// Reaps `pid` with `wait4`, which also returns its resource usage (nix has no `wait4`).
#[allow(unsafe_code)]
fn reap_with_usage(pid: Pid) -> io::Result<(i32, ResourceUsage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is a C struct of integers, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers point to live, writable locals of the types wait4 expects.
        let result = unsafe { libc::wait4(pid.as_raw(), &mut status, 0, &mut usage) };
        if result == pid.as_raw() {
            break;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    let millis = |time: libc::timeval| {
        u64::try_from(time.tv_sec).unwrap_or(0).saturating_mul(1000) + u64::try_from(time.tv_usec).unwrap_or(0) / 1000
    };
    Ok((
        status,
        ResourceUsage {
            user_cpu_ms: millis(usage.ru_utime),
            system_cpu_ms: millis(usage.ru_stime),
            max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify_raw(raw_status: i32, timed_out: bool, cpu_limit: Option<u64>, cpu_ms: u64) -> Termination {
        let limits = ResourceLimits { cpu_time_s: cpu_limit, ..ResourceLimits::default() };
        let usage = ResourceUsage { user_cpu_ms: cpu_ms, ..ResourceUsage::default() };
        classify(Pid::from_raw(1), raw_status, timed_out, &limits, usage).0
    }

    #[test]
    fn exits_and_signals_are_classified() {
        assert_eq!(classify_raw(0, false, None, 0), Termination::Exited { code: 0 });
        assert_eq!(classify_raw(3 << 8, false, None, 0), Termination::Exited { code: 3 });
        assert_eq!(classify_raw(libc::SIGTERM, true, None, 0), Termination::TimedOut);
        assert_eq!(classify_raw(libc::SIGXCPU, false, Some(1), 1000), Termination::CpuLimit { signal: libc::SIGXCPU });
        // SIGKILL at the hard CPU limit is the CPU limit; SIGKILL well below it is not.
        assert_eq!(classify_raw(libc::SIGKILL, false, Some(1), 2000), Termination::CpuLimit { signal: libc::SIGKILL });
        assert_eq!(
            classify_raw(libc::SIGKILL, false, Some(10), 50),
            Termination::Signaled { signal: libc::SIGKILL, name: "SIGKILL".into() }
        );
        assert_eq!(classify_raw(libc::SIGXFSZ, false, None, 0), Termination::FileSizeLimit);
        // A core-dump bit does not change the class.
        assert_eq!(
            classify_raw(libc::SIGSEGV | 0x80, false, None, 0),
            Termination::Signaled { signal: libc::SIGSEGV, name: "SIGSEGV".into() }
        );
    }

    #[tokio::test]
    async fn capture_keeps_the_limit_and_counts_the_rest() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let (_sender, exited) = watch::channel(false);
        let writing = async move {
            writer.write_all(b"0123456789").await.unwrap();
            drop(writer);
        };
        let (captured, ()) = tokio::join!(capture(Some(reader), 4, exited, Duration::from_secs(60)), writing);
        assert_eq!(captured.text, "0123");
        assert_eq!(captured.total_bytes, 10);
        assert!(captured.truncated);
        assert!(!captured.incomplete);
    }

    #[tokio::test]
    async fn capture_stops_after_the_drain_when_the_pipe_stays_open() {
        let (mut writer, reader) = tokio::io::duplex(64);
        writer.write_all(b"tail").await.unwrap();
        let (sender, exited) = watch::channel(false);
        sender.send(true).unwrap();
        let captured = capture(Some(reader), 100, exited, Duration::from_millis(20)).await;
        assert_eq!(captured.text, "tail");
        assert!(captured.incomplete);
        assert!(!captured.truncated);
        drop(writer);
    }

    #[test]
    fn bad_requests_are_refused_with_the_reason() {
        let error = validate(&ExecutionRequest::new(["echo", "a\0b"])).unwrap_err();
        assert!(error.to_string().contains("NUL"), "{error}");
        let error = validate(&ExecutionRequest::new(["echo"]).with_env("A=B", "x")).unwrap_err();
        assert!(error.to_string().contains("`A=B`"), "{error}");
        let error = validate(&ExecutionRequest::new([""])).unwrap_err();
        assert!(matches!(error, RuntimeError::EmptyArgv), "{error}");
        assert_eq!(validate(&ExecutionRequest::new(["echo", "ok"])).unwrap(), "echo");
    }
}
