//! The compliance report (`003` §5 JSON schema), its scores, and its renderings.
//!
//! **Formulas.** Every checkpoint is worth 1.0. PASS earns 1, PARTIAL its partial weight,
//! FAIL 0. NOT_APPLICABLE and BLOCKED leave both sums.
//! `compliance_percent = earned / possible * 100` (null when nothing is scorable);
//! `spec_health_percent = (total - blocked) / total * 100`. Percentages and means are rounded
//! to 2 decimals, variances to 4.
//!
//! **Rating bands** (on `compliance_percent`): Excellent >= 95, Good >= 85, Fair >= 70,
//! Poor >= 50, Critical below 50, "Not rated" when null.
//!
//! **Confidence** (`--eval-runs N`, N >= 2): the compliance score of each run gives a range,
//! a mean and a sample variance (divided by N - 1). HIGH_CONFIDENCE when the variance is at
//! most 2.0 and the range at most 5 points; MEDIUM_CONFIDENCE when at most 10.0 and 10
//! points; LOW_CONFIDENCE otherwise. With one run the protocol is off and the status is
//! SINGLE_RUN.
//!
//! **Position dropout.** Checkpoint at position p of N falls in quartile ceil(4p / N); each
//! quartile's value is its compliance (null when nothing in it is scorable).

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::spec::CheckpointSeverity;

/// The report's own schema version.
pub const REPORT_SCHEMA_VERSION: &str = "1.0.0";

/// A compliance report: exactly the `003` §5 schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Compliance report", description = "The result of `agentic check`; see docs/checkpoints.md")]
pub struct ComplianceReport {
    /// The report schema version, `1.0.0` (readers accept any `1.x`).
    #[schemars(regex(pattern = r"^1\.[0-9]+\.[0-9]+$"))]
    pub schema_version: String,
    /// The spec's `workflow`.
    pub workflow: String,
    /// The spec's `spec_version`.
    pub spec_version: String,
    /// When the check ran (RFC 3339, UTC).
    #[schemars(extend("format" = "date-time"))]
    pub evaluated_at: String,
    /// The two scores and the rating.
    pub scores: Scores,
    /// Counts per state.
    pub summary: Summary,
    /// How well the tier-3 evaluator documented its verdicts.
    pub evaluator_audit: EvaluatorAudit,
    /// Tier-3 repeat runs.
    pub tier_3_confidence: Tier3Confidence,
    /// Compliance per quartile of `position_index`.
    pub position_dropout_analysis: PositionDropout,
    /// One entry per checkpoint, in document order.
    #[schemars(length(min = 1))]
    pub checkpoints: Vec<CheckpointResult>,
}

/// The dual metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scores {
    /// Earned / possible * 100, N/A and BLOCKED excluded; null when nothing is scorable.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub compliance_percent: Option<f64>,
    /// (total - blocked) / total * 100.
    #[schemars(range(min = 0.0, max = 100.0))]
    pub spec_health_percent: f64,
    /// The band of `compliance_percent`.
    pub rating: Rating,
}

/// Rating bands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Rating {
    /// >= 95.
    Excellent,
    /// >= 85.
    Good,
    /// >= 70.
    Fair,
    /// >= 50.
    Poor,
    /// < 50.
    Critical,
    /// Nothing scorable.
    #[serde(rename = "Not rated")]
    NotRated,
}

/// The rating band of a compliance score.
pub fn rating_for(compliance_percent: Option<f64>) -> Rating {
    match compliance_percent {
        None => Rating::NotRated,
        Some(score) if score >= 95.0 => Rating::Excellent,
        Some(score) if score >= 85.0 => Rating::Good,
        Some(score) if score >= 70.0 => Rating::Fair,
        Some(score) if score >= 50.0 => Rating::Poor,
        Some(_) => Rating::Critical,
    }
}

/// Counts per state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// All checkpoints.
    pub total_checkpoints: u64,
    /// PASS.
    pub passed: u64,
    /// PARTIAL.
    pub partial: u64,
    /// FAIL.
    pub failed: u64,
    /// NOT_APPLICABLE.
    pub na: u64,
    /// BLOCKED.
    pub blocked: u64,
}

/// Documentation quality of tier-3 verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluatorAudit {
    /// Tier-3 PASS verdicts without notes.
    pub undocumented_passes: u64,
    /// Tier-3 FAIL verdicts (including those then BLOCKED) without notes.
    pub undocumented_fails: u64,
    /// Tier-3 checkpoints in the spec.
    pub tier_3_checkpoints_count: u64,
    /// Tier-3 verdicts without an evidence citation.
    pub tier_3_without_evidence_citation: u64,
}

/// Confidence statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConfidenceStatus {
    /// Variance <= 2.0 and range <= 5 points.
    HighConfidence,
    /// Variance <= 10.0 and range <= 10 points.
    MediumConfidence,
    /// Anything noisier.
    LowConfidence,
    /// One run: the protocol is off.
    SingleRun,
    /// Some run had nothing scorable.
    InsufficientData,
}

/// The most tier-3 runs one check makes (`--eval-runs`).
pub const MAX_EVAL_RUNS: u32 = 100;

/// The status for per-run compliance scores.
pub fn confidence_status(scores: &[Option<f64>]) -> ConfidenceStatus {
    if scores.len() < 2 {
        return ConfidenceStatus::SingleRun;
    }
    let Some(values) = scores.iter().copied().collect::<Option<Vec<f64>>>() else {
        return ConfidenceStatus::InsufficientData;
    };
    // Decided on the figures the report prints (range in 2 decimals, variance in 4), so that
    // 0.57 * 100 = 56.99999999999999 cannot move a run across a band.
    let (_, variance, low, high) = statistics(&values);
    band(round4(variance), round2(low), round2(high))
}

/// The band of a variance and a range as the report prints them.
fn band(variance: f64, low: f64, high: f64) -> ConfidenceStatus {
    let width = round2(high - low);
    if variance <= 2.0 && width <= 5.0 {
        ConfidenceStatus::HighConfidence
    } else if variance <= 10.0 && width <= 10.0 {
        ConfidenceStatus::MediumConfidence
    } else {
        ConfidenceStatus::LowConfidence
    }
}

/// Mean, sample variance, lowest and highest value.
fn statistics(values: &[f64]) -> (f64, f64, f64, f64) {
    let count = values.len() as f64;
    let mean = values.iter().sum::<f64>() / count;
    let variance =
        if values.len() < 2 { 0.0 } else { values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (count - 1.0) };
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, variance, low, high)
}

