//! Property tests of checkpoint-spec input: edited copies of the example specs load into
//! diagnostics or a spec and never panic, and a loaded spec always yields a report whose
//! scores stay in range; evidence paths parse or explain why not.

use agentic_eval::compliance::{
    CheckOptions, EvidencePath, EvidenceSet, SequenceEngine, Tier3Error, Tier3Evaluator, Tier3Request, Tier3Verdict,
    evaluate, load_spec,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/checkpoints")
}

/// The example specs and their evidence.
fn examples() -> &'static [(String, Map<String, Value>)] {
    static EXAMPLES: std::sync::OnceLock<Vec<(String, Map<String, Value>)>> = std::sync::OnceLock::new();
    EXAMPLES.get_or_init(|| {
        let mut found = Vec::new();
        for name in ["feature-workflow", "code-review", "weather-agent"] {
            let dir = examples_dir();
            let spec = std::fs::read_to_string(dir.join(format!("{name}.yaml"))).expect("example spec");
            let evidence = std::fs::read_to_string(dir.join(format!("{name}.evidence.json"))).expect("evidence");
            let Value::Object(evidence) = serde_json::from_str(&evidence).expect("evidence JSON") else {
                panic!("evidence of {name} is not an object");
            };
            found.push((spec, evidence));
        }
        found
    })
}

/// One edit of a spec's text: at a fraction of its length, delete some bytes or insert a
/// token that YAML or the spec gives meaning to.
#[derive(Debug, Clone)]
enum Edit {
    Delete(f64, usize),
    Insert(f64, &'static str),
    DuplicateLine(f64),
}

const TOKENS: &[&str] = &[
    "\n",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "#",
    "&a ",
    "*a",
    "!!int ",
    "~",
    "null",
    "-1",
    "1e999",
    "0.5",
    "tier: 3\n",
    "tier: 0",
    "severity: low",
    "affects: [P1-01]",
    "id: P1-01",
    "at_least: -3",
    "within: {}",
    "glob: \"**/[\"",
    "regex: \"(\"",
    "path: a..b",
    "path: git.branches[*]",
    "equals: []",
    "partial_criteria: []",
    "\t",
    "\u{feff}",
    "é",
    "\\u0000",
    "<<: *a",
    "---\n",
    "...",
    "x-",
    "checkpoints: ",
    "rule: ",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0.0f64..1.0, 1usize..40).prop_map(|(at, len)| Edit::Delete(at, len)),
        (0.0f64..1.0, proptest::sample::select(TOKENS)).prop_map(|(at, token)| Edit::Insert(at, token)),
        (0.0f64..1.0).prop_map(Edit::DuplicateLine),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut text = text.to_owned();
    let boundary = |text: &str, at: f64| {
        let mut idx = ((text.len() as f64) * at) as usize;
        while !text.is_char_boundary(idx) {
            idx -= 1;
        }
        idx
    };
    for edit in edits {
        match edit {
            Edit::Delete(at, len) => {
                let start = boundary(&text, *at);
                let mut end = (start + len).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(start..end, "");
            }
            Edit::Insert(at, token) => {
                let idx = boundary(&text, *at);
                text.insert_str(idx, token);
            }
            Edit::DuplicateLine(at) => {
                let idx = boundary(&text, *at);
                let start = text[..idx].rfind('\n').map_or(0, |nl| nl + 1);
                let end = text[idx..].find('\n').map_or(text.len(), |nl| idx + nl + 1);
                let line = text[start..end].to_owned();
                text.insert_str(start, &line);
            }
        }
    }
    text
}

/// Answers every tier-3 checkpoint with a documented PASS, or refuses by the `refuse` flag.
struct Answers {
    refuse: bool,
}

impl Tier3Evaluator for Answers {
    fn evaluate(&mut self, request: &Tier3Request<'_>) -> Result<Tier3Verdict, Tier3Error> {
        if self.refuse {
            return Err(Tier3Error::InvalidVerdict {
                checkpoint: request.checkpoint.id.clone(),
                reason: "no verdict".to_owned(),
            });
        }
        Ok(serde_json::from_value(json!({
            "result": "PASS", "notes": "fine", "evidence_citation": "the evidence"
        }))
        .expect("a verdict"))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn edited_specs_load_or_explain_and_never_panic(
        which in 0usize..3,
        edits in proptest::collection::vec(edit(), 1..5),
        refuse in any::<bool>(),
        with_trace in any::<bool>(),
    ) {
        let (original, evidence) = &examples()[which];
        let text = apply(original, &edits);
        let load = load_spec(&text, "spec.yaml");
        for diagnostic in &load.diagnostics {
            prop_assert!(!diagnostic.message.is_empty());
        }
        let Some(spec) = load.spec else {
            prop_assert!(load.diagnostics.iter().any(|d| d.is_error()), "no spec and no error for {text:?}");
            return Ok(());
        };
        let trace = with_trace.then(|| SequenceEngine::new(spec.rules.clone(), 10).finish());
        let evidence = EvidenceSet { values: evidence.clone(), trace };
        let options = CheckOptions { evaluated_at: "2026-11-24T00:00:00Z".to_owned(), eval_runs: 2 };
        if let Ok(report) = evaluate(&spec, &evidence, &mut Answers { refuse }, &options) {
            if let Some(score) = report.scores.compliance_percent {
                prop_assert!((0.0..=100.0).contains(&score), "compliance {score}");
            }
            prop_assert!((0.0..=100.0).contains(&report.scores.spec_health_percent));
            prop_assert_eq!(report.checkpoints.len(), spec.checkpoints.len());
        }
    }

    #[test]
    fn evidence_paths_parse_or_explain(text in "[a-z_.\\[\\]\"'* 0-9é]{0,24}") {
        match EvidencePath::parse(&text) {
            Ok(path) => {
                let value = json!({"a": {"b": [1, {"c": "x"}], "d.e": true}, "b": [[], {}]});
                let Value::Object(evidence) = value else { unreachable!() };
                let _ = path.resolve(&evidence);
            }
            Err(reason) => prop_assert!(!reason.is_empty()),
        }
    }
}

#[test]
fn the_unedited_examples_load() {
    for (text, _) in examples() {
        let load = load_spec(text, "spec.yaml");
        assert!(load.spec.is_some(), "{:?}", load.diagnostics);
    }
}
