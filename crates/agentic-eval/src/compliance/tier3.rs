//! Tier 3: semantic judgement through the [`Tier3Evaluator`] port.
//!
//! **For implementers (the judge crate):** an evaluator receives a [`Tier3Request`] (the
//! checkpoint as written, the evidence sources it lists, a bounded excerpt of the trace and
//! the run number) and returns a [`Tier3Verdict`]. The rules it must follow, which
//! [`validate_verdict`] enforces before a verdict is scored:
//!
//! - `result` is PASS, PARTIAL or FAIL. NOT_APPLICABLE and BLOCKED are decided by the
//!   framework (missing evidence, active constraints), never by the evaluator.
//! - PARTIAL with `partial_criteria` (Mode A, strict): `matched_condition` must name one
//!   criterion (by 0-based index or by its exact text); the earned weight is that criterion's
//!   weight. An `earned_weight` that differs is an error.
//! - PARTIAL without `partial_criteria` (Mode B): the weight is 0.5 and `notes` must explain
//!   the deduction; missing notes are an error.
//! - `evidence_citation` should quote or point at the evidence the verdict rests on. A
//!   verdict without one still counts, but is reported in the evaluator audit
//!   (`tier_3_without_evidence_citation`), and a PASS or FAIL without notes counts as
//!   undocumented.
//! - An evaluator that cannot judge returns an error; the check then stops (exit 2). It
//!   must not guess.
//!
//! With `--eval-runs N` the framework calls the evaluator N times per checkpoint with
//! `run` = 0..N-1, so a model-backed evaluator can sample independently.
//!
//! [`ReplayEvaluator`] replays recorded verdicts from JSON keyed by checkpoint id:
//!
//! ```json
//! {"P3-01": {"result": "PARTIAL", "matched_condition": 0, "notes": "HOW is missing",
//!            "evidence_citation": "pr_body: sections What, Why"},
//!  "P3-04": [{"result": "PASS", "evidence_citation": "..."}, {"result": "FAIL", "notes": "..."}]}
//! ```
//!
//! A list gives one verdict per run; a single verdict answers every run.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::spec::Checkpoint;

/// What a tier-3 evaluator decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VerdictResult {
    /// Fully followed.
    Pass,
    /// Partly followed.
    Partial,
    /// Not followed.
    Fail,
}

/// A criterion named by index or by its text.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum MatchedCondition {
    /// 0-based index into `partial_criteria`.
    Index(usize),
    /// The criterion's `condition` text.
    Text(String),
}

/// An index or a text; anything else is refused with what to write instead.
impl<'de> Deserialize<'de> for MatchedCondition {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<MatchedCondition, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = MatchedCondition;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a 0-based index into `partial_criteria` (0, 1, ...) or a criterion's exact `condition` text",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<MatchedCondition, E> {
                usize::try_from(value).map(MatchedCondition::Index).map_err(|_| E::custom("index out of range"))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<MatchedCondition, E> {
                Ok(MatchedCondition::Text(value.to_owned()))
            }
            // A judge may write a whole number as `0.0`.
            fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<MatchedCondition, E> {
                if value.fract() == 0.0 && (0.0..4_294_967_296.0).contains(&value) {
                    Ok(MatchedCondition::Index(value as usize))
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Float(value), &self))
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// One tier-3 verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tier3Verdict {
    /// PASS, PARTIAL or FAIL.
    pub result: VerdictResult,
    /// Mode A: the partial criterion matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_condition: Option<MatchedCondition>,
    /// The weight the evaluator believes was earned (checked against the rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earned_weight: Option<f64>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// The evidence the verdict rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_citation: Option<String>,
}

/// What an evaluator gets to judge one checkpoint.
#[derive(Debug, Clone)]
pub struct Tier3Request<'a> {
    /// The checkpoint as written.
    pub checkpoint: &'a Checkpoint,
    /// 1-based document order.
    pub position_index: usize,
    /// The listed evidence sources that are present (by name).
    pub evidence: Map<String, Value>,
    /// The last calls of the trace, one line each, when a trace was given.
    pub trace_excerpt: &'a [String],
    /// 0-based run number (see `--eval-runs`).
    pub run: u32,
}

