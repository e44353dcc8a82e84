//! Repository automation for agentic, run as `cargo xtask <task>`.
//!
//! Tasks: `codegen [--check]` regenerates the committed JSON Schemas under `docs/schema/`.
//! Tidy checks (file headers, layering, examples) are `#[test]`s in `tidy.rs`, so plain
//! `cargo test` runs them. Run `cargo xtask` with no arguments to list the tasks.

use std::process::ExitCode;

mod codegen;
#[cfg(test)]
mod tidy;

const TASKS: &str = "\
usage: cargo xtask <task>

tasks:
  codegen [--check]   regenerate docs/schema/*.json from the Rust types (--check: fail if stale)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("codegen") => codegen::run(args.iter().any(|arg| arg == "--check")),
        Some(other) => Err(anyhow::anyhow!("unknown task `{other}`\n\n{TASKS}")),
        None => {
            print!("{TASKS}");
            return ExitCode::SUCCESS;
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of `xtask/`).
pub(crate) fn project_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace root").to_owned()
}
