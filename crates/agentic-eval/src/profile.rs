//! Scoring profiles: workflow-family templates of criteria, weights and extra gates.
//!
//! The built-in profiles `A`..`D` are `000` §6 as data (decision 1 of the seeds README):
//! A code repair / SWE, B DAG generation and review, C RAG, D agentic tool use. A `default`
//! profile carries the global default rubric. Profiles are plain data: a user can add a
//! profile or replace a built-in one with [`ProfileRegistry::insert`].

use std::collections::BTreeMap;

use agentic_core::workflow::{CriterionSpec, FloorSpec};
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A scoring profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScoringProfile {
    /// Profile id (`A`..`D`, `default`, or a user's).
    pub id: String,
    /// What the profile is for.
    pub description: String,
    /// The criteria with their default weights and formulas.
    pub criteria: Vec<CriterionSpec>,
    /// Gates the profile adds to the five required ones.
    #[serde(default)]
    pub extra_gates: Vec<String>,
}

impl ScoringProfile {
    /// The weight of criterion `name`.
    pub fn weight(&self, name: &str) -> Option<f64> {
        self.criteria.iter().find(|c| c.name == name).and_then(|c| c.weight)
    }
}

/// The anchored 1..5 semantic scale of `000` §7, used by the built-in likert criteria.
pub fn default_likert_anchors() -> IndexMap<String, String> {
    [
        ("1", "fails core requirement, major errors"),
        ("2", "partially correct, significant gaps"),
        ("3", "acceptable baseline, clear issues remain"),
        ("4", "strong quality, minor issues"),
        ("5", "excellent, complete and robust"),
    ]
    .into_iter()
    .map(|(point, text)| (point.to_owned(), text.to_owned()))
    .collect()
}

/// The floor on correctness criteria (`000` §5 and §13).
pub const CORRECTNESS_FLOOR: f64 = 0.70;
/// The floor on safety/validation criteria (`000` §5 and §13).
pub const SAFETY_FLOOR: f64 = 0.80;

fn likert(name: &str, weight: f64, definition: &str) -> CriterionSpec {
    CriterionSpec {
        name: name.to_owned(),
        definition: Some(definition.to_owned()),
        evidence_required: vec![format!("judge rationale citing the output for `{name}`")],
        scale: Some([1.0, 5.0]),
        anchors: default_likert_anchors(),
        weight: Some(weight),
        critical_floor: None,
        formula_id: Some("likert_1_5".to_owned()),
        params: None,
        score_from: None,
    }
}

fn metric(name: &str, weight: f64, definition: &str) -> CriterionSpec {
    CriterionSpec {
        name: name.to_owned(),
        definition: Some(definition.to_owned()),
        evidence_required: vec![format!("measured value of `{name}`")],
        scale: Some([0.0, 1.0]),
        anchors: IndexMap::new(),
        weight: Some(weight),
        critical_floor: None,
        formula_id: Some("zero_one".to_owned()),
        params: None,
        score_from: None,
    }
}

fn with_floor(mut criterion: CriterionSpec, floor: f64) -> CriterionSpec {
    criterion.critical_floor = Some(FloorSpec::Normalized(floor));
    criterion
}

fn gates(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// The id of the global default profile.
pub const DEFAULT_PROFILE: &str = "default";

/// The built-in profiles `A`..`D` of `000` §6 and the global `default`.
pub fn builtin_profiles() -> Vec<ScoringProfile> {
    vec![
        ScoringProfile {
            id: "A".to_owned(),
            description: "code repair / SWE-style iterative workflows (test-dominant)".to_owned(),
            criteria: vec![
                metric("objective_tests", 0.60, "share of the target tests that pass (FAIL_TO_PASS and PASS_TO_PASS)"),
                likert("judge_quality", 0.25, "judge rubric on the quality of the patch"),
                metric("patch_similarity", 0.10, "patch similarity / semantic diff quality against the reference"),
                metric("efficiency", 0.05, "efficiency and cost, normalized (use lower_is_better with SLOs)"),
            ],
            extra_gates: gates(&[
                "patch_applies",
                crate::gates::TESTS_FAIL_TO_PASS_ALL_GREEN,
                crate::gates::TESTS_PASS_TO_PASS_THRESHOLD_MET,
                "sandbox_policy_respected",
            ]),
        },
        ScoringProfile {
            id: "B".to_owned(),
            description: "DAG generation / review workflows (non-executable dominant)".to_owned(),
            criteria: vec![
                with_floor(
                    likert("correctness_rubric", 0.35, "output satisfies the functional requirements"),
                    CORRECTNESS_FLOOR,
                ),
                likert("completeness_rubric", 0.25, "every requested part is present"),
                metric("tool_data_precision", 0.20, "precision of tool use and data references"),
                likert("documentation_quality", 0.10, "documentation and communication quality"),
                metric("efficiency", 0.10, "efficiency and cost, normalized"),
            ],
            extra_gates: gates(&[crate::gates::OUTPUTS_PARSEABLE]),
        },
        ScoringProfile {
            id: "C".to_owned(),
            description: "RAG workflows".to_owned(),
            criteria: vec![
                metric("faithfulness", 0.35, "answer grounded in the retrieved context"),
                metric("response_relevance", 0.25, "answer addresses the question"),
                metric("context_precision", 0.20, "retrieved context is relevant"),
                metric("context_recall", 0.10, "retrieved context covers what is needed"),
                metric("efficiency", 0.10, "efficiency and cost, normalized"),
            ],
            extra_gates: gates(&[
                "answer_grounded",
                crate::gates::CITATIONS_PRESENT_FOR_CLAIMS,
                "hallucination_check_clear",
            ]),
        },
        ScoringProfile {
            id: "D".to_owned(),
            description: "agentic tool-use and routing workflows".to_owned(),
            criteria: vec![
                metric("tool_selection_accuracy", 0.25, "the right tool chosen for each step"),
                metric("argument_correctness", 0.25, "argument correctness / F1 of tool calls"),
                metric("handoff_accuracy", 0.20, "handoffs go to the right agent"),
                with_floor(
                    metric("final_task_correctness", 0.20, "the task is done correctly in the end"),
                    CORRECTNESS_FLOOR,
                ),
                metric("efficiency", 0.10, "efficiency and cost, normalized"),
            ],
            extra_gates: gates(&[
                crate::gates::TOOL_CALL_SCHEMA_VALID,
                "forbidden_tools_unused",
                "handoff_rules_respected",
            ]),
        },
        ScoringProfile {
            id: DEFAULT_PROFILE.to_owned(),
            description: "global default rubric for workflows that declare no evaluation".to_owned(),
            criteria: vec![
                with_floor(
                    likert("correctness", 0.40, "output satisfies the functional requirements and constraints"),
                    CORRECTNESS_FLOOR,
                ),
                likert("completeness", 0.20, "every requested part is present"),
                with_floor(likert("safety", 0.20, "no unsafe or invalid actions or content"), SAFETY_FLOOR),
                likert("clarity", 0.10, "clear, well-structured communication"),
                metric("efficiency", 0.10, "efficiency and cost, normalized"),
            ],
            extra_gates: Vec::new(),
        },
    ]
}

/// Profiles by id.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileRegistry {
    profiles: BTreeMap<String, ScoringProfile>,
}