/// Why an evaluator could not produce a valid verdict.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum Tier3Error {
    /// No recorded verdict.
    #[error(
        "no recorded tier-3 verdict for checkpoint `{checkpoint}`; add it to the verdicts file (keyed by checkpoint id)"
    )]
    MissingVerdict {
        /// The checkpoint.
        checkpoint: String,
    },
    /// Fewer recorded runs than requested.
    #[error(
        "checkpoint `{checkpoint}` has {recorded} recorded verdict(s) but run {run} was requested; record one verdict per run or a single verdict for all runs"
    )]
    MissingRun {
        /// The checkpoint.
        checkpoint: String,
        /// Recorded verdicts.
        recorded: usize,
        /// The 1-based run requested.
        run: u32,
    },
    /// The verdicts file is not valid.
    #[error("tier-3 verdicts file is invalid: {reason}; write a JSON object mapping checkpoint ids to verdicts")]
    InvalidFile {
        /// What is wrong.
        reason: String,
    },
    /// The verdict breaks the Mode A / Mode B rules.
    #[error("tier-3 verdict for checkpoint `{checkpoint}` is invalid: {reason}")]
    InvalidVerdict {
        /// The checkpoint.
        checkpoint: String,
        /// What is wrong.
        reason: String,
    },
    /// The evaluator failed.
    #[error("tier-3 evaluator failed on checkpoint `{checkpoint}`: {reason}")]
    Evaluator {
        /// The checkpoint.
        checkpoint: String,
        /// What went wrong.
        reason: String,
    },
}

impl Tier3Error {
    /// The error with the (1-based) run it happened in, for a verdict that broke the rules
    /// or an evaluator that failed: with several runs, the reason says which one.
    pub fn in_run(self, run: usize) -> Tier3Error {
        match self {
            Tier3Error::InvalidVerdict { checkpoint, reason } => {
                Tier3Error::InvalidVerdict { checkpoint, reason: format!("run {run}: {reason}") }
            }
            Tier3Error::Evaluator { checkpoint, reason } => {
                Tier3Error::Evaluator { checkpoint, reason: format!("run {run}: {reason}") }
            }
            other => other,
        }
    }
}

/// The tier-3 port: judges one checkpoint. See the module docs for the rules.
pub trait Tier3Evaluator {
    /// Judges `request.checkpoint`.
    fn evaluate(&mut self, request: &Tier3Request<'_>) -> Result<Tier3Verdict, Tier3Error>;

    /// Whether the verdicts on `checkpoint` in different runs are reached apart (a judge
    /// called per run, a verdict recorded per run), so that their spread measures something;
    /// false for one verdict that answers every run.
    fn judges_runs_apart(&self, _checkpoint: &str) -> bool {
        true
    }
}

/// A verdict checked against the Mode A / Mode B rules, with its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredVerdict {
    /// The verdict.
    pub verdict: Tier3Verdict,
    /// The weight earned (1, 0, or the partial weight).
    pub earned_weight: f64,
    /// Notes for the report (the evaluator's, plus the matched criterion).
    pub notes: String,
}

/// The Mode B weight of a PARTIAL without criteria.
pub const MODE_B_WEIGHT: f64 = 0.5;

