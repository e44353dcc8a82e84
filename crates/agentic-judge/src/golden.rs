//! Golden sets: candidates with human labels per criterion, the ground truth a judge is
//! calibrated against; and drift baselines: a judge's frozen scores on a golden set.
//!
//! Golden sets are YAML, loaded through [`agentic_core::document::DocumentLoader`] so every
//! problem is reported with its line and column.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use agentic_core::document::DocumentLoader;
use agentic_core::workflow::{CriterionSpec, Version};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::JudgeError;
use crate::judge::JudgeCase;
use crate::prompt::{JudgeCriterion, sha256_hex};

/// A golden set file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoldenSet {
    /// The set's id.
    pub golden_set_id: String,
    /// The set's version.
    pub version: Version,
    /// What the set is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The rubric criteria the labels use.
    pub criteria: Vec<CriterionSpec>,
    /// The labelled cases.
    pub cases: Vec<GoldenCase>,
}

/// One human-labelled case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoldenCase {
    /// A unique id.
    pub id: String,
    /// The task the system under test was given.
    pub task: String,
    /// A reference answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The output that was labelled.
    pub candidate: String,
    /// The human score per criterion.
    pub labels: BTreeMap<String, i64>,
    /// Why the labeller chose these scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

fn golden_loader() -> &'static DocumentLoader {
    static LOADER: OnceLock<DocumentLoader> = OnceLock::new();
    LOADER.get_or_init(|| DocumentLoader::new::<GoldenSet>("golden set"))
}

impl GoldenSet {
    /// Parses a golden set; `origin` names the file in diagnostics.
    pub fn parse(text: &str, origin: &str) -> Result<GoldenSet, JudgeError> {
        let loaded = golden_loader().load::<GoldenSet>(text);
        let render = |diagnostics: Vec<agentic_core::Diagnostic>| JudgeError::Document {
            kind: "golden set",
            path: origin.to_owned(),
            diagnostics: diagnostics.into_iter().map(|d| d.in_file(origin).to_string()).collect(),
        };
        let Some(set) = loaded.value.filter(|_| loaded.diagnostics.iter().all(|d| !d.is_error())) else {
            return Err(render(loaded.diagnostics));
        };
        let source_map = loaded.document.map(|d| d.source_map).unwrap_or_default();
        let mut problems = Vec::new();
        let mut at = |pointer: String, message: String, hint: &str| {
            problems.push(
                agentic_core::Diagnostic::error("invalid-golden-set", message)
                    .at(source_map.nearest(&pointer))
                    .at_pointer(pointer)
                    .with_hint(hint),
            );
        };
        let mut criteria = Vec::new();
        for (index, spec) in set.criteria.iter().enumerate() {
            match JudgeCriterion::from_spec(spec) {
                Ok(criterion) => criteria.push(criterion),
                Err(error) => {
                    at(format!("/criteria/{index}"), error.to_string(), "fix the criterion's scale or anchors")
                }
            }
        }
        if set.cases.is_empty() {
            at("/cases".into(), "the golden set has no cases".into(), "add labelled cases under `cases:`");
        }
        let mut ids = std::collections::BTreeSet::new();
        for (index, case) in set.cases.iter().enumerate() {
            if !ids.insert(case.id.as_str()) {
                at(
                    format!("/cases/{index}/id"),
                    format!("case id `{}` is used twice", case.id),
                    "give each case a unique id",
                );
            }
            for (name, label) in &case.labels {
                match criteria.iter().find(|c| &c.name == name) {
                    None => at(
                        format!("/cases/{index}/labels/{name}"),
                        format!("label `{name}` names no criterion of the set"),
                        "label only the criteria listed under `criteria:`",
                    ),
                    Some(criterion) if !(criterion.min..=criterion.max).contains(label) => at(
                        format!("/cases/{index}/labels/{name}"),
                        format!("label `{name}: {label}` is outside the scale {}..{}", criterion.min, criterion.max),
                        "use a score on the criterion's scale",
                    ),
                    Some(_) => {}
                }
            }
            if case.labels.is_empty() {
                at(
                    format!("/cases/{index}/labels"),
                    format!("case `{}` has no labels", case.id),
                    "label at least one criterion",
                );
            }
        }
        if problems.is_empty() { Ok(set) } else { Err(render(problems)) }
    }

