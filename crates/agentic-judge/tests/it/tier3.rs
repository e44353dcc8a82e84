//! The judge as the compliance tier-3 evaluator, over real HTTP, called from synchronous code
//! as the compliance framework calls it.

use agentic_adapters::provider::testing::{Reply, TestServer};
use agentic_eval::compliance::spec::Checkpoint;
use agentic_eval::compliance::tier3::{MatchedCondition, Tier3Error, Tier3Evaluator, Tier3Request, VerdictResult};
use agentic_judge::JudgeTier3Evaluator;
use serde_json::json;

use crate::support::{config, is_repair, judge};

fn checkpoint() -> Checkpoint {
    serde_json::from_value(json!({
        "id": "P3-01",
        "tier": 3,
        "instruction": "The PR description explains what, why and how",
        "severity": "medium",
        "verification": {"method": "content_analysis", "evidence_sources": ["pr_body"]},
        "partial_criteria": [{"condition": "what and why, no how", "weight": 0.7}]
    }))
    .expect("a tier-3 checkpoint")
}

fn evaluate(
    reply: impl Fn(&agentic_adapters::provider::testing::RecordedRequest) -> Reply + Send + Sync + 'static,
) -> (
    Result<agentic_eval::compliance::tier3::Tier3Verdict, Tier3Error>,
    Vec<agentic_adapters::provider::testing::RecordedRequest>,
) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(TestServer::start(reply)).unwrap();
    let mut evaluator = JudgeTier3Evaluator::new(judge(config(&server))).unwrap();
    let checkpoint = checkpoint();
    let mut evidence = serde_json::Map::new();
    evidence.insert("pr_body".into(), json!("## What\nAdds caching.\n## Why\nSlow pages."));
    let trace = vec!["Bash git push".to_owned()];
    let request = Tier3Request { checkpoint: &checkpoint, position_index: 1, evidence, trace_excerpt: &trace, run: 0 };
    let verdict = evaluator.evaluate(&request);
    (verdict, server.requests())
}

