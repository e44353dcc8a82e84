//! The sandbox of the subprocess runtime: capability probes, the per-run plan with its
//! [`ProtectionReport`], and the child-side setup that runs between `fork` and `exec`.
//!
//! Everything that allocates (Landlock rulesets, id-map lines, the rlimit list) is prepared in
//! the parent before `fork`; the child only makes system calls on prepared data, because after
//! `fork` in a multi-threaded process only async-signal-safe work is allowed.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::CloneFlags;
use nix::sys::resource::{Resource, getrlimit};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal, killpg, sigaction, sigprocmask};
use nix::sys::stat::Mode;
use nix::sys::wait::WaitStatus;
use nix::unistd::ForkResult;
use nix::unistd::Pid;

use crate::report::{Protection, ProtectionReport};
use crate::request::ExecutionRequest;

/// The newest Landlock ABI this runtime was tested with; newer kernels are used at this level.
const LANDLOCK_MAX_ABI: ABI = ABI::V7;

/// Device files a task may read and write although they are outside the workspace.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// The error a probe child returns on purpose after all its steps worked.
const PROBE_DONE: Errno = Errno::ECANCELED;

/// A step of the child setup, reported when it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Stage {
    Setsid = 1,
    ParentDeathSignal = 2,
    Namespaces = 3,
    IdMaps = 4,
    ResourceLimits = 5,
    NoNewPrivileges = 6,
    Landlock = 7,
    Supervisor = 8,
    PidNamespaceInit = 9,
}

impl Stage {
    fn from_byte(byte: u8) -> Option<Self> {
        [
            Self::Setsid,
            Self::ParentDeathSignal,
            Self::Namespaces,
            Self::IdMaps,
            Self::ResourceLimits,
            Self::NoNewPrivileges,
            Self::Landlock,
            Self::Supervisor,
            Self::PidNamespaceInit,
        ]
        .into_iter()
        .find(|stage| *stage as u8 == byte)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Setsid => "setsid",
            Self::ParentDeathSignal => "parent_death_signal",
            Self::Namespaces => "namespaces",
            Self::IdMaps => "id_maps",
            Self::ResourceLimits => "resource_limits",
            Self::NoNewPrivileges => "no_new_privileges",
            Self::Landlock => "landlock",
            Self::Supervisor => "supervisor",
            Self::PidNamespaceInit => "pid_namespace_init",
        }
    }
}

/// What this host and process can do, probed once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCapabilities {
    /// The effective user id of the engine.
    pub euid: u32,
    /// The effective group id of the engine.
    pub egid: u32,
    /// A user namespace (with a network namespace inside) can be created: `Err` says why not.
    pub user_namespace: Result<(), String>,
    /// A network namespace alone can be created (needs root): `Err` says why not.
    pub network_namespace: Result<(), String>,
    /// A PID namespace can be created inside a user namespace: `Err` says why not.
    pub pid_namespace: Result<(), String>,
    /// A PID namespace alone can be created (needs root): `Err` says why not.
    pub pid_namespace_without_user_namespace: Result<(), String>,
    /// The Landlock ABI in use (capped at the newest tested one): `Err` says why Landlock is unusable.
    pub landlock_abi: Result<u8, String>,
}

/// Probes the host once and caches the answer for the life of the process.
pub fn host_capabilities() -> &'static HostCapabilities {
    static CAPABILITIES: OnceLock<HostCapabilities> = OnceLock::new();
    CAPABILITIES.get_or_init(probe_host)
}

fn probe_host() -> HostCapabilities {
    let euid = nix::unistd::geteuid().as_raw();
    let egid = nix::unistd::getegid().as_raw();
    let user_namespace = probe_user_namespace(None, euid, egid);
    let network_namespace =
        probe(None, ChildSetup { namespaces: Some(CloneFlags::CLONE_NEWNET), ..ChildSetup::probe() });
    let pid_namespace = probe_pid_namespace(None, euid, egid);
    let pid_namespace_without_user_namespace =
        probe(None, ChildSetup { namespaces: Some(CloneFlags::CLONE_NEWPID), ..ChildSetup::probe() });
    HostCapabilities {
        euid,
        egid,
        user_namespace,
        network_namespace,
        pid_namespace,
        pid_namespace_without_user_namespace,
        landlock_abi: probe_landlock(),
    }
}

/// Probes a PID namespace inside a user namespace, like [`probe_user_namespace`].
fn probe_pid_namespace(run_as: Option<RunAs>, uid: u32, gid: u32) -> Result<(), String> {
    probe(
        run_as,
        ChildSetup {
            namespaces: Some(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID),
            id_maps: Some(IdMaps::identity(uid, gid)),
            ..ChildSetup::probe()
        },
    )
}

/// Probes a user namespace (with a network namespace inside) for a process running as
/// `uid`/`gid`; `run_as` says whether the probe first switches to that identity.
fn probe_user_namespace(run_as: Option<RunAs>, uid: u32, gid: u32) -> Result<(), String> {
    probe(
        run_as,
        ChildSetup {
            namespaces: Some(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET),
            id_maps: Some(IdMaps::identity(uid, gid)),
            ..ChildSetup::probe()
        },
    )
}

/// Whether a process switched to `run_as` can create a user namespace, and a PID namespace
/// inside it (probed once per identity).
pub(crate) fn user_namespace_as(run_as: RunAs) -> (Result<(), String>, Result<(), String>) {
    type Probed = (Result<(), String>, Result<(), String>);
    static PROBES: Mutex<BTreeMap<RunAs, Probed>> = Mutex::new(BTreeMap::new());
    let mut probes = PROBES.lock().unwrap_or_else(PoisonError::into_inner);
    probes
        .entry(run_as)
        .or_insert_with(|| {
            (
                probe_user_namespace(Some(run_as), run_as.uid, run_as.gid),
                probe_pid_namespace(Some(run_as), run_as.uid, run_as.gid),
            )
        })
        .clone()
}

fn abi_number(abi: ABI) -> u8 {
    abi as u8
}

fn abi_from_number(number: u8) -> ABI {
    ABI::from(i32::from(number))
}

/// Finds the newest ABI (up to [`LANDLOCK_MAX_ABI`]) whose filesystem rights the kernel handles.
fn probe_landlock() -> Result<u8, String> {
    let mut last_error = String::new();
    for number in (1..=abi_number(LANDLOCK_MAX_ABI)).rev() {
        let abi = abi_from_number(number);
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(|ruleset| ruleset.create());
        match created {
            Ok(_) => return Ok(number),
            Err(error) => last_error = error.to_string(),
        }
    }
    Err(format!("the kernel does not support Landlock ({last_error})"))
}

