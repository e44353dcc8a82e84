//! The reporting bundle (`000` §10, P3-T002) over many evaluation results, pass@k and pass^k,
//! and SWE-bench resolution grading.
//!
//! pass@k is the unbiased estimator of Chen et al. 2021 (`1 - C(n-c, k) / C(n, k)`) in its
//! numerically stable product form `1 - prod_{i=n-c+1}^{n} (1 - k / i)`. pass^k (all k
//! attempts succeed) is `C(c, k) / C(n, k)` = `prod_{i=0}^{k-1} (c - i) / (n - i)`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::formula::{RELIABILITY_K, RELIABILITY_PRIOR, TestCounts, adjust_for_sample_size};
use crate::grade::{EvaluationResult, Grade, Reason};

/// Mean, sample standard deviation, min and max of a set of numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Distribution {
    /// How many values.
    pub count: usize,
    /// Mean (0 when empty).
    pub mean: f64,
    /// Sample standard deviation (n - 1; 0 with fewer than 2 values).
    pub stdev: f64,
    /// Smallest value (0 when empty).
    pub min: f64,
    /// Largest value (0 when empty).
    pub max: f64,
}

impl Distribution {
    /// The distribution of `values`.
    pub fn of(values: &[f64]) -> Distribution {
        let count = values.len();
        if count == 0 {
            return Distribution { count, mean: 0.0, stdev: 0.0, min: 0.0, max: 0.0 };
        }
        let mean = values.iter().sum::<f64>() / count as f64;
        let stdev = if count < 2 {
            0.0
        } else {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (count - 1) as f64).sqrt()
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Distribution { count, mean, stdev, min, max }
    }
}

/// One criterion across samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionReport {
    /// Normalized scores.
    pub normalized: Distribution,
    /// The mean normalized score adjusted for the number of samples (`n` = count).
    pub adjusted_mean: f64,
    /// Samples that missed the criterion's floor.
    pub floor_violation_count: usize,
}

/// A failure reason and how often it occurred.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReasonCount {
    /// `hard_gate:<name>`, `floor:<criterion>` or `below_pass_threshold`.
    pub reason: String,
    /// Samples with this reason.
    pub count: usize,
}

/// The minimum reporting bundle over evaluation results of many samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportingBundle {
    /// Samples.
    pub samples: usize,
    /// Samples that passed.
    pub passed: usize,
    /// `passed / samples` (0 when empty).
    pub pass_rate: f64,
    /// Weighted scores.
    pub weighted_score: Distribution,
    /// Per gate: share of samples where it failed.
    pub hard_gate_failure_rate: BTreeMap<String, f64>,
    /// Per criterion.
    pub criteria: BTreeMap<String, CriterionReport>,
    /// Samples per grade (every grade present).
    pub grade_distribution: BTreeMap<Grade, usize>,
    /// Floor misses per criterion.
    pub floor_violation_count: BTreeMap<String, usize>,
    /// The most frequent failure reasons, most frequent first (at most 10).
    pub top_failure_reasons: Vec<ReasonCount>,
}

/// Builds the reporting bundle.
pub fn reporting_bundle(results: &[EvaluationResult]) -> ReportingBundle {
    let samples = results.len();
    let passed = results.iter().filter(|r| r.passed).count();
    let scores: Vec<f64> = results.iter().map(|r| r.weighted_score).collect();
    let mut gate_failures: BTreeMap<String, usize> = BTreeMap::new();
    let mut gate_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_criterion: BTreeMap<String, (Vec<f64>, usize, u64)> = BTreeMap::new();
    let mut grade_distribution: BTreeMap<Grade, usize> = Grade::ALL.iter().map(|g| (*g, 0)).collect();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for result in results {
        *grade_distribution.entry(result.grade).or_default() += 1;
        for (gate, ok) in &result.hard_gates {
            *gate_seen.entry(gate.clone()).or_default() += 1;
            if !ok {
                *gate_failures.entry(gate.clone()).or_default() += 1;
            }
        }
        for criterion in &result.criteria {
            let entry = per_criterion.entry(criterion.name.clone()).or_default();
            entry.0.push(criterion.normalized_score);
            entry.2 += criterion.sample_count;
            if !criterion.floor_passed {
                entry.1 += 1;
            }
        }
        if !result.passed {
            for gate in &result.hard_gate_failures {
                *reasons.entry(format!("hard_gate:{gate}")).or_default() += 1;
            }
            for criterion in &result.floor_violations {
                *reasons.entry(format!("floor:{criterion}")).or_default() += 1;
            }
            if result.reason == Reason::BelowPassThreshold || result.weighted_score < result.pass_threshold {
                *reasons.entry("below_pass_threshold".to_owned()).or_default() += 1;
            }
        }
    }
    let hard_gate_failure_rate = gate_seen
        .iter()
        .map(|(gate, seen)| (gate.clone(), *gate_failures.get(gate).unwrap_or(&0) as f64 / *seen as f64))
        .collect();
    let criteria: BTreeMap<String, CriterionReport> = per_criterion
        .into_iter()
        .map(|(name, (values, floor_misses, n))| {
            let normalized = Distribution::of(&values);
            let adjusted_mean = adjust_for_sample_size(normalized.mean, n, RELIABILITY_PRIOR, RELIABILITY_K);
            (name, CriterionReport { normalized, adjusted_mean, floor_violation_count: floor_misses })
        })
        .collect();
    let floor_violation_count = criteria.iter().map(|(name, c)| (name.clone(), c.floor_violation_count)).collect();
    let mut top: Vec<ReasonCount> = reasons.into_iter().map(|(reason, count)| ReasonCount { reason, count }).collect();
    top.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.reason.cmp(&b.reason)));
    top.truncate(10);
    ReportingBundle {
        samples,
        passed,
        pass_rate: if samples == 0 { 0.0 } else { passed as f64 / samples as f64 },
        weighted_score: Distribution::of(&scores),
        hard_gate_failure_rate,
        criteria,
        grade_distribution,
        floor_violation_count,
        top_failure_reasons: top,
    }
}

