//! Calibration and drift as gates.
//!
//! Calibration grades a golden set and measures agreement with the human labels: exact
//! agreement, agreement within one point, and Cohen's kappa (unweighted, over the scale's
//! points). A judge below the bar (default 0.9, on the configured metric, by default
//! within-one) fails calibration. An errored criterion counts as a disagreement: it never
//! helps a judge pass.
//!
//! Drift re-grades the frozen golden set and compares with a stored [`Baseline`]: the share
//! of scores that moved by a point or more, and the human agreement now versus then.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::error::JudgeError;
use crate::golden::{Baseline, GoldenSet};
use crate::judge::Judge;
use crate::verdict::{JudgeUsage, Verdict};

/// Which agreement figure the bar applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgreementMetric {
    /// Judge score equals the label.
    Exact,
    /// Judge score within one point of the label.
    #[default]
    WithinOne,
    /// Cohen's kappa.
    Kappa,
}

impl AgreementMetric {
    /// The metric's name as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            AgreementMetric::Exact => "exact",
            AgreementMetric::WithinOne => "within_one",
            AgreementMetric::Kappa => "kappa",
        }
    }
}

/// Agreement between judge scores and labels over a set of pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Labelled (case, criterion) pairs.
    pub pairs: usize,
    /// Pairs the judge left errored (counted as disagreements).
    pub errored: usize,
    /// Share with the same score.
    pub exact: f64,
    /// Share within one point.
    pub within_one: f64,
    /// Cohen's kappa (`None` when undefined: a single category on both sides).
    pub kappa: Option<f64>,
    /// Mean absolute difference over the scored pairs.
    pub mean_abs_error: Option<f64>,
}

impl Agreement {
    /// The figure for `metric` (an undefined kappa counts as 0).
    pub fn value(&self, metric: AgreementMetric) -> f64 {
        match metric {
            AgreementMetric::Exact => self.exact,
            AgreementMetric::WithinOne => self.within_one,
            AgreementMetric::Kappa => self.kappa.unwrap_or(0.0),
        }
    }
}

/// Computes agreement over `(label, judge score)` pairs; the scale bounds the kappa categories.
pub fn agreement(pairs: &[(i64, Option<f64>)]) -> Agreement {
    let total = pairs.len();
    let errored = pairs.iter().filter(|(_, score)| score.is_none()).count();
    let scored: Vec<(i64, i64)> =
        pairs.iter().filter_map(|(label, score)| score.map(|s| (*label, s.round() as i64))).collect();
    let exact = scored.iter().filter(|(label, score)| label == score).count();
    let within = scored.iter().filter(|(label, score)| (label - score).abs() <= 1).count();
    let share = |count: usize| if total == 0 { 0.0 } else { count as f64 / total as f64 };
    let mean_abs_error = (!scored.is_empty()).then(|| {
        pairs.iter().filter_map(|(label, score)| score.map(|s| (s - *label as f64).abs())).sum::<f64>()
            / scored.len() as f64
    });
    Agreement {
        pairs: total,
        errored,
        exact: share(exact),
        within_one: share(within),
        kappa: cohen_kappa(pairs),
        mean_abs_error,
    }
}

/// Cohen's kappa over categorical scores; an errored judge score is its own category, so it
/// disagrees with every label.
pub fn cohen_kappa(pairs: &[(i64, Option<f64>)]) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let category = |score: Option<f64>| score.map(|s| s.round() as i64).unwrap_or(i64::MIN);
    let n = pairs.len() as f64;
    let mut human: BTreeMap<i64, f64> = BTreeMap::new();
    let mut judge: BTreeMap<i64, f64> = BTreeMap::new();
    let mut observed = 0.0;
    for (label, score) in pairs {
        *human.entry(*label).or_default() += 1.0;
        *judge.entry(category(*score)).or_default() += 1.0;
        if category(*score) == *label {
            observed += 1.0;
        }
    }
    let observed = observed / n;
    let expected: f64 = human.iter().map(|(k, count)| count / n * judge.get(k).copied().unwrap_or(0.0) / n).sum();
    if (1.0 - expected).abs() < 1e-12 {
        return None;
    }
    Some((observed - expected) / (1.0 - expected))
}

/// One case's judge scores beside its labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseComparison {
    /// The case id.
    pub case_id: String,
    /// `criterion -> (label, judge score)`.
    pub scores: BTreeMap<String, (i64, Option<f64>)>,
    /// `criterion -> why the judge errored`, for errored criteria.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, String>,
}

