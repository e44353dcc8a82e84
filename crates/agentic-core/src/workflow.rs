//! The workflow model: the typed shape of a workflow YAML file.
//!
//! These types are the single source of truth for the format: the JSON Schema in
//! `docs/schema/workflow.schema.json` is generated from them, and the loader checks files
//! against that schema before it builds them. `docs/workflow-format.md` documents every key.
//! Expressions inside string values stay strings here; [`crate::expr`] parses them.

use std::fmt;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A workflow: inputs, steps that form a DAG, outputs, and how to evaluate a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// Unique name of the workflow, for example `code_review`.
    pub name: String,
    /// Version of this definition; a string or a number.
    #[serde(default)]
    pub version: Version,
    /// What the workflow does, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Experimental workflows are hidden from default listings and need an explicit opt-in to run.
    #[serde(default)]
    pub experimental: bool,
    /// Named inputs the workflow takes.
    #[serde(default)]
    pub inputs: IndexMap<String, InputSpec>,
    /// Named outputs, each taken from an expression over step outputs.
    #[serde(default)]
    pub outputs: IndexMap<String, OutputSpec>,
    /// Capability tags used to match datasets and list workflows.
    #[serde(default)]
    pub capabilities: Capabilities,
    /// The steps; edges come from `depends_on` and from `${steps.X...}` references.
    pub steps: Vec<Step>,
    /// How the engine runs the DAG.
    #[serde(default)]
    pub strategy: Strategy,
    /// How a run is evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<EvaluationSpec>,
    /// The most steps that may run at once (default: the engine's setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_parallel: Option<u32>,
    /// Default runtime settings for command steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSpec>,
}

/// A version written as a string (`"1.2"`) or a number (`1`); kept as text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version(pub String);

impl Default for Version {
    fn default() -> Self {
        Version("1".to_owned())
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Version(text)),
            Value::Number(number) => Ok(Version(number.to_string())),
            other => Err(serde::de::Error::custom(format!("expected a version string or number, found {other}"))),
        }
    }
}

impl JsonSchema for Version {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Version".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A version, written as a string or a number.",
            "type": ["string", "number"]
        })
    }
}

/// The JSON type of an input or output value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    /// A string (the default).
    #[default]
    String,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A JSON object.
    Object,
    /// A JSON array.
    Array,
    /// A file system path, passed as a string.
    Path,
    /// Any JSON value.
    Any,
}

impl ValueType {
    /// Whether `value` has this type (`null` never does).
    pub fn accepts(self, value: &Value) -> bool {
        match self {
            ValueType::String | ValueType::Path => value.is_string(),
            ValueType::Integer => value.is_i64() || value.is_u64(),
            ValueType::Number => value.is_number(),
            ValueType::Boolean => value.is_boolean(),
            ValueType::Object => value.is_object(),
            ValueType::Array => value.is_array(),
            ValueType::Any => !value.is_null(),
        }
    }

    /// The lowercase name used in YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Integer => "integer",
            ValueType::Number => "number",
            ValueType::Boolean => "boolean",
            ValueType::Object => "object",
            ValueType::Array => "array",
            ValueType::Path => "path",
            ValueType::Any => "any",
        }
    }
}

/// One workflow input.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// The value's type (default `string`).
    #[serde(default, rename = "type")]
    pub value_type: ValueType,
    /// Whether a run must supply it. Defaults to `true` when there is no `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// The value used when the run supplies none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// The only values allowed.
    #[serde(default, rename = "enum", skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
    /// What the input means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Other dataset field names that may supply this input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

impl InputSpec {
    /// Required unless stated otherwise or a default exists.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(self.default.is_none())
    }
}

/// One workflow output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Where the value comes from: an expression such as `${steps.review.outputs.text}`.
    pub from: String,
    /// A required output that does not resolve fails the `required_outputs_present` gate.
    #[serde(default = "yes")]
    pub required: bool,
    /// What the output means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The expected type, checked when present.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub value_type: Option<ValueType>,
}

fn yes() -> bool {
    true
}

