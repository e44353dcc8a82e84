//! Scoring for agentic: hard gates, the normalization formula registry, rubrics, scoring
//! profiles, deterministic grading, test-case suites, run comparison, the reporting bundle
//! and the promotion policy.
//!
//! This crate is pure: it takes data in and returns data out. It does no IO, spawns no
//! processes and calls no network; callers (the engine, the server, the CLI) read files and
//! pass text or values. It does not run workflows (agentic-engine) nor call judge models
//! (agentic-judge); it scores what they produce.
//!
//! **Architecture Invariant:** a failed hard gate always yields `passed = false` and grade F;
//! no weighted score overrides it. A gate that was not evaluated counts as failed.

mod cases;
mod compare;
mod evaluate;
mod formula;
mod gates;
mod grade;
mod profile;
mod promote;
mod report;
mod rubric;
mod run_scores;

pub use cases::*;
pub use compare::*;
pub use evaluate::{EvaluationPayload, RunEvaluation, evaluate_run, parse_input, request_for};
pub use formula::{
    Formula, FormulaError, FormulaRegistry, OutOfRange, PairwiseCounts, RELIABILITY_K, RELIABILITY_PRIOR, RawScore,
    TestCounts, UserFormula, adjust_for_sample_size,
};
pub use gates::*;
pub use grade::{
    A_FLOOR_MARGIN, Aggregate, CriterionInput, CriterionResult, DEFAULT_PASS_THRESHOLD, EvaluationResult, Grade,
    RankingFacts, Reason, ScoreError, ScoreRequest, Scored, TieBreak, aggregate, normalized_floor, rank, round2, score,
};
pub use profile::{
    CORRECTNESS_FLOOR, DEFAULT_PROFILE, ProfileRegistry, SAFETY_FLOOR, ScoringProfile, builtin_profiles,
    default_likert_anchors,
};
pub use promote::*;
pub use report::*;
pub use rubric::{
    ResolvedRubric, RubricCriterion, RubricDefinition, RubricError, RubricFile, RubricLoad, RubricSource,
    RubricSources, lint_rubric, lint_workflow_evaluation, load_rubric, looks_like_rubric, resolve_rubric, spec_of,
    validate_criteria,
};
pub use run_scores::{
    RunScores, ScoreOrigin, collect_run_scores, judged_criteria, run_context, run_metric, score_source,
};

pub mod compliance;
