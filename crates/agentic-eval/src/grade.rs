//! The deterministic grading algorithm of `000` §5.1, the result payload and the
//! tie-breakers of `000` §5.2.
//!
//! Steps: gates; normalize each criterion; weighted mean over the given weights (they need
//! not sum to 1); `weighted_score` = round(mean * 100, 2); band A>=90, B>=80, C>=70, D>=60,
//! else F; a missed floor caps the grade at D; a failed gate forces F (the weighted score is
//! still computed and reported); `passed` = gates passed AND score >= threshold AND no floor
//! missed.
//!
//! **Invariant:** `passed` implies every gate is true, and a missed floor implies a grade no
//! better than D. The five required gates are always in the result: a gate the caller did
//! not evaluate counts as failed ("not proven").

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use agentic_core::workflow::FloorSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::formula::{
    FormulaError, FormulaRegistry, RELIABILITY_K, RELIABILITY_PRIOR, RawScore, UserFormula, adjust_for_sample_size,
};
use crate::gates::REQUIRED_GATES;

/// The default pass threshold on the 0..100 scale (`000` §13).
pub const DEFAULT_PASS_THRESHOLD: f64 = 70.0;

/// A letter grade. `A` is best; `Ord` orders from best (`A`) to worst (`F`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Grade {
    /// 90..100.
    A,
    /// 80..89.99.
    B,
    /// 70..79.99.
    C,
    /// 60..69.99.
    D,
    /// Below 60, or any hard gate failed.
    F,
}

impl Grade {
    /// All grades, best first.
    pub const ALL: [Grade; 5] = [Grade::A, Grade::B, Grade::C, Grade::D, Grade::F];

    /// The band of a 0..100 score.
    pub fn from_score(score: f64) -> Grade {
        if score >= 90.0 {
            Grade::A
        } else if score >= 80.0 {
            Grade::B
        } else if score >= 70.0 {
            Grade::C
        } else if score >= 60.0 {
            Grade::D
        } else {
            Grade::F
        }
    }

    /// The band, as text (`80-89.99`).
    pub fn band(self) -> &'static str {
        match self {
            Grade::A => "90-100",
            Grade::B => "80-89.99",
            Grade::C => "70-79.99",
            Grade::D => "60-69.99",
            Grade::F => "<60",
        }
    }

    /// The letter.
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::A => "A",
            Grade::B => "B",
            Grade::C => "C",
            Grade::D => "D",
            Grade::F => "F",
        }
    }

    /// The worse of two grades.
    pub fn worst(self, other: Grade) -> Grade {
        self.max(other)
    }
}

impl fmt::Display for Grade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One criterion to score: the input of the grading algorithm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CriterionInput {
    /// Criterion name, for example `correctness`.
    pub name: String,
    /// The raw score: a number, `{wins, losses, ties}` or `{passed, total}`.
    pub raw_score: RawScore,
    /// The normalization formula, for example `likert_1_5`.
    pub formula_id: String,
    /// Relative weight (>= 0; the weights need not sum to 1).
    pub weight: f64,
    /// Minimum normalized score (0..1), or `{raw: N}` on the raw scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_floor: Option<FloorSpec>,
    /// Formula parameters, for example `{slo_good: 8, slo_bad: 30}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
    /// How many samples the raw score rests on; drives `adjusted_score`. Default: the number of
    /// comparisons for pairwise counts, the number of tests for test counts, else 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub sample_count: Option<u64>,
}

/// What `agentic score` reads: gate verdicts, criteria and a pass threshold.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScoreRequest {
    /// Gate verdicts by name. A required gate that is absent counts as failed (not proven).
    #[serde(default)]
    pub hard_gates: BTreeMap<String, bool>,
    /// Why gates failed, by name (optional; copied into the result).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hard_gate_reasons: BTreeMap<String, String>,
    /// The criteria with their raw scores.
    pub criteria: Vec<CriterionInput>,
    /// Weighted score (0..100) needed to pass (default 70).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub pass_threshold: Option<f64>,
    /// The rubric the criteria come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_id: Option<String>,
    /// The rubric version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_version: Option<String>,
    /// Formulas the criteria may use besides the registry's (a linear map of a raw range).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub formulas: Vec<UserFormula>,
}

