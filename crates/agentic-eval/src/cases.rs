//! Test-case suites (`001`): judge metrics scored 0-5, the expected-outcome checklist as the
//! case pass gate, and run-level thresholds.
//!
//! A case's `overall_score` is the weighted mean of its metrics normalized with `scale_0_5`
//! (score / 5), times 100: all eight default metrics at 3/5 give 60. Binary metrics count as
//! 5 (pass) or 0 (fail). A case passes when every expected outcome passes; a case without
//! outcomes falls back to `overall_score >= pass_threshold` (75). Errored cases count as not
//! passed and have no score. The run passes on two independent dimensions: the mean case
//! score against `metrics_pass_threshold` (80) and the case pass rate against
//! `cases_pass_threshold` (100); the thresholds are snapshotted into the run's config.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grade::round2;

/// How a metric is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// A 0-5 score.
    #[default]
    Scored,
    /// Pass or fail, counted as 5 or 0.
    Binary,
}

/// A judge metric with its weight and tier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricDef {
    /// Metric name, for example `tool_routing`.
    pub name: String,
    /// Weight before renormalization.
    pub weight: f64,
    /// Tier: `execution`, `knowledge`, `process`, `delivery`, or a user's.
    #[serde(default = "default_tier")]
    pub tier: String,
    /// Scored 0-5 (default) or binary.
    #[serde(default)]
    pub kind: MetricKind,
}

fn default_tier() -> String {
    "custom".to_owned()
}

/// The 8 default judge metrics of `001` with their weights and tiers.
pub fn default_metrics() -> Vec<MetricDef> {
    [
        ("tool_routing", 0.15, "execution"),
        ("parameter_extraction", 0.15, "execution"),
        ("result_interpretation", 0.15, "execution"),
        ("grounding_fidelity", 0.125, "knowledge"),
        ("instruction_compliance", 0.125, "knowledge"),
        ("information_gathering", 0.10, "process"),
        ("conversation_management", 0.10, "process"),
        ("response_delivery", 0.10, "delivery"),
    ]
    .into_iter()
    .map(|(name, weight, tier)| MetricDef {
        name: name.to_owned(),
        weight,
        tier: tier.to_owned(),
        kind: MetricKind::Scored,
    })
    .collect()
}

/// Default fallback pass threshold of a case (`001`).
pub const DEFAULT_CASE_PASS_THRESHOLD: f64 = 75.0;
/// Default run-level metrics threshold (`001`).
pub const DEFAULT_METRICS_PASS_THRESHOLD: f64 = 80.0;
/// Default run-level cases threshold (`001`).
pub const DEFAULT_CASES_PASS_THRESHOLD: f64 = 100.0;

/// A suite run's configuration, snapshotted when the run is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    /// Metrics to use (empty: the 8 defaults). Names of defaults, or of `extra_metrics`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Metrics to drop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Metrics added to the defaults (for example a binary `task_completion`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_metrics: Vec<MetricDef>,
    /// Weight overrides by metric name (all weights are renormalized to sum to 1).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub weights: IndexMap<String, f64>,
    /// Fallback case threshold for cases without expected outcomes (default 75).
    #[serde(default = "case_threshold")]
    pub pass_threshold: f64,
    /// Run-level threshold on the mean case score (default 80).
    #[serde(default = "metrics_threshold")]
    pub metrics_pass_threshold: f64,
    /// Run-level threshold on the case pass rate in percent (default 100).
    #[serde(default = "cases_threshold")]
    pub cases_pass_threshold: f64,
}

fn case_threshold() -> f64 {
    DEFAULT_CASE_PASS_THRESHOLD
}
fn metrics_threshold() -> f64 {
    DEFAULT_METRICS_PASS_THRESHOLD
}
fn cases_threshold() -> f64 {
    DEFAULT_CASES_PASS_THRESHOLD
}

impl Default for SuiteConfig {
    fn default() -> Self {
        SuiteConfig {
            include: Vec::new(),
            exclude: Vec::new(),
            extra_metrics: Vec::new(),
            weights: IndexMap::new(),
            pass_threshold: DEFAULT_CASE_PASS_THRESHOLD,
            metrics_pass_threshold: DEFAULT_METRICS_PASS_THRESHOLD,
            cases_pass_threshold: DEFAULT_CASES_PASS_THRESHOLD,
        }
    }
}

/// A metric score as the judge gives it: a 0-5 number, or `true`/`false` for binary metrics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MetricScore {
    /// 0..5.
    Score(f64),
    /// Pass (5) or fail (0).
    Binary(bool),
}

