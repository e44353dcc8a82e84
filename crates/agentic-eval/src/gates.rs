//! Hard gates (`000` §3 Layer 0): binary checks that decide eligibility to pass.
//!
//! The five required gates are computed from a [`WorkflowResult`], the workflow's declared
//! outputs, the evaluation payload (checked against its published JSON Schema) and dataset
//! compatibility. Optional gates (`tests_fail_to_pass_all_green`,
//! `tests_pass_to_pass_threshold_met`, `citations_present_for_claims`,
//! `tool_call_schema_valid`) and profile extra gates are computed from [`GateFacts`] when
//! requested.
//!
//! **Invariant:** a gate that could not be evaluated is `false` with a reason that starts
//! with `not proven:`; missing evidence never passes a gate.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use agentic_core::dataset::{DatasetDescriptor, check_inputs, match_workflow_dataset};
use agentic_core::{StepStatus, Workflow, WorkflowResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::formula::TestCounts;

/// `required_outputs_present`: every required declared output resolved to a non-null value.
pub const REQUIRED_OUTPUTS_PRESENT: &str = "required_outputs_present";
/// `overall_status_success`: the run's overall status is `succeeded`.
pub const OVERALL_STATUS_SUCCESS: &str = "overall_status_success";
/// `no_critical_step_failures`: no critical step failed, errored, timed out or was cancelled.
pub const NO_CRITICAL_STEP_FAILURES: &str = "no_critical_step_failures";
/// `schema_contract_valid`: the evaluation payload matches its schema and scores every criterion.
pub const SCHEMA_CONTRACT_VALID: &str = "schema_contract_valid";
/// `dataset_workflow_compatible`: the dataset's fields (or the run's inputs) cover the workflow's required inputs.
pub const DATASET_WORKFLOW_COMPATIBLE: &str = "dataset_workflow_compatible";

/// The five required gates (`000` §3), in the order of the spec.
pub const REQUIRED_GATES: [&str; 5] = [
    REQUIRED_OUTPUTS_PRESENT,
    OVERALL_STATUS_SUCCESS,
    NO_CRITICAL_STEP_FAILURES,
    SCHEMA_CONTRACT_VALID,
    DATASET_WORKFLOW_COMPATIBLE,
];

/// `tests_fail_to_pass_all_green`: every FAIL_TO_PASS test passes (`== 1.0`).
pub const TESTS_FAIL_TO_PASS_ALL_GREEN: &str = "tests_fail_to_pass_all_green";
/// `tests_pass_to_pass_threshold_met`: PASS_TO_PASS ratio at or above the threshold (0.95).
pub const TESTS_PASS_TO_PASS_THRESHOLD_MET: &str = "tests_pass_to_pass_threshold_met";
/// `citations_present_for_claims`: every claim carries a citation.
pub const CITATIONS_PRESENT_FOR_CLAIMS: &str = "citations_present_for_claims";
/// `tool_call_schema_valid`: every tool call's arguments match the tool's JSON Schema.
pub const TOOL_CALL_SCHEMA_VALID: &str = "tool_call_schema_valid";
/// `outputs_parseable`: every output with a declared type holds a value of that type.
pub const OUTPUTS_PARSEABLE: &str = "outputs_parseable";

/// The optional gates this crate computes itself.
pub const OPTIONAL_GATES: [&str; 5] = [
    TESTS_FAIL_TO_PASS_ALL_GREEN,
    TESTS_PASS_TO_PASS_THRESHOLD_MET,
    CITATIONS_PRESENT_FOR_CLAIMS,
    TOOL_CALL_SCHEMA_VALID,
    OUTPUTS_PARSEABLE,
];

/// The PASS_TO_PASS threshold of `000` §13.
pub const DEFAULT_PASS_TO_PASS_THRESHOLD: f64 = 0.95;

/// FAIL_TO_PASS and PASS_TO_PASS counts of a SWE-style run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweTests {
    /// Tests the patch must make pass.
    pub fail_to_pass: TestCounts,
    /// Tests that passed before and must keep passing (an empty set counts as all green).
    pub pass_to_pass: TestCounts,
}

/// Claims in an answer and how many carry a citation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CitationCounts {
    /// Claims made.
    pub claims: u64,
    /// Claims with at least one citation.
    pub cited: u64,
}

/// One tool call with the schema of its tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRecord {
    /// Tool name.
    pub tool: String,
    /// The arguments as sent.
    pub arguments: Value,
    /// The tool's JSON Schema for its arguments.
    pub schema: Value,
}

/// Evidence for the optional and profile gates.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateFacts {
    /// Test counts for the SWE gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swe_tests: Option<SweTests>,
    /// PASS_TO_PASS threshold (default 0.95).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_to_pass_threshold: Option<f64>,
    /// Claims and citations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<CitationCounts>,
    /// Tool calls with their schemas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallRecord>>,
    /// Verdicts of gates evaluated elsewhere (a sandbox report, a hallucination checker), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reported: BTreeMap<String, bool>,
}

