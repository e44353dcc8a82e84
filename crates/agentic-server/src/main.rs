//! The `agentic` binary: one entry point for the CLI commands (and, later, the HTTP server
//! and web UI). Each command lives in its own module under `commands/`.
//!
//! Exit codes are part of the interface: 0 success (or "passed"), 1 a negative verdict
//! (lint errors, a failed run, a regression), 2 unusable input (a file that cannot be read,
//! bad arguments).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A line on standard error that never panics: a warning written to a closed or full
/// standard error is lost, not turned into a crash (exit 101, which `eprintln!` gives).
macro_rules! say_err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Text on standard output, flushed: `Err` ("cannot write to standard output", exit 2) on a
/// full disk or a closed descriptor, never a panic (which `print!` gives).
macro_rules! stdout_text {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        anyhow::Context::context(write!(out, $($arg)*).and_then(|()| out.flush()), "cannot write to standard output")
    }};
}

mod commands;

/// Run AI-agent workflows and score them so a team can trust the verdict in CI.
#[derive(Debug, Parser)]
#[command(name = "agentic", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a workflow (once, or once per dataset sample) and report whether it passed.
    Run(commands::run::RunArgs),
    /// Check workflow, rubric and checkpoint-spec files for problems.
    Lint(commands::lint::LintArgs),
    /// Calibrate the LLM judge on a golden set, check its drift or its stability.
    Judge(commands::judge::JudgeArgs),
    /// Score a run's checkpoint compliance from its trace and evidence.
    Check(commands::check::CheckArgs),
    /// Collect evidence JSON for `agentic check` (git facts).
    Evidence(commands::evidence::EvidenceArgs),
    /// Grade one evaluation (gates + criteria) and print the result payload as JSON.
    Score(commands::score::ScoreArgs),
    /// Compare two suite runs; exit 1 on regression.
    Compare(commands::compare::CompareArgs),
    /// Check the promotion policy for a candidate against a baseline; exit 1 when blocked.
    Promote(commands::promote::PromoteArgs),
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Run(_)) {
        // `run` keeps SIGPIPE ignored: it writes to its steps' stdin, and a step that exits
        // without reading must not end the run.
        restore_sigpipe();
    }
    let outcome = match cli.command {
        Command::Lint(args) => commands::lint::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Judge(args) => commands::judge::run(args),
        Command::Score(args) => commands::score::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::Promote(args) => commands::promote::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Evidence(args) => commands::evidence::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            report_error(&error);
            ExitCode::from(2)
        }
    }
}

/// Prints an error and its causes, one per line.
fn report_error(error: &anyhow::Error) {
    say_err!("error: {error}");
    for cause in error.chain().skip(1) {
        say_err!("  caused by: {cause}");
    }
}

/// Output piped into a reader that stops early (`agentic check ... | head`) ends the process
/// quietly, as for other Unix tools: Rust ignores SIGPIPE, so every later `println!` would
/// panic on the closed pipe instead.
#[cfg(unix)]
#[allow(unsafe_code)]
fn restore_sigpipe() {
    // SAFETY: called at the start of `main`, before any thread exists; SIG_DFL is a valid
    // disposition and no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}

/// Turns off glibc's fastbins. With them, every allocation of 1 KiB or more (a JSON object of
/// a dozen members, a list of spans) first merges all the small blocks freed since the
/// previous one (`malloc_consolidate`): reading OTLP traces spent about a fifth of its time
/// there. Small blocks are still reused through the per-thread cache; Claude Code hook
/// traces, whose many small blocks the fastbins served well, read about 2.5% slower, the
/// tooltrace benchmark the same (docs/benchmarks.md, "OTLP/JSON traces"). A fastbin size
/// set in `GLIBC_TUNABLES` (`glibc.malloc.mxfast=...`) is left as the user set it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn tune_allocator() {
    if std::env::var_os("GLIBC_TUNABLES").is_some_and(|tunables| tunables.to_string_lossy().contains("mxfast")) {
        return;
    }
    // SAFETY: called at the start of `main`, before any thread exists; `mallopt` only sets a
    // parameter of the allocator (a maximum fastbin size of 0), which glibc documents as
    // valid at any time.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}