/// Tier-3 repeat runs (`--eval-runs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tier3Confidence {
    /// True with two or more runs.
    pub protocol_enabled: bool,
    /// How many times tier 3 ran.
    #[schemars(range(min = 1, max = 100))]
    pub runs: u32,
    /// Lowest and highest compliance over the runs.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(inner(range(min = 0.0, max = 100.0)))]
    pub score_range: Option<[f64; 2]>,
    /// Mean compliance over the runs.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub mean: Option<f64>,
    /// Sample variance of compliance over the runs.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(range(min = 0.0))]
    pub variance: Option<f64>,
    /// See [`confidence_status`].
    pub status: ConfidenceStatus,
}

impl Tier3Confidence {
    /// The block for per-run compliance scores.
    pub fn from_runs(scores: &[Option<f64>]) -> Tier3Confidence {
        let status = confidence_status(scores);
        let values: Option<Vec<f64>> = scores.iter().copied().collect();
        let (score_range, mean, variance) = match values {
            Some(values) if !values.is_empty() => {
                let (mean, variance, low, high) = statistics(&values);
                (Some([round2(low), round2(high)]), Some(round2(mean)), Some(round4(variance)))
            }
            _ => (None, None, None),
        };
        Tier3Confidence {
            protocol_enabled: scores.len() >= 2,
            runs: scores.len() as u32,
            score_range,
            mean,
            variance,
            status,
        }
    }
}

/// Compliance per quartile of `position_index`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PositionDropout {
    /// First quarter of the workflow.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub quartile_1: Option<f64>,
    /// Second quarter.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub quartile_2: Option<f64>,
    /// Third quarter.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub quartile_3: Option<f64>,
    /// Last quarter.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub quartile_4: Option<f64>,
}

/// The final state of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ResultState {
    /// Followed: earns 1.
    Pass,
    /// Partly followed: earns the partial weight.
    Partial,
    /// Not followed: earns 0.
    Fail,
    /// Its evidence is absent or `applies_when` does not hold: not scored.
    NotApplicable,
    /// Failed while an active environment constraint affects it: not scored.
    Blocked,
}

impl ResultState {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultState::Pass => "PASS",
            ResultState::Partial => "PARTIAL",
            ResultState::Fail => "FAIL",
            ResultState::NotApplicable => "NOT_APPLICABLE",
            ResultState::Blocked => "BLOCKED",
        }
    }

    /// Whether it counts towards compliance.
    pub fn scorable(self) -> bool {
        matches!(self, ResultState::Pass | ResultState::Partial | ResultState::Fail)
    }
}

/// One checkpoint's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointResult {
    /// The checkpoint id.
    #[schemars(length(min = 1))]
    pub id: String,
    /// 1-based document order.
    #[schemars(range(min = 1))]
    pub position_index: usize,
    /// 1, 2 or 3.
    #[schemars(range(min = 1, max = 3))]
    pub tier: u8,
    /// As in the spec.
    pub severity: CheckpointSeverity,
    /// The state.
    pub result: ResultState,
    /// Weight earned (0 for N/A and BLOCKED).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub earned_weight: f64,
    /// Why, with the evidence.
    pub notes: String,
}

impl ComplianceReport {
    /// The first thing in this report that `agentic check` could not have written (a read
    /// report, a baseline: a hand-edited or foreign file must not produce bogus deltas).
    pub fn inconsistency(&self) -> Option<String> {
        let percent = |value: f64| (0.0..=100.0).contains(&value);
        if let Some(compliance) = self.scores.compliance_percent
            && !percent(compliance)
        {
            return Some(format!("`scores.compliance_percent` is {compliance}, not a percentage"));
        }
        if !percent(self.scores.spec_health_percent) {
            return Some(format!(
                "`scores.spec_health_percent` is {}, not a percentage",
                self.scores.spec_health_percent
            ));
        }
        let dropout = &self.position_dropout_analysis;
        let confidence = &self.tier_3_confidence;
        for (field, value) in [
            ("position_dropout_analysis.quartile_1", dropout.quartile_1),
            ("position_dropout_analysis.quartile_2", dropout.quartile_2),
            ("position_dropout_analysis.quartile_3", dropout.quartile_3),
            ("position_dropout_analysis.quartile_4", dropout.quartile_4),
            ("tier_3_confidence.mean", confidence.mean),
        ] {
            if let Some(value) = value
                && !percent(value)
            {
                return Some(format!("`{field}` is {value}, not a percentage"));
            }
        }
        if let Some([low, high]) = confidence.score_range
            && !(percent(low) && percent(high) && low <= high)
        {
            return Some(format!("`tier_3_confidence.score_range` is [{low}, {high}], not a range of percentages"));
        }
        if let Some(variance) = confidence.variance
            && (variance.is_nan() || variance < 0.0)
        {
            return Some(format!("`tier_3_confidence.variance` is {variance}"));
        }
        // Summary, scores and dropout are what `check` derives from the checkpoints.
        let (scores, summary, dropout) = score(&self.checkpoints);
        if summary != self.summary {
            return Some("`summary` does not count the checkpoints' states".to_owned());
        }
        for (idx, result) in self.checkpoints.iter().enumerate() {
            let at = format!("`checkpoints[{idx}]`");
            if result.id.trim().is_empty() {
                return Some(format!("{at} has an empty id"));
            }
            if !(1..=3).contains(&result.tier) {
                return Some(format!("{at} (`{}`) has tier {}; tiers are 1, 2 and 3", result.id, result.tier));
            }
            let weight = result.earned_weight;
            let fits = match result.result {
                ResultState::Pass => weight == 1.0,
                ResultState::Fail | ResultState::Blocked | ResultState::NotApplicable => weight == 0.0,
                ResultState::Partial => result.tier == 3 && weight > 0.0 && weight < 1.0,
            };
            if !fits {
                return Some(format!(
                    "{at} (`{}`) is {} with earned weight {weight} (PASS earns 1; FAIL, BLOCKED and N/A 0; only a tier-3 \
                     PARTIAL earns a weight between 0 and 1)",
                    result.id,
                    result.result.as_str()
                ));
            }
        }
        if self.checkpoints.is_empty() {
            return Some("`checkpoints` is empty (a spec has at least one checkpoint)".to_owned());
        }
        // Document order: the positions are 1, 2, ... once each.
        let mut positions: Vec<usize> = self.checkpoints.iter().map(|c| c.position_index).collect();
        positions.sort_unstable();
        if let Some((expected, found)) = positions
            .iter()
            .enumerate()
            .map(|(idx, &found)| (idx + 1, found))
            .find(|(expected, found)| expected != found)
        {
            // Sorted, the first position out of place is one below 1, one given twice (it
            // equals the one before it), or one above a missing position.
            let problem = match found {
                0 => "position 0 is given (positions start at 1)".to_owned(),
                found if found < expected => format!("position {found} is given twice"),
                _ => format!("position {expected} is missing"),
            };
            return Some(format!(
                "`checkpoints[*].position_index` should be 1 to {} once each; {problem}",
                self.checkpoints.len()
            ));
        }
        // The scores and the dropout table exactly as `check` rounds them (2 decimals): an
        // edited figure is refused whichever way it moved.
        let differs = |written: Option<f64>, computed: Option<f64>| match (written, computed) {
            (Some(written), Some(computed)) => (written - computed).abs() > 1e-9,
            (written, computed) => written.is_some() != computed.is_some(),
        };
        let show = |value: Option<f64>| value.map_or("null".to_owned(), |value| value.to_string());
        for (field, written, computed) in [
            ("scores.compliance_percent", self.scores.compliance_percent, scores.compliance_percent),
            ("scores.spec_health_percent", Some(self.scores.spec_health_percent), Some(scores.spec_health_percent)),
            ("position_dropout_analysis.quartile_1", self.position_dropout_analysis.quartile_1, dropout.quartile_1),
            ("position_dropout_analysis.quartile_2", self.position_dropout_analysis.quartile_2, dropout.quartile_2),
            ("position_dropout_analysis.quartile_3", self.position_dropout_analysis.quartile_3, dropout.quartile_3),
            ("position_dropout_analysis.quartile_4", self.position_dropout_analysis.quartile_4, dropout.quartile_4),
        ] {
            if differs(written, computed) {
                return Some(format!("`{field}` is {}, but its checkpoints give {}", show(written), show(computed)));
            }
        }
        if self.scores.rating != rating_for(self.scores.compliance_percent) {
            return Some(format!(
                "`scores.rating` is \"{}\", but a compliance of {} rates \"{}\"",
                rating_text(self.scores.rating),
                show(self.scores.compliance_percent),
                rating_text(rating_for(self.scores.compliance_percent))
            ));
        }
        self.confidence_inconsistency().or_else(|| self.audit_inconsistency())
    }

