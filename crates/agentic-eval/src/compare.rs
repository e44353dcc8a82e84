//! Run comparison (`001`): suite-level regression flags, per-case regression / improvement /
//! unchanged, and a paired comparison of aligned cases with a confidence interval.
//!
//! `regression_detected` is true when the case pass rate drops by more than
//! `max_pass_rate_drop` percentage points (0.0: any drop), the mean case score drops by more
//! than `max_avg_score_drop` points (5.0), or the mean latency grows by more than
//! `max_latency_increase_pct` percent (20). Per case: a pass/fail flip is a regression or an
//! improvement; otherwise a score change beyond `case_score_delta` (5 points, configurable)
//! is. The paired comparison is a Student-t interval of the mean per-case score difference
//! (candidate minus baseline) over cases scored in both runs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::cases::{CaseVerdict, SuiteSummary};
use crate::grade::round2;

/// Comparison thresholds (`001` defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareThresholds {
    /// Largest tolerated drop of the case pass rate, in percentage points (default 0.0).
    #[serde(default)]
    pub max_pass_rate_drop: f64,
    /// Largest tolerated drop of the mean case score, in points on 0..100 (default 5.0).
    #[serde(default = "avg_drop")]
    pub max_avg_score_drop: f64,
    /// Largest tolerated growth of the mean latency, in percent (default 20).
    #[serde(default = "latency_pct")]
    pub max_latency_increase_pct: f64,
    /// Per-case score change that counts as a regression or improvement (default 5).
    #[serde(default = "case_delta")]
    pub case_score_delta: f64,
    /// Confidence level of the paired interval (default 0.95).
    #[serde(default = "confidence")]
    pub confidence: f64,
}

fn avg_drop() -> f64 {
    5.0
}
fn latency_pct() -> f64 {
    20.0
}
fn case_delta() -> f64 {
    5.0
}
fn confidence() -> f64 {
    0.95
}

impl Default for CompareThresholds {
    fn default() -> Self {
        CompareThresholds {
            max_pass_rate_drop: 0.0,
            max_avg_score_drop: avg_drop(),
            max_latency_increase_pct: latency_pct(),
            case_score_delta: case_delta(),
            confidence: confidence(),
        }
    }
}

/// How one case changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaseChange {
    /// Pass flipped to fail, or the score fell by more than the delta.
    Regression,
    /// Fail flipped to pass, or the score rose by more than the delta.
    Improvement,
    /// Neither.
    Unchanged,
    /// Only in the candidate.
    Added,
    /// Only in the baseline.
    Removed,
}

/// One case in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CaseComparison {
    /// Case id.
    pub case_id: String,
    /// Baseline score.
    pub base_score: Option<f64>,
    /// Candidate score.
    pub candidate_score: Option<f64>,
    /// Baseline pass.
    pub base_passed: Option<bool>,
    /// Candidate pass.
    pub candidate_passed: Option<bool>,
    /// Candidate minus baseline score.
    pub delta: Option<f64>,
    /// The classification.
    pub change: CaseChange,
}

/// The paired comparison on aligned cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairedComparison {
    /// `paired_t`.
    pub method: String,
    /// Cases scored in both runs.
    pub n: usize,
    /// Mean of candidate minus baseline.
    pub mean_difference: f64,
    /// Sample standard deviation of the differences.
    pub stdev_difference: f64,
    /// Standard error of the mean difference.
    pub standard_error: f64,
    /// Confidence level.
    pub confidence: f64,
    /// Lower bound of the interval.
    pub ci_low: f64,
    /// Upper bound of the interval.
    pub ci_high: f64,
    /// `better`, `worse` or `inconclusive`: whether the interval excludes 0 and on which side.
    pub verdict: String,
}

/// Headline numbers of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunHeadline {
    /// Run id.
    pub run_id: String,
    /// Case pass rate, percent.
    pub cases_pass_rate_pct: f64,
    /// Mean case score.
    pub weighted_metrics_score_pct: f64,
    /// Mean latency.
    pub avg_latency_ms: Option<f64>,
    /// Cases.
    pub total_cases: usize,
}

