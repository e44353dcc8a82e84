//! Hybrid scoring (P3-T001): layer 1 objective metrics, layer 2 judge rubric, layer 3
//! efficiency and similarity, composed through `agentic-eval`'s scoring engine.
//!
//! The judge only fills raw criterion scores; the scoring engine normalizes them with their
//! formulas, weights every layer, applies floors, and lets hard gates override everything.
//! Without a judge verdict the judged criteria are left out and the score rests on layers 1
//! and 3. With a verdict, a judged criterion that errored adds the failed gate
//! [`JUDGE_VERDICT_COMPLETE`]: an errored criterion can never help a run pass.

use std::collections::BTreeMap;

use agentic_core::workflow::FloorSpec;
use agentic_eval::{CriterionInput, EvaluationResult, FormulaRegistry, RawScore, ScoreRequest, score};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::JudgeError;
use crate::verdict::{CriterionStatus, JudgeMeta, JudgeUsage, Verdict};

/// The gate that fails when a judged criterion has no usable score.
pub const JUDGE_VERDICT_COMPLETE: &str = "judge_verdict_complete";

/// A rubric criterion whose raw score the judge provides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedCriterion {
    /// The criterion name (as in the judge's rubric).
    pub name: String,
    /// Relative weight.
    pub weight: f64,
    /// Floor, normalized or `{raw: N}`.
    #[serde(default)]
    pub critical_floor: Option<FloorSpec>,
    /// Formula; defaults to `likert_1_5` for a 1..5 criterion.
    #[serde(default)]
    pub formula_id: Option<String>,
    /// Formula parameters.
    #[serde(default)]
    pub params: Option<Map<String, Value>>,
}

/// Everything a hybrid score is made of, besides the judge verdict.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HybridInput {
    /// Layer 0: gate verdicts by name.
    pub hard_gates: BTreeMap<String, bool>,
    /// Why gates failed.
    #[serde(default)]
    pub hard_gate_reasons: BTreeMap<String, String>,
    /// Layer 1: objective metrics (tests, pass@k, tool-call validity...), with raw scores.
    pub objective: Vec<CriterionInput>,
    /// Layer 2: rubric criteria the judge scores.
    pub judged: Vec<JudgedCriterion>,
    /// Layer 3: similarity, efficiency and cost, with raw scores.
    pub efficiency: Vec<CriterionInput>,
    /// Pass threshold on 0..100 (default 70).
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    /// The rubric id.
    #[serde(default)]
    pub rubric_id: Option<String>,
    /// The rubric version.
    #[serde(default)]
    pub rubric_version: Option<String>,
}

/// One layer's share of the score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerSummary {
    /// The criteria of the layer that were scored.
    pub criteria: Vec<String>,
    /// Their total weight.
    pub weight: f64,
    /// Their weighted normalized mean (0..1).
    pub normalized: Option<f64>,
}

/// A hybrid score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HybridResult {
    /// The scoring engine's result (gates, grade, criteria, explanation).
    pub evaluation: EvaluationResult,
    /// Per layer: `objective`, `judge`, `efficiency`.
    pub layers: BTreeMap<String, LayerSummary>,
    /// Whether a judge verdict was used.
    pub judge_used: bool,
    /// Judged criteria that errored.
    pub judge_errored: Vec<String>,
    /// Who judged.
    pub judges: Vec<JudgeMeta>,
    /// What the judge cost (apart from the system under test).
    pub judge_usage: JudgeUsage,
}

/// Composes the layers and scores them with the scoring engine.
pub fn hybrid_score(
    input: &HybridInput,
    verdict: Option<&Verdict>,
    registry: &FormulaRegistry,
) -> Result<HybridResult, JudgeError> {
    let mut criteria: Vec<CriterionInput> = Vec::new();
    let mut layer_of: BTreeMap<String, &'static str> = BTreeMap::new();
    for objective in &input.objective {
        layer_of.insert(objective.name.clone(), "objective");
        criteria.push(objective.clone());
    }
    let mut hard_gates = input.hard_gates.clone();
    let mut hard_gate_reasons = input.hard_gate_reasons.clone();
    let mut judge_errored = Vec::new();
    if let Some(verdict) = verdict {
        for judged in &input.judged {
            let Some(criterion) = verdict.criteria.iter().find(|c| c.name == judged.name) else {
                return Err(JudgeError::Input(format!(
                    "judged criterion `{}` is not in the verdict; judge it with the same rubric",
                    judged.name
                )));
            };
            let (Some(raw), CriterionStatus::Scored) = (criterion.score, criterion.status) else {
                judge_errored.push(judged.name.clone());
                continue;
            };
            let formula_id = match (&judged.formula_id, criterion.min, criterion.max) {
                (Some(id), _, _) => id.clone(),
                (None, 1, 5) => "likert_1_5".to_owned(),
                (None, min, max) => {
                    return Err(JudgeError::Input(format!(
                        "judged criterion `{}` is on {min}..{max}; give it a `formula_id` that maps that scale",
                        judged.name
                    )));
                }
            };
            let samples: usize = criterion.judges.iter().map(|j| j.scores.iter().flatten().count()).sum();
            layer_of.insert(judged.name.clone(), "judge");
            criteria.push(CriterionInput {
                name: judged.name.clone(),
                raw_score: RawScore::Number(raw),
                formula_id,
                weight: judged.weight,
                critical_floor: judged.critical_floor,
                params: judged.params.clone(),
                sample_count: Some(samples.max(1) as u64),
            });
        }
        let complete = judge_errored.is_empty();
        hard_gates.insert(JUDGE_VERDICT_COMPLETE.to_owned(), complete);
        if !complete {
            hard_gate_reasons.insert(
                JUDGE_VERDICT_COMPLETE.to_owned(),
                format!("the judge gave no usable score for: {}", judge_errored.join(", ")),
            );
        }
    }
    for efficiency in &input.efficiency {
        layer_of.insert(efficiency.name.clone(), "efficiency");
        criteria.push(efficiency.clone());
    }
    let request = ScoreRequest {
        hard_gates,
        hard_gate_reasons,
        criteria,
        pass_threshold: input.pass_threshold,
        rubric_id: input.rubric_id.clone(),
        rubric_version: input.rubric_version.clone(),
        formulas: Vec::new(),
    };
    let evaluation = score(&request, registry)?;
    let mut layers: BTreeMap<String, LayerSummary> = BTreeMap::new();
    for name in ["objective", "judge", "efficiency"] {
        let members: Vec<_> =
            evaluation.criteria.iter().filter(|c| layer_of.get(&c.name).copied() == Some(name)).collect();
        let weight: f64 = members.iter().map(|c| c.weight).sum();
        let normalized =
            (weight > 0.0).then(|| members.iter().map(|c| c.weight * c.normalized_score).sum::<f64>() / weight);
        layers.insert(
            name.to_owned(),
            LayerSummary { criteria: members.iter().map(|c| c.name.clone()).collect(), weight, normalized },
        );
    }
    Ok(HybridResult {
        evaluation,
        layers,
        judge_used: verdict.is_some(),
        judge_errored,
        judges: verdict.map(|v| v.judges.clone()).unwrap_or_default(),
        judge_usage: verdict.map(|v| v.usage).unwrap_or_default(),
    })
}