    /// What no check could have written in `tier_3_confidence` (see [`Tier3Confidence::from_runs`]).
    fn confidence_inconsistency(&self) -> Option<String> {
        let confidence = &self.tier_3_confidence;
        let at = "`tier_3_confidence`";
        if confidence.runs == 0 {
            return Some(format!("{at} has `runs` 0 (a check runs tier 3 at least once)"));
        }
        if confidence.runs > MAX_EVAL_RUNS {
            return Some(format!("{at} has `runs` {} (`--eval-runs` is at most {MAX_EVAL_RUNS})", confidence.runs));
        }
        if confidence.protocol_enabled != (confidence.runs >= 2) {
            return Some(format!(
                "{at} has `protocol_enabled` {} with {} run(s) (it is true exactly with two or more)",
                confidence.protocol_enabled, confidence.runs
            ));
        }
        let figures = [confidence.score_range.is_some(), confidence.mean.is_some(), confidence.variance.is_some()];
        if figures.iter().any(|&f| f) && !figures.iter().all(|&f| f) {
            return Some(format!("{at} gives some of `score_range`, `mean` and `variance` but not all"));
        }
        if let (Some([low, high]), Some(mean)) = (confidence.score_range, confidence.mean)
            && !(low - 0.01..=high + 0.01).contains(&mean)
        {
            return Some(format!("{at} has `mean` {mean} outside its `score_range` [{low}, {high}]"));
        }
        // The report's scores are run 1's: its compliance is one of the figures' runs.
        let compliance = self.scores.compliance_percent;
        let figures = confidence.score_range.zip(confidence.mean).zip(confidence.variance);
        let show = |value: Option<f64>| value.map_or("null".to_owned(), |value| value.to_string());
        match (confidence.runs, compliance, figures) {
            // One run: its range is its score twice, its mean that score, its variance 0;
            // nothing scorable, no figures.
            (1, Some(score), Some((([low, high], mean), variance)))
                if !(low == score && high == score && mean == score && variance == 0.0) =>
            {
                return Some(format!(
                    "{at} has one run but `score_range` [{low}, {high}], `mean` {mean} and `variance` {variance} where \
                     the report's compliance is {score} (one run has one score: its range is that score twice, its \
                     mean that score and its variance 0)"
                ));
            }
            (1, score, figures) if score.is_some() != figures.is_some() => {
                return Some(format!(
                    "{at} has one run, figures {} and the report's compliance {} (a run gives figures exactly when it \
                     scored something)",
                    if figures.is_some() { "given" } else { "null" },
                    show(score)
                ));
            }
            // Run 1 scored nothing: no figures. Else its score is inside the range.
            (_, None, Some(_)) => {
                return Some(format!(
                    "{at} gives figures over its runs, but the report (run 1) scored nothing, and figures need every \
                     run scored"
                ));
            }
            (_, Some(score), Some((([low, high], _), _))) if !(low - 1e-9..=high + 1e-9).contains(&score) => {
                return Some(format!(
                    "{at} has `score_range` [{low}, {high}], which leaves out the report's own compliance {score} (run 1)"
                ));
            }
            // Two runs are the two ends of the range: the mean is their middle and the sample
            // variance half the squared width (to the rounding of the printed figures).
            (2, _, Some((([low, high], mean), variance))) => {
                let width = high - low;
                if (mean - (low + high) / 2.0).abs() > 0.0101
                    || (variance - width * width / 2.0).abs() > width * 0.0101 + 0.0002
                {
                    return Some(format!(
                        "{at} has two runs with `score_range` [{low}, {high}] but `mean` {mean} and `variance` {variance} \
                         (two runs with those ends give a mean of about {} and a variance of about {})",
                        round2((low + high) / 2.0),
                        round4(width * width / 2.0)
                    ));
                }
            }
            // Three runs: two are the range's ends and the mean gives the third, so the
            // variance is set too (to the rounding of the printed figures: each is within
            // 0.005, the third within 0.025).
            (3, _, Some((([low, high], mean), variance))) => {
                let third = 3.0 * mean - low - high;
                let middle = third.clamp(low, high);
                let (_, expected, _, _) = statistics(&[low, high, middle]);
                let width = high - low;
                if (third - middle).abs() > 0.0251 {
                    return Some(format!(
                        "{at} has three runs with `score_range` [{low}, {high}] and `mean` {mean}, which would put \
                         its third run at {}, outside the range",
                        round2(third)
                    ));
                }
                if (variance - expected).abs() > width * 0.0501 + 0.0002 {
                    return Some(format!(
                        "{at} has three runs with `score_range` [{low}, {high}] and `mean` {mean}, so its third run \
                         scored {} and the variance is {}, not {variance}",
                        round2(middle),
                        round4(expected)
                    ));
                }
            }
            _ => {}
        }
        // Runs with figures are INSUFFICIENT_DATA only when they are one run repeated (no
        // tier-3 checkpoint judged apart): then they all have one score.
        if confidence.status == ConfidenceStatus::InsufficientData
            && confidence.runs > 1
            && let (Some([low, high]), Some(variance)) = (confidence.score_range, confidence.variance)
            && (low != high || variance != 0.0)
        {
            return Some(format!(
                "{at} has `status` INSUFFICIENT_DATA with `score_range` [{low}, {high}] and `variance` {variance}; \
                 runs with figures are INSUFFICIENT_DATA only when they are one run repeated, with one score"
            ));
        }
        let expected = match (confidence.runs, confidence.score_range, confidence.variance) {
            (1, ..) => Some(ConfidenceStatus::SingleRun),
            (_, Some([low, high]), Some(variance)) => {
                // One run repeated (no checkpoint judged apart) is INSUFFICIENT_DATA too.
                let computed = band(variance, low, high);
                (confidence.status != ConfidenceStatus::InsufficientData).then_some(computed)
            }
            _ => Some(ConfidenceStatus::InsufficientData),
        };
        if let Some(expected) = expected
            && expected != confidence.status
        {
            return Some(format!(
                "{at} has `status` {} where its figures give {}",
                status_text(confidence.status),
                status_text(expected)
            ));
        }
        None
    }

