//! Scripted judges for the tests: they read the rendered prompt (criterion names, candidate
//! text) off the wire and answer in the reply format the prompt asks for.

use std::path::PathBuf;
use std::sync::Arc;

use agentic_adapters::provider::testing::{RecordedRequest, Reply, TestServer};
use agentic_judge::{GoldenSet, Judge, JudgeCase, JudgeConfig, JudgeCriterion, JudgeModelConfig, PairCase};
use serde_json::{Value, json};

/// The criterion names the prompt asks for ("one entry for each of: a, b.").
pub(crate) fn names(request: &RecordedRequest) -> Vec<String> {
    let text = request.prompt_text();
    let marker = "one entry for each of: ";
    let start = text.find(marker).expect("the prompt lists the criteria") + marker.len();
    let line = text[start..].lines().next().unwrap_or_default().trim_end_matches('.');
    line.split(", ").map(str::to_owned).collect()
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> &'a str {
    let start = text.find(open).map(|i| i + open.len()).unwrap_or(0);
    let end = text[start..].find(close).map(|i| start + i).unwrap_or(text.len());
    text[start..end].trim()
}

/// The candidate of a pointwise prompt.
pub(crate) fn candidate(request: &RecordedRequest) -> String {
    between(&request.prompt_text(), "<candidate>", "</candidate>").to_owned()
}

/// The two responses of a pairwise prompt, in shown order.
pub(crate) fn responses(request: &RecordedRequest) -> (String, String) {
    let text = request.prompt_text();
    (
        between(&text, "<response_1>", "</response_1>").to_owned(),
        between(&text, "<response_2>", "</response_2>").to_owned(),
    )
}

/// Whether this request is the repair turn.
pub(crate) fn is_repair(request: &RecordedRequest) -> bool {
    request.last_message().contains("could not be used")
}

/// A pointwise reply scoring each criterion with `score(criterion, candidate)`.
pub(crate) fn pointwise(request: &RecordedRequest, score: impl Fn(&str, &str) -> i64) -> Reply {
    let candidate = candidate(request);
    let entries: Vec<Value> = names(request)
        .iter()
        .map(|name| json!({"name": name, "score": score(name, &candidate), "evidence": format!("about `{candidate}`")}))
        .collect();
    Reply::chat_json(&json!({ "criteria": entries }))
}

/// A pairwise reply from `(score_1, score_2)` per criterion; the preference follows the scores.
pub(crate) fn pairwise(request: &RecordedRequest, scores: impl Fn(&str, &str, &str) -> (i64, i64)) -> Reply {
    let (first, second) = responses(request);
    let entries: Vec<Value> = names(request)
        .iter()
        .map(|name| {
            let (one, two) = scores(name, &first, &second);
            let preferred = match one.cmp(&two) {
                std::cmp::Ordering::Greater => "response_1",
                std::cmp::Ordering::Less => "response_2",
                std::cmp::Ordering::Equal => "tie",
            };
            json!({"name": name, "response_1": one, "response_2": two, "preferred": preferred, "evidence": "compared"})
        })
        .collect();
    Reply::chat_json(&json!({ "criteria": entries }))
}

/// A judge configuration for `server` with fast retries.
pub(crate) fn judge_config(server: &TestServer, name: &str) -> JudgeModelConfig {
    let mut judge = JudgeModelConfig::openai(name, server.base_url(), format!("{name}-model"));
    judge.version = "2026-11-01".into();
    judge.timeout_secs = 5.0;
    judge.max_retries = 2;
    judge.pricing = Some(agentic_adapters::Pricing { input_per_million: 1.0, output_per_million: 2.0 });
    judge
}

/// A one-judge configuration with a fixed seed.
pub(crate) fn config(server: &TestServer) -> JudgeConfig {
    let mut config = JudgeConfig::single(judge_config(server, "judge-a"));
    config.seed = Some(7);
    config
}

/// A judge on `server`.
pub(crate) fn judge(config: JudgeConfig) -> Judge {
    Judge::builder(config).build().expect("judge builds")
}

/// Two criteria on 1..5.
pub(crate) fn criteria() -> Vec<JudgeCriterion> {
    vec![
        JudgeCriterion::likert("correctness", "The answer is right."),
        JudgeCriterion::likert("completeness", "The answer covers the question."),
    ]
}

/// A pointwise case.
pub(crate) fn case(id: &str, candidate: &str) -> JudgeCase {
    JudgeCase {
        id: id.into(),
        task: "What is the capital of France?".into(),
        candidate: candidate.into(),
        reference: Some("Paris".into()),
        criteria: criteria(),
    }
}

/// A pairwise case: A is right, B is wrong.
pub(crate) fn pair_case(id: &str) -> PairCase {
    PairCase {
        id: id.into(),
        task: "What is the capital of France?".into(),
        reference: None,
        a: "Paris is the capital of France.".into(),
        b: "Lyon is the capital of France.".into(),
        criteria: criteria(),
    }
}

/// A quality oracle for the pairwise tests: the answer naming Paris is right.
pub(crate) fn quality(text: &str) -> i64 {
    if text.contains("Paris") { 5 } else { 2 }
}

/// The bundled golden set.
pub(crate) fn golden_set() -> GoldenSet {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/judge/golden.yaml");
    GoldenSet::load(&path).expect("the bundled golden set loads")
}

/// The labels of the golden set by candidate text, for a judge that agrees with the humans.
pub(crate) fn labels_by_candidate(set: &GoldenSet) -> Arc<Vec<(String, std::collections::BTreeMap<String, i64>)>> {
    Arc::new(set.cases.iter().map(|case| (case.candidate.clone(), case.labels.clone())).collect())
}