impl Default for ProfileRegistry {
    fn default() -> Self {
        ProfileRegistry::builtin()
    }
}

impl ProfileRegistry {
    /// The built-in profiles.
    pub fn builtin() -> ProfileRegistry {
        ProfileRegistry { profiles: builtin_profiles().into_iter().map(|p| (p.id.clone(), p)).collect() }
    }

    /// Adds a profile, replacing one of the same id.
    pub fn insert(&mut self, profile: ScoringProfile) {
        self.profiles.insert(profile.id.clone(), profile);
    }

    /// The profile `id`, or an error message listing the known ids.
    pub fn get(&self, id: &str) -> Result<&ScoringProfile, String> {
        self.profiles.get(id).ok_or_else(|| format!("unknown scoring profile `{id}`; known profiles: {}", self.known()))
    }

    /// The profile `id`, falling back to `default` with a warning when it is unknown.
    pub fn get_or_default(&self, id: &str) -> (&ScoringProfile, Option<String>) {
        match self.get(id) {
            Ok(profile) => (profile, None),
            Err(message) => (&self.profiles[DEFAULT_PROFILE], Some(format!("{message}; using `{DEFAULT_PROFILE}`"))),
        }
    }

    /// The known ids, comma separated.
    pub fn known(&self) -> String {
        self.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(profile: &ScoringProfile) -> f64 {
        profile.criteria.iter().filter_map(|c| c.weight).sum()
    }

    #[test]
    fn test_profile_a_weights_sum_to_one() {
        let registry = ProfileRegistry::builtin();
        let profile = registry.get("A").unwrap();
        assert!((sum(profile) - 1.0).abs() < 1e-9);
        assert_eq!(profile.weight("objective_tests"), Some(0.60));
        for id in ["B", "C", "D", DEFAULT_PROFILE] {
            assert!((sum(registry.get(id).unwrap()) - 1.0).abs() < 1e-9, "profile {id}");
        }
    }

    #[test]
    fn test_profile_b_weights_correct() {
        let registry = ProfileRegistry::builtin();
        let profile = registry.get("B").unwrap();
        assert_eq!(profile.weight("correctness_rubric"), Some(0.35));
        assert_eq!(profile.weight("completeness_rubric"), Some(0.25));
        assert_eq!(profile.weight("tool_data_precision"), Some(0.20));
        assert_eq!(profile.weight("documentation_quality"), Some(0.10));
        assert_eq!(profile.weight("efficiency"), Some(0.10));
    }

    #[test]
    fn test_get_unknown_profile_fallback() {
        let registry = ProfileRegistry::builtin();
        let (profile, warning) = registry.get_or_default("Z");
        assert_eq!(profile.id, DEFAULT_PROFILE);
        let warning = warning.unwrap();
        assert!(warning.contains("`Z`") && warning.contains("A, B, C, D"), "{warning}");
        assert!(registry.get("Z").is_err());
    }

    #[test]
    fn test_profile_extra_gates_included() {
        let registry = ProfileRegistry::builtin();
        let gates = &registry.get("A").unwrap().extra_gates;
        assert!(gates.iter().any(|g| g == crate::gates::TESTS_FAIL_TO_PASS_ALL_GREEN), "{gates:?}");
        assert!(gates.iter().any(|g| g == crate::gates::TESTS_PASS_TO_PASS_THRESHOLD_MET), "{gates:?}");
        assert!(registry.get("D").unwrap().extra_gates.iter().any(|g| g == crate::gates::TOOL_CALL_SCHEMA_VALID));
    }

    #[test]
    fn user_profiles_replace_builtins() {
        let mut registry = ProfileRegistry::builtin();
        let mut custom = registry.get("C").unwrap().clone();
        custom.criteria.truncate(2);
        registry.insert(custom);
        assert_eq!(registry.get("C").unwrap().criteria.len(), 2);
    }
}