    /// What no check could have written in `evaluator_audit`: it counts tier-3 checkpoints.
    fn audit_inconsistency(&self) -> Option<String> {
        let audit = &self.evaluator_audit;
        let tier3 = self.checkpoints.iter().filter(|c| c.tier == 3).count() as u64;
        if audit.tier_3_checkpoints_count != tier3 {
            return Some(format!(
                "`evaluator_audit.tier_3_checkpoints_count` is {}, but the report has {tier3} tier-3 checkpoint(s)",
                audit.tier_3_checkpoints_count
            ));
        }
        for (field, count) in [
            ("undocumented_passes", audit.undocumented_passes),
            ("undocumented_fails", audit.undocumented_fails),
            ("tier_3_without_evidence_citation", audit.tier_3_without_evidence_citation),
        ] {
            if count > tier3 {
                return Some(format!(
                    "`evaluator_audit.{field}` is {count}, more than the {tier3} tier-3 checkpoint(s) it counts"
                ));
            }
        }
        None
    }
}

/// Rounds to 2 decimals, half away from zero, as the decimal figure would round.
pub(crate) fn round2(value: f64) -> f64 {
    round_decimal(value, 100.0)
}

/// Rounds to 4 decimals (see [`round2`]).
pub(crate) fn round4(value: f64) -> f64 {
    round_decimal(value, 10_000.0)
}

/// Rounds `value * factor` to an integer, half away from zero, then divides by `factor`. Float
/// noise does not decide a tie: 94.995 is 94.99499999999999 as a float, and 4.27 / 8 * 100
/// is 53.37499999999999, so the scaled value is first rounded to 6 more decimals (ties are
/// decimal figures, and every figure here has far fewer significant digits than a float).
fn round_decimal(value: f64, factor: f64) -> f64 {
    let scaled = value * factor;
    let cleaned = if scaled.abs() < 1e9 { (scaled * 1e6).round() / 1e6 } else { scaled };
    // `+ 0.0` turns -0 into 0: a delta of nothing prints as +0.00, not -0.00.
    cleaned.round() / factor + 0.0
}

/// Compliance over the scorable results, unrounded.
pub(crate) fn compliance_of<'a>(results: impl IntoIterator<Item = &'a CheckpointResult>) -> Option<f64> {
    let mut earned = 0.0;
    let mut possible = 0.0;
    for result in results {
        if result.result.scorable() {
            earned += result.earned_weight;
            possible += 1.0;
        }
    }
    (possible > 0.0).then(|| earned / possible * 100.0)
}

/// Scores, summary and dropout for a list of results.
pub(crate) fn score(results: &[CheckpointResult]) -> (Scores, Summary, PositionDropout) {
    let mut summary = Summary { total_checkpoints: results.len() as u64, ..Summary::default() };
    for result in results {
        match result.result {
            ResultState::Pass => summary.passed += 1,
            ResultState::Partial => summary.partial += 1,
            ResultState::Fail => summary.failed += 1,
            ResultState::NotApplicable => summary.na += 1,
            ResultState::Blocked => summary.blocked += 1,
        }
    }
    let compliance = compliance_of(results).map(round2);
    let total = summary.total_checkpoints as f64;
    let spec_health = if total > 0.0 { round2((total - summary.blocked as f64) / total * 100.0) } else { 100.0 };
    let quartile = |q: usize| {
        let count = results.len();
        compliance_of(results.iter().filter(|r| (4 * r.position_index).div_ceil(count).clamp(1, 4) == q)).map(round2)
    };
    let dropout = PositionDropout {
        quartile_1: quartile(1),
        quartile_2: quartile(2),
        quartile_3: quartile(3),
        quartile_4: quartile(4),
    };
    (
        Scores { compliance_percent: compliance, spec_health_percent: spec_health, rating: rating_for(compliance) },
        summary,
        dropout,
    )
}

/// How one checkpoint changed against a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Earned less than before (both scorable).
    Regression,
    /// Earned more than before (both scorable).
    Improvement,
    /// The state changed to or from N/A or BLOCKED.
    StateChanged,
    /// Not in the baseline.
    Added,
    /// Only in the baseline.
    Removed,
}

/// One per-checkpoint change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointChange {
    /// The checkpoint id.
    pub id: String,
    /// The kind of change.
    pub kind: ChangeKind,
    /// State in the baseline.
    pub before: Option<ResultState>,
    /// State now.
    pub after: Option<ResultState>,
    /// Weight earned in the baseline.
    pub earned_before: Option<f64>,
    /// Weight earned now.
    pub earned_after: Option<f64>,
}

