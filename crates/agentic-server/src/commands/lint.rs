//! `agentic lint FILE...`: report every problem in workflow files.
//!
//! Prints `path:line:col: error[code]: message` with `hint:` lines (or JSON with
//! `--format json`). Exit 0 when no file has errors, 1 when any has, 2 when a file
//! cannot be read.

use std::process::ExitCode;

use agentic_core::{Diagnostic, load_workflow};
use clap::{Args, ValueEnum};

/// Output format of diagnostics.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    /// `path:line:col: error[code]: message` lines for people.
    Text,
    /// One JSON document for machines.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct LintArgs {
    /// Files to check.
    #[arg(required = true)]
    files: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Checkpoint specs: the previous version, to flag removed, renumbered or reused ids.
    #[arg(long, value_name = "OLD.yaml")]
    previous: Option<String>,
}

/// The result of linting one file.
struct FileReport {
    file: String,
    diagnostics: Vec<Diagnostic>,
    /// Why the file could not be used (its code in the text output is `code`).
    unreadable: Option<String>,
    code: &'static str,
}

impl FileReport {
    fn new(file: &str, diagnostics: Vec<Diagnostic>) -> FileReport {
        FileReport { file: file.to_owned(), diagnostics, unreadable: None, code: "unreadable" }
    }

    fn unreadable(file: &str, reason: String) -> FileReport {
        FileReport { unreadable: Some(reason), ..FileReport::new(file, Vec::new()) }
    }
}

pub(crate) fn run(args: LintArgs) -> anyhow::Result<ExitCode> {
    if args.previous.is_some() && args.files.len() > 1 {
        anyhow::bail!(
            "`--previous` compares one spec with its previous version, and {} files were given; lint one spec at a \
             time with `--previous`",
            args.files.len()
        );
    }
    if args.previous.is_some()
        && let Some(file) = args.files.first()
        && let Ok(text) = std::fs::read_to_string(file)
        && let Some(kind) = super::check::other_document_kind(&text)
    {
        anyhow::bail!(
            "`--previous` compares the ids of a checkpoint spec with its previous version, and `{file}` is {kind}; \
             lint it without `--previous`"
        );
    }
    let mut reports = Vec::new();
    for file in &args.files {
        reports.extend(lint_file(file, args.previous.as_deref()));
    }
    let unreadable = reports.iter().any(|report| report.unreadable.is_some());
    let errors: usize = reports.iter().map(|report| report.diagnostics.iter().filter(|d| d.is_error()).count()).sum();
    let warnings: usize =
        reports.iter().map(|report| report.diagnostics.iter().filter(|d| !d.is_error()).count()).sum();
    match args.format {
        Format::Text => {
            for report in &reports {
                if let Some(reason) = &report.unreadable {
                    say_err!("{}: error[{}]: {reason}", report.file, report.code);
                }
                for diagnostic in &report.diagnostics {
                    stdout_text!("{diagnostic}\n")?;
                }
            }
            let files = reports.len();
            if errors == 0 && warnings == 0 && !unreadable {
                say_err!("{files} file(s) checked: no problems");
            } else {
                // A previous spec that reads but is not a valid spec is not "unreadable".
                let count = |code: &str| {
                    reports.iter().filter(|report| report.unreadable.is_some() && report.code == code).count()
                };
                let mut unusable_text = String::new();
                for (code, label) in [("unreadable", "unreadable"), ("previous-invalid", "invalid previous spec")] {
                    let n = count(code);
                    if n > 0 {
                        unusable_text.push_str(&format!(", {n} {label}"));
                    }
                }
                say_err!("{files} file(s) checked: {errors} error(s), {warnings} warning(s){unusable_text}");
            }
        }
        Format::Json => {
            let files: Vec<serde_json::Value> = reports
                .iter()
                .map(|report| {
                    serde_json::json!({
                        "file": report.file,
                        "readable": report.unreadable.is_none(),
                        "read_error": report.unreadable,
                        // Why it could not be used: `unreadable`, or `previous-invalid` for a
                        // previous spec that reads but is not a valid spec.
                        "read_error_code": report.unreadable.as_ref().map(|_| report.code),
                        "diagnostics": report.diagnostics,
                    })
                })
                .collect();
            let document = serde_json::json!({
                "files": files,
                // A count, as the other two are: the files that could not be used.
                "summary": {
                    "errors": errors,
                    "warnings": warnings,
                    "unreadable": reports.iter().filter(|report| report.unreadable.is_some()).count(),
                },
            });
            stdout_text!("{}\n", serde_json::to_string_pretty(&document)?)?;
        }
    }
    Ok(if unreadable {
        ExitCode::from(2)
    } else if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The report of `file`, and with `--previous`, of the previous spec when it cannot be used
/// (its problem is the previous file's, not this one's).
fn lint_file(file: &str, previous: Option<&str>) -> Vec<FileReport> {
    let text = match std::fs::read(file) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => {
                let why = super::not_utf8(&error);
                return vec![FileReport::unreadable(file, format!("the file {why}"))];
            }
        },
        Err(error) => return vec![FileReport::unreadable(file, format!("cannot read file: {error}"))],
    };
    if agentic_eval::looks_like_rubric(&text) {
        return vec![FileReport::new(file, agentic_eval::lint_rubric(&text, file))];
    }
    // `--previous` is only for checkpoint specs: an empty or odd file is linted as one then.
    if previous.is_some() || super::check::looks_like_checkpoint_spec(&text) {
        let (diagnostics, unusable) = super::check::lint_spec_file(&text, file, previous);
        let mut reports = vec![FileReport::new(file, diagnostics)];
        if let (Some(previous), Some(unusable)) = (previous, unusable) {
            let code = if unusable.unreadable { "unreadable" } else { "previous-invalid" };
            reports.push(FileReport { code, ..FileReport::unreadable(previous, unusable.reason) });
        }
        return reports;
    }
    if agentic_core::yaml::parse_yaml(&text).is_ok_and(|document| document.value.is_null()) {
        // Nothing says what kind of file it was meant to be.
        let empty = Diagnostic::error("empty-document", "the file is empty (or holds only comments)")
            .at(agentic_core::Position { line: 1, column: 1 })
            .in_file(file)
            .with_hint(
                "write a workflow (`name:`, `steps:`), a checkpoint spec (`workflow:`, `checkpoints:`) or a rubric as a YAML mapping",
            );
        return vec![FileReport::new(file, vec![empty])];
    }
    let mut diagnostics = load_workflow(&text, file).diagnostics;
    // The scoring engine re-checks some of what core checks (weights, duplicate names); one
    // problem is reported once.
    for diagnostic in agentic_eval::lint_workflow_evaluation(&text, file) {
        let known = diagnostics
            .iter()
            .any(|d| d.code == diagnostic.code && d.pointer == diagnostic.pointer && d.message == diagnostic.message);
        if !known {
            diagnostics.push(diagnostic);
        }
    }
    agentic_core::diagnostic::sort_diagnostics(&mut diagnostics);
    vec![FileReport::new(file, diagnostics)]
}