/// The outcome of a calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationReport {
    /// The golden set id.
    pub golden_set_id: String,
    /// Judges, as `name model@version prompt@version`.
    pub judges: Vec<String>,
    /// The run seed.
    pub seed: u64,
    /// Agreement over every labelled pair.
    pub overall: Agreement,
    /// Agreement per criterion.
    pub per_criterion: BTreeMap<String, Agreement>,
    /// Per-case detail.
    pub cases: Vec<CaseComparison>,
    /// The metric the bar applies to.
    pub metric: AgreementMetric,
    /// The bar.
    pub bar: f64,
    /// Whether the overall figure reaches the bar.
    pub passed: bool,
    /// Judge cost of the run.
    pub usage: JudgeUsage,
}

fn judge_labels(verdicts: &[Verdict]) -> Vec<String> {
    verdicts
        .first()
        .map(|verdict| {
            verdict
                .judges
                .iter()
                .map(|m| format!("{} {}@{} {}@{}", m.judge, m.model, m.judge_version, m.prompt_id, m.prompt_version))
                .collect()
        })
        .unwrap_or_default()
}

/// Grades every case of `set` (concurrently; the judge's limiter bounds the calls).
pub async fn grade_golden_set(judge: &Judge, set: &GoldenSet) -> Result<Vec<Verdict>, JudgeError> {
    let mut tasks = tokio::task::JoinSet::new();
    for (index, case) in set.judge_cases().into_iter().enumerate() {
        let judge = judge.clone();
        tasks.spawn(async move { (index, judge.grade(&case).await) });
    }
    let mut verdicts: Vec<Option<Verdict>> = vec![None; set.cases.len()];
    while let Some(joined) = tasks.join_next().await {
        let (index, verdict) = joined.map_err(|error| JudgeError::Input(format!("a grading task failed: {error}")))?;
        verdicts[index] = Some(verdict?);
    }
    Ok(verdicts.into_iter().flatten().collect())
}

/// Compares verdicts with the set's labels.
pub fn compare_with_labels(
    set: &GoldenSet,
    verdicts: &[Verdict],
    seed: u64,
    metric: AgreementMetric,
    bar: f64,
) -> CalibrationReport {
    let mut all = Vec::new();
    let mut per_criterion: BTreeMap<String, Vec<(i64, Option<f64>)>> = BTreeMap::new();
    let mut cases = Vec::new();
    let mut usage = JudgeUsage::default();
    for (case, verdict) in set.cases.iter().zip(verdicts) {
        usage.add(&verdict.usage);
        let mut scores = BTreeMap::new();
        let mut errors = BTreeMap::new();
        for (criterion, label) in &case.labels {
            let score = verdict.score(criterion);
            if let Some(error) = verdict.criteria.iter().find(|c| &c.name == criterion).and_then(|c| c.error.clone()) {
                errors.insert(criterion.clone(), error);
            }
            all.push((*label, score));
            per_criterion.entry(criterion.clone()).or_default().push((*label, score));
            scores.insert(criterion.clone(), (*label, score));
        }
        cases.push(CaseComparison { case_id: case.id.clone(), scores, errors });
    }
    let overall = agreement(&all);
    let passed = overall.value(metric) >= bar;
    CalibrationReport {
        golden_set_id: set.golden_set_id.clone(),
        judges: judge_labels(verdicts),
        seed,
        per_criterion: per_criterion.iter().map(|(name, pairs)| (name.clone(), agreement(pairs))).collect(),
        overall,
        cases,
        metric,
        bar,
        passed,
        usage,
    }
}

/// Grades the golden set and compares with its labels.
pub async fn calibrate(
    judge: &Judge,
    set: &GoldenSet,
    metric: AgreementMetric,
) -> Result<(CalibrationReport, Vec<Verdict>), JudgeError> {
    let verdicts = grade_golden_set(judge, set).await?;
    let report = compare_with_labels(set, &verdicts, judge.seed(), metric, judge.config().calibration_bar);
    Ok((report, verdicts))
}

/// The baseline of these verdicts.
pub fn baseline_from(set: &GoldenSet, verdicts: &[Verdict], seed: u64) -> Baseline {
    Baseline {
        golden_set_id: set.golden_set_id.clone(),
        golden_hash: set.content_hash(),
        judges: judge_labels(verdicts),
        seed,
        scores: verdicts
            .iter()
            .map(|verdict| {
                (verdict.case_id.clone(), verdict.criteria.iter().map(|c| (c.name.clone(), c.score)).collect())
            })
            .collect(),
    }
}

fn fmt_opt(value: Option<f64>, digits: usize) -> String {
    value.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "n/a".into())
}