/// Runs a probe child that applies `setup` and then fails on purpose before `exec`.
fn probe(run_as: Option<RunAs>, setup: ChildSetup) -> Result<(), String> {
    let mut command = std::process::Command::new("/bin/sh");
    command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    command.stderr(std::process::Stdio::null());
    if let Some(run_as) = run_as {
        command.uid(run_as.uid).gid(run_as.gid);
    }
    match spawn_with_setup(command, setup) {
        Ok(mut child) => {
            let _ = child.kill();
            let _ = child.wait();
            Err("the probe child was not stopped before exec".to_owned())
        }
        Err((_, error)) if error.raw_os_error() == Some(PROBE_DONE as i32) => Ok(()),
        Err((stage, error)) => {
            let stage = stage.map_or("spawn", Stage::name);
            Err(format!("{stage} failed: {error}"))
        }
    }
}

/// The result of a spawn: the child, or the failed setup stage (if any) and the error.
pub(crate) type SpawnResult = Result<std::process::Child, (Option<Stage>, io::Error)>;

/// A spawn handed to the spawner thread.
struct SpawnJob {
    command: std::process::Command,
    setup: ChildSetup,
    kill_through_supervisor: bool,
    reply: tokio::sync::oneshot::Sender<Result<Spawned, (Option<Stage>, io::Error)>>,
}

/// A child on its way from the spawner thread to its caller: dropped before the caller took
/// it (the caller stopped waiting, before or after the reply was sent), it kills the new
/// process group and reaps its leader.
struct Spawned {
    child: Option<std::process::Child>,
    kill_through_supervisor: bool,
}

impl Spawned {
    fn into_child(mut self) -> Option<std::process::Child> {
        self.child.take()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let Some(child) = self.child.take() else { return };
        let leader = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        // A subreaper supervisor kills every descendant itself and then exits.
        let _ = if self.kill_through_supervisor {
            nix::sys::signal::kill(leader, KILL_ALL_SIGNAL)
        } else {
            killpg(leader, Signal::SIGKILL)
        };
        // Reaped off the caller's thread (an async runtime's worker must not block on it).
        // Without a thread to be had, the group is killed anyway and the leader stays a
        // zombie until this process ends.
        let reap = move || {
            let _ = nix::sys::wait::waitpid(leader, None);
        };
        let _ = std::thread::Builder::new().name("agentic-reaper".to_owned()).spawn(reap);
    }
}

/// Spawns `command` on the spawner thread, a thread that lives as long as the process.
///
/// `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, so children must not
/// be forked by a runtime worker or blocking-pool thread that may retire; this way the step
/// supervisor's death signal means "the engine process died". If the caller stops waiting
/// (cancellation), whether before the spawner replied or after, the new process group is
/// killed and its leader reaped ([`Spawned`]).
pub(crate) async fn spawn_on_spawner(
    command: std::process::Command,
    setup: ChildSetup,
    kill_through_supervisor: bool,
) -> SpawnResult {
    static SPAWNER: OnceLock<Option<std::sync::mpsc::Sender<SpawnJob>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel::<SpawnJob>();
        let thread = std::thread::Builder::new().name("agentic-spawner".to_owned()).spawn(move || {
            for job in receiver {
                let result = spawn_with_setup(job.command, job.setup)
                    .map(|child| Spawned { child: Some(child), kill_through_supervisor: job.kill_through_supervisor });
                // A reply nobody receives is dropped here, which kills the group.
                let _ = job.reply.send(result);
            }
        });
        thread.ok().map(|_| sender)
    });
    let Some(spawner) = spawner else {
        return Err((None, io::Error::other("the agentic-spawner thread could not be started")));
    };
    let gone = || (None, io::Error::other("the agentic-spawner thread is gone"));
    let (reply, receive) = tokio::sync::oneshot::channel();
    if spawner.send(SpawnJob { command, setup, kill_through_supervisor, reply }).is_err() {
        return Err(gone());
    }
    // No await between receiving the child and handing it over: the caller takes it at once.
    receive.await.unwrap_or_else(|_| Err(gone()))?.into_child().ok_or_else(gone)
}

/// Spawns `command` with `setup` applied in the child; on failure says which stage failed.
pub(crate) fn spawn_with_setup(
    mut command: std::process::Command,
    mut setup: ChildSetup,
) -> Result<std::process::Child, (Option<Stage>, io::Error)> {
    let (stage_read, stage_write) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).map_err(|errno| (None, io::Error::from(errno)))?;
    setup.stage_fd = Some(stage_write);
    install(&mut command, setup);
    let spawned = command.spawn();
    // Dropping the command drops the pre_exec closure, which closes the parent's write end.
    drop(command);
    spawned.map_err(|error| {
        let mut byte = [0_u8; 1];
        let stage = match nix::unistd::read(&stage_read, &mut byte) {
            Ok(1) => Stage::from_byte(byte[0]),
            _ => None,
        };
        (stage, error)
    })
}

#[allow(unsafe_code)]
fn install(command: &mut std::process::Command, mut setup: ChildSetup) {
    // SAFETY: the closure runs in the child between fork and exec. `ChildSetup::apply` only
    // makes async-signal-safe system calls (setsid, prctl, getppid, unshare, open/write/close,
    // setrlimit, umask, landlock_restrict_self, sigprocmask, fork, sigwait, waitpid, kill,
    // _exit) on data prepared before the fork; it does not allocate, take locks or touch state
    // shared with other threads of the parent.
    unsafe {
        command.pre_exec(move || setup.apply());
    }
}

/// Prepared `uid_map` and `gid_map` lines for a user namespace.
#[derive(Debug)]
pub(crate) struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl IdMaps {
    /// Maps the engine's own uid and gid to themselves inside the namespace.
    fn identity(uid: u32, gid: u32) -> Self {
        Self { uid_map: format!("{uid} {uid} 1\n").into_bytes(), gid_map: format!("{gid} {gid} 1\n").into_bytes() }
    }
}

/// Everything the child does between `fork` and `exec`, prepared by the parent.
pub(crate) struct ChildSetup {
    parent_pid: Pid,
    new_session: bool,
    namespaces: Option<CloneFlags>,
    id_maps: Option<IdMaps>,
    rlimits: Vec<(Resource, u64, u64)>,
    landlock: Option<RulesetCreated>,
    stage_fd: Option<OwnedFd>,
    /// A probe: fail with [`PROBE_DONE`] after all steps instead of going on to `exec`.
    probe_only: bool,
    /// Fork a supervisor that stays behind as the group leader (see [`supervise`]).
    supervisor: bool,
}

impl ChildSetup {
    fn probe() -> Self {
        Self {
            parent_pid: nix::unistd::getpid(),
            new_session: true,
            namespaces: None,
            id_maps: None,
            rlimits: Vec::new(),
            landlock: None,
            stage_fd: None,
            probe_only: true,
            supervisor: false,
        }
    }

    fn pid_namespace(&self) -> bool {
        self.namespaces.is_some_and(|flags| flags.contains(CloneFlags::CLONE_NEWPID))
    }

    fn apply(&mut self) -> io::Result<()> {
        match self.apply_stages() {
            Ok(()) if self.probe_only => Err(io::Error::from_raw_os_error(PROBE_DONE as i32)),
            Ok(()) => Ok(()),
            Err((stage, errno)) => {
                if let Some(fd) = &self.stage_fd {
                    let _ = nix::unistd::write(fd, &[stage as u8]);
                }
                Err(io::Error::from_raw_os_error(errno as i32))
            }
        }
    }

