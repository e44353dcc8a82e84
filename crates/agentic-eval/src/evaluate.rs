//! Evaluating one run end to end: hard gates from the run, the rubric's criteria with the
//! evaluation payload's raw scores, then the grading algorithm.
//!
//! The evaluation payload is what an evaluator (a judge, a metric script) produces:
//! `{"scores": {criterion: raw_score}, "sample_count"?: n}`; its published schema is
//! `docs/schema/evaluation-payload.schema.json`, and `schema_contract_valid` checks it.

use agentic_core::dataset::DatasetDescriptor;
use agentic_core::{Workflow, WorkflowResult};
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::formula::{FormulaRegistry, RawScore};
use crate::gates::{GateFacts, GateInputs, HardGateResult, compute_hard_gates};
use crate::grade::{CriterionInput, EvaluationResult, ScoreError, ScoreRequest, score_inner};
use crate::rubric::RubricDefinition;

/// Raw scores by criterion, as an evaluator produces them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluationPayload {
    /// Raw score by criterion name.
    pub scores: IndexMap<String, RawScore>,
    /// Samples behind each score (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub sample_count: Option<u64>,
    /// Anything else the evaluator wants to record (judge model, prompt version).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// Everything needed to evaluate one run.
#[derive(Debug, Clone, Copy)]
pub struct RunEvaluation<'a> {
    /// The run.
    pub result: Option<&'a WorkflowResult>,
    /// The workflow.
    pub workflow: Option<&'a Workflow>,
    /// The evaluation payload (see [`EvaluationPayload`]).
    pub payload: Option<&'a Value>,
    /// A schema replacing the published payload schema.
    pub payload_schema: Option<&'a Value>,
    /// The dataset the inputs came from.
    pub dataset: Option<&'a DatasetDescriptor>,
    /// Evidence for optional and profile gates.
    pub facts: Option<&'a GateFacts>,
    /// The resolved rubric.
    pub rubric: &'a RubricDefinition,
    /// Overrides the rubric's pass threshold.
    pub pass_threshold: Option<f64>,
}

/// Computes the gates, scores the rubric's criteria with the payload's raw scores and grades.
/// Criteria the payload does not score fail `schema_contract_valid` and are left out of the
/// weighted mean (with no score at all the weighted score is 0).
pub fn evaluate_run(run: &RunEvaluation<'_>, formulas: &FormulaRegistry) -> Result<EvaluationResult, ScoreError> {
    let expected = run.rubric.criterion_names();
    let gates = compute_hard_gates(&GateInputs {
        result: run.result,
        workflow: run.workflow,
        payload: run.payload,
        payload_schema: run.payload_schema,
        expected_criteria: &expected,
        dataset: run.dataset,
        facts: run.facts,
        requested: &run.rubric.extra_gates,
    });
    let payload: EvaluationPayload =
        run.payload.and_then(|payload| serde_json::from_value(payload.clone()).ok()).unwrap_or_default();
    let request = request_for(&gates, run.rubric, &payload, run.pass_threshold);
    score_inner(&request, formulas, true)
}

/// The grading request for a rubric and a payload, with computed gates.
pub fn request_for(
    gates: &HardGateResult,
    rubric: &RubricDefinition,
    payload: &EvaluationPayload,
    pass_threshold: Option<f64>,
) -> ScoreRequest {
    let criteria = rubric
        .criteria
        .iter()
        .filter_map(|criterion| {
            payload.scores.get(&criterion.name).map(|raw| CriterionInput {
                name: criterion.name.clone(),
                raw_score: *raw,
                formula_id: criterion.formula_id.clone(),
                weight: criterion.weight,
                critical_floor: criterion.critical_floor,
                params: criterion.params.clone(),
                sample_count: payload.sample_count,
            })
        })
        .collect();
    ScoreRequest {
        hard_gates: gates.gates.clone(),
        hard_gate_reasons: gates.reasons.clone(),
        criteria,
        pass_threshold: pass_threshold.or(rubric.pass_threshold),
        rubric_id: Some(rubric.rubric_id.clone()),
        rubric_version: Some(rubric.version.clone()),
        formulas: Vec::new(),
    }
}

