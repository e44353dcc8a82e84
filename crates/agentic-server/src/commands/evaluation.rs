//! The full evaluation of a run for `agentic run`: the scoring engine's hard gates, every rubric
//! criterion's raw score from where it says it comes from (run metrics, expressions over the
//! run, the LLM judge), then the grading algorithm (`agentic_eval::evaluate_run`).
//!
//! Workflows without an `evaluation` block keep the engine's own gates (no grade): there is no
//! rubric to score them against that would mean anything. The judge runs on the same provider
//! as the agent steps (`--provider replay` answers it from the cassette) unless `--judge FILE`
//! configures one; a judged criterion without a usable verdict stays unscored and fails
//! `schema_contract_valid` with the reason.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentic_core::dataset::DatasetDescriptor;
use agentic_core::expr::Template;
use agentic_core::{ValidatedWorkflow, WorkflowResult};
use agentic_engine::{RunEvaluation, RunEvaluator, evaluate_when, gate_evaluation};
use agentic_eval::{
    FormulaRegistry, GateFacts, ResolvedRubric, RubricCriterion, RunScores, SCHEMA_CONTRACT_VALID, collect_run_scores,
    evaluate_run, judged_criteria, run_context, spec_of,
};
use agentic_judge::{Judge, JudgeCase, JudgeCriterion, sha256_hex};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

/// Scores runs of one workflow against its resolved rubric.
pub(crate) struct ScoringEvaluator {
    /// The rubric and where it came from.
    pub(crate) rubric: ResolvedRubric,
    /// Formulas (built-ins and the rubric's own).
    pub(crate) formulas: FormulaRegistry,
    /// The judge, or why there is none.
    pub(crate) judge: Result<Judge, String>,
    /// The dataset the inputs came from.
    pub(crate) dataset: Option<DatasetDescriptor>,
    /// The dataset sample, when there is one (the judge case id derives from it).
    pub(crate) sample: Option<String>,
}

impl ScoringEvaluator {
    /// The stable id of the judged case: the sample, or a hash of the inputs; the judge's
    /// presentation order derives from it, so a replayed run asks exactly what was recorded.
    fn case_id(&self, result: &WorkflowResult) -> String {
        match &self.sample {
            Some(sample) => format!("{}:{sample}", result.workflow),
            None => {
                let inputs = serde_json::to_string(&result.inputs).unwrap_or_default();
                format!("{}:inputs-{}", result.workflow, &sha256_hex(inputs.as_bytes())[..16])
            }
        }
    }

    /// Asks the judge about the judged criteria; returns raw scores, reasons for missing ones,
    /// and the judge's record (identities, usage, evidence).
    async fn judge(
        &self,
        workflow: &ValidatedWorkflow,
        result: &WorkflowResult,
        judged: &[&RubricCriterion],
    ) -> (BTreeMap<String, f64>, BTreeMap<String, String>, Value) {
        let mut scores = BTreeMap::new();
        let mut missing = BTreeMap::new();
        let miss_all = |reason: &str, missing: &mut BTreeMap<String, String>| {
            for criterion in judged {
                missing.insert(criterion.name.clone(), reason.to_owned());
            }
        };
        let judge = match &self.judge {
            Ok(judge) => judge,
            Err(reason) => {
                miss_all(reason, &mut missing);
                return (scores, missing, json!({"used": false, "reason": reason}));
            }
        };
        let mut criteria = Vec::new();
        for criterion in judged {
            let mut spec = spec_of(criterion);
            if spec.scale.is_none()
                && let Some((low, high)) = self.formulas.get(&criterion.formula_id).ok().and_then(|f| f.bounds())
            {
                spec.scale = Some([low, high]);
            }
            match JudgeCriterion::from_spec(&spec) {
                Ok(judge_criterion) => criteria.push(judge_criterion),
                Err(error) => {
                    missing.insert(criterion.name.clone(), format!("cannot be judged: {error}"));
                }
            }
        }
        if criteria.is_empty() {
            return (scores, missing, json!({"used": false, "reason": "no judgeable criteria"}));
        }
        let case = JudgeCase {
            id: self.case_id(result),
            task: task_text(workflow, result),
            candidate: candidate_text(result),
            reference: None,
            criteria,
        };
        match judge.grade(&case).await {
            Ok(verdict) => {
                let mut evidence = Map::new();
                for criterion in &verdict.criteria {
                    match criterion.score {
                        Some(score) => {
                            scores.insert(criterion.name.clone(), score);
                            evidence.insert(criterion.name.clone(), json!(criterion.evidence));
                        }
                        None => {
                            let reason = criterion.error.clone().unwrap_or_else(|| "no usable score".to_owned());
                            missing.insert(criterion.name.clone(), format!("the judge gave no usable score: {reason}"));
                        }
                    }
                }
                let record = json!({
                    "used": true,
                    "case_id": verdict.case_id,
                    "seed": verdict.seed,
                    "presented_order": verdict.presented_order,
                    "judges": verdict.judges,
                    "usage": verdict.usage,
                    "evidence": evidence,
                });
                (scores, missing, record)
            }
            Err(error) => {
                let reason = format!("the judge failed: {error}");
                miss_all(&reason, &mut missing);
                (scores, missing, json!({"used": true, "error": reason}))
            }
        }
    }
}