/// Everything the gates look at. Absent evidence makes the gates that need it "not proven".
#[derive(Debug, Clone, Copy, Default)]
pub struct GateInputs<'a> {
    /// The run.
    pub result: Option<&'a WorkflowResult>,
    /// The workflow (declared outputs and required inputs).
    pub workflow: Option<&'a Workflow>,
    /// The evaluation payload.
    pub payload: Option<&'a Value>,
    /// The schema the payload must match (default: the published evaluation payload schema).
    pub payload_schema: Option<&'a Value>,
    /// Criterion names the payload must score.
    pub expected_criteria: &'a [String],
    /// The dataset the run's inputs came from; without one the run's own inputs are checked.
    pub dataset: Option<&'a DatasetDescriptor>,
    /// Evidence for optional gates.
    pub facts: Option<&'a GateFacts>,
    /// Optional and profile gates to evaluate besides the required five.
    pub requested: &'a [String],
}

/// Gate verdicts with a reason for each failure.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct HardGateResult {
    /// Verdict by gate name.
    pub gates: BTreeMap<String, bool>,
    /// Why each failed gate failed.
    pub reasons: BTreeMap<String, String>,
}

impl HardGateResult {
    /// Names of failed gates, sorted.
    pub fn failures(&self) -> Vec<String> {
        self.gates.iter().filter(|(_, passed)| !**passed).map(|(name, _)| name.clone()).collect()
    }

    /// True when every gate passed.
    pub fn all_passed(&self) -> bool {
        self.gates.values().all(|passed| *passed)
    }

    fn set(&mut self, name: &str, verdict: Result<(), String>) {
        match verdict {
            Ok(()) => {
                self.gates.insert(name.to_owned(), true);
            }
            Err(reason) => {
                self.gates.insert(name.to_owned(), false);
                self.reasons.insert(name.to_owned(), reason);
            }
        }
    }
}

fn not_proven(what: &str) -> Result<(), String> {
    Err(format!("not proven: {what}"))
}

/// The published schema of the evaluation payload ([`crate::EvaluationPayload`]).
pub fn evaluation_payload_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(agentic_core::document::schema_for::<crate::EvaluationPayload>)
}

fn default_payload_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        jsonschema::options().build(evaluation_payload_schema()).expect("schemars emits a valid schema")
    })
}

/// Computes the five required gates and every requested optional or profile gate.
pub fn compute_hard_gates(inputs: &GateInputs<'_>) -> HardGateResult {
    let mut out = HardGateResult::default();
    out.set(REQUIRED_OUTPUTS_PRESENT, required_outputs_present(inputs));
    out.set(
        OVERALL_STATUS_SUCCESS,
        match inputs.result {
            None => not_proven("no workflow result"),
            Some(result) if result.overall_status == StepStatus::Succeeded => Ok(()),
            Some(result) => Err(format!("overall status is `{}`", result.overall_status.as_str())),
        },
    );
    out.set(
        NO_CRITICAL_STEP_FAILURES,
        match inputs.result {
            None => not_proven("no workflow result"),
            Some(result) => {
                let failed: Vec<String> = result
                    .steps
                    .iter()
                    .filter(|step| step.critical && step.status.is_failure())
                    .map(|step| format!("`{}` {}", step.name, step.status.as_str()))
                    .collect();
                if failed.is_empty() { Ok(()) } else { Err(format!("critical step(s) failed: {}", failed.join(", "))) }
            }
        },
    );
    out.set(SCHEMA_CONTRACT_VALID, schema_contract_valid(inputs));
    out.set(DATASET_WORKFLOW_COMPATIBLE, dataset_workflow_compatible(inputs));
    for gate in inputs.requested {
        if out.gates.contains_key(gate) {
            continue;
        }
        out.set(gate, optional_gate(gate, inputs));
    }
    out
}

fn required_outputs_present(inputs: &GateInputs<'_>) -> Result<(), String> {
    let (Some(result), Some(workflow)) = (inputs.result, inputs.workflow) else {
        return not_proven("needs both the workflow result and the workflow's declared outputs");
    };
    let mut missing: Vec<&str> = workflow
        .outputs
        .iter()
        .filter(|(_, spec)| spec.required)
        .filter(|(name, _)| result.outputs.get(name.as_str()).is_none_or(Value::is_null))
        .map(|(name, _)| name.as_str())
        .collect();
    for name in &result.unresolved_required_outputs {
        if !missing.contains(&name.as_str()) {
            missing.push(name);
        }
    }
    if missing.is_empty() { Ok(()) } else { Err(format!("required output(s) missing or null: {}", missing.join(", "))) }
}

