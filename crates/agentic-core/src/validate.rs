//! Loading and validating workflows: every problem, with its place, before anything runs.
//!
//! [`load_workflow`] parses YAML, checks the structure against the generated schema, then
//! checks meaning: unique step names, step kinds and their keys, every `${...}` reference
//! against the declared inputs, steps and step outputs, `when:` conditions, prompt
//! templates, and dependency cycles (printed as `a -> b -> a`). A workflow that passes is a
//! [`ValidatedWorkflow`], which also holds the step DAG the engine runs.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Position, did_you_mean, sort_diagnostics};
use crate::document::DocumentLoader;
use crate::expr::{Expression, Part, Segment, Template};
use crate::workflow::{ScoreSource, StepKind, Workflow};
use crate::yaml::{SourceMap, pointer_segment};

/// One incoming edge of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dependency {
    /// Index of the step depended on.
    pub step: usize,
    /// True when every reference to that step has a `??` default and it is not in
    /// `depends_on`: the dependent still runs when the dependency is skipped.
    pub optional: bool,
}

/// A workflow that passed validation, with its step DAG.
#[derive(Debug, Clone)]
pub struct ValidatedWorkflow {
    workflow: Workflow,
    dependencies: Vec<Vec<Dependency>>,
    dependents: Vec<Vec<usize>>,
    order: Vec<usize>,
    graph: DiGraph<usize, ()>,
}

impl ValidatedWorkflow {
    /// Validates a workflow built in code (no positions are available).
    pub fn new(workflow: Workflow) -> Result<ValidatedWorkflow, Vec<Diagnostic>> {
        let (validated, diagnostics) = validate(workflow, &SourceMap::default());
        validated.ok_or(diagnostics)
    }

    /// The workflow definition.
    pub fn workflow(&self) -> &Workflow {
        &self.workflow
    }

    /// The steps a step waits for.
    pub fn dependencies(&self, step_idx: usize) -> &[Dependency] {
        &self.dependencies[step_idx]
    }

    /// The steps that wait for a step.
    pub fn dependents(&self, step_idx: usize) -> &[usize] {
        &self.dependents[step_idx]
    }

    /// Step indices in an order where every step comes after its dependencies.
    pub fn topological_order(&self) -> &[usize] {
        &self.order
    }

    /// The index of the step called `name`.
    pub fn step_index(&self, name: &str) -> Option<usize> {
        self.workflow.steps.iter().position(|step| step.name == name)
    }

    /// The DAG: node weights are step indices, edges go from dependency to dependent.
    pub fn graph(&self) -> &DiGraph<usize, ()> {
        &self.graph
    }
}

/// The outcome of loading a workflow file.
#[derive(Debug)]
pub struct WorkflowLoad {
    /// The workflow, when it has no errors (warnings may remain).
    pub workflow: Option<ValidatedWorkflow>,
    /// Every problem, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
}

fn loader() -> &'static DocumentLoader {
    static LOADER: OnceLock<DocumentLoader> = OnceLock::new();
    LOADER.get_or_init(|| DocumentLoader::new::<Workflow>("workflow"))
}

/// Loads a workflow from YAML text. `file` is only used to label diagnostics.
pub fn load_workflow(text: &str, file: &str) -> WorkflowLoad {
    let loaded = loader().load::<Workflow>(text);
    let mut diagnostics = loaded.diagnostics;
    let mut workflow = None;
    if let (Some(value), Some(document)) = (loaded.value, &loaded.document) {
        let (validated, more) = validate(value, &document.source_map);
        diagnostics.extend(more);
        workflow = validated;
    } else if let (Some(repaired), Some(document)) = (loaded.repaired, &loaded.document) {
        // Structural errors: still report problems of meaning in what could be read.
        // Values the structural check rejected were dropped before this pass; problems that
        // merely follow from their absence are not reported again.
        let (_, more) = validate(repaired, &document.source_map);
        // A step missing a required key, or whose `kind` was rejected, got a stand-in for it:
        // what is said about that step would be about the stand-in (an agent step's missing
        // `prompt` for a step meant as a command), so nothing is (other steps are still checked).
        let pruned: Vec<String> = diagnostics
            .iter()
            .filter_map(|d| {
                let pointer = d.pointer.as_deref()?;
                Some(match pointer.rsplit_once('/') {
                    Some((parent, key)) if (d.code == "missing-field" || key == "kind") && !parent.is_empty() => {
                        parent.to_owned()
                    }
                    _ => pointer.to_owned(),
                })
            })
            .collect();
        // Without readable `steps` (a stand-in list), every reference to a step or input would be
        // "unknown" or "unused": nothing of meaning is said. A step with a stand-in (its kind,
        // or another key) makes what is said of its outputs elsewhere
        // (`${steps.a.outputs.stdout}`) unsure.
        let steps_stood_in = pruned.iter().any(|p| p == "/steps");
        let step_stood_in = pruned.iter().any(|p| p.starts_with("/steps/"));
        diagnostics.extend(more.into_iter().filter(|d| {
            let pointer = d.pointer.as_deref().unwrap_or_default();
            let follows = pruned.iter().any(|p| pointer == p || pointer.starts_with(&format!("{p}/")));
            let steps_emptied = d.code == "missing-field" && pointer == "/steps";
            let about_step = step_stood_in && d.code == "unknown-output";
            !follows && !steps_emptied && !steps_stood_in && !about_step
        }));
    }
    for diagnostic in &mut diagnostics {
        diagnostic.file = Some(file.to_owned());
    }
    sort_diagnostics(&mut diagnostics);
    WorkflowLoad { workflow, diagnostics }
}

