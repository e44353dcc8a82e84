//! Resolving every checkpoint to a state and building the report.
//!
//! Order of decisions for one checkpoint:
//!
//! 1. NOT_APPLICABLE when a listed evidence source is absent (a key missing from the
//!    evidence JSON, or `trace_file` without a trace), or when `applies_when` does not hold.
//! 2. The tier's check: tier 1 evaluates its assertion, tier 2 looks up its rule's outcome
//!    from the single trace pass, tier 3 asks the [`Tier3Evaluator`] and validates the verdict.
//! 3. BLOCKED when the result is FAIL and an *active* environment constraint lists the
//!    checkpoint in `affects`. A constraint is active when its `active_when` condition holds
//!    over the evidence. PARTIAL is never blocked.
//!
//! With several tier-3 runs, tiers 1 and 2 are evaluated once and tier 3 once per run; the
//! report's checkpoints and scores are those of the first run, and the confidence block
//! summarizes the compliance of all runs.

use serde_json::{Map, Value};

use super::condition::ConditionOutcome;
use super::report::{
    CheckpointResult, ComplianceReport, ConfidenceStatus, EvaluatorAudit, REPORT_SCHEMA_VERSION, ResultState,
    Tier3Confidence, append_sentence, compliance_of, score,
};
use super::sequence::TraceOutcome;
use super::spec::{CompiledCheck, CompiledSpec, TRACE_SOURCE, Tier};
use super::tier3::{Tier3Error, Tier3Evaluator, Tier3Request, VerdictResult, validate_verdict};

/// Everything a check reads: the merged evidence JSON and, if given, the trace outcome.
#[derive(Debug, Clone, Default)]
pub struct EvidenceSet {
    /// Evidence sources by name (the top-level keys of the evidence files).
    pub values: Map<String, Value>,
    /// The result of the tier-2 pass, when a trace was given.
    pub trace: Option<TraceOutcome>,
}

/// Options of one check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The `evaluated_at` stamp (the caller owns the clock).
    pub evaluated_at: String,
    /// How many times tier 3 runs (at least 1).
    pub eval_runs: u32,
}

/// Why a check could not produce a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ComplianceError {
    /// The tier-3 evaluator failed or broke the rules.
    #[error(transparent)]
    Tier3(#[from] Tier3Error),
    /// The trace outcome does not fit the spec.
    #[error(
        "the trace outcome has {found} rule results but the spec has {expected} rules; run the tier-2 pass with this spec's rules"
    )]
    TraceMismatch {
        /// Rules in the spec.
        expected: usize,
        /// Outcomes given.
        found: usize,
    },
}

struct Tier3Record {
    cited: bool,
    documented: bool,
    result: VerdictResult,
    /// The evaluator judges this checkpoint apart in every run (see
    /// [`Tier3Evaluator::judges_runs_apart`]).
    apart: bool,
}

/// Evaluates every checkpoint and builds the report.
pub fn evaluate(
    spec: &CompiledSpec,
    evidence: &EvidenceSet,
    evaluator: &mut dyn Tier3Evaluator,
    options: &CheckOptions,
) -> Result<ComplianceReport, ComplianceError> {
    if let Some(trace) = &evidence.trace
        && trace.outcomes.len() != spec.rules.len()
    {
        return Err(ComplianceError::TraceMismatch { expected: spec.rules.len(), found: trace.outcomes.len() });
    }
    let active: Vec<Option<ConditionOutcome>> = spec
        .constraints
        .iter()
        .map(|c| c.active_when.as_ref().map(|cond| cond.evaluate(&evidence.values)).filter(|o| o.holds))
        .collect();
    let runs = options.eval_runs.max(1);
    let mut first_run: Option<(Vec<CheckpointResult>, Vec<Tier3Record>)> = None;
    let mut run_scores = Vec::new();
    for run in 0..runs {
        let mut results = Vec::with_capacity(spec.checkpoints.len());
        let mut records = Vec::new();
        for checkpoint in &spec.checkpoints {
            if run > 0
                && checkpoint.tier != Tier::Semantic
                && let Some((first, _)) = &first_run
            {
                results.push(first[checkpoint.position_index - 1].clone());
                continue;
            }
            // With several runs, an invalid verdict says which run's it was.
            let (state, earned, notes) =
                resolve(checkpoint, evidence, evaluator, run, &mut records).map_err(|error| match error {
                    ComplianceError::Tier3(error) if runs > 1 => ComplianceError::Tier3(error.in_run(run as usize + 1)),
                    error => error,
                })?;
            let (state, earned, notes) =
                block_if_constrained(spec, &active, &checkpoint.checkpoint.id, state, earned, notes);
            results.push(CheckpointResult {
                id: checkpoint.checkpoint.id.clone(),
                position_index: checkpoint.position_index,
                tier: checkpoint.tier.number(),
                severity: checkpoint.checkpoint.severity,
                result: state,
                earned_weight: earned,
                notes,
            });
        }
        run_scores.push(compliance_of(&results));
        if first_run.is_none() {
            first_run = Some((results, records));
        }
    }
    let (results, records) = first_run.unwrap_or_default();
    let mut confidence = Tier3Confidence::from_runs(&run_scores);
    if runs > 1 && !records.iter().any(|record| record.apart) {
        // No tier-3 checkpoint was judged, or each only once for all runs (one recorded
        // verdict): the runs are one run repeated, and their agreement says nothing about the
        // judge.
        confidence.status = ConfidenceStatus::InsufficientData;
    }
    let (scores, summary, dropout) = score(&results);
    let audit = EvaluatorAudit {
        undocumented_passes: records.iter().filter(|r| r.result == VerdictResult::Pass && !r.documented).count() as u64,
        undocumented_fails: records.iter().filter(|r| r.result == VerdictResult::Fail && !r.documented).count() as u64,
        tier_3_checkpoints_count: spec.checkpoints.iter().filter(|c| c.tier == Tier::Semantic).count() as u64,
        tier_3_without_evidence_citation: records.iter().filter(|r| !r.cited).count() as u64,
    };
    Ok(ComplianceReport {
        schema_version: REPORT_SCHEMA_VERSION.to_owned(),
        workflow: spec.spec.workflow.clone(),
        spec_version: spec.spec.spec_version.clone(),
        evaluated_at: options.evaluated_at.clone(),
        scores,
        summary,
        evaluator_audit: audit,
        tier_3_confidence: confidence,
        position_dropout_analysis: dropout,
        checkpoints: results,
    })
}

