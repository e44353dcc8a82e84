//! The structured replies a judge must give: their JSON Schema (generated with schemars and
//! narrowed to the rubric's criterion names and scales), and their validation.
//!
//! A reply is usable only when it validates against that schema and names every criterion
//! exactly once. Models often wrap JSON in a Markdown fence; the fence is removed before
//! parsing, nothing else is forgiven.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::prompt::JudgeCriterion;

/// A pointwise reply: one score per criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PointwiseReply {
    /// One entry per criterion.
    pub criteria: Vec<PointwiseEntry>,
}

/// One criterion's score in a pointwise reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PointwiseEntry {
    /// The criterion name.
    pub name: String,
    /// An integer on the criterion's scale.
    pub score: i64,
    /// A quote or pointer into the candidate output.
    pub evidence: String,
}

/// Which response a pairwise reply prefers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Preferred {
    /// The first response shown.
    #[serde(rename = "response_1")]
    First,
    /// The second response shown.
    #[serde(rename = "response_2")]
    Second,
    /// Neither.
    #[serde(rename = "tie")]
    Tie,
}

/// A pairwise reply: scores for both responses and a preference, per criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairwiseReply {
    /// One entry per criterion.
    pub criteria: Vec<PairwiseEntry>,
}

/// One criterion in a pairwise reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairwiseEntry {
    /// The criterion name.
    pub name: String,
    /// Score of the first response shown.
    pub response_1: i64,
    /// Score of the second response shown.
    pub response_2: i64,
    /// The better response on this criterion.
    pub preferred: Preferred,
    /// Why.
    pub evidence: String,
}

/// Which reply shape a call expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    /// [`PointwiseReply`].
    Pointwise,
    /// [`PairwiseReply`].
    Pairwise,
}

/// The JSON Schema for a reply of `kind` about `criteria`: the schemars schema of the reply
/// type, inlined, with the criterion names as an enum, score bounds, and the exact count.
pub fn reply_schema(kind: ReplyKind, criteria: &[JudgeCriterion]) -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let generator = settings.into_generator();
    let mut schema = match kind {
        ReplyKind::Pointwise => generator.into_root_schema_for::<PointwiseReply>().to_value(),
        ReplyKind::Pairwise => generator.into_root_schema_for::<PairwiseReply>().to_value(),
    };
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("description");
    }
    let names: Vec<&str> = criteria.iter().map(|c| c.name.as_str()).collect();
    let min = criteria.iter().map(|c| c.min).min().unwrap_or(1);
    let max = criteria.iter().map(|c| c.max).max().unwrap_or(5);
    let criteria_schema = &mut schema["properties"]["criteria"];
    criteria_schema["minItems"] = json!(criteria.len());
    criteria_schema["maxItems"] = json!(criteria.len());
    let items = &mut criteria_schema["items"];
    items["properties"]["name"]["enum"] = json!(names);
    let score_fields: &[&str] = match kind {
        ReplyKind::Pointwise => &["score"],
        ReplyKind::Pairwise => &["response_1", "response_2"],
    };
    for field in score_fields {
        let property = &mut items["properties"][*field];
        property["minimum"] = json!(min);
        property["maximum"] = json!(max);
        if let Some(object) = property.as_object_mut() {
            object.remove("format");
        }
    }
    strip_descriptions(&mut schema);
    schema
}

