//! What a judge returns: per-criterion raw scores (or `errored`), pairwise winners with the
//! swap-order evidence, the metadata every verdict logs, and the judge's own token cost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Who judged and how; logged with every verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeMeta {
    /// The judge name from the configuration.
    pub judge: String,
    /// `openai`, `anthropic`, or the provider's name.
    pub provider: String,
    /// The model name.
    pub model: String,
    /// The judge version label.
    pub judge_version: String,
    /// The prompt template id.
    pub prompt_id: String,
    /// The prompt template version.
    pub prompt_version: String,
    /// SHA-256 of the prompt template.
    pub prompt_hash: String,
    /// SHA-256 of the rubric criteria.
    pub rubric_hash: String,
    /// The sampling temperature sent.
    pub temperature: f64,
    /// The seed of this case (order randomization and sampling).
    pub seed: u64,
    /// Samples per criterion.
    pub sampling_count: u32,
}

/// Whether a criterion got a usable score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CriterionStatus {
    /// A score on the criterion's scale.
    Scored,
    /// No usable score (invalid replies after one repair, or a failed call). Never a pass.
    Errored,
}

/// One judge's samples for one criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSamples {
    /// The judge name.
    pub judge: String,
    /// Each sample's score (`None` where that sample errored).
    pub scores: Vec<Option<i64>>,
    /// The samples combined (mean or majority), when any was usable.
    pub aggregated: Option<f64>,
}

/// One criterion's pointwise verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionVerdict {
    /// The criterion name.
    pub name: String,
    /// Scored or errored.
    pub status: CriterionStatus,
    /// The raw score on the criterion's scale (the judges combined), when scored.
    pub score: Option<f64>,
    /// Lowest score of the scale.
    pub min: i64,
    /// Highest score of the scale.
    pub max: i64,
    /// Evidence quoted by the judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Why it errored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each judge's samples.
    pub judges: Vec<JudgeSamples>,
    /// Whether all judges gave the same (rounded) score.
    pub judges_agree: bool,
}

/// Tokens and money the judge spent (kept apart from the system under test's).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct JudgeUsage {
    /// Model calls made or replayed.
    pub calls: u64,
    /// Calls answered from the cache.
    pub cache_hits: u64,
    /// Repair calls after an unusable reply.
    pub repairs: u64,
    /// Prompt tokens of calls actually made.
    pub prompt_tokens: u64,
    /// Completion tokens of calls actually made.
    pub completion_tokens: u64,
    /// Dollars for calls actually made (0 without configured prices).
    pub cost_usd: f64,
}

impl JudgeUsage {
    /// Adds `other` to this tally.
    pub fn add(&mut self, other: &JudgeUsage) {
        self.calls += other.calls;
        self.cache_hits += other.cache_hits;
        self.repairs += other.repairs;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cost_usd += other.cost_usd;
    }
}

/// The anti-verbosity check: the same candidate padded with empty words, judged again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerbosityCheck {
    /// Scores of the padded candidate.
    pub padded_scores: BTreeMap<String, Option<f64>>,
    /// Criteria where padding raised the score by a point or more.
    pub rewarded: Vec<String>,
    /// Whether the judge rewarded padding anywhere.
    pub flagged: bool,
}

/// A pointwise verdict on one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The case id.
    pub case_id: String,
    /// The case seed.
    pub seed: u64,
    /// The criteria in the order the first sample presented them.
    pub presented_order: Vec<String>,
    /// Per-criterion verdicts in declared order.
    pub criteria: Vec<CriterionVerdict>,
    /// Every judge's identity.
    pub judges: Vec<JudgeMeta>,
    /// Judge cost.
    pub usage: JudgeUsage,
    /// The anti-verbosity check, when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<VerbosityCheck>,
}

impl Verdict {
    /// The raw score of criterion `name`, when it was scored.
    pub fn score(&self, name: &str) -> Option<f64> {
        self.criteria.iter().find(|c| c.name == name).and_then(|c| c.score)
    }

    /// Whether every criterion was scored.
    pub fn all_scored(&self) -> bool {
        self.criteria.iter().all(|c| c.status == CriterionStatus::Scored)
    }
}

/// Which candidate won a pairwise comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Winner {
    /// Candidate A.
    A,
    /// Candidate B.
    B,
    /// Neither (including an order disagreement resolved as a tie).
    Tie,
}

/// Which candidate was shown first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShownOrder {
    /// A first, then B.
    AFirst,
    /// B first, then A.
    BFirst,
}

/// One judged order of a pairwise comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRound {
    /// The judge.
    pub judge: String,
    /// Which candidate was first.
    pub order: ShownOrder,
    /// A's score.
    pub score_a: i64,
    /// B's score.
    pub score_b: i64,
    /// The preferred candidate.
    pub winner: Winner,
    /// Whether the preferred candidate was the one shown first.
    pub preferred_first: bool,
}

/// One criterion's pairwise verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairCriterionVerdict {
    /// The criterion name.
    pub name: String,
    /// Scored or errored.
    pub status: CriterionStatus,
    /// The winner after the swap protocol and the vote across judges.
    pub winner: Option<Winner>,
    /// A's mean score over the rounds used.
    pub score_a: Option<f64>,
    /// B's mean score over the rounds used.
    pub score_b: Option<f64>,
    /// Whether both orders agreed (for every judge), after reruns.
    pub consistent: bool,
    /// Whether the first pair of orders disagreed (the position-bias signal).
    pub first_pass_inconsistent: bool,
    /// Reruns spent on this criterion.
    pub reruns: u32,
    /// Every round judged.
    pub rounds: Vec<PairRound>,
    /// Why it errored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A pairwise verdict on two candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairwiseVerdict {
    /// The case id.
    pub case_id: String,
    /// The case seed.
    pub seed: u64,
    /// Which candidate the first round showed first (randomized by the seed).
    pub first_shown: ShownOrder,
    /// Per-criterion verdicts.
    pub criteria: Vec<PairCriterionVerdict>,
    /// Share of (judge, criterion) comparisons whose two orders disagreed on the first pass.
    pub position_bias_rate: f64,
    /// Share of non-tie round decisions that went to the candidate shown first (0.5 is unbiased).
    pub first_position_rate: Option<f64>,
    /// Warnings, for example a position-bias rate above the configured threshold.
    pub warnings: Vec<String>,
    /// Every judge's identity.
    pub judges: Vec<JudgeMeta>,
    /// Judge cost.
    pub usage: JudgeUsage,
}

impl PairwiseVerdict {
    /// (A's wins, A's losses, ties) over the scored criteria.
    pub fn counts(&self) -> (u64, u64, u64) {
        let mut counts = (0, 0, 0);
        for criterion in &self.criteria {
            match criterion.winner {
                Some(Winner::A) => counts.0 += 1,
                Some(Winner::B) => counts.1 += 1,
                Some(Winner::Tie) => counts.2 += 1,
                None => {}
            }
        }
        counts
    }
}