/// One scored criterion in the result payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionResult {
    /// Criterion name.
    pub name: String,
    /// The raw score as given.
    pub raw_score: RawScore,
    /// The formula that normalized it.
    pub formula_id: String,
    /// The normalized score, 0..1.
    pub normalized_score: f64,
    /// The reliability-adjusted score `(n*norm + 20*0.5)/(n + 20)`, for promotion decisions.
    pub adjusted_score: f64,
    /// Samples behind the score (the `n` of the adjustment).
    pub sample_count: u64,
    /// The weight used.
    pub weight: f64,
    /// The floor on the normalized scale, when the criterion has one.
    pub critical_floor: Option<f64>,
    /// False when the normalized score is below the floor (true without a floor).
    pub floor_passed: bool,
}

/// Why the result is what it is, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Every gate passed, no floor missed, score at or above the threshold.
    Passed,
    /// At least one hard gate failed (grade forced to F).
    HardGateFailure,
    /// At least one critical floor missed (grade capped at D).
    FloorViolation,
    /// The weighted score is below the pass threshold.
    BelowPassThreshold,
}

impl Reason {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Passed => "passed",
            Reason::HardGateFailure => "hard_gate_failure",
            Reason::FloorViolation => "floor_violation",
            Reason::BelowPassThreshold => "below_pass_threshold",
        }
    }
}

/// The evaluation result payload (published as `docs/schema/evaluation-result.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EvaluationResult {
    /// Gates passed AND weighted_score >= pass_threshold AND no floor missed.
    pub passed: bool,
    /// The final grade.
    pub grade: Grade,
    /// The grade of the score band alone, before the floor cap and the gate override.
    pub band_grade: Grade,
    /// Weighted score on 0..100, rounded to 2 decimals (computed even when a gate failed).
    pub weighted_score: f64,
    /// The threshold used.
    pub pass_threshold: f64,
    /// Every gate verdict by name (the five required gates always present).
    pub hard_gates: BTreeMap<String, bool>,
    /// Names of failed gates, sorted.
    pub hard_gate_failures: Vec<String>,
    /// Why each failed gate failed, by name.
    pub hard_gate_reasons: BTreeMap<String, String>,
    /// Names of criteria whose floor was missed, sorted.
    pub floor_violations: Vec<String>,
    /// True when the floor cap lowered the grade (band better than D, gates passed).
    pub grade_capped: bool,
    /// Every criterion, in input order.
    pub criteria: Vec<CriterionResult>,
    /// Why, in one word.
    pub reason: Reason,
    /// Why this grade, step by step, for people.
    pub explanation: Vec<String>,
    /// The rubric id, when known.
    pub rubric_id: Option<String>,
    /// The rubric version, when known.
    pub rubric_version: Option<String>,
}

/// Why a request could not be scored; names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScoreError {
    /// A criterion could not be normalized.
    #[error("`criteria[{index}]` (`{name}`): {source}")]
    Criterion {
        /// Position in `criteria`.
        index: usize,
        /// Criterion name.
        name: String,
        /// The formula problem.
        source: FormulaError,
    },
    /// A field has an invalid value.
    #[error("`{field}`: {message}")]
    Invalid {
        /// The field path, for example `criteria[2].weight`.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
}

impl ScoreError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> ScoreError {
        ScoreError::Invalid { field: field.into(), message: message.into() }
    }

    /// The field path the error is about.
    pub fn field(&self) -> String {
        match self {
            ScoreError::Criterion { index, source, .. } => {
                let field = match source {
                    FormulaError::UnknownFormula { .. } => "formula_id",
                    FormulaError::InvalidParams { .. } => "params",
                    _ => "raw_score",
                };
                format!("criteria[{index}].{field}")
            }
            ScoreError::Invalid { field, .. } => field.clone(),
        }
    }
}

