//! The judge as the compliance framework's tier-3 evaluator
//! ([`agentic_eval::compliance::tier3::Tier3Evaluator`]).
//!
//! The checkpoint, its partial criteria, the evidence and the trace excerpt are rendered into
//! the versioned `tier3` prompt; the reply must validate against the JSON Schema of
//! [`Tier3Verdict`] (sent as structured output) and the Mode A / Mode B rules, with one repair
//! (for either). A reply that stays invalid,
//! or a failed call, is an evaluator error: the check stops instead of guessing. Every run
//! (`--eval-runs`) gets its own seed. The port is synchronous, so the evaluator owns a small
//! runtime: call it from synchronous code, not from inside an async task.

use agentic_eval::compliance::TRACE_SOURCE;
use agentic_eval::compliance::tier3::{Tier3Error, Tier3Evaluator, Tier3Request, Tier3Verdict, validate_verdict};
use serde_json::{Value, json};

use crate::error::JudgeError;
use crate::judge::{Judge, StructuredQuestion};
use crate::prompt::PromptTemplate;
use crate::verdict::JudgeUsage;

/// A tier-3 evaluator backed by the first judge of a [`Judge`].
#[derive(Debug)]
pub struct JudgeTier3Evaluator {
    judge: Judge,
    runtime: tokio::runtime::Runtime,
    template: PromptTemplate,
    schema: Value,
    /// What the evaluations cost so far.
    pub usage: JudgeUsage,
    /// The answering judge as its configuration names it (name, version, provider,
    /// structured-output mode): what the request alone does not show. It goes into the
    /// caller of every exchange, so a cassette replayed with strict callers misses when
    /// the judge changed (see `tier3_caller_identity`).
    identity: String,
}

/// How the tier-3 caller names the judge that answers: `judge=NAME version=V provider=P
/// structured_output=S` (the first judge of the configuration).
fn tier3_caller_identity(judge: &Judge) -> String {
    let Some(first) = judge.config().judges.first() else { return String::new() };
    format!(
        "judge={} version={} provider={} structured_output={}",
        first.name,
        first.version,
        serde_name(&first.provider),
        serde_name(&first.structured_output)
    )
}

/// The name serde gives a unit enum value (`openai`, `json_schema`).
fn serde_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        other => format!("{other:?}"),
    }
}

/// The built-in tier-3 prompt.
pub fn tier3_template() -> PromptTemplate {
    PromptTemplate::parse(include_str!("../templates/tier3.j2"), "tier3.j2").expect("built-in template parses")
}

/// The JSON Schema a tier-3 reply must follow (from [`Tier3Verdict`]).
pub fn tier3_schema() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let mut schema = settings.into_generator().into_root_schema_for::<Tier3Verdict>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    schema
}

/// [`tier3_schema`] narrowed to one checkpoint: `matched_condition` an index among its
/// `partial_criteria` (or their text, or nothing) in Mode A, nothing in Mode B, so a model
/// under grammar-constrained decoding cannot name a criterion that is not there.
pub fn tier3_schema_for(base: &Value, checkpoint: &agentic_eval::compliance::spec::Checkpoint) -> Value {
    let mut schema = base.clone();
    let criteria = checkpoint.partial_criteria.len();
    let narrowed = if criteria == 0 {
        json!({"type": "null", "description": "Leave out: this checkpoint has no partial criteria (Mode B)."})
    } else {
        json!({
            "description": "For a PARTIAL: the 0-based index (or the exact text) of the partial criterion that holds.",
            "anyOf": [{"type": "integer", "minimum": 0, "maximum": criteria - 1}, {"type": "string"}, {"type": "null"}]
        })
    };
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert("matched_condition".to_owned(), narrowed);
    }
    schema
}

impl JudgeTier3Evaluator {
    /// An evaluator using `judge`.
    pub fn new(judge: Judge) -> Result<JudgeTier3Evaluator, JudgeError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| JudgeError::Input(format!("cannot start the evaluator's runtime: {error}")))?;
        Ok(JudgeTier3Evaluator {
            identity: tier3_caller_identity(&judge),
            judge,
            runtime,
            template: tier3_template(),
            schema: tier3_schema(),
            usage: JudgeUsage::default(),
        })
    }
}

impl Tier3Evaluator for JudgeTier3Evaluator {
    fn evaluate(&mut self, request: &Tier3Request<'_>) -> Result<Tier3Verdict, Tier3Error> {
        let checkpoint = request.checkpoint.id.clone();
        let context = json!({
            "checkpoint": request.checkpoint,
            "evidence": serde_json::to_string_pretty(&request.evidence).unwrap_or_default(),
            "trace": request.trace_excerpt.join("\n"),
            // A checkpoint that lists the trace is told when it is empty (rather than not
            // shown the section at all).
            "trace_listed": request.checkpoint.verification.evidence_sources.iter().any(|s| s == TRACE_SOURCE),
        });
        let seed = self.judge.case_seed(&format!("{checkpoint}#run{}", request.run));
        let schema = tier3_schema_for(&self.schema, request.checkpoint);
        let caller = format!("tier3:{checkpoint} {}", self.identity);
        // The Mode A / Mode B rules are checked with the schema, so a reply that breaks them
        // gets the one repair too.
        let rules = |value: &Value| {
            let verdict: Tier3Verdict = serde_json::from_value(value.clone()).map_err(|error| error.to_string())?;
            validate_verdict(request.checkpoint, verdict).map(|_| ()).map_err(|error| match error {
                Tier3Error::InvalidVerdict { reason, .. } => reason,
                other => other.to_string(),
            })
        };
        // The checkpoint's narrowed schema guides decoding; the rules explain a reply that
        // breaks it (a criterion out of range, one in Mode B) better than a schema error.
        let question = StructuredQuestion {
            template: &self.template,
            context: &context,
            schema: &self.schema,
            sent_schema: Some(&schema),
            rules: &rules,
        };
        let outcome = self.runtime.block_on(self.judge.ask_structured(&caller, &question, seed, &mut self.usage));
        let value = outcome.map_err(|reason| Tier3Error::Evaluator { checkpoint: checkpoint.clone(), reason })?;
        serde_json::from_value(value)
            .map_err(|error| Tier3Error::Evaluator { checkpoint, reason: format!("the verdict does not fit: {error}") })
    }
}