/// The comparison of a candidate run against a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunComparison {
    /// The baseline.
    pub base: RunHeadline,
    /// The candidate.
    pub candidate: RunHeadline,
    /// Thresholds used.
    pub thresholds: CompareThresholds,
    /// Candidate minus baseline pass rate, percentage points.
    pub pass_rate_delta: f64,
    /// Candidate minus baseline mean score, points.
    pub avg_score_delta: f64,
    /// Latency growth in percent (none without latencies in both runs).
    pub latency_increase_pct: Option<f64>,
    /// Any suite-level threshold exceeded.
    pub regression_detected: bool,
    /// Each threshold exceeded, in words.
    pub regression_reasons: Vec<String>,
    /// Per case, baseline order then added cases.
    pub cases: Vec<CaseComparison>,
    /// Counts of regressions.
    pub case_regressions: usize,
    /// Counts of improvements.
    pub case_improvements: usize,
    /// Counts of unchanged cases.
    pub case_unchanged: usize,
    /// The paired interval, when at least 2 cases are scored in both runs.
    pub paired: Option<PairedComparison>,
    /// Why there is no paired interval, when there is none.
    pub paired_note: Option<String>,
}

fn headline(summary: &SuiteSummary) -> RunHeadline {
    RunHeadline {
        run_id: summary.run_id.clone(),
        cases_pass_rate_pct: summary.cases_pass_rate_pct,
        weighted_metrics_score_pct: summary.weighted_metrics_score_pct,
        avg_latency_ms: summary.avg_latency_ms,
        total_cases: summary.total_cases,
    }
}

/// Compares a candidate run against a baseline.
pub fn compare_runs(base: &SuiteSummary, candidate: &SuiteSummary, thresholds: &CompareThresholds) -> RunComparison {
    let pass_rate_delta = round2(candidate.cases_pass_rate_pct - base.cases_pass_rate_pct);
    let avg_score_delta = round2(candidate.weighted_metrics_score_pct - base.weighted_metrics_score_pct);
    let latency_increase_pct = match (base.avg_latency_ms, candidate.avg_latency_ms) {
        (Some(b), Some(c)) if b > 0.0 => Some(round2((c - b) / b * 100.0)),
        _ => None,
    };
    let mut reasons = Vec::new();
    if -pass_rate_delta > thresholds.max_pass_rate_drop {
        reasons.push(format!(
            "case pass rate dropped {:.2} points ({:.2}% -> {:.2}%), more than the {} allowed",
            -pass_rate_delta, base.cases_pass_rate_pct, candidate.cases_pass_rate_pct, thresholds.max_pass_rate_drop
        ));
    }
    if -avg_score_delta > thresholds.max_avg_score_drop {
        reasons.push(format!(
            "mean case score dropped {:.2} points ({:.2} -> {:.2}), more than the {} allowed",
            -avg_score_delta,
            base.weighted_metrics_score_pct,
            candidate.weighted_metrics_score_pct,
            thresholds.max_avg_score_drop
        ));
    }
    if let Some(increase) = latency_increase_pct
        && increase > thresholds.max_latency_increase_pct
    {
        reasons.push(format!(
            "mean latency grew {increase:.2}%, more than the {}% allowed",
            thresholds.max_latency_increase_pct
        ));
    }

    let mut cases = Vec::new();
    let mut differences = Vec::new();
    for base_case in &base.cases {
        let other = candidate.cases.iter().find(|c| c.case_id == base_case.case_id);
        match other {
            None => cases.push(CaseComparison {
                case_id: base_case.case_id.clone(),
                base_score: base_case.overall_score,
                candidate_score: None,
                base_passed: Some(base_case.passed),
                candidate_passed: None,
                delta: None,
                change: CaseChange::Removed,
            }),
            Some(candidate_case) => {
                let comparison = compare_case(base_case, candidate_case, thresholds.case_score_delta);
                if let Some(delta) = comparison.delta {
                    differences.push(delta);
                }
                cases.push(comparison);
            }
        }
    }
    for candidate_case in &candidate.cases {
        if !base.cases.iter().any(|c| c.case_id == candidate_case.case_id) {
            cases.push(CaseComparison {
                case_id: candidate_case.case_id.clone(),
                base_score: None,
                candidate_score: candidate_case.overall_score,
                base_passed: None,
                candidate_passed: Some(candidate_case.passed),
                delta: None,
                change: CaseChange::Added,
            });
        }
    }
    let count = |change: CaseChange| cases.iter().filter(|c| c.change == change).count();
    let (paired, paired_note) = match paired_t(&differences, thresholds.confidence) {
        Ok(paired) => (Some(paired), None),
        Err(note) => (None, Some(note)),
    };
    RunComparison {
        base: headline(base),
        candidate: headline(candidate),
        thresholds: *thresholds,
        pass_rate_delta,
        avg_score_delta,
        latency_increase_pct,
        regression_detected: !reasons.is_empty(),
        regression_reasons: reasons,
        case_regressions: count(CaseChange::Regression),
        case_improvements: count(CaseChange::Improvement),
        case_unchanged: count(CaseChange::Unchanged),
        cases,
        paired,
        paired_note,
    }
}