fn resolve(
    checkpoint: &super::spec::CompiledCheckpoint,
    evidence: &EvidenceSet,
    evaluator: &mut dyn Tier3Evaluator,
    run: u32,
    records: &mut Vec<Tier3Record>,
) -> Result<(ResultState, f64, String), ComplianceError> {
    let sources = &checkpoint.checkpoint.verification.evidence_sources;
    let missing: Vec<&str> = sources
        .iter()
        .filter(|source| {
            if source.as_str() == TRACE_SOURCE {
                evidence.trace.is_none()
            } else {
                // A null source is absent, as a null value is missing to the tier-1 operators.
                evidence.values.get(source.as_str()).is_none_or(Value::is_null)
            }
        })
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        let names = missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
        let what = if missing == [TRACE_SOURCE] {
            "no trace was given".to_owned()
        } else {
            match missing.len() {
                1 => format!("evidence source {names} is absent"),
                _ => format!("evidence sources {names} are absent"),
            }
        };
        return Ok((ResultState::NotApplicable, 0.0, format!("Not applicable: {what}.")));
    }
    if let Some(condition) = &checkpoint.applies_when {
        let outcome = condition.evaluate(&evidence.values);
        if !outcome.holds {
            return Ok((
                ResultState::NotApplicable,
                0.0,
                format!("Not applicable: `applies_when` does not hold ({}).", outcome.explanation),
            ));
        }
    }
    match &checkpoint.check {
        CompiledCheck::State(condition) => {
            let outcome = condition.evaluate(&evidence.values);
            let state = if outcome.holds { ResultState::Pass } else { ResultState::Fail };
            Ok((state, if outcome.holds { 1.0 } else { 0.0 }, sentence(&outcome.explanation)))
        }
        CompiledCheck::Sequence(rule_idx) => {
            let outcome = &evidence.trace.as_ref().expect("checked above").outcomes[*rule_idx];
            let state = if outcome.passed { ResultState::Pass } else { ResultState::Fail };
            Ok((state, if outcome.passed { 1.0 } else { 0.0 }, sentence(&outcome.notes)))
        }
        CompiledCheck::Semantic => {
            let mut listed = Map::new();
            for source in sources {
                if let Some(value) = evidence.values.get(source) {
                    listed.insert(source.clone(), value.clone());
                }
            }
            let excerpt = evidence.trace.as_ref().map(|t| t.excerpt.as_slice()).unwrap_or(&[]);
            let request = Tier3Request {
                checkpoint: &checkpoint.checkpoint,
                position_index: checkpoint.position_index,
                evidence: listed,
                trace_excerpt: excerpt,
                run,
            };
            let verdict = evaluator.evaluate(&request)?;
            let scored = validate_verdict(&checkpoint.checkpoint, verdict)?;
            let citation = scored.verdict.evidence_citation.as_deref().map(str::trim).filter(|c| !c.is_empty());
            let documented = scored.verdict.notes.as_deref().is_some_and(|n| !n.trim().is_empty());
            records.push(Tier3Record {
                cited: citation.is_some(),
                documented,
                result: scored.verdict.result,
                apart: evaluator.judges_runs_apart(&checkpoint.checkpoint.id),
            });
            let state = match scored.verdict.result {
                VerdictResult::Pass => ResultState::Pass,
                VerdictResult::Partial => ResultState::Partial,
                VerdictResult::Fail => ResultState::Fail,
            };
            let mut notes = scored.notes;
            match citation {
                Some(citation) => append_sentence(&mut notes, &format!("Evidence: {citation}")),
                None if notes.trim().is_empty() => {
                    notes = "The evaluator gave no notes and no evidence citation.".to_owned()
                }
                None => append_sentence(&mut notes, "(no evidence citation)"),
            }
            Ok((state, scored.earned_weight, notes))
        }
    }
}

fn block_if_constrained(
    spec: &CompiledSpec,
    active: &[Option<ConditionOutcome>],
    id: &str,
    state: ResultState,
    earned: f64,
    notes: String,
) -> (ResultState, f64, String) {
    if state != ResultState::Fail {
        return (state, earned, notes);
    }
    // Every active constraint that affects the checkpoint is named (the first decides nothing
    // the others would not).
    let mut notes = notes;
    let mut blocked = false;
    for (constraint, activity) in spec.constraints.iter().zip(active) {
        if let Some(activity) = activity
            && constraint.constraint.affects.iter().any(|affected| affected == id)
        {
            blocked = true;
            append_sentence(
                &mut notes,
                &format!(
                    "BLOCKED by {} ({}): active because {}.",
                    constraint.constraint.id, constraint.constraint.constraint, activity.explanation
                ),
            );
        }
    }
    if blocked { (ResultState::Blocked, 0.0, notes) } else { (state, earned, notes) }
}

fn sentence(text: &str) -> String {
    if text.is_empty() || text.ends_with('.') { text.to_owned() } else { format!("{text}.") }
}