/// Checks the meaning of a structurally valid workflow.
pub fn validate(workflow: Workflow, source_map: &SourceMap) -> (Option<ValidatedWorkflow>, Vec<Diagnostic>) {
    let mut checker = Checker { workflow: &workflow, source_map, diagnostics: Vec::new() };
    let (dependencies, graph) = checker.run();
    let diagnostics = checker.diagnostics;
    if diagnostics.iter().any(Diagnostic::is_error) {
        return (None, diagnostics);
    }
    let mut dependents = vec![Vec::new(); workflow.steps.len()];
    for (step_idx, deps) in dependencies.iter().enumerate() {
        for dependency in deps {
            dependents[dependency.step].push(step_idx);
        }
    }
    // The checker reported every cycle as an error, so the graph is acyclic here.
    let order = petgraph::algo::toposort(&graph, None)
        .map(|order| order.into_iter().map(|node| graph[node]).collect())
        .expect("every cycle is reported as an error before this point");
    (Some(ValidatedWorkflow { workflow, dependencies, dependents, order, graph }), diagnostics)
}

struct Checker<'a> {
    workflow: &'a Workflow,
    source_map: &'a SourceMap,
    diagnostics: Vec<Diagnostic>,
}

/// Keys that only make sense for some step kinds.
const KIND_KEYS: [(&str, &[StepKind]); 10] = [
    ("prompt", &[StepKind::Agent]),
    ("system", &[StepKind::Agent]),
    ("model", &[StepKind::Agent]),
    ("role", &[StepKind::Agent]),
    ("tool", &[StepKind::Tool]),
    ("argv", &[StepKind::Command]),
    ("env", &[StepKind::Command]),
    ("stdin", &[StepKind::Command]),
    ("runtime", &[StepKind::Command]),
    ("with", &[StepKind::Agent, StepKind::Tool]),
];

const ATTEMPT_FIELDS: [&str; 4] = ["number", "feedback", "previous", "max_attempts"];

