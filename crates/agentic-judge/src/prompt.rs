//! Anchored rubric prompts: minijinja templates with a version and a content hash, and the
//! criteria they are rendered with.
//!
//! A template's first line is a header comment `{#- prompt: <id>, version: <n> -#}`. The
//! rendered text has a line `=== user ===`: what comes before it is the system message, what
//! comes after is the user message. The hash is the SHA-256 of the template source, so any
//! edit changes the judge's identity (and its cache key).

use std::path::Path;
use std::sync::Arc;

use agentic_core::workflow::CriterionSpec;
use indexmap::IndexMap;
use minijinja::Environment;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::JudgeError;

/// The line that separates the system message from the user message in a rendered prompt.
pub const USER_SEPARATOR: &str = "=== user ===";

/// A prompt template with its identity, compiled once.
#[derive(Clone, Serialize)]
pub struct PromptTemplate {
    /// The template id from the header, for example `pointwise`.
    pub id: String,
    /// The version from the header.
    pub version: String,
    /// SHA-256 (hex) of the source.
    pub hash: String,
    /// The template source.
    #[serde(skip)]
    pub source: String,
    #[serde(skip)]
    environment: Arc<Environment<'static>>,
}

impl std::fmt::Debug for PromptTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptTemplate")
            .field("id", &self.id)
            .field("version", &self.version)
            .field("hash", &self.hash)
            .finish()
    }
}

impl PartialEq for PromptTemplate {
    fn eq(&self, other: &PromptTemplate) -> bool {
        self.hash == other.hash && self.id == other.id && self.version == other.version
    }
}

impl Eq for PromptTemplate {}

impl PromptTemplate {
    /// Parses a template source; `origin` names it in errors.
    pub fn parse(source: &str, origin: &str) -> Result<PromptTemplate, JudgeError> {
        let header = source.lines().next().unwrap_or_default();
        let inner =
            header.trim().trim_start_matches("{#").trim_start_matches('-').trim_end_matches("#}").trim_end_matches('-');
        let mut id = None;
        let mut version = None;
        for part in inner.split(',') {
            if let Some((key, value)) = part.split_once(':') {
                match key.trim() {
                    "prompt" => id = Some(value.trim().to_owned()),
                    "version" => version = Some(value.trim().to_owned()),
                    _ => {}
                }
            }
        }
        let (Some(id), Some(version)) = (id, version) else {
            return Err(JudgeError::Template {
                template: origin.to_owned(),
                message: "the first line must be `{#- prompt: <id>, version: <n> -#}`".into(),
            });
        };
        // Compiled once here, so a syntax error is reported when the template is loaded.
        let mut environment = Environment::new();
        environment.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        environment
            .add_template_owned(id.clone(), source.to_owned())
            .map_err(|error| JudgeError::Template { template: origin.to_owned(), message: error.to_string() })?;
        Ok(PromptTemplate {
            id,
            version,
            hash: sha256_hex(source.as_bytes()),
            source: source.to_owned(),
            environment: Arc::new(environment),
        })
    }

    /// Reads a template file.
    pub fn load(path: &Path) -> Result<PromptTemplate, JudgeError> {
        let source = std::fs::read_to_string(path)
            .map_err(|error| JudgeError::Io { path: path.display().to_string(), message: error.to_string() })?;
        PromptTemplate::parse(&source, &path.display().to_string())
    }

    /// The built-in pointwise rubric prompt.
    pub fn pointwise() -> PromptTemplate {
        PromptTemplate::parse(include_str!("../templates/pointwise.j2"), "pointwise.j2")
            .expect("built-in template parses")
    }

    /// The built-in pairwise comparison prompt.
    pub fn pairwise() -> PromptTemplate {
        PromptTemplate::parse(include_str!("../templates/pairwise.j2"), "pairwise.j2")
            .expect("built-in template parses")
    }

    /// The built-in repair prompt (sent once after an unusable reply).
    pub fn repair() -> PromptTemplate {
        PromptTemplate::parse(include_str!("../templates/repair.j2"), "repair.j2").expect("built-in template parses")
    }

    /// `id@version`, the prompt version logged with every verdict.
    pub fn label(&self) -> String {
        format!("{}@{}", self.id, self.version)
    }

