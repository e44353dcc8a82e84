//! `agentic score FILE|-`: grade one evaluation with the deterministic algorithm of
//! `docs/scoring.md`.
//!
//! Reads `{"hard_gates": {...}, "criteria": [...], "pass_threshold"?}` (JSON or YAML; `-` is
//! standard input) and prints the result payload as JSON on stdout. Exit 0 when passed, 1 when
//! not passed, 2 for invalid input (stderr names the field and what is wrong). A JSON array of
//! requests is scored as a batch: an array of results, exit 0 only when every one passed.

use std::io::Read;
use std::process::ExitCode;

use agentic_eval::{FormulaRegistry, ScoreRequest, parse_input, score};
use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct ScoreArgs {
    /// The score request file, or `-` for standard input.
    file: String,
    /// Print compact JSON on one line.
    #[arg(long)]
    compact: bool,
}

/// Reads a file, or standard input for `-`; the error names the file.
pub(crate) fn read_input(file: &str) -> Result<String, String> {
    if file == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|error| format!("<stdin>: cannot read: {error}"))?;
        Ok(text)
    } else {
        std::fs::read_to_string(file).map_err(|error| format!("{file}: cannot read: {error}"))
    }
}

/// Writes `text` and a newline to stdout; a closed pipe (`agentic score x | head`) is not an error.
pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.write_all(b"\n")).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(error.into()),
        _ => Ok(()),
    }
}

/// Prints diagnostics or a message to stderr and returns exit code 2.
pub(crate) fn invalid(lines: impl IntoIterator<Item = String>) -> ExitCode {
    for line in lines {
        say_err!("{line}");
    }
    ExitCode::from(2)
}

pub(crate) fn run(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let label = if args.file == "-" { "<stdin>" } else { args.file.as_str() };
    let text = match read_input(&args.file) {
        Ok(text) => text,
        Err(message) => return Ok(invalid([format!("error: {message}")])),
    };
    let registry = FormulaRegistry::builtin();
    if text.trim_start().starts_with('[') {
        // A batch: one result per request, in order (for example the input of `agentic promote`).
        let requests: Vec<ScoreRequest> = match parse_input(&text, "list of score requests", label) {
            Ok(requests) => requests,
            Err(diagnostics) => return Ok(invalid(diagnostics.iter().map(ToString::to_string))),
        };
        let mut results = Vec::with_capacity(requests.len());
        for (index, request) in requests.iter().enumerate() {
            match score(request, &registry) {
                Ok(result) => results.push(result),
                Err(error) => {
                    return Ok(invalid([format!(
                        "{label}: error[invalid-input]: field `[{index}].{}`: {error}",
                        error.field()
                    )]));
                }
            }
        }
        let json =
            if args.compact { serde_json::to_string(&results)? } else { serde_json::to_string_pretty(&results)? };
        emit(&json)?;
        return Ok(if results.iter().all(|result| result.passed) { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    let request: ScoreRequest = match parse_input(&text, "score request", label) {
        Ok(request) => request,
        Err(diagnostics) => return Ok(invalid(diagnostics.iter().map(ToString::to_string))),
    };
    let result = match score(&request, &registry) {
        Ok(result) => result,
        Err(error) => {
            return Ok(invalid([format!("{label}: error[invalid-input]: field `{}`: {error}", error.field())]));
        }
    };
    let json = if args.compact { serde_json::to_string(&result)? } else { serde_json::to_string_pretty(&result)? };
    emit(&json)?;
    Ok(if result.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