    fn apply_stages(&mut self) -> Result<(), (Stage, Errno)> {
        if self.new_session {
            nix::unistd::setsid().map_err(|errno| (Stage::Setsid, errno))?;
        }
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|errno| (Stage::ParentDeathSignal, errno))?;
        // The parent may have died before the death signal was armed.
        if nix::unistd::getppid() != self.parent_pid {
            return Err((Stage::ParentDeathSignal, Errno::ESRCH));
        }
        if let Some(flags) = self.namespaces {
            nix::sched::unshare(flags).map_err(|errno| (Stage::Namespaces, errno))?;
        }
        if let Some(maps) = &self.id_maps {
            // A process that switched from root is not dumpable, which makes its own /proc files
            // root-owned; `execve` recomputes the flag anyway.
            nix::sys::prctl::set_dumpable(true).map_err(|errno| (Stage::IdMaps, errno))?;
            match write_proc_file(c"/proc/self/setgroups", b"deny") {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(errno) => return Err((Stage::IdMaps, errno)),
            }
            write_proc_file(c"/proc/self/uid_map", &maps.uid_map).map_err(|errno| (Stage::IdMaps, errno))?;
            write_proc_file(c"/proc/self/gid_map", &maps.gid_map).map_err(|errno| (Stage::IdMaps, errno))?;
        }
        // The init's status pipe is opened before RLIMIT_NOFILE applies.
        let status_pipe = if self.supervisor && self.pid_namespace() {
            Some(nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).map_err(|errno| (Stage::Supervisor, errno))?)
        } else {
            None
        };
        for (resource, soft, hard) in &self.rlimits {
            nix::sys::resource::setrlimit(*resource, *soft, *hard).map_err(|errno| (Stage::ResourceLimits, errno))?;
        }
        nix::sys::stat::umask(Mode::from_bits_truncate(0o077));
        nix::sys::prctl::set_no_new_privs().map_err(|errno| (Stage::NoNewPrivileges, errno))?;
        if let Some(ruleset) = self.landlock.take() {
            ruleset.restrict_self().map_err(|_| (Stage::Landlock, Errno::last()))?;
        }
        if self.supervisor {
            self.fork_supervisor(status_pipe)?;
        }
        Ok(())
    }

    /// Splits the child in two: this process stays behind as the supervisor (the group leader
    /// the engine waits for) and never returns; the new child returns and goes on to `exec`.
    ///
    /// With a PID namespace (`CLONE_NEWPID` was unshared above) the new child is the namespace's
    /// init ([`become_init`]), which forks once more for the program: when the init exits, the
    /// kernel kills every process in the namespace. Without one, the supervisor becomes a child
    /// subreaper, so processes that leave the group (`setsid`) stay its descendants, and it kills
    /// them all ([`kill_descendants`]) when the program ends or the engine asks.
    #[allow(unsafe_code)]
    fn fork_supervisor(&self, status_pipe: Option<(OwnedFd, OwnedFd)>) -> Result<(), (Stage, Errno)> {
        let supervisor_error = |errno| (Stage::Supervisor, errno);
        let mut watched = SigSet::empty();
        for signal in [Signal::SIGCHLD, Signal::SIGTERM, ENGINE_DEATH_SIGNAL, KILL_ALL_SIGNAL] {
            watched.add(signal);
        }
        let mut previous = SigSet::empty();
        sigprocmask(SigmaskHow::SIG_BLOCK, Some(&watched), Some(&mut previous)).map_err(supervisor_error)?;
        nix::sys::prctl::set_pdeathsig(ENGINE_DEATH_SIGNAL).map_err(supervisor_error)?;
        if nix::unistd::getppid() != self.parent_pid {
            return Err((Stage::Supervisor, Errno::ESRCH));
        }
        // With a PID namespace, the init reports the program's raw wait status through
        // `status_pipe`: it cannot mirror a signal itself, since the init of a PID namespace
        // cannot be killed from inside it.
        if status_pipe.is_none() {
            nix::sys::prctl::set_child_subreaper(true).map_err(supervisor_error)?;
        }
        // SAFETY: this process is the single-threaded child of a fork; the new child only makes
        // async-signal-safe calls (prctl, sigprocmask, poll, fork, close) before it returns to
        // std's exec path or stays as the init, and this process only makes them in `supervise`,
        // which never returns.
        match unsafe { nix::unistd::fork() }.map_err(supervisor_error)? {
            ForkResult::Child => match status_pipe {
                Some((status_read, status_write)) => {
                    drop(status_read);
                    become_init(status_write, &previous)
                }
                None => program_child(&previous).map_err(supervisor_error),
            },
            ForkResult::Parent { child } => {
                let status_read = status_pipe.map(|(status_read, status_write)| {
                    drop(status_write);
                    status_read
                });
                supervise(child, self.parent_pid, &watched, status_read)
            }
        }
    }
}

/// The last setup of the process that goes on to `exec` the program: it dies with its parent,
/// and starts with the signal mask the engine had.
fn program_child(previous: &SigSet) -> Result<(), Errno> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(previous), None)
}

/// The signal the supervisor gets when the engine dies (its spawner thread exits with the process).
const ENGINE_DEATH_SIGNAL: Signal = Signal::SIGUSR2;

/// The signal the engine sends the supervisor (alone) to have every descendant killed; only
/// honoured when the engine sent it. Used where there is no PID namespace (see [`kill_descendants`]).
pub(crate) const KILL_ALL_SIGNAL: Signal = Signal::SIGUSR1;

/// Runs as PID 1 of the step's PID namespace: forks the program (PID 2), reaps every process
/// that ends up as its child, and when the program ends writes its raw wait status to
/// `status_write` and exits. The kernel then kills what is left in the namespace, including
/// processes that started their own session. Returns only in the program's process.
#[allow(unsafe_code)]
fn become_init(status_write: OwnedFd, previous: &SigSet) -> Result<(), (Stage, Errno)> {
    let init_error = |errno| (Stage::PidNamespaceInit, errno);
    // A death signal from the parent namespace reaches an init even without a handler.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(init_error)?;
    // `getppid` is 0 here (the supervisor is outside the namespace); a supervisor that died
    // before the death signal was armed shows as a status pipe without a reader.
    if pipe_reader_gone(&status_write) {
        return Err(init_error(Errno::ESRCH));
    }
    // SAFETY: this process is single-threaded (a child of a fork); both sides only make
    // async-signal-safe calls from here on.
    match unsafe { nix::unistd::fork() }.map_err(init_error)? {
        ForkResult::Child => {
            drop(status_write);
            program_child(previous).map_err(init_error)
        }
        ForkResult::Parent { child } => run_init(child, &status_write),
    }
}

/// `true` when no process holds the read end of the pipe whose write end is `fd`.
#[allow(unsafe_code)]
fn pipe_reader_gone(fd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
    // SAFETY: one valid pollfd for the duration of the call, no timeout.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready == 1 && poll.revents & libc::POLLERR != 0
}

