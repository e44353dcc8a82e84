//! Integration tests of the `agentic` binary: each module runs the real executable.

mod check;
mod judge_cli;
mod lint;
mod run;
mod scoring;

/// The `agentic` binary built for these tests.
pub(crate) fn agentic() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agentic"));
    command.current_dir(project_root());
    command.env("NO_COLOR", "1");
    command
}

/// The workspace root, where `examples/` lives.
pub(crate) fn project_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root exists")
}