/// A report compared with a baseline report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportComparison {
    /// Baseline compliance.
    pub compliance_before: Option<f64>,
    /// Current compliance.
    pub compliance_after: Option<f64>,
    /// After minus before, when both exist.
    pub compliance_delta: Option<f64>,
    /// Baseline spec health.
    pub spec_health_before: f64,
    /// Current spec health.
    pub spec_health_after: f64,
    /// Changed checkpoints only, in current document order, then removed ones.
    pub changes: Vec<CheckpointChange>,
    /// The baseline's and the current spec's `spec_version`, when they differ (checkpoints
    /// are compared by id all the same: ids are immutable).
    pub spec_versions: Option<(String, String)>,
}

impl ReportComparison {
    /// The regressions.
    pub fn regressions(&self) -> impl Iterator<Item = &CheckpointChange> {
        self.changes.iter().filter(|c| c.kind == ChangeKind::Regression)
    }
}

/// Compares `current` with `baseline` checkpoint by checkpoint (ids are stable).
pub fn compare_reports(baseline: &ComplianceReport, current: &ComplianceReport) -> ReportComparison {
    let mut changes = Vec::new();
    for now in &current.checkpoints {
        match baseline.checkpoints.iter().find(|old| old.id == now.id) {
            None => changes.push(CheckpointChange {
                id: now.id.clone(),
                kind: ChangeKind::Added,
                before: None,
                after: Some(now.result),
                earned_before: None,
                earned_after: Some(now.earned_weight),
            }),
            Some(old) => {
                let kind = if old.result.scorable() && now.result.scorable() {
                    if now.earned_weight < old.earned_weight - 1e-9 {
                        Some(ChangeKind::Regression)
                    } else if now.earned_weight > old.earned_weight + 1e-9 {
                        Some(ChangeKind::Improvement)
                    } else {
                        None
                    }
                } else if old.result != now.result {
                    Some(ChangeKind::StateChanged)
                } else {
                    None
                };
                if let Some(kind) = kind {
                    changes.push(CheckpointChange {
                        id: now.id.clone(),
                        kind,
                        before: Some(old.result),
                        after: Some(now.result),
                        earned_before: Some(old.earned_weight),
                        earned_after: Some(now.earned_weight),
                    });
                }
            }
        }
    }
    for old in &baseline.checkpoints {
        if !current.checkpoints.iter().any(|now| now.id == old.id) {
            changes.push(CheckpointChange {
                id: old.id.clone(),
                kind: ChangeKind::Removed,
                before: Some(old.result),
                after: None,
                earned_before: Some(old.earned_weight),
                earned_after: None,
            });
        }
    }
    let before = baseline.scores.compliance_percent;
    let after = current.scores.compliance_percent;
    ReportComparison {
        compliance_before: before,
        compliance_after: after,
        compliance_delta: before.zip(after).map(|(b, a)| round2(a - b)),
        spec_health_before: baseline.scores.spec_health_percent,
        spec_health_after: current.scores.spec_health_percent,
        changes,
        spec_versions: (baseline.spec_version != current.spec_version)
            .then(|| (baseline.spec_version.clone(), current.spec_version.clone())),
    }
}

/// When the baseline is of another spec version, what to say after "the baseline": which two
/// versions were compared, each written by `quote` (for the terminal or for Markdown).
fn spec_versions_compared(comparison: &ReportComparison, quote: impl Fn(&str) -> String) -> Option<String> {
    let (before, after) = comparison.spec_versions.as_ref()?;
    Some(format!(
        "was checked against spec {}, this run against spec {} (checkpoints are compared by id)",
        quote(before),
        quote(after)
    ))
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}%"))
}

fn rating_text(rating: Rating) -> &'static str {
    match rating {
        Rating::Excellent => "Excellent",
        Rating::Good => "Good",
        Rating::Fair => "Fair",
        Rating::Poor => "Poor",
        Rating::Critical => "Critical",
        Rating::NotRated => "Not rated",
    }
}

fn status_text(status: ConfidenceStatus) -> &'static str {
    match status {
        ConfidenceStatus::HighConfidence => "HIGH_CONFIDENCE",
        ConfidenceStatus::MediumConfidence => "MEDIUM_CONFIDENCE",
        ConfidenceStatus::LowConfidence => "LOW_CONFIDENCE",
        ConfidenceStatus::SingleRun => "SINGLE_RUN",
        ConfidenceStatus::InsufficientData => "INSUFFICIENT_DATA",
    }
}

fn change_line(change: &CheckpointChange) -> String {
    let state = |s: Option<ResultState>| s.map_or("-", ResultState::as_str);
    let weight = |w: Option<f64>| w.map_or_else(|| "-".to_owned(), |w| format!("{w}"));
    let (before, after) = (
        format!("{} ({})", state(change.before), weight(change.earned_before)),
        format!("{} ({})", state(change.after), weight(change.earned_after)),
    );
    match change.kind {
        ChangeKind::Added => format!("added {}: {after} (not in the baseline)", change.id),
        ChangeKind::Removed => format!("removed {}: was {before} (not in this spec)", change.id),
        kind => {
            let label = match kind {
                ChangeKind::Regression => "REGRESSION",
                ChangeKind::Improvement => "improvement",
                _ => "changed",
            };
            format!("{label} {}: {before} -> {after}", change.id)
        }
    }
}

/// Appends `sentence` to a checkpoint's notes, ending the notes' last sentence first (with a
/// period, unless it ends with `.`, `!` or `?`).
pub fn append_sentence(notes: &mut String, sentence: &str) {
    notes.truncate(notes.trim_end().len());
    if !notes.is_empty() {
        if !notes.ends_with(['.', '!', '?']) {
            notes.push('.');
        }
        notes.push(' ');
    }
    notes.push_str(sentence);
}

/// ` (first at line N)` for the first line a warning counts from, or nothing when no line is
/// known.
pub fn first_at_line(first: Option<u64>) -> String {
    first.map_or(String::new(), |line| format!(" (first at line {line})"))
}

