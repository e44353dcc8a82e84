//! `agentic promote --baseline B --candidate C`: the promotion policy (`docs/scoring.md`,
//! "Promotion policy").
//!
//! Each file holds evaluation results (the output of `agentic score`, collected as a JSON
//! array or `{"results": [...]}`). Prints the promotion report as JSON (or text with
//! `--format text`). Exit 0 when the candidate may be promoted, 1 when promotion is blocked,
//! 2 for invalid input.

use std::process::ExitCode;

use agentic_eval::{EvaluationResult, PromotionPolicy, PromotionVerdict, check_promotion, parse_result_set};
use clap::Args;

use super::compare::Format;
use std::fmt::Write as _;

use super::score::{emit, invalid, read_input};

#[derive(Debug, Args)]
pub(crate) struct PromoteArgs {
    /// Evaluation results of the current (baseline) version.
    #[arg(long)]
    baseline: String,
    /// Evaluation results of the candidate version.
    #[arg(long)]
    candidate: String,
    /// Non-inferiority margin on the normalized 0..1 scale.
    #[arg(long, default_value_t = 0.02)]
    delta: f64,
    /// Results each side needs.
    #[arg(long, default_value_t = 10)]
    min_samples: usize,
    /// Largest tolerated growth of a gate failure rate or floor miss rate (0..1).
    #[arg(long, default_value_t = 0.02)]
    max_rate_increase: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
}

fn load(file: &str) -> Result<Vec<EvaluationResult>, ExitCode> {
    let text = read_input(file).map_err(|message| invalid([format!("error: {message}")]))?;
    parse_result_set(&text).map_err(|message| invalid([format!("{file}: error[invalid-input]: {message}")]))
}

pub(crate) fn run(args: PromoteArgs) -> anyhow::Result<ExitCode> {
    for (flag, value) in [("--delta", args.delta), ("--max-rate-increase", args.max_rate_increase)] {
        if !value.is_finite() || !(0.0..=1.0).contains(&value) {
            return Ok(invalid([format!("error: {flag} `{value}` must be a number in 0..1")]));
        }
    }
    let baseline = match load(&args.baseline) {
        Ok(results) => results,
        Err(code) => return Ok(code),
    };
    let candidate = match load(&args.candidate) {
        Ok(results) => results,
        Err(code) => return Ok(code),
    };
    let policy = PromotionPolicy {
        delta: args.delta,
        min_samples: args.min_samples,
        max_rate_increase: args.max_rate_increase,
        ..PromotionPolicy::default()
    };
    let report = check_promotion(&baseline, &candidate, &policy);
    match args.format {
        Format::Json => emit(&serde_json::to_string_pretty(&report)?)?,
        Format::Text => {
            let mut out = String::new();
            writeln!(
                out,
                "baseline: {} results, mean weighted score {:.2}; candidate: {} results, mean {:.2}",
                report.baseline_samples,
                report.baseline_weighted_mean,
                report.candidate_samples,
                report.candidate_weighted_mean
            )?;
            for (label, bundle) in [("baseline", &report.baseline_bundle), ("candidate", &report.candidate_bundle)] {
                let grades: Vec<String> =
                    bundle.grade_distribution.iter().map(|(grade, count)| format!("{grade}:{count}")).collect();
                writeln!(
                    out,
                    "  {label:<9} pass rate {:.1}%, weighted {:.2} ± {:.2} (min {:.2}, max {:.2}), grades {}",
                    bundle.pass_rate * 100.0,
                    bundle.weighted_score.mean,
                    bundle.weighted_score.stdev,
                    bundle.weighted_score.min,
                    bundle.weighted_score.max,
                    grades.join(" ")
                )?;
            }
            for criterion in &report.criteria {
                writeln!(
                    out,
                    "  {:<24} {:?} delta {} {}",
                    criterion.name,
                    criterion.trend,
                    criterion.delta.map_or("-".to_owned(), |d| format!("{d:+.4}")),
                    if criterion.non_inferior && !criterion.floor_regressed { "ok" } else { "BLOCKS" }
                )?;
            }
            match report.verdict {
                PromotionVerdict::Promote => writeln!(out, "verdict: promote")?,
                PromotionVerdict::Block => {
                    writeln!(out, "verdict: block")?;
                    for reason in &report.reasons {
                        writeln!(out, "  - {reason}")?;
                    }
                }
            }
            emit(out.trim_end())?;
        }
    }
    Ok(match report.verdict {
        PromotionVerdict::Promote => ExitCode::SUCCESS,
        PromotionVerdict::Block => ExitCode::from(1),
    })
}
