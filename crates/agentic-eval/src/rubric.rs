//! Rubrics: the criteria a run is scored on, with anchored scales, weights, floors and formulas.
//!
//! A rubric comes from (highest precedence first): a request override, the workflow's
//! `evaluation` block (a `rubric_id` from a rubric library, a `scoring_profile`, inline
//! `criteria` and `weights`), or the global default (the `default` profile).
//! Rubric files are YAML (`rubric_id`, `version`, `description?`, `criteria: [...]`,
//! `formulas?: [...]`, `pass_threshold?`), loaded with [`agentic_core::document::DocumentLoader`]
//! so every diagnostic carries a line and column; `agentic lint` checks them with
//! [`lint_rubric`].

use std::collections::{BTreeMap, BTreeSet};

use agentic_core::diagnostic::did_you_mean;
use agentic_core::document::DocumentLoader;
use agentic_core::workflow::{CriterionSpec, EvaluationSpec, FloorSpec, Version};
use agentic_core::yaml::pointer_segment;
use agentic_core::{Diagnostic, Position};
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::formula::{Formula, FormulaRegistry, UserFormula};
use crate::grade::normalized_floor;
use crate::profile::{DEFAULT_PROFILE, ProfileRegistry};

/// One validated rubric criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RubricCriterion {
    /// Criterion name.
    pub name: String,
    /// What the criterion measures.
    pub definition: Option<String>,
    /// What counts as evidence.
    pub evidence_required: Vec<String>,
    /// The raw scale `[min, max]`, when declared.
    pub scale: Option<[f64; 2]>,
    /// Anchor text per score point.
    pub anchors: IndexMap<String, String>,
    /// Positive weight.
    pub weight: f64,
    /// The floor as written (normalized, or `{raw: N}`).
    pub critical_floor: Option<FloorSpec>,
    /// The normalization formula.
    pub formula_id: String,
    /// Formula parameters.
    pub params: Option<Map<String, Value>>,
    /// Where a run's raw score comes from (`judge`, `metric.<name>`, `${...}`), as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_from: Option<String>,
}

/// A validated rubric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RubricDefinition {
    /// Rubric id.
    pub rubric_id: String,
    /// Rubric version.
    pub version: String,
    /// What the rubric is for.
    pub description: Option<String>,
    /// The criteria.
    pub criteria: Vec<RubricCriterion>,
    /// Pass threshold on 0..100 (default 70).
    pub pass_threshold: Option<f64>,
    /// Gates to evaluate besides the required five.
    #[serde(default)]
    pub extra_gates: Vec<String>,
}

impl RubricDefinition {
    /// The criterion `name`.
    pub fn criterion(&self, name: &str) -> Option<&RubricCriterion> {
        self.criteria.iter().find(|c| c.name == name)
    }

    /// The criterion names, in order.
    pub fn criterion_names(&self) -> Vec<String> {
        self.criteria.iter().map(|c| c.name.clone()).collect()
    }
}

/// The YAML shape of a rubric file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RubricFile {
    /// Rubric id, for example `fullstack_generation_v1`.
    pub rubric_id: String,
    /// Rubric version; a string or a number.
    pub version: Version,
    /// What the rubric is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The criteria.
    pub criteria: Vec<CriterionSpec>,
    /// Weighted score (0..100) a run needs to pass (default 70).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_threshold: Option<f64>,
    /// Formulas the criteria may use besides the built-ins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub formulas: Vec<UserFormula>,
}

/// Why a rubric could not be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RubricError {
    /// The criteria have problems.
    #[error("rubric `{rubric_id}` is invalid:\n{}", render(.diagnostics))]
    Invalid {
        /// The rubric.
        rubric_id: String,
        /// Every problem found.
        diagnostics: Vec<Diagnostic>,
    },
    /// A `rubric_id` names no known rubric.
    #[error("unknown rubric `{id}`; known rubrics: {known}")]
    UnknownRubric {
        /// The id asked for.
        id: String,
        /// Known ids.
        known: String,
    },
    /// A `scoring_profile` names no known profile.
    #[error("{0}")]
    UnknownProfile(String),
}