/// Removes doc-comment descriptions (they add tokens and some servers reject unknown keys).
fn strip_descriptions(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if object.get("description").is_some_and(Value::is_string) {
                object.remove("description");
            }
            for child in object.values_mut() {
                strip_descriptions(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

/// One criterion's usable answer.
#[derive(Debug, Clone, PartialEq)]
pub enum CriterionAnswer {
    /// A pointwise score.
    Score {
        /// The score.
        score: i64,
        /// The evidence given.
        evidence: String,
    },
    /// A pairwise answer, in shown order.
    Pair {
        /// Score of the first response shown.
        first: i64,
        /// Score of the second response shown.
        second: i64,
        /// The preference.
        preferred: Preferred,
        /// The evidence given.
        evidence: String,
    },
}

/// The outcome of checking one reply: usable answers by criterion, and every problem found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckedReply {
    /// Answers that passed every check, by criterion name.
    pub answers: BTreeMap<String, CriterionAnswer>,
    /// What was wrong, in words a model can act on.
    pub problems: Vec<String>,
}

impl CheckedReply {
    /// Whether every criterion has an answer and nothing was wrong.
    pub fn is_complete(&self, criteria: &[JudgeCriterion]) -> bool {
        self.problems.is_empty() && criteria.iter().all(|c| self.answers.contains_key(&c.name))
    }
}

/// Extracts the JSON object from a reply (dropping a Markdown code fence around it).
pub(crate) fn json_text(reply: &str) -> &str {
    let trimmed = reply.trim();
    let Some(rest) = trimmed.strip_prefix("```") else { return trimmed };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

/// Checks `reply` against `schema` and the criteria; keeps what is usable.
pub fn check_reply(kind: ReplyKind, reply: &str, schema: &Value, criteria: &[JudgeCriterion]) -> CheckedReply {
    match jsonschema::validator_for(schema) {
        Ok(validator) => check_reply_with(kind, reply, &validator, criteria),
        Err(error) => CheckedReply {
            answers: BTreeMap::new(),
            problems: vec![format!("internal: the reply schema does not compile ({error})")],
        },
    }
}

/// [`check_reply`] with a compiled schema validator.
pub fn check_reply_with(
    kind: ReplyKind,
    reply: &str,
    validator: &jsonschema::Validator,
    criteria: &[JudgeCriterion],
) -> CheckedReply {
    let mut checked = CheckedReply::default();
    // A repeated key (`"score": 1, "score": 5`) is refused, not resolved by the last one
    // winning: a judge that answers twice has not answered.
    let value: Value = match agentic_core::json_strict::from_str_lenient_surrogates(json_text(reply)) {
        Ok(value) => value,
        Err(error) => {
            checked.problems.push(format!("the reply is not valid JSON ({error})"));
            return checked;
        }
    };
    for error in validator.iter_errors(&value) {
        let at = error.instance_path().as_str().to_owned();
        checked.problems.push(format!("at `{}`: {error}", if at.is_empty() { "/" } else { &at }));
    }
    // Keep each entry that is individually valid, even when others are not.
    let entries = value.get("criteria").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut seen = BTreeMap::<String, usize>::new();
    for entry in &entries {
        let Some(name) = entry.get("name").and_then(Value::as_str) else { continue };
        *seen.entry(name.to_owned()).or_default() += 1;
        let Some(criterion) = criteria.iter().find(|c| c.name == name) else {
            continue;
        };
        let in_range = |score: i64| (criterion.min..=criterion.max).contains(&score);
        let answer = match kind {
            ReplyKind::Pointwise => serde_json::from_value::<PointwiseEntry>(entry.clone())
                .ok()
                .filter(|e| in_range(e.score))
                .map(|e| CriterionAnswer::Score { score: e.score, evidence: e.evidence }),
            ReplyKind::Pairwise => serde_json::from_value::<PairwiseEntry>(entry.clone())
                .ok()
                .filter(|e| in_range(e.response_1) && in_range(e.response_2))
                .map(|e| CriterionAnswer::Pair {
                    first: e.response_1,
                    second: e.response_2,
                    preferred: e.preferred,
                    evidence: e.evidence,
                }),
        };
        match answer {
            Some(answer) => {
                checked.answers.insert(name.to_owned(), answer);
            }
            None => checked.problems.push(format!(
                "criterion `{name}`: the entry is malformed or its score is outside {}..{}",
                criterion.min, criterion.max
            )),
        }
    }
    for (name, count) in &seen {
        if *count > 1 {
            checked.answers.remove(name);
            checked.problems.push(format!("criterion `{name}` appears {count} times; give it once"));
        }
    }
    for criterion in criteria {
        if !seen.contains_key(&criterion.name) {
            checked.problems.push(format!("criterion `{}` is missing", criterion.name));
        }
    }
    checked.problems.dedup();
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn criteria() -> Vec<JudgeCriterion> {
        vec![JudgeCriterion::likert("correctness", "c"), JudgeCriterion::likert("clarity", "d")]
    }

    #[test]
    fn schema_names_the_criteria_and_bounds_the_scores() {
        let schema = reply_schema(ReplyKind::Pointwise, &criteria());
        let items = &schema["properties"]["criteria"]["items"];
        assert_eq!(items["properties"]["name"]["enum"], json!(["correctness", "clarity"]));
        assert_eq!(items["properties"]["score"]["minimum"], 1);
        assert_eq!(items["properties"]["score"]["maximum"], 5);
        assert_eq!(items["additionalProperties"], false);
        assert_eq!(schema["properties"]["criteria"]["minItems"], 2);
    }

    #[test]
    fn a_good_reply_is_complete() {
        let schema = reply_schema(ReplyKind::Pointwise, &criteria());
        let reply = r#"```json
{"criteria": [{"name": "clarity", "score": 4, "evidence": "e"}, {"name": "correctness", "score": 5, "evidence": "f"}]}
```"#;
        let checked = check_reply(ReplyKind::Pointwise, reply, &schema, &criteria());
        assert!(checked.is_complete(&criteria()), "{:?}", checked.problems);
        assert_eq!(checked.answers["clarity"], CriterionAnswer::Score { score: 4, evidence: "e".into() });
        // A lone surrogate escape in the evidence (a quote cut inside an emoji) reads as
        // U+FFFD instead of costing the answer.
        let cut = reply.replace(r#""evidence": "e""#, r#""evidence": "e \ud83d""#);
        let checked = check_reply(ReplyKind::Pointwise, &cut, &schema, &criteria());
        assert!(checked.is_complete(&criteria()), "{:?}", checked.problems);
        assert_eq!(checked.answers["clarity"], CriterionAnswer::Score { score: 4, evidence: "e \u{fffd}".into() });
    }

    #[test]
    fn out_of_range_and_missing_are_problems_but_valid_entries_are_kept() {
        let schema = reply_schema(ReplyKind::Pointwise, &criteria());
        let reply = r#"{"criteria": [{"name": "clarity", "score": 9, "evidence": "e"}]}"#;
        let checked = check_reply(ReplyKind::Pointwise, reply, &schema, &criteria());
        assert!(checked.answers.is_empty());
        assert!(checked.problems.iter().any(|p| p.contains("`correctness` is missing")), "{:?}", checked.problems);
        assert!(checked.problems.iter().any(|p| p.contains("outside 1..5")), "{:?}", checked.problems);
        let reply = r#"{"criteria": [{"name": "clarity", "score": 3, "evidence": "e"}]}"#;
        let checked = check_reply(ReplyKind::Pointwise, reply, &schema, &criteria());
        assert_eq!(checked.answers.len(), 1);
        assert!(!checked.is_complete(&criteria()));
    }

    #[test]
    fn prose_is_not_json() {
        let schema = reply_schema(ReplyKind::Pairwise, &criteria());
        let checked = check_reply(ReplyKind::Pairwise, "I think response 1 is better.", &schema, &criteria());
        assert!(checked.problems[0].contains("not valid JSON"));
    }

    #[test]
    fn a_reply_that_repeats_a_key_is_refused_not_resolved_by_the_last_value() {
        let schema = reply_schema(ReplyKind::Pointwise, &criteria());
        let reply = r#"{"criteria": [{"name": "clarity", "score": 1, "score": 5, "evidence": "e"},
            {"name": "correctness", "score": 5, "evidence": "f"}]}"#;
        let checked = check_reply(ReplyKind::Pointwise, reply, &schema, &criteria());
        assert!(checked.answers.is_empty(), "{:?}", checked.answers);
        assert!(checked.problems[0].contains("duplicate key `score`"), "{:?}", checked.problems);
    }
}