/// Parses a JSON (or YAML) input document of type `T`, checking it against `T`'s schema first
/// so every problem is reported with its field, line and column. `file` labels diagnostics.
pub fn parse_input<T: JsonSchema + serde::de::DeserializeOwned>(
    text: &str,
    kind: &'static str,
    file: &str,
) -> Result<T, Vec<agentic_core::Diagnostic>> {
    let loader = agentic_core::document::DocumentLoader::new::<T>(kind);
    let loaded = loader.load::<T>(text);
    match loaded.value {
        Some(value) if loaded.diagnostics.is_empty() => Ok(value),
        _ => {
            let mut diagnostics = loaded.diagnostics;
            for diagnostic in &mut diagnostics {
                diagnostic.file = Some(file.to_owned());
            }
            Err(diagnostics)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use agentic_core::workflow::{EvaluationSpec, StepKind};
    use agentic_core::{StepResult, StepStatus};
    use serde_json::json;

    use super::*;
    use crate::grade::Grade;
    use crate::profile::ProfileRegistry;
    use crate::rubric::{RubricSource, RubricSources, resolve_rubric};

    const WORKFLOW: &str = r#"
name: review
inputs:
  code_file: {type: string}
steps:
  - name: review
    kind: command
    argv: ["cat", "${inputs.code_file}"]
outputs:
  report: {from: "${steps.review.outputs.stdout}"}
"#;

    fn workflow() -> Workflow {
        let load = agentic_core::load_workflow(WORKFLOW, "wf.yaml");
        let errors: Vec<_> = load.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        load.workflow.expect("the fixture workflow loads").workflow().clone()
    }

    fn succeeded_run() -> WorkflowResult {
        let mut step = StepResult::new("review", StepKind::Command, StepStatus::Succeeded);
        step.outputs.insert("stdout".to_owned(), json!("looks good"));
        WorkflowResult {
            run_id: "run-1".to_owned(),
            workflow: "review".to_owned(),
            workflow_version: "1".to_owned(),
            overall_status: StepStatus::Succeeded,
            steps: vec![step],
            outputs: serde_json::from_value(json!({"report": "looks good"})).unwrap(),
            unresolved_required_outputs: Vec::new(),
            inputs: serde_json::from_value(json!({"code_file": "main.rs"})).unwrap(),
            started_at: None,
            ended_at: None,
            duration_ms: 10.0,
            attempt: None,
            metadata: Map::new(),
        }
    }

    fn default_rubric() -> RubricDefinition {
        let library = BTreeMap::new();
        let sources = RubricSources {
            request: None,
            workflow: None,
            library: &library,
            profiles: &ProfileRegistry::builtin(),
            formulas: &FormulaRegistry::builtin(),
        };
        resolve_rubric(&sources).unwrap().rubric
    }

    /// Scores of the default rubric (correctness, completeness, safety, clarity, efficiency).
    fn payload(correctness: f64, rest: f64) -> Value {
        payload3(correctness, rest, rest)
    }

    fn payload3(correctness: f64, safety: f64, rest: f64) -> Value {
        json!({"scores": {
            "correctness": correctness, "completeness": rest, "safety": safety, "clarity": rest, "efficiency": (rest - 1.0) / 4.0
        }})
    }

    fn evaluate(result: &WorkflowResult, payload: &Value, dataset: Option<&DatasetDescriptor>) -> EvaluationResult {
        let workflow = workflow();
        let rubric = default_rubric();
        let run = RunEvaluation {
            result: Some(result),
            workflow: Some(&workflow),
            payload: Some(payload),
            payload_schema: None,
            dataset,
            facts: None,
            rubric: &rubric,
            pass_threshold: None,
        };
        evaluate_run(&run, &FormulaRegistry::builtin()).unwrap()
    }

    #[test]
    fn test_hard_gate_null_output_fails() {
        let mut result = succeeded_run();
        result.outputs = Map::new();
        let evaluation = evaluate(&result, &payload(5.0, 5.0), None);
        assert!(!evaluation.passed);
        assert_eq!(evaluation.grade, Grade::F);
        assert!(evaluation.hard_gate_failures.contains(&"required_outputs_present".to_owned()));
        assert_eq!(evaluation.weighted_score, 100.0, "the score is still computed for diagnostics");
    }

    #[test]
    fn test_hard_gate_failed_status_fails() {
        let mut result = succeeded_run();
        result.overall_status = StepStatus::Failed;
        let evaluation = evaluate(&result, &payload(5.0, 5.0), None);
        assert!(!evaluation.passed);
        assert_eq!(evaluation.hard_gate_failures, vec!["overall_status_success".to_owned()]);
        assert!(evaluation.hard_gate_reasons["overall_status_success"].contains("failed"));
    }

    #[test]
    fn test_hard_gate_critical_step_failure() {
        let mut result = succeeded_run();
        result.steps.push(StepResult::new("lint", StepKind::Command, StepStatus::Failed));
        let evaluation = evaluate(&result, &payload(5.0, 5.0), None);
        assert!(!evaluation.passed);
        assert_eq!(evaluation.hard_gate_failures, vec!["no_critical_step_failures".to_owned()]);
        let mut non_critical = StepResult::new("optional", StepKind::Command, StepStatus::Failed);
        non_critical.critical = false;
        let mut result = succeeded_run();
        result.steps.push(non_critical);
        assert!(evaluate(&result, &payload(5.0, 5.0), None).passed, "a non-critical step may fail");
    }

    #[test]
    fn test_hard_gate_schema_contract_invalid() {
        let missing_key = json!({"scores": {"correctness": 5, "completeness": 5}});
        let evaluation = evaluate(&succeeded_run(), &missing_key, None);
        assert!(!evaluation.passed);
        assert_eq!(evaluation.hard_gate_failures, vec!["schema_contract_valid".to_owned()]);
        assert!(evaluation.hard_gate_reasons["schema_contract_valid"].contains("safety"));
        let wrong_type = json!({"scores": "five"});
        let evaluation = evaluate(&succeeded_run(), &wrong_type, None);
        assert!(evaluation.hard_gate_failures.contains(&"schema_contract_valid".to_owned()));
        assert_eq!(evaluation.weighted_score, 0.0);
    }

    #[test]
    fn test_hard_gate_dataset_incompatible() {
        let dataset = DatasetDescriptor {
            id: "snippets".to_owned(),
            version: "1".to_owned(),
            description: None,
            fields: vec!["source".to_owned()],
        };
        let evaluation = evaluate(&succeeded_run(), &payload(5.0, 5.0), Some(&dataset));
        assert!(!evaluation.passed);
        assert_eq!(evaluation.hard_gate_failures, vec!["dataset_workflow_compatible".to_owned()]);
        assert!(evaluation.hard_gate_reasons["dataset_workflow_compatible"].contains("code_file"));
    }

    #[test]
    fn test_hard_gate_all_pass_with_score() {
        let evaluation = evaluate(&succeeded_run(), &payload3(5.0, 4.5, 4.0), None);
        assert!(evaluation.hard_gate_failures.is_empty(), "{:?}", evaluation.hard_gate_reasons);
        assert!(evaluation.floor_violations.is_empty());
        assert!(evaluation.weighted_score >= 70.0);
        assert!(evaluation.passed);
        assert_eq!(evaluation.hard_gates.len(), 5);
    }

    #[test]
    fn test_hard_gate_all_pass_low_score() {
        // Floors met (correctness 0.70, safety 0.80), the rest weak.
        let evaluation = evaluate(&succeeded_run(), &payload3(3.8, 4.2, 2.0), None);
        assert!(evaluation.hard_gate_failures.is_empty());
        assert!(evaluation.floor_violations.is_empty(), "{:?}", evaluation.floor_violations);
        assert!(evaluation.weighted_score < 70.0, "{}", evaluation.weighted_score);
        assert!(!evaluation.passed);
        assert_eq!(evaluation.reason, crate::Reason::BelowPassThreshold);
    }

    #[test]
    fn test_score_result_contains_gate_fields() {
        let evaluation = evaluate(&succeeded_run(), &payload(5.0, 4.0), None);
        let value = serde_json::to_value(&evaluation).unwrap();
        for key in ["hard_gates", "hard_gate_failures", "floor_violations", "grade_capped", "criteria", "reason"] {
            assert!(value.get(key).is_some(), "missing `{key}` in {value}");
        }
    }

    #[test]
    fn test_score_workflow_result_includes_all_criteria() {
        let evaluation = evaluate(&succeeded_run(), &payload(5.0, 4.0), None);
        let names: Vec<&str> = evaluation.criteria.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["correctness", "completeness", "safety", "clarity", "efficiency"]);
    }

    #[test]
    fn test_criterion_floor_correctness_caps_grade() {
        // correctness 3.2 on 1..5 normalizes to 0.55 < 0.70; everything else perfect.
        let evaluation = evaluate(&succeeded_run(), &payload(3.2, 5.0), None);
        let correctness = &evaluation.criteria[0];
        assert!((correctness.normalized_score - 0.55).abs() < 1e-9);
        assert!(!correctness.floor_passed);
        assert!(evaluation.weighted_score >= 80.0, "high aggregate: {}", evaluation.weighted_score);
        assert_eq!(evaluation.grade, Grade::D);
        assert!(evaluation.grade_capped);
        assert_eq!(evaluation.floor_violations, vec!["correctness".to_owned()]);
        assert!(!evaluation.passed);
    }

    #[test]
    fn test_criterion_floor_all_pass() {
        let evaluation = evaluate(&succeeded_run(), &payload(5.0, 5.0), None);
        assert!(evaluation.floor_violations.is_empty());
        assert!(!evaluation.grade_capped);
        assert_eq!(evaluation.grade, Grade::A);
    }

    fn try_resolve(
        evaluation: Option<&EvaluationSpec>,
        request: Option<&RubricDefinition>,
    ) -> Result<crate::ResolvedRubric, crate::RubricError> {
        resolve_rubric(&RubricSources {
            request,
            workflow: evaluation,
            library: &BTreeMap::new(),
            profiles: &ProfileRegistry::builtin(),
            formulas: &FormulaRegistry::builtin(),
        })
    }

    fn resolve(evaluation: Option<&EvaluationSpec>, request: Option<&RubricDefinition>) -> crate::ResolvedRubric {
        try_resolve(evaluation, request).unwrap()
    }

    fn evaluation_block(yaml: &str) -> EvaluationSpec {
        let text = format!("{WORKFLOW}evaluation:\n{yaml}");
        let load = agentic_core::load_workflow(&text, "wf.yaml");
        let workflow = load.workflow.unwrap_or_else(|| panic!("{:?}", load.diagnostics));
        workflow.workflow().evaluation.clone().unwrap()
    }

    #[test]
    fn test_rubric_loaded_from_workflow_yaml() {
        let spec = evaluation_block(
            "  criteria:\n    - {name: accuracy, formula_id: zero_one, weight: 3}\n    - {name: speed, formula_id: zero_one, weight: 1}\n",
        );
        let resolved = resolve(Some(&spec), None);
        assert_eq!(resolved.source, RubricSource::Workflow);
        let weights: Vec<(String, f64)> = resolved.rubric.criteria.iter().map(|c| (c.name.clone(), c.weight)).collect();
        assert_eq!(weights, [("accuracy".to_owned(), 3.0), ("speed".to_owned(), 1.0)]);
        let payload = json!({"scores": {"accuracy": 1.0, "speed": 0.0}});
        let parsed: EvaluationPayload = serde_json::from_value(payload).unwrap();
        let request = request_for(&HardGateResult::default(), &resolved.rubric, &parsed, None);
        let result = crate::score(&request, &FormulaRegistry::builtin()).unwrap();
        assert_eq!(result.weighted_score, 75.0, "weights 3:1 from the YAML, not the global default");
    }

    #[test]
    fn test_rubric_request_override() {
        let spec = evaluation_block("  scoring_profile: A\n");
        let mut request = default_rubric();
        request.rubric_id = "override_v2".to_owned();
        request.criteria.truncate(1);
        let resolved = resolve(Some(&spec), Some(&request));
        assert_eq!(resolved.source, RubricSource::Request);
        assert_eq!(resolved.rubric.rubric_id, "override_v2");
        assert_eq!(resolved.rubric.criterion_names(), ["correctness"]);
    }

    #[test]
    fn test_rubric_invalid_weights_rejected() {
        let spec = evaluation_block("  criteria:\n    - {name: a, formula_id: zero_one, weight: 1}\n");
        let mut bad = spec.clone();
        bad.criteria[0].weight = Some(-1.0);
        let error = try_resolve(Some(&bad), None).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("weights must be positive") && text.contains("`a`"), "{text}");
        assert!(text.contains("hint: use a positive weight"), "actionable: {text}");
        bad.criteria[0].weight = Some(0.0);
        let error = try_resolve(Some(&bad), None).unwrap_err();
        assert!(error.to_string().contains("is 0"), "{error}");
    }

    #[test]
    fn test_rubric_missing_uses_global_default() {
        let resolved = resolve(None, None);
        assert_eq!(resolved.source, RubricSource::GlobalDefault);
        assert_eq!(resolved.rubric.rubric_id, "default");
        assert_eq!(resolved.rubric.criterion("correctness").unwrap().weight, 0.40);
    }

    #[test]
    fn test_rubric_unknown_formula_id_rejected() {
        let spec = evaluation_block("  criteria:\n    - {name: a, formula_id: likert_1_7, weight: 1}\n");
        let error = try_resolve(Some(&spec), None).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("unknown formula `likert_1_7`") && text.contains("likert_1_5"), "{text}");
    }

    #[test]
    fn test_rubric_criterion_has_anchored_scale() {
        let resolved = resolve(None, None);
        let correctness = resolved.rubric.criterion("correctness").unwrap();
        assert_eq!(correctness.scale, Some([1.0, 5.0]));
        assert_eq!(correctness.anchors.len(), 5);
        assert_eq!(correctness.anchors["3"], "acceptable baseline, clear issues remain");
    }

    #[test]
    fn test_scoring_profile_applies_defaults() {
        let spec = evaluation_block("  scoring_profile: A\n");
        let resolved = resolve(Some(&spec), None);
        let profile = ProfileRegistry::builtin().get("A").unwrap().clone();
        for criterion in &profile.criteria {
            assert_eq!(resolved.rubric.criterion(&criterion.name).unwrap().weight, criterion.weight.unwrap());
        }
        assert!(resolved.rubric.extra_gates.contains(&"tests_fail_to_pass_all_green".to_owned()));
    }

    #[test]
    fn test_workflow_yaml_selects_profile() {
        let spec = evaluation_block("  scoring_profile: B\n");
        let resolved = resolve(Some(&spec), None);
        assert_eq!(resolved.rubric.criterion("correctness_rubric").unwrap().weight, 0.35);
        assert_eq!(resolved.rubric.rubric_id, "profile_B");
    }

    #[test]
    fn test_scoring_profile_overridable() {
        let spec =
            evaluation_block("  scoring_profile: A\n  weights:\n    objective_tests: 0.3\n    efficiency: 0.35\n");
        let resolved = resolve(Some(&spec), None);
        assert_eq!(resolved.rubric.criterion("objective_tests").unwrap().weight, 0.3);
        assert_eq!(resolved.rubric.criterion("efficiency").unwrap().weight, 0.35);
        assert_eq!(resolved.rubric.criterion("judge_quality").unwrap().weight, 0.25, "untouched weights stay");
    }

    #[test]
    fn test_explicit_weights_override_profile() {
        let spec = evaluation_block("  scoring_profile: D\n  criteria:\n    - {name: handoff_accuracy, weight: 0.5}\n");
        let resolved = resolve(Some(&spec), None);
        let handoff = resolved.rubric.criterion("handoff_accuracy").unwrap();
        assert_eq!(handoff.weight, 0.5);
        assert_eq!(handoff.formula_id, "zero_one", "fields not given come from the profile");
    }

    #[test]
    fn problems_in_merged_criteria_point_where_they_were_written() {
        // Profile B has five criteria; the inline `efficiency` (entry 0) merges into the
        // profile's fifth and lacks params, the inline `extra` (entry 1) is appended sixth and
        // lacks anchors. Both must point at their own inline entry, not at merged index 4 or 5.
        let spec = evaluation_block(
            "  scoring_profile: B\n  criteria:\n    - {name: efficiency, formula_id: lower_is_better}\n    - {name: extra, weight: 1, formula_id: likert_1_5}\n",
        );
        let Err(crate::RubricError::Invalid { diagnostics, .. }) = try_resolve(Some(&spec), None) else {
            panic!("the block is invalid");
        };
        let at: Vec<(&str, &str)> =
            diagnostics.iter().map(|d| (d.code.as_str(), d.pointer.as_deref().unwrap_or_default())).collect();
        assert_eq!(
            at,
            [("invalid-params", "/evaluation/criteria/0"), ("missing-anchors", "/evaluation/criteria/1")],
            "{diagnostics:?}"
        );
    }

    #[test]
    fn weights_for_unknown_criteria_are_rejected() {
        let spec = evaluation_block("  scoring_profile: A\n  weights:\n    objectve_tests: 0.3\n");
        let error = try_resolve(Some(&spec), None).unwrap_err();
        assert!(error.to_string().contains("unknown criterion `objectve_tests`"), "{error}");
    }

    #[test]
    fn missing_evidence_is_not_proven() {
        let rubric = default_rubric();
        let run = RunEvaluation {
            result: None,
            workflow: None,
            payload: None,
            payload_schema: None,
            dataset: None,
            facts: None,
            rubric: &rubric,
            pass_threshold: None,
        };
        let evaluation = evaluate_run(&run, &FormulaRegistry::builtin()).unwrap();
        assert_eq!(evaluation.hard_gate_failures.len(), 5);
        assert!(evaluation.hard_gate_reasons.values().all(|reason| reason.starts_with("not proven")));
        assert_eq!(evaluation.grade, Grade::F);
    }
}