fn render(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| {
            if d.position.is_some() {
                return format!("  {d}");
            }
            let at = d.pointer.as_deref().map(|p| format!(" (at `{p}`)")).unwrap_or_default();
            let hint = d.hint.as_deref().map(|h| format!("\n    hint: {h}")).unwrap_or_default();
            format!("  {}[{}]: {}{at}{hint}", d.severity, d.code, d.message)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Infers a formula from a declared scale when `formula_id` is absent.
fn formula_for_scale(scale: [f64; 2]) -> Option<&'static str> {
    match scale {
        [1.0, 5.0] => Some("likert_1_5"),
        [-2.0, 2.0] => Some("likert_neg2_2"),
        [0.0, 5.0] => Some("scale_0_5"),
        [0.0, 1.0] => Some("zero_one"),
        _ => None,
    }
}

/// Validates criteria specs. Diagnostics carry JSON pointers under `base` (for example
/// `/criteria`); the caller adds positions. `require_weight`: a criterion without a weight is
/// an error (rubric files), rather than taking one from elsewhere.
pub fn validate_criteria(
    specs: &[CriterionSpec],
    base: &str,
    registry: &FormulaRegistry,
) -> (Vec<RubricCriterion>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut criteria = Vec::new();
    if specs.is_empty() {
        diagnostics.push(
            Diagnostic::error("no-criteria", "the rubric has no criteria")
                .at_pointer(base)
                .with_hint("add at least one criterion with a name, weight and formula_id"),
        );
    }
    let mut seen = BTreeSet::new();
    for (idx, spec) in specs.iter().enumerate() {
        let at =
            |field: &str| format!("{base}/{idx}{}", if field.is_empty() { String::new() } else { format!("/{field}") });
        let name = &spec.name;
        let mut ok = true;
        if name.trim().is_empty() {
            diagnostics
                .push(Diagnostic::error("invalid-value", "a criterion has an empty name").at_pointer(at("name")));
            ok = false;
        }
        if !seen.insert(name.as_str()) {
            diagnostics.push(
                Diagnostic::error("duplicate-criterion", format!("criterion `{name}` is declared twice"))
                    .at_pointer(at("name"))
                    .with_hint("give each criterion a unique name"),
            );
            ok = false;
        }
        let weight = match spec.weight {
            None => {
                diagnostics.push(
                    Diagnostic::error("missing-weight", format!("criterion `{name}` has no weight"))
                        .at_pointer(at(""))
                        .with_hint("add `weight:` with a positive number"),
                );
                ok = false;
                0.0
            }
            Some(weight) if !weight.is_finite() || weight <= 0.0 => {
                diagnostics.push(
                    Diagnostic::error(
                        "invalid-weight",
                        format!("weight of criterion `{name}` is {weight}; weights must be positive"),
                    )
                    .at_pointer(at("weight"))
                    .with_hint("use a positive weight, or drop the criterion"),
                );
                ok = false;
                weight
            }
            Some(weight) => weight,
        };
        let formula_id = match (&spec.formula_id, spec.scale) {
            (Some(id), _) => Some(id.clone()),
            (None, Some(scale)) => match formula_for_scale(scale) {
                Some(id) => Some(id.to_owned()),
                None => {
                    diagnostics.push(
                        Diagnostic::error(
                            "missing-formula",
                            format!("criterion `{name}` has scale {scale:?} and no `formula_id`"),
                        )
                        .at_pointer(at("scale"))
                        .with_hint(format!("add `formula_id:` naming one of: {}", registry.known())),
                    );
                    None
                }
            },
            (None, None) => {
                diagnostics.push(
                    Diagnostic::error(
                        "missing-formula",
                        format!("criterion `{name}` has neither `formula_id` nor `scale`"),
                    )
                    .at_pointer(at(""))
                    .with_hint(format!("add `formula_id:` naming one of: {}", registry.known())),
                );
                None
            }
        };
        let Some(formula_id) = formula_id else { continue };
        let Ok(formula) = registry.get(&formula_id) else {
            diagnostics.push(unknown_formula(spec, &formula_id, registry, at("formula_id")));
            continue;
        };
        if let Some(diagnostic) = scale_mismatch(spec, formula, &formula_id, at("scale")) {
            diagnostics.push(diagnostic);
            ok = false;
        }
        if let Some(points) = formula.anchor_points() {
            let written: Vec<f64> = spec.anchors.keys().filter_map(|key| key.trim().parse::<f64>().ok()).collect();
            let missing: Vec<String> =
                points.iter().filter(|p| !written.contains(&(**p as f64))).map(|p| p.to_string()).collect();
            if !missing.is_empty() {
                diagnostics.push(
                    Diagnostic::error(
                        "missing-anchors",
                        format!("criterion `{name}` has no anchor text for score point(s) {}", missing.join(", ")),
                    )
                    .at_pointer(if spec.anchors.is_empty() { at("") } else { at("anchors") })
                    .with_hint(format!(
                        "add `anchors:` with one description per point, for example `\"{}\": \"...\"`",
                        missing[0]
                    )),
                );
                ok = false;
            }
            for key in spec.anchors.keys() {
                if key.trim().parse::<f64>().is_ok_and(|p| !points.iter().any(|q| *q as f64 == p)) {
                    diagnostics.push(
                        Diagnostic::warning(
                            "anchor-outside-scale",
                            format!("criterion `{name}` has an anchor for `{key}`, outside the `{formula_id}` scale"),
                        )
                        .at_pointer(format!("{}/{}", at("anchors"), pointer_segment(key))),
                    );
                }
            }
        }
        if let Err(error) = formula.check_params(spec.params.as_ref()) {
            diagnostics.push(
                Diagnostic::error("invalid-params", format!("criterion `{name}`: {error}"))
                    .at_pointer(if spec.params.is_some() { at("params") } else { at("") }),
            );
            ok = false;
        }
        if let Some(floor) = &spec.critical_floor
            && let Err(message) = normalized_floor(floor, &formula_id, spec.params.as_ref(), registry)
        {
            {
                let code = match floor {
                    FloorSpec::Normalized(value) if *value > 1.0 => "ambiguous-floor",
                    _ => "invalid-floor",
                };
                diagnostics.push(
                    Diagnostic::error(code, format!("criterion `{name}`: {message}"))
                        .at_pointer(at("critical_floor"))
                        .with_hint("write a normalized floor in 0..1 (e.g. `0.7`) or a raw one as `{raw: 3}`"),
                );
                ok = false;
            }
        }
        if ok {
            criteria.push(RubricCriterion {
                name: name.clone(),
                definition: spec.definition.clone(),
                evidence_required: spec.evidence_required.clone(),
                scale: spec.scale,
                anchors: spec.anchors.clone(),
                weight,
                critical_floor: spec.critical_floor,
                formula_id,
                params: spec.params.clone(),
                score_from: spec.score_from.clone(),
            });
        }
    }
    (criteria, diagnostics)
}

fn unknown_formula(spec: &CriterionSpec, formula_id: &str, registry: &FormulaRegistry, pointer: String) -> Diagnostic {
    let hint = match did_you_mean(formula_id, registry.ids()) {
        Some(suggestion) => format!("did you mean `{suggestion}`? known formulas: {}", registry.known()),
        None => format!("known formulas: {}", registry.known()),
    };
    Diagnostic::error("unknown-formula", format!("criterion `{}` uses unknown formula `{formula_id}`", spec.name))
        .at_pointer(pointer)
        .with_hint(hint)
}

fn scale_mismatch(spec: &CriterionSpec, formula: &Formula, formula_id: &str, pointer: String) -> Option<Diagnostic> {
    let (scale, (min, max)) = (spec.scale?, formula.bounds()?);
    (scale[0] != min || scale[1] != max).then(|| {
        Diagnostic::error(
            "scale-mismatch",
            format!(
                "criterion `{}` declares scale [{}, {}] but formula `{formula_id}` takes {min}..{max}",
                spec.name, scale[0], scale[1]
            ),
        )
        .at_pointer(pointer)
        .with_hint("make `scale` and `formula_id` agree")
    })
}

/// The outcome of loading a rubric file.
#[derive(Debug)]
pub struct RubricLoad {
    /// The rubric, when it has no errors.
    pub rubric: Option<RubricDefinition>,
    /// The formulas the file registers, added to the registry given.
    pub registry: FormulaRegistry,
    /// Every problem, with file and position.
    pub diagnostics: Vec<Diagnostic>,
}

/// Loads and validates a rubric file; `file` names it in diagnostics.
pub fn load_rubric(text: &str, file: &str, registry: &FormulaRegistry) -> RubricLoad {
    let loader = DocumentLoader::new::<RubricFile>("rubric");
    let loaded = loader.load::<RubricFile>(text);
    let mut diagnostics = loaded.diagnostics;
    let mut registry = registry.clone();
    let structural_ok = loaded.value.is_some();
    let mut rubric = None;
    if let Some(parsed) = loaded.value.as_ref().or(loaded.repaired.as_ref()) {
        for (idx, formula) in parsed.formulas.iter().enumerate() {
            if let Err(error) = registry.register(formula.clone()) {
                diagnostics.push(
                    Diagnostic::error("invalid-formula", error.to_string()).at_pointer(format!("/formulas/{idx}")),
                );
            }
        }
        if parsed.rubric_id.trim().is_empty() {
            diagnostics.push(
                Diagnostic::error("invalid-value", "`rubric_id` is empty")
                    .at_pointer("/rubric_id")
                    .with_hint("name the rubric, for example `code_review_v1`"),
            );
        }
        if let Some(threshold) = parsed.pass_threshold
            && !(0.0..=100.0).contains(&threshold)
        {
            diagnostics.push(
                Diagnostic::error("invalid-value", format!("`pass_threshold` is {threshold}; it must be in 0..100"))
                    .at_pointer("/pass_threshold"),
            );
        }
        let (criteria, found) = validate_criteria(&parsed.criteria, "/criteria", &registry);
        diagnostics.extend(found);
        for (idx, spec) in parsed.criteria.iter().enumerate() {
            if let Some(Err(message)) = spec.score_from.as_deref().map(agentic_core::ScoreSource::parse) {
                diagnostics.push(
                    Diagnostic::error("invalid-score-source", format!("criterion `{}`: {message}", spec.name))
                        .at_pointer(format!("/criteria/{idx}/score_from"))
                        .with_hint("write `judge`, `metric.duration_s` (or another run metric), or one expression such as `${steps.tests.outputs.pass_rate}`"),
                );
            }
        }
        if structural_ok && !diagnostics.iter().any(Diagnostic::is_error) {
            rubric = Some(RubricDefinition {
                rubric_id: parsed.rubric_id.clone(),
                version: parsed.version.to_string(),
                description: parsed.description.clone(),
                criteria,
                pass_threshold: parsed.pass_threshold,
                extra_gates: Vec::new(),
            });
        }
    }
    for diagnostic in &mut diagnostics {
        if diagnostic.position.is_none() {
            let position = match (&loaded.document, &diagnostic.pointer) {
                (Some(document), Some(pointer)) => document.source_map.nearest(pointer),
                _ => Position::START,
            };
            diagnostic.position = Some(position);
        }
        diagnostic.file = Some(file.to_owned());
    }
    agentic_core::diagnostic::sort_diagnostics(&mut diagnostics);
    RubricLoad { rubric, registry, diagnostics }
}

/// True when `text` is a YAML mapping with a top-level `rubric_id` (how `agentic lint` tells
/// rubric files from workflows).
pub fn looks_like_rubric(text: &str) -> bool {
    // Also when it repeats a key (an error its lint reports with the rest).
    agentic_core::yaml::parse_yaml_recovering(text)
        .ok()
        .is_some_and(|(document, _)| document.value.as_object().is_some_and(|map| map.contains_key("rubric_id")))
}

/// Every problem in a rubric file, for `agentic lint`.
pub fn lint_rubric(text: &str, file: &str) -> Vec<Diagnostic> {
    load_rubric(text, file, &FormulaRegistry::builtin()).diagnostics
}

/// Checks what `agentic_core` does not check in a workflow's `evaluation` block: the scoring
/// profile id, and in each inline criterion the formula id, the scale against the formula,
/// given params, and the floor (a bare number above 1 is ambiguous). Fields an inline
/// criterion may inherit from a profile or rubric (weight, anchors) are not required here.
pub fn lint_workflow_evaluation(text: &str, file: &str) -> Vec<Diagnostic> {
    let Ok((document, _)) = agentic_core::yaml::parse_yaml_recovering(text) else {
        return Vec::new();
    };
    let Some(evaluation) = document.value.get("evaluation") else {
        return Vec::new();
    };
    let registry = FormulaRegistry::builtin();
    let mut diagnostics = Vec::new();
    if let Some(profile) = evaluation.get("scoring_profile").and_then(Value::as_str)
        && let Err(message) = ProfileRegistry::builtin().get(profile)
    {
        diagnostics.push(
            Diagnostic::error("unknown-profile", message)
                .at_pointer("/evaluation/scoring_profile")
                .with_hint("use a built-in profile (A, B, C, D, default)"),
        );
    }
    let criteria = evaluation.get("criteria").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (idx, item) in criteria.iter().enumerate() {
        let Ok(spec) = serde_json::from_value::<CriterionSpec>(item.clone()) else { continue };
        let at = |field: &str| format!("/evaluation/criteria/{idx}/{field}");
        let name = &spec.name;
        if let Some(FloorSpec::Normalized(value)) = spec.critical_floor
            && !(0.0..=1.0).contains(&value)
        {
            let code = if value > 1.0 { "ambiguous-floor" } else { "invalid-floor" };
            diagnostics.push(
                Diagnostic::error(
                    code,
                    format!("criterion `{name}`: critical_floor `{value}` is not on the normalized 0..1 scale"),
                )
                .at_pointer(at("critical_floor"))
                .with_hint(format!("write a normalized floor in 0..1, or a raw one as `{{raw: {value}}}`")),
            );
        }
        let formula_id = spec.formula_id.clone().or_else(|| spec.scale.and_then(formula_for_scale).map(str::to_owned));
        let Some(formula_id) = formula_id else { continue };
        let Ok(formula) = registry.get(&formula_id) else {
            diagnostics.push(unknown_formula(&spec, &formula_id, &registry, at("formula_id")));
            continue;
        };
        if let Some(diagnostic) = scale_mismatch(&spec, formula, &formula_id, at("scale")) {
            diagnostics.push(diagnostic);
        }
        if spec.params.is_some()
            && let Err(error) = formula.check_params(spec.params.as_ref())
        {
            diagnostics.push(
                Diagnostic::error("invalid-params", format!("criterion `{name}`: {error}")).at_pointer(at("params")),
            );
        }
        if let Some(floor @ FloorSpec::Raw { .. }) = &spec.critical_floor
            && let Err(message) = normalized_floor(floor, &formula_id, spec.params.as_ref(), &registry)
        {
            diagnostics.push(
                Diagnostic::error("invalid-floor", format!("criterion `{name}`: {message}"))
                    .at_pointer(at("critical_floor")),
            );
        }
    }
    // Resolve the block as `agentic run` will (a `rubric_id` needs the rubric library, which
    // lint does not have), so a criterion that cannot be scored is reported here, not first
    // at run time. Problems already reported above are not repeated.
    if evaluation.get("rubric_id").is_none()
        && let Ok(spec) = serde_json::from_value::<agentic_core::workflow::EvaluationSpec>(evaluation.clone())
    {
        let profiles = ProfileRegistry::builtin();
        let sources = RubricSources {
            request: None,
            workflow: Some(&spec),
            library: &BTreeMap::new(),
            profiles: &profiles,
            formulas: &registry,
        };
        if let Err(RubricError::Invalid { diagnostics: found, .. }) = resolve_rubric(&sources) {
            for diagnostic in found {
                let repeated = diagnostics.iter().any(|d| d.code == diagnostic.code && d.pointer == diagnostic.pointer);
                if !repeated {
                    diagnostics.push(diagnostic);
                }
            }
        }
    }
    for diagnostic in &mut diagnostics {
        let pointer = diagnostic.pointer.clone().unwrap_or_default();
        diagnostic.position = Some(document.source_map.nearest(&pointer));
        diagnostic.file = Some(file.to_owned());
    }
    diagnostics
}

/// Where a resolved rubric came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RubricSource {
    /// The request's explicit rubric.
    Request,
    /// The workflow's `evaluation` block.
    Workflow,
    /// The global default.
    GlobalDefault,
}

