//! `agentic compare BASE CANDIDATE`: compare two suite runs (`docs/scoring.md`, "Run comparison").
//!
//! Each file is a suite run: `{"run_id", "config"?, "cases": [...]}`. Prints the comparison
//! (JSON, or a summary with `--format text`). Exit 0 when no regression is detected, 1 when one
//! is, 2 for invalid input.

use std::process::ExitCode;

use agentic_eval::{
    CompareThresholds, RunComparison, SuiteRun, SuiteSummary, compare_runs, evaluate_suite, parse_input,
};
use clap::{Args, ValueEnum};

use std::fmt::Write as _;

use super::score::{emit, invalid, read_input};

/// Output format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    /// The full comparison as JSON.
    Json,
    /// A short summary for people.
    Text,
}

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The baseline suite run (JSON).
    base: String,
    /// The candidate suite run (JSON).
    candidate: String,
    /// Largest tolerated drop of the case pass rate, in percentage points.
    #[arg(long, default_value_t = 0.0)]
    max_pass_rate_drop: f64,
    /// Largest tolerated drop of the mean case score, in points.
    #[arg(long, default_value_t = 5.0)]
    max_avg_score_drop: f64,
    /// Largest tolerated growth of the mean latency, in percent.
    #[arg(long, default_value_t = 20.0)]
    max_latency_increase_pct: f64,
    /// Per-case score change that counts as a regression or improvement, in points.
    #[arg(long, default_value_t = 5.0)]
    case_delta: f64,
    /// Confidence level of the paired interval.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
}

fn load(file: &str) -> Result<SuiteSummary, ExitCode> {
    let text = read_input(file).map_err(|message| invalid([format!("error: {message}")]))?;
    let run: SuiteRun = parse_input(&text, "suite run", file)
        .map_err(|diagnostics| invalid(diagnostics.iter().map(ToString::to_string)))?;
    evaluate_suite(&run).map_err(|error| invalid([format!("{file}: error[invalid-input]: {error}")]))
}

pub(crate) fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    for (flag, value) in [
        ("--max-pass-rate-drop", args.max_pass_rate_drop),
        ("--max-avg-score-drop", args.max_avg_score_drop),
        ("--max-latency-increase-pct", args.max_latency_increase_pct),
        ("--case-delta", args.case_delta),
    ] {
        if !value.is_finite() || value < 0.0 {
            return Ok(invalid([format!("error: {flag} `{value}` must be a finite number >= 0")]));
        }
    }
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        return Ok(invalid([format!("error: --confidence `{}` must be strictly between 0 and 1", args.confidence)]));
    }
    let base = match load(&args.base) {
        Ok(summary) => summary,
        Err(code) => return Ok(code),
    };
    let candidate = match load(&args.candidate) {
        Ok(summary) => summary,
        Err(code) => return Ok(code),
    };
    let thresholds = CompareThresholds {
        max_pass_rate_drop: args.max_pass_rate_drop,
        max_avg_score_drop: args.max_avg_score_drop,
        max_latency_increase_pct: args.max_latency_increase_pct,
        case_score_delta: args.case_delta,
        confidence: args.confidence,
    };
    let comparison = compare_runs(&base, &candidate, &thresholds);
    match args.format {
        Format::Json => emit(&serde_json::to_string_pretty(&comparison)?)?,
        Format::Text => emit(&render_text(&comparison)?)?,
    }
    Ok(if comparison.regression_detected { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn render_text(comparison: &RunComparison) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    let (base, candidate) = (&comparison.base, &comparison.candidate);
    writeln!(
        out,
        "baseline  {}: pass rate {:.2}%, mean score {:.2}",
        base.run_id, base.cases_pass_rate_pct, base.weighted_metrics_score_pct
    )?;
    writeln!(
        out,
        "candidate {}: pass rate {:.2}%, mean score {:.2}",
        candidate.run_id, candidate.cases_pass_rate_pct, candidate.weighted_metrics_score_pct
    )?;
    writeln!(
        out,
        "cases: {} regression(s), {} improvement(s), {} unchanged",
        comparison.case_regressions, comparison.case_improvements, comparison.case_unchanged
    )?;
    for case in &comparison.cases {
        writeln!(
            out,
            "  {:<12} {:?} (delta {})",
            case.case_id,
            case.change,
            case.delta.map_or("-".to_owned(), |d| format!("{d:+.2}"))
        )?;
    }
    match (&comparison.paired, &comparison.paired_note) {
        (Some(paired), _) => writeln!(
            out,
            "paired difference (candidate - baseline) over {} cases: {:+.2}, {:.0}% CI [{:+.2}, {:+.2}] ({})",
            paired.n,
            paired.mean_difference,
            paired.confidence * 100.0,
            paired.ci_low,
            paired.ci_high,
            paired.verdict
        )?,
        (None, Some(note)) => writeln!(out, "paired difference: not computed ({note})")?,
        (None, None) => {}
    }
    if comparison.regression_detected {
        writeln!(out, "REGRESSION")?;
        for reason in &comparison.regression_reasons {
            writeln!(out, "  - {reason}")?;
        }
    } else {
        writeln!(out, "no regression")?;
    }
    Ok(out.trim_end().to_owned())
}
