//! Hybrid scoring (P3-T001): objective, judge and efficiency layers through the scoring
//! engine, with the judge served over real HTTP.

use std::collections::BTreeMap;

use agentic_adapters::provider::testing::TestServer;
use agentic_eval::{CriterionInput, FormulaRegistry, Grade, REQUIRED_GATES, RawScore, TestCounts};
use agentic_judge::{HybridInput, JUDGE_VERDICT_COMPLETE, JudgedCriterion, hybrid_score};
use serde_json::json;

use crate::support::{case, config, judge, pointwise};

fn gates(passed: bool) -> BTreeMap<String, bool> {
    REQUIRED_GATES.iter().map(|gate| ((*gate).to_owned(), passed)).collect()
}

/// Profile A shape: tests 0.60, judge quality 0.25, similarity 0.10, efficiency 0.05.
fn input() -> HybridInput {
    HybridInput {
        hard_gates: gates(true),
        objective: vec![CriterionInput {
            name: "fail_to_pass".into(),
            raw_score: RawScore::Tests(TestCounts { passed: 4, total: 4 }),
            formula_id: "fail_to_pass".into(),
            weight: 0.60,
            critical_floor: None,
            params: None,
            sample_count: None,
        }],
        judged: vec![JudgedCriterion {
            name: "correctness".into(),
            weight: 0.25,
            critical_floor: None,
            formula_id: None,
            params: None,
        }],
        efficiency: vec![
            CriterionInput {
                name: "patch_similarity".into(),
                raw_score: RawScore::Number(0.8),
                formula_id: "zero_one".into(),
                weight: 0.10,
                critical_floor: None,
                params: None,
                sample_count: None,
            },
            CriterionInput {
                name: "latency".into(),
                raw_score: RawScore::Number(12.0),
                formula_id: "lower_is_better".into(),
                weight: 0.05,
                critical_floor: None,
                params: Some(json!({"slo_good": 8, "slo_bad": 30}).as_object().unwrap().clone()),
                sample_count: None,
            },
        ],
        ..HybridInput::default()
    }
}

fn registry() -> FormulaRegistry {
    FormulaRegistry::builtin()
}

/// Weighted mean of the objective and layer-3 criteria alone:
/// (0.60 * 1.0 + 0.10 * 0.8 + 0.05 * 0.818181...) / 0.75.
fn expected_without_judge() -> f64 {
    let weighted: f64 = 0.60 * 1.0 + 0.10 * 0.8 + 0.05 * (18.0 / 22.0);
    (weighted / 0.75 * 100.0 * 100.0).round() / 100.0
}

#[test]
fn test_hybrid_score_without_judge() {
    let result = hybrid_score(&input(), None, &registry()).unwrap();
    assert!(!result.judge_used);
    assert!(result.evaluation.criteria.iter().all(|c| c.name != "correctness"), "no judged criterion without a judge");
    assert_eq!(result.evaluation.weighted_score, expected_without_judge());
    assert_eq!(result.layers["judge"].weight, 0.0);
    assert_eq!(result.layers["objective"].normalized, Some(1.0));
    assert!(result.evaluation.passed);
    assert!(!result.evaluation.hard_gates.contains_key(JUDGE_VERDICT_COMPLETE));
}

#[tokio::test]
async fn test_hybrid_score_with_mock_judge() {
    // The mock judge is a real HTTP server; it scores correctness 2 of 5.
    let server = TestServer::start(|request| pointwise(request, |_, _| 2)).await.unwrap();
    let verdict = judge(config(&server)).grade(&case("hybrid", "Lyon.")).await.unwrap();
    let result = hybrid_score(&input(), Some(&verdict), &registry()).unwrap();
    assert!(result.judge_used);
    let judged = result.evaluation.criteria.iter().find(|c| c.name == "correctness").expect("judge component");
    assert_eq!(judged.normalized_score, 0.25, "likert_1_5 of 2");
    assert_eq!(result.layers["judge"].normalized, Some(0.25));
    let weighted: f64 = 0.60 * 1.0 + 0.25 * 0.25 + 0.10 * 0.8 + 0.05 * (18.0 / 22.0);
    assert_eq!(result.evaluation.weighted_score, (weighted * 100.0 * 100.0).round() / 100.0);
    assert!(result.evaluation.weighted_score < expected_without_judge(), "the low judge score pulls the total down");
    assert!(result.evaluation.hard_gates[JUDGE_VERDICT_COMPLETE]);
    assert_eq!(result.judges[0].model, "judge-a-model");
}

#[tokio::test]
async fn test_hybrid_hard_gates_still_override() {
    let server = TestServer::start(|request| pointwise(request, |_, _| 5)).await.unwrap();
    let verdict = judge(config(&server)).grade(&case("gates", "Paris.")).await.unwrap();
    let mut failing = input();
    failing.hard_gates.insert("schema_contract_valid".into(), false);
    let result = hybrid_score(&failing, Some(&verdict), &registry()).unwrap();
    assert!(result.evaluation.weighted_score > 90.0, "{}", result.evaluation.weighted_score);
    assert!(!result.evaluation.passed);
    assert_eq!(result.evaluation.grade, Grade::F);
    assert_eq!(result.evaluation.hard_gate_failures, ["schema_contract_valid"]);

    // An errored judge criterion is a failed gate too: it never passes.
    let broken = TestServer::start(|_| agentic_adapters::provider::testing::Reply::chat("no json")).await.unwrap();
    let verdict = judge(config(&broken)).grade(&case("gates", "Paris.")).await.unwrap();
    let result = hybrid_score(&input(), Some(&verdict), &registry()).unwrap();
    assert_eq!(result.judge_errored, ["correctness"]);
    assert!(!result.evaluation.passed);
    assert_eq!(result.evaluation.grade, Grade::F);
    assert!(result.evaluation.hard_gate_failures.contains(&JUDGE_VERDICT_COMPLETE.to_owned()));
}

#[tokio::test]
async fn test_hybrid_score_determinism() {
    let server = TestServer::start(|request| pointwise(request, |_, _| 4)).await.unwrap();
    let judge = judge(config(&server));
    let mut scores = Vec::new();
    for _ in 0..3 {
        let verdict = judge.grade(&case("determinism", "Paris.")).await.unwrap();
        scores.push(hybrid_score(&input(), Some(&verdict), &registry()).unwrap());
    }
    for result in &scores[1..] {
        assert_eq!(result.evaluation, scores[0].evaluation);
    }
    // The presented order is seeded, so the requests are byte-identical too.
    let requests = server.requests();
    assert_eq!(requests[0].body, requests[1].body);
    assert_eq!(requests[1].body, requests[2].body);
}