/// A rubric ready for scoring, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedRubric {
    /// The rubric.
    pub rubric: RubricDefinition,
    /// Where it came from.
    pub source: RubricSource,
}

/// What rubric resolution may draw on.
#[derive(Debug, Clone, Copy)]
pub struct RubricSources<'a> {
    /// An explicit rubric in the request: overrides everything.
    pub request: Option<&'a RubricDefinition>,
    /// The workflow's `evaluation` block.
    pub workflow: Option<&'a EvaluationSpec>,
    /// Rubrics by id, for `evaluation.rubric_id`.
    pub library: &'a BTreeMap<String, RubricDefinition>,
    /// Scoring profiles.
    pub profiles: &'a ProfileRegistry,
    /// Formulas.
    pub formulas: &'a FormulaRegistry,
}

/// The criterion as a workflow-style spec (every field filled in).
pub fn spec_of(criterion: &RubricCriterion) -> CriterionSpec {
    CriterionSpec {
        name: criterion.name.clone(),
        definition: criterion.definition.clone(),
        evidence_required: criterion.evidence_required.clone(),
        scale: criterion.scale,
        anchors: criterion.anchors.clone(),
        weight: Some(criterion.weight),
        critical_floor: criterion.critical_floor,
        formula_id: Some(criterion.formula_id.clone()),
        params: criterion.params.clone(),
        score_from: criterion.score_from.clone(),
    }
}