/// One expected outcome as the judge checked it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeResult {
    /// The statement checked.
    pub statement: String,
    /// Whether it holds.
    pub passed: bool,
    /// The judge's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub justification: Option<String>,
}

/// One case's judge output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseResult {
    /// Case id; cases are aligned across runs by it.
    pub case_id: String,
    /// Metric scores by name.
    #[serde(default)]
    pub metrics: IndexMap<String, MetricScore>,
    /// Expected outcomes as checked (absent or empty: fall back to the threshold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_outcome_results: Option<Vec<OutcomeResult>>,
    /// The case could not be run or judged.
    #[serde(default)]
    pub errored: bool,
    /// Why it errored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Latency of the case, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
}

/// A suite run: its config snapshot and its cases (the input of `agentic compare`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteRun {
    /// Run id.
    pub run_id: String,
    /// The configuration snapshotted at run creation.
    #[serde(default)]
    pub config: SuiteConfig,
    /// Every case.
    pub cases: Vec<CaseResult>,
}

/// A metric's label (`001`): descriptive only, never a gate.
pub fn metric_label(score: f64, kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Binary => {
            if score >= 5.0 {
                "pass"
            } else {
                "fail"
            }
        }
        MetricKind::Scored => match score.floor() as i64 {
            i64::MIN..=0 => "critical_fail",
            1 => "fail",
            2 => "poor",
            3 => "acceptable",
            4 => "good",
            _ => "excellent",
        },
    }
}

/// One metric of a judged case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricVerdict {
    /// 0..5 (binary: 5 or 0).
    pub score: f64,
    /// Descriptive label.
    pub label: String,
    /// Renormalized weight.
    pub weight: f64,
    /// Tier.
    pub tier: String,
}

/// How a case's pass/fail was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PassBasis {
    /// Every expected outcome checked.
    ExpectedOutcomes,
    /// No outcomes: `overall_score >= pass_threshold`.
    FallbackThreshold,
    /// The case errored: not passed.
    Errored,
}

/// One judged case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CaseVerdict {
    /// Case id.
    pub case_id: String,
    /// Weighted 0..100 score (none when errored).
    pub overall_score: Option<f64>,
    /// Whether the case passed.
    pub passed: bool,
    /// How that was decided.
    pub pass_basis: PassBasis,
    /// Whether it errored.
    pub errored: bool,
    /// Metric verdicts by name.
    pub metrics: IndexMap<String, MetricVerdict>,
    /// Statements of expected outcomes that failed.
    pub failed_outcomes: Vec<String>,
    /// Latency, in milliseconds.
    pub latency_ms: Option<f64>,
}

/// The run-level result of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuiteSummary {
    /// Run id.
    pub run_id: String,
    /// The config snapshot used.
    pub config: SuiteConfig,
    /// The metrics used, with renormalized weights.
    pub metrics: Vec<MetricDef>,
    /// Every case.
    pub cases: Vec<CaseVerdict>,
    /// Cases in the run.
    pub total_cases: usize,
    /// Cases that passed.
    pub passed_cases: usize,
    /// Cases that errored.
    pub errored_cases: usize,
    /// Mean `overall_score` over cases with a verdict (0 when none), 2 decimals.
    pub weighted_metrics_score_pct: f64,
    /// The threshold used.
    pub metrics_pass_threshold: f64,
    /// `weighted_metrics_score_pct >= metrics_pass_threshold`.
    pub metrics_passed: bool,
    /// `passed_cases / total_cases * 100`, 2 decimals.
    pub cases_pass_rate_pct: f64,
    /// The threshold used.
    pub cases_pass_threshold: f64,
    /// `cases_pass_rate_pct >= cases_pass_threshold`.
    pub cases_passed: bool,
    /// Mean latency over cases that report one.
    pub avg_latency_ms: Option<f64>,
}

/// Why a suite cannot be evaluated; names the case and field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{field}`: {message}")]
pub struct SuiteError {
    /// The field path, for example `cases[2].metrics.tool_routing`.
    pub field: String,
    /// What is wrong and what to do.
    pub message: String,
}

fn suite_error(field: impl Into<String>, message: impl Into<String>) -> SuiteError {
    SuiteError { field: field.into(), message: message.into() }
}

