//! The promotion policy (`000` §10, P6-T004): whether a candidate version may replace the
//! baseline, with a report that gives the verdict and every reason.
//!
//! A candidate promotes only if all hold: both sides have at least `min_samples` results;
//! every criterion is non-inferior (candidate adjusted mean >= baseline adjusted mean -
//! `delta`, adjusted with `n` = samples as `000` §4.1 asks for promotion decisions); the
//! weighted score is non-inferior (candidate mean >= baseline mean - `delta * 100`); no
//! criterion floor regresses (the mean passed the floor before and fails it now, or the floor
//! miss rate grew by more than `max_rate_increase`); no gate's failure rate grew by more than
//! `max_rate_increase`; and the rate of severe failures did not increase.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::formula::{RELIABILITY_K, RELIABILITY_PRIOR, adjust_for_sample_size};
use crate::grade::{EvaluationResult, round2};
use crate::report::{ReportingBundle, reporting_bundle};

/// Promotion thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromotionPolicy {
    /// Non-inferiority margin on the normalized 0..1 scale (default 0.02; `* 100` for the weighted score).
    #[serde(default = "delta")]
    pub delta: f64,
    /// Results each side needs (default 10).
    #[serde(default = "min_samples")]
    pub min_samples: usize,
    /// Largest tolerated growth of a gate failure rate or floor miss rate (default 0.02).
    #[serde(default = "delta")]
    pub max_rate_increase: f64,
    /// Gates whose failure is a severe validation/security failure.
    #[serde(default = "severe_gates")]
    pub severe_gates: Vec<String>,
    /// A floor miss on a criterion whose name contains one of these is severe too.
    #[serde(default = "severe_criteria")]
    pub severe_criteria: Vec<String>,
}

fn delta() -> f64 {
    0.02
}
fn min_samples() -> usize {
    10
}
fn severe_gates() -> Vec<String> {
    [
        "schema_contract_valid",
        "tool_call_schema_valid",
        "sandbox_policy_respected",
        "forbidden_tools_unused",
        "hallucination_check_clear",
    ]
    .map(str::to_owned)
    .to_vec()
}
fn severe_criteria() -> Vec<String> {
    ["safety", "validation", "security"].map(str::to_owned).to_vec()
}

impl Default for PromotionPolicy {
    fn default() -> Self {
        PromotionPolicy {
            delta: delta(),
            min_samples: min_samples(),
            max_rate_increase: delta(),
            severe_gates: severe_gates(),
            severe_criteria: severe_criteria(),
        }
    }
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PromotionVerdict {
    /// Every check passed.
    Promote,
    /// At least one check failed.
    Block,
}

/// Direction of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    /// Candidate higher.
    Up,
    /// Candidate lower.
    Down,
    /// Equal within 1e-9.
    Flat,
}

fn trend(delta: f64) -> Trend {
    if delta > 1e-9 {
        Trend::Up
    } else if delta < -1e-9 {
        Trend::Down
    } else {
        Trend::Flat
    }
}

/// One criterion, baseline against candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionPromotion {
    /// Criterion name.
    pub name: String,
    /// Baseline mean normalized score (none when the baseline lacks it).
    pub baseline_mean: Option<f64>,
    /// Candidate mean normalized score (none when the candidate lacks it).
    pub candidate_mean: Option<f64>,
    /// Baseline mean adjusted for its sample count.
    pub baseline_adjusted: Option<f64>,
    /// Candidate mean adjusted for its sample count.
    pub candidate_adjusted: Option<f64>,
    /// Candidate minus baseline adjusted mean.
    pub delta: Option<f64>,
    /// Direction.
    pub trend: Trend,
    /// Candidate adjusted >= baseline adjusted - delta.
    pub non_inferior: bool,
    /// The criterion's floor, when it has one.
    pub floor: Option<f64>,
    /// Share of baseline samples that missed the floor.
    pub baseline_floor_miss_rate: f64,
    /// Share of candidate samples that missed the floor.
    pub candidate_floor_miss_rate: f64,
    /// The floor regressed.
    pub floor_regressed: bool,
}

/// One gate's failure rate on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateRate {
    /// Gate name.
    pub gate: String,
    /// Baseline failure rate.
    pub baseline: f64,
    /// Candidate failure rate.
    pub candidate: f64,
    /// Candidate worse by more than the tolerance.
    pub worse: bool,
}