/// Converts a floor to the normalized scale with the criterion's formula.
pub fn normalized_floor(
    floor: &FloorSpec,
    formula_id: &str,
    params: Option<&Map<String, Value>>,
    registry: &FormulaRegistry,
) -> Result<f64, String> {
    match floor {
        FloorSpec::Normalized(value) => {
            if !value.is_finite() || *value < 0.0 {
                Err(format!("critical_floor `{value}` must be a number in 0..1"))
            } else if *value > 1.0 {
                Err(format!(
                    "critical_floor `{value}` is ambiguous: floors are on the normalized 0..1 scale; write `{{raw: {value}}}` for a floor on the raw scale"
                ))
            } else {
                Ok(*value)
            }
        }
        FloorSpec::Raw { raw } => registry
            .normalize(formula_id, &RawScore::Number(*raw), params)
            .map_err(|error| format!("critical_floor `{{raw: {raw}}}`: {error}")),
    }
}

/// The numbers of one criterion after normalization: what the aggregation needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// Normalized score, 0..1.
    pub normalized: f64,
    /// Weight.
    pub weight: f64,
    /// Normalized floor, when any.
    pub floor: Option<f64>,
}

/// The aggregate of scored criteria (the allocation-free core of the algorithm).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aggregate {
    /// Weighted mean on 0..1.
    pub weighted_0_1: f64,
    /// `round(weighted_0_1 * 100, 2)`.
    pub weighted_100: f64,
    /// Number of floors missed.
    pub floors_missed: usize,
}

/// Weighted mean, rounding and floor checks over already-normalized criteria.
/// Errors (as the offending index) when a weight is negative or not finite, or the weights
/// sum to zero or less.
pub fn aggregate(scored: &[Scored]) -> Result<Aggregate, Option<usize>> {
    let mut weight_sum = 0.0;
    let mut weighted = 0.0;
    let mut floors_missed = 0;
    for (idx, item) in scored.iter().enumerate() {
        if !item.weight.is_finite() || item.weight < 0.0 {
            return Err(Some(idx));
        }
        weight_sum += item.weight;
        weighted += item.weight * item.normalized;
        if item.floor.is_some_and(|floor| item.normalized < floor) {
            floors_missed += 1;
        }
    }
    if weight_sum <= 0.0 || !weight_sum.is_finite() {
        return Err(None);
    }
    let weighted_0_1 = weighted / weight_sum;
    Ok(Aggregate { weighted_0_1, weighted_100: round2(weighted_0_1 * 100.0), floors_missed })
}

/// Rounds to 2 decimals, half away from zero.
pub fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// Scores a request with the built-in formulas plus any registered in `registry`.
pub fn score(request: &ScoreRequest, registry: &FormulaRegistry) -> Result<EvaluationResult, ScoreError> {
    score_inner(request, registry, false)
}