#[async_trait]
impl RunEvaluator for ScoringEvaluator {
    fn name(&self) -> &str {
        "scoring"
    }

    async fn evaluate(&self, workflow: &ValidatedWorkflow, result: &WorkflowResult) -> RunEvaluation {
        let rubric = &self.rubric.rubric;
        let judged = judged_criteria(rubric);
        let (judge_scores, judge_missing, judge_record) = if judged.is_empty() {
            (BTreeMap::new(), BTreeMap::new(), json!({"used": false, "reason": "no criterion is judged"}))
        } else {
            self.judge(workflow, result, &judged).await
        };
        let scores = collect_run_scores(rubric, result, &judge_scores, &judge_missing);
        let payload = scores.payload();
        let (facts, facts_record) = gate_facts(workflow, result);
        let run = agentic_eval::RunEvaluation {
            result: Some(result),
            workflow: Some(workflow.workflow()),
            payload: Some(&payload),
            payload_schema: None,
            dataset: self.dataset.as_ref(),
            facts: Some(&facts),
            rubric,
            pass_threshold: None,
        };
        match evaluate_run(&run, &self.formulas) {
            Ok(mut evaluation) => {
                explain_missing(&scores, &mut evaluation.hard_gate_reasons);
                let mut failures = evaluation.hard_gate_failures.clone();
                failures.extend(evaluation.floor_violations.iter().map(|name| format!("floor:{name}")));
                if !evaluation.passed && failures.is_empty() {
                    failures.push("below_pass_threshold".to_owned());
                }
                let mut report = serde_json::to_value(&evaluation).unwrap_or_else(|_| json!({}));
                if let Value::Object(map) = &mut report {
                    map.insert("evaluator".into(), json!("scoring"));
                    map.insert("rubric_source".into(), json!(self.rubric.source));
                    map.insert("score_sources".into(), json!(scores.origins));
                    map.insert("judge".into(), judge_record);
                    if !facts_record.is_empty() {
                        map.insert("facts".into(), Value::Object(facts_record));
                    }
                }
                RunEvaluation { passed: evaluation.passed, report, failures }
            }
            Err(error) => {
                // The rubric was validated when the run started, so this is a defect in the
                // scores (say, a raw score out of its formula's scale): report it, never pass.
                let mut fallback = gate_evaluation(result);
                fallback.passed = false;
                fallback.failures.push("scoring_error".to_owned());
                if let Value::Object(map) = &mut fallback.report {
                    map.insert("passed".into(), json!(false));
                    map.insert("scoring_error".into(), json!(error.to_string()));
                    map.insert("score_sources".into(), json!(scores.origins));
                    map.insert("judge".into(), judge_record);
                }
                fallback
            }
        }
    }
}

