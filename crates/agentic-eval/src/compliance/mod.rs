//! Checkpoint compliance: how closely an agent followed a multi-step workflow.
//!
//! A checkpoint spec (`checkpoints/<workflow>.yaml`, see `docs/checkpoints.md`) lists
//! verifiable instructions in document order, each routed to one of three tiers:
//!
//! - tier 1, [`condition`]: state assertions over the evidence JSON (zero LLM);
//! - tier 2, [`sequence`]: ordering rules over the canonical events of a trace, checked in
//!   one streaming pass whose memory is bounded by the number of rules (zero LLM);
//! - tier 3, [`tier3`]: semantic judgement through the [`Tier3Evaluator`] port; this crate
//!   ships the [`ReplayEvaluator`] (recorded verdicts), the judge crate adds a model.
//!
//! [`evaluate`] resolves every checkpoint to PASS, PARTIAL, FAIL, NOT_APPLICABLE or BLOCKED and
//! builds the [`ComplianceReport`] (compliance score, spec health, rating, position dropout,
//! evaluator audit, tier-3 confidence). [`lint_spec`] is the pre-flight check.
//!
//! Like the rest of this crate, the module does no IO: callers read files, run `git` and
//! parse traces (`agentic-adapters`), then pass text, values and event iterators in.

pub mod calibration;
pub mod condition;
pub mod evaluate;
pub mod report;
pub mod sequence;
pub mod spec;
pub mod tier3;

pub use calibration::{CALIBRATION_THRESHOLD, Calibration, GoldenCase, calibrate};
pub use condition::{CompiledCondition, ConditionOutcome, EvidencePath};
pub use evaluate::{CheckOptions, ComplianceError, EvidenceSet, evaluate};
pub use report::{
    ChangeKind, CheckpointChange, CheckpointResult, ComplianceReport, MAX_EVAL_RUNS, Rating, ReportComparison,
    ResultState, append_sentence, compare_reports, confidence_status, first_at_line, rating_for, render_markdown,
    render_summary,
};
pub use sequence::{
    ArgsRef, EventRef, MatchBits, MatchPlan, Prepared, RuleOutcome, SequenceEngine, Summarizer, Summary, SummaryLink,
    TraceOutcome,
};
pub use spec::{
    Checkpoint, CheckpointSpec, CompiledCheckpoint, CompiledSpec, EnvironmentConstraint, Method, SpecLoad,
    TRACE_SOURCE, Tier, lint_against_previous, load_spec, parse_spec, parse_spec_for_comparison,
};
pub use tier3::{ReplayEvaluator, Tier3Error, Tier3Evaluator, Tier3Request, Tier3Verdict, VerdictResult};

/// The published JSON Schemas: `(path under the workspace root, schema)`.
pub fn published_schemas() -> Vec<(&'static str, serde_json::Value)> {
    use agentic_core::document::{document_schema_for, output_schema_for};
    vec![
        ("docs/schema/checkpoint-spec.schema.json", published_spec_schema(document_schema_for::<CheckpointSpec>())),
        ("docs/schema/compliance-report.schema.json", output_schema_for::<ComplianceReport>()),
    ]
}

/// The spec schema as published: the loader's, plus what lint reports under codes of its own
/// (an empty `checkpoints` is `spec-empty`, empty `evidence_sources` is
/// `evidence-sources-missing`), so an editor that validates with it refuses those too. The
/// loader leaves them out: a schema error there would stop the semantic checks, and with them
/// the more specific findings.
fn published_spec_schema(mut schema: serde_json::Value) -> serde_json::Value {
    for pointer in ["/properties/checkpoints", "/$defs/Verification/properties/evidence_sources"] {
        if let Some(serde_json::Value::Object(list)) = schema.pointer_mut(pointer) {
            list.insert("minItems".to_owned(), serde_json::Value::from(1));
        }
    }
    schema
}

#[cfg(test)]
mod schema_tests {
    /// The committed schemas match the types. Regenerate with
    /// `UPDATE_SCHEMAS=1 cargo test -p agentic-eval compliance::schema_tests`.
    /// The published spec schema refuses `null` for an optional field, as the loader does
    /// (it did not: a spec the schema passed was refused).
    #[test]
    fn the_published_spec_schema_refuses_null_like_the_loader() {
        let schema = super::published_schemas().remove(0).1;
        assert!(!schema.to_string().contains("\"null\""), "no optional field is nullable");
        let spec = "workflow: w\nspec_version: \"1\"\ncheckpoints:\n  - {id: P1-01, tier: 1, instruction: x, severity: low, \
                    applies_when: null, verification: {method: evidence_state, evidence_sources: [git], \
                    assert: {path: git.dirty, equals: false}}}\n";
        let load = super::load_spec(spec, "spec.yaml");
        assert!(load.spec.is_none(), "the loader refuses it");
    }

    #[test]
    fn published_schemas_are_fresh() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
        let mut stale = Vec::new();
        for (path, schema) in super::published_schemas() {
            let fresh = serde_json::to_string_pretty(&schema).expect("schemas serialize") + "\n";
            let target = root.join(path);
            if std::fs::read_to_string(&target).ok().as_deref() != Some(fresh.as_str()) {
                if update {
                    std::fs::write(&target, &fresh).expect("writing the schema");
                } else {
                    stale.push(path);
                }
            }
        }
        assert!(
            stale.is_empty(),
            "stale schemas: {stale:?}; run `UPDATE_SCHEMAS=1 cargo test -p agentic-eval compliance::schema_tests` and commit them"
        );
    }
}