/// A short plain-text summary for the terminal.
pub fn render_summary(report: &ComplianceReport, comparison: Option<&ReportComparison>) -> String {
    let mut out = String::new();
    let summary = &report.summary;
    let shown = |text: &str| shown_on_one_line(text);
    let _ = writeln!(
        out,
        "{} (spec {}): {} checkpoint{}",
        shown(&report.workflow),
        shown(&report.spec_version),
        summary.total_checkpoints,
        if summary.total_checkpoints == 1 { "" } else { "s" }
    );
    for result in &report.checkpoints {
        let _ = writeln!(
            out,
            "  {:<14} {:<8} tier {} {:<8} {:>4}  {}",
            result.result.as_str(),
            shown(&result.id),
            result.tier,
            result.severity.as_str(),
            result.earned_weight,
            shown(&result.notes)
        );
    }
    let _ = writeln!(
        out,
        "passed {}, partial {}, failed {}, n/a {}, blocked {}",
        summary.passed, summary.partial, summary.failed, summary.na, summary.blocked
    );
    let _ = writeln!(
        out,
        "compliance {} ({}), spec health {:.2}%",
        percent(report.scores.compliance_percent),
        rating_text(report.scores.rating),
        report.scores.spec_health_percent
    );
    let dropout = &report.position_dropout_analysis;
    let _ = writeln!(
        out,
        "position dropout: Q1 {}, Q2 {}, Q3 {}, Q4 {}",
        percent(dropout.quartile_1),
        percent(dropout.quartile_2),
        percent(dropout.quartile_3),
        percent(dropout.quartile_4)
    );
    let confidence = &report.tier_3_confidence;
    if confidence.protocol_enabled {
        let range = confidence.score_range.map_or_else(|| "n/a".to_owned(), |[l, h]| format!("{l:.2}%..{h:.2}%"));
        let _ = writeln!(
            out,
            "tier 3 over {} runs: range {range}, mean {}, variance {}, {}",
            confidence.runs,
            percent(confidence.mean),
            confidence.variance.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.4}")),
            status_text(confidence.status)
        );
    }
    let audit = &report.evaluator_audit;
    if audit.undocumented_passes + audit.undocumented_fails + audit.tier_3_without_evidence_citation > 0 {
        let _ = writeln!(
            out,
            "warning: evaluator audit: {} undocumented pass(es), {} undocumented fail(s), {} tier-3 verdict(s) without an \
             evidence citation (the spec has {} tier-3 checkpoint(s))",
            audit.undocumented_passes,
            audit.undocumented_fails,
            audit.tier_3_without_evidence_citation,
            audit.tier_3_checkpoints_count
        );
    }
    if let Some(comparison) = comparison {
        let delta = comparison.compliance_delta.map_or_else(|| "n/a".to_owned(), |d| format!("{d:+.2}"));
        let _ = writeln!(
            out,
            "against baseline: compliance {} -> {} ({delta}), {} regression(s)",
            percent(comparison.compliance_before),
            percent(comparison.compliance_after),
            comparison.regressions().count()
        );
        if let Some(versions) = spec_versions_compared(comparison, shown) {
            let _ = writeln!(out, "  note: the baseline {versions}");
        }
        for change in &comparison.changes {
            let _ = writeln!(out, "  {}", shown(&change_line(change)));
        }
    }
    out
}

/// `text` as Markdown shows it as written, on one line: every character Markdown (with
/// GitHub's tables) would read as markup is escaped, so a glob `src/*/mod.rs`, a regex
/// `\.env$|a\|b`, `<script>` or `_x_` in an id or a note reads the same in the report as in
/// the spec and the JSON report. A code span (the notes quote paths and values that way)
/// stays one, by CommonMark's rule: a run of backticks opens a span that the next run of
/// the *same* length closes, and Markdown shows its content as it is; only its pipes are
/// escaped, for the table. A run that nothing closes is escaped, backtick by backtick.
fn markdown_text(text: &str) -> String {
    let line = one_line(text);
    let mut out = String::with_capacity(line.len() + 8);
    let escape = escape_markdown;
    let run_at = |from: usize| line[from..].bytes().take_while(|&b| b == b'`').count();
    let mut rest = 0;
    while let Some(found) = line[rest..].find('`') {
        let open = rest + found;
        escape(&mut out, &line[rest..open]);
        let len = run_at(open);
        // The next run of exactly `len` backticks closes the span.
        let mut search = open + len;
        let close = loop {
            let Some(next) = line[search..].find('`') else { break None };
            let at = search + next;
            let run = run_at(at);
            if run == len {
                break Some(at);
            }
            search = at + run;
        };
        match close {
            Some(close) if line[open + len..close].chars().any(|c| c != ' ') => {
                out.push_str(&line[open..open + len]);
                out.push_str(&line[open + len..close].replace('|', "\\|"));
                out.push_str(&line[close..close + len]);
                rest = close + len;
            }
            _ => {
                escape(&mut out, &line[open..open + len]);
                rest = open + len;
            }
        }
    }
    escape(&mut out, &line[rest..]);
    out
}

/// A name (an id, a workflow, a version) as Markdown shows it as written, on one line: as
/// [`markdown_text`], with backticks escaped too, since a name holds no code span (an id
/// ``P1-`02` `` would otherwise show as `P1-02`).
fn markdown_name(text: &str) -> String {
    let line = one_line(text);
    let mut out = String::with_capacity(line.len() + 8);
    escape_markdown(&mut out, &line);
    out
}

