//! Raw scores of a finished run, criterion by criterion, from where each criterion says its
//! score comes from (`score_from`): a measured run metric, an expression over the run, or the
//! LLM judge (whose scores the caller supplies; this crate makes no model calls).
//!
//! The result is an evaluation payload (`{"scores": {...}}`) for [`crate::evaluate_run`] and a
//! per-criterion account of where every score came from, or why it is missing. A missing score
//! is never guessed: the criterion stays unscored and `schema_contract_valid` fails, naming it.

use std::collections::BTreeMap;

use agentic_core::{RunMetric, ScoreSource, StepStatus, WorkflowResult};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::formula::RawScore;
use crate::rubric::{RubricCriterion, RubricDefinition};

/// Where one criterion's score came from, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreOrigin {
    /// `judge`, `metric.<name>`, the expression as written, or `none`.
    pub source: String,
    /// The raw score, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_score: Option<Value>,
    /// Why there is no score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

/// The raw scores of one run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunScores {
    /// Raw score by criterion, in rubric order (only the scored ones).
    pub scores: IndexMap<String, RawScore>,
    /// Per criterion, in rubric order: where its score came from.
    pub origins: IndexMap<String, ScoreOrigin>,
}

impl RunScores {
    /// The evaluation payload (`{"scores": {...}}`) for [`crate::evaluate_run`].
    pub fn payload(&self) -> Value {
        json!({ "scores": self.scores })
    }

    /// Criteria without a score, with the reason.
    pub fn missing(&self) -> Vec<(String, String)> {
        self.origins
            .iter()
            .filter_map(|(name, origin)| origin.missing.as_ref().map(|reason| (name.clone(), reason.clone())))
            .collect()
    }
}

/// The source of `criterion`: its `score_from`, else the default for its formula.
pub fn score_source(criterion: &RubricCriterion) -> Result<Option<ScoreSource>, String> {
    match &criterion.score_from {
        Some(text) => ScoreSource::parse(text).map(Some),
        None => Ok(ScoreSource::default_for(&criterion.formula_id)),
    }
}

/// The criteria of `rubric` the judge scores.
pub fn judged_criteria(rubric: &RubricDefinition) -> Vec<&RubricCriterion> {
    rubric.criteria.iter().filter(|criterion| matches!(score_source(criterion), Ok(Some(ScoreSource::Judge)))).collect()
}

/// The value of a run metric, or why it is not known.
pub fn run_metric(result: &WorkflowResult, metric: RunMetric) -> Result<f64, String> {
    match metric {
        RunMetric::DurationS => Ok(result.duration_ms / 1000.0),
        RunMetric::TotalTokens => Ok(result
            .steps
            .iter()
            .filter_map(|step| step.metadata.get("usage"))
            .map(|usage| {
                ["prompt_tokens", "completion_tokens"]
                    .iter()
                    .filter_map(|key| usage.get(key).and_then(Value::as_f64))
                    .sum::<f64>()
            })
            .sum()),
        RunMetric::CostUsd => {
            let costs: Vec<f64> =
                result.steps.iter().filter_map(|step| step.metadata.get("cost_usd").and_then(Value::as_f64)).collect();
            if costs.is_empty() {
                Err("no step reported a cost (`cost_usd` in its metadata); score from `metric.total_tokens` instead"
                    .to_owned())
            } else {
                Ok(costs.iter().sum())
            }
        }
        RunMetric::StepSuccessRate => {
            let ran: Vec<_> = result
                .steps
                .iter()
                .filter(|step| {
                    !(step.status == StepStatus::Skipped
                        && step.metadata.get("skip_reason").and_then(Value::as_str) == Some("when_false"))
                })
                .collect();
            if ran.is_empty() {
                Err("no step ran".to_owned())
            } else {
                Ok(ran.iter().filter(|step| step.status == StepStatus::Succeeded).count() as f64 / ran.len() as f64)
            }
        }
        RunMetric::Retries => Ok(result.steps.iter().map(|step| f64::from(step.attempts.saturating_sub(1))).sum()),
    }
}

/// The context expressions in `score_from` resolve against: `inputs`, `outputs`, and
/// `steps.<name>.{outputs, status}`.
pub fn run_context(result: &WorkflowResult) -> Value {
    let steps: Map<String, Value> = result
        .steps
        .iter()
        .map(|step| (step.name.clone(), json!({"outputs": step.outputs, "status": step.status.as_str()})))
        .collect();
    json!({"inputs": result.inputs, "outputs": result.outputs, "steps": steps})
}