/// The metrics of a config, with weights overridden and renormalized to sum to 1.
pub fn resolve_metrics(config: &SuiteConfig) -> Result<Vec<MetricDef>, SuiteError> {
    let mut known = default_metrics();
    for extra in &config.extra_metrics {
        match known.iter_mut().find(|m| m.name == extra.name) {
            Some(existing) => *existing = extra.clone(),
            None => known.push(extra.clone()),
        }
    }
    let names = |list: &[MetricDef]| list.iter().map(|m| m.name.clone()).collect::<Vec<_>>().join(", ");
    let mut selected: Vec<MetricDef> = if config.include.is_empty() {
        let mut all = default_metrics();
        for extra in &config.extra_metrics {
            match all.iter_mut().find(|m| m.name == extra.name) {
                Some(existing) => *existing = extra.clone(),
                None => all.push(extra.clone()),
            }
        }
        all
    } else {
        let mut chosen = Vec::new();
        for (idx, name) in config.include.iter().enumerate() {
            let metric = known.iter().find(|m| &m.name == name).ok_or_else(|| {
                suite_error(
                    format!("config.include[{idx}]"),
                    format!(
                        "unknown metric `{name}`; known metrics: {}; define new ones in `extra_metrics`",
                        names(&known)
                    ),
                )
            })?;
            chosen.push(metric.clone());
        }
        chosen
    };
    for (idx, name) in config.exclude.iter().enumerate() {
        if !known.iter().any(|m| &m.name == name) {
            return Err(suite_error(
                format!("config.exclude[{idx}]"),
                format!("unknown metric `{name}`; known metrics: {}", names(&known)),
            ));
        }
        selected.retain(|m| &m.name != name);
    }
    for (name, weight) in &config.weights {
        let in_use = names(&selected);
        let metric = selected.iter_mut().find(|m| &m.name == name).ok_or_else(|| {
            suite_error(format!("config.weights.{name}"), format!("metric `{name}` is not in use; in use: {in_use}"))
        })?;
        metric.weight = *weight;
    }
    for metric in &selected {
        if !metric.weight.is_finite() || metric.weight < 0.0 {
            return Err(suite_error(
                format!("config.weights.{}", metric.name),
                format!("weight `{}` must be a finite number >= 0", metric.weight),
            ));
        }
    }
    let total: f64 = selected.iter().map(|m| m.weight).sum();
    if selected.is_empty() || total <= 0.0 {
        return Err(suite_error("config", "no metric with a positive weight is left; include at least one"));
    }
    for metric in &mut selected {
        metric.weight /= total;
    }
    Ok(selected)
}

/// Judges every case and computes the run-level dimensions.
pub fn evaluate_suite(run: &SuiteRun) -> Result<SuiteSummary, SuiteError> {
    let config = &run.config;
    for (field, value) in [
        ("config.pass_threshold", config.pass_threshold),
        ("config.metrics_pass_threshold", config.metrics_pass_threshold),
        ("config.cases_pass_threshold", config.cases_pass_threshold),
    ] {
        if !value.is_finite() || !(0.0..=100.0).contains(&value) {
            return Err(suite_error(field, format!("`{value}` must be a number in 0..100")));
        }
    }
    let metrics = resolve_metrics(config)?;
    let mut seen = std::collections::BTreeSet::new();
    let mut cases = Vec::with_capacity(run.cases.len());
    for (idx, case) in run.cases.iter().enumerate() {
        if !seen.insert(case.case_id.as_str()) {
            return Err(suite_error(
                format!("cases[{idx}].case_id"),
                format!("case `{}` appears twice; case ids must be unique", case.case_id),
            ));
        }
        cases.push(judge_case(idx, case, &metrics, config)?);
    }
    let total_cases = cases.len();
    let passed_cases = cases.iter().filter(|c| c.passed).count();
    let errored_cases = cases.iter().filter(|c| c.errored).count();
    let scores: Vec<f64> = cases.iter().filter_map(|c| c.overall_score).collect();
    let weighted_metrics_score_pct =
        if scores.is_empty() { 0.0 } else { round2(scores.iter().sum::<f64>() / scores.len() as f64) };
    let cases_pass_rate_pct =
        if total_cases == 0 { 0.0 } else { round2(passed_cases as f64 / total_cases as f64 * 100.0) };
    let latencies: Vec<f64> = cases.iter().filter_map(|c| c.latency_ms).collect();
    let avg_latency_ms = (!latencies.is_empty()).then(|| latencies.iter().sum::<f64>() / latencies.len() as f64);
    Ok(SuiteSummary {
        run_id: run.run_id.clone(),
        config: config.clone(),
        metrics,
        total_cases,
        passed_cases,
        errored_cases,
        weighted_metrics_score_pct,
        metrics_pass_threshold: config.metrics_pass_threshold,
        metrics_passed: !scores.is_empty() && weighted_metrics_score_pct >= config.metrics_pass_threshold,
        cases_pass_rate_pct,
        cases_pass_threshold: config.cases_pass_threshold,
        cases_passed: total_cases > 0 && cases_pass_rate_pct >= config.cases_pass_threshold,
        avg_latency_ms,
        cases,
    })
}