/// Appends `part` with every character Markdown (with GitHub's tables) reads as markup
/// escaped.
fn escape_markdown(out: &mut String, part: &str) {
    for c in part.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '~' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// `text` on one line: a line break of any kind (CR LF, CR, LF) would end a table row, a
/// heading or a list item, and could start a Markdown block of its own. Other control
/// characters are shown escaped (see [`visible`]).
fn one_line(text: &str) -> String {
    visible(&text.replace("\r\n", " ").replace(['\r', '\n'], " "))
}

/// `text` for one line of terminal output: a line break in a name or note (an evaluator's,
/// a matcher's, a golden case's) is shown as `\n`, not followed, and other control
/// characters as [`visible`] shows them.
pub(crate) fn shown_on_one_line(text: &str) -> String {
    visible(&text.replace('\r', "\\r").replace('\n', "\\n"))
}

/// `text` with control characters other than tab, and the bidirectional overrides, shown as
/// `\u{1b}`: notes carry what a model or a trace wrote, and an ESC sequence would act on the
/// reader's terminal, an override reorder what the reader sees.
pub(crate) fn visible(text: &str) -> String {
    let hidden =
        |c: char| (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.contains(hidden) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// The Markdown report for people.
pub fn render_markdown(report: &ComplianceReport, comparison: Option<&ReportComparison>) -> String {
    let mut out = String::new();
    let scores = &report.scores;
    let summary = &report.summary;
    let _ = writeln!(out, "# Compliance report: {}\n", markdown_name(&report.workflow));
    let _ = writeln!(
        out,
        "Spec version {}, evaluated at {}.\n",
        markdown_name(&report.spec_version),
        markdown_name(&report.evaluated_at)
    );
    let _ = writeln!(out, "| Metric | Value |\n|---|---|");
    let _ = writeln!(out, "| Compliance score (agent health) | {} |", percent(scores.compliance_percent));
    let _ = writeln!(out, "| Rating | {} |", rating_text(scores.rating));
    let _ = writeln!(out, "| Spec health (workflow health) | {:.2}% |", scores.spec_health_percent);
    let _ = writeln!(
        out,
        "| Checkpoints | {} total: {} pass, {} partial, {} fail, {} n/a, {} blocked |\n",
        summary.total_checkpoints, summary.passed, summary.partial, summary.failed, summary.na, summary.blocked
    );
    let _ = writeln!(out, "## Checkpoints\n");
    let _ = writeln!(out, "| # | Id | Tier | Severity | Result | Earned | Notes |\n|---|---|---|---|---|---|---|");
    for result in &report.checkpoints {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            result.position_index,
            markdown_name(&result.id),
            result.tier,
            result.severity.as_str(),
            result.result.as_str(),
            result.earned_weight,
            markdown_text(&result.notes)
        );
    }
    let dropout = &report.position_dropout_analysis;
    let _ = writeln!(out, "\n## Position dropout\n");
    let _ = writeln!(out, "| Q1 | Q2 | Q3 | Q4 |\n|---|---|---|---|");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} |",
        percent(dropout.quartile_1),
        percent(dropout.quartile_2),
        percent(dropout.quartile_3),
        percent(dropout.quartile_4)
    );
    let audit = &report.evaluator_audit;
    let _ = writeln!(out, "\n## Evaluator audit\n");
    let _ = writeln!(
        out,
        "- tier-3 checkpoints: {}\n- undocumented passes: {}\n- undocumented fails: {}\n- tier-3 verdicts without evidence citation: {}",
        audit.tier_3_checkpoints_count,
        audit.undocumented_passes,
        audit.undocumented_fails,
        audit.tier_3_without_evidence_citation
    );
    let confidence = &report.tier_3_confidence;
    let _ = writeln!(out, "\n## Tier-3 confidence\n");
    if confidence.protocol_enabled {
        let range = confidence.score_range.map_or_else(|| "n/a".to_owned(), |[l, h]| format!("{l:.2}% to {h:.2}%"));
        let _ = writeln!(
            out,
            "{} runs: range {range}, mean {}, variance {}: **{}**.",
            confidence.runs,
            percent(confidence.mean),
            confidence.variance.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.4}")),
            status_text(confidence.status)
        );
        if confidence.status == ConfidenceStatus::InsufficientData {
            // Figures are given exactly when every run scored something.
            let why = if confidence.variance.is_some() {
                "no tier-3 checkpoint was judged apart in each run (the spec has none, none applies, or each has one \
                 recorded verdict for all runs), so the runs are one run repeated and say nothing about the evaluator's noise"
            } else {
                "some run had nothing to score (every checkpoint not applicable or blocked), so there are no figures"
            };
            let _ = writeln!(out, "\nINSUFFICIENT_DATA: {why}.");
        }
    } else {
        let _ = writeln!(out, "One run (use `--eval-runs N` to measure evaluator noise).");
    }
    if let Some(comparison) = comparison {
        let _ = writeln!(out, "\n## Against the baseline\n");
        let delta = comparison.compliance_delta.map_or_else(|| "n/a".to_owned(), |d| format!("{d:+.2}"));
        let _ = writeln!(
            out,
            "Compliance {} → {} ({delta} points); spec health {:.2}% → {:.2}%; {} regression(s).\n",
            percent(comparison.compliance_before),
            percent(comparison.compliance_after),
            comparison.spec_health_before,
            comparison.spec_health_after,
            comparison.regressions().count()
        );
        if let Some(versions) = spec_versions_compared(comparison, markdown_text) {
            let _ = writeln!(out, "The baseline {versions}.\n");
        }
        if comparison.changes.is_empty() {
            let _ = writeln!(out, "No checkpoint changed.");
        } else {
            for change in &comparison.changes {
                let _ = writeln!(out, "- {}", markdown_text(&change_line(change)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures round as their decimal values do (half away from zero), whatever float noise
    /// the arithmetic left: a threshold or rating band never turns on the 15th digit.
    #[test]
    fn decimal_ties_round_up_whatever_the_float_noise() {
        assert_eq!(round2(0.94995 * 100.0), 95.0);
        assert_eq!(round2(4.27 / 8.0 * 100.0), 53.38);
        assert_eq!(round2(1.57 / 8.0 * 100.0), 19.63);
        assert_eq!(round2(4.33 / 8.0 * 100.0), 54.13);
        assert_eq!(round2(-0.005), -0.01);
        assert_eq!(round2(84.994), 84.99);
        assert_eq!(round2(2.0 / 3.0 * 100.0), 66.67);
        assert_eq!(round4(0.00005), 0.0001);
        assert_eq!(round2(1e12 + 0.25), 1e12 + 0.25);
        // The mean of five runs whose exact mean is 64.225.
        assert_eq!(round2([64.2, 64.2, 64.25, 64.225, 64.25].iter().sum::<f64>() / 5.0), 64.23);
    }

    #[test]
    fn table_cells_hold_no_line_break_or_bare_pipe() {
        assert_eq!(markdown_text("a|b\r\nc\rd\ne"), "a\\|b c d e");
        assert_eq!(one_line("w\n# injected"), "w # injected");
        // Markup characters are shown as written.
        assert_eq!(markdown_text("src/*/mod.rs or _x_"), "src/\\*/mod.rs or \\_x\\_");
        assert_eq!(markdown_text(r"/\.env$|a\|b/"), r"/\\.env$\|a\\\|b/");
        assert_eq!(markdown_text("<script> [l](u) &amp; ~~s~~ #"), r"\<script\> \[l\](u) \&amp; \~\~s\~\~ \#");
        // Code spans stay code spans (pipes escaped for the table); a lone backtick, or an
        // empty pair, is text.
        assert_eq!(markdown_text("`pr.labels[*]` is [] and `a|b`"), r"`pr.labels[*]` is \[\] and `a\|b`");
        assert_eq!(markdown_text("a ` b"), r"a \` b");
        assert_eq!(markdown_text("`x` `` *"), r"`x` \`\` \*");
        assert_eq!(markdown_text("`x` `y"), r"`x` \`y");
        // CommonMark's rule: a run closes only at a run of its own length, so a value with a
        // backtick quoted in a longer fence stays one code span.
        assert_eq!(markdown_text("``a`b`` *"), r"``a`b`` \*");
        assert_eq!(markdown_text("``a` *"), r"\`\`a\` \*");
        assert_eq!(markdown_text("`a``b` |"), r"`a``b` \|");
        assert_eq!(markdown_text("``` ``` x"), r"\`\`\` \`\`\` x");
        // A name holds no code span: an id ``P1-`02` `` is not shown as `P1-02`.
        assert_eq!(markdown_name("P1-`02`"), r"P1-\`02\`");
        assert_eq!(markdown_name("a|b_c\nd"), r"a\|b\_c d");
        // Control characters cannot reach a terminal or a viewer raw.
        assert_eq!(markdown_text("\u{1b}[31mRED\u{1b}[0m"), r"\\u{1b}\[31mRED\\u{1b}\[0m");
        assert_eq!(visible("a\tb\u{7}\u{9b}c\u{202e}d"), r"a	b\u{7}\u{9b}c\u{202e}d");
    }

    /// A report `check` writes is a baseline `check` accepts, whatever the tier-3 runs
    /// scored: one tier-3 checkpoint scored by run 1, and the confidence over all runs.
    #[test]
    fn reports_of_any_runs_are_consistent() {
        use proptest::prelude::*;
        let weight = prop_oneof![Just(0.0), Just(1.0), 0.0001f64..0.9999];
        proptest!(ProptestConfig::with_cases(2000), |(weights in proptest::collection::vec(weight, 1..6))| {
            let w = weights[0];
            let result = if w == 1.0 {
                ResultState::Pass
            } else if w == 0.0 {
                ResultState::Fail
            } else {
                ResultState::Partial
            };
            let checkpoints = vec![CheckpointResult {
                id: "S-01".into(),
                position_index: 1,
                tier: 3,
                severity: CheckpointSeverity::Low,
                result,
                earned_weight: w,
                notes: "n".into(),
            }];
            let (scores, summary, dropout) = score(&checkpoints);
            let runs: Vec<Option<f64>> = weights.iter().map(|w| Some(w * 100.0)).collect();
            let report = ComplianceReport {
                schema_version: REPORT_SCHEMA_VERSION.into(),
                workflow: "w".into(),
                spec_version: "1".into(),
                evaluated_at: "2026-01-01T00:00:00Z".into(),
                scores,
                summary,
                evaluator_audit: EvaluatorAudit { tier_3_checkpoints_count: 1, ..EvaluatorAudit::default() },
                tier_3_confidence: Tier3Confidence::from_runs(&runs),
                position_dropout_analysis: dropout,
                checkpoints,
            };
            prop_assert_eq!(report.inconsistency(), None, "{:?}", report.tier_3_confidence);
        });
    }

    #[test]
    fn a_delta_of_nothing_is_not_negative() {
        assert_eq!(format!("{:+.2}", round2(0.1 + 0.2 - 0.3 - 1e-3)), "+0.00");
        assert_eq!(format!("{:+.2}", round2(-0.001)), "+0.00");
    }

    #[test]
    fn added_and_removed_checkpoints_say_so() {
        let change = |kind, before, after| CheckpointChange {
            id: "C-01".into(),
            kind,
            before,
            after,
            earned_before: before.map(|_| 1.0),
            earned_after: after.map(|_| 0.0),
        };
        let pass = Some(ResultState::Pass);
        let fail = Some(ResultState::Fail);
        assert_eq!(change_line(&change(ChangeKind::Added, None, fail)), "added C-01: FAIL (0) (not in the baseline)");
        assert_eq!(
            change_line(&change(ChangeKind::Removed, pass, None)),
            "removed C-01: was PASS (1) (not in this spec)"
        );
        assert_eq!(change_line(&change(ChangeKind::Regression, pass, fail)), "REGRESSION C-01: PASS (1) -> FAIL (0)");
    }

    #[test]
    fn appended_sentences_follow_a_finished_one() {
        let cases = [("", "B."), ("A", "A. B."), ("A.", "A. B."), ("A? ", "A? B."), ("(x)", "(x). B.")];
        for (notes, expected) in cases {
            let mut notes = notes.to_owned();
            append_sentence(&mut notes, "B.");
            assert_eq!(notes, expected);
        }
    }

    #[test]
    fn rating_bands_have_inclusive_lower_bounds() {
        let got: Vec<Rating> =
            [Some(100.0), Some(95.0), Some(94.99), Some(85.0), Some(70.0), Some(69.99), Some(50.0), Some(49.0), None]
                .into_iter()
                .map(rating_for)
                .collect();
        use Rating::*;
        assert_eq!(got, vec![Excellent, Excellent, Good, Good, Fair, Poor, Poor, Critical, NotRated]);
    }

    #[test]
    fn confidence_matches_the_documented_thresholds() {
        // 87.0, 88.25, 89.5: mean 88.25, sample variance (1.5625 * 2) / 2 = 1.5625, range 2.5.
        let block = Tier3Confidence::from_runs(&[Some(87.0), Some(88.25), Some(89.5)]);
        assert_eq!(block.score_range, Some([87.0, 89.5]));
        assert_eq!(block.mean, Some(88.25));
        assert_eq!(block.variance, Some(1.5625));
        assert_eq!(block.status, ConfidenceStatus::HighConfidence);
        assert_eq!(confidence_status(&[Some(80.0), Some(84.0)]), ConfidenceStatus::MediumConfidence); // var 8
        assert_eq!(confidence_status(&[Some(80.0), Some(90.0), Some(70.0)]), ConfidenceStatus::LowConfidence);
        assert_eq!(confidence_status(&[Some(80.0)]), ConfidenceStatus::SingleRun);
        assert_eq!(confidence_status(&[Some(80.0), None]), ConfidenceStatus::InsufficientData);
        // On a band's edge by the printed figures, not by floating-point noise: 0.57 * 100 is
        // 56.99999999999999, so the raw variance is 2.000000000000014 and the width 2.0000...01.
        let (low, high) = (0.57 * 100.0, 0.59 * 100.0);
        assert!(low < 57.0);
        let block = Tier3Confidence::from_runs(&[Some(low), Some(high)]);
        assert_eq!((block.score_range, block.variance), (Some([57.0, 59.0]), Some(2.0)));
        assert_eq!(block.status, ConfidenceStatus::HighConfidence);
        let runs = [0.57, 0.62, 0.62, 0.62, 0.62, 0.67].map(|weight| Some(weight * 100.0));
        let block = Tier3Confidence::from_runs(&runs);
        assert_eq!((block.score_range, block.variance), (Some([57.0, 67.0]), Some(10.0)));
        assert_eq!(block.status, ConfidenceStatus::MediumConfidence);
    }
}
