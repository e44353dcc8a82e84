//! Benchmarks for agentic, in their own workspace member so `cargo test` never builds
//! criterion. Run with `cargo bench -p agentic-bench`. This library only holds the inputs
//! the benchmarks share; it is not used by any other crate.

use agentic_core::workflow::FloorSpec;
use agentic_eval::{CriterionInput, PairwiseCounts, REQUIRED_GATES, RawScore, ScoreRequest};

/// A score request with `count` criteria cycling through the built-in formulas.
pub fn request(count: usize) -> ScoreRequest {
    let slo: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"slo_good": 8, "slo_bad": 30}"#).expect("params are JSON");
    let criteria = (0..count)
        .map(|idx| {
            let (raw_score, formula_id, params) = match idx % 5 {
                0 => (RawScore::Number(1.0 + (idx % 5) as f64), "likert_1_5", None),
                1 => (RawScore::Number(0.37), "zero_one", None),
                2 => (RawScore::Number(12.0), "lower_is_better", Some(slo.clone())),
                3 => (RawScore::Pairwise(PairwiseCounts { wins: 3, losses: 1, ties: 1 }), "pairwise", None),
                _ => (RawScore::Number(4.0), "scale_0_5", None),
            };
            CriterionInput {
                name: format!("criterion_{idx}"),
                raw_score,
                formula_id: formula_id.to_owned(),
                weight: 1.0 + (idx % 3) as f64,
                critical_floor: (idx % 4 == 0).then_some(FloorSpec::Normalized(0.3)),
                params,
                sample_count: Some(5),
            }
        })
        .collect();
    ScoreRequest {
        hard_gates: REQUIRED_GATES.iter().map(|gate| ((*gate).to_owned(), true)).collect(),
        criteria,
        ..ScoreRequest::default()
    }
}