/// Resolves the rubric for one evaluation: request override, else the workflow's
/// `evaluation` block, else the global default.
///
/// In the workflow block, the base criteria come from `rubric_id` (the library), else from
/// `scoring_profile`; a profile also supplies criteria the base lacks. Inline `criteria`
/// replace base criteria of the same name (missing fields taken from the base) or add new
/// ones, and `weights` override any weight; a weight for an unknown criterion is an error.
pub fn resolve_rubric(sources: &RubricSources<'_>) -> Result<ResolvedRubric, RubricError> {
    if let Some(rubric) = sources.request {
        let specs: Vec<CriterionSpec> = rubric.criteria.iter().map(spec_of).collect();
        let (criteria, diagnostics) = validate_criteria(&specs, "/criteria", sources.formulas);
        if diagnostics.iter().any(Diagnostic::is_error) {
            return Err(RubricError::Invalid { rubric_id: rubric.rubric_id.clone(), diagnostics });
        }
        return Ok(ResolvedRubric {
            rubric: RubricDefinition { criteria, ..rubric.clone() },
            source: RubricSource::Request,
        });
    }
    let Some(evaluation) = sources.workflow else {
        let profile = sources.profiles.get(DEFAULT_PROFILE).map_err(RubricError::UnknownProfile)?;
        return build(
            "default",
            "1",
            &profile.criteria,
            &profile.extra_gates,
            None,
            sources.formulas,
            RubricSource::GlobalDefault,
        );
    };
    let mut rubric_id = "workflow".to_owned();
    let mut version = "1".to_owned();
    let mut base: Vec<CriterionSpec> = Vec::new();
    // Where each criterion of `base` was written, so a problem points at that place, not at
    // its index in the merged list.
    let mut origins: Vec<String> = Vec::new();
    let mut extra_gates: Vec<String> = Vec::new();
    let mut pass_threshold = None;
    if let Some(id) = &evaluation.rubric_id {
        let rubric = sources.library.get(id).ok_or_else(|| RubricError::UnknownRubric {
            id: id.clone(),
            known: sources.library.keys().cloned().collect::<Vec<_>>().join(", "),
        })?;
        rubric_id = rubric.rubric_id.clone();
        version = rubric.version.clone();
        base = rubric.criteria.iter().map(spec_of).collect();
        origins = vec!["/evaluation/rubric_id".to_owned(); base.len()];
        pass_threshold = rubric.pass_threshold;
        extra_gates.extend(rubric.extra_gates.iter().cloned());
    }
    if let Some(id) = &evaluation.scoring_profile {
        let profile = sources.profiles.get(id).map_err(RubricError::UnknownProfile)?;
        if evaluation.rubric_id.is_none() {
            rubric_id = format!("profile_{id}");
        }
        for criterion in &profile.criteria {
            if !base.iter().any(|c| c.name == criterion.name) {
                base.push(criterion.clone());
                origins.push("/evaluation/scoring_profile".to_owned());
            }
        }
        extra_gates.extend(profile.extra_gates.iter().cloned());
    }
    if evaluation.rubric_id.is_none() && evaluation.scoring_profile.is_none() && evaluation.criteria.is_empty() {
        let profile = sources.profiles.get(DEFAULT_PROFILE).map_err(RubricError::UnknownProfile)?;
        rubric_id = "default".to_owned();
        base = profile.criteria.clone();
        origins = vec!["/evaluation".to_owned(); base.len()];
    }
    for (idx, inline) in evaluation.criteria.iter().enumerate() {
        let origin = format!("/evaluation/criteria/{idx}");
        match base.iter().position(|c| c.name == inline.name) {
            Some(position) => {
                origins[position] = origin;
                let existing = &mut base[position];
                let merged = CriterionSpec {
                    name: inline.name.clone(),
                    definition: inline.definition.clone().or(existing.definition.take()),
                    evidence_required: if inline.evidence_required.is_empty() {
                        std::mem::take(&mut existing.evidence_required)
                    } else {
                        inline.evidence_required.clone()
                    },
                    scale: inline.scale.or(existing.scale),
                    anchors: if inline.anchors.is_empty() {
                        std::mem::take(&mut existing.anchors)
                    } else {
                        inline.anchors.clone()
                    },
                    weight: inline.weight.or(existing.weight),
                    critical_floor: inline.critical_floor.or(existing.critical_floor),
                    formula_id: inline.formula_id.clone().or(existing.formula_id.take()),
                    params: inline.params.clone().or(existing.params.take()),
                    score_from: inline.score_from.clone().or(existing.score_from.take()),
                };
                *existing = merged;
            }
            None => {
                base.push(inline.clone());
                origins.push(origin);
            }
        }
    }
    let mut unknown = Vec::new();
    for (name, weight) in &evaluation.weights {
        match base.iter_mut().find(|c| &c.name == name) {
            Some(criterion) => criterion.weight = Some(*weight),
            None => unknown.push(
                Diagnostic::error("unknown-criterion", format!("`weights` names unknown criterion `{name}`"))
                    .at_pointer(format!("/evaluation/weights/{}", pointer_segment(name)))
                    .with_hint(format!(
                        "known criteria: {}",
                        base.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
                    )),
            ),
        }
    }
    if evaluation.pass_threshold.is_some() {
        pass_threshold = evaluation.pass_threshold;
    }
    extra_gates.extend(evaluation.gates.iter().cloned());
    if !unknown.is_empty() {
        return Err(RubricError::Invalid { rubric_id, diagnostics: unknown });
    }
    let mut resolved =
        build(&rubric_id, &version, &base, &extra_gates, pass_threshold, sources.formulas, RubricSource::Workflow)
            .map_err(|error| relocate(error, &origins))?;
    resolved.rubric.extra_gates.dedup();
    Ok(resolved)
}