/// `allow_empty`: with no criteria the weighted score is 0 (used when a failed run has no
/// scores at all; a gate has failed then, so the grade is F either way).
pub(crate) fn score_inner(
    request: &ScoreRequest,
    registry: &FormulaRegistry,
    allow_empty: bool,
) -> Result<EvaluationResult, ScoreError> {
    let pass_threshold = request.pass_threshold.unwrap_or(DEFAULT_PASS_THRESHOLD);
    if !pass_threshold.is_finite() || !(0.0..=100.0).contains(&pass_threshold) {
        return Err(ScoreError::invalid("pass_threshold", format!("`{pass_threshold}` must be a number in 0..100")));
    }
    let extended;
    let registry = if request.formulas.is_empty() {
        registry
    } else {
        let mut with_user = registry.clone();
        for (index, formula) in request.formulas.iter().enumerate() {
            with_user
                .register(formula.clone())
                .map_err(|error| ScoreError::invalid(format!("formulas[{index}]"), error.to_string()))?;
        }
        extended = with_user;
        &extended
    };
    if request.criteria.is_empty() && !allow_empty {
        return Err(ScoreError::invalid("criteria", "no criteria; give at least one criterion with a positive weight"));
    }

    // Step 1: gates. Every required gate is present; an absent one is "not proven".
    let mut hard_gates = request.hard_gates.clone();
    let mut hard_gate_reasons: BTreeMap<String, String> = BTreeMap::new();
    for gate in REQUIRED_GATES {
        hard_gates.entry(gate.to_owned()).or_insert_with(|| {
            hard_gate_reasons.insert(gate.to_owned(), format!("not proven: required gate `{gate}` was not evaluated"));
            false
        });
    }
    for (name, passed) in &hard_gates {
        if !passed && !hard_gate_reasons.contains_key(name) {
            let reason = request.hard_gate_reasons.get(name).cloned().unwrap_or_else(|| "reported as failed".into());
            hard_gate_reasons.insert(name.clone(), reason);
        }
    }
    let hard_gate_failures: Vec<String> =
        hard_gates.iter().filter(|(_, passed)| !**passed).map(|(name, _)| name.clone()).collect();

    // Step 2: normalize.
    let mut seen = std::collections::BTreeSet::new();
    let mut criteria = Vec::with_capacity(request.criteria.len());
    let mut scored = Vec::with_capacity(request.criteria.len());
    for (index, input) in request.criteria.iter().enumerate() {
        if input.name.trim().is_empty() {
            return Err(ScoreError::invalid(
                format!("criteria[{index}].name"),
                "the name is empty; name the criterion",
            ));
        }
        if !seen.insert(input.name.as_str()) {
            return Err(ScoreError::invalid(
                format!("criteria[{index}].name"),
                format!("criterion `{}` appears twice; give each criterion once", input.name),
            ));
        }
        if !input.weight.is_finite() || input.weight < 0.0 {
            return Err(ScoreError::invalid(
                format!("criteria[{index}].weight"),
                format!("weight `{}` of `{}` must be a finite number >= 0", input.weight, input.name),
            ));
        }
        let params = input.params.as_ref();
        let normalized = registry
            .normalize(&input.formula_id, &input.raw_score, params)
            .map_err(|source| ScoreError::Criterion { index, name: input.name.clone(), source })?;
        let floor = match &input.critical_floor {
            Some(floor) => Some(
                normalized_floor(floor, &input.formula_id, params, registry)
                    .map_err(|message| ScoreError::invalid(format!("criteria[{index}].critical_floor"), message))?,
            ),
            None => None,
        };
        let sample_count = input.sample_count.unwrap_or_else(|| input.raw_score.observations());
        if sample_count == 0 {
            return Err(ScoreError::invalid(
                format!("criteria[{index}].sample_count"),
                "0 samples; a score rests on at least 1 sample",
            ));
        }
        scored.push(Scored { normalized, weight: input.weight, floor });
        criteria.push(CriterionResult {
            name: input.name.clone(),
            raw_score: input.raw_score,
            formula_id: input.formula_id.clone(),
            normalized_score: normalized,
            adjusted_score: adjust_for_sample_size(normalized, sample_count, RELIABILITY_PRIOR, RELIABILITY_K),
            sample_count,
            weight: input.weight,
            critical_floor: floor,
            floor_passed: floor.is_none_or(|floor| normalized >= floor),
        });
    }

    // Step 3: aggregate.
    let aggregate = match aggregate(&scored) {
        Ok(aggregate) => aggregate,
        Err(None) if allow_empty && scored.is_empty() => {
            Aggregate { weighted_0_1: 0.0, weighted_100: 0.0, floors_missed: 0 }
        }
        Err(_) => {
            return Err(ScoreError::invalid(
                "criteria[].weight",
                "the weights sum to 0; give at least one criterion a positive weight",
            ));
        }
    };
    let weighted_score = aggregate.weighted_100;

    // Steps 4-6: band, floor cap, gate override, pass.
    let mut floor_violations: Vec<String> =
        criteria.iter().filter(|c| !c.floor_passed).map(|c| c.name.clone()).collect();
    floor_violations.sort();
    let band_grade = Grade::from_score(weighted_score);
    let gates_passed = hard_gate_failures.is_empty();
    let floors_missed = !floor_violations.is_empty();
    let mut grade = band_grade;
    if floors_missed {
        grade = grade.worst(Grade::D);
    }
    let grade_capped = gates_passed && floors_missed && band_grade < Grade::D;
    if !gates_passed {
        grade = Grade::F;
    }
    let passed = gates_passed && weighted_score >= pass_threshold && !floors_missed;
    let reason = if !gates_passed {
        Reason::HardGateFailure
    } else if floors_missed {
        Reason::FloorViolation
    } else if weighted_score < pass_threshold {
        Reason::BelowPassThreshold
    } else {
        Reason::Passed
    };

    let mut result = EvaluationResult {
        passed,
        grade,
        band_grade,
        weighted_score,
        pass_threshold,
        hard_gates,
        hard_gate_failures,
        hard_gate_reasons,
        floor_violations,
        grade_capped,
        criteria,
        reason,
        explanation: Vec::new(),
        rubric_id: request.rubric_id.clone(),
        rubric_version: request.rubric_version.clone(),
    };
    result.explanation = explain(&result);
    Ok(result)
}

