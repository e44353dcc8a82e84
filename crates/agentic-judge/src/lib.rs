//! LLM-as-judge for agentic: anchored rubric prompts, structured verdicts, swap-order
//! pairwise judging, calibration against human labels, drift checks and confidence runs.
//!
//! The protocol (reference guide §8): versioned minijinja prompts with content hashes;
//! structured output (a JSON Schema from schemars, narrowed to the rubric) sent to the model
//! and enforced on the reply, with one repair attempt before a criterion is `errored`;
//! temperature at most 0.1 by default; criteria and candidate order drawn from a recorded
//! seed; pairwise comparisons judged in both orders, with disagreements resolved as ties or
//! reruns and the position-bias rate reported; samples and judges combined by mean or
//! majority. Every verdict carries the judge model, version, prompt version, temperature and
//! seed, and the judge's own token cost.
//!
//! This crate is **not** a model client: it talks to models through the providers of
//! `agentic-adapters` ([`agentic_adapters::OpenAiCompatible`], [`agentic_adapters::Anthropic`]).
//! It does **not** normalize or grade: it fills raw criterion scores, and `agentic-eval`'s
//! scoring engine normalizes them and applies gates and grades ([`hybrid_score`]).

mod cache;
mod calibrate;
mod confidence;
mod config;
mod error;
mod golden;
mod hybrid;
mod judge;
mod prompt;
mod reply;
mod tier3;
mod verdict;

pub use cache::{CacheIdentity, CacheMode, JudgeCache};
pub use calibrate::{
    Agreement, AgreementMetric, CalibrationReport, CaseComparison, DriftReport, agreement, baseline_from, calibrate,
    cohen_kappa, compare_with_baseline, compare_with_labels, grade_golden_set,
};
pub use confidence::{
    CaseConfidence, ConfidenceReport, ConfidenceStatus, HIGH_CONFIDENCE_VARIANCE, MEDIUM_CONFIDENCE_VARIANCE, RunStats,
    confidence_runs, run_stats, summarize,
};
pub use config::{
    Aggregation, DisagreementPolicy, JudgeConfig, JudgeModelConfig, MAX_DEFAULT_TEMPERATURE, ProviderKind,
};
pub use error::JudgeError;
pub use golden::{Baseline, GoldenCase, GoldenSet};
pub use hybrid::{HybridInput, HybridResult, JUDGE_VERDICT_COMPLETE, JudgedCriterion, LayerSummary, hybrid_score};
pub use judge::{Judge, JudgeBuilder, JudgeCase, PairCase, StructuredQuestion, VERBOSITY_PADDING};
pub use prompt::{Anchor, JudgeCriterion, PromptTemplate, USER_SEPARATOR, default_anchors, rubric_hash, sha256_hex};
pub use reply::{
    CheckedReply, CriterionAnswer, PairwiseEntry, PairwiseReply, PointwiseEntry, PointwiseReply, Preferred, ReplyKind,
    check_reply, check_reply_with, reply_schema,
};
pub use tier3::{JudgeTier3Evaluator, tier3_schema, tier3_schema_for, tier3_template};
pub use verdict::{
    CriterionStatus, CriterionVerdict, JudgeMeta, JudgeSamples, JudgeUsage, PairCriterionVerdict, PairRound,
    PairwiseVerdict, ShownOrder, VerbosityCheck, Verdict, Winner,
};