fn schema_contract_valid(inputs: &GateInputs<'_>) -> Result<(), String> {
    let Some(payload) = inputs.payload else {
        return not_proven("no evaluation payload");
    };
    let custom;
    let validator = match inputs.payload_schema {
        Some(schema) => {
            custom = jsonschema::options()
                .build(schema)
                .map_err(|error| format!("not proven: the payload schema does not compile: {error}"))?;
            &custom
        }
        None => default_payload_validator(),
    };
    let problems: Vec<String> = validator
        .iter_errors(payload)
        .take(5)
        .map(|error| {
            let path = error.instance_path().as_str().to_owned();
            format!("{}: {error}", if path.is_empty() { "/".to_owned() } else { path })
        })
        .collect();
    if !problems.is_empty() {
        return Err(format!("payload does not match its schema: {}", problems.join("; ")));
    }
    let scores = payload.get("scores").and_then(Value::as_object);
    let missing: Vec<&str> = inputs
        .expected_criteria
        .iter()
        .filter(|name| scores.is_none_or(|scores| !scores.contains_key(name.as_str())))
        .map(String::as_str)
        .collect();
    if missing.is_empty() { Ok(()) } else { Err(format!("payload has no score for: {}", missing.join(", "))) }
}

fn dataset_workflow_compatible(inputs: &GateInputs<'_>) -> Result<(), String> {
    let Some(workflow) = inputs.workflow else {
        return not_proven("no workflow to check the dataset or inputs against");
    };
    match (inputs.dataset, inputs.result) {
        (Some(dataset), _) => {
            let (compatible, reasons) = match_workflow_dataset(workflow, dataset);
            if compatible {
                Ok(())
            } else {
                Err(format!("dataset `{}` does not cover the workflow's inputs: {}", dataset.id, reasons.join(", ")))
            }
        }
        (None, Some(result)) => {
            check_inputs(workflow, &result.inputs).map_err(|reasons| format!("run inputs: {}", reasons.join("; ")))
        }
        (None, None) => not_proven("neither a dataset descriptor nor the run's inputs"),
    }
}