/// Why pass@k or pass^k cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pass@k with n={n}, c={c}, k={k}: {message}")]
pub struct PassAtKError {
    /// Samples.
    pub n: u64,
    /// Correct samples.
    pub c: u64,
    /// k.
    pub k: u64,
    /// What is wrong.
    pub message: &'static str,
}

fn check(n: u64, c: u64, k: u64) -> Result<(), PassAtKError> {
    let error = |message| Err(PassAtKError { n, c, k, message });
    if k == 0 {
        return error("k must be at least 1");
    }
    if c > n {
        return error("c (correct samples) cannot exceed n (samples)");
    }
    if k > n {
        return error("k cannot exceed n; draw at least k samples per problem");
    }
    Ok(())
}

/// pass@k: the probability that at least one of k samples drawn from n (c correct) passes.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Result<f64, PassAtKError> {
    check(n, c, k)?;
    if n - c < k {
        return Ok(1.0);
    }
    let mut product = 1.0;
    for i in (n - c + 1)..=n {
        product *= 1.0 - k as f64 / i as f64;
    }
    Ok(1.0 - product)
}

/// pass^k: the probability that all k samples drawn from n (c correct) pass.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Result<f64, PassAtKError> {
    check(n, c, k)?;
    let mut product = 1.0;
    for i in 0..k {
        if c < i + 1 {
            return Ok(0.0);
        }
        product *= (c - i) as f64 / (n - i) as f64;
    }
    Ok(product)
}

/// SWE-bench resolution of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SweResolution {
    /// Every FAIL_TO_PASS and PASS_TO_PASS test passes.
    ResolvedFull,
    /// Some but not all FAIL_TO_PASS pass, and every PASS_TO_PASS passes.
    ResolvedPartial,
    /// Anything else.
    ResolvedNo,
}