    /// Reads a golden set file.
    pub fn load(path: &Path) -> Result<GoldenSet, JudgeError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| JudgeError::Io { path: path.display().to_string(), message: error.to_string() })?;
        GoldenSet::parse(&text, &path.display().to_string())
    }

    /// The criteria as the judge sees them.
    pub fn judge_criteria(&self) -> Vec<JudgeCriterion> {
        self.criteria.iter().filter_map(|spec| JudgeCriterion::from_spec(spec).ok()).collect()
    }

    /// The cases to judge.
    pub fn judge_cases(&self) -> Vec<JudgeCase> {
        let criteria = self.judge_criteria();
        self.cases
            .iter()
            .map(|case| JudgeCase {
                id: case.id.clone(),
                task: case.task.clone(),
                candidate: case.candidate.clone(),
                reference: case.reference.clone(),
                criteria: criteria.clone(),
            })
            .collect()
    }

    /// SHA-256 of the set's content, so a baseline knows which set it was made on.
    pub fn content_hash(&self) -> String {
        sha256_hex(serde_json::to_string(self).unwrap_or_default().as_bytes())
    }
}

/// A judge's frozen scores on a golden set, the reference for drift checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The golden set id.
    pub golden_set_id: String,
    /// The golden set's content hash.
    pub golden_hash: String,
    /// Who judged (`judge model@version prompt@version`), one line per judge.
    pub judges: Vec<String>,
    /// The run seed.
    pub seed: u64,
    /// Scores per case and criterion (`null` where the judge errored).
    pub scores: BTreeMap<String, BTreeMap<String, Option<f64>>>,
}

impl Baseline {
    /// Reads a baseline JSON file.
    pub fn load(path: &Path) -> Result<Baseline, JudgeError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| JudgeError::Io { path: path.display().to_string(), message: error.to_string() })?;
        serde_json::from_str(&text).map_err(|error| JudgeError::Document {
            kind: "drift baseline",
            path: path.display().to_string(),
            diagnostics: vec![format!(
                "{}:{}:{}: {error}; regenerate it with `agentic judge calibrate --write-baseline`",
                path.display(),
                error.line(),
                error.column()
            )],
        })
    }

    /// Writes the baseline as pretty JSON.
    pub fn save(&self, path: &Path) -> Result<(), JudgeError> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        std::fs::write(path, text + "\n")
            .map_err(|error| JudgeError::Io { path: path.display().to_string(), message: error.to_string() })
    }
}

/// Parses YAML (or JSON) into `T` via agentic-core's YAML reader; errors name the file, the
/// line and column when known, and the field.
pub(crate) fn parse_yaml<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, JudgeError> {
    let document = agentic_core::yaml::parse_yaml(text).map_err(|diagnostics| JudgeError::Document {
        kind: "YAML file",
        path: path.display().to_string(),
        diagnostics: diagnostics.into_iter().map(|d| d.in_file(path.display().to_string()).to_string()).collect(),
    })?;
    serde_json::from_value(document.value)
        .map_err(|error| JudgeError::Config { path: path.display().to_string(), message: error.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SET: &str = r#"golden_set_id: g
version: 1
criteria:
  - name: correctness
cases:
  - id: a
    task: t
    candidate: c
    labels: {correctness: 5}
"#;

    #[test]
    fn parses_a_small_set() {
        let set = GoldenSet::parse(SET, "g.yaml").unwrap();
        assert_eq!(set.cases.len(), 1);
        assert_eq!(set.judge_cases()[0].criteria[0].max, 5);
    }

    #[test]
    fn out_of_scale_label_is_reported_with_its_line() {
        let text = SET.replace("correctness: 5", "correctness: 7");
        let error = GoldenSet::parse(&text, "g.yaml").unwrap_err().to_string();
        assert!(error.contains("g.yaml:9:") && error.contains("outside the scale 1..5"), "{error}");
    }

    #[test]
    fn unknown_field_is_reported() {
        let text = SET.replace("candidate: c", "candidat: c");
        let error = GoldenSet::parse(&text, "g.yaml").unwrap_err().to_string();
        assert!(error.contains("candidat"), "{error}");
    }
}
