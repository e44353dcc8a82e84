//! Property tests of the grading algorithm: normalized scores stay in 0..1, `passed` implies
//! every gate passed, a missed floor caps the grade at D, scaling all weights changes nothing,
//! and the same input gives the same output.

use agentic_core::workflow::FloorSpec;
use agentic_eval::{
    CriterionInput, FormulaRegistry, Grade, PairwiseCounts, REQUIRED_GATES, RawScore, ScoreRequest, TestCounts, score,
};
use proptest::prelude::*;

/// A raw score valid for its formula, with the formula's params.
fn criterion() -> impl Strategy<Value = (RawScore, &'static str, Option<serde_json::Map<String, serde_json::Value>>)> {
    let slo: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"slo_good": 8, "slo_bad": 30}"#).expect("params are JSON");
    prop_oneof![
        (0u8..=1).prop_map(|v| (RawScore::Number(f64::from(v)), "binary", None)),
        (1.0f64..=5.0).prop_map(|v| (RawScore::Number(v), "likert_1_5", None)),
        (-2.0f64..=2.0).prop_map(|v| (RawScore::Number(v), "likert_neg2_2", None)),
        (0.0f64..=5.0).prop_map(|v| (RawScore::Number(v), "scale_0_5", None)),
        (-10.0f64..10.0).prop_map(|v| (RawScore::Number(v), "zero_one", None)),
        (0.0f64..100.0).prop_map(move |v| (RawScore::Number(v), "lower_is_better", Some(slo.clone()))),
        (0u64..20, 0u64..20, 1u64..20).prop_map(|(wins, losses, ties)| {
            (RawScore::Pairwise(PairwiseCounts { wins, losses, ties }), "pairwise", None)
        }),
        (1u64..50).prop_flat_map(|total| (0..=total)
            .prop_map(move |passed| { (RawScore::Tests(TestCounts { passed, total }), "fail_to_pass", None) })),
    ]
}

fn request() -> impl Strategy<Value = ScoreRequest> {
    let item = (criterion(), 0.01f64..10.0, proptest::option::of(0.0f64..=1.0));
    (
        proptest::collection::vec(item, 1..8),
        proptest::collection::vec(any::<bool>(), REQUIRED_GATES.len()),
        proptest::option::of(0.0f64..=100.0),
    )
        .prop_map(|(items, gates, pass_threshold)| ScoreRequest {
            hard_gates: REQUIRED_GATES.iter().map(|g| (*g).to_owned()).zip(gates).collect(),
            criteria: items
                .into_iter()
                .enumerate()
                .map(|(idx, ((raw_score, formula_id, params), weight, floor))| CriterionInput {
                    name: format!("c{idx}"),
                    raw_score,
                    formula_id: formula_id.to_owned(),
                    weight,
                    critical_floor: floor.map(FloorSpec::Normalized),
                    params,
                    sample_count: None,
                })
                .collect(),
            pass_threshold,
            ..ScoreRequest::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn normalized_scores_stay_in_unit_interval(request in request()) {
        let result = score(&request, &FormulaRegistry::builtin()).expect("generated requests are valid");
        for criterion in &result.criteria {
            prop_assert!((0.0..=1.0).contains(&criterion.normalized_score), "{criterion:?}");
            prop_assert!((0.0..=1.0).contains(&criterion.adjusted_score), "{criterion:?}");
        }
        prop_assert!((0.0..=100.0).contains(&result.weighted_score));
    }

    #[test]
    fn passed_implies_every_gate_passed(request in request()) {
        let result = score(&request, &FormulaRegistry::builtin()).expect("generated requests are valid");
        if result.passed {
            prop_assert!(result.hard_gates.values().all(|ok| *ok));
            prop_assert!(result.floor_violations.is_empty());
            prop_assert!(result.weighted_score >= result.pass_threshold);
        }
        if !result.hard_gate_failures.is_empty() {
            prop_assert_eq!(result.grade, Grade::F);
            prop_assert!(!result.passed);
        }
    }

    #[test]
    fn a_floor_miss_caps_the_grade_at_d(request in request()) {
        let result = score(&request, &FormulaRegistry::builtin()).expect("generated requests are valid");
        if !result.floor_violations.is_empty() {
            prop_assert!(result.grade >= Grade::D, "grade {} with floor violations", result.grade);
            prop_assert!(!result.passed);
        }
    }

    #[test]
    fn scaling_all_weights_changes_nothing(request in request(), factor in 0.01f64..1000.0) {
        let registry = FormulaRegistry::builtin();
        let original = score(&request, &registry).expect("generated requests are valid");
        let mut scaled = request.clone();
        for criterion in &mut scaled.criteria {
            criterion.weight *= factor;
        }
        let rescored = score(&scaled, &registry).expect("scaled requests are valid");
        // Rounding to 2 decimals may differ by one unit in the last place.
        prop_assert!((original.weighted_score - rescored.weighted_score).abs() <= 0.010_000_1);
        if (original.weighted_score - rescored.weighted_score).abs() < 1e-9 {
            prop_assert_eq!(original.grade, rescored.grade);
            prop_assert_eq!(original.passed, rescored.passed);
        }
        prop_assert_eq!(&original.floor_violations, &rescored.floor_violations);
    }

    #[test]
    fn scaling_weights_by_a_power_of_two_changes_nothing_at_all(
        request in request(),
        exponent in -10i32..=10,
    ) {
        // Multiplying by 2^e is exact in binary floating point, so the result must be identical.
        let registry = FormulaRegistry::builtin();
        let factor = 2f64.powi(exponent);
        let mut original = score(&request, &registry).expect("generated requests are valid");
        let mut scaled = request.clone();
        for criterion in &mut scaled.criteria {
            criterion.weight *= factor;
        }
        let mut rescored = score(&scaled, &registry).expect("scaled requests are valid");
        for criterion in original.criteria.iter_mut().chain(rescored.criteria.iter_mut()) {
            criterion.weight = 0.0;
        }
        prop_assert_eq!(original, rescored);
    }

    #[test]
    fn pass_at_k_is_a_probability_that_grows_with_k(n in 1u64..300, c_share in 0.0f64..=1.0, k_share in 0.0f64..=1.0) {
        let c = (c_share * n as f64).round() as u64;
        let k = ((k_share * n as f64).round() as u64).clamp(1, n);
        let at_k = agentic_eval::pass_at_k(n, c, k).expect("valid arguments");
        let hat_k = agentic_eval::pass_hat_k(n, c, k).expect("valid arguments");
        prop_assert!((0.0..=1.0).contains(&at_k));
        prop_assert!((0.0..=1.0).contains(&hat_k));
        prop_assert!(hat_k <= at_k + 1e-12, "all k succeed is never likelier than at least one");
        if k < n {
            prop_assert!(agentic_eval::pass_at_k(n, c, k + 1).expect("valid") >= at_k - 1e-12);
        }
    }

    #[test]
    fn same_input_same_output(request in request()) {
        let registry = FormulaRegistry::builtin();
        let first = serde_json::to_string(&score(&request, &registry).expect("valid")).expect("serializes");
        let second = serde_json::to_string(&score(&request.clone(), &registry).expect("valid")).expect("serializes");
        prop_assert_eq!(first, second);
    }
}