/// Grades an instance as SWE-bench does: an empty PASS_TO_PASS set counts as all passing; an
/// empty FAIL_TO_PASS set resolves nothing.
pub fn swe_resolution(fail_to_pass: TestCounts, pass_to_pass: TestCounts) -> SweResolution {
    let f2p = fail_to_pass.ratio().map(|r| r.min(1.0)).unwrap_or(0.0);
    let p2p = pass_to_pass.ratio().map(|r| r.min(1.0)).unwrap_or(1.0);
    if f2p >= 1.0 && p2p >= 1.0 {
        SweResolution::ResolvedFull
    } else if f2p > 0.0 && f2p < 1.0 && p2p >= 1.0 {
        SweResolution::ResolvedPartial
    } else {
        SweResolution::ResolvedNo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formula::{FormulaRegistry, RawScore};
    use crate::gates::REQUIRED_GATES;
    use crate::grade::{CriterionInput, ScoreRequest, score};
    use agentic_core::workflow::FloorSpec;

    fn result(correctness: f64, style: f64, gates_ok: bool) -> EvaluationResult {
        let request = ScoreRequest {
            hard_gates: REQUIRED_GATES.iter().map(|g| ((*g).to_owned(), gates_ok)).collect(),
            criteria: vec![
                CriterionInput {
                    name: "correctness".to_owned(),
                    raw_score: RawScore::Number(correctness),
                    formula_id: "zero_one".to_owned(),
                    weight: 0.7,
                    critical_floor: Some(FloorSpec::Normalized(0.7)),
                    params: None,
                    sample_count: None,
                },
                CriterionInput {
                    name: "style".to_owned(),
                    raw_score: RawScore::Number(style),
                    formula_id: "likert_1_5".to_owned(),
                    weight: 0.3,
                    critical_floor: None,
                    params: None,
                    sample_count: None,
                },
            ],
            ..ScoreRequest::default()
        };
        score(&request, &FormulaRegistry::builtin()).unwrap()
    }

    #[test]
    fn test_reporting_bundle_per_criterion() {
        let results = [result(0.9, 5.0, true), result(0.5, 3.0, true), result(0.7, 1.0, false)];
        let bundle = reporting_bundle(&results);
        let correctness = &bundle.criteria["correctness"];
        assert_eq!(correctness.normalized.count, 3);
        assert!((correctness.normalized.mean - 0.7).abs() < 1e-12);
        assert!((correctness.normalized.stdev - 0.2).abs() < 1e-12);
        assert_eq!((correctness.normalized.min, correctness.normalized.max), (0.5, 0.9));
        assert_eq!(correctness.floor_violation_count, 1);
        assert!(bundle.criteria.contains_key("style"));
        assert_eq!(bundle.floor_violation_count["correctness"], 1);
        assert!((bundle.hard_gate_failure_rate["overall_status_success"] - 1.0 / 3.0).abs() < 1e-12);
        assert!((bundle.pass_rate - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(
            bundle.top_failure_reasons[0],
            ReasonCount { reason: "below_pass_threshold".to_owned(), count: 2 },
            "{:?}",
            bundle.top_failure_reasons
        );
        assert!(bundle.weighted_score.stdev > 0.0);
    }

    #[test]
    fn test_reporting_bundle_grade_distribution() {
        let results =
            [result(0.9, 5.0, true), result(0.5, 3.0, true), result(0.95, 5.0, false), result(1.0, 5.0, true)];
        let bundle = reporting_bundle(&results);
        assert_eq!(bundle.grade_distribution.values().sum::<usize>(), results.len());
        assert_eq!(bundle.grade_distribution[&Grade::A], 2);
        assert_eq!(bundle.grade_distribution[&Grade::F], 2, "a score of 50 and a failed gate");
        assert_eq!(bundle.grade_distribution.len(), 5, "every grade is listed");
    }

    #[test]
    fn test_reliability_adjustment_small_n() {
        let bundle = reporting_bundle(&vec![result(0.9, 5.0, true); 5]);
        let adjusted = bundle.criteria["correctness"].adjusted_mean;
        assert!((adjusted - (5.0 * 0.9 + 20.0 * 0.5) / 25.0).abs() < 1e-12, "{adjusted}");
    }

    #[test]
    fn test_reliability_adjustment_large_n() {
        let results = vec![result(0.9, 5.0, true); 100];
        let adjusted = reporting_bundle(&results).criteria["correctness"].adjusted_mean;
        assert!((adjusted - 0.9).abs() < 0.07, "{adjusted}");
        assert!(adjusted > 0.83);
    }

    fn binomial(n: u64, k: u64) -> f64 {
        (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
    }

    #[test]
    fn pass_at_k_matches_the_closed_form() {
        for (n, c, k) in [(10, 3, 1), (10, 3, 5), (20, 0, 5), (20, 20, 5), (200, 13, 10), (5, 2, 4)] {
            let expected = if n - c < k { 1.0 } else { 1.0 - binomial(n - c, k) / binomial(n, k) };
            let got = pass_at_k(n, c, k).unwrap();
            assert!((got - expected).abs() < 1e-9, "n={n} c={c} k={k}: {got} vs {expected}");
        }
        assert!((pass_at_k(10, 3, 1).unwrap() - 0.3).abs() < 1e-12, "pass@1 is c/n");
        assert!(pass_at_k(3, 4, 1).is_err());
        assert!(pass_at_k(3, 1, 4).is_err());
        let large = pass_at_k(100_000, 1, 50_000).unwrap();
        assert!((large - 0.5).abs() < 1e-9, "stable for large n: {large}");
    }

    #[test]
    fn pass_hat_k_is_all_k_succeed() {
        let expected = binomial(6, 3) / binomial(10, 3);
        assert!((pass_hat_k(10, 6, 3).unwrap() - expected).abs() < 1e-12);
        assert_eq!(pass_hat_k(10, 2, 3).unwrap(), 0.0);
        assert_eq!(pass_hat_k(10, 10, 3).unwrap(), 1.0);
    }

    #[test]
    fn swe_resolution_follows_swe_bench() {
        let counts = |passed, total| TestCounts { passed, total };
        assert_eq!(swe_resolution(counts(3, 3), counts(10, 10)), SweResolution::ResolvedFull);
        assert_eq!(swe_resolution(counts(3, 3), counts(0, 0)), SweResolution::ResolvedFull);
        assert_eq!(swe_resolution(counts(1, 3), counts(10, 10)), SweResolution::ResolvedPartial);
        assert_eq!(swe_resolution(counts(3, 3), counts(9, 10)), SweResolution::ResolvedNo);
        assert_eq!(swe_resolution(counts(0, 3), counts(10, 10)), SweResolution::ResolvedNo);
        assert_eq!(serde_json::to_value(SweResolution::ResolvedFull).unwrap(), "RESOLVED_FULL");
    }
}