fn judge_case(
    idx: usize,
    case: &CaseResult,
    metrics: &[MetricDef],
    config: &SuiteConfig,
) -> Result<CaseVerdict, SuiteError> {
    if case.errored {
        return Ok(CaseVerdict {
            case_id: case.case_id.clone(),
            overall_score: None,
            passed: false,
            pass_basis: PassBasis::Errored,
            errored: true,
            metrics: IndexMap::new(),
            failed_outcomes: Vec::new(),
            latency_ms: case.latency_ms,
        });
    }
    let mut verdicts = IndexMap::new();
    let mut weighted = 0.0;
    for metric in metrics {
        let field = format!("cases[{idx}].metrics.{}", metric.name);
        let raw = case.metrics.get(&metric.name).ok_or_else(|| {
            suite_error(
                &field,
                format!(
                    "case `{}` has no score for metric `{}`; score it, mark the case `errored`, or exclude the metric",
                    case.case_id, metric.name
                ),
            )
        })?;
        let score = match (metric.kind, raw) {
            (MetricKind::Binary, MetricScore::Binary(pass)) => {
                if *pass {
                    5.0
                } else {
                    0.0
                }
            }
            (MetricKind::Binary, MetricScore::Score(value)) if *value == 0.0 || *value == 5.0 => *value,
            (MetricKind::Binary, MetricScore::Score(value)) => {
                return Err(suite_error(field, format!("binary metric scored `{value}`; use true/false (or 5/0)")));
            }
            (MetricKind::Scored, MetricScore::Score(value)) if value.is_finite() && (0.0..=5.0).contains(value) => {
                *value
            }
            (MetricKind::Scored, other) => {
                let written = match other {
                    MetricScore::Score(value) => value.to_string(),
                    MetricScore::Binary(pass) => pass.to_string(),
                };
                return Err(suite_error(field, format!("score `{written}` is not a number in 0..5")));
            }
        };
        weighted += metric.weight * (score / 5.0);
        verdicts.insert(
            metric.name.clone(),
            MetricVerdict {
                score,
                label: metric_label(score, metric.kind).to_owned(),
                weight: metric.weight,
                tier: metric.tier.clone(),
            },
        );
    }
    let overall_score = round2(weighted * 100.0);
    let outcomes = case.expected_outcome_results.as_deref().unwrap_or_default();
    let failed_outcomes: Vec<String> = outcomes.iter().filter(|o| !o.passed).map(|o| o.statement.clone()).collect();
    let (passed, pass_basis) = if outcomes.is_empty() {
        (overall_score >= config.pass_threshold, PassBasis::FallbackThreshold)
    } else {
        (failed_outcomes.is_empty(), PassBasis::ExpectedOutcomes)
    };
    Ok(CaseVerdict {
        case_id: case.case_id.clone(),
        overall_score: Some(overall_score),
        passed,
        pass_basis,
        errored: false,
        metrics: verdicts,
        failed_outcomes,
        latency_ms: case.latency_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(id: &str, score: f64) -> CaseResult {
        CaseResult {
            case_id: id.to_owned(),
            metrics: default_metrics().into_iter().map(|m| (m.name, MetricScore::Score(score))).collect(),
            expected_outcome_results: None,
            errored: false,
            error: None,
            latency_ms: None,
        }
    }

    fn run(cases: Vec<CaseResult>) -> SuiteRun {
        SuiteRun { run_id: "r".to_owned(), config: SuiteConfig::default(), cases }
    }

    #[test]
    fn all_metrics_at_three_give_sixty_and_five_give_hundred() {
        let summary = evaluate_suite(&run(vec![case("a", 3.0), case("b", 5.0)])).unwrap();
        assert_eq!(summary.cases[0].overall_score, Some(60.0));
        assert_eq!(summary.cases[1].overall_score, Some(100.0));
        assert_eq!(summary.cases[0].metrics["tool_routing"].label, "acceptable");
        assert!(!summary.cases[0].passed, "60 < 75 fallback");
        assert!(summary.cases[1].passed);
        assert_eq!(summary.weighted_metrics_score_pct, 80.0);
        assert!(summary.metrics_passed, "80 >= 80");
        assert_eq!(summary.cases_pass_rate_pct, 50.0);
        assert!(!summary.cases_passed, "50 < 100");
    }

    #[test]
    fn default_weights_and_tiers() {
        let metrics = default_metrics();
        assert_eq!(metrics.len(), 8);
        assert!((metrics.iter().map(|m| m.weight).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(metrics[3].name, "grounding_fidelity");
        assert_eq!(metrics[3].weight, 0.125);
        assert_eq!(metrics[3].tier, "knowledge");
    }

    #[test]
    fn expected_outcomes_gate_the_case_not_the_score() {
        let mut low = case("low", 1.0);
        low.expected_outcome_results =
            Some(vec![OutcomeResult { statement: "refund issued".to_owned(), passed: true, justification: None }]);
        let mut high = case("high", 5.0);
        high.expected_outcome_results = Some(vec![
            OutcomeResult { statement: "greets".to_owned(), passed: true, justification: None },
            OutcomeResult { statement: "cites order".to_owned(), passed: false, justification: None },
        ]);
        let summary = evaluate_suite(&run(vec![low, high])).unwrap();
        assert!(summary.cases[0].passed, "all outcomes pass even with a low score");
        assert_eq!(summary.cases[0].pass_basis, PassBasis::ExpectedOutcomes);
        assert!(!summary.cases[1].passed);
        assert_eq!(summary.cases[1].failed_outcomes, ["cites order"]);
    }

    #[test]
    fn errored_cases_count_as_not_passed_and_have_no_score() {
        let errored = CaseResult { errored: true, metrics: IndexMap::new(), ..case("e", 0.0) };
        let summary = evaluate_suite(&run(vec![case("a", 5.0), errored])).unwrap();
        assert_eq!(summary.cases_pass_rate_pct, 50.0);
        assert_eq!(summary.weighted_metrics_score_pct, 100.0, "only results with a verdict count");
        assert_eq!(summary.errored_cases, 1);
    }

    #[test]
    fn include_exclude_and_weights_are_renormalized() {
        let mut config = SuiteConfig {
            include: vec!["tool_routing".to_owned(), "response_delivery".to_owned(), "task_completion".to_owned()],
            extra_metrics: vec![MetricDef {
                name: "task_completion".to_owned(),
                weight: 0.5,
                tier: "execution".to_owned(),
                kind: MetricKind::Binary,
            }],
            ..SuiteConfig::default()
        };
        config.weights.insert("response_delivery".to_owned(), 0.35);
        let metrics = resolve_metrics(&config).unwrap();
        let weights: Vec<f64> = metrics.iter().map(|m| m.weight).collect();
        assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((weights[0] - 0.15 / 1.0).abs() < 1e-12, "0.15 / (0.15 + 0.35 + 0.5)");
        let mut one = CaseResult {
            case_id: "c".to_owned(),
            metrics: IndexMap::new(),
            expected_outcome_results: None,
            errored: false,
            error: None,
            latency_ms: None,
        };
        one.metrics.insert("tool_routing".to_owned(), MetricScore::Score(5.0));
        one.metrics.insert("response_delivery".to_owned(), MetricScore::Score(0.0));
        one.metrics.insert("task_completion".to_owned(), MetricScore::Binary(true));
        let summary =
            evaluate_suite(&SuiteRun { run_id: "r".to_owned(), config: config.clone(), cases: vec![one] }).unwrap();
        assert_eq!(summary.cases[0].overall_score, Some(65.0));
        assert_eq!(summary.cases[0].metrics["task_completion"].label, "pass");
        config.exclude = vec!["tool_routing".to_owned()];
        assert_eq!(resolve_metrics(&config).unwrap().len(), 2);
    }

    #[test]
    fn missing_metric_names_case_and_metric() {
        let mut partial = case("p", 3.0);
        partial.metrics.shift_remove("response_delivery");
        let error = evaluate_suite(&run(vec![partial])).unwrap_err();
        assert_eq!(error.field, "cases[0].metrics.response_delivery");
        let mut out_of_range = case("o", 3.0);
        out_of_range.metrics.insert("tool_routing".to_owned(), MetricScore::Score(6.0));
        assert!(evaluate_suite(&run(vec![out_of_range])).is_err());
    }

    #[test]
    fn labels_cover_the_scale() {
        let labels: Vec<&str> = (0..=5).map(|s| metric_label(s as f64, MetricKind::Scored)).collect();
        assert_eq!(labels, ["critical_fail", "fail", "poor", "acceptable", "good", "excellent"]);
    }
}
