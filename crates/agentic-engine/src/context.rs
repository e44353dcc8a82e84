//! The expression context of a step and what is computed from it: `${...}` values, `when:`
//! conditions and agent prompts.
//!
//! The context is `{"inputs": {...}, "steps": {name: {"outputs": {...}, "status": "..."}},
//! "attempt": {...}}`. A step sees only its own dependencies under `steps` (validation
//! guarantees it refers to nothing else), which keeps building it cheap in big DAGs.

use agentic_core::expr::{Part, Template, render_value};
use agentic_core::validate::{EXPR_VAR_PREFIX, prompt_source};
use agentic_core::{StepResult, StepStatus};
use serde_json::{Map, Value, json};

/// The `steps.<name>` entry of a finished step.
pub(crate) fn step_entry(result: &StepResult) -> Value {
    json!({"outputs": result.outputs, "status": result.status.as_str()})
}

/// Builds a context. `known_steps` holds step data recorded elsewhere (for example by an
/// earlier run being resumed); entries of `results` (steps of this run) override it.
pub fn build_context<'a>(
    inputs: &Map<String, Value>,
    attempt: &Value,
    known_steps: &Map<String, Value>,
    results: impl IntoIterator<Item = &'a StepResult>,
) -> Value {
    let mut steps = known_steps.clone();
    for result in results {
        steps.insert(result.name.clone(), step_entry(result));
    }
    json!({"inputs": inputs, "steps": steps, "attempt": attempt})
}

/// JSON truthiness: `null`, `false`, `0`, `""`, `[]` and `{}` are false.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// Evaluates a `when:` condition: a lone `${...}` expression (its truthiness), or a
/// minijinja expression over `inputs`, `steps` and `attempt`.
pub fn evaluate_when(condition: &str, context: &Value) -> Result<bool, String> {
    if let Ok(template) = Template::parse(condition)
        && let [Part::Expr(expression)] = template.parts.as_slice()
    {
        return Ok(truthy(&expression.resolve(context)));
    }
    let environment = minijinja::Environment::new();
    let expression = environment
        .compile_expression(condition)
        .map_err(|error| format!("`when: {condition}` does not parse: {error}"))?;
    let value = expression
        .eval(minijinja::value::Serde(context))
        .map_err(|error| format!("`when: {condition}` failed: {error}"))?;
    Ok(value.is_true())
}

/// How an embedded `${...}` value reads in text: strings as they are, `null` as nothing,
/// anything else as JSON.
pub(crate) fn interpolated(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Renders a string template (`system:`, `model:`, an argv item) to text.
pub(crate) fn render_text(text: &str, context: &Value) -> Result<String, String> {
    let template = Template::parse(text).map_err(|error| format!("bad expression in `{text}`: {error}"))?;
    Ok(interpolated(&template.render(context)))
}

/// Resolves a step's `with:` values.
pub(crate) fn resolve_with(
    with: &indexmap::IndexMap<String, Value>,
    context: &Value,
) -> Result<Map<String, Value>, String> {
    with.iter()
        .map(|(key, value)| {
            render_value(value, context)
                .map(|value| (key.clone(), value))
                .map_err(|error| format!("bad expression in `with.{key}`: {error}"))
        })
        .collect()
}

/// Renders an agent prompt: `${...}` expressions become minijinja variables (never template
/// source, so values cannot inject template syntax), and the template sees `inputs`, `steps`,
/// `attempt` and `with`.
pub fn render_prompt(prompt: &str, context: &Value, with: &Map<String, Value>) -> Result<String, String> {
    let template = Template::parse(prompt).map_err(|error| format!("bad expression in the prompt: {error}"))?;
    let source = prompt_source(&template);
    let mut variables = Map::new();
    for (idx, expression) in template.expressions().enumerate() {
        variables.insert(format!("{EXPR_VAR_PREFIX}{idx}"), Value::String(interpolated(&expression.resolve(context))));
    }
    for key in ["inputs", "steps", "attempt"] {
        variables.insert(key.to_owned(), context.get(key).cloned().unwrap_or(Value::Null));
    }
    variables.insert("with".to_owned(), Value::Object(with.clone()));
    let environment = minijinja::Environment::new();
    environment.render_str(&source, minijinja::value::Serde(&variables)).map_err(|error| {
        let detail = error.detail().map(|detail| format!(": {detail}")).unwrap_or_default();
        format!("the prompt template does not render ({}{detail})", error.kind())
    })
}

/// The JSON in a model reply or a process's stdout: the whole text, else the first fenced
/// code block, else the outermost `{...}` or `[...]`.
pub fn extract_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return Some(value);
    }
    if let Some(start) = trimmed.find("```") {
        let after = &trimmed[start + 3..];
        let body_start = after.find('\n').map_or(0, |newline| newline + 1);
        if let Some(end) = after[body_start..].find("```")
            && let Ok(value) = serde_json::from_str::<Value>(after[body_start..body_start + end].trim())
        {
            return Some(value);
        }
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(start), Some(end)) = (trimmed.find(open), trimmed.rfind(close))
            && start < end
            && let Ok(value) = serde_json::from_str::<Value>(&trimmed[start..=end])
        {
            return Some(value);
        }
    }
    None
}