/// The gate evidence `evaluation.facts` points at, resolved on the finished run, and a record
/// of what each fact resolved to (or why it did not).
fn gate_facts(workflow: &ValidatedWorkflow, result: &WorkflowResult) -> (GateFacts, Map<String, Value>) {
    let mut facts = GateFacts::default();
    let mut record = Map::new();
    let Some(spec) = workflow.workflow().evaluation.as_ref().and_then(|evaluation| evaluation.facts.as_ref()) else {
        return (facts, record);
    };
    let context = run_context(result);
    fn resolve<T: serde::de::DeserializeOwned>(
        name: &str,
        text: &Option<String>,
        context: &Value,
        record: &mut Map<String, Value>,
    ) -> Option<T> {
        let text = text.as_ref()?;
        let value = Template::parse(text).map(|template| template.render(context)).unwrap_or(Value::Null);
        match serde_json::from_value::<T>(value.clone()) {
            Ok(parsed) => {
                record.insert(name.to_owned(), json!({"from": text, "value": value}));
                Some(parsed)
            }
            Err(error) => {
                record.insert(
                    name.to_owned(),
                    json!({"from": text, "value": value, "error": format!("not usable as `{name}`: {error}")}),
                );
                None
            }
        }
    }
    facts.swe_tests = resolve("swe_tests", &spec.swe_tests, &context, &mut record);
    facts.citations = resolve("citations", &spec.citations, &context, &mut record);
    facts.tool_calls = resolve("tool_calls", &spec.tool_calls, &context, &mut record);
    for (gate, condition) in &spec.gates {
        match evaluate_when(condition, &context) {
            Ok(verdict) => {
                facts.reported.insert(gate.clone(), verdict);
                record.insert(format!("gates.{gate}"), json!({"from": condition, "value": verdict}));
            }
            Err(error) => {
                record.insert(format!("gates.{gate}"), json!({"from": condition, "error": error}));
            }
        }
    }
    (facts, record)
}

/// Replaces the generic "payload does not score X" with where X's score was to come from and
/// why it did not.
fn explain_missing(scores: &RunScores, reasons: &mut BTreeMap<String, String>) {
    let missing = scores.missing();
    if missing.is_empty() || !reasons.contains_key(SCHEMA_CONTRACT_VALID) {
        return;
    }
    let listed: Vec<String> = missing.iter().map(|(name, reason)| format!("`{name}`: {reason}")).collect();
    reasons.insert(SCHEMA_CONTRACT_VALID.to_owned(), format!("criteria without a score: {}", listed.join("; ")));
}

/// What the workflow was asked to do: its name, description and inputs.
fn task_text(workflow: &ValidatedWorkflow, result: &WorkflowResult) -> String {
    let definition = workflow.workflow();
    let mut text = format!("Workflow `{}`", definition.name);
    if let Some(description) = &definition.description {
        text.push_str(&format!(": {}", description.trim()));
    }
    let inputs = serde_json::to_string_pretty(&result.inputs).unwrap_or_default();
    text.push_str(&format!("\n\nInputs:\n{inputs}"));
    text
}

/// What the workflow produced: its outputs (the run's answer), as JSON.
fn candidate_text(result: &WorkflowResult) -> String {
    if result.outputs.is_empty() {
        return "(the run produced no outputs)".to_owned();
    }
    serde_json::to_string_pretty(&result.outputs).unwrap_or_default()
}

/// The judge shared by every run of one `agentic run`, or why there is none.
pub(crate) type SharedJudge = Result<Judge, String>;

/// Wraps a judge for [`ScoringEvaluator`]s of several samples.
pub(crate) fn evaluator(
    rubric: &ResolvedRubric,
    formulas: &FormulaRegistry,
    judge: &SharedJudge,
    dataset: Option<&DatasetDescriptor>,
    sample: Option<&str>,
) -> Arc<dyn RunEvaluator> {
    Arc::new(ScoringEvaluator {
        rubric: rubric.clone(),
        formulas: formulas.clone(),
        judge: judge.clone(),
        dataset: dataset.cloned(),
        sample: sample.map(str::to_owned),
    })
}