impl CalibrationReport {
    /// A plain-text report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "judge calibration on golden set `{}` (seed {})", self.golden_set_id, self.seed);
        for judge in &self.judges {
            let _ = writeln!(out, "  judge: {judge}");
        }
        let _ = writeln!(
            out,
            "{:<20} {:>5} {:>7} {:>7} {:>10} {:>7} {:>7}",
            "criterion", "pairs", "exact", "within1", "kappa", "mae", "errored"
        );
        let mut row = |name: &str, agreement: &Agreement| {
            let _ = writeln!(
                out,
                "{:<20} {:>5} {:>7.3} {:>7.3} {:>10} {:>7} {:>7}",
                name,
                agreement.pairs,
                agreement.exact,
                agreement.within_one,
                fmt_opt(agreement.kappa, 3),
                fmt_opt(agreement.mean_abs_error, 2),
                agreement.errored
            );
        };
        for (name, agreement) in &self.per_criterion {
            row(name, agreement);
        }
        row("overall", &self.overall);
        let _ = writeln!(
            out,
            "judge cost: {} calls ({} cached, {} repairs), {} prompt + {} completion tokens, ${:.4}",
            self.usage.calls,
            self.usage.cache_hits,
            self.usage.repairs,
            self.usage.prompt_tokens,
            self.usage.completion_tokens,
            self.usage.cost_usd
        );
        let figure = self.overall.value(self.metric);
        if self.passed {
            let _ = writeln!(
                out,
                "calibration passed: {} agreement {figure:.3} >= bar {:.3}",
                self.metric.as_str(),
                self.bar
            );
        } else {
            let _ = writeln!(
                out,
                "calibration FAILED: {} agreement {figure:.3} < bar {:.3}; the judge does not agree with the human labels well enough to gate on",
                self.metric.as_str(),
                self.bar
            );
            let _ = writeln!(
                out,
                "  hint: inspect the cases below, adjust the rubric anchors or the judge model, then re-run"
            );
            for case in &self.cases {
                for (criterion, (label, score)) in &case.scores {
                    let off = score.is_none_or(|s| (s.round() as i64 - label).abs() > 1);
                    if off {
                        let _ = write!(
                            out,
                            "  case {} {criterion}: human {label}, judge {}",
                            case.case_id,
                            fmt_opt(*score, 1)
                        );
                        match case.errors.get(criterion) {
                            Some(error) => {
                                let short: String = error.chars().take(160).collect();
                                let _ = writeln!(out, " (errored: {short})");
                            }
                            None => out.push('\n'),
                        }
                    }
                }
            }
        }
        out
    }
}

/// The outcome of a drift check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftReport {
    /// The golden set id.
    pub golden_set_id: String,
    /// Whether the golden set changed since the baseline (then drift is not meaningful).
    pub golden_changed: bool,
    /// Judges of the baseline.
    pub baseline_judges: Vec<String>,
    /// Judges now.
    pub current_judges: Vec<String>,
    /// Scores compared.
    pub compared: usize,
    /// Scores that moved by a point or more (or became / stopped being errored).
    pub changed: usize,
    /// `changed / compared`.
    pub drift_rate: f64,
    /// Mean absolute score change over pairs scored both times.
    pub mean_abs_change: Option<f64>,
    /// Largest drift rate allowed.
    pub max_drift: f64,
    /// Human agreement of the baseline scores.
    pub baseline_agreement: Agreement,
    /// Human agreement now.
    pub current_agreement: Agreement,
    /// Changed scores: `(case, criterion, baseline, now)`.
    pub changes: Vec<(String, String, Option<f64>, Option<f64>)>,
    /// Whether drift stays within `max_drift`, the golden set is unchanged and agreement
    /// still reaches the calibration bar.
    pub passed: bool,
    /// The metric and bar of the agreement check.
    pub metric: AgreementMetric,
    /// The bar.
    pub bar: f64,
}

