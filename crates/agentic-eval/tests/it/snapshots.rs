//! Snapshot tests of the reports on the committed sample inputs in `examples/scoring/`.
//! Update with `cargo insta review` (or `INSTA_UPDATE=always`), never by hand.

use std::path::PathBuf;

use agentic_eval::{
    CompareThresholds, FormulaRegistry, PromotionPolicy, ScoreRequest, SuiteRun, check_promotion, compare_runs,
    evaluate_suite, parse_input, parse_result_set, reporting_bundle, score,
};

fn example(path: &str) -> String {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scoring").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

fn suite(path: &str) -> agentic_eval::SuiteSummary {
    let run: SuiteRun = parse_input(&example(path), "suite run", path).expect("the example parses");
    evaluate_suite(&run).expect("the example is valid")
}

#[test]
fn code_review_score_payload() {
    let request: ScoreRequest = parse_input(&example("code-review.json"), "score request", "x").expect("parses");
    let result = score(&request, &FormulaRegistry::builtin()).expect("valid");
    insta::assert_json_snapshot!(result);
}

#[test]
fn floor_capped_score_payload() {
    let request: ScoreRequest = parse_input(&example("floor-capped.json"), "score request", "x").expect("parses");
    let result = score(&request, &FormulaRegistry::builtin()).expect("valid");
    insta::assert_json_snapshot!(result);
}

#[test]
fn suite_summary_of_the_baseline() {
    insta::assert_json_snapshot!(suite("suites/baseline.json"));
}

#[test]
fn comparison_of_the_regressed_candidate() {
    let comparison = compare_runs(
        &suite("suites/baseline.json"),
        &suite("suites/candidate-regressed.json"),
        &CompareThresholds::default(),
    );
    insta::assert_json_snapshot!(comparison);
}

#[test]
fn reporting_bundle_of_the_promotion_baseline() {
    let results = parse_result_set(&example("promote/baseline.json")).expect("parses");
    insta::assert_json_snapshot!(reporting_bundle(&results));
}

#[test]
fn promotion_report_of_the_worse_candidate() {
    let baseline = parse_result_set(&example("promote/baseline.json")).expect("parses");
    let candidate = parse_result_set(&example("promote/candidate-worse.json")).expect("parses");
    insta::assert_json_snapshot!(check_promotion(&baseline, &candidate, &PromotionPolicy::default()));
}