#[test]
fn judge_evaluates_a_tier3_checkpoint() {
    let (verdict, requests) = evaluate(|_| {
        Reply::chat_json(&json!({"result": "PARTIAL", "matched_condition": 0, "notes": "HOW is missing",
                                 "evidence_citation": "## What ... ## Why"}))
    });
    let verdict = verdict.unwrap();
    assert_eq!(verdict.result, VerdictResult::Partial);
    assert_eq!(verdict.matched_condition, Some(MatchedCondition::Index(0)));
    let sent = &requests[0];
    let prompt = sent.prompt_text();
    assert!(prompt.contains("explains what, why and how") && prompt.contains("0: what and why, no how"), "{prompt}");
    assert!(prompt.contains("Adds caching") && prompt.contains("Bash git push"), "{prompt}");
    let schema = &sent.body["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["result"]));
    let result_schema = schema["properties"]["result"].to_string();
    assert!(["PASS", "PARTIAL", "FAIL"].iter().all(|v| result_schema.contains(&format!("\"{v}\""))), "{result_schema}");
    // Narrowed to the checkpoint: its one criterion is index 0.
    assert_eq!(schema["properties"]["matched_condition"]["anyOf"][0]["maximum"], json!(0), "{schema}");
}

/// A Mode A PARTIAL without a criterion is repaired with the criteria listed by index and
/// weight, so the model can pick one; a Mode B checkpoint's schema leaves no room for one.
#[test]
fn a_partial_without_a_criterion_is_shown_the_criteria() {
    let (verdict, requests) = evaluate(|request| {
        if is_repair(request) {
            Reply::chat_json(&json!({"result": "PARTIAL", "matched_condition": 0, "notes": "no how",
                                     "evidence_citation": "## Why"}))
        } else {
            Reply::chat_json(&json!({"result": "PARTIAL", "earned_weight": 0.5, "notes": "no how",
                                     "evidence_citation": "## Why"}))
        }
    });
    assert_eq!(verdict.unwrap().result, VerdictResult::Partial);
    let repair = requests[1].last_message();
    assert!(repair.contains("0: \"what and why, no how\" (weight 0.7)"), "{repair}");
    // A criterion out of range (which the narrowed schema sent to the model forbids) is
    // explained by the rules, not by a schema error.
    let (_, requests) = evaluate(|request| {
        let index = if is_repair(request) { 0 } else { 7 };
        Reply::chat_json(&json!({"result": "PARTIAL", "matched_condition": index, "notes": "no how",
                                 "evidence_citation": "## Why"}))
    });
    let repair = requests[1].last_message();
    assert!(repair.contains("`matched_condition` 7 is out of range") && !repair.contains("anyOf"), "{repair}");
    let mut mode_b = checkpoint();
    mode_b.partial_criteria.clear();
    let schema = agentic_judge::tier3_schema_for(&agentic_judge::tier3_schema(), &mode_b);
    assert_eq!(schema["properties"]["matched_condition"]["type"], json!("null"), "{schema}");
}

#[test]
fn an_unusable_reply_is_an_evaluator_error_not_a_guess() {
    let (verdict, requests) =
        evaluate(
            |request| {
                if is_repair(request) { Reply::chat(r#"{"result": "MAYBE"}"#) } else { Reply::chat("PASS I guess") }
            },
        );
    let error = verdict.unwrap_err();
    assert!(matches!(error, Tier3Error::Evaluator { .. }), "{error:?}");
    assert!(error.to_string().contains("after one repair"), "{error}");
    assert_eq!(requests.len(), 2, "one call and one repair");
}

/// A reply the model stopped at the token limit (`finish_reason: length`, JSON cut off) is
/// said to be cut off, to the model in the repair and to the user in the error, with what
/// to change: not only "not valid JSON".
#[test]
fn a_reply_cut_off_at_the_token_limit_says_so() {
    let cut = |text: &str| {
        let mut body = agentic_adapters::provider::testing::chat_completion_body(text, "test-judge");
        body["choices"][0]["finish_reason"] = json!("length");
        Reply::Json { status: 200, headers: Vec::new(), body }
    };
    let (verdict, requests) = evaluate(move |_| cut(r#"{"result": "PASS", "notes": "the notes go on and on and"#));
    assert_eq!(requests.len(), 2, "one call and one repair");
    assert!(requests[1].prompt_text().contains("cut off at the token limit"), "{}", requests[1].prompt_text());
    let error = verdict.unwrap_err().to_string();
    assert!(error.contains("raise `max_tokens` in the judge configuration"), "{error}");
    // A complete reply is not said to be cut, whatever the finish reason.
    let (verdict, _) = evaluate(move |_| {
        cut(r#"{"result": "PASS", "notes": "all three parts", "evidence_citation": "Adds caching"}"#)
    });
    assert_eq!(verdict.unwrap().result, VerdictResult::Pass);
}

#[test]
fn a_reply_that_answers_twice_is_repaired_not_resolved_by_the_last_key() {
    // `"result"` given twice (PASS then FAIL): serde's default would keep FAIL silently. The
    // judge refuses the reply and asks once for a repair; the repaired answer is what counts.
    let (verdict, requests) = evaluate(|request| {
        if is_repair(request) {
            Reply::chat(r#"{"result": "PASS", "notes": "all three parts", "evidence_citation": "Adds caching"}"#)
        } else {
            Reply::chat(r#"{"result": "PASS", "result": "FAIL", "evidence_citation": "Adds caching"}"#)
        }
    });
    assert_eq!(requests.len(), 2, "one call and one repair");
    let repair_prompt = requests[1].prompt_text();
    assert!(repair_prompt.contains("duplicate key `result`"), "{repair_prompt}");
    assert_eq!(verdict.unwrap().result, VerdictResult::Pass);
}

/// A checkpoint that lists the trace is told when the trace has no calls, instead of being
/// shown no trace section at all (which reads as "no trace was given"); one that does not
/// list it gets no section.
#[test]
fn an_empty_trace_is_said_to_a_checkpoint_that_lists_it() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(TestServer::start(|_| {
            Reply::chat_json(&json!({"result": "FAIL", "notes": "no calls", "evidence_citation": "empty trace"}))
        }))
        .unwrap();
    let mut evaluator = JudgeTier3Evaluator::new(judge(config(&server))).unwrap();
    for (sources, said) in [(json!(["pr_body", "trace_file"]), true), (json!(["pr_body"]), false)] {
        let mut checkpoint = checkpoint();
        checkpoint.verification.evidence_sources = serde_json::from_value(sources).unwrap();
        let request = Tier3Request {
            checkpoint: &checkpoint,
            position_index: 1,
            evidence: Default::default(),
            trace_excerpt: &[],
            run: 0,
        };
        evaluator.evaluate(&request).unwrap();
        let prompt = server.requests().last().unwrap().prompt_text();
        assert_eq!(prompt.contains("(none: the trace holds no tool call or agent invocation)"), said, "{prompt}");
        assert_eq!(prompt.contains("## Last calls of the trace"), said, "{prompt}");
    }
}