/// Capability tags of a workflow.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// What the workflow consumes, for example `repo`, `issue_text`.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// What the workflow produces, for example `unified_diff`.
    #[serde(default)]
    pub outputs: Vec<String>,
}

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// Renders `prompt` and sends it to a model through an agent adapter.
    Agent,
    /// Calls a registered tool with the arguments in `with`.
    Tool,
    /// Runs `argv` as a process through the runtime.
    Command,
}

impl StepKind {
    /// The lowercase name used in YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Agent => "agent",
            StepKind::Tool => "tool",
            StepKind::Command => "command",
        }
    }

    /// Outputs every step of this kind produces, besides the ones it declares.
    pub fn builtin_outputs(self) -> &'static [&'static str] {
        match self {
            StepKind::Agent => &["text", "json"],
            StepKind::Tool => &["result"],
            StepKind::Command => &["exit_code", "stdout", "stderr", "json"],
        }
    }
}

/// One step of the DAG.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Unique name; other steps refer to it as `steps.<name>`.
    pub name: String,
    /// `agent`, `tool` or `command`.
    pub kind: StepKind,
    /// What the step is for, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Steps that must finish first, besides the ones referenced in expressions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Run only when this condition holds; otherwise the step is `skipped`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Retry policy for failed attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetrySpec>,
    /// Wall-clock limit of one attempt, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub timeout_s: Option<f64>,
    /// Wall-clock limit of the whole step including retries, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub deadline_s: Option<f64>,
    /// A failed critical step fails the `no_critical_step_failures` gate (default `true`).
    #[serde(default = "yes")]
    pub critical: bool,
    /// Named values passed to the step: template variables of an agent, arguments of a tool.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub with: IndexMap<String, Value>,
    /// Outputs the step declares besides its kind's built-in ones.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub outputs: IndexMap<String, StepOutputSpec>,
    /// Agent: the prompt template (minijinja), rendered from `with`, `inputs` and `attempt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Agent: an optional system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Agent: the model to ask, or a tier name the provider maps to a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Agent: the role of the agent (for reports and per-agent scoring).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Tool: the registered tool to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Command: the program and its arguments; never a shell string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// Command: extra environment variables.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    /// Command: text written to the process's standard input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// Command: runtime settings that override the workflow's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSpec>,
}

/// An output a step declares.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepOutputSpec {
    /// The expected type, checked when present.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub value_type: Option<ValueType>,
    /// A required output that is missing fails the step with `missing_required_output`.
    #[serde(default)]
    pub required: bool,
    /// What the output means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The class of a step error; retry policies choose which classes to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Worth retrying: rate limits, dropped connections, 5xx.
    Transient,
    /// The machine or a service failed.
    Infra,
    /// The step's own logic failed (non-zero exit, bad answer).
    User,
    /// Output or input did not validate.
    Validation,
    /// An attempt ran out of time.
    Timeout,
    /// The run was cancelled.
    Cancelled,
}

/// Retry policy of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Total attempts, the first included (default 3).
    #[serde(default = "default_max_attempts")]
    #[schemars(range(min = 1))]
    pub max_attempts: u32,
    /// Wait before the first retry, in seconds (default 1).
    #[serde(default = "default_initial_interval")]
    #[schemars(range(min = 0.0))]
    pub initial_interval_s: f64,
    /// Each wait is the previous one times this (default 2).
    #[serde(default = "default_backoff_factor")]
    #[schemars(range(min = 1.0))]
    pub backoff_factor: f64,
    /// The longest wait, in seconds (default 30).
    #[serde(default = "default_max_interval")]
    #[schemars(range(min = 0.0))]
    pub max_interval_s: f64,
    /// Randomize each wait by up to ±50% (default true).
    #[serde(default = "yes")]
    pub jitter: bool,
    /// Which error classes retry (default: transient, infra, timeout).
    #[serde(default = "default_retry_on")]
    pub retry_on: Vec<ErrorClass>,
}

fn default_max_attempts() -> u32 {
    3
}
fn default_initial_interval() -> f64 {
    1.0
}
fn default_backoff_factor() -> f64 {
    2.0
}
fn default_max_interval() -> f64 {
    30.0
}
fn default_retry_on() -> Vec<ErrorClass> {
    vec![ErrorClass::Transient, ErrorClass::Infra, ErrorClass::Timeout]
}

