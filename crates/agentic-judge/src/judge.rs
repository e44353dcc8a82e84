//! The judging protocol: pointwise rubric grading and swap-order pairwise comparison.
//!
//! For every call: the criteria (and, pairwise, the candidates) are put in an order drawn
//! from the case seed; the prompt is rendered from a versioned template; the reply schema is
//! sent as structured output; the reply is validated; one repair is attempted; a criterion
//! still without a usable answer is `errored`. Samples are combined by mean or majority;
//! several judges by majority vote. Pairwise comparisons are judged in both orders; an order
//! disagreement becomes a tie or a rerun, and the position-bias rate is reported.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use agentic_adapters::{AdaptiveLimiter, ChatMessage, ChatRequest, ChatResponse, ModelProvider, ProviderError, Role};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::task::JoinSet;

use crate::cache::{CacheIdentity, CacheMode, JudgeCache};
use crate::config::{Aggregation, DisagreementPolicy, JudgeConfig, JudgeModelConfig, ProviderKind};
use crate::error::JudgeError;
use crate::prompt::{JudgeCriterion, PromptTemplate, rubric_hash, sha256_hex};
use crate::reply::{CheckedReply, CriterionAnswer, Preferred, ReplyKind, check_reply_with, reply_schema};
use crate::verdict::{
    CriterionStatus, CriterionVerdict, JudgeMeta, JudgeSamples, JudgeUsage, PairCriterionVerdict, PairRound,
    PairwiseVerdict, ShownOrder, VerbosityCheck, Verdict, Winner,
};

/// Words that add length and no information, appended by the anti-verbosity check.
pub const VERBOSITY_PADDING: &str = "\n\nTo restate the above in more detail: the answer above addresses the task as it was stated. \
It has been carefully considered, thoroughly reviewed and double-checked for completeness, accuracy and clarity, \
and it follows established best practices throughout. Every part of the task has been taken into account. \
In conclusion, the response above is a comprehensive, well-structured and high-quality answer to the task.";

/// One candidate to grade against a rubric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeCase {
    /// A stable id (the seed of the case derives from it).
    pub id: String,
    /// The task the system under test was given.
    pub task: String,
    /// The output to grade.
    pub candidate: String,
    /// A reference answer, when there is one.
    #[serde(default)]
    pub reference: Option<String>,
    /// The criteria.
    pub criteria: Vec<JudgeCriterion>,
}

/// Two candidates to compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairCase {
    /// A stable id.
    pub id: String,
    /// The task.
    pub task: String,
    /// A reference answer, when there is one.
    #[serde(default)]
    pub reference: Option<String>,
    /// Candidate A.
    pub a: String,
    /// Candidate B.
    pub b: String,
    /// The criteria.
    pub criteria: Vec<JudgeCriterion>,
}

/// Puts first among a reply's `problems` that the model stopped at the token limit
/// (`finish_reason` `length`, Anthropic's `max_tokens`), when it did and the reply had
/// problems: cut short, JSON is seldom valid, and a reply cut again under the same limit
/// needs the configuration changed, which the message says (it reaches the model in the
/// repair, and the user in the error).
fn note_cut_short(response: &ChatResponse, handle: &JudgeHandle, problems: &mut Vec<String>) {
    if !problems.is_empty() && matches!(response.finish_reason.as_deref(), Some("length" | "max_tokens")) {
        problems.insert(
            0,
            format!(
                "the reply was cut off at the token limit (`max_tokens` {} of judge `{}`) before it ended: answer \
                 shorter; if this persists, raise `max_tokens` in the judge configuration",
                handle.config.max_tokens, handle.config.name
            ),
        );
    }
}

/// What [`Judge::ask_structured`] asks: a prompt, and what its reply must be.
#[derive(Clone, Copy)]
pub struct StructuredQuestion<'a> {
    /// The versioned prompt template.
    pub template: &'a PromptTemplate,
    /// What the template is rendered with.
    pub context: &'a serde_json::Value,
    /// The JSON Schema the reply must validate against (sent as structured output, unless
    /// `sent_schema` is given).
    pub schema: &'a serde_json::Value,
    /// A narrower schema to send as structured output instead, which a model's constrained
    /// decoding is held to; replies are still checked against `schema` and `rules`, whose
    /// messages (which reach the model in the repair) say more than a schema error.
    pub sent_schema: Option<&'a serde_json::Value>,
    /// What a schema cannot say (`Err` names the problem); a reply that breaks it gets the
    /// repair too.
    pub rules: &'a (dyn Fn(&serde_json::Value) -> Result<(), String> + Sync),
}

struct JudgeHandle {
    config: JudgeModelConfig,
    provider: Option<Arc<dyn ModelProvider>>,
}