/// Collects the raw scores of `result` for `rubric`. `judged` holds the judge's raw scores by
/// criterion (absent: not judged); `judge_missing` explains a judged criterion without one
/// (no judge configured, the judge errored).
pub fn collect_run_scores(
    rubric: &RubricDefinition,
    result: &WorkflowResult,
    judged: &BTreeMap<String, f64>,
    judge_missing: &BTreeMap<String, String>,
) -> RunScores {
    let context = run_context(result);
    let mut out = RunScores::default();
    for criterion in &rubric.criteria {
        let (source, value) = match score_source(criterion) {
            Err(message) => ("none".to_owned(), Err(message)),
            Ok(None) => (
                "none".to_owned(),
                Err(format!(
                    "criterion `{}` (formula `{}`) does not say where its score comes from; add `score_from:` (`judge`, `metric.<name>` or `${{...}}`)",
                    criterion.name, criterion.formula_id
                )),
            ),
            Ok(Some(ScoreSource::Judge)) => (
                "judge".to_owned(),
                match judged.get(&criterion.name) {
                    Some(score) => Ok(RawScore::Number(*score)),
                    None => Err(judge_missing
                        .get(&criterion.name)
                        .cloned()
                        .unwrap_or_else(|| "the judge gave no score".to_owned())),
                },
            ),
            Ok(Some(ScoreSource::Metric(metric))) => {
                (format!("metric.{}", metric.name()), run_metric(result, metric).map(RawScore::Number))
            }
            Ok(Some(ScoreSource::Expression(expression))) => {
                let value = expression.resolve(&context);
                (
                    expression.to_string(),
                    raw_score_of(&value)
                        .ok_or_else(|| {
                        format!(
                            "`{expression}` resolved to {}, not a number; make that output a number (a boolean counts as 1/0; `{{passed, total}}` for test formulas)",
                            shown(&value)
                        )
                    }),
                )
            }
        };
        let origin = match value {
            Ok(raw) => {
                let shown = json!(raw);
                out.scores.insert(criterion.name.clone(), raw);
                ScoreOrigin { source, raw_score: Some(shown), missing: None }
            }
            Err(reason) => ScoreOrigin { source, raw_score: None, missing: Some(reason) },
        };
        out.origins.insert(criterion.name.clone(), origin);
    }
    out
}

/// A number (a boolean counts as 1 or 0, a numeric string is parsed), or a structured raw
/// score such as test counts.
fn raw_score_of(value: &Value) -> Option<RawScore> {
    match value {
        Value::Number(number) => number.as_f64().map(RawScore::Number),
        Value::Bool(flag) => Some(RawScore::Number(if *flag { 1.0 } else { 0.0 })),
        Value::String(text) => text.trim().parse::<f64>().ok().filter(|n| n.is_finite()).map(RawScore::Number),
        Value::Object(_) => serde_json::from_value(value.clone()).ok(),
        _ => None,
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::Null => "nothing (null)".to_owned(),
        other => {
            let text = other.to_string();
            if text.chars().count() > 60 { format!("{}...", text.chars().take(60).collect::<String>()) } else { text }
        }
    }
}

#[cfg(test)]
mod tests {
    use agentic_core::{StepKind, StepResult};

    use super::*;

    fn criterion(name: &str, formula: &str, score_from: Option<&str>) -> RubricCriterion {
        RubricCriterion {
            name: name.to_owned(),
            definition: None,
            evidence_required: Vec::new(),
            scale: None,
            anchors: IndexMap::new(),
            weight: 1.0,
            critical_floor: None,
            formula_id: formula.to_owned(),
            params: None,
            score_from: score_from.map(str::to_owned),
        }
    }

    fn rubric(criteria: Vec<RubricCriterion>) -> RubricDefinition {
        RubricDefinition {
            rubric_id: "r".to_owned(),
            version: "1".to_owned(),
            description: None,
            criteria,
            pass_threshold: None,
            extra_gates: Vec::new(),
        }
    }

    fn step(name: &str, status: StepStatus, attempts: u32, outputs: Value) -> StepResult {
        let mut step = StepResult::new(name, StepKind::Command, status);
        step.attempts = attempts;
        step.outputs = outputs.as_object().cloned().unwrap_or_default();
        step
    }