/// The init loop (see [`become_init`]).
#[allow(unsafe_code)]
fn run_init(program: Pid, status_write: &OwnedFd) -> ! {
    // Only the program holds the output pipes and std's exec-status pipe.
    close_all_descriptors_except(Some(status_write.as_raw_fd()));
    // The fork inherited the engine's handlers; as PID 1 with default actions, signals sent from
    // inside the namespace are ignored, and SIGKILL from outside still ends it.
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for signal in Signal::iterator().filter(|signal| ![Signal::SIGKILL, Signal::SIGSTOP].contains(signal)) {
        // SAFETY: installing the default action runs no code of ours in a handler.
        let _ = unsafe { sigaction(signal, &default) };
    }
    let mut child_signal = SigSet::empty();
    child_signal.add(Signal::SIGCHLD);
    loop {
        // SIGCHLD stays blocked (inherited from the supervisor), so none is lost between the
        // reaping and the wait.
        match reap_any() {
            Reaped::Child(pid, raw) if pid == program => {
                let _ = nix::unistd::write(status_write, &raw.to_ne_bytes());
                exit_now(0)
            }
            Reaped::Child(..) => continue,
            Reaped::NoneReady => {
                let _ = child_signal.wait();
            }
            Reaped::NoChildren => exit_now(127),
        }
    }
}

/// What one non-blocking `waitpid(-1)` found.
enum Reaped {
    /// A child ended: its pid and raw wait status.
    Child(Pid, i32),
    /// Children exist, none has ended.
    NoneReady,
    /// No child is left.
    NoChildren,
}

#[allow(unsafe_code)]
fn reap_any() -> Reaped {
    loop {
        let mut raw: libc::c_int = 0;
        // SAFETY: `raw` is a live, writable local.
        let pid = unsafe { libc::waitpid(-1, &mut raw, libc::WNOHANG) };
        match pid {
            0 => return Reaped::NoneReady,
            pid if pid > 0 => return Reaped::Child(Pid::from_raw(pid), raw),
            _ if Errno::last() == Errno::EINTR => continue,
            _ => return Reaped::NoChildren,
        }
    }
}

/// The supervisor: waits for its child and leaves with the program's exit code or signal, so
/// the engine sees the program's status (and, through `wait4`, its resource usage). When the
/// engine dies first, it kills the whole process group, so no process of the step outlives the
/// engine.
///
/// `status` is the read end of the init's status pipe when `child` is a PID namespace's init;
/// without it the supervisor is a child subreaper, reaps orphans as they come, and kills every
/// descendant before it leaves.
///
/// It closes every other descriptor first, so output pipes and std's exec-status pipe only
/// depend on the program. A `SIGTERM` from a timeout is for the program; the supervisor waits for it.
fn supervise(child: Pid, engine: Pid, watched: &SigSet, status: Option<OwnedFd>) -> ! {
    close_all_descriptors_except(status.as_ref().map(AsRawFd::as_raw_fd));
    let subreaper = status.is_none();
    let program_status = |raw: i32| match &status {
        Some(fd) => read_status(fd).unwrap_or(raw),
        None => raw,
    };
    loop {
        let Some((signal, sender)) = wait_signal(watched) else {
            continue;
        };
        if signal == Signal::SIGCHLD {
            loop {
                match reap_any() {
                    Reaped::Child(pid, raw) if pid == child => {
                        if subreaper {
                            kill_descendants(None);
                        }
                        mirror(program_status(raw))
                    }
                    Reaped::Child(..) => continue,
                    Reaped::NoneReady => break,
                    Reaped::NoChildren => exit_now(127),
                }
            }
        } else if signal == ENGINE_DEATH_SIGNAL && nix::unistd::getppid() != engine {
            if subreaper {
                kill_descendants(None);
            }
            let _ = killpg(nix::unistd::getpgrp(), Signal::SIGKILL);
            exit_now(128 + Signal::SIGKILL as i32)
        } else if signal == KILL_ALL_SIGNAL && sender == engine.as_raw() {
            if subreaper {
                let raw = kill_descendants(Some(child)).unwrap_or(Signal::SIGKILL as i32);
                mirror(raw)
            }
            // The init's death ends the namespace; its status comes with SIGCHLD.
            let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
        }
    }
}

/// Waits for one of `watched` (blocked); returns it with the sending process id.
#[allow(unsafe_code)]
fn wait_signal(watched: &SigSet) -> Option<(Signal, i32)> {
    // SAFETY: siginfo_t is a C struct for which all-zero bytes are a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers point to live values of the types sigwaitinfo expects.
    let number = unsafe { libc::sigwaitinfo(watched.as_ref(), &mut info) };
    let signal = Signal::try_from(number).ok()?;
    // SAFETY: `si_pid` is read from the siginfo the kernel just filled in.
    Some((signal, unsafe { info.si_pid() }))
}

/// Reads the raw wait status the init wrote, if it wrote one.
fn read_status(fd: &OwnedFd) -> Option<i32> {
    let mut bytes = [0_u8; 4];
    match nix::unistd::read(fd, &mut bytes) {
        Ok(4) => Some(i32::from_ne_bytes(bytes)),
        _ => None,
    }
}

/// Leaves with the exit code or signal of the raw wait status `raw`.
#[allow(unsafe_code)]
fn mirror(raw: i32) -> ! {
    match WaitStatus::from_raw(Pid::from_raw(1), raw) {
        Ok(WaitStatus::Exited(_, code)) => exit_now(code),
        Ok(WaitStatus::Signaled(_, signal, _)) => {
            // The fork inherited the engine's handlers (std's SIGSEGV handler, tokio's):
            // restore the default action so the signal ends this process too.
            let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
            // SAFETY: installing the default action runs no code of ours in a handler.
            let _ = unsafe { sigaction(signal, &default) };
            let mut only = SigSet::empty();
            only.add(signal);
            let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
            let _ = nix::sys::signal::raise(signal);
            // A signal whose default action is not to terminate leaves us here.
            exit_now(128 + signal as i32)
        }
        _ => exit_now(127),
    }
}

/// How long a subreaper supervisor keeps killing descendants before it gives up.
const KILL_DESCENDANTS_ROUNDS: u32 = 1000;
const KILL_DESCENDANTS_PAUSE: libc::timespec = libc::timespec { tv_sec: 0, tv_nsec: 5_000_000 };

/// As a child subreaper: sends `SIGKILL` to every child and reaps it, round after round, until
/// no child is left. Orphans re-parent to the subreaper, so each round reaches the next
/// generation, whichever session or group it is in. Bounded (about 5 s); returns the raw status
/// of `program` if it was reaped here.
#[allow(unsafe_code)]
fn kill_descendants(program: Option<Pid>) -> Option<i32> {
    let me = nix::unistd::getpid();
    let mut program_status = None;
    for _ in 0..KILL_DESCENDANTS_ROUNDS {
        kill_children_of(me);
        loop {
            match reap_any() {
                Reaped::Child(pid, raw) => {
                    if Some(pid) == program {
                        program_status = Some(raw);
                    }
                }
                Reaped::NoneReady => break,
                Reaped::NoChildren => return program_status,
            }
        }
        // SAFETY: a valid timespec; the remaining time is not needed.
        unsafe { libc::nanosleep(&KILL_DESCENDANTS_PAUSE, std::ptr::null_mut()) };
    }
    program_status
}