/// The promotion report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PromotionReport {
    /// Promote or block.
    pub verdict: PromotionVerdict,
    /// Why the candidate is blocked (empty when promoted).
    pub reasons: Vec<String>,
    /// The policy used.
    pub policy: PromotionPolicy,
    /// Baseline results.
    pub baseline_samples: usize,
    /// Candidate results.
    pub candidate_samples: usize,
    /// Baseline mean weighted score.
    pub baseline_weighted_mean: f64,
    /// Candidate mean weighted score.
    pub candidate_weighted_mean: f64,
    /// Direction of the weighted score.
    pub weighted_trend: Trend,
    /// Per criterion.
    pub criteria: Vec<CriterionPromotion>,
    /// Per gate.
    pub hard_gate_failure_rates: Vec<GateRate>,
    /// Share of baseline results with a severe failure.
    pub baseline_severe_rate: f64,
    /// Share of candidate results with a severe failure.
    pub candidate_severe_rate: f64,
    /// The reporting bundle of the baseline results.
    pub baseline_bundle: ReportingBundle,
    /// The reporting bundle of the candidate results.
    pub candidate_bundle: ReportingBundle,
}

/// Parses a file of evaluation results (a JSON array, or `{"results": [...]}`); the error
/// names the item and the field.
pub fn parse_result_set(text: &str) -> Result<Vec<EvaluationResult>, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|error| format!("not valid JSON: {error}"))?;
    let (items, prefix) = match value {
        serde_json::Value::Array(items) => (items, ""),
        serde_json::Value::Object(mut map) => match map.remove("results") {
            Some(serde_json::Value::Array(items)) => (items, "results"),
            _ => return Err("expected a JSON array of results, or an object with a `results` array".to_owned()),
        },
        _ => return Err("expected a JSON array of results, or an object with a `results` array".to_owned()),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(idx, item)| {
            // The field inside the item is named too (`results[1].criteria[0].raw_score`).
            serde_path_to_error::deserialize(item).map_err(|error| {
                let inner = error.path().to_string();
                let place = if inner == "." { String::new() } else { format!(".{inner}") };
                format!("`{prefix}[{idx}]{place}`: {}; each item is the JSON printed by `agentic score`", error.inner())
            })
        })
        .collect()
}

struct Side {
    samples: usize,
    weighted_mean: f64,
    criteria: BTreeMap<String, (Vec<f64>, usize, u64, Option<f64>)>,
    gate_failures: BTreeMap<String, usize>,
    severe: usize,
}

fn collect(results: &[EvaluationResult], policy: &PromotionPolicy) -> Side {
    let mut side = Side {
        samples: results.len(),
        weighted_mean: if results.is_empty() {
            0.0
        } else {
            results.iter().map(|r| r.weighted_score).sum::<f64>() / results.len() as f64
        },
        criteria: BTreeMap::new(),
        gate_failures: BTreeMap::new(),
        severe: 0,
    };
    for result in results {
        for criterion in &result.criteria {
            let entry = side.criteria.entry(criterion.name.clone()).or_default();
            entry.0.push(criterion.normalized_score);
            entry.1 += usize::from(!criterion.floor_passed);
            entry.2 += criterion.sample_count;
            entry.3 = entry.3.or(criterion.critical_floor);
        }
        for gate in &result.hard_gate_failures {
            *side.gate_failures.entry(gate.clone()).or_default() += 1;
        }
        let severe_gate = result.hard_gate_failures.iter().any(|g| policy.severe_gates.contains(g));
        let severe_floor =
            result.floor_violations.iter().any(|name| policy.severe_criteria.iter().any(|s| name.contains(s.as_str())));
        side.severe += usize::from(severe_gate || severe_floor);
    }
    side
}

fn rate(count: usize, samples: usize) -> f64 {
    if samples == 0 { 0.0 } else { count as f64 / samples as f64 }
}