    fn result() -> WorkflowResult {
        let mut result = WorkflowResult {
            run_id: "run-1".to_owned(),
            workflow: "wf".to_owned(),
            workflow_version: "1".to_owned(),
            overall_status: StepStatus::Failed,
            steps: Vec::new(),
            outputs: Map::new(),
            unresolved_required_outputs: Vec::new(),
            inputs: Map::new(),
            started_at: None,
            ended_at: None,
            duration_ms: 12_000.0,
            attempt: None,
            metadata: Map::new(),
        };
        let mut agent = step("agent", StepStatus::Succeeded, 2, json!({"text": "hi"}));
        agent.metadata.insert("usage".into(), json!({"prompt_tokens": 100, "completion_tokens": 20}));
        let mut skipped = step("optional", StepStatus::Skipped, 0, json!({}));
        skipped.metadata.insert("skip_reason".into(), json!("when_false"));
        result.steps = vec![
            agent,
            step("tests", StepStatus::Succeeded, 1, json!({"pass_rate": 0.75, "ok": true, "label": "x"})),
            step("lint", StepStatus::Failed, 1, json!({})),
            skipped,
        ];
        result.outputs.insert("score".into(), json!(4));
        result
    }

    #[test]
    fn metrics_come_from_the_run() {
        let result = result();
        assert_eq!(run_metric(&result, RunMetric::DurationS), Ok(12.0));
        assert_eq!(run_metric(&result, RunMetric::TotalTokens), Ok(120.0));
        assert_eq!(run_metric(&result, RunMetric::Retries), Ok(1.0));
        // 3 steps ran (the `when: false` one is left out), 2 succeeded.
        assert_eq!(run_metric(&result, RunMetric::StepSuccessRate), Ok(2.0 / 3.0));
        assert!(run_metric(&result, RunMetric::CostUsd).unwrap_err().contains("no step reported a cost"));
    }

    #[test]
    fn every_source_is_resolved_or_explained() {
        let rubric = rubric(vec![
            criterion("quality", "likert_1_5", None),
            criterion("speed", "lower_is_better", Some("metric.duration_s")),
            criterion("tests", "zero_one", Some("${steps.tests.outputs.pass_rate}")),
            criterion("flag", "zero_one", Some("${steps.tests.outputs.ok}")),
            criterion("final", "likert_1_5", Some("${outputs.score}")),
            criterion("label", "zero_one", Some("${steps.tests.outputs.label}")),
            criterion("absent", "zero_one", Some("${steps.lint.outputs.rate}")),
            criterion("unsourced", "zero_one", None),
            criterion("judged_missing", "likert_1_5", Some("judge")),
        ]);
        let judged = BTreeMap::from([("quality".to_owned(), 4.0)]);
        let missing = BTreeMap::from([("judged_missing".to_owned(), "the judge errored: timeout".to_owned())]);
        let scores = collect_run_scores(&rubric, &result(), &judged, &missing);
        assert_eq!(
            scores.payload(),
            json!({"scores": {"quality": 4.0, "speed": 12.0, "tests": 0.75, "flag": 1.0, "final": 4.0}})
        );
        assert_eq!(scores.origins["quality"].source, "judge");
        assert_eq!(scores.origins["speed"].source, "metric.duration_s");
        let missing: BTreeMap<String, String> = scores.missing().into_iter().collect();
        assert_eq!(missing.len(), 4, "{missing:?}");
        assert!(
            missing["label"].contains("resolved to \"x\", not a number; make that output a number"),
            "{}",
            missing["label"]
        );
        assert!(missing["absent"].contains("nothing (null)"), "{}", missing["absent"]);
        assert!(missing["unsourced"].contains("add `score_from:`"), "{}", missing["unsourced"]);
        assert_eq!(missing["judged_missing"], "the judge errored: timeout");
    }

    #[test]
    fn structured_raw_scores_pass_through() {
        let mut result = result();
        result.outputs.insert("tests".into(), json!({"passed": 3, "total": 4}));
        let rubric = rubric(vec![criterion("ftp", "fail_to_pass", Some("${outputs.tests}"))]);
        let scores = collect_run_scores(&rubric, &result, &BTreeMap::new(), &BTreeMap::new());
        assert!(scores.missing().is_empty(), "{:?}", scores.missing());
        assert!(matches!(scores.scores["ftp"], RawScore::Tests(_)));
    }

    #[test]
    fn judged_criteria_are_the_likert_and_declared_ones() {
        let rubric = rubric(vec![
            criterion("a", "likert_1_5", None),
            criterion("b", "zero_one", Some("judge")),
            criterion("c", "likert_1_5", Some("metric.retries")),
            criterion("d", "zero_one", None),
        ]);
        let names: Vec<&str> = judged_criteria(&rubric).iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