    /// Renders the template with `context`; returns (system, user). Without a separator line,
    /// everything is the user message.
    pub fn render(&self, context: &impl Serialize) -> Result<(String, String), JudgeError> {
        let rendered = self
            .environment
            .get_template(&self.id)
            .and_then(|template| template.render(minijinja::value::Serde(context)))
            .map_err(|error| JudgeError::Template { template: self.label(), message: error.to_string() })?;
        Ok(match rendered.split_once(USER_SEPARATOR) {
            Some((system, user)) => (system.trim().to_owned(), user.trim().to_owned()),
            None => (String::new(), rendered.trim().to_owned()),
        })
    }
}

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// One criterion as the judge sees it: an integer scale with an anchor per point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeCriterion {
    /// Criterion name.
    pub name: String,
    /// What it measures.
    #[serde(default)]
    pub definition: Option<String>,
    /// What counts as evidence.
    #[serde(default)]
    pub evidence_required: Vec<String>,
    /// Lowest score.
    pub min: i64,
    /// Highest score.
    pub max: i64,
    /// Anchor text per point, as `{point, text}` in ascending order.
    pub anchors: Vec<Anchor>,
}

/// The meaning of one score point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// The score.
    pub point: i64,
    /// What it means.
    pub text: String,
}

/// The anchored 1..5 scale of the reference guide (§7), used when a criterion has none.
pub fn default_anchors() -> IndexMap<String, String> {
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

impl JudgeCriterion {
    /// Converts a rubric criterion. The scale defaults to 1..5; points without an anchor get
    /// the reference guide's anchor when the scale is 1..5, and an error otherwise.
    pub fn from_spec(spec: &CriterionSpec) -> Result<JudgeCriterion, JudgeError> {
        let [low, high] = spec.scale.unwrap_or([1.0, 5.0]);
        if low.fract() != 0.0 || high.fract() != 0.0 || low >= high || high - low > 100.0 {
            return Err(JudgeError::Input(format!(
                "criterion `{}` has scale [{low}, {high}]; a judged criterion needs an integer scale such as [1, 5]",
                spec.name
            )));
        }
        let (min, max) = (low as i64, high as i64);
        let defaults = default_anchors();
        let mut anchors = Vec::new();
        for point in min..=max {
            let key = point.to_string();
            let text = match spec.anchors.get(&key) {
                Some(text) => text.clone(),
                None if (min, max) == (1, 5) => defaults[&key].clone(),
                None => {
                    return Err(JudgeError::Input(format!(
                        "criterion `{}` has no anchor for score `{point}`; add `anchors: {{\"{point}\": ...}}`",
                        spec.name
                    )));
                }
            };
            anchors.push(Anchor { point, text });
        }
        Ok(JudgeCriterion {
            name: spec.name.clone(),
            definition: spec.definition.clone(),
            evidence_required: spec.evidence_required.clone(),
            min,
            max,
            anchors,
        })
    }

    /// A 1..5 criterion with the default anchors.
    pub fn likert(name: impl Into<String>, definition: impl Into<String>) -> JudgeCriterion {
        let spec = CriterionSpec { name: name.into(), definition: Some(definition.into()), ..CriterionSpec::default() };
        JudgeCriterion::from_spec(&spec).expect("the default scale is valid")
    }
}

/// SHA-256 of the criteria as judged (names, scales, anchors, definitions), in declared order.
pub fn rubric_hash(criteria: &[JudgeCriterion]) -> String {
    sha256_hex(serde_json::to_string(criteria).unwrap_or_default().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_templates_have_ids_versions_and_hashes() {
        let template = PromptTemplate::pointwise();
        assert_eq!(template.label(), "pointwise@1");
        assert_eq!(template.hash.len(), 64);
        assert_ne!(template.hash, PromptTemplate::pairwise().hash);
    }

    #[test]
    fn a_template_without_header_is_refused() {
        let error = PromptTemplate::parse("hello {{ x }}", "mine.j2").unwrap_err();
        assert!(error.to_string().contains("prompt: <id>"), "{error}");
    }

    #[test]
    fn render_splits_system_and_user() {
        let template =
            PromptTemplate::parse("{#- prompt: t, version: 2 -#}\nsys {{ a }}\n=== user ===\nuser {{ a }}", "t")
                .unwrap();
        let (system, user) = template.render(&serde_json::json!({"a": 1})).unwrap();
        assert_eq!((system.as_str(), user.as_str()), ("sys 1", "user 1"));
        let error = template.render(&serde_json::json!({})).unwrap_err();
        assert!(error.to_string().contains("t@2"), "{error}");
    }

    #[test]
    fn criterion_anchors_default_on_1_to_5_and_are_required_elsewhere() {
        let criterion = JudgeCriterion::likert("correctness", "right");
        assert_eq!(criterion.anchors.len(), 5);
        let spec = CriterionSpec { name: "x".into(), scale: Some([0.0, 2.0]), ..CriterionSpec::default() };
        let error = JudgeCriterion::from_spec(&spec).unwrap_err();
        assert!(error.to_string().contains("no anchor for score `0`"), "{error}");
    }
}
