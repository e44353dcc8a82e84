//! Workflow outputs and step-to-step wiring (tickets P0-T003 and P0-T004).

use agentic_core::StepStatus;
use agentic_engine::RunRequest;
use serde_json::json;

use crate::support::{engine, inputs, run, workflow};

const OUTPUTS: &str = r#"
name: outputs
outputs:
  verdict:
    from: "${steps.produce.outputs.json.verdict}"
  note:
    from: "${steps.produce.outputs.json.note}"
    required: false
steps:
  - name: produce
    kind: command
    argv: [printf, "%s", "${inputs.payload}"]
inputs:
  payload: {type: string}
"#;

#[tokio::test]
async fn test_unresolved_required_output_flagged() {
    let flow = workflow(OUTPUTS);
    let request = RunRequest { inputs: inputs(json!({"payload": "{\"other\": 1}"})), ..RunRequest::default() };
    let outcome = run(&engine(), &flow, request).await;
    // Every step succeeded, yet the required output did not resolve: never a silent success.
    assert_eq!(outcome.result.step("produce").unwrap().status, StepStatus::Succeeded);
    assert_eq!(outcome.result.unresolved_required_outputs, vec!["verdict".to_owned()]);
    assert!(!outcome.evaluation.passed);
    assert_eq!(outcome.evaluation.report["hard_gates"]["required_outputs_present"], json!(false));
    assert!(outcome.evaluation.failures.contains(&"required_outputs_present".to_owned()));
    // The optional output is null but not flagged.
    assert_eq!(outcome.result.outputs["note"], serde_json::Value::Null);
}

#[tokio::test]
async fn test_resolved_output_no_flag() {
    let flow = workflow(OUTPUTS);
    let request =
        RunRequest { inputs: inputs(json!({"payload": "{\"verdict\": \"approve\"}"})), ..RunRequest::default() };
    let outcome = run(&engine(), &flow, request).await;
    assert!(outcome.result.unresolved_required_outputs.is_empty());
    assert_eq!(outcome.result.outputs["verdict"], json!("approve"));
    assert!(outcome.evaluation.passed, "{:#}", outcome.evaluation.report);
}

#[tokio::test]
async fn embedded_required_output_with_a_missing_part_is_unresolved() {
    let flow = workflow(
        r#"
name: joined
outputs:
  joined:
    from: "left=${steps.left.outputs.stdout} right=${steps.right.outputs.stdout}"
steps:
  - {name: left, kind: command, argv: [printf, L]}
  - {name: right, kind: command, argv: [printf, R], when: "${inputs.with_right}"}
inputs:
  with_right: {type: boolean, default: false}
"#,
    );
    let outcome = run(&engine(), &flow, RunRequest::default()).await;
    // `right` was skipped, so it has no outputs: the text renders, but is not resolved.
    assert_eq!(outcome.result.overall_status, StepStatus::Succeeded);
    assert_eq!(outcome.result.outputs["joined"], json!("left=L right="));
    assert_eq!(outcome.result.unresolved_required_outputs, vec!["joined".to_owned()]);
    let request = RunRequest { inputs: inputs(json!({"with_right": true})), ..RunRequest::default() };
    let outcome = run(&engine(), &flow, request).await;
    assert_eq!(outcome.result.outputs["joined"], json!("left=L right=R"));
    assert!(outcome.result.unresolved_required_outputs.is_empty());
}

#[tokio::test]
async fn test_resolve_input_mapping_e2e() {
    let flow = workflow(
        r#"
name: wiring
inputs:
  name: {type: string}
  count: {type: integer, default: 2}
outputs:
  first_function:
    from: "${steps.parse.outputs.json.ast.functions[0].name}"
  greeting:
    from: "${steps.greet.outputs.result.text}"
  count_type:
    from: "${steps.greet.outputs.result.count}"
  missing_deep:
    from: "${steps.parse.outputs.json.ast.nope.deeper[3] ?? 'default used'}"
steps:
  - name: parse
    kind: command
    argv: [python3, -c, "import json,sys; print(json.dumps({'ast': {'functions': [{'name': sys.argv[1] + '_main'}]}}))", "${inputs.name}"]
  - name: greet
    kind: tool
    tool: echo
    with:
      text: "hello ${steps.parse.outputs.json.ast.functions[0].name}"
      count: "${inputs.count}"
      nested: {list: ["${steps.parse.outputs.exit_code}"]}
  - name: shout
    kind: command
    argv: [printf, "%s", "${steps.greet.outputs.result.text}"]
    env: {COUNT: "${steps.greet.outputs.result.count}"}
"#,
    );
    let outcome =
        run(&engine(), &flow, RunRequest { inputs: inputs(json!({"name": "parse"})), ..RunRequest::default() }).await;
    assert_eq!(outcome.result.overall_status, StepStatus::Succeeded, "{:#?}", outcome.result.steps);
    assert_eq!(outcome.result.outputs["first_function"], json!("parse_main"));
    assert_eq!(outcome.result.outputs["greeting"], json!("hello parse_main"));
    // A whole-string expression keeps its JSON type; a missing intermediate key gives the default.
    assert_eq!(outcome.result.outputs["count_type"], json!(2));
    assert_eq!(outcome.result.outputs["missing_deep"], json!("default used"));
    let greet = outcome.result.step("greet").unwrap();
    assert_eq!(greet.outputs["result"]["nested"], json!({"list": [0]}));
    assert_eq!(outcome.result.step("shout").unwrap().outputs["stdout"], json!("hello parse_main"));
}

#[tokio::test]
async fn declared_outputs_come_from_json_and_are_checked() {
    let flow = workflow(
        r#"
name: declared
steps:
  - name: facts
    kind: command
    argv: [printf, '{"lines": 3, "label": 7}']
    outputs:
      lines: {type: integer, required: true}
      label: {type: string}
  - name: needs_missing
    kind: command
    argv: [printf, '{"other": 1}']
    critical: false
    outputs:
      lines: {type: integer, required: true}
"#,
    );
    let outcome = run(&engine(), &flow, RunRequest::default()).await;
    let facts = outcome.result.step("facts").unwrap();
    assert_eq!(facts.status, StepStatus::Failed);
    assert_eq!(facts.error.as_ref().unwrap().error_type.as_deref(), Some("invalid_output_type"));
    assert_eq!(facts.outputs["lines"], json!(3));
    let missing = outcome.result.step("needs_missing").unwrap();
    assert_eq!(missing.status, StepStatus::Failed);
    assert_eq!(missing.error.as_ref().unwrap().error_type.as_deref(), Some("missing_required_output"));
}

#[tokio::test]
async fn bad_inputs_stop_the_run_before_it_starts() {
    let flow = workflow(OUTPUTS);
    let error = engine().run(flow.clone(), RunRequest::default()).await.unwrap_err();
    assert!(error.to_string().contains("missing required input `payload`"), "{error}");
    let error = engine()
        .run(flow, RunRequest { inputs: inputs(json!({"payload": "x", "extra": 1})), ..RunRequest::default() })
        .await
        .unwrap_err();
    assert!(error.to_string().contains("unknown input `extra`"), "{error}");
}