impl Default for RetrySpec {
    fn default() -> Self {
        RetrySpec {
            max_attempts: default_max_attempts(),
            initial_interval_s: default_initial_interval(),
            backoff_factor: default_backoff_factor(),
            max_interval_s: default_max_interval(),
            jitter: true,
            retry_on: default_retry_on(),
        }
    }
}

/// Which runtime runs command steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// A sandboxed local process (the default).
    #[default]
    Subprocess,
    /// A Docker container (opt-in).
    Docker,
}

/// Runtime settings for command steps.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSpec {
    /// `subprocess` (default) or `docker`.
    #[serde(default)]
    pub kind: RuntimeKind,
    /// Docker: the image to run in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Allow network access (default false: no network where the kernel allows).
    #[serde(default)]
    pub network: bool,
    /// Memory limit in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// CPU-time limit in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_s: Option<u64>,
    /// Limit on processes the step may start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_processes: Option<u64>,
    /// Limit on open files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open_files: Option<u64>,
    /// Names of environment variables passed through from the caller's environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_allow: Vec<String>,
    /// Largest captured stdout or stderr, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit_bytes: Option<u64>,
}

/// The execution strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StrategyKind {
    /// Run the DAG once.
    #[default]
    DagOnce,
    /// Re-run with feedback from the previous attempt's evaluation until it passes.
    IterativeRepair,
}

/// How the engine runs the DAG.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Strategy {
    /// `dag_once` (default) or `iterative_repair`.
    #[serde(default)]
    pub kind: StrategyKind,
    /// `iterative_repair`: the most attempts (default 3).
    #[serde(default = "default_max_attempts")]
    #[schemars(range(min = 1))]
    pub max_attempts: u32,
    /// `iterative_repair`: stop when the same failure repeats (default true).
    #[serde(default = "yes")]
    pub stop_on_repeat: bool,
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy { kind: StrategyKind::DagOnce, max_attempts: default_max_attempts(), stop_on_repeat: true }
    }
}

/// How a run of the workflow is evaluated.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluationSpec {
    /// A rubric file or built-in rubric to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_id: Option<String>,
    /// A scoring profile (`A`..`D` built in) that supplies criteria, weights and extra gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoring_profile: Option<String>,
    /// Criteria declared inline (they override a profile's of the same name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<CriterionSpec>,
    /// Weights by criterion name; they override the profile's and the criteria's.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub weights: IndexMap<String, f64>,
    /// Weighted score (0..100) a run needs to pass (default 70).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub pass_threshold: Option<f64>,
    /// Optional gates to evaluate besides the required five.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<String>,
    /// Evidence for optional and profile gates, taken from the finished run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<GateFactsSpec>,
}

/// Where `agentic run` finds the evidence optional gates need (`evaluation.facts`). Without it
/// those gates are "not proven" and fail.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateFactsSpec {
    /// One `${...}` expression resolving to `{fail_to_pass: {passed, total}, pass_to_pass:
    /// {passed, total}}`, for `tests_fail_to_pass_all_green` and `tests_pass_to_pass_threshold_met`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swe_tests: Option<String>,
    /// One `${...}` expression resolving to `{claims, cited}`, for `citations_present_for_claims`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<String>,
    /// One `${...}` expression resolving to a list of `{tool, arguments, schema}`, for
    /// `tool_call_schema_valid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<String>,
    /// Verdicts of other gates by name, each a condition written like `when:`, for example
    /// `patch_applies: "steps.apply.status == 'succeeded'"`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub gates: IndexMap<String, String>,
}

/// One rubric criterion, as written in a workflow's `evaluation` block or a rubric file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CriterionSpec {
    /// Criterion name, for example `correctness`.
    pub name: String,
    /// What the criterion measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// What counts as evidence for a score.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_required: Vec<String>,
    /// The raw scale as `[min, max]`, for example `[1, 5]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<[f64; 2]>,
    /// An anchor text for each score point, keyed by the point (`"1"`..`"5"`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub anchors: IndexMap<String, String>,
    /// Relative weight; must be positive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Minimum normalized score (0..1), or `{raw: N}` on the raw scale; a miss caps the grade at D.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_floor: Option<FloorSpec>,
    /// The normalization formula, for example `likert_1_5`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formula_id: Option<String>,
    /// Formula parameters, for example `{slo_good: 8, slo_bad: 30}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Map<String, Value>>,
    /// Where `agentic run` takes the raw score from: `judge` (the LLM judge; the default for
    /// `likert_*` criteria), `metric.<name>` (a measured run metric: `duration_s`,
    /// `total_tokens`, `cost_usd`, `step_success_rate`, `retries`), or one expression such as
    /// `${steps.tests.outputs.pass_rate}` or `${outputs.score}` that resolves to a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_from: Option<String>,
}

