//! Datasets: sample files, their descriptor, and matching samples to workflow inputs.
//!
//! A dataset is a JSON file (`{"dataset": {...descriptor}, "samples": [...]}` or a bare
//! array of samples) or a JSONL file (one sample object per line). Each sample is an object
//! of fields; its `id` field (or its position) identifies it. These functions are pure:
//! callers read the file and pass its text.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::workflow::Workflow;

/// What a dataset is and which fields its samples have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DatasetDescriptor {
    /// Dataset id, for example `code_review_samples`.
    pub id: String,
    /// Dataset version.
    #[serde(default = "default_version")]
    pub version: String,
    /// What the dataset holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Field names every sample provides.
    #[serde(default)]
    pub fields: Vec<String>,
}

fn default_version() -> String {
    "1".to_owned()
}

/// One sample: an id and its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sample {
    /// The sample id (its `id` field, or its 1-based position).
    pub id: String,
    /// The sample's fields, `id` included when present.
    pub fields: Map<String, Value>,
}

/// A loaded dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Dataset {
    /// The descriptor (declared, or derived from the samples).
    pub descriptor: DatasetDescriptor,
    /// The samples in file order.
    pub samples: Vec<Sample>,
}

impl Dataset {
    /// The sample with id `id`.
    pub fn sample(&self, id: &str) -> Option<&Sample> {
        self.samples.iter().find(|sample| sample.id == id)
    }
}

/// Why a dataset file could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct DatasetError {
    /// 1-based line of the problem.
    pub line: usize,
    /// What is wrong and what to do.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DatasetFile {
    #[serde(default)]
    dataset: Option<DatasetDescriptor>,
    samples: Vec<Value>,
}

/// Parses a JSON dataset. `default_id` names it when the file declares no descriptor.
pub fn parse_dataset_json(text: &str, default_id: &str) -> Result<Dataset, DatasetError> {
    let value: Value = serde_json::from_str(text).map_err(|error| DatasetError {
        line: error.line(),
        message: format!("not valid JSON: {error}; a dataset is a JSON array of samples or {{\"dataset\": {{...}}, \"samples\": [...]}}"),
    })?;
    let (descriptor, samples) = match value {
        Value::Array(samples) => (None, samples),
        Value::Object(_) => {
            let file: DatasetFile = serde_json::from_value(value).map_err(|error| DatasetError {
                line: 1,
                message: format!(
                    "{error}; expected {{\"dataset\": {{\"id\", \"version\", \"fields\"}}, \"samples\": [...]}}"
                ),
            })?;
            (file.dataset, file.samples)
        }
        _ => {
            return Err(DatasetError { line: 1, message: "a dataset must be a JSON array or object".to_owned() });
        }
    };
    let samples =
        samples.into_iter().enumerate().map(|(idx, value)| to_sample(value, idx, 1)).collect::<Result<Vec<_>, _>>()?;
    Ok(finish(descriptor, samples, default_id))
}

/// Parses a JSONL dataset: one sample object per line; blank lines are skipped.
pub fn parse_dataset_jsonl(text: &str, default_id: &str) -> Result<Dataset, DatasetError> {
    let mut samples = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|error| DatasetError {
            line: idx + 1,
            message: format!("not valid JSON: {error}; each line must be one sample object"),
        })?;
        let position = samples.len();
        samples.push(to_sample(value, position, idx + 1)?);
    }
    Ok(finish(None, samples, default_id))
}

fn to_sample(value: Value, position: usize, line: usize) -> Result<Sample, DatasetError> {
    let Value::Object(fields) = value else {
        return Err(DatasetError { line, message: format!("sample {} is not a JSON object", position + 1) });
    };
    let id = match fields.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(Value::Number(id)) => id.to_string(),
        _ => (position + 1).to_string(),
    };
    Ok(Sample { id, fields })
}

fn finish(descriptor: Option<DatasetDescriptor>, samples: Vec<Sample>, default_id: &str) -> Dataset {
    let descriptor = descriptor.unwrap_or_else(|| {
        // Fields every sample has.
        let mut common: Option<BTreeSet<String>> = None;
        for sample in &samples {
            let keys: BTreeSet<String> = sample.fields.keys().filter(|k| *k != "id").cloned().collect();
            common = Some(match common {
                None => keys,
                Some(previous) => previous.intersection(&keys).cloned().collect(),
            });
        }
        DatasetDescriptor {
            id: default_id.to_owned(),
            version: default_version(),
            description: None,
            fields: common.unwrap_or_default().into_iter().collect(),
        }
    });
    Dataset { descriptor, samples }
}

/// Whether a dataset's fields cover the workflow's required inputs, with a reason for each
/// gap (`missing: code_file`). An input is covered by a field of its name or of an alias.
pub fn match_workflow_dataset(workflow: &Workflow, descriptor: &DatasetDescriptor) -> (bool, Vec<String>) {
    let fields: BTreeSet<&str> = descriptor.fields.iter().map(String::as_str).collect();
    let mut reasons = Vec::new();
    for (name, input) in &workflow.inputs {
        if !input.is_required() {
            continue;
        }
        let covered =
            fields.contains(name.as_str()) || input.aliases.iter().any(|alias| fields.contains(alias.as_str()));
        if !covered {
            reasons.push(format!("missing: {name}"));
        }
    }
    (reasons.is_empty(), reasons)
}

/// Maps a sample to workflow inputs: each input takes the field of its name, else of its
/// first alias present, else its default. Fields that match no input are ignored.
pub fn adapt_sample_to_workflow_inputs(workflow: &Workflow, sample: &Sample) -> Map<String, Value> {
    let mut inputs = Map::new();
    for (name, input) in &workflow.inputs {
        let value = std::iter::once(name)
            .chain(input.aliases.iter())
            .find_map(|field| sample.fields.get(field).cloned())
            .or_else(|| input.default.clone());
        if let Some(value) = value {
            inputs.insert(name.clone(), value);
        }
    }
    inputs
}

