//! Repository automation for agentic, run as `cargo xtask <task>`.
//!
//! Tasks: `codegen [--check]` regenerates the committed JSON Schemas under `docs/schema/`.
//! Tidy checks (file headers, layering, examples) are `#[test]`s in `tidy.rs`, so plain
//! `cargo test` runs them. Run `cargo xtask` with no arguments to list the tasks.

use std::process::ExitCode;

mod bench_judge;
mod codegen;
mod judge_live;
#[cfg(test)]
mod tidy;

const TASKS: &str = "\
usage: cargo xtask <task>

tasks:
  codegen [--check]   regenerate docs/schema/*.json from the Rust types (--check: fail if stale)
  bench-judge [--calls N --concurrency N --delay-ms N --rounds N --inspect PATH]
                      judge throughput against a 100 ms local server, beside Inspect AI
  judge-live [--model qwen2.5-coder-1.5b|qwen2.5-coder-0.5b|smollm2-135m] [-- calibrate options]
                      calibrate the judge on the golden set against a real local model (slow)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("codegen") => codegen::run(args.iter().any(|arg| arg == "--check")),
        Some("bench-judge") => {
            bench_judge::BenchOptions::parse(&args[1..]).and_then(|options| bench_judge::run(&options))
        }
        Some("judge-live") => {
            match judge_live::LiveOptions::parse(&args[1..]).and_then(|options| judge_live::run(&options)) {
                Ok(code) => return code,
                Err(error) => Err(error),
            }
        }
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