impl Checker<'_> {
    fn position(&self, pointer: &str) -> Position {
        self.source_map.nearest(pointer)
    }

    fn error(&mut self, code: &str, pointer: &str, message: String, hint: Option<String>) {
        let mut diagnostic = Diagnostic::error(code, message).at(self.position(pointer)).at_pointer(pointer);
        if let Some(hint) = hint {
            diagnostic = diagnostic.with_hint(hint);
        }
        self.diagnostics.push(diagnostic);
    }

    fn warning(&mut self, code: &str, pointer: &str, message: String, hint: String) {
        self.diagnostics
            .push(Diagnostic::warning(code, message).at(self.position(pointer)).at_pointer(pointer).with_hint(hint));
    }

    fn run(&mut self) -> (Vec<Vec<Dependency>>, DiGraph<usize, ()>) {
        let workflow = self.workflow;
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (idx, step) in workflow.steps.iter().enumerate() {
            let pointer = format!("/steps/{idx}/name");
            if !is_identifier(&step.name) {
                self.error(
                    "invalid-name",
                    &pointer,
                    format!("step name `{}` is not a plain name", step.name),
                    Some("use letters, digits, `_` and `-`, starting with a letter or `_`".to_owned()),
                );
            }
            if let Some(first) = names.insert(step.name.as_str(), idx) {
                let first_line = self.position(&format!("/steps/{first}/name")).line;
                self.error(
                    "duplicate-step",
                    &pointer,
                    format!("step name `{}` is used twice (first on line {first_line})", step.name),
                    Some("give each step a unique `name`".to_owned()),
                );
                names.insert(step.name.as_str(), first);
            }
        }
        if workflow.steps.is_empty() {
            self.error(
                "missing-field",
                "/steps",
                "the workflow has no steps".to_owned(),
                Some("add at least one step under `steps:`".to_owned()),
            );
        }
        self.check_inputs();

        let mut used_inputs = BTreeSet::new();
        let mut dependencies: Vec<Vec<Dependency>> = Vec::with_capacity(workflow.steps.len());
        for (idx, step) in workflow.steps.iter().enumerate() {
            let base = format!("/steps/{idx}");
            self.check_kind_keys(idx);
            // step index -> optional?
            let mut deps: HashMap<usize, bool> = HashMap::new();
            for (dep_idx, name) in step.depends_on.iter().enumerate() {
                let pointer = format!("{base}/depends_on/{dep_idx}");
                match names.get(name.as_str()) {
                    Some(&target) => {
                        deps.insert(target, false);
                    }
                    None => {
                        let hint = self.step_hint(name);
                        self.error(
                            "unknown-step",
                            &pointer,
                            format!("step `{}` depends on unknown step `{name}`", step.name),
                            Some(hint),
                        );
                    }
                }
            }
            for (pointer, text) in step_strings(step, &base) {
                for expression in self.expressions(&pointer, &text) {
                    self.check_reference(&pointer, &expression, &names, &mut used_inputs, &mut deps, None);
                }
            }
            if let Some(prompt) = &step.prompt {
                self.check_prompt(&format!("{base}/prompt"), prompt, &names, &mut used_inputs, &mut deps);
            }
            if let Some(when) = &step.when {
                self.check_when(&format!("{base}/when"), when, &names, &mut used_inputs, &mut deps);
            }
            if let Some(timeout) = step.timeout_s
                && !(timeout > 0.0 && timeout.is_finite())
            {
                self.error(
                    "invalid-value",
                    &format!("{base}/timeout_s"),
                    format!("`timeout_s` is {timeout}; it must be a finite number more than 0"),
                    Some("give the attempt a positive number of seconds".to_owned()),
                );
            }
            if let Some(deadline) = step.deadline_s
                && !(deadline > 0.0 && deadline.is_finite())
            {
                self.error(
                    "invalid-value",
                    &format!("{base}/deadline_s"),
                    format!("`deadline_s` is {deadline}; it must be a finite number more than 0"),
                    Some("give the step a positive number of seconds".to_owned()),
                );
            }
            let mut deps: Vec<Dependency> =
                deps.into_iter().map(|(step, optional)| Dependency { step, optional }).collect();
            deps.sort_by_key(|dependency| dependency.step);
            dependencies.push(deps);
        }

        for (name, output) in &workflow.outputs {
            let pointer = format!("/outputs/{}/from", pointer_segment(name));
            let expressions = self.expressions(&pointer, &output.from);
            if expressions.is_empty() && !output.from.contains("${") {
                self.error(
                    "output-not-expression",
                    &pointer,
                    format!("output `{name}` is taken from the fixed text `{}`, not from a step", output.from),
                    Some("write an expression such as `${steps.<step>.outputs.<name>}`".to_owned()),
                );
            }
            let mut ignored = HashMap::new();
            for expression in expressions {
                self.check_reference(&pointer, &expression, &names, &mut used_inputs, &mut ignored, Some(name));
            }
        }
        self.check_evaluation(&names, &mut used_inputs);
        self.check_facts(&names, &mut used_inputs);
        for name in workflow.inputs.keys() {
            if !used_inputs.contains(name.as_str()) {
                self.warning(
                    "unused-input",
                    &format!("/inputs/{}", pointer_segment(name)),
                    format!("input `{name}` is never used"),
                    "reference it as `${inputs.NAME}` or remove it".replace("NAME", name),
                );
            }
        }
        let graph = dependency_graph(&dependencies);
        self.check_cycles(&graph, &dependencies);
        (dependencies, graph)
    }

    fn step_hint(&self, name: &str) -> String {
        let known: Vec<&str> = self.workflow.steps.iter().map(|step| step.name.as_str()).collect();
        match did_you_mean(name, known.iter().copied()) {
            Some(suggestion) => format!("did you mean `{suggestion}`?"),
            None => format!("known steps: {}", known.join(", ")),
        }
    }

    fn check_inputs(&mut self) {
        for (name, input) in &self.workflow.inputs {
            let base = format!("/inputs/{}", pointer_segment(name));
            if !is_identifier(name) {
                self.error(
                    "invalid-name",
                    &base,
                    format!("input name `{name}` is not a plain name"),
                    Some("use letters, digits and `_`".to_owned()),
                );
            }
            if let Some(default) = &input.default
                && !default.is_null()
                && !input.value_type.accepts(default)
            {
                self.error(
                    "invalid-type",
                    &format!("{base}/default"),
                    format!(
                        "default of input `{name}` is {default}, which is not of type `{}`",
                        input.value_type.as_str()
                    ),
                    Some("make the default match `type`, or change `type`".to_owned()),
                );
            }
            if let Some(allowed) = &input.allowed {
                if allowed.is_empty() {
                    self.error(
                        "invalid-value",
                        &format!("{base}/enum"),
                        format!("`enum` of input `{name}` is empty"),
                        Some("list the allowed values, or remove `enum`".to_owned()),
                    );
                }
                if let Some(default) = &input.default
                    && !default.is_null()
                    && !allowed.contains(default)
                {
                    self.error(
                        "invalid-value",
                        &format!("{base}/default"),
                        format!("default {default} of input `{name}` is not one of its `enum` values"),
                        Some("add the default to `enum`, or change it".to_owned()),
                    );
                }
            }
        }
    }

    fn check_kind_keys(&mut self, idx: usize) {
        let step = &self.workflow.steps[idx];
        let base = format!("/steps/{idx}");
        let present = |key: &str| match key {
            "prompt" => step.prompt.is_some(),
            "system" => step.system.is_some(),
            "model" => step.model.is_some(),
            "role" => step.role.is_some(),
            "tool" => step.tool.is_some(),
            "argv" => step.argv.is_some(),
            "env" => !step.env.is_empty(),
            "stdin" => step.stdin.is_some(),
            "runtime" => step.runtime.is_some(),
            "with" => !step.with.is_empty(),
            _ => false,
        };
        for (key, kinds) in KIND_KEYS {
            if present(key) && !kinds.contains(&step.kind) {
                let owners: Vec<&str> = kinds.iter().map(|kind| kind.as_str()).collect();
                let hint = if key == "with" {
                    "pass values to a command through `argv` or `env`".to_owned()
                } else {
                    format!("remove `{key}`, or change `kind` to {}", owners.join(" or "))
                };
                self.error(
                    "key-not-for-kind",
                    &format!("{base}/{key}"),
                    format!(
                        "`{key}` is for {} steps, but step `{}` is {} {} step",
                        owners.join(" and "),
                        step.name,
                        if step.kind == StepKind::Agent { "an" } else { "a" },
                        step.kind.as_str()
                    ),
                    Some(hint),
                );
            }
        }
        let (required, example) = match step.kind {
            StepKind::Agent => ("prompt", "prompt: \"Review ${inputs.code}\""),
            StepKind::Tool => ("tool", "tool: read_file"),
            StepKind::Command => ("argv", "argv: [pytest, -q]"),
        };
        if !present(required) {
            self.error(
                "missing-field",
                &format!("{base}/{required}"),
                format!("{} step `{}` has no `{required}`", step.kind.as_str(), step.name),
                Some(format!("add `{example}`")),
            );
        }
        if let Some(argv) = &step.argv {
            if argv.is_empty() || argv[0].trim().is_empty() {
                self.error(
                    "invalid-value",
                    &format!("{base}/argv"),
                    format!("command step `{}` has an empty `argv`", step.name),
                    Some("the first item is the program to run, for example `[python3, script.py]`".to_owned()),
                );
            } else if argv.len() == 1 && argv[0].contains(' ') && !argv[0].starts_with("${") {
                self.warning(
                    "argv-shell-string",
                    &format!("{base}/argv/0"),
                    format!("`argv` of step `{}` is one string with spaces: `{}`", step.name, argv[0]),
                    "argv is never run through a shell; split it into a list of words".to_owned(),
                );
            }
        }
    }

    /// Parses a string as a template, reporting syntax errors.
    fn expressions(&mut self, pointer: &str, text: &str) -> Vec<Expression> {
        match Template::parse(text) {
            Ok(template) => template.expressions().cloned().collect(),
            Err(error) => {
                self.error(
                    "expression-syntax",
                    pointer,
                    format!("bad expression: {}", error.message),
                    Some("expressions look like `${inputs.name}` or `${steps.step.outputs.key ?? 'default'}`; write `$${` for a literal `${`".to_owned()),
                );
                Vec::new()
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn check_reference(
        &mut self,
        pointer: &str,
        expression: &Expression,
        names: &HashMap<&str, usize>,
        used_inputs: &mut BTreeSet<String>,
        deps: &mut HashMap<usize, bool>,
        output_name: Option<&str>,
    ) {
        let segments: Vec<String> = expression
            .segments
            .iter()
            .map(|segment| match segment {
                Segment::Key(key) => key.clone(),
                Segment::Index(idx) => idx.to_string(),
            })
            .collect();
        let keyed: Vec<Option<&str>> = expression
            .segments
            .iter()
            .map(|segment| match segment {
                Segment::Key(key) => Some(key.as_str()),
                Segment::Index(_) => None,
            })
            .collect();
        self.check_path(
            pointer,
            &expression.root,
            &segments,
            &keyed,
            expression.is_optional(),
            &expression.to_string(),
            names,
            used_inputs,
            deps,
            output_name,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn check_path(
        &mut self,
        pointer: &str,
        root: &str,
        segments: &[String],
        keyed: &[Option<&str>],
        optional: bool,
        shown: &str,
        names: &HashMap<&str, usize>,
        used_inputs: &mut BTreeSet<String>,
        deps: &mut HashMap<usize, bool>,
        output_name: Option<&str>,
    ) {
        let workflow = self.workflow;
        match root {
            "inputs" => {
                let Some(Some(name)) = keyed.first() else {
                    used_inputs.extend(workflow.inputs.keys().cloned());
                    return;
                };
                if workflow.inputs.contains_key(*name) {
                    used_inputs.insert((*name).to_owned());
                } else {
                    let hint = match did_you_mean(name, workflow.inputs.keys().map(String::as_str)) {
                        Some(suggestion) => format!("did you mean `{suggestion}`?"),
                        None if workflow.inputs.is_empty() => {
                            format!("declare it under `inputs:` as `{name}: {{type: string}}`")
                        }
                        None => format!(
                            "declared inputs: {}; or declare `{name}` under `inputs:`",
                            workflow.inputs.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    };
                    self.error(
                        "unknown-reference",
                        pointer,
                        format!("`{shown}` refers to unknown input `{name}`"),
                        Some(hint),
                    );
                }
            }
            "steps" => {
                let Some(Some(step_name)) = keyed.first() else {
                    self.error(
                        "unknown-reference",
                        pointer,
                        format!("`{shown}` must name a step: `steps.<step>.outputs.<name>`"),
                        None,
                    );
                    return;
                };
                let Some(&target) = names.get(step_name) else {
                    let hint = self.step_hint(step_name);
                    self.error(
                        "unknown-reference",
                        pointer,
                        format!("`{shown}` refers to unknown step `{step_name}`"),
                        Some(hint),
                    );
                    return;
                };
                if output_name.is_none() {
                    let entry = deps.entry(target).or_insert(optional);
                    *entry = *entry && optional;
                }
                match keyed.get(1) {
                    None => {}
                    Some(Some("status")) => {}
                    Some(Some("outputs")) => {
                        let step = &workflow.steps[target];
                        if let Some(Some(output)) = keyed.get(2)
                            && !step.kind.builtin_outputs().contains(output)
                            && !step.outputs.contains_key(*output)
                        {
                            let mut available: Vec<&str> = step.kind.builtin_outputs().to_vec();
                            available.extend(step.outputs.keys().map(String::as_str));
                            let hint = match did_you_mean(output, available.iter().copied()) {
                                Some(suggestion) => format!("did you mean `{suggestion}`?"),
                                None => format!(
                                    "{} {} step produces {}; declare others under the step's `outputs:`",
                                    if step.kind == StepKind::Agent { "an" } else { "a" },
                                    step.kind.as_str(),
                                    available.join(", ")
                                ),
                            };
                            let what = match output_name {
                                Some(name) => format!(
                                    "output `{name}` is taken from `{shown}`, but step `{step_name}` produces no output `{output}`"
                                ),
                                None => format!(
                                    "`{shown}` refers to output `{output}`, which step `{step_name}` does not produce"
                                ),
                            };
                            self.error("unknown-output", pointer, what, Some(hint));
                        }
                    }
                    Some(other) => {
                        let shown_segment = other.map(str::to_owned).unwrap_or_else(|| segments[1].clone());
                        self.error(
                            "unknown-reference",
                            pointer,
                            format!("`{shown}`: expected `outputs` or `status` after `steps.{step_name}`, found `{shown_segment}`"),
                            Some(format!("write `steps.{step_name}.outputs.<name>`")),
                        );
                    }
                }
            }
            "attempt" => {
                if let Some(Some(field)) = keyed.first()
                    && !ATTEMPT_FIELDS.contains(field)
                {
                    self.error(
                        "unknown-reference",
                        pointer,
                        format!("`{shown}` refers to unknown attempt field `{field}`"),
                        Some(format!("attempt fields: {}", ATTEMPT_FIELDS.join(", "))),
                    );
                }
            }
            "with" | "loop" => {}
            "outputs" => {
                self.error(
                    "unknown-reference",
                    pointer,
                    format!("`{shown}`: the workflow's `outputs` exist only after the run"),
                    Some("refer to the step that produces the value: `${steps.<step>.outputs.<name>}` (`outputs.<name>` works in an evaluation criterion's `score_from`)".to_owned()),
                );
            }
            other => {
                self.error(
                    "unknown-reference",
                    pointer,
                    format!("`{shown}` starts with unknown name `{other}`"),
                    Some("expressions start with `inputs`, `steps` or `attempt`".to_owned()),
                );
            }
        }
    }

    fn check_prompt(
        &mut self,
        pointer: &str,
        prompt: &str,
        names: &HashMap<&str, usize>,
        used_inputs: &mut BTreeSet<String>,
        deps: &mut HashMap<usize, bool>,
    ) {
        let template = match Template::parse(prompt) {
            Ok(template) => template,
            Err(_) => {
                // Reported with its position by `expressions`.
                self.expressions(pointer, prompt);
                return;
            }
        };
        for expression in template.expressions() {
            self.check_reference(pointer, expression, names, used_inputs, deps, None);
        }
        let source = prompt_source(&template);
        let environment = minijinja::Environment::new();
        match environment.template_from_str(&source) {
            Ok(compiled) => {
                let variables = compiled.undeclared_variables(true);
                let mut sorted: Vec<&String> = variables.iter().collect();
                sorted.sort();
                for variable in sorted {
                    if variable.starts_with(EXPR_VAR_PREFIX) {
                        continue;
                    }
                    self.check_dotted(pointer, variable, names, used_inputs, deps, true);
                }
            }
            Err(error) => self.error(
                "template-syntax",
                pointer,
                format!("prompt template does not compile: {}", error.detail().unwrap_or("syntax error")),
                Some("prompts are minijinja (Jinja2) templates: check `{{ }}` and `{% %}` pairs".to_owned()),
            ),
        }
    }

    fn check_when(
        &mut self,
        pointer: &str,
        when: &str,
        names: &HashMap<&str, usize>,
        used_inputs: &mut BTreeSet<String>,
        deps: &mut HashMap<usize, bool>,
    ) {
        if let Ok(template) = Template::parse(when)
            && let [Part::Expr(expression)] = template.parts.as_slice()
        {
            self.check_reference(pointer, expression, names, used_inputs, deps, None);
            return;
        }
        let environment = minijinja::Environment::new();
        match environment.compile_expression(when) {
            Ok(expression) => {
                let variables = expression.undeclared_variables(true);
                let mut sorted: Vec<&String> = variables.iter().collect();
                sorted.sort();
                for variable in sorted {
                    self.check_dotted(pointer, variable, names, used_inputs, deps, false);
                }
            }
            Err(error) => self.error(
                "expression-syntax",
                pointer,
                format!("`when` does not parse: {}", error.detail().unwrap_or("syntax error")),
                Some("write a condition such as `steps.lint.outputs.exit_code == 0 and inputs.deep`".to_owned()),
            ),
        }
    }

    /// Checks a dotted variable from a minijinja template or condition.
    fn check_dotted(
        &mut self,
        pointer: &str,
        variable: &str,
        names: &HashMap<&str, usize>,
        used_inputs: &mut BTreeSet<String>,
        deps: &mut HashMap<usize, bool>,
        allow_with: bool,
    ) {
        let mut parts = variable.split('.');
        let root = parts.next().unwrap_or_default();
        let segments: Vec<String> = parts.map(str::to_owned).collect();
        let keyed: Vec<Option<&str>> = segments.iter().map(|s| Some(s.as_str())).collect();
        if allow_with && matches!(root, "with" | "loop" | "range" | "true" | "false" | "none") {
            return;
        }
        if !matches!(root, "inputs" | "steps" | "attempt") {
            let hint = if allow_with {
                "prompt variables are `inputs.*`, `steps.*`, `attempt.*` and `with.*`"
            } else {
                "conditions use `inputs.*`, `steps.*` and `attempt.*`"
            };
            self.error(
                "unknown-reference",
                pointer,
                format!("`{variable}` is not defined here"),
                Some(hint.to_owned()),
            );
            return;
        }
        let shown = variable.to_owned();
        self.check_path(pointer, root, &segments, &keyed, false, &shown, names, used_inputs, deps, None);
    }

    fn check_evaluation(&mut self, names: &HashMap<&str, usize>, used_inputs: &mut BTreeSet<String>) {
        let Some(evaluation) = &self.workflow.evaluation else {
            return;
        };
        let mut seen = BTreeSet::new();
        for (idx, criterion) in evaluation.criteria.iter().enumerate() {
            let base = format!("/evaluation/criteria/{idx}");
            if let Some(source) = &criterion.score_from {
                self.check_score_source(&format!("{base}/score_from"), &criterion.name, source, names, used_inputs);
            }
            if !seen.insert(criterion.name.as_str()) {
                self.error(
                    "duplicate-criterion",
                    &format!("{base}/name"),
                    format!("criterion `{}` is declared twice", criterion.name),
                    Some("give each criterion a unique name".to_owned()),
                );
            }
            if let Some(weight) = criterion.weight
                && weight <= 0.0
            {
                self.error(
                    "invalid-weight",
                    &format!("{base}/weight"),
                    format!("weight of criterion `{}` is {weight}; weights must be positive", criterion.name),
                    Some("use a positive weight, or drop the criterion".to_owned()),
                );
            }
        }
        for (name, weight) in &evaluation.weights {
            if *weight <= 0.0 {
                self.error(
                    "invalid-weight",
                    &format!("/evaluation/weights/{}", pointer_segment(name)),
                    format!("weight of `{name}` is {weight}; weights must be positive"),
                    Some("use a positive weight, or remove the entry".to_owned()),
                );
            }
        }
    }

    /// `score_from` of criterion `name`: `judge`, a known `metric.<name>`, or one expression
    /// whose references exist (`outputs.<name>` names a declared workflow output).
    fn check_score_source(
        &mut self,
        pointer: &str,
        name: &str,
        source: &str,
        names: &HashMap<&str, usize>,
        used_inputs: &mut BTreeSet<String>,
    ) {
        match ScoreSource::parse(source) {
            Ok(ScoreSource::Expression(expression)) => {
                self.check_run_expression(pointer, &format!("criterion `{name}`"), &expression, names, used_inputs)
            }
            Ok(_) => {}
            Err(message) => {
                self.error(
                    "invalid-score-source",
                    pointer,
                    format!("criterion `{name}`: {message}"),
                    Some("write `judge`, `metric.duration_s` (or another run metric), or one expression such as `${steps.tests.outputs.pass_rate}`".to_owned()),
                );
            }
        }
    }

    /// `evaluation.facts`: one expression per fact, a `when:`-style condition per gate.
    fn check_facts(&mut self, names: &HashMap<&str, usize>, used_inputs: &mut BTreeSet<String>) {
        let Some(facts) = self.workflow.evaluation.as_ref().and_then(|evaluation| evaluation.facts.as_ref()) else {
            return;
        };
        let expressions =
            [("swe_tests", &facts.swe_tests), ("citations", &facts.citations), ("tool_calls", &facts.tool_calls)];
        for (field, text) in expressions {
            let Some(text) = text else { continue };
            let pointer = format!("/evaluation/facts/{field}");
            match Template::parse(text) {
                Ok(template) => match template.parts.as_slice() {
                    [Part::Expr(expression)] => {
                        let expression = expression.clone();
                        self.check_run_expression(
                            &pointer,
                            &format!("fact `{field}`"),
                            &expression,
                            names,
                            used_inputs,
                        );
                    }
                    _ => self.error(
                        "invalid-value",
                        &pointer,
                        format!("fact `{field}` must be one `${{...}}` expression"),
                        Some(format!("for example `{field}: \"${{steps.tests.outputs.{field}}}\"`")),
                    ),
                },
                Err(error) => self.error(
                    "expression-syntax",
                    &pointer,
                    format!("bad expression: {}", error.message),
                    Some("write one expression such as `${steps.tests.outputs.swe_tests}`".to_owned()),
                ),
            }
        }
        for (gate, condition) in &facts.gates {
            let pointer = format!("/evaluation/facts/gates/{}", pointer_segment(gate));
            let mut ignored = HashMap::new();
            self.check_when(&pointer, condition, names, used_inputs, &mut ignored);
        }
    }

    /// An expression evaluated on the finished run (`score_from`, facts): its references exist,
    /// and `outputs.<name>` names a declared workflow output.
    fn check_run_expression(
        &mut self,
        pointer: &str,
        owner: &str,
        expression: &Expression,
        names: &HashMap<&str, usize>,
        used_inputs: &mut BTreeSet<String>,
    ) {
        if expression.root == "outputs" {
            let output = match expression.segments.first() {
                Some(Segment::Key(output)) => output.as_str(),
                _ => "",
            };
            if !self.workflow.outputs.contains_key(output) {
                let declared = self.workflow.outputs.keys().map(String::as_str);
                let hint = match did_you_mean(output, declared) {
                    Some(suggestion) => format!("did you mean `outputs.{suggestion}`?"),
                    None => "declare it under `outputs:`, or score from `${steps.<step>.outputs.<name>}`".to_owned(),
                };
                self.error(
                    "unknown-output",
                    pointer,
                    format!("{owner} reads `{expression}`, but the workflow has no output `{output}`"),
                    Some(hint),
                );
            }
            return;
        }
        let mut ignored = HashMap::new();
        self.check_reference(pointer, expression, names, used_inputs, &mut ignored, None);
    }

    fn check_cycles(&mut self, graph: &DiGraph<usize, ()>, dependencies: &[Vec<Dependency>]) {
        let mut components = petgraph::algo::tarjan_scc(graph);
        components.sort_by_key(|component| component.iter().map(|node| graph[*node]).min());
        for component in components {
            let members: BTreeSet<usize> = component.iter().map(|node| graph[*node]).collect();
            let start = *members.iter().next().expect("components are not empty");
            let self_loop = dependencies[start].iter().any(|dependency| dependency.step == start);
            if members.len() < 2 && !self_loop {
                continue;
            }
            let cycle = cycle_through(start, &members, dependencies);
            let names: Vec<&str> = cycle.iter().map(|idx| self.workflow.steps[*idx].name.as_str()).collect();
            self.error(
                "dependency-cycle",
                &format!("/steps/{start}/name"),
                format!("dependency cycle: {}", names.join(" -> ")),
                Some(
                    "break the cycle: remove one `depends_on` entry or `${steps...}` reference between these steps"
                        .to_owned(),
                ),
            );
        }
    }
}

/// The DAG: node weights are step indices, edges go from dependency to dependent.
fn dependency_graph(dependencies: &[Vec<Dependency>]) -> DiGraph<usize, ()> {
    let count = dependencies.len();
    let mut graph = DiGraph::<usize, ()>::with_capacity(count, count);
    let nodes: Vec<NodeIndex> = (0..count).map(|idx| graph.add_node(idx)).collect();
    for (idx, deps) in dependencies.iter().enumerate() {
        for dependency in deps {
            graph.add_edge(nodes[dependency.step], nodes[idx], ());
        }
    }
    graph
}

/// A cycle that starts and ends at `start`, following "depends on" edges inside `members`:
/// `[a, b, a]` reads "a depends on b, which depends on a".
fn cycle_through(start: usize, members: &BTreeSet<usize>, dependencies: &[Vec<Dependency>]) -> Vec<usize> {
    // `reached_from[n] = m` means n was reached from m because m depends on n.
    let mut reached_from: HashMap<usize, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(current) = queue.pop_front() {
        for dependency in &dependencies[current] {
            let next = dependency.step;
            if !members.contains(&next) {
                continue;
            }
            if next == start {
                let mut path = vec![current];
                let mut node = current;
                while node != start {
                    node = reached_from[&node];
                    path.push(node);
                }
                path.reverse();
                path.push(start);
                return path;
            }
            if next != current && !reached_from.contains_key(&next) {
                reached_from.insert(next, current);
                queue.push_back(next);
            }
        }
    }
    vec![start, start]
}

/// The prefix of minijinja variables that stand for `${...}` expressions in prompts.
pub const EXPR_VAR_PREFIX: &str = "__agentic_expr_";

/// Turns a prompt template into minijinja source: literal text stays template source, and
/// each `${...}` becomes the variable `__agentic_expr_<N>` (never pasted text, so values
/// cannot inject template syntax). Pass the resolved values under those names.
pub fn prompt_source(template: &Template) -> String {
    let mut source = String::new();
    let mut expression_idx = 0;
    for part in &template.parts {
        match part {
            Part::Text(text) => source.push_str(text),
            Part::Expr(_) => {
                source.push_str(&format!("{{{{ {EXPR_VAR_PREFIX}{expression_idx} }}}}"));
                expression_idx += 1;
            }
        }
    }
    source
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Every string of a step that may hold `${...}` expressions, with its JSON pointer.
/// The prompt and `when` are checked separately (they are also minijinja).
fn step_strings(step: &crate::workflow::Step, base: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    fn walk(value: &Value, pointer: String, out: &mut Vec<(String, String)>) {
        match value {
            Value::String(text) => out.push((pointer, text.clone())),
            Value::Array(items) => {
                for (idx, item) in items.iter().enumerate() {
                    walk(item, format!("{pointer}/{idx}"), out);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    walk(item, format!("{pointer}/{}", pointer_segment(key)), out);
                }
            }
            _ => {}
        }
    }
    for (key, value) in &step.with {
        walk(value, format!("{base}/with/{}", pointer_segment(key)), &mut out);
    }
    if let Some(argv) = &step.argv {
        for (idx, arg) in argv.iter().enumerate() {
            out.push((format!("{base}/argv/{idx}"), arg.clone()));
        }
    }
    for (key, value) in &step.env {
        out.push((format!("{base}/env/{}", pointer_segment(key)), value.clone()));
    }
    for (key, value) in [("stdin", &step.stdin), ("system", &step.system), ("model", &step.model)] {
        if let Some(text) = value {
            out.push((format!("{base}/{key}"), text.clone()));
        }
    }
    out
}