/// Whether a dependency outcome lets a dependent run.
pub(crate) fn dependency_satisfied(status: StepStatus) -> bool {
    status == StepStatus::Succeeded
}

#[cfg(test)]
mod tests {
    use agentic_core::StepKind;

    use super::*;

    fn result(name: &str, outputs: Value) -> StepResult {
        let mut result = StepResult::new(name, StepKind::Tool, StepStatus::Succeeded);
        result.outputs = outputs.as_object().cloned().unwrap();
        result
    }

    #[test]
    fn test_resolve_step_data_from_context_merge() {
        let inputs = json!({"n": 1}).as_object().cloned().unwrap();
        // `parse` was recorded in the context (for example by an earlier, resumed run) but
        // is not among this run's results; `list` is a result of this run and overrides
        // the stale context entry of the same name.
        let known = json!({
            "parse": {"outputs": {"ast": {"functions": ["main"]}}, "status": "succeeded"},
            "list": {"outputs": {"items": ["stale"]}, "status": "succeeded"}
        })
        .as_object()
        .cloned()
        .unwrap();
        let fresh = result("list", json!({"items": ["fresh"]}));
        let context = build_context(&inputs, &Value::Null, &known, [&fresh]);
        let render = |text: &str| Template::parse(text).unwrap().render(&context);
        assert_eq!(render("${steps.parse.outputs.ast.functions[0]}"), json!("main"));
        assert_eq!(render("${steps.list.outputs.items[0]}"), json!("fresh"));
        assert_eq!(render("${steps.list.status}"), json!("succeeded"));
        assert_eq!(render("${inputs.n}"), json!(1));
    }

    #[test]
    fn when_conditions() {
        let context = json!({"inputs": {"flag": true, "n": 0, "mode": "deep"}, "steps": {"a": {"outputs": {"exit_code": 0}, "status": "succeeded"}}});
        assert!(evaluate_when("${inputs.flag}", &context).unwrap());
        assert!(!evaluate_when("${inputs.n}", &context).unwrap());
        assert!(!evaluate_when("${inputs.missing}", &context).unwrap());
        assert!(evaluate_when("steps.a.outputs.exit_code == 0 and inputs.mode == 'deep'", &context).unwrap());
        assert!(!evaluate_when("inputs.mode == 'shallow'", &context).unwrap());
        assert!(evaluate_when("inputs.mode ==", &context).is_err());
    }

    #[test]
    fn prompts_render_values_as_variables_not_source() {
        let context = json!({"inputs": {"code": "{{ 7 * 7 }} {% if x %}"}, "steps": {}, "attempt": {"number": 2}});
        let with = json!({"lang": "python"}).as_object().cloned().unwrap();
        let text =
            render_prompt("Review ${inputs.code} in {{ with.lang }}, attempt {{ attempt.number }}.", &context, &with)
                .unwrap();
        assert_eq!(text, "Review {{ 7 * 7 }} {% if x %} in python, attempt 2.");
        let list = json!({"inputs": {}, "steps": {"r": {"outputs": {"f": [1, 2]}}}});
        assert_eq!(render_prompt("F: ${steps.r.outputs.f}", &list, &Map::new()).unwrap(), "F: [1,2]");
        assert!(render_prompt("{% if %}", &context, &with).is_err());
    }

    #[test]
    fn json_is_found_in_replies() {
        assert_eq!(extract_json("{\"a\": 1}"), Some(json!({"a": 1})));
        assert_eq!(extract_json("Here:\n```json\n{\"a\": 2}\n```\nbye"), Some(json!({"a": 2})));
        assert_eq!(extract_json("The answer is {\"a\": 3}."), Some(json!({"a": 3})));
        assert_eq!(extract_json("no json here"), None);
        assert_eq!(extract_json("42\n"), Some(json!(42)));
    }

    #[test]
    fn truthiness() {
        for falsy in [json!(null), json!(false), json!(0), json!(""), json!([]), json!({})] {
            assert!(!truthy(&falsy), "{falsy}");
        }
        for true_value in [json!(true), json!(1), json!("x"), json!([0]), json!({"a": null})] {
            assert!(truthy(&true_value), "{true_value}");
        }
    }
}