/// Checks a verdict against the rules and computes its weight.
pub fn validate_verdict(checkpoint: &Checkpoint, verdict: Tier3Verdict) -> Result<ScoredVerdict, Tier3Error> {
    let invalid = |reason: String| Tier3Error::InvalidVerdict { checkpoint: checkpoint.id.clone(), reason };
    let notes = verdict.notes.clone().unwrap_or_default().trim().to_owned();
    // Only a Mode A PARTIAL names a criterion; on anything else the name contradicts the result.
    if verdict.matched_condition.is_some()
        && (verdict.result != VerdictResult::Partial || checkpoint.partial_criteria.is_empty())
    {
        let what = if verdict.result == VerdictResult::Partial {
            "a PARTIAL of a checkpoint without `partial_criteria` (Mode B)".to_owned()
        } else {
            format!("a {} verdict", if verdict.result == VerdictResult::Pass { "PASS" } else { "FAIL" })
        };
        return Err(invalid(format!(
            "`matched_condition` names a partial criterion, which only a PARTIAL of a checkpoint with \
             `partial_criteria` (Mode A) does, but this is {what}; remove `matched_condition` or fix `result`"
        )));
    }
    let (earned_weight, notes) = match verdict.result {
        VerdictResult::Pass => (1.0, notes),
        VerdictResult::Fail => (0.0, notes),
        VerdictResult::Partial if checkpoint.partial_criteria.is_empty() => {
            if notes.is_empty() {
                return Err(invalid(
                    "a PARTIAL without `partial_criteria` (Mode B) must explain the deduction in `notes`".to_owned(),
                ));
            }
            (MODE_B_WEIGHT, notes)
        }
        VerdictResult::Partial => {
            let criteria = &checkpoint.partial_criteria;
            // The criteria as a reply names them, so the one repair (or the person fixing a
            // verdicts file) can pick one.
            let listed = || {
                criteria
                    .iter()
                    .enumerate()
                    .map(|(index, c)| format!("{index}: \"{}\" (weight {})", c.condition, c.weight))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let index = match &verdict.matched_condition {
                None => {
                    return Err(invalid(format!(
                        "a PARTIAL must name one of the {} `partial_criteria` in `matched_condition` (Mode A), by \
                         index or text: {}; its weight is what it earns",
                        criteria.len(),
                        listed()
                    )));
                }
                Some(MatchedCondition::Index(index)) if *index < criteria.len() => *index,
                Some(MatchedCondition::Index(index)) => {
                    return Err(invalid(format!(
                        "`matched_condition` {index} is out of range; there are {} criteria (0-based): {}",
                        criteria.len(),
                        listed()
                    )));
                }
                Some(MatchedCondition::Text(text)) => {
                    criteria.iter().position(|c| c.condition.trim() == text.trim()).ok_or_else(|| {
                        invalid(format!(
                            "`matched_condition` \"{text}\" is not one of the `partial_criteria`: {}",
                            listed()
                        ))
                    })?
                }
            };
            let criterion = &criteria[index];
            let matched = format!("Matched partial_criteria index {index} (\"{}\").", criterion.condition);
            let mut notes = notes;
            super::report::append_sentence(&mut notes, &matched);
            (criterion.weight, notes)
        }
    };
    if let Some(claimed) = verdict.earned_weight
        && (claimed - earned_weight).abs() > 1e-9
    {
        return Err(invalid(format!("`earned_weight` {claimed} does not match the rules, which give {earned_weight}")));
    }
    Ok(ScoredVerdict { verdict, earned_weight, notes })
}

/// One recorded verdict; what is wrong with it in the file's terms (not serde's type names).
fn verdict_from(value: Value) -> Result<Tier3Verdict, String> {
    let kind = match &value {
        // The field at fault is named (`notes`: invalid type ...).
        Value::Object(_) => {
            return serde_path_to_error::deserialize(value).map_err(|error| {
                let place = error.path().to_string();
                let inner = error.into_inner().to_string();
                // An unknown field names itself.
                if place == "." || inner.contains(&format!("`{place}`")) {
                    inner
                } else {
                    format!("`{place}`: {inner}")
                }
            });
        }
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => format!("the boolean {flag}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) => format!("the string {}", Value::String(text.chars().take(40).collect())),
        Value::Array(_) => "a list inside the list of runs".to_owned(),
    };
    Err(format!("it is {kind}, not a verdict object"))
}

#[derive(Debug, Clone)]
enum Recorded {
    One(Tier3Verdict),
    Runs(Vec<Tier3Verdict>),
}

/// Replays recorded verdicts; a missing checkpoint is an error naming it.
#[derive(Debug, Clone, Default)]
pub struct ReplayEvaluator {
    verdicts: BTreeMap<String, Recorded>,
}

impl ReplayEvaluator {
    /// Parses a verdicts file (see the module docs).
    pub fn from_json(text: &str) -> Result<ReplayEvaluator, Tier3Error> {
        let value: Value =
            agentic_core::json_strict::from_str_lenient_surrogates(text).map_err(|error| Tier3Error::InvalidFile {
                reason: match agentic_core::json_strict::advice(text, &error) {
                    Some(advice) => format!("{error} ({advice})"),
                    None => error.to_string(),
                },
            })?;
        let Value::Object(map) = value else {
            return Err(Tier3Error::InvalidFile { reason: "the top level is not an object".to_owned() });
        };
        let mut verdicts = BTreeMap::new();
        for (id, entry) in map {
            // Read by shape, so the error names the field that is wrong (an untagged enum
            // would only say that nothing matched).
            let invalid = |at: String, error: String| Tier3Error::InvalidFile {
                reason: format!(
                    "verdict for `{id}`{at}: {error} (expected {{\"result\": \"PASS|PARTIAL|FAIL\", \"notes\": ..., \
                     \"evidence_citation\": ..., \"matched_condition\": ...}} or a list of them, one per run)"
                ),
            };
            let recorded = match entry {
                Value::Array(runs) => Recorded::Runs(
                    runs.into_iter()
                        .enumerate()
                        .map(|(run, value)| verdict_from(value).map_err(|e| invalid(format!(" (run {})", run + 1), e)))
                        .collect::<Result<_, _>>()?,
                ),
                value => Recorded::One(verdict_from(value).map_err(|e| invalid(String::new(), e))?),
            };
            verdicts.insert(id, recorded);
        }
        Ok(ReplayEvaluator { verdicts })
    }

    /// The ids with recorded verdicts.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.verdicts.keys().map(String::as_str)
    }

    /// Checks every recorded verdict of a checkpoint in `checkpoints` by the rules of
    /// [`validate_verdict`], every run of a list, also verdicts the check will not use (a
    /// checkpoint that turns out not applicable, runs beyond `--eval-runs`): a broken file
    /// fails on every trace, not only on the one whose evidence happens to reach it.
    pub fn validate_against<'c>(
        &self,
        checkpoints: impl IntoIterator<Item = &'c Checkpoint>,
    ) -> Result<(), Tier3Error> {
        for checkpoint in checkpoints {
            let Some(recorded) = self.verdicts.get(&checkpoint.id) else { continue };
            let (verdicts, per_run) = match recorded {
                Recorded::One(verdict) => (std::slice::from_ref(verdict), false),
                Recorded::Runs(runs) => (runs.as_slice(), true),
            };
            for (run, verdict) in verdicts.iter().enumerate() {
                validate_verdict(checkpoint, verdict.clone())
                    .map_err(|error| if per_run { error.in_run(run + 1) } else { error })?;
            }
        }
        Ok(())
    }

    /// How many runs `id` has verdicts for: `None` for one verdict that serves every run.
    pub fn recorded_runs(&self, id: &str) -> Option<usize> {
        match self.verdicts.get(id)? {
            Recorded::One(_) => None,
            Recorded::Runs(runs) => Some(runs.len()),
        }
    }
}

