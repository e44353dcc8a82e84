//! The judging protocol over real HTTP: structured output, repair, errored criteria,
//! swap-order pairwise judging against a position-biased judge, sampling, multi-judge votes,
//! anti-verbosity, failure modes of the service, the cache and replay mode.

use agentic_adapters::provider::testing::{Reply, TestServer};
use agentic_judge::{
    Aggregation, CacheMode, CriterionStatus, DisagreementPolicy, Judge, JudgeCache, JudgeConfig, PromptTemplate,
    ReplyKind, ShownOrder, Winner, check_reply, reply_schema,
};
use serde_json::Value;

use crate::support::{self, case, config, is_repair, judge, pair_case, pairwise, pointwise, quality};

/// P3-T001 #5: the judge sends the reply schema as structured output, and its reply is
/// validated against that schema; a reply that breaks it is repaired once or errored.
#[tokio::test]
async fn test_judge_structured_output_schema() {
    let server = TestServer::start(|request| pointwise(request, |_, _| 4)).await.unwrap();
    let verdict = judge(config(&server)).grade(&case("schema", "Paris.")).await.unwrap();
    assert!(verdict.all_scored());
    assert_eq!(verdict.score("correctness"), Some(4.0));

    let sent = &server.requests()[0];
    let format = &sent.body["response_format"];
    assert_eq!(format["type"], "json_schema");
    let schema = &format["json_schema"]["schema"];
    let items = &schema["properties"]["criteria"]["items"];
    let mut names: Vec<String> = items["properties"]["name"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["completeness", "correctness"]);
    assert_eq!(items["properties"]["score"]["maximum"], 5);
    assert_eq!(items["required"], serde_json::json!(["name", "score", "evidence"]));

    // The reply the server sent validates against the schema the judge sent.
    let reply = support::pointwise(sent, |_, _| 4);
    let Reply::Json { body, .. } = reply else { unreachable!("chat replies are JSON") };
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    let criteria = support::criteria();
    assert!(
        check_reply(ReplyKind::Pointwise, content, &reply_schema(ReplyKind::Pointwise, &criteria), &criteria)
            .is_complete(&criteria)
    );
    let validator = jsonschema::validator_for(schema).unwrap();
    assert!(validator.is_valid(&serde_json::from_str::<Value>(content).unwrap()));
    assert!(
        !validator.is_valid(&serde_json::json!({"criteria": [{"name": "correctness", "score": 9, "evidence": ""}]}))
    );
}

#[tokio::test]
async fn invalid_json_is_repaired_once() {
    let server = TestServer::start(|request| {
        if is_repair(request) { pointwise(request, |_, _| 3) } else { Reply::chat("The answer looks good to me, 5/5.") }
    })
    .await
    .unwrap();
    let verdict = judge(config(&server)).grade(&case("repair", "Paris.")).await.unwrap();
    assert!(verdict.all_scored(), "{:?}", verdict.criteria);
    assert_eq!(verdict.score("completeness"), Some(3.0));
    assert_eq!(verdict.usage.repairs, 1);
    assert_eq!(server.request_count(), 2);
    let repair = &server.requests()[1];
    assert!(repair.last_message().contains("not valid JSON"), "{}", repair.last_message());
    assert_eq!(repair.body["messages"][2]["role"], "assistant", "the bad reply is shown back");
}