/// Margin above a floor that grade A expects (`000` §5.2).
pub const A_FLOOR_MARGIN: f64 = 0.10;

/// Why a result landed where it did, following the placement guide of `000` §5.2.
fn explain(result: &EvaluationResult) -> Vec<String> {
    let mut lines = vec![format!(
        "weighted score {:.2} falls in band {} ({})",
        result.weighted_score,
        result.band_grade,
        result.band_grade.band()
    )];
    if !result.hard_gate_failures.is_empty() {
        let failures: Vec<String> = result
            .hard_gate_failures
            .iter()
            .map(|gate| match result.hard_gate_reasons.get(gate) {
                Some(reason) => format!("`{gate}` ({reason})"),
                None => format!("`{gate}`"),
            })
            .collect();
        lines.push(format!("hard gate(s) failed: {}; grade forced to F (release-blocking)", failures.join(", ")));
    } else {
        lines.push(format!("all {} hard gates passed", result.hard_gates.len()));
    }
    for criterion in &result.criteria {
        let Some(floor) = criterion.critical_floor else { continue };
        if !criterion.floor_passed {
            lines.push(format!(
                "critical floor missed: `{}` normalized {:.3} < floor {:.2}; grade capped at D",
                criterion.name, criterion.normalized_score, floor
            ));
        } else if criterion.normalized_score < floor + A_FLOOR_MARGIN {
            lines.push(format!(
                "`{}` passes its floor {:.2} near the boundary ({:.3} < floor + {A_FLOOR_MARGIN:.2})",
                criterion.name, floor, criterion.normalized_score
            ));
        }
    }
    if result.grade_capped {
        lines.push(format!("grade lowered from {} to {} by the floor cap", result.band_grade, result.grade));
    }
    if result.passed {
        lines.push(format!(
            "passed: gates passed, {:.2} >= pass threshold {:.2}, no floor missed",
            result.weighted_score, result.pass_threshold
        ));
    } else if result.weighted_score < result.pass_threshold {
        lines.push(format!(
            "not passed: weighted score {:.2} < pass threshold {:.2}",
            result.weighted_score, result.pass_threshold
        ));
    } else {
        lines.push("not passed".to_owned());
    }
    lines
}

/// Facts used to order two runs whose weighted scores are near-equal (`000` §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RankingFacts {
    /// Weighted score, 0..100.
    pub weighted_score: f64,
    /// Number of failed hard gates.
    pub hard_gate_failures: usize,
    /// Objective correctness (normalized), when known.
    pub correctness: Option<f64>,
    /// Safety/validation (normalized), when known.
    pub safety: Option<f64>,
    /// p95 latency in milliseconds, when known.
    pub p95_latency_ms: Option<f64>,
    /// Cost, when known.
    pub cost: Option<f64>,
}

impl RankingFacts {
    /// The facts of a result: correctness from a criterion named `correctness` (or
    /// containing it), safety from one named `safety`/`validation`.
    pub fn from_result(result: &EvaluationResult) -> RankingFacts {
        let find = |needles: &[&str]| {
            result
                .criteria
                .iter()
                .find(|c| needles.iter().any(|needle| c.name.contains(needle)))
                .map(|c| c.normalized_score)
        };
        RankingFacts {
            weighted_score: result.weighted_score,
            hard_gate_failures: result.hard_gate_failures.len(),
            correctness: find(&["correctness"]),
            safety: find(&["safety", "validation"]),
            p95_latency_ms: None,
            cost: None,
        }
    }
}