/// Points diagnostics about merged criterion `i` (`/evaluation/criteria/i/...`) at where that
/// criterion was written: its inline entry (keeping the field), else the profile or rubric.
fn relocate(error: RubricError, origins: &[String]) -> RubricError {
    let RubricError::Invalid { rubric_id, mut diagnostics } = error else { return error };
    for diagnostic in &mut diagnostics {
        let Some(rest) = diagnostic.pointer.as_deref().and_then(|p| p.strip_prefix("/evaluation/criteria/")) else {
            continue;
        };
        let (index, field) = rest.split_once('/').map_or((rest, ""), |(index, field)| (index, field));
        let Some(origin) = index.parse::<usize>().ok().and_then(|index| origins.get(index)) else { continue };
        diagnostic.pointer = Some(if origin.starts_with("/evaluation/criteria/") && !field.is_empty() {
            format!("{origin}/{field}")
        } else {
            origin.clone()
        });
    }
    RubricError::Invalid { rubric_id, diagnostics }
}

fn build(
    rubric_id: &str,
    version: &str,
    specs: &[CriterionSpec],
    extra_gates: &[String],
    pass_threshold: Option<f64>,
    formulas: &FormulaRegistry,
    source: RubricSource,
) -> Result<ResolvedRubric, RubricError> {
    let (criteria, diagnostics) = validate_criteria(specs, "/evaluation/criteria", formulas);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(RubricError::Invalid { rubric_id: rubric_id.to_owned(), diagnostics });
    }
    let mut gates: Vec<String> = Vec::new();
    for gate in extra_gates {
        if !gates.contains(gate) {
            gates.push(gate.clone());
        }
    }
    Ok(ResolvedRubric {
        rubric: RubricDefinition {
            rubric_id: rubric_id.to_owned(),
            version: version.to_owned(),
            description: None,
            criteria,
            pass_threshold,
            extra_gates: gates,
        },
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../examples/rubrics/fullstack_generation_v1.yaml");
    const BROKEN: &str = include_str!("../test_data/rubrics/err/ambiguous_floor.yaml");

    #[test]
    fn example_rubric_loads_with_user_formula() {
        let load = load_rubric(EXAMPLE, "r.yaml", &FormulaRegistry::builtin());
        assert!(load.diagnostics.is_empty(), "{:?}", load.diagnostics);
        let rubric = load.rubric.unwrap();
        assert_eq!(rubric.rubric_id, "fullstack_generation_v1");
        assert_eq!(rubric.version, "1");
        assert_eq!(rubric.criteria.len(), 5);
        assert_eq!(rubric.criterion("completeness").unwrap().formula_id, "likert_1_5", "inferred from scale [1, 5]");
        assert!(load.registry.get("percent").is_ok());
        assert!(looks_like_rubric(EXAMPLE));
        assert!(!looks_like_rubric("name: wf\nsteps: []\n"));
    }

    #[test]
    fn raw_floor_converts_and_ambiguous_floor_is_rejected() {
        let load = load_rubric(EXAMPLE, "r.yaml", &FormulaRegistry::builtin());
        let correctness = load.rubric.unwrap().criteria.remove(0);
        let floor = normalized_floor(
            &correctness.critical_floor.unwrap(),
            &correctness.formula_id,
            None,
            &FormulaRegistry::builtin(),
        )
        .unwrap();
        assert_eq!(floor, 0.5, "{{raw: 3}} on 1..5");
        let diagnostics = lint_rubric(BROKEN, "broken.yaml");
        let ambiguous = diagnostics.iter().find(|d| d.code == "ambiguous-floor").unwrap();
        assert_eq!(ambiguous.position, Some(Position { line: 8, column: 21 }));
        assert_eq!(ambiguous.file.as_deref(), Some("broken.yaml"));
    }

    #[test]
    fn structural_errors_keep_positions_and_semantic_checks_still_run() {
        let text = "rubric_id: r\nversion: 1\ncriteria:\n  - name: a\n    wieght: 1\n    formula_id: zero_one\n";
        let diagnostics = lint_rubric(text, "r.yaml");
        let unknown = diagnostics.iter().find(|d| d.code == "unknown-key").unwrap();
        assert_eq!(unknown.position.unwrap().line, 5);
        assert_eq!(unknown.hint.as_deref(), Some("did you mean `weight`?"));
        assert!(diagnostics.iter().any(|d| d.code == "missing-weight"), "{diagnostics:?}");
    }

    #[test]
    fn workflow_evaluation_blocks_are_linted() {
        let text = "name: wf\nsteps: []\nevaluation:\n  scoring_profile: E\n  criteria:\n    - name: correctness\n      critical_floor: 3\n    - {name: speed, formula_id: lower_is_bettr}\n    - {name: style, scale: [1, 5], critical_floor: {raw: 9}}\n";
        let diagnostics = lint_workflow_evaluation(text, "wf.yaml");
        let codes: Vec<(&str, usize)> =
            diagnostics.iter().map(|d| (d.code.as_str(), d.position.unwrap().line)).collect();
        assert_eq!(
            codes,
            [("unknown-profile", 4), ("ambiguous-floor", 7), ("unknown-formula", 8), ("invalid-floor", 9)],
            "{diagnostics:?}"
        );
        assert!(lint_workflow_evaluation("name: wf\nsteps: []\n", "wf.yaml").is_empty());
    }

    #[test]
    fn scale_and_formula_must_agree() {
        let text =
            "rubric_id: r\nversion: 1\ncriteria:\n  - {name: a, scale: [0, 10], formula_id: likert_1_5, weight: 1}\n";
        let diagnostics = lint_rubric(text, "r.yaml");
        assert!(diagnostics.iter().any(|d| d.code == "scale-mismatch"), "{diagnostics:?}");
        let text = "rubric_id: r\nversion: 1\ncriteria: []\n";
        assert!(lint_rubric(text, "r.yaml").iter().any(|d| d.code == "no-criteria"));
    }
}