impl Tier3Evaluator for ReplayEvaluator {
    fn judges_runs_apart(&self, checkpoint: &str) -> bool {
        matches!(self.verdicts.get(checkpoint), Some(Recorded::Runs(_)))
    }

    fn evaluate(&mut self, request: &Tier3Request<'_>) -> Result<Tier3Verdict, Tier3Error> {
        let id = &request.checkpoint.id;
        match self.verdicts.get(id) {
            None => Err(Tier3Error::MissingVerdict { checkpoint: id.clone() }),
            Some(Recorded::One(verdict)) => Ok(verdict.clone()),
            Some(Recorded::Runs(runs)) => runs.get(request.run as usize).cloned().ok_or(Tier3Error::MissingRun {
                checkpoint: id.clone(),
                recorded: runs.len(),
                run: request.run + 1,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compliance::spec::{CheckpointSeverity, Method, PartialCriterion, Verification};

    fn checkpoint(criteria: Vec<(&str, f64)>) -> Checkpoint {
        Checkpoint {
            id: "P3-01".into(),
            tier: 3,
            instruction: "PR has WHAT, WHY, HOW".into(),
            severity: CheckpointSeverity::Medium,
            verification: Verification {
                method: Method::ContentAnalysis,
                evidence_sources: vec!["pr_body".into()],
                details: None,
                assertion: None,
                rule: None,
            },
            partial_criteria: criteria
                .into_iter()
                .map(|(c, w)| PartialCriterion { condition: c.into(), weight: w })
                .collect(),
            applies_when: None,
        }
    }

    fn verdict(json: &str) -> Tier3Verdict {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn mode_a_uses_the_matched_weight() {
        let cp = checkpoint(vec![("Has WHAT and WHY, but missing HOW", 0.7), ("Has WHAT only", 0.3)]);
        let scored = validate_verdict(&cp, verdict(r#"{"result":"PARTIAL","matched_condition":1}"#)).unwrap();
        assert_eq!(scored.earned_weight, 0.3);
        assert_eq!(scored.notes, "Matched partial_criteria index 1 (\"Has WHAT only\").");
        let scored = validate_verdict(
            &cp,
            verdict(
                r#"{"result":"PARTIAL","matched_condition":"Has WHAT and WHY, but missing HOW","earned_weight":0.7}"#,
            ),
        )
        .unwrap();
        assert_eq!(scored.earned_weight, 0.7);
        // A whole number written as a float (as a judge may) is that index; a fraction is not.
        let scored = validate_verdict(&cp, verdict(r#"{"result":"PARTIAL","matched_condition":1.0}"#)).unwrap();
        assert_eq!(scored.earned_weight, 0.3);
        assert!(serde_json::from_str::<Tier3Verdict>(r#"{"result":"PARTIAL","matched_condition":1.5}"#).is_err());
        for bad in [
            r#"{"result":"PARTIAL"}"#,
            r#"{"result":"PARTIAL","matched_condition":2}"#,
            r#"{"result":"PARTIAL","matched_condition":"nope"}"#,
            r#"{"result":"PARTIAL","matched_condition":0,"earned_weight":0.5}"#,
        ] {
            assert!(matches!(validate_verdict(&cp, verdict(bad)), Err(Tier3Error::InvalidVerdict { .. })), "{bad}");
        }
    }

    #[test]
    fn mode_b_defaults_to_half_and_needs_notes() {
        let cp = checkpoint(vec![]);
        let scored = validate_verdict(&cp, verdict(r#"{"result":"PARTIAL","notes":"HOW is thin"}"#)).unwrap();
        assert_eq!(scored.earned_weight, 0.5);
        assert!(validate_verdict(&cp, verdict(r#"{"result":"PARTIAL","notes":"  "}"#)).is_err());
        assert_eq!(validate_verdict(&cp, verdict(r#"{"result":"PASS"}"#)).unwrap().earned_weight, 1.0);
        assert_eq!(validate_verdict(&cp, verdict(r#"{"result":"FAIL"}"#)).unwrap().earned_weight, 0.0);
    }

    /// Every recorded verdict is checked against its checkpoint, every run of a list too,
    /// and the error names the run; verdicts for ids that are not given are left alone.
    #[test]
    fn recorded_verdicts_are_checked_before_they_are_needed() {
        let modes = [checkpoint(vec![("HOW missing", 0.4)])];
        let check = |json: &str| ReplayEvaluator::from_json(json).unwrap().validate_against(&modes);
        assert!(
            check(r#"{"P3-01": {"result":"PARTIAL","matched_condition":0}, "P9-99": {"result":"PARTIAL"}}"#).is_ok()
        );
        let error = check(r#"{"P3-01": [{"result":"PASS"}, {"result":"PARTIAL","matched_condition":5}]}"#).unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, Tier3Error::InvalidVerdict { .. }) && text.contains("run 2:"), "{text}");
        assert!(check(r#"{"P3-01": {"result":"PARTIAL"}}"#).is_err());
        let mode_b = [checkpoint(vec![])];
        let error = ReplayEvaluator::from_json(r#"{"P3-01": {"result":"PARTIAL"}}"#).unwrap().validate_against(&mode_b);
        assert!(error.unwrap_err().to_string().contains("`notes`"));
    }

    #[test]
    fn replay_misses_are_loud() {
        let mut replay = ReplayEvaluator::from_json(r#"{"P3-01": [{"result":"PASS"}]}"#).unwrap();
        let cp = checkpoint(vec![]);
        let mut request =
            Tier3Request { checkpoint: &cp, position_index: 1, evidence: Map::new(), trace_excerpt: &[], run: 0 };
        assert_eq!(replay.evaluate(&request).unwrap().result, VerdictResult::Pass);
        request.run = 1;
        assert_eq!(
            replay.evaluate(&request).unwrap_err().to_string(),
            "checkpoint `P3-01` has 1 recorded verdict(s) but run 2 was requested; record one verdict per run or a single verdict for all runs"
        );
        let other = Checkpoint { id: "P9-09".into(), ..cp.clone() };
        request.checkpoint = &other;
        assert!(replay.evaluate(&request).unwrap_err().to_string().contains("`P9-09`"));
        assert!(ReplayEvaluator::from_json(r#"{"P3-01": {"result":"MAYBE"}}"#).is_err());
        assert!(ReplayEvaluator::from_json("[1]").is_err());
        // The error names the field that is wrong, and the run in a list.
        let message = |text: &str| ReplayEvaluator::from_json(text).unwrap_err().to_string();
        assert!(message(r#"{"P3-01": {"result":"pass"}}"#).contains("unknown variant `pass`"));
        let run_two = message(r#"{"P3-01": [{"result":"PASS"}, {"result":"PASS","confidence":0.3}]}"#);
        assert!(run_two.contains("`P3-01` (run 2): unknown field `confidence`"), "{run_two}");
        // A verdict that is not an object is named in the file's terms, not serde's type names.
        let string = message(r#"{"P3-01": "PASS"}"#);
        assert!(string.contains("`P3-01`: it is the string \"PASS\", not a verdict object"), "{string}");
        assert!(!string.contains("Tier3Verdict"), "{string}");
        let number = message(r#"{"P3-01": [{"result":"PASS"}, 5]}"#);
        assert!(number.contains("`P3-01` (run 2): it is the number 5, not a verdict object"), "{number}");
        // A lone surrogate escape (a string cut inside an emoji) reads as U+FFFD, as in traces.
        let mut cut = ReplayEvaluator::from_json(r#"{"P3-01": {"result":"PASS","notes":"ok \ud83d"}}"#).unwrap();
        request.checkpoint = &cp;
        request.run = 0;
        assert_eq!(cut.evaluate(&request).unwrap().notes.as_deref(), Some("ok \u{fffd}"));
        // A field of the wrong type is named.
        let notes = message(r#"{"P3-01": {"result":"PASS","notes":5}}"#);
        assert!(notes.contains("`P3-01`: `notes`: invalid type: integer `5`, expected a string"), "{notes}");
        let result = message(r#"{"P3-01": [{"result":"PASS"}, {"result":1}]}"#);
        assert!(result.contains("`P3-01` (run 2): `result`: invalid type"), "{result}");
    }
}