/// Compares a re-grading of the golden set with the baseline.
pub fn compare_with_baseline(
    set: &GoldenSet,
    baseline: &Baseline,
    verdicts: &[Verdict],
    metric: AgreementMetric,
    bar: f64,
    max_drift: f64,
) -> DriftReport {
    let mut compared = 0;
    let mut changes = Vec::new();
    let mut deltas = Vec::new();
    let mut baseline_pairs = Vec::new();
    let mut current_pairs = Vec::new();
    for (case, verdict) in set.cases.iter().zip(verdicts) {
        for criterion in &verdict.criteria {
            let before =
                baseline.scores.get(&case.id).and_then(|scores| scores.get(&criterion.name)).copied().flatten();
            let now = criterion.score;
            compared += 1;
            match (before, now) {
                (Some(before), Some(now)) => {
                    deltas.push((now - before).abs());
                    if (now - before).abs() >= 1.0 {
                        changes.push((case.id.clone(), criterion.name.clone(), Some(before), Some(now)));
                    }
                }
                (None, None) => {}
                _ => changes.push((case.id.clone(), criterion.name.clone(), before, now)),
            }
            if let Some(label) = case.labels.get(&criterion.name) {
                baseline_pairs.push((*label, before));
                current_pairs.push((*label, now));
            }
        }
    }
    let drift_rate = if compared == 0 { 0.0 } else { changes.len() as f64 / compared as f64 };
    let current_agreement = agreement(&current_pairs);
    let golden_changed = baseline.golden_hash != set.content_hash();
    let passed = !golden_changed && drift_rate <= max_drift && current_agreement.value(metric) >= bar;
    DriftReport {
        golden_set_id: set.golden_set_id.clone(),
        golden_changed,
        baseline_judges: baseline.judges.clone(),
        current_judges: judge_labels(verdicts),
        compared,
        changed: changes.len(),
        drift_rate,
        mean_abs_change: (!deltas.is_empty()).then(|| deltas.iter().sum::<f64>() / deltas.len() as f64),
        max_drift,
        baseline_agreement: agreement(&baseline_pairs),
        current_agreement,
        changes,
        passed,
        metric,
        bar,
    }
}

impl DriftReport {
    /// A plain-text report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "judge drift on golden set `{}`", self.golden_set_id);
        let _ = writeln!(out, "  baseline judges: {}", self.baseline_judges.join(", "));
        let _ = writeln!(out, "  current judges:  {}", self.current_judges.join(", "));
        if self.baseline_judges != self.current_judges {
            let _ = writeln!(out, "  note: the judge (model, version or prompt) changed since the baseline");
        }
        let _ = writeln!(
            out,
            "scores compared: {}, changed by >= 1 point: {} (drift rate {:.3}, max {:.3}), mean abs change {}",
            self.compared,
            self.changed,
            self.drift_rate,
            self.max_drift,
            fmt_opt(self.mean_abs_change, 3)
        );
        let _ = writeln!(
            out,
            "human agreement ({}): baseline {:.3}, now {:.3} (bar {:.3})",
            self.metric.as_str(),
            self.baseline_agreement.value(self.metric),
            self.current_agreement.value(self.metric),
            self.bar
        );
        for (case, criterion, before, now) in &self.changes {
            let _ =
                writeln!(out, "  case {case} {criterion}: baseline {}, now {}", fmt_opt(*before, 1), fmt_opt(*now, 1));
        }
        if self.golden_changed {
            let _ = writeln!(
                out,
                "drift FAILED: the golden set changed since the baseline\n  hint: re-create the baseline with `agentic judge calibrate --write-baseline`"
            );
        } else if self.passed {
            let _ = writeln!(out, "drift check passed");
        } else {
            let _ = writeln!(
                out,
                "drift FAILED: the judge's verdicts moved away from its baseline or from the human labels\n  hint: pin the judge model version, or re-calibrate and write a new baseline"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kappa_of_perfect_and_chance_agreement() {
        let perfect: Vec<(i64, Option<f64>)> = vec![(1, Some(1.0)), (3, Some(3.0)), (5, Some(5.0)), (3, Some(3.0))];
        assert!((cohen_kappa(&perfect).unwrap() - 1.0).abs() < 1e-12);
        // Observed 0.5, expected 0.5: kappa 0.
        let chance: Vec<(i64, Option<f64>)> = vec![(1, Some(1.0)), (1, Some(5.0)), (5, Some(1.0)), (5, Some(5.0))];
        assert!(cohen_kappa(&chance).unwrap().abs() < 1e-12);
        // One category on both sides: undefined.
        assert_eq!(cohen_kappa(&[(3, Some(3.0)), (3, Some(3.0))]), None);
    }

    #[test]
    fn textbook_kappa() {
        // 2x2 example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po 0.7, pe 0.5, kappa 0.4.
        let mut pairs = Vec::new();
        pairs.extend(std::iter::repeat_n((1, Some(1.0)), 20));
        pairs.extend(std::iter::repeat_n((1, Some(0.0)), 5));
        pairs.extend(std::iter::repeat_n((0, Some(1.0)), 10));
        pairs.extend(std::iter::repeat_n((0, Some(0.0)), 15));
        assert!((cohen_kappa(&pairs).unwrap() - 0.4).abs() < 1e-9);
    }

    #[test]
    fn errored_scores_count_against_the_judge() {
        let figures = agreement(&[(4, Some(4.0)), (2, None)]);
        assert_eq!(figures.exact, 0.5);
        assert_eq!(figures.within_one, 0.5);
        assert_eq!(figures.errored, 1);
        assert_eq!(figures.mean_abs_error, Some(0.0));
    }
}