/// Which rule decided an ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TieBreak {
    /// Scores differ by 1.0 or more.
    WeightedScore,
    /// Fewer hard-gate failures wins.
    HardGateFailures,
    /// Higher objective correctness wins.
    Correctness,
    /// Higher safety/validation wins.
    Safety,
    /// Lower p95 latency wins.
    Latency,
    /// Lower cost wins.
    Cost,
    /// Nothing separates the runs.
    Tie,
}

/// Orders two runs best first (`Ordering::Less` means `a` ranks above `b`) and says which
/// rule decided. Scores within 1.0 point go through the tie-breakers of `000` §5.2.
pub fn rank(a: &RankingFacts, b: &RankingFacts) -> (Ordering, TieBreak) {
    if (a.weighted_score - b.weighted_score).abs() >= 1.0 {
        return (b.weighted_score.total_cmp(&a.weighted_score), TieBreak::WeightedScore);
    }
    if a.hard_gate_failures != b.hard_gate_failures {
        return (a.hard_gate_failures.cmp(&b.hard_gate_failures), TieBreak::HardGateFailures);
    }
    let higher = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if x != y => Some(y.total_cmp(&x)),
        _ => None,
    };
    let lower = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if x != y => Some(x.total_cmp(&y)),
        _ => None,
    };
    if let Some(order) = higher(a.correctness, b.correctness) {
        return (order, TieBreak::Correctness);
    }
    if let Some(order) = higher(a.safety, b.safety) {
        return (order, TieBreak::Safety);
    }
    if let Some(order) = lower(a.p95_latency_ms, b.p95_latency_ms) {
        return (order, TieBreak::Latency);
    }
    if let Some(order) = lower(a.cost, b.cost) {
        return (order, TieBreak::Cost);
    }
    (b.weighted_score.total_cmp(&a.weighted_score), TieBreak::Tie)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::REQUIRED_GATES;

    fn request(scores: &[(f64, f64)]) -> ScoreRequest {
        ScoreRequest {
            hard_gates: REQUIRED_GATES.iter().map(|g| ((*g).to_owned(), true)).collect(),
            criteria: scores
                .iter()
                .enumerate()
                .map(|(idx, (raw, weight))| CriterionInput {
                    name: format!("c{idx}"),
                    raw_score: RawScore::Number(*raw),
                    formula_id: "zero_one".to_owned(),
                    weight: *weight,
                    critical_floor: None,
                    params: None,
                    sample_count: None,
                })
                .collect(),
            ..ScoreRequest::default()
        }
    }

    fn grade_of(score_0_1: f64) -> Grade {
        score(&request(&[(score_0_1, 1.0)]), &FormulaRegistry::builtin()).unwrap().grade
    }

    #[test]
    fn bands_have_inclusive_lower_bounds() {
        assert_eq!(grade_of(0.90), Grade::A);
        assert_eq!(grade_of(0.8999), Grade::B);
        assert_eq!(grade_of(0.80), Grade::B);
        assert_eq!(grade_of(0.70), Grade::C);
        assert_eq!(grade_of(0.60), Grade::D);
        assert_eq!(grade_of(0.5999), Grade::F);
        assert_eq!(grade_of(0.89996), Grade::A, "rounded to 2 decimals first: 89.996 -> 90.00");
    }

    #[test]
    fn weights_need_not_sum_to_one_but_must_be_positive_overall() {
        let result = score(&request(&[(1.0, 3.0), (0.0, 1.0)]), &FormulaRegistry::builtin()).unwrap();
        assert_eq!(result.weighted_score, 75.0);
        let zero = score(&request(&[(1.0, 0.0)]), &FormulaRegistry::builtin()).unwrap_err();
        assert!(zero.to_string().contains("sum to 0"), "{zero}");
        let negative = score(&request(&[(1.0, -1.0)]), &FormulaRegistry::builtin()).unwrap_err();
        assert_eq!(negative.field(), "criteria[0].weight");
    }

    #[test]
    fn pass_threshold_is_inclusive_and_configurable() {
        let mut at = request(&[(0.7, 1.0)]);
        assert!(score(&at, &FormulaRegistry::builtin()).unwrap().passed);
        at.pass_threshold = Some(71.0);
        let result = score(&at, &FormulaRegistry::builtin()).unwrap();
        assert!(!result.passed);
        assert_eq!(result.reason, Reason::BelowPassThreshold);
        at.pass_threshold = Some(120.0);
        assert_eq!(score(&at, &FormulaRegistry::builtin()).unwrap_err().field(), "pass_threshold");
    }

    #[test]
    fn explanation_says_why() {
        let mut capped = request(&[(0.95, 1.0), (0.75, 1.0)]);
        capped.criteria[1].critical_floor = Some(FloorSpec::Normalized(0.8));
        capped.criteria[0].critical_floor = Some(FloorSpec::Normalized(0.9));
        let result = score(&capped, &FormulaRegistry::builtin()).unwrap();
        assert_eq!(result.grade, Grade::D);
        let text = result.explanation.join("\n");
        assert!(text.contains("band B"), "{text}");
        assert!(text.contains("critical floor missed: `c1`"), "{text}");
        assert!(text.contains("`c0` passes its floor 0.90 near the boundary"), "{text}");
        assert!(text.contains("grade lowered from B to D"), "{text}");
    }

    #[test]
    fn tie_breakers_apply_within_one_point() {
        let a =
            RankingFacts { weighted_score: 85.0, hard_gate_failures: 0, correctness: Some(0.8), ..Default::default() };
        let b =
            RankingFacts { weighted_score: 85.6, hard_gate_failures: 1, correctness: Some(0.9), ..Default::default() };
        assert_eq!(rank(&a, &b), (Ordering::Less, TieBreak::HardGateFailures));
        let b = RankingFacts { hard_gate_failures: 0, ..b };
        assert_eq!(rank(&a, &b), (Ordering::Greater, TieBreak::Correctness));
        let c = RankingFacts { weighted_score: 86.0, ..a };
        assert_eq!(rank(&a, &c), (Ordering::Greater, TieBreak::WeightedScore));
        let fast = RankingFacts { p95_latency_ms: Some(900.0), ..a };
        let slow = RankingFacts { p95_latency_ms: Some(1500.0), ..a };
        assert_eq!(rank(&fast, &slow), (Ordering::Less, TieBreak::Latency));
        let cheap = RankingFacts { cost: Some(0.1), ..a };
        let costly = RankingFacts { cost: Some(0.2), ..a };
        assert_eq!(rank(&cheap, &costly), (Ordering::Less, TieBreak::Cost));
        assert_eq!(rank(&a, &a).1, TieBreak::Tie);
    }

    #[test]
    fn counts_supply_the_sample_count_of_the_adjustment() {
        let mut pairwise = request(&[(0.0, 1.0)]);
        pairwise.criteria[0].raw_score =
            RawScore::Pairwise(crate::formula::PairwiseCounts { wins: 3, losses: 1, ties: 1 });
        pairwise.criteria[0].formula_id = "pairwise".to_owned();
        let result = score(&pairwise, &FormulaRegistry::builtin()).unwrap();
        assert_eq!(result.criteria[0].sample_count, 5);
        assert!((result.criteria[0].adjusted_score - (5.0 * 0.7 + 10.0) / 25.0).abs() < 1e-12);
        pairwise.criteria[0].sample_count = Some(100);
        let result = score(&pairwise, &FormulaRegistry::builtin()).unwrap();
        assert_eq!(result.criteria[0].sample_count, 100, "an explicit count wins");
    }

    #[test]
    fn test_criterion_result_stores_both_scores() {
        let mut likert = request(&[(0.0, 1.0)]);
        likert.criteria[0].raw_score = RawScore::Number(4.0);
        likert.criteria[0].formula_id = "likert_1_5".to_owned();
        likert.criteria[0].sample_count = Some(5);
        let result = score(&likert, &FormulaRegistry::builtin()).unwrap();
        let criterion = &result.criteria[0];
        assert_eq!(criterion.raw_score, RawScore::Number(4.0));
        assert_eq!(criterion.normalized_score, 0.75);
        assert!((criterion.adjusted_score - (5.0 * 0.75 + 10.0) / 25.0).abs() < 1e-12);
        assert_eq!(criterion.formula_id, "likert_1_5");
    }
}