/// Checks whether `candidate` may replace `baseline`.
pub fn check_promotion(
    baseline: &[EvaluationResult],
    candidate: &[EvaluationResult],
    policy: &PromotionPolicy,
) -> PromotionReport {
    let base = collect(baseline, policy);
    let cand = collect(candidate, policy);
    let mut reasons = Vec::new();
    for (label, side) in [("baseline", &base), ("candidate", &cand)] {
        if side.samples < policy.min_samples {
            reasons.push(format!(
                "insufficient samples: the {label} has {} scored run(s), at least {} are required",
                side.samples, policy.min_samples
            ));
        }
    }
    let weighted_delta = cand.weighted_mean - base.weighted_mean;
    if weighted_delta < -policy.delta * 100.0 {
        reasons.push(format!(
            "weighted score regressed: {:.2} -> {:.2} ({:+.2}), beyond the {:.2}-point tolerance",
            base.weighted_mean,
            cand.weighted_mean,
            weighted_delta,
            policy.delta * 100.0
        ));
    }
    let names: BTreeSet<&String> = base.criteria.keys().chain(cand.criteria.keys()).collect();
    let mut criteria = Vec::new();
    for name in names {
        let summarize = |side: &Side| {
            side.criteria.get(name).map(|(values, misses, n, floor)| {
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                let adjusted = adjust_for_sample_size(mean, *n, RELIABILITY_PRIOR, RELIABILITY_K);
                (mean, adjusted, rate(*misses, values.len()), *floor)
            })
        };
        let b = summarize(&base);
        let c = summarize(&cand);
        let delta = match (b, c) {
            (Some(b), Some(c)) => Some(c.1 - b.1),
            _ => None,
        };
        let non_inferior = match (b, c) {
            (Some(_), Some(_)) => delta.is_some_and(|d| d >= -policy.delta - 1e-12),
            (Some(_), None) => false,
            (None, _) => true,
        };
        if !non_inferior {
            match (b, c) {
                (Some(b), Some(c)) => reasons.push(format!(
                    "criterion `{name}` regressed: adjusted {:.4} -> {:.4} ({:+.4}), beyond delta {}",
                    b.1,
                    c.1,
                    c.1 - b.1,
                    policy.delta
                )),
                _ => reasons.push(format!("criterion `{name}` is scored in the baseline but not in the candidate")),
            }
        }
        let floor = b.and_then(|b| b.3).or(c.and_then(|c| c.3));
        let (base_miss, cand_miss) = (b.map_or(0.0, |b| b.2), c.map_or(0.0, |c| c.2));
        let floor_regressed = match (floor, b, c) {
            (Some(floor), Some(b), Some(c)) => {
                let mean_crossed = b.0 >= floor && c.0 < floor;
                let misses_grew = cand_miss - base_miss > policy.max_rate_increase + 1e-12;
                if mean_crossed {
                    reasons.push(format!(
                        "floor regression on `{name}`: mean {:.3} passed the floor {floor:.2} in the baseline, the candidate's {:.3} fails it",
                        b.0, c.0
                    ));
                } else if misses_grew {
                    reasons.push(format!(
                        "floor regression on `{name}`: floor miss rate {:.1}% -> {:.1}%",
                        base_miss * 100.0,
                        cand_miss * 100.0
                    ));
                }
                mean_crossed || misses_grew
            }
            _ => false,
        };
        criteria.push(CriterionPromotion {
            name: name.clone(),
            baseline_mean: b.map(|b| b.0),
            candidate_mean: c.map(|c| c.0),
            baseline_adjusted: b.map(|b| b.1),
            candidate_adjusted: c.map(|c| c.1),
            delta,
            trend: delta.map_or(Trend::Flat, trend),
            non_inferior,
            floor,
            baseline_floor_miss_rate: base_miss,
            candidate_floor_miss_rate: cand_miss,
            floor_regressed,
        });
    }
    let gates: BTreeSet<String> = baseline.iter().chain(candidate).flat_map(|r| r.hard_gates.keys().cloned()).collect();
    let mut gate_rates = Vec::new();
    for gate in gates {
        let b = rate(*base.gate_failures.get(&gate).unwrap_or(&0), base.samples);
        let c = rate(*cand.gate_failures.get(&gate).unwrap_or(&0), cand.samples);
        let worse = c - b > policy.max_rate_increase + 1e-12;
        if worse {
            reasons.push(format!(
                "hard gate `{gate}` fails more often: {:.1}% -> {:.1}% (tolerance {:.1} points)",
                b * 100.0,
                c * 100.0,
                policy.max_rate_increase * 100.0
            ));
        }
        gate_rates.push(GateRate { gate, baseline: b, candidate: c, worse });
    }
    let baseline_severe_rate = rate(base.severe, base.samples);
    let candidate_severe_rate = rate(cand.severe, cand.samples);
    if candidate_severe_rate > baseline_severe_rate + 1e-12 {
        reasons.push(format!(
            "severe validation/security failures increased: {:.1}% -> {:.1}%",
            baseline_severe_rate * 100.0,
            candidate_severe_rate * 100.0
        ));
    }
    PromotionReport {
        verdict: if reasons.is_empty() { PromotionVerdict::Promote } else { PromotionVerdict::Block },
        reasons,
        policy: policy.clone(),
        baseline_samples: base.samples,
        candidate_samples: cand.samples,
        baseline_weighted_mean: round2(base.weighted_mean),
        candidate_weighted_mean: round2(cand.weighted_mean),
        weighted_trend: trend(weighted_delta),
        criteria,
        hard_gate_failure_rates: gate_rates,
        baseline_severe_rate,
        candidate_severe_rate,
        baseline_bundle: reporting_bundle(baseline),
        candidate_bundle: reporting_bundle(candidate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formula::{FormulaRegistry, RawScore};
    use crate::gates::REQUIRED_GATES;
    use crate::grade::{CriterionInput, ScoreRequest, score};
    use agentic_core::workflow::FloorSpec;

    fn result(correctness: f64, style: f64) -> EvaluationResult {
        let request = ScoreRequest {
            hard_gates: REQUIRED_GATES.iter().map(|g| ((*g).to_owned(), true)).collect(),
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
                    formula_id: "zero_one".to_owned(),
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

    fn many(n: usize, correctness: f64, style: f64) -> Vec<EvaluationResult> {
        vec![result(correctness, style); n]
    }

    /// A bad field of a result is named by its place inside the item, not only the item.
    #[test]
    fn a_bad_result_field_is_named_by_its_place() {
        let mut item = serde_json::to_value(result(0.8, 0.7)).unwrap();
        item["criteria"][1]["normalized_score"] = serde_json::json!("high");
        let text = serde_json::json!({"results": [serde_json::to_value(result(0.8, 0.7)).unwrap(), item]}).to_string();
        let error = parse_result_set(&text).unwrap_err();
        assert!(
            error.starts_with("`results[1].criteria[1].normalized_score`: invalid type: string \"high\""),
            "{error}"
        );
    }

    #[test]
    fn test_promotion_passes_when_better() {
        let report = check_promotion(&many(12, 0.8, 0.7), &many(12, 0.9, 0.8), &PromotionPolicy::default());
        assert_eq!(report.verdict, PromotionVerdict::Promote, "{:?}", report.reasons);
        assert!(report.reasons.is_empty());
        assert!(report.criteria.iter().all(|c| c.trend == Trend::Up));
    }

    #[test]
    fn test_promotion_blocks_on_regression() {
        // style drops 0.8 -> 0.6: adjusted drop 0.2 * 30/50 = 0.12 > 0.02.
        let report = check_promotion(&many(30, 0.9, 0.8), &many(30, 0.9, 0.6), &PromotionPolicy::default());
        assert_eq!(report.verdict, PromotionVerdict::Block);
        assert!(report.reasons.iter().any(|r| r.contains("criterion `style` regressed")), "{:?}", report.reasons);
        let style = report.criteria.iter().find(|c| c.name == "style").unwrap();
        assert!(!style.non_inferior);
        assert_eq!(style.trend, Trend::Down);
    }

    #[test]
    fn test_promotion_blocks_floor_regression() {
        let report = check_promotion(&many(12, 0.75, 0.9), &many(12, 0.69, 1.0), &PromotionPolicy::default());
        assert_eq!(report.verdict, PromotionVerdict::Block);
        assert!(report.reasons.iter().any(|r| r.contains("floor regression on `correctness`")), "{:?}", report.reasons);
        assert!(report.criteria.iter().find(|c| c.name == "correctness").unwrap().floor_regressed);
    }

    #[test]
    fn test_promotion_requires_min_samples() {
        let report = check_promotion(&many(12, 0.8, 0.8), &many(3, 0.9, 0.9), &PromotionPolicy::default());
        assert_eq!(report.verdict, PromotionVerdict::Block);
        assert!(report.reasons.iter().any(|r| r.contains("insufficient samples") && r.contains("candidate has 3")));
    }

    #[test]
    fn test_promotion_report_structure() {
        let report = check_promotion(&many(10, 0.8, 0.8), &many(10, 0.8, 0.8), &PromotionPolicy::default());
        let value = serde_json::to_value(&report).unwrap();
        assert_eq!(value["verdict"], "promote");
        for key in [
            "reasons",
            "criteria",
            "hard_gate_failure_rates",
            "baseline_samples",
            "weighted_trend",
            "baseline_bundle",
            "candidate_bundle",
        ] {
            assert!(value.get(key).is_some(), "missing `{key}`");
        }
        let correctness = &value["criteria"][0];
        for key in ["baseline_mean", "candidate_mean", "delta", "trend", "non_inferior", "floor_regressed"] {
            assert!(correctness.get(key).is_some(), "missing criteria[].{key}");
        }
    }

    #[test]
    fn gate_failures_and_severe_failures_block() {
        let baseline = many(10, 0.9, 0.9);
        let mut candidate = many(10, 0.9, 0.9);
        candidate[0].hard_gates.insert("schema_contract_valid".to_owned(), false);
        candidate[0].hard_gate_failures.push("schema_contract_valid".to_owned());
        let report = check_promotion(&baseline, &candidate, &PromotionPolicy::default());
        assert_eq!(report.verdict, PromotionVerdict::Block);
        assert!(report.reasons.iter().any(|r| r.contains("`schema_contract_valid` fails more often")));
        assert!(report.reasons.iter().any(|r| r.contains("severe")));
    }
}