#[tokio::test]
async fn still_invalid_after_repair_is_errored_never_passed() {
    let server =
        TestServer::start(|_| Reply::chat(r#"{"criteria": [{"name": "correctness", "score": 11, "evidence": "x"}]}"#))
            .await
            .unwrap();
    let verdict = judge(config(&server)).grade(&case("broken", "Paris.")).await.unwrap();
    assert_eq!(server.request_count(), 2, "one call and exactly one repair");
    for criterion in &verdict.criteria {
        assert_eq!(criterion.status, CriterionStatus::Errored, "{criterion:?}");
        assert_eq!(criterion.score, None);
        assert!(criterion.error.as_deref().unwrap().contains(&format!("`{}`", criterion.name)), "{criterion:?}");
    }
    assert!(!verdict.all_scored());
}

#[tokio::test]
async fn a_partly_valid_reply_keeps_its_valid_criterion() {
    // The first reply scores correctness only; the repair still omits completeness.
    let server = TestServer::start(|_| {
        Reply::chat(r#"{"criteria": [{"name": "correctness", "score": 5, "evidence": "Paris"}]}"#)
    })
    .await
    .unwrap();
    let verdict = judge(config(&server)).grade(&case("partial", "Paris.")).await.unwrap();
    assert_eq!(verdict.score("correctness"), Some(5.0));
    let completeness = verdict.criteria.iter().find(|c| c.name == "completeness").unwrap();
    assert_eq!(completeness.status, CriterionStatus::Errored);
}

#[tokio::test]
async fn rate_limited_judge_waits_for_retry_after_and_succeeds() {
    let server =
        TestServer::start(
            |request| {
                if request.index == 0 { Reply::rate_limited(0.2) } else { pointwise(request, |_, _| 5) }
            },
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let verdict = judge(config(&server)).grade(&case("429", "Paris.")).await.unwrap();
    assert!(verdict.all_scored());
    assert!(started.elapsed() >= std::time::Duration::from_millis(190));
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn server_errors_and_hangs_become_errored_criteria() {
    let failing = TestServer::start(|_| Reply::status(500)).await.unwrap();
    let verdict = judge(config(&failing)).grade(&case("500", "Paris.")).await.unwrap();
    assert!(verdict.criteria.iter().all(|c| c.status == CriterionStatus::Errored));
    assert!(verdict.criteria[0].error.as_deref().unwrap().contains("HTTP 500"), "{:?}", verdict.criteria[0].error);
    assert_eq!(failing.request_count(), 3, "one attempt and two retries");

    let hanging = TestServer::start(|_| Reply::Hang).await.unwrap();
    let mut hang_config = config(&hanging);
    hang_config.judges[0].timeout_secs = 0.2;
    hang_config.judges[0].max_retries = 0;
    let verdict = judge(hang_config).grade(&case("hang", "Paris.")).await.unwrap();
    assert!(verdict.criteria.iter().all(|c| c.status == CriterionStatus::Errored));
    assert!(verdict.criteria[0].error.as_deref().unwrap().contains("timed out"), "{:?}", verdict.criteria[0].error);
}

/// P3-T001 #6: the same pair judged in swapped order gives scores within one point, and
/// the protocol records it as consistent.
#[tokio::test]
async fn test_judge_swapped_order_consistency() {
    let server = TestServer::start(|request| pairwise(request, |_, first, second| (quality(first), quality(second))))
        .await
        .unwrap();
    let verdict = judge(config(&server)).compare(&pair_case("fair")).await.unwrap();
    assert_eq!(server.request_count(), 2, "both orders judged");
    let (first, second) = (&server.requests()[0], &server.requests()[1]);
    assert_eq!(support::responses(first).0, support::responses(second).1, "the second call swaps the order");
    for criterion in &verdict.criteria {
        assert!(criterion.consistent, "{criterion:?}");
        assert_eq!(criterion.winner, Some(Winner::A));
        assert_eq!(criterion.rounds.len(), 2);
        let (one, two) = (&criterion.rounds[0], &criterion.rounds[1]);
        assert_ne!(one.order, two.order);
        assert!((one.score_a - two.score_a).abs() <= 1 && (one.score_b - two.score_b).abs() <= 1);
    }
    assert_eq!(verdict.position_bias_rate, 0.0);
    assert!(verdict.warnings.is_empty(), "{:?}", verdict.warnings);
    assert_eq!(verdict.counts(), (2, 0, 0));
}

/// A judge that always prefers whatever it sees first is caught by the swap protocol: every
/// comparison disagrees across orders, becomes a tie, and a position-bias warning is raised.
#[tokio::test]
async fn position_biased_judge_is_exposed_not_trusted() {
    let server = TestServer::start(|request| pairwise(request, |_, _, _| (5, 2))).await.unwrap();
    let verdict = judge(config(&server)).compare(&pair_case("biased")).await.unwrap();
    for criterion in &verdict.criteria {
        assert!(!criterion.consistent && criterion.first_pass_inconsistent, "{criterion:?}");
        assert_eq!(criterion.winner, Some(Winner::Tie), "a disagreement is a tie, not a win");
    }
    assert_eq!(verdict.position_bias_rate, 1.0);
    assert_eq!(verdict.first_position_rate, Some(1.0));
    assert!(verdict.warnings.iter().any(|w| w.contains("position bias")), "{:?}", verdict.warnings);
    assert_eq!(verdict.counts(), (0, 0, 2));

    // With swapping off the same judge would have crowned whichever candidate came first.
    let mut unswapped = config(&server);
    unswapped.swap_order = false;
    let verdict = judge(unswapped).compare(&pair_case("biased")).await.unwrap();
    let expected = match verdict.first_shown {
        ShownOrder::AFirst => Winner::A,
        ShownOrder::BFirst => Winner::B,
    };
    assert!(verdict.criteria.iter().all(|c| c.winner == Some(expected)));
    assert!(verdict.warnings.iter().any(|w| w.contains("cannot be detected")));
}

#[tokio::test]
async fn rerun_policy_judges_again_then_ties() {
    // Biased on the first pair of calls only, fair afterwards.
    let server = TestServer::start(|request| {
        if request.index < 2 {
            pairwise(request, |_, _, _| (5, 2))
        } else {
            pairwise(request, |_, first, second| (quality(first), quality(second)))
        }
    })
    .await
    .unwrap();
    let mut rerun = config(&server);
    rerun.on_disagreement = DisagreementPolicy::Rerun;
    let verdict = judge(rerun).compare(&pair_case("rerun")).await.unwrap();
    assert_eq!(server.request_count(), 4);
    for criterion in &verdict.criteria {
        assert!(criterion.first_pass_inconsistent && criterion.consistent, "{criterion:?}");
        assert_eq!(criterion.reruns, 1);
        assert_eq!(criterion.winner, Some(Winner::A));
    }
    assert_eq!(verdict.position_bias_rate, 1.0, "the bias of the first pass is still reported");
}

/// P3-T001 #8: every verdict carries the judge model, version, prompt version, temperature and seed.
#[tokio::test]
async fn test_judge_logs_model_version() {
    let server = TestServer::start(|request| pointwise(request, |_, _| 4)).await.unwrap();
    let judge = judge(config(&server));
    let verdict = judge.grade(&case("meta", "Paris.")).await.unwrap();
    let meta = &verdict.judges[0];
    assert_eq!(meta.model, "judge-a-model");
    assert_eq!(meta.judge_version, "2026-11-01");
    assert_eq!(meta.provider, "openai");
    assert_eq!((meta.prompt_id.as_str(), meta.prompt_version.as_str()), ("pointwise", "1"));
    assert_eq!(meta.prompt_hash, PromptTemplate::pointwise().hash);
    assert_eq!(meta.rubric_hash.len(), 64);
    assert_eq!(meta.temperature, 0.0);
    assert_eq!(meta.seed, judge.case_seed("meta"));
    assert_eq!(verdict.seed, meta.seed);
    let sent = &server.requests()[0];
    assert_eq!(sent.body["temperature"], 0.0);
    // The wire carries the seed's low 31 bits, which every OpenAI-compatible service takes.
    assert_eq!(sent.body["seed"], meta.seed & agentic_adapters::WIRE_SEED_MASK);
    assert!(sent.body["seed"].as_u64().unwrap() <= i32::MAX as u64);
    // Judge cost is accounted separately: 100 prompt tokens at $1/M plus completion at $2/M.
    assert_eq!(verdict.usage.calls, 1);
    assert_eq!(verdict.usage.prompt_tokens, 100);
    assert!(verdict.usage.cost_usd > 0.0001 && verdict.usage.cost_usd < 0.001, "{}", verdict.usage.cost_usd);
    let json = serde_json::to_value(&verdict).unwrap();
    assert_eq!(json["judges"][0]["prompt_version"], "1");
}

#[tokio::test]
async fn criteria_order_follows_the_recorded_seed() {
    let server = TestServer::start(|request| pointwise(request, |_, _| 4)).await.unwrap();
    let mut many = support::criteria();
    for name in ["clarity", "safety", "style", "brevity"] {
        many.push(agentic_judge::JudgeCriterion::likert(name, "x"));
    }
    let mut orders = std::collections::BTreeSet::new();
    for seed in 0..6 {
        let mut seeded = config(&server);
        seeded.seed = Some(seed);
        let judge = judge(seeded);
        let mut case = case("order", "Paris.");
        case.criteria = many.clone();
        let first = judge.grade(&case).await.unwrap();
        let again = judge.grade(&case).await.unwrap();
        assert_eq!(first.presented_order, again.presented_order, "same seed, same order");
        let shown = names_in_prompt(&server.requests().last().unwrap().last_message());
        assert_eq!(shown, first.presented_order, "the prompt shows the recorded order");
        orders.insert(first.presented_order.clone());
        let mut declared: Vec<String> = first.criteria.iter().map(|c| c.name.clone()).collect();
        declared.sort();
        let mut expected: Vec<String> = many.iter().map(|c| c.name.clone()).collect();
        expected.sort();
        assert_eq!(declared, expected);
    }
    assert!(orders.len() > 1, "different seeds shuffle the criteria differently");
}

fn names_in_prompt(prompt: &str) -> Vec<String> {
    prompt
        .lines()
        .filter_map(|line| line.strip_prefix("### "))
        .map(|line| line.split(" (").next().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn samples_are_aggregated_by_mean_or_majority() {
    let scores = [5, 5, 2];
    let server = TestServer::start(move |request| {
        // Each sample has its own seed (consecutive numbers); the score depends on it.
        let seed = request.body["seed"].as_u64().unwrap();
        pointwise(request, move |_, _| scores[(seed % 3) as usize])
    })
    .await
    .unwrap();
    let mut sampled = config(&server);
    sampled.sampling_count = 3;
    sampled.aggregation = Aggregation::Majority;
    let verdict = judge(sampled.clone()).grade(&case("samples", "Paris.")).await.unwrap();
    assert_eq!(server.request_count(), 3);
    let samples = &verdict.criteria[0].judges[0].scores;
    assert_eq!(samples.len(), 3);
    let mut sorted: Vec<i64> = samples.iter().flatten().copied().collect();
    sorted.sort();
    assert_eq!(sorted, [2, 5, 5]);
    assert_eq!(verdict.score("correctness"), Some(5.0), "majority");
    sampled.aggregation = Aggregation::Mean;
    let verdict = judge(sampled).grade(&case("samples", "Paris.")).await.unwrap();
    assert_eq!(verdict.score("correctness"), Some(4.0), "mean");
}

#[tokio::test]
async fn several_judges_vote_by_majority() {
    let server = TestServer::start(|request| {
        let model = request.body["model"].as_str().unwrap_or_default().to_owned();
        pointwise(request, move |_, _| if model.starts_with("lenient") { 5 } else { 2 })
    })
    .await
    .unwrap();
    let mut panel = JudgeConfig::single(support::judge_config(&server, "strict-a"));
    panel.judges.push(support::judge_config(&server, "strict-b"));
    panel.judges.push(support::judge_config(&server, "lenient"));
    panel.seed = Some(1);
    let verdict = judge(panel).grade(&case("panel", "Lyon.")).await.unwrap();
    assert_eq!(server.request_count(), 3);
    assert_eq!(verdict.score("correctness"), Some(2.0), "two of three judges said 2");
    assert!(!verdict.criteria[0].judges_agree);
    assert_eq!(verdict.judges.len(), 3);
}

#[tokio::test]
async fn anti_verbosity_check_flags_a_judge_that_rewards_padding() {
    let server =
        TestServer::start(|request| pointwise(request, |_, candidate| if candidate.len() > 200 { 5 } else { 3 }))
            .await
            .unwrap();
    let mut checked = config(&server);
    checked.anti_verbosity = true;
    let verdict = judge(checked.clone()).grade(&case("verbose", "Paris.")).await.unwrap();
    let check = verdict.verbosity.as_ref().expect("the check ran");
    assert!(check.flagged);
    assert_eq!(check.rewarded.len(), 2);
    assert_eq!(verdict.score("correctness"), Some(3.0), "the padded score is not used");

    let fair = TestServer::start(|request| pointwise(request, |_, _| 4)).await.unwrap();
    let mut fair_config = config(&fair);
    fair_config.anti_verbosity = true;
    let verdict = judge(fair_config).grade(&case("verbose", "Paris.")).await.unwrap();
    assert!(!verdict.verbosity.unwrap().flagged);
}

#[tokio::test]
async fn cache_hits_skip_the_model_and_replay_never_calls_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("judge-cache.sqlite");
    let server = TestServer::start(|request| pointwise(request, |_, _| 4)).await.unwrap();
    let cache = JudgeCache::open(&path, CacheMode::ReadWrite).await.unwrap();
    let cached = Judge::builder(config(&server)).cache(cache).build().unwrap();
    let first = cached.grade(&case("cached", "Paris.")).await.unwrap();
    let second = cached.grade(&case("cached", "Paris.")).await.unwrap();
    assert_eq!(server.request_count(), 1, "the second verdict came from the cache");
    assert_eq!(second.usage.cache_hits, 1);
    assert_eq!(first.criteria, second.criteria);

    // Replay: same judge, a server that would fail the test if called.
    let replay_cache = JudgeCache::open(&path, CacheMode::Replay).await.unwrap();
    let replay = Judge::builder(config(&server)).cache(replay_cache).build().unwrap();
    let replayed = replay.grade(&case("cached", "Paris.")).await.unwrap();
    assert_eq!(replayed.criteria, first.criteria);
    assert_eq!(server.request_count(), 1, "replay never calls out");

    // A miss in replay mode is errored with a message naming the key, never a pass.
    let missed = replay.grade(&case("other", "Lyon.")).await.unwrap();
    assert!(missed.criteria.iter().all(|c| c.status == CriterionStatus::Errored));
    assert!(
        missed.criteria[0].error.as_deref().unwrap().contains("no recorded exchange"),
        "{:?}",
        missed.criteria[0].error
    );
    assert_eq!(server.request_count(), 1);

    // A new judge version never reuses the stale verdict.
    let mut upgraded = config(&server);
    upgraded.judges[0].version = "2026-12-01".into();
    let cache = JudgeCache::open(&path, CacheMode::ReadWrite).await.unwrap();
    Judge::builder(upgraded).cache(cache).build().unwrap().grade(&case("cached", "Paris.")).await.unwrap();
    assert_eq!(server.request_count(), 2, "a judge change misses the cache");
}