/// Whether a value counts as empty for a required input: null, a blank string, `[]`, `{}`.
pub fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.trim().is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// Checks resolved inputs against the workflow: every required input present and not empty,
/// types and `enum` respected. Returns one reason per problem.
pub fn check_inputs(workflow: &Workflow, inputs: &Map<String, Value>) -> Result<(), Vec<String>> {
    let mut reasons = Vec::new();
    for (name, input) in &workflow.inputs {
        match inputs.get(name) {
            None if input.is_required() => reasons.push(format!("missing required input `{name}`")),
            Some(value) if input.is_required() && is_empty_value(value) => {
                reasons.push(format!("required input `{name}` is empty"));
            }
            Some(value) if !value.is_null() => {
                if !input.value_type.accepts(value) {
                    reasons
                        .push(format!("input `{name}` must be of type `{}`, got {value}", input.value_type.as_str()));
                }
                if let Some(allowed) = &input.allowed
                    && !allowed.contains(value)
                {
                    let options: Vec<String> = allowed.iter().map(Value::to_string).collect();
                    reasons.push(format!("input `{name}` is {value}; allowed: {}", options.join(", ")));
                }
            }
            _ => {}
        }
    }
    for name in inputs.keys() {
        if !workflow.inputs.contains_key(name) {
            reasons.push(format!(
                "unknown input `{name}`; declared inputs: {}",
                workflow.inputs.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if reasons.is_empty() { Ok(()) } else { Err(reasons) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::workflow::InputSpec;

    fn workflow() -> Workflow {
        serde_json::from_value(json!({
            "name": "w",
            "inputs": {
                "code_file": {"type": "string", "required": true, "aliases": ["path"]},
                "focus": {"type": "string", "required": false}
            },
            "steps": [{"name": "s", "kind": "command", "argv": ["true"]}]
        }))
        .unwrap()
    }

    #[test]
    fn test_match_workflow_dataset_compatible() {
        let descriptor = DatasetDescriptor {
            id: "d".into(),
            version: "1".into(),
            description: None,
            fields: vec!["code_file".into()],
        };
        assert_eq!(match_workflow_dataset(&workflow(), &descriptor), (true, vec![]));
        let by_alias = DatasetDescriptor { fields: vec!["path".into()], ..descriptor };
        assert_eq!(match_workflow_dataset(&workflow(), &by_alias), (true, vec![]));
    }

    #[test]
    fn test_match_workflow_dataset_missing_field() {
        let descriptor =
            DatasetDescriptor { id: "d".into(), version: "1".into(), description: None, fields: vec!["focus".into()] };
        assert_eq!(match_workflow_dataset(&workflow(), &descriptor), (false, vec!["missing: code_file".to_owned()]));
    }

    #[test]
    fn test_reject_empty_required_adapted_input() {
        let sample = Sample { id: "1".into(), fields: json!({"code_file": "  "}).as_object().unwrap().clone() };
        let inputs = adapt_sample_to_workflow_inputs(&workflow(), &sample);
        assert_eq!(check_inputs(&workflow(), &inputs), Err(vec!["required input `code_file` is empty".to_owned()]));
    }

    #[test]
    fn test_accept_empty_optional_adapted_input() {
        let sample =
            Sample { id: "1".into(), fields: json!({"code_file": "a.py", "focus": ""}).as_object().unwrap().clone() };
        let inputs = adapt_sample_to_workflow_inputs(&workflow(), &sample);
        assert_eq!(check_inputs(&workflow(), &inputs), Ok(()));
    }

    #[test]
    fn test_accept_full_adapted_inputs() {
        let sample = Sample {
            id: "1".into(),
            fields: json!({"path": "a.py", "focus": "security", "extra": 1}).as_object().unwrap().clone(),
        };
        let inputs = adapt_sample_to_workflow_inputs(&workflow(), &sample);
        assert_eq!(inputs, *json!({"code_file": "a.py", "focus": "security"}).as_object().unwrap());
        assert_eq!(check_inputs(&workflow(), &inputs), Ok(()));
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let error = parse_dataset_jsonl("{\"a\": 1}\n\n{oops\n", "d").unwrap_err();
        assert_eq!(error.line, 3);
    }

    #[test]
    fn json_dataset_with_descriptor_and_derived_fields() {
        let dataset = parse_dataset_json(
            r#"{"dataset": {"id": "x", "version": "2", "fields": ["a"]}, "samples": [{"id": "s1", "a": 1}]}"#,
            "d",
        )
        .unwrap();
        assert_eq!(dataset.descriptor.id, "x");
        assert_eq!(dataset.sample("s1").unwrap().fields["a"], json!(1));
        let bare = parse_dataset_json(r#"[{"a": 1, "b": 2}, {"a": 3}]"#, "d").unwrap();
        assert_eq!(bare.descriptor.fields, vec!["a".to_owned()]);
        assert_eq!(bare.samples[1].id, "2");
    }

    #[test]
    fn default_fills_missing_optional_input() {
        let mut workflow = workflow();
        workflow.inputs.insert("depth".into(), InputSpec { default: Some(json!(2)), ..InputSpec::default() });
        let sample = Sample { id: "1".into(), fields: json!({"code_file": "a"}).as_object().unwrap().clone() };
        assert_eq!(adapt_sample_to_workflow_inputs(&workflow, &sample)["depth"], json!(2));
    }
}