/// Sends `SIGKILL` to every process whose parent is `parent`, found by a scan of `/proc`
/// without allocating (fixed buffers, raw `getdents64`).
#[allow(unsafe_code)]
fn kill_children_of(parent: Pid) {
    let Ok(directory) =
        nix::fcntl::open(c"/proc", OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
    else {
        return;
    };
    let mut buffer = [0_u8; 4096];
    loop {
        // SAFETY: the buffer is live and writable for its whole length.
        let count =
            unsafe { libc::syscall(libc::SYS_getdents64, directory.as_raw_fd(), buffer.as_mut_ptr(), buffer.len()) };
        let Ok(count) = usize::try_from(count) else { return };
        if count == 0 {
            return;
        }
        let entries = buffer.get(..count).unwrap_or_default();
        let mut offset = 0;
        // struct linux_dirent64: u64 d_ino, i64 d_off, u16 d_reclen, u8 d_type, then the name.
        while let Some(header) = entries.get(offset..offset + 19) {
            let length = usize::from(u16::from_ne_bytes([header[16], header[17]]));
            if length < 19 {
                return;
            }
            let name = entries.get(offset + 19..offset + length).unwrap_or_default();
            if let Some(pid) = parse_number(name.split(|byte| *byte == 0).next().unwrap_or_default())
                && parent_of(pid) == Some(parent.as_raw())
            {
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            offset += length;
        }
    }
}

/// The parent pid in `/proc/<pid>/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let mut path = [0_u8; 40];
    let mut writer = &mut path[..];
    use std::io::Write as _;
    write!(writer, "/proc/{pid}/stat\0").ok()?;
    let path = CStr::from_bytes_until_nul(&path).ok()?;
    let file = nix::fcntl::open(path, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()).ok()?;
    let mut stat = [0_u8; 256];
    let count = nix::unistd::read(&file, &mut stat).ok()?;
    let stat = stat.get(..count)?;
    // `pid (name) state ppid ...`; the name may contain `)` but nothing after it does.
    let close = stat.iter().rposition(|byte| *byte == b')')?;
    let mut fields = stat.get(close + 1..)?.split(|byte| *byte == b' ').filter(|field| !field.is_empty());
    let _state = fields.next()?;
    parse_number(fields.next()?)
}

fn parse_number(digits: &[u8]) -> Option<i32> {
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    digits.iter().try_fold(0_i32, |value, byte| byte.is_ascii_digit().then(|| value * 10 + i32::from(byte - b'0')))
}

/// Closes every descriptor of this (single-threaded, forked) process except `keep`.
fn close_all_descriptors_except(keep: Option<RawFd>) {
    match keep.and_then(|fd| u32::try_from(fd).ok()) {
        None => close_range(0, u32::MAX),
        Some(fd) => {
            if fd > 0 {
                close_range(0, fd - 1);
            }
            close_range(fd + 1, u32::MAX);
        }
    }
}

#[allow(unsafe_code)]
fn close_range(first: u32, last: u32) {
    // SAFETY: close_range only closes descriptors of this (single-threaded) process.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0_u32) };
    if closed != 0 {
        for fd in first..=last.min(65_535) {
            let _ = nix::unistd::close(fd as RawFd);
        }
    }
}

#[allow(unsafe_code)]
fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` ends the process at once without running atexit handlers or touching
    // state shared with the parent's threads, which is what a forked child must do.
    unsafe { libc::_exit(code) }
}

fn write_proc_file(path: &CStr, contents: &[u8]) -> Result<(), Errno> {
    let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    let written = nix::unistd::write(&fd, contents)?;
    if written == contents.len() { Ok(()) } else { Err(Errno::EIO) }
}

/// An unprivileged identity the step runs as when the engine runs as root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunAs {
    /// The user id.
    pub uid: u32,
    /// The group id (supplementary groups are dropped).
    pub gid: u32,
}

impl RunAs {
    /// The conventional `nobody` user and `nogroup` group (65534).
    pub const NOBODY: Self = Self { uid: 65534, gid: 65534 };
}

/// Runtime-wide sandbox options (not per request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SandboxOptions {
    pub(crate) run_as: Option<RunAs>,
    pub(crate) user_namespace: bool,
    pub(crate) network_namespace: bool,
    pub(crate) pid_namespace: bool,
    pub(crate) landlock: bool,
    pub(crate) kill_grace: Duration,
}

/// The per-run sandbox decisions, as plain data (no file descriptors yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SandboxPlan {
    pub(crate) namespaces: Option<CloneFlags>,
    pub(crate) map_ids: bool,
    pub(crate) rlimits: Vec<(Resource, u64, u64)>,
    pub(crate) landlock_abi: Option<u8>,
    pub(crate) landlock_deny_tcp: bool,
}

impl SandboxPlan {
    /// `true` when the step runs in its own PID namespace; otherwise the supervisor is a subreaper.
    pub(crate) fn pid_namespace(&self) -> bool {
        self.namespaces.is_some_and(|flags| flags.contains(CloneFlags::CLONE_NEWPID))
    }
}

const MIB: u64 = 1024 * 1024;

/// The identity a step runs as, and what the host allows for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepIdentity {
    /// The user id of the step process (on the host).
    pub(crate) uid: u32,
    /// The group id of the step process (on the host).
    pub(crate) gid: u32,
    /// `true` when the engine switches to this identity (`run_as`).
    pub(crate) switched: bool,
    /// Whether a process with this identity can create a user namespace.
    pub(crate) user_namespace: Result<(), String>,
    /// Whether it can create a PID namespace inside a user namespace.
    pub(crate) pid_namespace: Result<(), String>,
}

impl StepIdentity {
    /// The identity for `options` on this host (probes a `run_as` identity once).
    pub(crate) fn resolve(capabilities: &HostCapabilities, options: SandboxOptions) -> Self {
        match options.run_as {
            Some(run_as) if capabilities.euid == 0 => {
                let (user_namespace, pid_namespace) = user_namespace_as(run_as);
                Self { uid: run_as.uid, gid: run_as.gid, switched: true, user_namespace, pid_namespace }
            }
            _ => Self {
                uid: capabilities.euid,
                gid: capabilities.egid,
                switched: false,
                user_namespace: capabilities.user_namespace.clone(),
                pid_namespace: capabilities.pid_namespace.clone(),
            },
        }
    }
}

/// Decides what to apply for `request` on a host with `capabilities`, and reports it.
///
/// `current_hard_limit` returns the engine's own hard limit of a resource (requests above it are
/// lowered to it, since only a privileged process can raise a hard limit).
pub(crate) fn plan(
    request: &ExecutionRequest,
    capabilities: &HostCapabilities,
    identity: &StepIdentity,
    options: SandboxOptions,
    writable_dirs: &[&Path],
    environment_detail: String,
    current_hard_limit: &dyn Fn(Resource) -> Option<u64>,
) -> (SandboxPlan, ProtectionReport) {
    let deny_network = !request.network;
    let is_root = identity.uid == 0;
    let user = if identity.switched {
        Protection::applied(format!(
            "runs as uid {} gid {} (switched from root; supplementary groups dropped)",
            identity.uid, identity.gid
        ))
    } else if is_root {
        Protection::not_requested("runs as root (uid 0); set `run_as` on the runtime to switch to an unprivileged user")
    } else {
        Protection::applied(format!("runs as the engine's unprivileged uid {} gid {}", identity.uid, identity.gid))
    };

    // Namespaces.
    let (namespaces, map_ids, user_namespace, network_namespace) = match (
        &identity.user_namespace,
        options.user_namespace,
    ) {
        (Ok(()), true) => {
            let (flags, network) = if !deny_network {
                (CloneFlags::CLONE_NEWUSER, Protection::not_requested("the step asked for `network: true`"))
            } else if !options.network_namespace {
                (CloneFlags::CLONE_NEWUSER, network_namespace_off())
            } else {
                (
                    CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET,
                    Protection::applied(
                        "new network namespace inside the user namespace: only a loopback device that is down",
                    ),
                )
            };
            (
                Some(flags),
                true,
                Protection::applied(format!(
                    "uid {} and gid {} mapped to themselves; no capabilities on the host, so limits cannot be raised",
                    identity.uid, identity.gid
                )),
                network,
            )
        }
        (user_namespace, enabled) => {
            let user = if !enabled {
                Protection::not_requested("user namespaces are switched off for this runtime")
            } else {
                Protection::not_available(format!(
                    "cannot create a user namespace: {}",
                    user_namespace.as_ref().err().map_or("unknown", String::as_str)
                ))
            };
            let (flags, network) = if !deny_network {
                (None, Protection::not_requested("the step asked for `network: true`"))
            } else if !options.network_namespace {
                (None, network_namespace_off())
            } else if identity.switched {
                (
                    None,
                    Protection::not_available(format!(
                        "without a user namespace a network namespace needs root, and the step runs as uid {}",
                        identity.uid
                    )),
                )
            } else {
                match &capabilities.network_namespace {
                    Ok(()) => (
                        Some(CloneFlags::CLONE_NEWNET),
                        Protection::applied("new network namespace: only a loopback device that is down"),
                    ),
                    Err(reason) => {
                        (None, Protection::not_available(format!("cannot create a network namespace: {reason}")))
                    }
                }
            };
            (flags, false, user, network)
        }
    };
    let in_user_namespace = map_ids;

    // PID namespace, or the subreaper fallback.
    let pid_namespace = if !options.pid_namespace {
        Protection::not_requested("PID namespaces are switched off for this runtime")
    } else if in_user_namespace {
        match &identity.pid_namespace {
            Ok(()) => Protection::applied(PID_NAMESPACE_DETAIL),
            Err(reason) => Protection::not_available(format!("cannot create a PID namespace: {reason}")),
        }
    } else if identity.switched {
        Protection::not_available(format!(
            "without a user namespace a PID namespace needs root, and the step runs as uid {}",
            identity.uid
        ))
    } else {
        match &capabilities.pid_namespace_without_user_namespace {
            Ok(()) => Protection::applied(PID_NAMESPACE_DETAIL),
            Err(reason) => Protection::not_available(format!("cannot create a PID namespace: {reason}")),
        }
    };
    let namespaces = if pid_namespace.is_applied() {
        Some(namespaces.unwrap_or_else(CloneFlags::empty) | CloneFlags::CLONE_NEWPID)
    } else {
        namespaces
    };
    let kill_all_descendants = if pid_namespace.is_applied() {
        Protection::applied(
            "PID namespace: when the program ends, times out or is cancelled its init exits and the kernel kills \
             every process of the step, also those that left the group (setsid, daemons)",
        )
    } else {
        Protection::applied(
            "child subreaper: processes that leave the group (setsid, daemons) stay descendants of the supervisor, \
             which kills them all when the program ends, times out or is cancelled; a descendant survives only if \
             the supervisor itself is killed with SIGKILL from outside the runtime",
        )
    };
    // Processes the runtime adds to the step: the supervisor, and the namespace's init.
    let helpers: u64 = if pid_namespace.is_applied() { 2 } else { 1 };
    let advisory = if is_root && !in_user_namespace {
        " (advisory: the process runs as root with CAP_SYS_RESOURCE and could raise it)"
    } else {
        ""
    };

    // Resource limits.
    let mut rlimits = Vec::new();
    let mut limit = |resource: Resource, soft: u64, hard: u64| -> (u64, u64) {
        let ceiling = current_hard_limit(resource).unwrap_or(u64::MAX);
        let (soft, hard) = (soft.min(ceiling), hard.min(ceiling));
        rlimits.push((resource, soft, hard));
        (soft, hard)
    };
    let limits = &request.limits;
    let cpu_time_limit = match limits.cpu_time_s {
        Some(seconds) => {
            let (soft, hard) = limit(Resource::RLIMIT_CPU, seconds, seconds.saturating_add(1));
            let lowered = lowered(seconds, soft);
            Protection::applied(format!("RLIMIT_CPU {soft} s (SIGXCPU), hard {hard} s (SIGKILL){lowered}{advisory}"))
        }
        None => Protection::not_requested("no `cpu_time_s`"),
    };
    let memory_limit = match limits.memory_mb {
        Some(megabytes) => {
            let (resource, name) = match limits.memory_kind {
                crate::request::MemoryLimitKind::Data => (Resource::RLIMIT_DATA, "RLIMIT_DATA"),
                crate::request::MemoryLimitKind::AddressSpace => (Resource::RLIMIT_AS, "RLIMIT_AS"),
            };
            let bytes = megabytes.saturating_mul(MIB);
            let (soft, _) = limit(resource, bytes, bytes);
            let lowered = lowered(bytes, soft);
            Protection::applied(format!("{name} {} MiB{lowered}{advisory}", soft / MIB))
        }
        None => Protection::not_requested("no `memory_mb`"),
    };
    let process_limit = match limits.max_processes {
        Some(count) if is_root => Protection::not_available(format!(
            "{count} processes asked, but the kernel exempts uid 0 from RLIMIT_NPROC (even in a user namespace); \
             set `run_as` on the runtime to switch to an unprivileged user"
        )),
        Some(count) => {
            // More for the supervisor (and the init), so the step itself gets `count` processes.
            let with_helpers = count.saturating_add(helpers);
            let (soft, _) = limit(Resource::RLIMIT_NPROC, with_helpers, with_helpers);
            let lowered = lowered(with_helpers, soft);
            let scope = if in_user_namespace { "in its user namespace" } else { "on the whole machine" };
            let helper_names = if helpers == 2 { "its supervisor and init" } else { "its supervisor" };
            Protection::applied(format!(
                "RLIMIT_NPROC {soft}: {} for the step and {helpers} for {helper_names} (counts the processes of uid {} {scope}){lowered}",
                soft.saturating_sub(helpers),
                identity.uid
            ))
        }
        None => Protection::not_requested("no `max_processes`"),
    };
    let open_files_limit = match limits.max_open_files {
        Some(count) => {
            let (soft, _) = limit(Resource::RLIMIT_NOFILE, count, count);
            let lowered = lowered(count, soft);
            Protection::applied(format!("RLIMIT_NOFILE {soft}{lowered}{advisory}"))
        }
        None => Protection::not_requested("no `max_open_files`"),
    };
    let file_size_limit = match limits.max_file_size_mb {
        Some(megabytes) => {
            let bytes = megabytes.saturating_mul(MIB);
            let (soft, _) = limit(Resource::RLIMIT_FSIZE, bytes, bytes);
            let lowered = lowered(bytes, soft);
            Protection::applied(format!("RLIMIT_FSIZE {} MiB (SIGXFSZ){lowered}{advisory}", soft / MIB))
        }
        None => Protection::not_requested("no file size limit"),
    };
    limit(Resource::RLIMIT_CORE, 0, 0);
    let core_dumps_disabled = Protection::applied("RLIMIT_CORE 0");

    // Landlock.
    let (landlock_abi, landlock_filesystem, landlock_network) = match (&capabilities.landlock_abi, options.landlock) {
        (_, false) => (
            None,
            Protection::not_requested("Landlock is switched off for this runtime"),
            Protection::not_requested("Landlock is switched off for this runtime"),
        ),
        (Err(reason), true) => {
            let network = if deny_network {
                Protection::not_available(reason.clone())
            } else {
                Protection::not_requested("the step asked for `network: true`")
            };
            (None, Protection::not_available(reason.clone()), network)
        }
        (Ok(abi), true) => {
            let scopes = if *abi >= 6 { "; signals and abstract unix sockets scoped to the sandbox" } else { "" };
            let filesystem = Protection::applied(format!(
                "ABI {abi}: read and execute everywhere, write only under {} and {}{scopes}",
                quoted_paths(writable_dirs),
                WRITABLE_DEVICES.join(", ")
            ));
            let network = if !deny_network {
                Protection::not_requested("the step asked for `network: true`")
            } else if *abi >= 4 {
                Protection::applied(format!("ABI {abi}: TCP bind and connect denied (UDP is not covered)"))
            } else {
                Protection::not_available(format!("Landlock ABI {abi} has no network rules (needs ABI 4)"))
            };
            (Some(*abi), filesystem, network)
        }
    };
    let landlock_deny_tcp = deny_network && landlock_network.is_applied();

    let timeout = match request.timeout {
        Some(timeout) => Protection::applied(format!(
            "{:.3} s wall clock, then SIGTERM to the group and SIGKILL {:.3} s later",
            timeout.as_secs_f64(),
            options.kill_grace.as_secs_f64()
        )),
        None => Protection::not_requested("no timeout"),
    };
    let report = ProtectionReport {
        runtime: "subprocess".to_owned(),
        user,
        workspace: Protection::applied(format!(
            "fresh private directory; writable: {}; HOME and TMPDIR inside it",
            quoted_paths(writable_dirs)
        )),
        process_group: Protection::applied(
            "own session and process group; the group gets SIGKILL when the program ends, times out or is cancelled",
        ),
        parent_death_signal: Protection::applied(
            "a supervisor process leads the group and kills it when the engine process dies",
        ),
        timeout,
        environment: Protection::applied(environment_detail),
        output_cap: Protection::applied(format!("{} bytes per stream", request.output_limit_bytes)),
        cpu_time_limit,
        memory_limit,
        process_limit,
        open_files_limit,
        file_size_limit,
        core_dumps_disabled,
        user_namespace,
        network_namespace,
        pid_namespace,
        kill_all_descendants,
        landlock_filesystem,
        landlock_network,
    };
    let plan = SandboxPlan { namespaces, map_ids, rlimits, landlock_abi, landlock_deny_tcp };
    (plan, report)
}

const PID_NAMESPACE_DETAIL: &str = "new PID namespace under an init process (the program is PID 2); the kernel kills \
     every process in it when the init exits; /proc still shows host pids (no mount namespace)";

fn network_namespace_off() -> Protection {
    Protection::not_requested("network namespaces are switched off for this runtime")
}

/// A note when a requested limit was lowered to the engine's own hard limit.
fn lowered(asked: u64, got: u64) -> String {
    if got < asked { format!(" (asked {asked}, lowered to the engine's own hard limit)") } else { String::new() }
}

fn quoted_paths(paths: &[&Path]) -> String {
    paths.iter().map(|path| format!("`{}`", path.display())).collect::<Vec<_>>().join(", ")
}

/// The engine's own hard limit of `resource` (`None` for unlimited or unknown).
pub(crate) fn own_hard_limit(resource: Resource) -> Option<u64> {
    match getrlimit(resource) {
        Ok((_, hard)) if hard != nix::sys::resource::RLIM_INFINITY => Some(hard),
        _ => None,
    }
}

/// Builds the child setup for `plan`: opens the Landlock ruleset and prepares the id maps.
///
/// When the Landlock ruleset cannot be built, Landlock is dropped and the report says why.
pub(crate) fn prepare(
    plan: &SandboxPlan,
    identity: &StepIdentity,
    writable_dirs: &[&Path],
    report: &mut ProtectionReport,
) -> ChildSetup {
    let landlock = plan.landlock_abi.and_then(|abi| {
        match landlock_ruleset(abi_from_number(abi), writable_dirs, plan.landlock_deny_tcp) {
            Ok(ruleset) => Some(ruleset),
            Err(error) => {
                report.landlock_filesystem = Protection::not_available(format!("building the ruleset failed: {error}"));
                if report.landlock_network.is_applied() {
                    report.landlock_network =
                        Protection::not_available(format!("building the ruleset failed: {error}"));
                }
                None
            }
        }
    });
    ChildSetup {
        parent_pid: nix::unistd::getpid(),
        new_session: true,
        namespaces: plan.namespaces,
        id_maps: plan.map_ids.then(|| IdMaps::identity(identity.uid, identity.gid)),
        rlimits: plan.rlimits.clone(),
        landlock,
        stage_fd: None,
        probe_only: false,
        supervisor: true,
    }
}

fn landlock_ruleset(abi: ABI, writable: &[&Path], deny_tcp: bool) -> Result<RulesetCreated, landlock::RulesetError> {
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(AccessFs::from_all(abi))?;
    if deny_tcp {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))?
        .add_rules(path_beneath_rules(WRITABLE_DEVICES, AccessFs::from_all(abi)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::request::ResourceLimits;

    /// The race behind a rare survivor of a cancelled step: the spawner sent the child, and
    /// the caller was dropped before it received it. The reply's drop kills the group.
    #[test]
    fn a_spawned_child_nobody_received_is_killed_with_its_group() {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "sleep 30 & wait"]).process_group(0);
        let child = command.spawn().unwrap();
        let leader = Pid::from_raw(i32::try_from(child.id()).unwrap());
        let (reply, receive) = tokio::sync::oneshot::channel();
        assert!(reply.send(Spawned { child: Some(child), kill_through_supervisor: false }).is_ok());
        // The shell has started its `sleep` (a process of the group that is not the leader).
        let members = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&pid| nix::unistd::getpgid(Some(Pid::from_raw(pid))) == Ok(leader))
                .filter(|&pid| {
                    // A zombie is dead already.
                    let status = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    status.rsplit(") ").next().is_some_and(|rest| !rest.starts_with('Z'))
                })
                .count()
        };
        let seen = (0..200).find(|_| {
            std::thread::sleep(Duration::from_millis(10));
            members() >= 2
        });
        assert!(seen.is_some(), "the shell never started its sleep");
        drop(receive);
        let gone = (0..500).find(|_| {
            std::thread::sleep(Duration::from_millis(10));
            members() == 0
        });
        assert!(gone.is_some(), "{} process(es) of the group survived the dropped reply", members());
    }

    fn options() -> SandboxOptions {
        SandboxOptions {
            run_as: None,
            user_namespace: true,
            network_namespace: true,
            pid_namespace: true,
            landlock: true,
            kill_grace: Duration::from_secs(2),
        }
    }

    fn request(network: bool) -> ExecutionRequest {
        let mut request = ExecutionRequest::new(["true"]).with_timeout(Duration::from_secs(30));
        request.network = network;
        request.output_limit_bytes = 4096;
        request.limits = ResourceLimits {
            cpu_time_s: Some(10),
            memory_mb: Some(512),
            max_processes: Some(64),
            max_open_files: Some(4096),
            max_file_size_mb: Some(100),
            ..ResourceLimits::default()
        };
        request
    }

    /// Plans `request` for a host and renders the plan and the report as JSON.
    fn check(
        request: &ExecutionRequest,
        capabilities: &HostCapabilities,
        options: SandboxOptions,
    ) -> serde_json::Value {
        let identity = StepIdentity {
            uid: capabilities.euid,
            gid: capabilities.egid,
            switched: false,
            user_namespace: capabilities.user_namespace.clone(),
            pid_namespace: capabilities.pid_namespace.clone(),
        };
        // The engine's own hard limit on open files is 1024, so 4096 is lowered to it.
        let hard_limit = |resource: Resource| (resource == Resource::RLIMIT_NOFILE).then_some(1024);
        let writable = [Path::new("/tmp/ws")];
        let (plan, report) =
            plan(request, capabilities, &identity, options, &writable, "cleared".to_owned(), &hard_limit);
        json!({
            "plan": {
                "namespaces": format!("{:?}", plan.namespaces),
                "map_ids": plan.map_ids,
                "rlimits": plan.rlimits.iter().map(|(resource, soft, hard)| format!("{resource:?} {soft} {hard}")).collect::<Vec<_>>(),
                "landlock_abi": plan.landlock_abi,
                "landlock_deny_tcp": plan.landlock_deny_tcp,
            },
            "report": report,
        })
    }

    /// A root host where every protection is available (Landlock ABI 7).
    fn root_with_everything() -> HostCapabilities {
        HostCapabilities {
            euid: 0,
            egid: 0,
            user_namespace: Ok(()),
            network_namespace: Ok(()),
            pid_namespace: Ok(()),
            pid_namespace_without_user_namespace: Ok(()),
            landlock_abi: Ok(7),
        }
    }

    #[test]
    fn root_host_with_every_capability() {
        let capabilities = root_with_everything();
        insta::assert_json_snapshot!(check(&request(false), &capabilities, options()));
    }

    #[test]
    fn unprivileged_host_without_namespaces_or_landlock() {
        let capabilities = HostCapabilities {
            euid: 1000,
            egid: 1000,
            user_namespace: Err("namespaces failed: Operation not permitted (os error 1)".into()),
            network_namespace: Err("namespaces failed: Operation not permitted (os error 1)".into()),
            pid_namespace: Err("namespaces failed: Operation not permitted (os error 1)".into()),
            pid_namespace_without_user_namespace: Err("namespaces failed: Operation not permitted (os error 1)".into()),
            landlock_abi: Err("the kernel does not support Landlock (missing)".into()),
        };
        insta::assert_json_snapshot!(check(&request(false), &capabilities, options()));
    }

    #[test]
    fn root_host_with_old_landlock_and_network_allowed() {
        let capabilities = HostCapabilities {
            euid: 0,
            egid: 0,
            user_namespace: Err("namespaces failed: Operation not permitted (os error 1)".into()),
            network_namespace: Ok(()),
            pid_namespace: Err("namespaces failed: Operation not permitted (os error 1)".into()),
            pid_namespace_without_user_namespace: Ok(()),
            landlock_abi: Ok(3),
        };
        let mut request = request(true);
        request.limits = ResourceLimits::default();
        request.timeout = None;
        insta::assert_json_snapshot!(check(&request, &capabilities, options()));
        // Without the network, the plain network namespace applies and Landlock has no TCP rules.
        let report = check(&ExecutionRequest::new(["true"]), &capabilities, options());
        assert_eq!(report["report"]["network_namespace"]["status"], "applied");
        assert_eq!(report["report"]["landlock_network"]["status"], "not_available");
        assert_eq!(report["plan"]["namespaces"], "Some(CloneFlags(CLONE_NEWPID | CLONE_NEWNET))");
    }

    #[test]
    fn switched_off_protections_are_not_requested() {
        let capabilities = root_with_everything();
        let options = SandboxOptions { user_namespace: false, landlock: false, ..options() };
        let report = check(&request(false), &capabilities, options);
        assert_eq!(report["report"]["user_namespace"]["status"], "not_requested");
        assert_eq!(report["report"]["landlock_filesystem"]["status"], "not_requested");
        // The network is still cut with a plain network namespace (root).
        assert_eq!(report["report"]["network_namespace"]["status"], "applied");
        assert_eq!(report["plan"]["landlock_abi"], serde_json::Value::Null);
    }

    #[test]
    fn report_renders_one_line_per_protection() {
        let capabilities = root_with_everything();
        let identity = StepIdentity { uid: 0, gid: 0, switched: false, user_namespace: Ok(()), pid_namespace: Ok(()) };
        let (_, report) = plan(
            &request(false),
            &capabilities,
            &identity,
            options(),
            &[Path::new("/tmp/ws")],
            "cleared".to_owned(),
            &|_| None,
        );
        insta::assert_snapshot!(report.render_text());
    }

    #[test]
    fn this_host_is_probed_without_panicking() {
        let capabilities = host_capabilities();
        // Whatever the host, a failed probe carries a reason.
        for result in [
            &capabilities.user_namespace,
            &capabilities.network_namespace,
            &capabilities.pid_namespace,
            &capabilities.pid_namespace_without_user_namespace,
        ] {
            if let Err(reason) = result {
                assert!(!reason.is_empty());
            }
        }
        if let Ok(abi) = capabilities.landlock_abi {
            assert!((1..=abi_number(LANDLOCK_MAX_ABI)).contains(&abi));
        }
    }
}