struct Inner {
    config: JudgeConfig,
    judges: Vec<JudgeHandle>,
    seed: u64,
    pointwise: PromptTemplate,
    pairwise: PromptTemplate,
    repair: PromptTemplate,
    cache: Option<JudgeCache>,
    /// Reply schemas and their compiled validators, by reply kind and rubric hash.
    specs: Mutex<HashMap<String, Arc<ReplySpec>>>,
}

/// The reply schema of one rubric, compiled once.
struct ReplySpec {
    schema: serde_json::Value,
    validator: jsonschema::Validator,
    rubric_hash: String,
}

/// Builds a [`Judge`].
pub struct JudgeBuilder {
    config: JudgeConfig,
    providers: Option<Vec<Arc<dyn ModelProvider>>>,
    cache: Option<JudgeCache>,
    pointwise: PromptTemplate,
    pairwise: PromptTemplate,
}

impl std::fmt::Debug for JudgeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeBuilder").field("config", &self.config).finish_non_exhaustive()
    }
}

impl JudgeBuilder {
    /// Uses these providers (one per configured judge, in order) instead of building clients.
    pub fn providers(mut self, providers: Vec<Arc<dyn ModelProvider>>) -> JudgeBuilder {
        self.providers = Some(providers);
        self
    }

    /// Uses a reply cache. In replay mode no client is built and no model is ever called.
    pub fn cache(mut self, cache: JudgeCache) -> JudgeBuilder {
        self.cache = Some(cache);
        self
    }

    /// Replaces the pointwise prompt template.
    pub fn pointwise_template(mut self, template: PromptTemplate) -> JudgeBuilder {
        self.pointwise = template;
        self
    }

    /// Replaces the pairwise prompt template.
    pub fn pairwise_template(mut self, template: PromptTemplate) -> JudgeBuilder {
        self.pairwise = template;
        self
    }