fn optional_gate(gate: &str, inputs: &GateInputs<'_>) -> Result<(), String> {
    let facts = inputs.facts;
    if let Some(verdict) = facts.and_then(|facts| facts.reported.get(gate)) {
        return if *verdict { Ok(()) } else { Err("reported as failed".to_owned()) };
    }
    match gate {
        TESTS_FAIL_TO_PASS_ALL_GREEN => {
            let Some(tests) = facts.and_then(|facts| facts.swe_tests) else {
                return not_proven("no FAIL_TO_PASS test counts");
            };
            match tests.fail_to_pass.ratio() {
                None => not_proven("the FAIL_TO_PASS set is empty"),
                Some(ratio) if ratio >= 1.0 && tests.fail_to_pass.passed == tests.fail_to_pass.total => Ok(()),
                Some(_) => Err(format!(
                    "FAIL_TO_PASS {}/{} passed; all must pass",
                    tests.fail_to_pass.passed, tests.fail_to_pass.total
                )),
            }
        }
        TESTS_PASS_TO_PASS_THRESHOLD_MET => {
            let Some(facts) = facts else { return not_proven("no PASS_TO_PASS test counts") };
            let Some(tests) = facts.swe_tests else { return not_proven("no PASS_TO_PASS test counts") };
            let threshold = facts.pass_to_pass_threshold.unwrap_or(DEFAULT_PASS_TO_PASS_THRESHOLD);
            let ratio = tests.pass_to_pass.ratio().unwrap_or(1.0);
            if tests.pass_to_pass.passed > tests.pass_to_pass.total {
                Err("PASS_TO_PASS `passed` is greater than `total`".to_owned())
            } else if ratio >= threshold {
                Ok(())
            } else {
                Err(format!(
                    "PASS_TO_PASS {}/{} = {ratio:.3} < {threshold}",
                    tests.pass_to_pass.passed, tests.pass_to_pass.total
                ))
            }
        }
        CITATIONS_PRESENT_FOR_CLAIMS => match facts.and_then(|facts| facts.citations) {
            None => not_proven("no claim/citation counts"),
            Some(counts) if counts.cited >= counts.claims => Ok(()),
            Some(counts) => {
                Err(format!("{} of {} claims have no citation", counts.claims - counts.cited, counts.claims))
            }
        },
        TOOL_CALL_SCHEMA_VALID => {
            let Some(calls) = facts.and_then(|facts| facts.tool_calls.as_ref()) else {
                return not_proven("no tool call records");
            };
            let mut problems = Vec::new();
            for (idx, call) in calls.iter().enumerate() {
                match jsonschema::options().build(&call.schema) {
                    Err(error) => {
                        problems.push(format!("call {idx} `{}`: its schema does not compile: {error}", call.tool))
                    }
                    Ok(validator) => {
                        if let Some(error) = validator.iter_errors(&call.arguments).next() {
                            problems.push(format!("call {idx} `{}`: {error}", call.tool));
                        }
                    }
                }
            }
            if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
        }
        OUTPUTS_PARSEABLE => {
            let (Some(result), Some(workflow)) = (inputs.result, inputs.workflow) else {
                return not_proven("needs both the workflow result and the workflow's declared outputs");
            };
            let bad: Vec<String> = workflow
                .outputs
                .iter()
                .filter_map(|(name, spec)| {
                    let value = result.outputs.get(name.as_str()).filter(|v| !v.is_null());
                    match (value, spec.value_type) {
                        (None, _) if spec.required => Some(format!("`{name}` is missing")),
                        (Some(value), Some(kind)) if !kind.accepts(value) => {
                            Some(format!("`{name}` is not of type `{}`", kind.as_str()))
                        }
                        _ => None,
                    }
                })
                .collect();
            if bad.is_empty() { Ok(()) } else { Err(bad.join(", ")) }
        }
        other => not_proven(&format!(
            "no evaluator for gate `{other}`; report its verdict in `facts.reported` (known: {})",
            OPTIONAL_GATES.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn facts() -> GateFacts {
        GateFacts::default()
    }

    fn optional(gate: &str, facts: &GateFacts) -> (bool, Option<String>) {
        let requested = vec![gate.to_owned()];
        let result =
            compute_hard_gates(&GateInputs { facts: Some(facts), requested: &requested, ..GateInputs::default() });
        (result.gates[gate], result.reasons.get(gate).cloned())
    }

    #[test]
    fn swe_gates_follow_the_thresholds() {
        let mut with_tests = facts();
        with_tests.swe_tests = Some(SweTests {
            fail_to_pass: TestCounts { passed: 3, total: 3 },
            pass_to_pass: TestCounts { passed: 95, total: 100 },
        });
        assert_eq!(optional(TESTS_FAIL_TO_PASS_ALL_GREEN, &with_tests), (true, None));
        assert_eq!(optional(TESTS_PASS_TO_PASS_THRESHOLD_MET, &with_tests), (true, None));
        with_tests.swe_tests = Some(SweTests {
            fail_to_pass: TestCounts { passed: 2, total: 3 },
            pass_to_pass: TestCounts { passed: 94, total: 100 },
        });
        let (ok, reason) = optional(TESTS_FAIL_TO_PASS_ALL_GREEN, &with_tests);
        assert!(!ok && reason.unwrap().contains("2/3"));
        let (ok, reason) = optional(TESTS_PASS_TO_PASS_THRESHOLD_MET, &with_tests);
        assert!(!ok && reason.unwrap().contains("0.95"));
        let (ok, reason) = optional(TESTS_FAIL_TO_PASS_ALL_GREEN, &facts());
        assert!(!ok && reason.unwrap().starts_with("not proven"));
    }

    #[test]
    fn citations_and_tool_calls() {
        let mut evidence = facts();
        evidence.citations = Some(CitationCounts { claims: 4, cited: 3 });
        let (ok, reason) = optional(CITATIONS_PRESENT_FOR_CLAIMS, &evidence);
        assert!(!ok && reason.unwrap().contains("1 of 4"));
        let schema = json!({"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}});
        evidence.tool_calls = Some(vec![ToolCallRecord {
            tool: "weather".to_owned(),
            arguments: json!({"city": "Oslo"}),
            schema: schema.clone(),
        }]);
        assert_eq!(optional(TOOL_CALL_SCHEMA_VALID, &evidence), (true, None));
        evidence.tool_calls =
            Some(vec![ToolCallRecord { tool: "weather".to_owned(), arguments: json!({"town": "Oslo"}), schema }]);
        let (ok, reason) = optional(TOOL_CALL_SCHEMA_VALID, &evidence);
        assert!(!ok && reason.unwrap().contains("`weather`"));
    }

    #[test]
    fn reported_gates_and_unknown_gates() {
        let mut evidence = facts();
        evidence.reported.insert("sandbox_policy_respected".to_owned(), true);
        assert_eq!(optional("sandbox_policy_respected", &evidence), (true, None));
        let (ok, reason) = optional("patch_applies", &evidence);
        assert!(!ok);
        assert!(reason.unwrap().contains("report its verdict in `facts.reported`"));
    }

    #[test]
    fn nothing_proven_without_evidence() {
        let result = compute_hard_gates(&GateInputs::default());
        assert_eq!(result.gates.len(), REQUIRED_GATES.len());
        assert!(!result.all_passed());
        assert_eq!(result.failures().len(), 5);
        assert!(result.reasons.values().all(|reason| reason.starts_with("not proven")));
    }
}