/// A measured run metric a criterion can be scored from (`score_from: metric.<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunMetric {
    /// Wall-clock duration of the run in seconds (use `lower_is_better` with SLOs).
    DurationS,
    /// Prompt plus completion tokens of every agent step.
    TotalTokens,
    /// Model cost in USD, when the provider reported it.
    CostUsd,
    /// Share of the steps that ran and succeeded (skipped by `when:` steps left out), 0..1.
    StepSuccessRate,
    /// Attempts beyond the first, summed over steps.
    Retries,
}

impl RunMetric {
    /// Every metric with its name.
    pub const ALL: [(RunMetric, &'static str); 5] = [
        (RunMetric::DurationS, "duration_s"),
        (RunMetric::TotalTokens, "total_tokens"),
        (RunMetric::CostUsd, "cost_usd"),
        (RunMetric::StepSuccessRate, "step_success_rate"),
        (RunMetric::Retries, "retries"),
    ];

    /// The metric called `name`.
    pub fn from_name(name: &str) -> Option<RunMetric> {
        RunMetric::ALL.iter().find(|(_, known)| *known == name).map(|(metric, _)| *metric)
    }

    /// Its name, as written after `metric.`.
    pub fn name(self) -> &'static str {
        RunMetric::ALL.iter().find(|(metric, _)| *metric == self).map(|(_, name)| *name).unwrap_or_default()
    }
}

/// Where a criterion's raw score comes from, parsed from `score_from`.
#[derive(Debug, Clone, PartialEq)]
pub enum ScoreSource {
    /// The LLM judge grades the run's outputs against the criterion's anchors.
    Judge,
    /// A measured run metric.
    Metric(RunMetric),
    /// An expression over `inputs`, `steps` and `outputs` of the finished run.
    Expression(crate::expr::Expression),
}

impl ScoreSource {
    /// Parses `score_from`; the error says what is accepted.
    pub fn parse(text: &str) -> Result<ScoreSource, String> {
        let trimmed = text.trim();
        if trimmed == "judge" {
            return Ok(ScoreSource::Judge);
        }
        if let Some(name) = trimmed.strip_prefix("metric.") {
            return RunMetric::from_name(name).map(ScoreSource::Metric).ok_or_else(|| {
                let known: Vec<&str> = RunMetric::ALL.iter().map(|(_, name)| *name).collect();
                match crate::diagnostic::did_you_mean(name, known.iter().copied()) {
                    Some(suggestion) => format!("unknown run metric `{name}`; did you mean `metric.{suggestion}`?"),
                    None => format!("unknown run metric `{name}`; known: metric.{}", known.join(", metric.")),
                }
            });
        }
        let template = crate::expr::Template::parse(trimmed).map_err(|error| format!("bad expression: {error}"))?;
        match template.parts.as_slice() {
            [crate::expr::Part::Expr(expression)] => Ok(ScoreSource::Expression(expression.clone())),
            _ => Err(format!("`{trimmed}` is neither `judge`, `metric.<name>` nor one `${{...}}` expression")),
        }
    }

    /// The default source of a criterion without `score_from`: the judge for `likert_*`
    /// formulas, none otherwise (the criterion must say where its score comes from).
    pub fn default_for(formula_id: &str) -> Option<ScoreSource> {
        formula_id.starts_with("likert").then_some(ScoreSource::Judge)
    }
}

/// A critical floor: normalized (a number in 0..1) or raw (`{raw: 3}`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FloorSpec {
    /// On the normalized 0..1 scale.
    Normalized(f64),
    /// On the criterion's raw scale, converted with its formula.
    Raw {
        /// The raw floor value.
        raw: f64,
    },
}