    /// Checks the configuration and builds the judge.
    pub fn build(self) -> Result<Judge, JudgeError> {
        self.config.validate().map_err(JudgeError::Input)?;
        let replay = self.cache.as_ref().is_some_and(|cache| cache.mode() == CacheMode::Replay);
        let providers: Vec<Option<Arc<dyn ModelProvider>>> = match (self.providers, replay) {
            (_, true) => self.config.judges.iter().map(|_| None).collect(),
            (Some(providers), false) => {
                if providers.len() != self.config.judges.len() {
                    return Err(JudgeError::Input(format!(
                        "{} providers given for {} configured judges; give one per judge",
                        providers.len(),
                        self.config.judges.len()
                    )));
                }
                providers.into_iter().map(Some).collect()
            }
            (None, false) => {
                let limiter = Arc::new(AdaptiveLimiter::new(self.config.max_concurrency));
                self.config
                    .judges
                    .iter()
                    .map(|judge| judge.client(limiter.clone()).map(Some))
                    .collect::<Result<_, _>>()?
            }
        };
        let seed = self.config.seed.unwrap_or_else(|| {
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0x5eed)
        });
        let judges = self
            .config
            .judges
            .iter()
            .cloned()
            .zip(providers)
            .map(|(config, provider)| JudgeHandle { config, provider })
            .collect();
        Ok(Judge {
            inner: Arc::new(Inner {
                config: self.config,
                judges,
                seed,
                pointwise: self.pointwise,
                pairwise: self.pairwise,
                repair: PromptTemplate::repair(),
                cache: self.cache,
                specs: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// An LLM judge running the bias-aware protocol. Cheap to clone; clones share clients,
/// limiter and cache.
#[derive(Clone)]
pub struct Judge {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge").field("seed", &self.inner.seed).finish_non_exhaustive()
    }
}

/// What one call produced.
struct CallResult {
    checked: CheckedReply,
    error: Option<String>,
    usage: JudgeUsage,
}

impl Judge {
    /// Starts building a judge from `config`.
    pub fn builder(config: JudgeConfig) -> JudgeBuilder {
        JudgeBuilder {
            config,
            providers: None,
            cache: None,
            pointwise: PromptTemplate::pointwise(),
            pairwise: PromptTemplate::pairwise(),
        }
    }

    /// The run seed (recorded; every case seed derives from it and the case id).
    pub fn seed(&self) -> u64 {
        self.inner.seed
    }

    /// The configuration.
    pub fn config(&self) -> &JudgeConfig {
        &self.inner.config
    }

    /// A copy of this judge with another run seed (for confidence runs).
    pub fn reseeded(&self, seed: u64) -> Judge {
        let inner = &self.inner;
        Judge {
            inner: Arc::new(Inner {
                config: inner.config.clone(),
                judges: inner
                    .judges
                    .iter()
                    .map(|handle| JudgeHandle { config: handle.config.clone(), provider: handle.provider.clone() })
                    .collect(),
                seed,
                pointwise: inner.pointwise.clone(),
                pairwise: inner.pairwise.clone(),
                repair: inner.repair.clone(),
                cache: inner.cache.clone(),
                specs: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The seed of case `case_id`: the run seed and the id hashed together, so a case gets the
    /// same orders whatever else runs beside it. An OpenAI-compatible service is sent its low
    /// 31 bits ([`agentic_adapters::WIRE_SEED_MASK`]), the most every one of them takes.
    pub fn case_seed(&self, case_id: &str) -> u64 {
        let digest = sha256_hex(format!("{}:{case_id}", self.inner.seed).as_bytes());
        u64::from_str_radix(&digest[..16], 16).unwrap_or(self.inner.seed)
    }

    /// The reply schema (and its validator) for `kind` about `criteria`, built once per rubric.
    fn spec(&self, kind: ReplyKind, criteria: &[JudgeCriterion]) -> Result<Arc<ReplySpec>, JudgeError> {
        let rubric = rubric_hash(criteria);
        let key = format!("{kind:?}:{rubric}");
        let mut specs = self.inner.specs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(spec) = specs.get(&key) {
            return Ok(spec.clone());
        }
        let schema = reply_schema(kind, criteria);
        let validator = jsonschema::validator_for(&schema)
            .map_err(|error| JudgeError::Input(format!("the reply schema of this rubric does not compile: {error}")))?;
        let spec = Arc::new(ReplySpec { schema, validator, rubric_hash: rubric });
        specs.insert(key, spec.clone());
        Ok(spec)
    }

    /// The identities logged with verdicts made with `template` about `criteria`.
    pub fn metas(&self, template: &PromptTemplate, criteria: &[JudgeCriterion], seed: u64) -> Vec<JudgeMeta> {
        let rubric = rubric_hash(criteria);
        self.metas_with(template, &rubric, seed)
    }

    fn metas_with(&self, template: &PromptTemplate, rubric: &str, seed: u64) -> Vec<JudgeMeta> {
        self.inner
            .judges
            .iter()
            .map(|handle| JudgeMeta {
                judge: handle.config.name.clone(),
                provider: provider_name(handle.config.provider).into(),
                model: handle.config.model.clone(),
                judge_version: handle.config.version.clone(),
                prompt_id: template.id.clone(),
                prompt_version: template.version.clone(),
                prompt_hash: template.hash.clone(),
                rubric_hash: rubric.to_owned(),
                temperature: self.inner.config.temperature,
                seed,
                sampling_count: self.inner.config.sampling_count,
            })
            .collect()
    }

    /// Grades one candidate against its rubric (and, when enabled, runs the anti-verbosity check).
    pub async fn grade(&self, case: &JudgeCase) -> Result<Verdict, JudgeError> {
        let mut verdict = self.grade_once(case).await?;
        if self.inner.config.anti_verbosity {
            let padded = JudgeCase {
                id: format!("{}#padded", case.id),
                candidate: format!("{}{VERBOSITY_PADDING}", case.candidate),
                ..case.clone()
            };
            let padded_verdict = self.grade_once(&padded).await?;
            verdict.usage.add(&padded_verdict.usage);
            let mut rewarded = Vec::new();
            let mut padded_scores = BTreeMap::new();
            for criterion in &verdict.criteria {
                let padded_score = padded_verdict.score(&criterion.name);
                if let (Some(original), Some(padded)) = (criterion.score, padded_score)
                    && padded >= original + 1.0
                {
                    rewarded.push(criterion.name.clone());
                }
                padded_scores.insert(criterion.name.clone(), padded_score);
            }
            if !rewarded.is_empty() {
                tracing::warn!(case = %case.id, ?rewarded, "judge rewarded empty padding (verbosity bias)");
            }
            verdict.verbosity = Some(VerbosityCheck { padded_scores, flagged: !rewarded.is_empty(), rewarded });
        }
        Ok(verdict)
    }

    async fn grade_once(&self, case: &JudgeCase) -> Result<Verdict, JudgeError> {
        if case.criteria.is_empty() {
            return Err(JudgeError::Input(format!(
                "case `{}` has no criteria to judge; give the rubric criteria",
                case.id
            )));
        }
        let seed = self.case_seed(&case.id);
        let spec = self.spec(ReplyKind::Pointwise, &case.criteria)?;
        let sampling_count = self.inner.config.sampling_count;
        let mut tasks = JoinSet::new();
        let mut presented_order = Vec::new();
        for judge_index in 0..self.inner.judges.len() {
            for sample in 0..sampling_count {
                let sample_seed = seed.wrapping_add(u64::from(sample));
                let mut criteria = case.criteria.clone();
                criteria.shuffle(&mut ChaCha8Rng::seed_from_u64(sample_seed));
                if judge_index == 0 && sample == 0 {
                    presented_order = criteria.iter().map(|c| c.name.clone()).collect();
                }
                let context = json!({
                    "task": case.task,
                    "reference": case.reference,
                    "candidate": case.candidate,
                    "criteria": criteria,
                    "names": criteria.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
                });
                let (system, user) = self.inner.pointwise.render(&context)?;
                let judge = self.clone();
                let spec = spec.clone();
                let all_criteria = case.criteria.clone();
                let case_id = case.id.clone();
                tasks.spawn(async move {
                    let result = judge
                        .call_checked(
                            judge_index,
                            &case_id,
                            ReplyKind::Pointwise,
                            system,
                            user,
                            &spec,
                            &all_criteria,
                            sample_seed,
                        )
                        .await;
                    (judge_index, sample, result)
                });
            }
        }
        let mut results: BTreeMap<(usize, u32), CallResult> = BTreeMap::new();
        while let Some(joined) = tasks.join_next().await {
            let (judge_index, sample, result) =
                joined.map_err(|error| JudgeError::Input(format!("a judge task failed: {error}")))?;
            results.insert((judge_index, sample), result?);
        }
        let mut usage = JudgeUsage::default();
        for result in results.values() {
            usage.add(&result.usage);
        }
        let criteria = case
            .criteria
            .iter()
            .map(|criterion| self.combine_pointwise(criterion, &results, sampling_count))
            .collect::<Vec<_>>();
        let verdict = Verdict {
            case_id: case.id.clone(),
            seed,
            presented_order,
            criteria,
            judges: self.metas_with(&self.inner.pointwise, &spec.rubric_hash, seed),
            usage,
            verbosity: None,
        };
        for meta in &verdict.judges {
            tracing::info!(
                case = %verdict.case_id, judge = %meta.judge, model = %meta.model, version = %meta.judge_version,
                prompt = %format!("{}@{}", meta.prompt_id, meta.prompt_version), temperature = meta.temperature,
                seed = meta.seed, "verdict"
            );
        }
        Ok(verdict)
    }

    fn combine_pointwise(
        &self,
        criterion: &JudgeCriterion,
        results: &BTreeMap<(usize, u32), CallResult>,
        sampling_count: u32,
    ) -> CriterionVerdict {
        let mut judges = Vec::new();
        let mut evidence = None;
        let mut errors = Vec::new();
        for (judge_index, handle) in self.inner.judges.iter().enumerate() {
            let mut scores = Vec::new();
            for sample in 0..sampling_count {
                let result = &results[&(judge_index, sample)];
                match result.checked.answers.get(&criterion.name) {
                    Some(CriterionAnswer::Score { score, evidence: text }) => {
                        scores.push(Some(*score));
                        if evidence.is_none() {
                            evidence = Some(text.clone());
                        }
                    }
                    _ => {
                        scores.push(None);
                        let reason = result.error.clone().unwrap_or_else(|| {
                            let own: Vec<&String> = result
                                .checked
                                .problems
                                .iter()
                                .filter(|p| p.contains(&format!("`{}`", criterion.name)))
                                .collect();
                            match own.first() {
                                Some(problem) => (*problem).clone(),
                                None => result.checked.problems.join("; "),
                            }
                        });
                        errors.push(format!("{} sample {sample}: {reason}", handle.config.name));
                    }
                }
            }
            let usable: Vec<i64> = scores.iter().flatten().copied().collect();
            let aggregated = aggregate(&usable, self.inner.config.aggregation);
            judges.push(JudgeSamples { judge: handle.config.name.clone(), scores, aggregated });
        }
        let judge_scores: Vec<f64> = judges.iter().filter_map(|j| j.aggregated).collect();
        let score = majority_vote(&judge_scores);
        let judges_agree = judge_scores.windows(2).all(|pair| pair[0].round() == pair[1].round());
        CriterionVerdict {
            name: criterion.name.clone(),
            status: if score.is_some() { CriterionStatus::Scored } else { CriterionStatus::Errored },
            score,
            min: criterion.min,
            max: criterion.max,
            evidence: if score.is_some() { evidence } else { None },
            error: if score.is_none() { Some(errors.join("; ")) } else { None },
            judges,
            judges_agree,
        }
    }

    /// Compares two candidates with the swap-order protocol.
    pub async fn compare(&self, case: &PairCase) -> Result<PairwiseVerdict, JudgeError> {
        if case.criteria.is_empty() {
            return Err(JudgeError::Input(format!(
                "case `{}` has no criteria to judge; give the rubric criteria",
                case.id
            )));
        }
        let seed = self.case_seed(&case.id);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut orders = [ShownOrder::AFirst, ShownOrder::BFirst];
        orders.shuffle(&mut rng);
        let first_shown = orders[0];
        let config = &self.inner.config;
        let mut usage = JudgeUsage::default();
        // Per judge, per criterion: the rounds, and the resolution.
        let mut per_judge: Vec<BTreeMap<String, PairState>> = Vec::new();
        for judge_index in 0..self.inner.judges.len() {
            let mut states: BTreeMap<String, PairState> =
                case.criteria.iter().map(|c| (c.name.clone(), PairState::default())).collect();
            let attempts = 1 + if config.on_disagreement == DisagreementPolicy::Rerun { config.max_reruns } else { 0 };
            for attempt in 0..attempts {
                let pending: Vec<String> =
                    states.iter().filter(|(_, state)| state.resolved.is_none()).map(|(name, _)| name.clone()).collect();
                if pending.is_empty() {
                    break;
                }
                let round_orders: Vec<ShownOrder> =
                    if config.swap_order { vec![first_shown, flip(first_shown)] } else { vec![first_shown] };
                let mut outcomes = Vec::new();
                for (round_index, order) in round_orders.iter().enumerate() {
                    let round_seed = seed.wrapping_add(u64::from(attempt) * 1000 + round_index as u64);
                    let result = self.pair_round(judge_index, case, *order, round_seed).await?;
                    usage.add(&result.usage);
                    outcomes.push((*order, result));
                }
                for name in &pending {
                    let state = states.get_mut(name).expect("a state per criterion");
                    let mut rounds = Vec::new();
                    let mut failure = None;
                    for (order, result) in &outcomes {
                        match result.checked.answers.get(name) {
                            Some(CriterionAnswer::Pair { first, second, preferred, .. }) => {
                                rounds.push(to_round(
                                    &self.inner.judges[judge_index].config.name,
                                    *order,
                                    *first,
                                    *second,
                                    *preferred,
                                ));
                            }
                            _ => {
                                failure =
                                    Some(result.error.clone().unwrap_or_else(|| result.checked.problems.join("; ")));
                            }
                        }
                    }
                    state.rounds.extend(rounds.iter().cloned());
                    if let Some(failure) = failure {
                        state.error = Some(failure);
                        state.resolved = Some(None);
                        continue;
                    }
                    let consistent = rounds.len() < 2 || rounds_agree(&rounds[0], &rounds[1]);
                    if attempt == 0 {
                        state.first_pass_inconsistent = !consistent;
                    } else {
                        state.reruns += 1;
                    }
                    if consistent {
                        state.consistent = true;
                        state.resolved = Some(Some(resolve(&rounds, rounds[0].winner)));
                    } else if attempt + 1 == attempts {
                        state.resolved = Some(Some(resolve(&rounds, Winner::Tie)));
                    }
                }
            }
            per_judge.push(states);
        }
        let mut criteria = Vec::new();
        let mut inconsistent = 0usize;
        let mut compared = 0usize;
        let mut first_preferred = 0usize;
        let mut decisions = 0usize;
        for criterion in &case.criteria {
            let states: Vec<&PairState> = per_judge.iter().map(|states| &states[&criterion.name]).collect();
            let mut rounds = Vec::new();
            let mut winners = Vec::new();
            let mut score_a = Vec::new();
            let mut score_b = Vec::new();
            let mut errors = Vec::new();
            for state in &states {
                rounds.extend(state.rounds.iter().cloned());
                if let Some(error) = &state.error {
                    errors.push(error.clone());
                }
                if let Some(Some((winner, a, b))) = state.resolved {
                    winners.push(winner);
                    score_a.push(a);
                    score_b.push(b);
                    compared += 1;
                    inconsistent += usize::from(state.first_pass_inconsistent);
                }
            }
            for round in &rounds {
                if round.winner != Winner::Tie {
                    decisions += 1;
                    first_preferred += usize::from(round.preferred_first);
                }
            }
            let winner = vote_winner(&winners);
            criteria.push(PairCriterionVerdict {
                name: criterion.name.clone(),
                status: if winner.is_some() { CriterionStatus::Scored } else { CriterionStatus::Errored },
                winner,
                score_a: mean(&score_a),
                score_b: mean(&score_b),
                consistent: states.iter().all(|s| s.consistent),
                first_pass_inconsistent: states.iter().any(|s| s.first_pass_inconsistent),
                reruns: states.iter().map(|s| s.reruns).max().unwrap_or(0),
                rounds,
                error: if winner.is_none() { Some(errors.join("; ")) } else { None },
            });
        }
        let position_bias_rate = if compared == 0 { 0.0 } else { inconsistent as f64 / compared as f64 };
        let first_position_rate = (decisions > 0).then(|| first_preferred as f64 / decisions as f64);
        let mut warnings = Vec::new();
        if position_bias_rate > config.position_bias_warning {
            warnings.push(format!(
                "position bias: the two orders disagreed on {:.0}% of comparisons (warning above {:.0}%); disagreements were resolved as {}",
                position_bias_rate * 100.0,
                config.position_bias_warning * 100.0,
                match config.on_disagreement {
                    DisagreementPolicy::Tie => "ties",
                    DisagreementPolicy::Rerun => "reruns, then ties",
                }
            ));
        }
        if !config.swap_order {
            warnings.push("swap_order is off: position bias cannot be detected".into());
        }
        Ok(PairwiseVerdict {
            case_id: case.id.clone(),
            seed,
            first_shown,
            criteria,
            position_bias_rate,
            first_position_rate,
            warnings,
            judges: self.metas(&self.inner.pairwise, &case.criteria, seed),
            usage,
        })
    }

    async fn pair_round(
        &self,
        judge_index: usize,
        case: &PairCase,
        order: ShownOrder,
        seed: u64,
    ) -> Result<CallResult, JudgeError> {
        let mut criteria = case.criteria.clone();
        criteria.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let (first, second) = match order {
            ShownOrder::AFirst => (&case.a, &case.b),
            ShownOrder::BFirst => (&case.b, &case.a),
        };
        let context = json!({
            "task": case.task,
            "reference": case.reference,
            "first": first,
            "second": second,
            "criteria": criteria,
            "names": criteria.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        });
        let (system, user) = self.inner.pairwise.render(&context)?;
        let spec = self.spec(ReplyKind::Pairwise, &case.criteria)?;
        self.call_checked(judge_index, &case.id, ReplyKind::Pairwise, system, user, &spec, &case.criteria, seed).await
    }

    /// One judged call: send, validate, repair once.
    #[allow(clippy::too_many_arguments)]
    async fn call_checked(
        &self,
        judge_index: usize,
        case_id: &str,
        kind: ReplyKind,
        system: String,
        user: String,
        spec: &ReplySpec,
        criteria: &[JudgeCriterion],
        seed: u64,
    ) -> Result<CallResult, JudgeError> {
        let handle = &self.inner.judges[judge_index];
        let template = match kind {
            ReplyKind::Pointwise => &self.inner.pointwise,
            ReplyKind::Pairwise => &self.inner.pairwise,
        };
        let identity = CacheIdentity {
            judge: handle.config.name.clone(),
            provider: provider_name(handle.config.provider).into(),
            model: handle.config.model.clone(),
            version: handle.config.version.clone(),
            prompt_hash: template.hash.clone(),
            rubric_hash: spec.rubric_hash.clone(),
        };
        let mut messages = vec![ChatMessage::new(Role::System, system), ChatMessage::new(Role::User, user)];
        let request = ChatRequest {
            model: handle.config.model.clone(),
            messages: messages.clone(),
            temperature: Some(self.inner.config.temperature),
            max_tokens: Some(handle.config.max_tokens),
            response_schema: Some(spec.schema.clone()),
            seed: Some(seed),
        };
        let caller = format!("judge:{}:{case_id}", handle.config.name);
        let mut usage = JudgeUsage::default();
        let first = match self.call(handle, &identity, &caller, &request, &mut usage).await {
            Ok(response) => response,
            Err(error) => {
                return Ok(CallResult { checked: CheckedReply::default(), error: Some(error.to_string()), usage });
            }
        };
        let mut checked = check_reply_with(kind, &first.content, &spec.validator, criteria);
        note_cut_short(&first, handle, &mut checked.problems);
        if checked.is_complete(criteria) {
            return Ok(CallResult { checked, error: None, usage });
        }
        // One repair: show the model its reply and what was wrong with it.
        usage.repairs += 1;
        let names: Vec<&str> = criteria.iter().map(|c| c.name.as_str()).collect();
        let (_, repair_text) = self.inner.repair.render(&json!({"problems": checked.problems, "names": names}))?;
        messages.push(ChatMessage::new(Role::Assistant, first.content.clone()));
        messages.push(ChatMessage::new(Role::User, repair_text));
        let repair_request = ChatRequest { messages, ..request };
        let repaired = match self.call(handle, &identity, &caller, &repair_request, &mut usage).await {
            Ok(response) => {
                let mut checked = check_reply_with(kind, &response.content, &spec.validator, criteria);
                note_cut_short(&response, handle, &mut checked.problems);
                checked
            }
            Err(error) => {
                let mut kept = checked;
                kept.problems.push(format!("repair call failed: {error}"));
                return Ok(CallResult { checked: kept, error: None, usage });
            }
        };
        // Answers valid in the first reply stay; the repaired reply overrides and completes them.
        let mut merged = checked.clone();
        merged.answers.extend(repaired.answers);
        merged.problems = repaired.problems;
        for criterion in criteria {
            if !merged.answers.contains_key(&criterion.name) {
                let problem = format!(
                    "criterion `{}` has no valid answer after one repair (first reply: {})",
                    criterion.name,
                    checked.problems.join("; ")
                );
                merged.problems.push(problem);
            }
        }
        Ok(CallResult { checked: merged, error: None, usage })
    }

    /// One structured call outside the rubric protocol, by the first configured judge: the
    /// reply must validate against the question's `schema` and then pass its `rules`; after
    /// one repair it is an error naming the problems (never a guess). Goes through the cache
    /// like every judge call. What the calls spent is added to `usage`, also when they fail.
    pub async fn ask_structured(
        &self,
        caller: &str,
        question: &StructuredQuestion<'_>,
        seed: u64,
        usage: &mut JudgeUsage,
    ) -> Result<serde_json::Value, String> {
        let StructuredQuestion { template, context, schema, sent_schema, rules } = *question;
        let sent_schema = sent_schema.unwrap_or(schema);
        let handle = &self.inner.judges[0];
        let validator =
            jsonschema::validator_for(schema).map_err(|error| format!("the reply schema does not compile: {error}"))?;
        let (system, user) = template.render(context).map_err(|error| error.to_string())?;
        let identity = CacheIdentity {
            judge: handle.config.name.clone(),
            provider: provider_name(handle.config.provider).into(),
            model: handle.config.model.clone(),
            version: handle.config.version.clone(),
            prompt_hash: template.hash.clone(),
            rubric_hash: sha256_hex(sent_schema.to_string().as_bytes()),
        };
        let mut messages = vec![ChatMessage::new(Role::System, system), ChatMessage::new(Role::User, user)];
        let request = ChatRequest {
            model: handle.config.model.clone(),
            messages: messages.clone(),
            temperature: Some(self.inner.config.temperature),
            max_tokens: Some(handle.config.max_tokens),
            response_schema: Some(sent_schema.clone()),
            seed: Some(seed),
        };
        let check = |text: &str| -> Result<serde_json::Value, Vec<String>> {
            let value = agentic_core::json_strict::from_str_lenient_surrogates(crate::reply::json_text(text))
                .map_err(|error| vec![format!("the reply is not valid JSON ({error})")])?;
            let problems: Vec<String> = validator
                .iter_errors(&value)
                .map(|error| {
                    let at = error.instance_path().as_str().to_owned();
                    format!("at `{}`: {error}", if at.is_empty() { "/" } else { &at })
                })
                .collect();
            if !problems.is_empty() {
                return Err(problems);
            }
            rules(&value).map(|()| value).map_err(|problem| vec![problem])
        };
        let first = self.call(handle, &identity, caller, &request, usage).await.map_err(|error| error.to_string())?;
        let mut problems = match check(&first.content) {
            Ok(value) => return Ok(value),
            Err(problems) => problems,
        };
        note_cut_short(&first, handle, &mut problems);
        usage.repairs += 1;
        let no_names: [&str; 0] = [];
        let (_, repair_text) = self
            .inner
            .repair
            .render(&json!({"problems": problems, "names": no_names}))
            .map_err(|error| error.to_string())?;
        messages.push(ChatMessage::new(Role::Assistant, first.content));
        messages.push(ChatMessage::new(Role::User, repair_text));
        let repair_request = ChatRequest { messages, ..request };
        let repaired =
            self.call(handle, &identity, caller, &repair_request, usage).await.map_err(|error| error.to_string())?;
        check(&repaired.content).map_err(|mut again| {
            note_cut_short(&repaired, handle, &mut again);
            format!("no valid reply after one repair: {} (first reply: {})", again.join("; "), problems.join("; "))
        })
    }

    async fn call(
        &self,
        handle: &JudgeHandle,
        identity: &CacheIdentity,
        caller: &str,
        request: &ChatRequest,
        usage: &mut JudgeUsage,
    ) -> Result<ChatResponse, ProviderError> {
        usage.calls += 1;
        let key = identity.key(request);
        if let Some(cache) = &self.inner.cache {
            match cache.get(&key).await {
                Ok(Some(response)) => {
                    usage.cache_hits += 1;
                    return Ok(response);
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "judge cache read failed; calling the model"),
            }
            if cache.mode() == CacheMode::Replay {
                return Err(ProviderError::ReplayMiss {
                    step: caller.to_owned(),
                    key,
                    cassette: cache.path().display().to_string(),
                });
            }
        }
        let Some(provider) = &handle.provider else {
            return Err(ProviderError::Config(format!("judge `{}` has no model client", handle.config.name)));
        };
        let response = provider.chat(caller, request).await?;
        usage.prompt_tokens += response.usage.prompt_tokens;
        usage.completion_tokens += response.usage.completion_tokens;
        if let Some(pricing) = &handle.config.pricing {
            usage.cost_usd += pricing.cost(&response.usage);
        }
        if let Some(cache) = &self.inner.cache
            && let Err(error) = cache.put(&key, identity, request, &response).await
        {
            tracing::warn!(%error, "judge cache write failed");
        }
        Ok(response)
    }
}

#[derive(Debug, Default)]
struct PairState {
    rounds: Vec<PairRound>,
    /// `Some(Some((winner, a, b)))` when resolved, `Some(None)` when errored.
    resolved: Option<Option<(Winner, f64, f64)>>,
    consistent: bool,
    first_pass_inconsistent: bool,
    reruns: u32,
    error: Option<String>,
}

fn provider_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "openai",
        ProviderKind::Anthropic => "anthropic",
    }
}

fn flip(order: ShownOrder) -> ShownOrder {
    match order {
        ShownOrder::AFirst => ShownOrder::BFirst,
        ShownOrder::BFirst => ShownOrder::AFirst,
    }
}

fn to_round(judge: &str, order: ShownOrder, first: i64, second: i64, preferred: Preferred) -> PairRound {
    let (score_a, score_b) = match order {
        ShownOrder::AFirst => (first, second),
        ShownOrder::BFirst => (second, first),
    };
    let winner = match (preferred, order) {
        (Preferred::Tie, _) => Winner::Tie,
        (Preferred::First, ShownOrder::AFirst) | (Preferred::Second, ShownOrder::BFirst) => Winner::A,
        _ => Winner::B,
    };
    PairRound {
        judge: judge.to_owned(),
        order,
        score_a,
        score_b,
        winner,
        preferred_first: preferred == Preferred::First,
    }
}

/// Two orders agree when they prefer the same candidate and each candidate's score moved by at
/// most one point.
fn rounds_agree(first: &PairRound, second: &PairRound) -> bool {
    first.winner == second.winner
        && (first.score_a - second.score_a).abs() <= 1
        && (first.score_b - second.score_b).abs() <= 1
}

fn resolve(rounds: &[PairRound], winner: Winner) -> (Winner, f64, f64) {
    let n = rounds.len().max(1) as f64;
    let a = rounds.iter().map(|r| r.score_a as f64).sum::<f64>() / n;
    let b = rounds.iter().map(|r| r.score_b as f64).sum::<f64>() / n;
    (winner, a, b)
}

fn vote_winner(winners: &[Winner]) -> Option<Winner> {
    if winners.is_empty() {
        return None;
    }
    let mut counts = BTreeMap::new();
    for winner in winners {
        *counts.entry(*winner).or_insert(0usize) += 1;
    }
    let (best, count) = counts.iter().max_by_key(|(_, count)| **count).map(|(w, c)| (*w, *c))?;
    Some(if count * 2 > winners.len() { best } else { Winner::Tie })
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Combines one judge's samples.
pub(crate) fn aggregate(scores: &[i64], aggregation: Aggregation) -> Option<f64> {
    if scores.is_empty() {
        return None;
    }
    match aggregation {
        Aggregation::Mean => Some(scores.iter().sum::<i64>() as f64 / scores.len() as f64),
        Aggregation::Majority => {
            let values: Vec<f64> = scores.iter().map(|s| *s as f64).collect();
            majority_vote(&values)
        }
    }
}

/// The value more than half of `values` share (after rounding), else their median.
pub(crate) fn majority_vote(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    if values.len() == 1 {
        return Some(values[0]);
    }
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for value in values {
        *counts.entry(value.round() as i64).or_default() += 1;
    }
    if let Some((value, _)) = counts.iter().find(|(_, count)| **count * 2 > values.len()) {
        return Some(*value as f64);
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 { sorted[middle] } else { (sorted[middle - 1] + sorted[middle]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_needs_more_than_half_else_median() {
        assert_eq!(majority_vote(&[4.0, 4.0, 2.0]), Some(4.0));
        assert_eq!(majority_vote(&[1.0, 3.0, 5.0]), Some(3.0));
        assert_eq!(majority_vote(&[2.0, 4.0]), Some(3.0));
        assert_eq!(majority_vote(&[]), None);
        assert_eq!(aggregate(&[3, 4, 5, 4], Aggregation::Mean), Some(4.0));
        assert_eq!(aggregate(&[5, 5, 1], Aggregation::Majority), Some(5.0));
    }

    #[test]
    fn swapped_rounds_map_back_to_candidates() {
        // A biased judge prefers whatever is shown first.
        let ab = to_round("j", ShownOrder::AFirst, 5, 2, Preferred::First);
        let ba = to_round("j", ShownOrder::BFirst, 5, 2, Preferred::First);
        assert_eq!((ab.winner, ab.score_a, ab.score_b), (Winner::A, 5, 2));
        assert_eq!((ba.winner, ba.score_a, ba.score_b), (Winner::B, 2, 5));
        assert!(!rounds_agree(&ab, &ba));
        let fair = to_round("j", ShownOrder::BFirst, 2, 5, Preferred::Second);
        assert!(rounds_agree(&ab, &fair));
        assert_eq!(vote_winner(&[Winner::A, Winner::B]), Some(Winner::Tie));
        assert_eq!(vote_winner(&[Winner::A, Winner::A, Winner::B]), Some(Winner::A));
    }
}