fn compare_case(base: &CaseVerdict, candidate: &CaseVerdict, delta_threshold: f64) -> CaseComparison {
    let delta = match (base.overall_score, candidate.overall_score) {
        (Some(b), Some(c)) => Some(round2(c - b)),
        _ => None,
    };
    let change = if base.passed && !candidate.passed {
        CaseChange::Regression
    } else if !base.passed && candidate.passed {
        CaseChange::Improvement
    } else {
        match delta {
            Some(d) if d > delta_threshold => CaseChange::Improvement,
            Some(d) if d < -delta_threshold => CaseChange::Regression,
            _ => CaseChange::Unchanged,
        }
    };
    CaseComparison {
        case_id: base.case_id.clone(),
        base_score: base.overall_score,
        candidate_score: candidate.overall_score,
        base_passed: Some(base.passed),
        candidate_passed: Some(candidate.passed),
        delta,
        change,
    }
}

/// A Student-t confidence interval of the mean of paired differences.
pub fn paired_t(differences: &[f64], confidence: f64) -> Result<PairedComparison, String> {
    let n = differences.len();
    if n < 2 {
        return Err(format!("{n} case(s) scored in both runs; the paired interval needs at least 2"));
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(format!("confidence `{confidence}` must be strictly between 0 and 1"));
    }
    let mean = differences.iter().sum::<f64>() / n as f64;
    let variance = differences.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let stdev = variance.sqrt();
    let standard_error = stdev / (n as f64).sqrt();
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .map_err(|error| format!("t distribution: {error}"))?
        .inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    let half = t * standard_error;
    let (ci_low, ci_high) = (mean - half, mean + half);
    let verdict = if ci_low > 0.0 {
        "better"
    } else if ci_high < 0.0 {
        "worse"
    } else {
        "inconclusive"
    };
    Ok(PairedComparison {
        method: "paired_t".to_owned(),
        n,
        mean_difference: mean,
        stdev_difference: stdev,
        standard_error,
        confidence,
        ci_low,
        ci_high,
        verdict: verdict.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{CaseResult, MetricScore, SuiteConfig, SuiteRun, default_metrics, evaluate_suite};

    fn suite(id: &str, scores: &[(&str, f64, Option<f64>)]) -> SuiteSummary {
        let cases = scores
            .iter()
            .map(|(case_id, score, latency)| CaseResult {
                case_id: (*case_id).to_owned(),
                metrics: default_metrics().into_iter().map(|m| (m.name, MetricScore::Score(*score))).collect(),
                expected_outcome_results: None,
                errored: false,
                error: None,
                latency_ms: *latency,
            })
            .collect();
        evaluate_suite(&SuiteRun { run_id: id.to_owned(), config: SuiteConfig::default(), cases }).unwrap()
    }

    #[test]
    fn pass_rate_drop_flags_regression_strictly() {
        let base = suite("b", &[("a", 4.0, None), ("b", 4.0, None)]);
        let candidate = suite("c", &[("a", 4.0, None), ("b", 3.5, None)]);
        let comparison = compare_runs(&base, &candidate, &CompareThresholds::default());
        assert!(comparison.regression_detected);
        assert_eq!(comparison.pass_rate_delta, -50.0);
        assert_eq!(comparison.cases[1].change, CaseChange::Regression, "80 -> 70 flips pass to fail");
        assert_eq!(comparison.cases[0].change, CaseChange::Unchanged);
    }

    #[test]
    fn small_score_noise_is_tolerated_and_delta_is_configurable() {
        let base = suite("b", &[("a", 4.0, Some(100.0)), ("b", 4.0, Some(100.0))]);
        let candidate = suite("c", &[("a", 4.15, Some(110.0)), ("b", 3.9, Some(115.0))]);
        let comparison = compare_runs(&base, &candidate, &CompareThresholds::default());
        assert!(!comparison.regression_detected, "{:?}", comparison.regression_reasons);
        assert_eq!(comparison.latency_increase_pct, Some(12.5));
        assert_eq!(comparison.case_unchanged, 2);
        let strict = CompareThresholds { case_score_delta: 1.0, ..CompareThresholds::default() };
        let comparison = compare_runs(&base, &candidate, &strict);
        assert_eq!(comparison.cases[0].change, CaseChange::Improvement, "+3 > 1");
        assert_eq!(comparison.cases[1].change, CaseChange::Regression, "-2 < -1");
    }

    #[test]
    fn latency_growth_beyond_twenty_percent_is_a_regression() {
        let base = suite("b", &[("a", 4.0, Some(100.0))]);
        let candidate = suite("c", &[("a", 4.0, Some(130.0))]);
        let comparison = compare_runs(&base, &candidate, &CompareThresholds::default());
        assert!(comparison.regression_detected);
        assert!(comparison.regression_reasons[0].contains("latency"), "{:?}", comparison.regression_reasons);
        assert!(comparison.paired.is_none() && comparison.paired_note.is_some());
    }

    #[test]
    fn paired_interval_matches_a_hand_computation() {
        // Differences 1, 2, 3, 4: mean 2.5, sd 1.2910, se 0.6455, t(0.975, 3) = 3.1824.
        let paired = paired_t(&[1.0, 2.0, 3.0, 4.0], 0.95).unwrap();
        assert!((paired.mean_difference - 2.5).abs() < 1e-12);
        assert!((paired.stdev_difference - 1.290_994).abs() < 1e-6);
        assert!((paired.ci_low - (2.5 - 3.182_446 * 0.645_497)).abs() < 1e-4, "{}", paired.ci_low);
        assert!((paired.ci_high - (2.5 + 3.182_446 * 0.645_497)).abs() < 1e-4, "{}", paired.ci_high);
        assert_eq!(paired.verdict, "better");
        let flat = paired_t(&[-1.0, 1.0, -1.0, 1.0], 0.95).unwrap();
        assert_eq!(flat.verdict, "inconclusive");
    }

    #[test]
    fn added_and_removed_cases_are_reported() {
        let base = suite("b", &[("a", 4.0, None), ("gone", 4.0, None)]);
        let candidate = suite("c", &[("a", 4.0, None), ("new", 4.0, None)]);
        let comparison = compare_runs(&base, &candidate, &CompareThresholds::default());
        let changes: Vec<CaseChange> = comparison.cases.iter().map(|c| c.change).collect();
        assert_eq!(changes, [CaseChange::Unchanged, CaseChange::Removed, CaseChange::Added]);
    }
}
