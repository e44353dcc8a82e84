//! The JSON Schemas under `docs/schema/` are generated from the types; this test fails when a
//! committed schema is stale and prints the command that regenerates them.

use std::path::PathBuf;

use agentic_core::document::schema_for;
use serde_json::Value;

/// Every schema this crate publishes, by file name.
fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("evaluation-result.schema.json", schema_for::<agentic_eval::EvaluationResult>()),
        ("score-request.schema.json", schema_for::<agentic_eval::ScoreRequest>()),
        ("evaluation-payload.schema.json", schema_for::<agentic_eval::EvaluationPayload>()),
        ("rubric.schema.json", agentic_core::document::document_schema_for::<agentic_eval::RubricFile>()),
        ("suite-run.schema.json", schema_for::<agentic_eval::SuiteRun>()),
        ("run-comparison.schema.json", schema_for::<agentic_eval::RunComparison>()),
        ("promotion-report.schema.json", schema_for::<agentic_eval::PromotionReport>()),
    ]
}

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
}

#[test]
fn published_schemas_are_up_to_date() {
    let update = std::env::var_os("AGENTIC_UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for (name, schema) in schemas() {
        let path = schema_dir().join(name);
        let expected = serde_json::to_string_pretty(&schema).expect("schemas serialize") + "\n";
        let found = std::fs::read_to_string(&path).unwrap_or_default();
        if found != expected {
            if update {
                std::fs::create_dir_all(schema_dir()).expect("docs/schema can be created");
                std::fs::write(&path, expected).expect("the schema file can be written");
            } else {
                stale.push(name);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale schema(s) in docs/schema: {}\nregenerate with: AGENTIC_UPDATE_SCHEMAS=1 cargo test -p agentic-eval --test it schema\nthen commit docs/schema/",
        stale.join(", ")
    );
}

#[test]
fn example_outputs_validate_against_the_result_schema() {
    let schema = schema_for::<agentic_eval::EvaluationResult>();
    let validator = jsonschema::options().build(&schema).expect("the schema compiles");
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scoring/promote/baseline.json"),
    )
    .expect("the promotion example exists");
    let results: Vec<Value> = serde_json::from_str(&text).expect("the example is JSON");
    assert!(!results.is_empty());
    for result in &results {
        let errors: Vec<String> = validator.iter_errors(result).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}
