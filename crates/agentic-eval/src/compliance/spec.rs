//! The checkpoint spec (`checkpoints/<workflow>.yaml`): types, loading and pre-flight lint.
//!
//! [`load_spec`] parses the YAML through `agentic_core::DocumentLoader` (so structural errors
//! carry line and column and a "did you mean"), then checks meaning: duplicate ids, orphaned
//! `affects`, a tier whose method cannot check it, missing or misrouted evidence sources,
//! malformed or self-contradictory assertions and rules. A spec without errors compiles into
//! a [`CompiledSpec`], whose checkpoints carry their `position_index` (document order, 1..N).
//! [`lint_against_previous`] enforces that ids are immutable and append-only.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use agentic_core::Diagnostic;
use agentic_core::diagnostic::{did_you_mean, sort_diagnostics};
use agentic_core::document::DocumentLoader;
use agentic_core::yaml::{SourceMap, Surprise};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::condition::{CompiledCondition, Condition, compile_condition};
use super::sequence::{
    CompiledMatcher, CompiledRule, EventMatcher, Patterns, Relation, SequenceRule, TextMatch, compile_rule,
    glob_matches, is_glob,
};

/// The evidence source name that stands for the trace file.
pub const TRACE_SOURCE: &str = "trace_file";

/// A checkpoint spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Checkpoint spec", description = "A workflow's verifiable instructions; see docs/checkpoints.md")]
// Top-level `x-` keys are extension fields (ignored; a home for YAML anchors).
#[schemars(extend("patternProperties" = {"^x-": {}}))]
pub struct CheckpointSpec {
    /// The workflow this spec measures, for example `feature-implementation`.
    pub workflow: String,
    /// The spec's own version, for example `1.0.0`.
    pub spec_version: String,
    /// Known limits of the environment that can make checkpoints impossible.
    #[serde(default)]
    pub environment_constraints: Vec<EnvironmentConstraint>,
    /// The checkpoints, in workflow order (their order is their `position_index`).
    pub checkpoints: Vec<Checkpoint>,
}

/// An environment constraint: when active, failures of the checkpoints it affects are BLOCKED.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentConstraint {
    /// A stable id, for example `ENV-01`.
    pub id: String,
    /// What the constraint is, in words.
    pub constraint: String,
    /// The checkpoint ids it can block.
    pub affects: Vec<String>,
    /// When the constraint is active: a condition over the evidence. Without it the
    /// constraint is documentation only and never active (lint warns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_when: Option<Condition>,
}

/// How bad it is to miss a checkpoint (reported, not weighted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointSeverity {
    /// Must never be missed.
    Critical,
    /// Important.
    High,
    /// Normal.
    Medium,
    /// Nice to have.
    Low,
}

impl CheckpointSeverity {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointSeverity::Critical => "critical",
            CheckpointSeverity::High => "high",
            CheckpointSeverity::Medium => "medium",
            CheckpointSeverity::Low => "low",
        }
    }
}

/// The verification method; it decides which tier can use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Tier 1: state of an external API (issue tracker, PR, CI).
    ApiState,
    /// Tier 1: state of the git repository.
    GitState,
    /// Tier 1: state of files.
    FileState,
    /// Tier 1: any other evidence JSON.
    EvidenceState,
    /// Tier 2: ordering of tool calls.
    ToolSequence,
    /// Tier 2: ordering of any trace events.
    TraceSequence,
    /// Tier 3: qualitative judgement of content.
    ContentAnalysis,
    /// Tier 3: any other semantic judgement.
    SemanticJudgment,
}

impl Method {
    /// The tier that can check this method.
    pub fn tier(self) -> Tier {
        match self {
            Method::ApiState | Method::GitState | Method::FileState | Method::EvidenceState => Tier::State,
            Method::ToolSequence | Method::TraceSequence => Tier::Sequence,
            Method::ContentAnalysis | Method::SemanticJudgment => Tier::Semantic,
        }
    }
}

/// The three evaluation tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// 1: state assertions on evidence JSON.
    State,
    /// 2: sequence assertions on the trace.
    Sequence,
    /// 3: semantic judgement.
    Semantic,
}

impl Tier {
    /// 1, 2 or 3.
    pub fn number(self) -> u8 {
        match self {
            Tier::State => 1,
            Tier::Sequence => 2,
            Tier::Semantic => 3,
        }
    }

    fn from_number(number: u8) -> Option<Tier> {
        match number {
            1 => Some(Tier::State),
            2 => Some(Tier::Sequence),
            3 => Some(Tier::Semantic),
            _ => None,
        }
    }
}

/// One verifiable instruction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// A stable, immutable id, for example `P1-01`.
    pub id: String,
    /// 1 (state), 2 (sequence) or 3 (semantic).
    #[schemars(range(min = 1, max = 3))]
    pub tier: u8,
    /// The instruction the agent was given.
    pub instruction: String,
    /// How bad it is to miss it.
    pub severity: CheckpointSeverity,
    /// How it is checked.
    pub verification: Verification,
    /// Tier 3 only: graded partial credit (Mode A). Without it a PARTIAL earns 0.5 (Mode B);
    /// an empty list is refused (it would be neither: leave the key out for Mode B).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub partial_criteria: Vec<PartialCriterion>,
    /// When the checkpoint applies at all; if this does not hold it is NOT_APPLICABLE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applies_when: Option<Condition>,
}

/// How a checkpoint is verified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Verification {
    /// The method; it must suit the tier.
    pub method: Method,
    /// The evidence the check reads: top-level keys of the evidence JSON, or `trace_file`.
    pub evidence_sources: Vec<String>,
    /// What is checked, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// Tier 1: the assertion over the evidence.
    #[serde(default, rename = "assert", skip_serializing_if = "Option::is_none")]
    pub assertion: Option<Condition>,
    /// Tier 2: the sequence rule over the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<SequenceRule>,
}

/// One graded outcome of a tier-3 checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PartialCriterion {
    /// The situation, in words.
    pub condition: String,
    /// The weight earned, strictly between 0 and 1.
    #[schemars(extend("exclusiveMinimum" = 0, "exclusiveMaximum" = 1))]
    pub weight: f64,
}

/// How a compiled checkpoint is checked.
#[derive(Debug, Clone)]
pub enum CompiledCheck {
    /// Tier 1.
    State(CompiledCondition),
    /// Tier 2: the index of the rule in [`CompiledSpec::rules`].
    Sequence(usize),
    /// Tier 3.
    Semantic,
}

/// A checkpoint ready to evaluate.
#[derive(Debug, Clone)]
pub struct CompiledCheckpoint {
    /// As written.
    pub checkpoint: Checkpoint,
    /// The tier.
    pub tier: Tier,
    /// 1-based document order.
    pub position_index: usize,
    /// How it is checked.
    pub check: CompiledCheck,
    /// The compiled `applies_when`.
    pub applies_when: Option<CompiledCondition>,
}

/// A constraint ready to evaluate.
#[derive(Debug, Clone)]
pub struct CompiledConstraint {
    /// As written.
    pub constraint: EnvironmentConstraint,
    /// The compiled `active_when`.
    pub active_when: Option<CompiledCondition>,
}

/// A spec without errors, ready to evaluate.
#[derive(Debug, Clone)]
pub struct CompiledSpec {
    /// As written.
    pub spec: CheckpointSpec,
    /// Checkpoints in document order.
    pub checkpoints: Vec<CompiledCheckpoint>,
    /// Constraints in document order.
    pub constraints: Vec<CompiledConstraint>,
    /// Tier-2 rules, referenced by [`CompiledCheck::Sequence`].
    pub rules: Vec<CompiledRule>,
}

/// The outcome of loading a spec.
#[derive(Debug)]
pub struct SpecLoad {
    /// The spec, when it has no errors (warnings may remain).
    pub spec: Option<CompiledSpec>,
    /// Every problem, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
}

fn loader() -> &'static DocumentLoader {
    static LOADER: OnceLock<DocumentLoader> = OnceLock::new();
    LOADER.get_or_init(|| DocumentLoader::new::<CheckpointSpec>("checkpoint spec"))
}

/// Reads a checkpoint spec as written (`x-` keys dropped, whole numbers with a fraction read
/// as integers: as [`load_spec`] reads it) with its source map, for comparing versions; the
/// structural problems when it does not read (semantic ones are [`load_spec`]'s).
pub fn parse_spec(text: &str) -> Result<(CheckpointSpec, SourceMap), Vec<Diagnostic>> {
    let loaded = loader().load::<CheckpointSpec>(text);
    match (loaded.value, loaded.document) {
        (Some(spec), Some(document)) => Ok((spec, document.source_map)),
        _ => Err(loaded.diagnostics),
    }
}

/// [`parse_spec`] for the spec being linted against its previous version: when the spec has
/// schema errors, the spec with those values set aside, provided that every checkpoint's
/// id, tier and instruction (what versions are compared by) and the workflow are still as
/// written; `None` otherwise. So an unrelated error (`severity: urgent`) does not hide that
/// an id was removed or reused.
pub fn parse_spec_for_comparison(text: &str) -> Option<(CheckpointSpec, SourceMap)> {
    let loaded = loader().load::<CheckpointSpec>(text);
    let document = loaded.document?;
    let spec = loaded.value.or(loaded.repaired)?;
    let raw = document.value.get("checkpoints")?.as_array()?;
    let as_written = raw.len() == spec.checkpoints.len()
        && document.value.get("workflow").and_then(serde_json::Value::as_str) == Some(spec.workflow.as_str())
        && raw.iter().zip(&spec.checkpoints).all(|(raw, checkpoint)| {
            raw.get("id").and_then(serde_json::Value::as_str) == Some(checkpoint.id.as_str())
                && raw.get("instruction").and_then(serde_json::Value::as_str) == Some(checkpoint.instruction.as_str())
                && raw.get("tier").and_then(serde_json::Value::as_f64) == Some(f64::from(checkpoint.tier))
        });
    as_written.then_some((spec, document.source_map))
}

/// Parses, checks and compiles a checkpoint spec. `file` only labels diagnostics.
pub fn load_spec(text: &str, file: &str) -> SpecLoad {
    let loaded = loader().load::<CheckpointSpec>(text);
    let mut diagnostics = loaded.diagnostics;
    for diagnostic in &mut diagnostics {
        // `args: {regex: ...}` (a text matcher where argument names belong) most likely meant
        // the whole arguments as text.
        if let Some(form) = diagnostic.pointer.as_deref().and_then(|at| {
            let (before, form) = at.rsplit_once('/')?;
            (before.ends_with("/args") && matches!(form, "regex" | "glob" | "contains" | "equals")).then_some(form)
        }) && diagnostic.message.contains("must be a mapping")
        {
            diagnostic.hint = Some(format!(
                "`args` maps argument names to matchers (`args: {{command: {{{form}: ...}}}}`); to match the whole \
                 arguments as text, write `args_text: {{{form}: ...}}`"
            ));
        }
        // An empty `partial_criteria` most likely meant "no criteria": that is Mode B, written
        // by leaving the key out.
        if diagnostic.code == "invalid-value"
            && diagnostic.pointer.as_deref().is_some_and(|at| at.ends_with("/partial_criteria"))
            && diagnostic.message.ends_with("[] has less than 1 item")
        {
            diagnostic.hint = Some(
                "leave `partial_criteria` out (for a tier-3 checkpoint that is Mode B: a PARTIAL earns 0.5 and needs \
                 notes), or list conditions with their weights (Mode A)"
                    .to_owned(),
            );
        }
    }
    let mut spec = None;
    let source_map = loaded.document.as_ref().map(|d| d.source_map.clone()).unwrap_or_default();
    if let Some(value) = loaded.value {
        let (compiled, more) = check_spec(value);
        diagnostics.extend(more);
        if !diagnostics.iter().any(Diagnostic::is_error) {
            spec = compiled;
        }
    } else if let Some(repaired) = loaded.repaired {
        let ids: Vec<String> = repaired.checkpoints.iter().map(|checkpoint| checkpoint.id.clone()).collect();
        let (_, more) = check_spec(repaired);
        // The repair dropped or stood in for what the schema rejected, so a finding about a
        // place holding such an error, or inside a stand-in, only restates it (`{equals: 3}`
        // is not also "a matcher without forms", a missing `evidence_sources` not also an
        // empty one). A checkpoint whose tier stood in has no tier to check against: the
        // findings that depend on it (`tier: "three"` is not also "a tier-1 checkpoint without
        // `assert:`") are left out too.
        let rejected: Vec<&str> = diagnostics.iter().filter_map(|d| d.pointer.as_deref()).collect();
        let within = |inner: &str, outer: &str| {
            inner.strip_prefix(outer).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        // Findings that depend on a field of the object they are about: when that field stood
        // in, they are about the stand-in. (code, field)
        const DEPENDS_ON: &[(&str, &str)] = &[
            ("invalid-tier", "tier"),
            ("tier-method-mismatch", "tier"),
            ("trace-source-missing", "tier"),
            ("assertion-missing", "tier"),
            ("rule-missing", "tier"),
            ("partial-criteria-unused", "tier"),
            // Sources that stood in (none) leave every path undeclared.
            ("evidence-source-undeclared", "evidence_sources"),
            // Checkpoints that stood in (none) leave every `affects` orphaned.
            ("orphaned-id", "checkpoints"),
        ];
        let restates = |d: &Diagnostic| {
            d.pointer.as_deref().is_some_and(|at| {
                !at.is_empty()
                    && rejected.iter().any(|r| {
                        within(r, at)
                            || within(at, r)
                            || DEPENDS_ON.iter().any(|(code, field)| {
                                d.code == *code
                                    && r.rsplit_once('/')
                                        .is_some_and(|(object, last)| last == *field && within(at, object))
                            })
                    })
            })
        };
        // The repair may have set aside every checkpoint; a list written empty is empty.
        let written_empty = loaded
            .document
            .as_ref()
            .and_then(|document| document.value.get("checkpoints"))
            .and_then(serde_json::Value::as_array)
            .is_some_and(Vec::is_empty);
        // A checkpoint whose rule holds a stand-in (`args: {regex: "..."}` set aside leaves a
        // matcher of every call of its tool) would be said to contradict others: findings
        // that name such a checkpoint are about the stand-in.
        let stood_in: Vec<&str> = rejected
            .iter()
            .filter_map(|at| {
                let rest = at.strip_prefix("/checkpoints/")?;
                let (index, rest) = rest.split_once('/')?;
                rest.starts_with("verification/rule/").then(|| ids.get(index.parse::<usize>().ok()?))?
            })
            .map(String::as_str)
            .collect();
        let about_stand_in = |d: &Diagnostic| {
            d.code == "checkpoint-contradiction"
                && stood_in.iter().any(|id| d.message.contains(&format!("checkpoint `{id}`")))
        };
        let more: Vec<Diagnostic> = more
            .into_iter()
            .filter(|d| (d.code != "spec-empty" || written_empty) && !restates(d) && !about_stand_in(d))
            .collect();
        diagnostics.extend(more);
    }
    if let Some(document) = &loaded.document {
        warn_of_surprising_operands(&document.value, &source_map, &mut diagnostics);
    }
    place(&mut diagnostics, &source_map, file);
    SpecLoad { spec, diagnostics }
}

/// A value compared with data (`equals`, `not_equals`, an item of `one_of`) written as a
/// plain scalar that reads otherwise than its writer likely meant: `equals: no` is the text
/// "no" (a YAML 1.1 habit for false), and `equals: 1.10` the number 1.1 (a version's text
/// loses its zero). Either makes a check fail against the evidence with nothing wrong in
/// sight, so lint says which reading was taken.
fn warn_of_surprising_operands(
    document: &serde_json::Value,
    source_map: &SourceMap,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for scalar in source_map.surprising() {
        let mut segments = scalar.pointer.rsplit('/');
        let (last, parent) = (segments.next().unwrap_or_default(), segments.next().unwrap_or_default());
        let operand = matches!(last, "equals" | "not_equals") && parent != "length"
            || parent == "one_of" && last.bytes().all(|b| b.is_ascii_digit());
        if !operand {
            continue;
        }
        let text = &scalar.text;
        let diagnostic = match scalar.kind {
            Surprise::Yaml11Boolean(meant) => Diagnostic::warning(
                "yaml-1.1-boolean",
                format!(
                    "`{text}` is the text \"{text}\" here, not a boolean: YAML 1.2 reads only true and false as \
                     booleans (YAML 1.1 tools such as PyYAML read `{text}` as {meant})"
                ),
            )
            .with_hint(format!(
                "write `{meant}` to compare with a boolean, or quote it (\"{text}\") to keep the text and silence this \
                 warning"
            )),
            Surprise::NumberDropsDigits => {
                let number = document.pointer(&scalar.pointer).map(ToString::to_string).unwrap_or_default();
                Diagnostic::warning(
                    "number-drops-digits",
                    format!(
                        "`{text}` is the number {number} here, not the text \"{text}\" (a version or a file mode \
                         written as text does not equal it)"
                    ),
                )
                .with_hint(format!(
                    "quote it (\"{text}\") to compare with text, or write {number} to mean the number and silence \
                     this warning"
                ))
            }
        };
        diagnostics.push(diagnostic.at(scalar.position).at_pointer(scalar.pointer.clone()));
    }
}

fn place(diagnostics: &mut [Diagnostic], source_map: &SourceMap, file: &str) {
    for diagnostic in diagnostics.iter_mut() {
        if diagnostic.position.is_none()
            && let Some(pointer) = &diagnostic.pointer
        {
            // A finding about a mapping key (an argument path) is placed at the key.
            diagnostic.position = Some(match diagnostic.code.as_str() {
                "invalid-argument-path" => source_map.key(pointer).unwrap_or_else(|| source_map.nearest(pointer)),
                _ => source_map.nearest(pointer),
            });
        }
        diagnostic.file = Some(file.to_owned());
    }
    sort_diagnostics(diagnostics);
}

/// Ids seen so far, to find one that differs from a new id only in case or surrounding
/// spaces (a lookalike) in constant time: a spec of thousands of checkpoints is linted in
/// linear time.
#[derive(Default)]
struct Lookalikes<'a> {
    exact: HashSet<&'a str>,
    /// Each id trimmed and lowercased, and the first id that reads so.
    reads: HashMap<String, &'a str>,
}

impl<'a> Lookalikes<'a> {
    fn add(&mut self, id: &'a str) {
        self.exact.insert(id);
        self.reads.entry(id.trim().to_lowercase()).or_insert(id);
    }

    /// The first id seen that reads as `id` but is not it; none when `id` itself was seen
    /// (a duplicate, reported as such) or is blank.
    fn of(&self, id: &str) -> Option<&'a str> {
        let reads = id.trim().to_lowercase();
        if reads.is_empty() || self.exact.contains(id) {
            return None;
        }
        self.reads.get(&reads).copied()
    }
}

/// The next `ENV-NN` id that no constraint or checkpoint of `spec` uses.
/// The free `ENV-NN` ids of `spec`, in order from the next after the highest in use: each
/// hint takes the next, so two hints never suggest the same id.
fn free_constraint_ids(spec: &CheckpointSpec) -> impl Iterator<Item = String> + use<> {
    let used = spec
        .environment_constraints
        .iter()
        .map(|c| c.id.as_str())
        .chain(spec.checkpoints.iter().map(|c| c.id.as_str()));
    let highest = used.filter_map(|id| id.strip_prefix("ENV-")?.parse::<u32>().ok()).max().unwrap_or(0);
    (highest.saturating_add(1)..).map(|n| format!("ENV-{n:02}"))
}

/// Checks the meaning of a structurally valid spec and compiles it.
pub fn check_spec(spec: CheckpointSpec) -> (Option<CompiledSpec>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    if spec.checkpoints.is_empty() {
        diagnostics.push(
            Diagnostic::error("spec-empty", "the spec has no checkpoints")
                .at_pointer("/checkpoints")
                .with_hint("add at least one checkpoint under `checkpoints:`"),
        );
    }
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    let mut earlier = Lookalikes::default();
    for (idx, checkpoint) in spec.checkpoints.iter().enumerate() {
        let pointer = format!("/checkpoints/{idx}/id");
        // A blank id is reported as such (`id-empty`), not as a repeat of another blank one.
        let first = if checkpoint.id.trim().is_empty() {
            idx
        } else {
            *first_seen.entry(checkpoint.id.as_str()).or_insert(idx)
        };
        let alike = earlier.of(&checkpoint.id);
        earlier.add(&checkpoint.id);
        if let Some(alike) = alike {
            diagnostics.push(
                Diagnostic::warning(
                    "id-lookalike",
                    format!("checkpoint id `{}` differs from `{alike}` only in case or spaces", checkpoint.id),
                )
                .at_pointer(pointer.clone())
                .with_hint(
                    "reports and baselines tell the two apart but readers will not; give this checkpoint the next \
                     free id",
                ),
            );
        }
        if let Some(previous) = (first != idx).then_some(first) {
            diagnostics.push(
                Diagnostic::error("duplicate-id", format!("checkpoint id `{}` is used twice", checkpoint.id))
                    .at_pointer(pointer)
                    .with_hint(format!(
                        "ids are unique and immutable; give the new checkpoint the next free id (first used by \
                         checkpoint {} of {})",
                        previous + 1,
                        spec.checkpoints.len()
                    )),
            );
        }
        if checkpoint.id.trim().is_empty() {
            diagnostics.push(
                Diagnostic::error("id-empty", "a checkpoint id is empty or blank")
                    .at_pointer(format!("/checkpoints/{idx}/id"))
                    .with_hint("give the checkpoint an id such as `P1-01` (reports, baselines and `affects` name it)"),
            );
        } else if !id_looks_stable(&checkpoint.id) {
            diagnostics.push(
                Diagnostic::warning(
                    "id-format",
                    format!("checkpoint id `{}` does not look like `P1-01`", checkpoint.id),
                )
                .at_pointer(format!("/checkpoints/{idx}/id"))
                .with_hint("use a prefix, a dash and a number, so new ids can take the next number"),
            );
        }
    }
    for (idx, checkpoint) in spec.checkpoints.iter().enumerate() {
        if checkpoint.instruction.trim().is_empty() {
            // A judge is asked about the instruction; for tiers 1 and 2 it is what a reader of
            // the report is told the checkpoint is about.
            let message = format!("checkpoint `{}` has an empty instruction", checkpoint.id);
            let diagnostic = if checkpoint.tier == 3 {
                Diagnostic::error("instruction-empty", message)
            } else {
                Diagnostic::warning("instruction-empty", message)
            };
            diagnostics.push(
                diagnostic
                    .at_pointer(format!("/checkpoints/{idx}/instruction"))
                    .with_hint("write the instruction the agent was given, as the workflow states it"),
            );
        }
    }
    // Reports name the workflow and `--baseline` refuses another one's report, so a blank
    // name would let any blank-named report through.
    if spec.workflow.trim().is_empty() {
        diagnostics.push(
            Diagnostic::error("workflow-empty", "`workflow` is empty or blank")
                .at_pointer("/workflow")
                .with_hint("name the workflow these checkpoints are for, as its file is named (`feature-workflow`)"),
        );
    }
    if spec.spec_version.trim().is_empty() {
        diagnostics.push(
            Diagnostic::warning("spec-version-empty", "`spec_version` is empty or blank")
                .at_pointer("/spec_version")
                .with_hint("give the spec a version such as \"1.0.0\" (reports and baseline comparisons name it)"),
        );
    }
    for (idx, constraint) in spec.environment_constraints.iter().enumerate() {
        if constraint.id.trim().is_empty() {
            diagnostics.push(
                Diagnostic::error("id-empty", "an environment constraint id is empty or blank")
                    .at_pointer(format!("/environment_constraints/{idx}/id"))
                    .with_hint("give the constraint an id such as `ENV-01` (BLOCKED notes name it)"),
            );
        }
        if constraint.constraint.trim().is_empty() {
            diagnostics.push(
                Diagnostic::warning(
                    "constraint-empty",
                    format!("environment constraint `{}` has an empty `constraint` text", constraint.id),
                )
                .at_pointer(format!("/environment_constraints/{idx}/constraint"))
                .with_hint("say what in the environment blocks the checkpoints (BLOCKED notes quote it)"),
            );
        }
    }
    let checkpoint_ids: Vec<&str> = spec.checkpoints.iter().map(|c| c.id.as_str()).collect();
    let mut free_ids = free_constraint_ids(&spec);
    let mut constraint_ids: HashSet<&str> = HashSet::new();
    let mut constraints = Vec::new();
    // A constraint's id is compared with the constraints before it, then the checkpoints'.
    let mut earlier_constraints = Lookalikes::default();
    for (idx, constraint) in spec.environment_constraints.iter().enumerate() {
        let pointer = format!("/environment_constraints/{idx}");
        let alike = if earlier_constraints.exact.contains(constraint.id.as_str())
            || earlier.exact.contains(constraint.id.as_str())
        {
            None
        } else {
            earlier_constraints.of(&constraint.id).or_else(|| earlier.of(&constraint.id))
        };
        earlier_constraints.add(&constraint.id);
        if let Some(other) = alike {
            diagnostics.push(
                Diagnostic::warning(
                    "id-lookalike",
                    format!("constraint id `{}` differs from `{other}` only in case or spaces", constraint.id),
                )
                .at_pointer(format!("{pointer}/id"))
                .with_hint(format!(
                    "reports and BLOCKED notes tell the two apart but readers will not; for example `{}`",
                    free_ids.next().unwrap_or_default()
                )),
            );
        }
        if !constraint_ids.insert(constraint.id.as_str()) {
            diagnostics.push(
                Diagnostic::error("duplicate-id", format!("constraint id `{}` is used twice", constraint.id))
                    .at_pointer(format!("{pointer}/id"))
                    .with_hint("give each constraint its own id"),
            );
        }
        if checkpoint_ids.contains(&constraint.id.as_str()) {
            diagnostics.push(
                Diagnostic::error("duplicate-id", format!("constraint id `{}` is also a checkpoint id", constraint.id))
                    .at_pointer(format!("{pointer}/id"))
                    .with_hint(format!(
                        "checkpoint ids are immutable: give the constraint a free id of its own prefix, for example \
                         `{}`",
                        free_ids.next().unwrap_or_default()
                    )),
            );
        }
        if constraint.affects.is_empty() {
            diagnostics.push(
                Diagnostic::warning(
                    "constraint-affects-nothing",
                    format!("constraint `{}` affects no checkpoint", constraint.id),
                )
                .at_pointer(format!("{pointer}/affects"))
                .with_hint("list the checkpoint ids it can block, or remove it"),
            );
        }
        let mut seen_affects = HashSet::new();
        for (affect_idx, affected) in constraint.affects.iter().enumerate() {
            if !seen_affects.insert(affected.as_str()) {
                diagnostics.push(
                    Diagnostic::warning("duplicate-affects", format!("`{affected}` is listed twice in `affects`"))
                        .at_pointer(format!("{pointer}/affects/{affect_idx}"))
                        .with_hint("remove the second entry (a checkpoint is blocked once)"),
                );
            }
            if !checkpoint_ids.contains(&affected.as_str()) {
                let mut diagnostic = Diagnostic::error(
                    "orphaned-id",
                    format!("constraint `{}` affects `{affected}`, which is not a checkpoint", constraint.id),
                )
                .at_pointer(format!("{pointer}/affects/{affect_idx}"));
                // Ids that differ in a number name other checkpoints: `P1-01` for `P2-01` or
                // `P3-01` for `P3-02` would move the constraint to another instruction, so they
                // are not suggested (`p2-01` for `P2-01` is).
                let numbers = |id: &str| -> Vec<u64> {
                    id.split(|c: char| !c.is_ascii_digit()).filter_map(|run| run.parse().ok()).collect()
                };
                let other_number = |suggestion: &str| numbers(affected) != numbers(suggestion);
                let is_constraint =
                    spec.environment_constraints.iter().any(|other| other.id.eq_ignore_ascii_case(affected.trim()));
                diagnostic = match did_you_mean(affected, checkpoint_ids.iter().copied()) {
                    _ if is_constraint => diagnostic.with_hint(format!(
                        "`{affected}` is an environment constraint; `affects` lists the checkpoints it can block"
                    )),
                    _ if affected.trim().is_empty() => diagnostic.with_hint("remove the empty id from `affects`"),
                    Some(suggestion) if !other_number(suggestion) => {
                        diagnostic.with_hint(format!("did you mean `{suggestion}`?"))
                    }
                    _ => diagnostic.with_hint(format!(
                        "list ids from `checkpoints:` only: add the checkpoint `{affected}`, or take it out of `affects`"
                    )),
                };
                diagnostics.push(diagnostic);
            }
        }
        let active_when = match &constraint.active_when {
            Some(condition) => compile_condition(condition, &format!("{pointer}/active_when"), &mut diagnostics),
            None => {
                diagnostics.push(
                    Diagnostic::warning(
                        "constraint-never-active",
                        format!("constraint `{}` has no `active_when`, so it never blocks anything", constraint.id),
                    )
                    .at_pointer(pointer.clone())
                    .with_hint("add `active_when:` with a condition over the evidence, for example `{path: pr.draft, equals: true}`"),
                );
                None
            }
        };
        if let Some(condition) = &active_when {
            for path in condition.paths() {
                if path.source() == TRACE_SOURCE {
                    diagnostics.push(
                        Diagnostic::error(
                            "trace-in-condition",
                            "a condition cannot read `trace_file`; it reads the evidence JSON",
                        )
                        .at_pointer(format!("{pointer}/active_when")),
                    );
                }
            }
        }
        constraints.push(CompiledConstraint { constraint: constraint.clone(), active_when });
    }
    let mut rules = Vec::new();
    let mut checkpoints = Vec::new();
    for (idx, checkpoint) in spec.checkpoints.iter().enumerate() {
        if let Some(compiled) = check_checkpoint(checkpoint, idx, &mut rules, &mut diagnostics) {
            checkpoints.push(compiled);
        }
    }
    detect_rule_conflicts(&spec, &checkpoints, &rules, &mut diagnostics);
    let ok = !diagnostics.iter().any(Diagnostic::is_error) && checkpoints.len() == spec.checkpoints.len();
    let compiled = ok.then(|| CompiledSpec { spec, checkpoints, constraints, rules });
    (compiled, diagnostics)
}

fn id_looks_stable(id: &str) -> bool {
    match id.rsplit_once('-') {
        Some((prefix, number)) => {
            !prefix.is_empty()
                && prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                && !number.is_empty()
                && number.chars().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

fn check_checkpoint(
    checkpoint: &Checkpoint,
    idx: usize,
    rules: &mut Vec<CompiledRule>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<CompiledCheckpoint> {
    let pointer = format!("/checkpoints/{idx}");
    let id = &checkpoint.id;
    let Some(tier) = Tier::from_number(checkpoint.tier) else {
        diagnostics.push(
            Diagnostic::error(
                "invalid-tier",
                format!("checkpoint `{id}` has tier {}; tiers are 1, 2 and 3", checkpoint.tier),
            )
            .at_pointer(format!("{pointer}/tier"))
            .with_hint("1: state assertion on evidence, 2: sequence rule on the trace, 3: semantic judgement"),
        );
        return None;
    };
    let verification = &checkpoint.verification;
    let method_tier = verification.method.tier();
    if method_tier != tier {
        diagnostics.push(
            Diagnostic::error(
                "tier-method-mismatch",
                format!(
                    "checkpoint `{id}` is tier {} but method `{}` can only be checked by tier {}",
                    tier.number(),
                    method_name(verification.method),
                    method_tier.number()
                ),
            )
            .at_pointer(format!("{pointer}/verification/method"))
            .with_hint(match tier {
                Tier::State => "tier 1 methods: api_state, git_state, file_state, evidence_state",
                Tier::Sequence => "tier 2 methods: tool_sequence, trace_sequence",
                Tier::Semantic => "tier 3 methods: content_analysis, semantic_judgment",
            }),
        );
    }
    let sources = &verification.evidence_sources;
    if sources.is_empty() {
        diagnostics.push(
            Diagnostic::error("evidence-sources-missing", format!("checkpoint `{id}` declares no `evidence_sources`"))
                .at_pointer(format!("{pointer}/verification/evidence_sources"))
                .with_hint("name the evidence it reads: top-level keys of the evidence JSON, or `trace_file`"),
        );
    }
    let mut seen = HashSet::new();
    for (source_idx, source) in sources.iter().enumerate() {
        let (message, hint) = if source.trim().is_empty() {
            ("an evidence source is empty".to_owned(), "name a top-level key of the evidence JSON, or `trace_file`")
        } else if !seen.insert(source.as_str()) {
            (format!("evidence source `{source}` is listed twice"), "list each source once")
        } else {
            continue;
        };
        diagnostics.push(
            Diagnostic::error("invalid-evidence-source", message)
                .at_pointer(format!("{pointer}/verification/evidence_sources/{source_idx}"))
                .with_hint(hint),
        );
    }
    let reads_trace = sources.iter().any(|s| s == TRACE_SOURCE);
    match tier {
        Tier::State if reads_trace => diagnostics.push(
            Diagnostic::error(
                "tier-method-mismatch",
                format!("tier-1 checkpoint `{id}` lists `trace_file`, which only tier 2 and 3 read"),
            )
            .at_pointer(format!("{pointer}/verification/evidence_sources"))
            .with_hint("make it tier 2 with a `rule:`, or read an evidence JSON source"),
        ),
        Tier::Sequence if !reads_trace => diagnostics.push(
            Diagnostic::error(
                "trace-source-missing",
                format!("tier-2 checkpoint `{id}` must list `trace_file` in `evidence_sources`"),
            )
            .at_pointer(format!("{pointer}/verification/evidence_sources"))
            .with_hint("add `trace_file`: sequence rules read the trace"),
        ),
        _ => {}
    }
    let verification_pointer = format!("{pointer}/verification");
    let check = match tier {
        Tier::State => {
            if verification.rule.is_some() {
                diagnostics.push(misplaced("rule", id, 1, &verification_pointer));
            }
            match &verification.assertion {
                None => {
                    diagnostics.push(
                        Diagnostic::error("assertion-missing", format!("tier-1 checkpoint `{id}` has no `assert:`"))
                            .at_pointer(verification_pointer.clone())
                            .with_hint(
                                "add `assert: {path: source.key, equals: value}` so it can be checked without an LLM",
                            ),
                    );
                    None
                }
                Some(condition) => {
                    let compiled = compile_condition(condition, &format!("{verification_pointer}/assert"), diagnostics);
                    if let Some(compiled) = &compiled {
                        check_paths_routed(
                            compiled,
                            sources,
                            id,
                            &format!("{verification_pointer}/assert"),
                            diagnostics,
                        );
                    }
                    compiled.map(CompiledCheck::State)
                }
            }
        }
        Tier::Sequence => {
            if verification.assertion.is_some() {
                diagnostics.push(misplaced("assert", id, 2, &verification_pointer));
            }
            match &verification.rule {
                None => {
                    diagnostics.push(
                        Diagnostic::error("rule-missing", format!("tier-2 checkpoint `{id}` has no `rule:`"))
                            .at_pointer(verification_pointer.clone())
                            .with_hint("add for example `rule: {before: {a: {tool: Read}, b: {tool: Bash}}}`"),
                    );
                    None
                }
                Some(rule) => compile_rule(rule, &format!("{verification_pointer}/rule"), diagnostics).map(|rule| {
                    warn_matchers_matching_everything(&rule, &format!("{verification_pointer}/rule"), diagnostics);
                    lint_pair_coverage(&rule, &format!("{verification_pointer}/rule"), diagnostics);
                    rules.push(rule);
                    CompiledCheck::Sequence(rules.len() - 1)
                }),
            }
        }
        Tier::Semantic => {
            if verification.assertion.is_some() {
                diagnostics.push(misplaced("assert", id, 3, &verification_pointer));
            }
            if verification.rule.is_some() {
                diagnostics.push(misplaced("rule", id, 3, &verification_pointer));
            }
            Some(CompiledCheck::Semantic)
        }
    };
    if !checkpoint.partial_criteria.is_empty() && tier != Tier::Semantic {
        diagnostics.push(
            Diagnostic::error(
                "partial-criteria-unused",
                format!("checkpoint `{id}` is tier {}; only tier 3 scores partial credit", tier.number()),
            )
            .at_pointer(format!("{pointer}/partial_criteria"))
            .with_hint("tiers 1 and 2 are PASS or FAIL; remove `partial_criteria` or split the checkpoint"),
        );
    }
    let mut conditions = HashSet::new();
    for (criterion_idx, criterion) in checkpoint.partial_criteria.iter().enumerate() {
        let criterion_pointer = format!("{pointer}/partial_criteria/{criterion_idx}");
        if !(criterion.weight > 0.0 && criterion.weight < 1.0) {
            diagnostics.push(
                Diagnostic::error(
                    "invalid-weight",
                    format!("partial weight {} of `{id}` is not strictly between 0 and 1", criterion.weight),
                )
                .at_pointer(format!("{criterion_pointer}/weight"))
                .with_hint("a full pass earns 1 and a fail 0; partial credit lies between"),
            );
        }
        // The judge is shown the condition, and a verdict names its criterion by it.
        if criterion.condition.trim().is_empty() {
            diagnostics.push(
                Diagnostic::error("criterion-blank", format!("a partial criterion of `{id}` has a blank `condition`"))
                    .at_pointer(format!("{criterion_pointer}/condition"))
                    .with_hint("say in words when the checkpoint is partly met, as in \"WHAT and WHY, no HOW\""),
            );
        } else if !conditions.insert(criterion.condition.trim().to_owned()) {
            // As a verdict's `matched_condition` names a criterion: whitespace around the text
            // does not count, case does.
            diagnostics.push(
                Diagnostic::error(
                    "duplicate-criterion",
                    format!("partial criterion \"{}\" of `{id}` is listed twice", criterion.condition),
                )
                .at_pointer(format!("{criterion_pointer}/condition"))
                .with_hint(
                    "a verdict names its criterion by this text, so each must differ; merge the two or reword one",
                ),
            );
        }
    }
    let applies_when = checkpoint
        .applies_when
        .as_ref()
        .and_then(|condition| compile_condition(condition, &format!("{pointer}/applies_when"), diagnostics));
    if let Some(condition) = &applies_when {
        for path in condition.paths() {
            if path.source() == TRACE_SOURCE {
                diagnostics.push(
                    Diagnostic::error(
                        "trace-in-condition",
                        "a condition cannot read `trace_file`; it reads the evidence JSON",
                    )
                    .at_pointer(format!("{pointer}/applies_when")),
                );
            }
        }
    }
    let check = check?;
    Some(CompiledCheckpoint { checkpoint: checkpoint.clone(), tier, position_index: idx + 1, check, applies_when })
}

fn misplaced(key: &str, id: &str, tier: u8, pointer: &str) -> Diagnostic {
    let (owner, hint) = if key == "rule" {
        ("tier 2", "a `rule:` is a tier-2 sequence check; move it to a tier-2 checkpoint")
    } else {
        ("tier 1", "an `assert:` is a tier-1 state check; move it to a tier-1 checkpoint")
    };
    Diagnostic::error(
        "tier-method-mismatch",
        format!("checkpoint `{id}` is tier {tier} but has `{key}:`, which only {owner} uses"),
    )
    .at_pointer(format!("{pointer}/{key}"))
    .with_hint(hint)
}

fn method_name(method: Method) -> String {
    serde_json::to_value(method).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn check_paths_routed(
    condition: &CompiledCondition,
    sources: &[String],
    id: &str,
    pointer: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // No sources at all is said once (`evidence-sources-missing`), not again for every path.
    if sources.is_empty() {
        return;
    }
    for path in condition.paths() {
        if !sources.iter().any(|s| s == path.source()) {
            let mut diagnostic = Diagnostic::error(
                "evidence-source-undeclared",
                format!(
                    "checkpoint `{id}` reads `{}` but `{}` is not in its `evidence_sources`",
                    path.text,
                    path.source()
                ),
            )
            .at_pointer(pointer);
            diagnostic = match did_you_mean(path.source(), sources.iter().map(String::as_str)) {
                Some(suggestion) => diagnostic.with_hint(format!("did you mean `{suggestion}`?")),
                None => diagnostic.with_hint(format!("add `{}` to `evidence_sources`", path.source())),
            };
            diagnostics.push(diagnostic);
        }
    }
}

/// Flags tier-2 checkpoints that cannot all pass: an unscoped `never: X` next to a rule that
/// needs a call of Y (`before`'s `a` and `b`, `immediately_before`'s `b` and the `a` right
/// before it, `count` with `at_least > 0`) when every call Y matches is also one X matches.
///
/// Only sound cases are reported (see [`matcher_covers`]); a pair whose `applies_when`
/// differ is left alone, since one of them may be NOT_APPLICABLE whenever the other applies.
fn detect_rule_conflicts(
    spec: &CheckpointSpec,
    checkpoints: &[CompiledCheckpoint],
    rules: &[CompiledRule],
    diagnostics: &mut Vec<Diagnostic>,
) {
    // Rules that forbid every call of a matcher: `never`, and `count` with `at_most: 0` (the
    // same thing written another way), with their scope: an unscoped one forbids the calls
    // every rule needs, a scoped one those a rule of the same scope needs.
    let forbidden: Vec<(&CompiledCheckpoint, &CompiledMatcher, bool, Option<&EventMatcher>)> = checkpoints
        .iter()
        .filter_map(|checkpoint| match checkpoint.check {
            CompiledCheck::Sequence(rule_idx) => {
                let rule = &rules[rule_idx];
                let within = rule.within.as_ref().map(CompiledMatcher::source);
                match &rule.relation {
                    Relation::Never(matcher) => Some((checkpoint, matcher, false, within)),
                    Relation::Count(matcher, _, Some(0)) => Some((checkpoint, matcher, true, within)),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect();
    let mut forbidding = CoverIndex::default();
    for (at, (_, never, ..)) in forbidden.iter().enumerate() {
        forbidding.add(at, never.source());
    }
    let applies = AppliesWhen::of(checkpoints);
    detect_opposite_orders(spec, checkpoints, rules, &applies, diagnostics);
    for (idx, checkpoint) in checkpoints.iter().enumerate() {
        let CompiledCheck::Sequence(rule_idx) = checkpoint.check else { continue };
        // A scoped rule needs its calls inside the scope, and those are calls of the trace
        // too, which the unscoped `never` sees (and a `never` of the same scope).
        let scope = rules[rule_idx].within.as_ref().map(CompiledMatcher::source);
        let required: Vec<&CompiledMatcher> = match &rules[rule_idx].relation {
            Relation::Before(a, b) => vec![a, b],
            // It fails without a `b`, and the call right before the first `b` must be an `a`.
            Relation::ImmediatelyBefore(a, b) => vec![a, b],
            Relation::Count(m, Some(low), _) if *low > 0 => vec![m],
            _ => Vec::new(),
        };
        for (at, needed) in required.iter().enumerate() {
            // A matcher written twice (`a` and `b` the same, an error of its own) is said once.
            if required[..at].iter().any(|earlier| earlier.source() == needed.source()) {
                continue;
            }
            let conflict = forbidding.candidates(needed.source(), forbidden.len()).find_map(|at| {
                let (other, never, _, within) = &forbidden[at];
                (!std::ptr::eq(*other, checkpoint)
                    && within.is_none_or(|forbidding| scope.is_some_and(|needed| matcher_covers(forbidding, needed)))
                    && applies.same(other, checkpoint)
                    && matcher_covers(never.source(), needed.source()))
                .then_some(&forbidden[at])
            });
            let Some((other, never, by_count, within)) = conflict else { continue };
            let forbids = match (by_count, never.source() == needed.source()) {
                (false, true) => "forbids with `never`".to_owned(),
                (false, false) => format!("forbids with `never: {}`", never.description),
                (true, true) => "forbids with `count: {at_most: 0}`".to_owned(),
                (true, false) => format!("forbids with `count: {{of: {}, at_most: 0}}`", never.description),
            };
            let forbids = match within {
                Some(forbidding) if Some(*forbidding) == scope => format!("{forbids} in the same `within` scope"),
                Some(_) => format!("{forbids} in a `within` scope around this rule's"),
                None => forbids,
            };
            diagnostics.push(
                Diagnostic::error(
                    "checkpoint-contradiction",
                    format!(
                        "checkpoint `{}` needs {}, which checkpoint `{}` {forbids}",
                        checkpoint.checkpoint.id, needed.description, other.checkpoint.id
                    ),
                )
                .at_pointer(format!("/checkpoints/{}/verification/rule", spec_index(spec, idx, checkpoint)))
                .with_hint("both can never pass in one run; fix one of them"),
            );
        }
    }
}

/// Flags two `before` rules (unscoped, or with the same scope, and the same `applies_when`)
/// that ask for opposite orders: `before: {a: {tool: Read}, b: {tool: Write}}` next to `before: {a: {tool: Write},
/// b: {tool: Read}}`. Both need both calls, so with every call of the one's `a` a `b` of the other
/// (and the other way round), the first of each cannot come first twice.
fn detect_opposite_orders(
    spec: &CheckpointSpec,
    checkpoints: &[CompiledCheckpoint],
    rules: &[CompiledRule],
    applies: &AppliesWhen,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let befores: Vec<(usize, &CompiledCheckpoint, &CompiledMatcher, &CompiledMatcher, Option<&EventMatcher>)> =
        checkpoints
            .iter()
            .enumerate()
            .filter_map(|(idx, checkpoint)| match checkpoint.check {
                CompiledCheck::Sequence(rule_idx) => match &rules[rule_idx] {
                    CompiledRule { relation: Relation::Before(a, b), within } => {
                        Some((idx, checkpoint, a, b, within.as_ref().map(CompiledMatcher::source)))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
    // Earlier rules by their `b`, to find those whose `b` may cover this one's `a`.
    let mut earlier = CoverIndex::default();
    for (at, (idx, checkpoint, a, b, within)) in befores.iter().enumerate() {
        let opposite = earlier.candidates(a.source(), at).map(|at| &befores[at]).find(
            |(_, other, other_a, other_b, other_within)| {
                same_scope(*other_within, *within)
                    && applies.same(other, checkpoint)
                    && matcher_covers(other_b.source(), a.source())
                    && matcher_covers(b.source(), other_a.source())
            },
        );
        earlier.add(at, b.source());
        let Some((_, other, ..)) = opposite else { continue };
        diagnostics.push(
            Diagnostic::error(
                "checkpoint-contradiction",
                format!(
                    "checkpoint `{}` needs the first {} before the first {}, and checkpoint `{}` needs the opposite order",
                    checkpoint.checkpoint.id, a.description, b.description, other.checkpoint.id
                ),
            )
            .at_pointer(format!("/checkpoints/{}/verification/rule", spec_index(spec, *idx, checkpoint)))
            .with_hint("both can never pass in one run (each needs both calls); fix one of them"),
        );
    }
}

/// Whether two `within` scopes are one: both absent, or each covers the other (see
/// [`matcher_covers`]: `{tool: Task}` and `{tool: [Task]}` match the same spans).
fn same_scope(one: Option<&EventMatcher>, other: Option<&EventMatcher>) -> bool {
    match (one, other) {
        (None, None) => true,
        (Some(one), Some(other)) => matcher_covers(one, other) && matcher_covers(other, one),
        _ => false,
    }
}

/// The checkpoints' `applies_when` conditions with their evidence paths in one spelling
/// (`pr.draft` and `pr["draft"]` are one path), to tell whether two checkpoints apply under
/// the same condition (a pair whose conditions differ is no contradiction: one of them may
/// be NOT_APPLICABLE whenever the other applies).
struct AppliesWhen(Vec<Option<Condition>>);

impl AppliesWhen {
    fn of(checkpoints: &[CompiledCheckpoint]) -> AppliesWhen {
        // By position (a checkpoint that did not compile is not in the list).
        let mut conditions = vec![None; checkpoints.iter().map(|c| c.position_index).max().unwrap_or(0)];
        for checkpoint in checkpoints {
            conditions[checkpoint.position_index - 1] =
                checkpoint.checkpoint.applies_when.as_ref().map(canonical_paths);
        }
        AppliesWhen(conditions)
    }

    /// Whether two checkpoints (by their `position_index`) apply under the same condition.
    fn same(&self, one: &CompiledCheckpoint, other: &CompiledCheckpoint) -> bool {
        let of = |checkpoint: &CompiledCheckpoint| self.0.get(checkpoint.position_index.wrapping_sub(1));
        of(one) == of(other)
    }
}

/// `condition` with every path written in one spelling: the segments as parsed (a path that
/// does not parse is kept as written; it is an error of its own).
fn canonical_paths(condition: &Condition) -> Condition {
    let each = |items: &Option<Vec<Condition>>| items.as_ref().map(|items| items.iter().map(canonical_paths).collect());
    Condition {
        all: each(&condition.all),
        any: each(&condition.any),
        not: condition.not.as_deref().map(|inner| Box::new(canonical_paths(inner))),
        path: condition.path.as_ref().map(|path| {
            super::condition::EvidencePath::parse(path)
                .map_or_else(|_| path.clone(), |parsed| format!("{:?}", parsed.segments))
        }),
        ..condition.clone()
    }
}

/// Matchers in a list, indexed to find those that may cover a matcher (see
/// [`matcher_covers`]) without comparing it with every one: lint's contradiction checks
/// compare pairs of checkpoints, and a spec of thousands would otherwise take seconds.
#[derive(Default)]
struct CoverIndex<'a> {
    /// Positions of matchers by a plain name they list (and whether it is an agent's).
    by_name: HashMap<(bool, &'a str), Vec<usize>>,
    /// Positions of matchers that name nothing, list a glob, or cannot be read one way: they
    /// may cover any matcher.
    wide: Vec<usize>,
}

impl<'a> CoverIndex<'a> {
    /// Adds the matcher at `position` (positions are added in increasing order).
    fn add(&mut self, position: usize, matcher: &'a EventMatcher) {
        match matcher_names(matcher) {
            Some((agent, names)) if !names.is_empty() && !names.iter().any(|name| is_glob(name)) => {
                for name in names {
                    let positions = self.by_name.entry((agent, name)).or_default();
                    if positions.last() != Some(&position) {
                        positions.push(position);
                    }
                }
            }
            _ => self.wide.push(position),
        }
    }

    /// In increasing order, the positions below `below` whose matcher may cover `narrow`: a
    /// matcher covers only a matcher whose names it covers, so one that lists only plain
    /// names must list `narrow`'s first (a plain name is covered by itself or a glob).
    fn candidates(&self, narrow: &EventMatcher, below: usize) -> impl Iterator<Item = usize> + use<> {
        let mut found: Vec<usize> = match matcher_names(narrow) {
            Some((agent, names)) if names.first().is_some_and(|name| !is_glob(name)) => {
                let named = names.first().and_then(|name| self.by_name.get(&(agent, *name)));
                named.into_iter().flatten().chain(&self.wide).copied().filter(|&at| at < below).collect()
            }
            _ => (0..below).collect(),
        };
        found.sort_unstable();
        found.into_iter()
    }
}

/// Whether every call `narrow` matches is certainly matched by `wide` too. Sound, not
/// complete: `false` may mean "cannot tell".
///
/// Both match the same kind of call; every name pattern of `narrow` is covered by one of
/// `wide` (or `wide` names none); and each argument check of `wide` is implied by `narrow`:
/// the same argument with a subset of the same forms, or a form that holds on any text.
fn matcher_covers(wide: &EventMatcher, narrow: &EventMatcher) -> bool {
    if wide == narrow {
        return true;
    }
    let (Some((wide_agent, wide_names)), Some((narrow_agent, narrow_names))) =
        (matcher_names(wide), matcher_names(narrow))
    else {
        return false;
    };
    if wide_agent != narrow_agent {
        return false;
    }
    let names_covered = wide_names.is_empty()
        || (!narrow_names.is_empty()
            && narrow_names.iter().all(|name| wide_names.iter().any(|pattern| name_covers(pattern, name))));
    if !names_covered {
        return false;
    }
    let args_covered = wide.args.iter().flatten().all(|(key, wide_text)| {
        // Any check on an argument fails when it is absent, so `narrow` checking the
        // argument at all makes it present.
        narrow.args.as_ref().and_then(|args| args.get(key)).is_some_and(|narrow_text| {
            text_match_implies(narrow_text, wide_text) || text_matches_everything(wide_text, true)
        })
    });
    let args_text_covered = match &wide.args_text {
        None => true,
        Some(wide_text) => {
            text_matches_everything(wide_text, true)
                || narrow.args_text.as_ref().is_some_and(|narrow_text| text_match_implies(narrow_text, wide_text))
        }
    };
    args_covered && args_text_covered
}

/// Whether the matcher matches agent invocations, and its name patterns (empty: any name);
/// `None` for a matcher naming both, or an empty list (`tool: []`): errors of their own.
fn matcher_names(matcher: &EventMatcher) -> Option<(bool, Vec<&str>)> {
    let (agent, names) = match (&matcher.tool, &matcher.agent) {
        (Some(_), Some(_)) => return None,
        (None, Some(_)) => (true, pattern_items(&matcher.agent)),
        (tool, None) => (false, pattern_items(tool)),
    };
    let listed_nothing = [&matcher.tool, &matcher.agent]
        .into_iter()
        .flatten()
        .any(|p| matches!(p, Patterns::Many(many) if many.is_empty()));
    (!listed_nothing).then_some((agent, names))
}

fn pattern_items(patterns: &Option<Patterns>) -> Vec<&str> {
    match patterns {
        None => Vec::new(),
        Some(Patterns::One(one)) => vec![one.as_str()],
        Some(Patterns::Many(many)) => many.iter().map(String::as_str).collect(),
    }
}

/// Whether the name pattern `pattern` matches every name `name` (a name or a glob) does.
fn name_covers(pattern: &str, name: &str) -> bool {
    if pattern == name {
        return true;
    }
    if !is_glob(pattern) {
        return false;
    }
    if !is_glob(name) {
        // A plain name matches exactly itself: ask the glob.
        return glob_matches(pattern, name);
    }
    // `*` is any text without a `/`, which is all a glob without `/` and `**` can match.
    pattern == "*" && !name.contains('/') && !name.contains("**")
}

/// Whether a text passing `narrow` certainly passes `wide`: every form `wide` gives, `narrow`
/// gives identically (all given forms must hold).
fn text_match_implies(narrow: &TextMatch, wide: &TextMatch) -> bool {
    let implied = |wide: &Option<String>, narrow: &Option<String>| wide.is_none() || wide == narrow;
    implied(&wide.glob, &narrow.glob)
        && implied(&wide.regex, &narrow.regex)
        && implied(&wide.equals, &narrow.equals)
        && implied(&wide.contains, &narrow.contains)
}

/// Whether a text matcher holds on any text: nothing but a `regex` such as `.*`. With
/// `strict` false it also takes `^.*$`, which only fails on text with a line break (fine for a
/// warning, not for a contradiction).
fn text_matches_everything(text: &TextMatch, strict: bool) -> bool {
    let TextMatch { glob: None, regex: Some(regex), equals: None, contains: None } = text else {
        return false;
    };
    // Leading flags, `(?s)`; `(?s:...)` is a group and stays in the body.
    let (flags, body) = match regex.strip_prefix("(?").and_then(|rest| rest.split_once(')')) {
        Some((flags, body)) if !flags.is_empty() && flags.chars().all(|c| "imsUx".contains(c)) => (flags, body),
        _ => ("", regex.as_str()),
    };
    match body {
        // A search finds the empty match at the start (or the end) of any text.
        "" | ".*" | ".*?" | "^.*" | "^.*?" | ".*$" | ".*?$" | "^" | "$" => true,
        // `.` stops at a line break, and `$` is the end of the text unless `m` is set.
        "^.*$" | "^.*?$" => !strict || flags.contains(['s', 'm']),
        _ => false,
    }
}

/// A `before`, `only_after` or `immediately_before` whose `b` matches every call its `a`
/// matches (and is not written the same way, an error of its own): the first `a` is a `b`
/// too, so no `a` comes before the first `b`. `before` can never hold, nor can
/// `immediately_before`, which needs a `b` and an `a` right before the first one (errors);
/// `only_after` holds only when no `b` occurs at all (a warning).
fn lint_pair_coverage(rule: &CompiledRule, pointer: &str, diagnostics: &mut Vec<Diagnostic>) {
    let (key, a, b) = match &rule.relation {
        Relation::Before(a, b) => ("before", a, b),
        Relation::OnlyAfter(a, b) => ("only_after", a, b),
        Relation::ImmediatelyBefore(a, b) => ("immediately_before", a, b),
        _ => return,
    };
    if a.source() == b.source() || !matcher_covers(b.source(), a.source()) {
        return;
    }
    let message = format!(
        "every `{}` call is also a `{}` call, so no `a` can come before the first `b`",
        a.description, b.description
    );
    let diagnostic = match key {
        "only_after" => {
            Diagnostic::warning("rule-vacuous", format!("{message}: `only_after` holds only when no `b` occurs"))
        }
        _ => Diagnostic::error("rule-contradiction", format!("{message}: `{key}` can never hold")),
    };
    diagnostics.push(
        diagnostic
            .at_pointer(format!("{pointer}/{key}"))
            .with_hint("make `b` exclude the calls `a` matches (name other tools, or add an argument check)"),
    );
}

/// Warns about matchers that match every tool call through a pattern (`tool: "*"`, a
/// `regex: ".*"`); the plain `{}` is already flagged when the matcher compiles.
fn warn_matchers_matching_everything(rule: &CompiledRule, pointer: &str, diagnostics: &mut Vec<Diagnostic>) {
    let mut matchers: Vec<(String, &CompiledMatcher)> = match &rule.relation {
        Relation::Before(a, b) => vec![("before/a".to_owned(), a), ("before/b".to_owned(), b)],
        Relation::OnlyAfter(a, b) => vec![("only_after/a".to_owned(), a), ("only_after/b".to_owned(), b)],
        Relation::ImmediatelyBefore(a, b) => {
            vec![("immediately_before/a".to_owned(), a), ("immediately_before/b".to_owned(), b)]
        }
        Relation::Never(m) => vec![("never".to_owned(), m)],
        Relation::Count(m, ..) => vec![("count/of".to_owned(), m)],
    };
    if let Some(within) = &rule.within {
        matchers.push(("within".to_owned(), within));
    }
    for (key, compiled) in matchers {
        let matcher = compiled.source();
        let Some((false, names)) = matcher_names(matcher) else { continue };
        warn_of_tool_name_case(&names, &format!("{pointer}/{key}/tool"), diagnostics);
        let args = matcher.args.iter().flatten().collect::<Vec<_>>();
        let flagged_when_compiled = names.is_empty() && args.is_empty() && matcher.args_text.is_none();
        let everything = !flagged_when_compiled
            && (names.is_empty() || names.iter().any(|name| !name.is_empty() && name.chars().all(|c| c == '*')))
            && args.iter().all(|(_, text)| text_matches_everything(text, false))
            && matcher.args_text.as_ref().is_none_or(|text| text_matches_everything(text, false));
        if !everything {
            continue;
        }
        let message = if args.is_empty() {
            "this matcher matches every tool call".to_owned()
        } else {
            let keys: Vec<String> = args.iter().map(|(key, _)| format!("`{key}`")).collect();
            format!("this matcher matches every tool call (that has a {} argument)", keys.join(" and a "))
        };
        diagnostics.push(
            Diagnostic::warning("matcher-matches-everything", message)
                .at_pointer(format!("{pointer}/{key}"))
                .with_hint(
                    "`*` matches any tool name and `regex: \".*\"` any text; name a tool with `tool:` or an agent with `agent:`",
                ),
        );
    }
}

/// Tool names of Claude Code and of the seed's traces: a name that spells one of them in
/// other letters (`bash`) matches nothing in such a trace, as names are case-sensitive.
const KNOWN_TOOLS: [&str; 21] = [
    "Agent",
    "Bash",
    "BashOutput",
    "Edit",
    "ExitPlanMode",
    "Glob",
    "Grep",
    "KillShell",
    "LS",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "Read",
    "SlashCommand",
    "Skill",
    "Task",
    "TodoRead",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
    "Write",
];

/// Warns about a tool name that is a known tool's name in other letters (`tool: bash`):
/// names are case-sensitive, so it matches nothing in a Claude Code trace.
fn warn_of_tool_name_case(names: &[&str], pointer: &str, diagnostics: &mut Vec<Diagnostic>) {
    for name in names {
        if KNOWN_TOOLS.contains(name) {
            continue;
        }
        let Some(known) = KNOWN_TOOLS.iter().find(|known| known.eq_ignore_ascii_case(name)) else { continue };
        diagnostics.push(
            Diagnostic::warning(
                "tool-name-case",
                format!("tool name `{name}` is Claude Code's `{known}` in other letters, and names are case-sensitive"),
            )
            .at_pointer(pointer.to_owned())
            .with_hint(format!(
                "write `{known}` to match Claude Code's tool (if your trace really names the tool `{name}`, leave it)"
            )),
        );
    }
}

fn spec_index(spec: &CheckpointSpec, fallback: usize, checkpoint: &CompiledCheckpoint) -> usize {
    spec.checkpoints.iter().position(|c| c.id == checkpoint.checkpoint.id).unwrap_or(fallback)
}

/// Compares a spec with its previous version: ids are immutable and append-only.
///
/// Reports removed ids (`id-removed`), ids whose instruction moved to a different id
/// (`id-renumbered`, swaps and cycles of existing ids included), ids reused for a different
/// instruction or tier (`id-reused`) and new ids that do not take the next free number
/// (`id-not-appended`, a warning).
pub fn lint_against_previous(
    previous: &CheckpointSpec,
    current: &CheckpointSpec,
    file: &str,
    source_map: &SourceMap,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    if previous.workflow != current.workflow {
        diagnostics.push(
            Diagnostic::warning(
                "previous-other-workflow",
                format!(
                    "the previous spec is for workflow `{}` and this one for `{}`; their ids are compared anyway",
                    previous.workflow, current.workflow
                ),
            )
            .at_pointer("/workflow")
            .with_hint("pass the previous version of this workflow's spec, or ignore this if the workflow was renamed"),
        );
    }
    let current_ids: HashMap<&str, usize> =
        current.checkpoints.iter().enumerate().rev().map(|(idx, c)| (c.id.as_str(), idx)).collect();
    let previous_ids: HashMap<&str, &Checkpoint> =
        previous.checkpoints.iter().rev().map(|c| (c.id.as_str(), c)).collect();
    let same =
        |a: &Checkpoint, b: &Checkpoint| a.tier == b.tier && normalize(&a.instruction) == normalize(&b.instruction);
    // A current checkpoint that is exactly the previous one of its id stays put; any other
    // (a new id, or an id whose content changed) may be where a previous instruction moved.
    let unchanged: Vec<bool> =
        current.checkpoints.iter().map(|c| previous_ids.get(c.id.as_str()).is_some_and(|old| same(old, c))).collect();
    let mut moved_here: Vec<Option<usize>> = vec![None; current.checkpoints.len()];
    let mut moved_to: Vec<Option<usize>> = vec![None; previous.checkpoints.len()];
    for (old_idx, old) in previous.checkpoints.iter().enumerate() {
        let instruction = normalize(&old.instruction);
        // An instruction still under its own id (perhaps with another tier) did not move.
        if current_ids
            .get(old.id.as_str())
            .is_some_and(|&idx| normalize(&current.checkpoints[idx].instruction) == instruction)
        {
            continue;
        }
        let target = current.checkpoints.iter().enumerate().position(|(idx, c)| {
            !unchanged[idx] && moved_here[idx].is_none() && c.id != old.id && normalize(&c.instruction) == instruction
        });
        if let Some(idx) = target {
            moved_here[idx] = Some(old_idx);
            moved_to[old_idx] = Some(idx);
        }
    }
    for (old_idx, old) in previous.checkpoints.iter().enumerate() {
        let here = current_ids.get(old.id.as_str()).copied();
        if here.is_some_and(|idx| unchanged[idx]) {
            continue;
        }
        if let Some(idx) = moved_to[old_idx] {
            diagnostics.push(
                Diagnostic::error(
                    "id-renumbered",
                    format!("checkpoint `{}` was renumbered to `{}`", old.id, current.checkpoints[idx].id),
                )
                .at_pointer(format!("/checkpoints/{idx}/id"))
                .with_hint(format!("ids are immutable: old reports cite `{}`; change the id back", old.id)),
            );
        }
        match here {
            None if moved_to[old_idx].is_none() => {
                // Said where it stood: at the previous checkpoint after it that is still there
                // (else the one before it), not at the list's first line.
                let survivor = |old: &Checkpoint| current_ids.get(old.id.as_str()).copied();
                let after = previous.checkpoints[old_idx + 1..].iter().find_map(|c| Some((survivor(c)?, &c.id)));
                let before = previous.checkpoints[..old_idx].iter().rev().find_map(|c| Some((survivor(c)?, &c.id)));
                let (pointer, place) = match (after, before) {
                    (Some((idx, id)), _) => (format!("/checkpoints/{idx}"), format!(" (it stood before `{id}`)")),
                    (None, Some((idx, id))) => (format!("/checkpoints/{idx}"), format!(" (it stood after `{id}`)")),
                    (None, None) => ("/checkpoints".to_owned(), String::new()),
                };
                diagnostics.push(
                    Diagnostic::error("id-removed", format!("checkpoint `{}` was removed{place}", old.id))
                        .at_pointer(pointer)
                        .with_hint(
                            "ids are immutable and append-only (old reports reference them): restore the checkpoint \
                             under its id; a new checkpoint takes the next free number",
                        ),
                )
            }
            None => {}
            // The id now holds another previous checkpoint's instruction (reported as
            // renumbered); if its own instruction went nowhere, it was removed.
            Some(idx) => match moved_here[idx] {
                Some(_) if moved_to[old_idx].is_some() => {}
                Some(from) => diagnostics.push(
                    Diagnostic::error(
                        "id-removed",
                        format!(
                            "checkpoint `{}` was removed (its id now holds the instruction of `{}`)",
                            old.id, previous.checkpoints[from].id
                        ),
                    )
                    .at_pointer(format!("/checkpoints/{idx}/id"))
                    .with_hint(
                        "ids are immutable and append-only (old reports reference them): restore the checkpoint under its id; a new checkpoint takes the next free number",
                    ),
                ),
                None => diagnostics.push(
                    Diagnostic::error(
                        "id-reused",
                        format!(
                            "checkpoint id `{}` now means something else (was tier {}: \"{}\")",
                            old.id, old.tier, old.instruction
                        ),
                    )
                    .at_pointer(format!("/checkpoints/{idx}/instruction"))
                    .with_hint(
                        "never reuse an id: restore the old checkpoint and add the new one with the next free id",
                    ),
                ),
            },
        }
    }
    let highest = highest_ids(&previous.checkpoints);
    // The next free number is past the new spec's own ids too (`P1-03` added beside a
    // misplaced `P1-00` is taken).
    let taken = highest_ids(&current.checkpoints);
    for (idx, new) in current.checkpoints.iter().enumerate() {
        if previous_ids.contains_key(new.id.as_str()) {
            continue;
        }
        if let Some((prefix, number)) = split_id(&new.id)
            && let Some(&(top, top_id)) = highest.get(prefix)
            && number <= top
        {
            let width = top_id.len() - prefix.len() - 1;
            let (last, last_id) = taken.get(prefix).copied().filter(|&(mine, _)| mine > top).unwrap_or((top, top_id));
            let hint = match last.checked_add(1) {
                Some(next) => format!("new checkpoints take the next free number, `{prefix}-{next:0width$}`"),
                None => format!("`{last_id}` is the highest number there is: start a new prefix for new checkpoints"),
            };
            diagnostics.push(
                Diagnostic::warning(
                    "id-not-appended",
                    format!("new checkpoint `{}` takes a number at or below the previous highest `{top_id}`", new.id),
                )
                .at_pointer(format!("/checkpoints/{idx}/id"))
                .with_hint(hint),
            );
        }
    }
    place(&mut diagnostics, source_map, file);
    diagnostics
}

/// Per id prefix (`P1` of `P1-07`), the highest number and the id that has it, named as
/// written (the next number keeps its width: `STEP-007` is followed by `STEP-008`).
fn highest_ids(checkpoints: &[Checkpoint]) -> HashMap<&str, (u64, &str)> {
    let mut highest: HashMap<&str, (u64, &str)> = HashMap::new();
    for checkpoint in checkpoints {
        if let Some((prefix, number)) = split_id(&checkpoint.id) {
            let entry = highest.entry(prefix).or_insert((number, checkpoint.id.as_str()));
            if number > entry.0 {
                *entry = (number, checkpoint.id.as_str());
            }
        }
    }
    highest
}

fn split_id(id: &str) -> Option<(&str, u64)> {
    let (prefix, number) = id.rsplit_once('-')?;
    // Digits only: `STEP-+7` is no number.
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((prefix, number.parse().ok()?))
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
workflow: feature-implementation
spec_version: "1.0.0"
environment_constraints:
  - id: ENV-01
    constraint: CI checks do not run on draft PRs
    affects: [P3-02]
    active_when: {path: pr.draft, equals: true}
checkpoints:
  - id: P1-01
    tier: 1
    instruction: Update task status to 'In Progress' before starting
    severity: critical
    verification:
      method: api_state
      evidence_sources: [issue_tracker_state]
      assert: {path: issue_tracker_state.status, equals: In Progress}
  - id: P2-01
    tier: 2
    instruction: Read the phase skill file before writing code
    severity: high
    verification:
      method: tool_sequence
      evidence_sources: [trace_file]
      rule:
        before:
          a: {tool: Read, args: {file_path: {glob: "**/skill.md"}}}
          b: {tool: [Bash, Write]}
  - id: P3-01
    tier: 3
    instruction: PR description must include WHAT, WHY, and HOW sections
    severity: medium
    verification:
      method: content_analysis
      evidence_sources: [pr_body]
    partial_criteria:
      - {condition: "Has WHAT and WHY, but missing HOW", weight: 0.7}
      - {condition: "Has WHAT only", weight: 0.3}
  - id: P3-02
    tier: 1
    instruction: Trigger CI on the PR
    severity: high
    verification:
      method: api_state
      evidence_sources: [pr]
      assert: {path: pr.checks_run, gte: 1}
"#;

    /// One tier-1 checkpoint, asserting `pr.n` equals 1.
    const SPEC_ONE_TIER1: &str = "workflow: wf\nspec_version: \"1\"\ncheckpoints:\n  - {id: P1-01, tier: 1, instruction: x, severity: high, verification: {method: api_state, evidence_sources: [pr], assert: {path: pr.n, equals: 1}}}\n";

    fn codes(text: &str) -> Vec<(String, usize)> {
        load_spec(text, "spec.yaml")
            .diagnostics
            .iter()
            .map(|d| (d.code.clone(), d.position.map(|p| p.line).unwrap_or(0)))
            .collect()
    }

    /// A value of the wrong type or outside its options (a typo in `severity`, `tier: "1"`)
    /// does not hide the other problems of the spec: a valid stand-in takes its place for
    /// the further checks, and what is reported about the stand-in itself is dropped.
    #[test]
    fn a_bad_value_does_not_hide_the_other_findings() {
        const SPEC: &str = r#"workflow: wf
spec_version: "1"
checkpoints:
  - {id: P1-01, tier: 1, instruction: "x", severity: high, verification: {method: api_state, evidence_sources: [pr], assert: {path: pr.merged, equals: true}}}
  - id: P1-03
    tier: 2
    instruction: "x"
    severity: low
    verification:
      method: tool_sequence
      evidence_sources: [pr, pr]
      rule: {before: {a: {tool: Bash}, b: {tool: Bash}}}
  - {id: P1-01, tier: 3, instruction: "y", severity: low, verification: {method: content_analysis, evidence_sources: [pr]}}
"#;
        for (from, bad) in [("severity: high", "severity: critcal"), ("tier: 1,", "tier: \"1\",")] {
            let text = SPEC.replacen(from, bad, 1);
            let codes: Vec<String> = load_spec(&text, "spec.yaml").diagnostics.iter().map(|d| d.code.clone()).collect();
            for expected in ["trace-source-missing", "invalid-evidence-source", "rule-contradiction", "duplicate-id"] {
                assert!(codes.iter().any(|code| code == expected), "{bad}: {expected} missing from {codes:?}");
            }
            let first = if bad.starts_with("tier") { "invalid-type" } else { "invalid-value" };
            assert_eq!(codes.iter().filter(|code| *code == first).count(), 1, "{bad}: {codes:?}");
        }
    }

    /// A number past an exclusive bound (a weight of 1 or 0), one too large for 64 bits, or
    /// two numbers out of range each stand in for a valid value: every other finding of the
    /// spec is still reported in the same pass.
    #[test]
    fn numbers_out_of_range_hide_no_other_finding() {
        let spec = |weight: &str, at_least: &str, at_most: &str| {
            format!(
                r#"workflow: wf
spec_version: "1"
environment_constraints:
  - {{id: ENV-01, constraint: c, affects: [P9-99], active_when: {{path: s.x, equals: true}}}}
checkpoints:
  - {{id: P1-01, tier: 1, instruction: "a", severity: low, verification: {{method: api_state, evidence_sources: [s], assert: {{path: s.a, length: {{gte: {at_most}}}}}}}}}
  - {{id: P1-01, tier: 1, instruction: "b", severity: low, verification: {{method: api_state, evidence_sources: [s], assert: {{all: [{{path: s.a, equals: 1}}, {{path: s.a, equals: 2}}]}}}}}}
  - {{id: P2-01, tier: 2, instruction: "c", severity: low, verification: {{method: tool_sequence, evidence_sources: [trace_file], rule: {{count: {{of: {{tool: Grep}}, at_least: {at_least}, at_most: {at_most}}}}}}}}}
  - {{id: P2-02, tier: 2, instruction: "d", severity: low, verification: {{method: tool_sequence, evidence_sources: [trace_file], rule: {{count: {{of: {{tool: Bash}}, at_least: 3, at_most: 2}}}}}}}}
  - id: P3-01
    tier: 3
    instruction: "e"
    severity: low
    verification: {{method: content_analysis, evidence_sources: [s]}}
    partial_criteria: [{{condition: "x", weight: {weight}}}]
"#
            )
        };
        let others = ["orphaned-id", "duplicate-id", "condition-contradiction", "rule-contradiction"];
        let valid = codes(&spec("0.5", "1", "5"));
        for code in others {
            assert!(valid.iter().any(|(found, _)| found == code), "{code}: {valid:?}");
        }
        for (weight, at_least, at_most, bad) in [
            ("1.0", "1", "5", 1),
            ("0", "1", "5", 1),
            ("-0.5", "1", "5", 1),
            ("1.5", "1", "5", 1),
            ("0.5", "1", "99999999999999999999999", 2),
            ("0.5", "-1", "99999999999999999999999", 3),
            ("1", "-1", "99999999999999999999999", 4),
        ] {
            let found = codes(&spec(weight, at_least, at_most));
            for code in others {
                assert!(
                    found.iter().any(|(found, _)| found == code),
                    "{weight} {at_least} {at_most}: {code}: {found:?}"
                );
            }
            let invalid = found.iter().filter(|(code, _)| code == "invalid-value").count();
            assert_eq!(invalid, bad, "{weight} {at_least} {at_most}: {found:?}");
        }
    }

    /// A known tool's name in other letters is a warning; the name itself, a glob and an
    /// unknown name are not.
    #[test]
    fn a_known_tool_in_other_letters_is_a_warning() {
        let text = rules_spec(&[
            ("{never: {tool: bash}}", None),
            ("{count: {of: {tool: [Read, webfetch, \"b*\", Deploy]}, at_most: 3}}", None),
            ("{before: {a: {tool: Read}, b: {tool: Edit}}, within: {tool: task}}", None),
        ]);
        let found: Vec<(String, Option<String>)> = load_spec(&text, "spec.yaml")
            .diagnostics
            .iter()
            .filter(|d| d.code == "tool-name-case")
            .map(|d| (d.message.clone(), d.pointer.clone()))
            .collect();
        let at = |idx: usize, key: &str| Some(format!("/checkpoints/{idx}/verification/rule/{key}/tool"));
        assert_eq!(
            found,
            vec![
                (
                    "tool name `bash` is Claude Code's `Bash` in other letters, and names are case-sensitive"
                        .to_owned(),
                    at(0, "never")
                ),
                (
                    "tool name `webfetch` is Claude Code's `WebFetch` in other letters, and names are case-sensitive"
                        .to_owned(),
                    at(1, "count/of")
                ),
                (
                    "tool name `task` is Claude Code's `Task` in other letters, and names are case-sensitive"
                        .to_owned(),
                    at(2, "within")
                ),
            ]
        );
    }

    /// A blank `workflow` is an error (reports and baselines are matched by it); a blank
    /// `spec_version` or constraint text is a warning.
    #[test]
    fn blank_names_are_reported() {
        let text = "workflow: \" \"\nspec_version: \"\"\nenvironment_constraints:\n  - {id: ENV-01, constraint: \"\", affects: [P1-01], active_when: {path: pr.draft, equals: true}}\ncheckpoints:\n  - {id: P1-01, tier: 1, instruction: x, severity: high, verification: {method: api_state, evidence_sources: [pr], assert: {path: pr.n, equals: 1}}}\n";
        let found: Vec<(String, bool, usize)> = load_spec(text, "spec.yaml")
            .diagnostics
            .iter()
            .map(|d| (d.code.clone(), d.is_error(), d.position.map(|p| p.line).unwrap_or(0)))
            .collect();
        assert_eq!(
            found,
            vec![
                ("workflow-empty".to_owned(), true, 1),
                ("spec-version-empty".to_owned(), false, 2),
                ("constraint-empty".to_owned(), false, 4),
            ]
        );
    }

    /// A tier that cannot be read (quoted, a word, null, out of range, a fraction, missing)
    /// is reported once, and nothing is said on the strength of a stand-in tier (a tier-3
    /// checkpoint is not told to add `assert:`); the checks across checkpoints still run.
    #[test]
    fn an_unreadable_or_missing_tier_is_reported_alone_and_other_checks_still_run() {
        const SPEC: &str = r#"workflow: wf
spec_version: "1"
environment_constraints:
  - {id: ENV-01, constraint: c, affects: [P9-99], active_when: {path: pr.draft, equals: true}}
checkpoints:
  - id: P1-01
    tier: 3
    instruction: "a"
    severity: high
    verification: {method: content_analysis, evidence_sources: [pr]}
    partial_criteria:
      - {condition: "x", weight: 0.5}
  - {id: P1-01, tier: 1, instruction: "b", severity: low, verification: {method: api_state, evidence_sources: [pr], assert: {path: pr.v, equals: 1}}}
"#;
        for bad in [
            "    tier: \"3\"\n",
            "    tier: \"2\"\n",
            "    tier: three\n",
            "    tier: null\n",
            "    tier: 7\n",
            "    tier: 0\n",
            "    tier: 2.5\n",
            "",
        ] {
            let text = SPEC.replacen("    tier: 3\n", bad, 1);
            let found: Vec<String> = load_spec(&text, "spec.yaml").diagnostics.iter().map(|d| d.code.clone()).collect();
            let structural = found
                .iter()
                .filter(|code| ["invalid-type", "invalid-value", "missing-field"].contains(&code.as_str()))
                .count();
            assert_eq!(structural, 1, "{bad:?}: {found:?}");
            for expected in ["orphaned-id", "duplicate-id"] {
                assert!(found.iter().any(|code| code == expected), "{bad:?}: {expected} missing from {found:?}");
            }
            for stand_in in ["assertion-missing", "tier-method-mismatch", "partial-criteria-unused", "invalid-tier"] {
                assert!(!found.iter().any(|code| code == stand_in), "{bad:?}: {stand_in} in {found:?}");
            }
        }
        // Any other missing key: reported at its object's line, and the rest still checked.
        for key in [
            "    severity: high\n",
            "    instruction: \"a\"\n",
            "    verification: {method: content_analysis, evidence_sources: [pr]}\n",
        ] {
            let found = codes(&SPEC.replacen(key, "", 1));
            assert_eq!(found.iter().filter(|(code, _)| code == "missing-field").count(), 1, "{key:?}: {found:?}");
            assert!(found.contains(&("missing-field".to_owned(), 6)), "{key:?}: {found:?}");
            assert!(found.iter().any(|(code, _)| code == "duplicate-id"), "{key:?}: {found:?}");
            assert!(
                !found
                    .iter()
                    .any(|(code, _)| ["instruction-empty", "evidence-sources-missing"].contains(&code.as_str())),
                "{key:?}: {found:?}"
            );
        }
        // Sources that stand in for missing ones leave no path "undeclared".
        let found = codes(&SPEC.replacen("evidence_sources: [pr], assert", "assert", 1));
        assert!(found.iter().any(|(code, _)| code == "missing-field"), "{found:?}");
        assert!(!found.iter().any(|(code, _)| code == "evidence-source-undeclared"), "{found:?}");
        let found = codes(&SPEC.replacen("workflow: wf\n", "", 1));
        assert!(found.contains(&("missing-field".to_owned(), 1)), "{found:?}");
        assert!(found.iter().any(|(code, _)| code == "orphaned-id"), "{found:?}");
    }

    /// Ids that read alike (case, surrounding spaces) are a warning; a constraint that takes a
    /// checkpoint's id is told a free constraint id; a partial criterion repeated (as a
    /// verdict's `matched_condition` reads it: outer spaces aside, case counts) says what to do.
    #[test]
    fn lookalike_ids_clashing_constraints_and_repeated_criteria_are_explained() {
        let text = r#"workflow: wf
spec_version: "1"
environment_constraints:
  - {id: ENV-03, constraint: c, affects: [P1-01], active_when: {path: pr.draft, equals: true}}
  - {id: P1-01, constraint: c, affects: [P1-01], active_when: {path: pr.draft, equals: true}}
checkpoints:
  - {id: P1-01, tier: 1, instruction: "a", severity: high, verification: {method: api_state, evidence_sources: [pr], assert: {path: pr.v, equals: 1}}}
  - {id: "p1-01 ", tier: 1, instruction: "b", severity: high, verification: {method: api_state, evidence_sources: [pr], assert: {path: pr.v, equals: 1}}}
  - id: P3-01
    tier: 3
    instruction: "c"
    severity: high
    verification: {method: content_analysis, evidence_sources: [pr]}
    partial_criteria:
      - {condition: "Names the risk", weight: 0.5}
      - {condition: "names the risk", weight: 0.5}
      - {condition: " Names the risk ", weight: 0.5}
"#;
        let load = load_spec(text, "spec.yaml");
        let find = |code: &str| load.diagnostics.iter().filter(|d| d.code == code).collect::<Vec<_>>();
        let lookalike = find("id-lookalike");
        assert_eq!(lookalike.len(), 1, "{:?}", load.diagnostics);
        let constraints = text.replacen("{id: ENV-03,", "{id: env-03,", 1).replacen(
            "  - {id: P1-01, constraint",
            "  - {id: ENV-03, constraint: c, affects: [P1-01], active_when: {path: pr.draft, equals: true}}\n  - {id: p1-01, constraint",
            1,
        );
        let load_constraints = load_spec(&constraints, "spec.yaml");
        let alike: Vec<&str> = load_constraints
            .diagnostics
            .iter()
            .filter(|d| d.code == "id-lookalike")
            .map(|d| d.message.as_str())
            .collect();
        assert!(alike.contains(&"constraint id `ENV-03` differs from `env-03` only in case or spaces"), "{alike:?}");
        assert!(alike.contains(&"constraint id `p1-01` differs from `P1-01` only in case or spaces"), "{alike:?}");
        // Each hint suggests an id of its own: following them all makes no new clash.
        let suggested: Vec<&str> = load_constraints
            .diagnostics
            .iter()
            .filter_map(|d| d.hint.as_deref())
            .filter_map(|hint| hint.split('`').find(|part| part.starts_with("ENV-")))
            .collect();
        assert!(suggested.len() >= 2, "{suggested:?}");
        assert_eq!(suggested.iter().collect::<HashSet<_>>().len(), suggested.len(), "{suggested:?}");
        assert!(lookalike[0].message.contains("`p1-01 ` differs from `P1-01`"), "{:?}", lookalike[0]);
        let clash = find("duplicate-id");
        assert!(
            clash.iter().any(|d| d.message.contains("constraint id `P1-01` is also a checkpoint id")
                && d.hint.as_deref().is_some_and(|hint| hint.contains("`ENV-04`"))),
            "{clash:?}"
        );
        let repeated = find("duplicate-criterion");
        assert_eq!(repeated.len(), 1, "{repeated:?}");
        assert_eq!(repeated[0].position.map(|p| p.line), Some(17), "{repeated:?}");
        assert!(repeated[0].hint.is_some(), "{repeated:?}");
    }

    /// A whole number past 64 bits (read as a float) is named as too large, not with serde's
    /// words about floating point.
    #[test]
    fn a_number_too_large_for_its_field_says_so() {
        let text = SPEC_ONE_TIER1
            .replace("assert: {path: pr.n, equals: 1}", "assert: {path: pr.n, length: {gt: 18446744073709551616}}");
        let load = load_spec(&text, "spec.yaml");
        assert_eq!(load.diagnostics.len(), 1, "{:?}", load.diagnostics);
        assert!(
            load.diagnostics[0]
                .message
                .starts_with("`checkpoints[0].verification.assert.length.gt` is too large for its field"),
            "{:?}",
            load.diagnostics
        );
    }

    /// A blank id cannot be named by `affects`, a report or a baseline: an error. A blank
    /// instruction is an error where a judge is asked about it (tier 3), a warning elsewhere.
    #[test]
    fn blank_ids_and_instructions_are_reported() {
        let text = r#"workflow: w
spec_version: "1.0.0"
environment_constraints:
  - {id: " ", constraint: c, affects: [P1-01], active_when: {path: a.x, equals: true}}
checkpoints:
  - {id: "", tier: 1, instruction: "x", severity: low, verification: {method: evidence_state, evidence_sources: [a], assert: {path: a.v, equals: true}}}
  - {id: P1-01, tier: 1, instruction: " ", severity: low, verification: {method: evidence_state, evidence_sources: [a], assert: {path: a.v, equals: true}}}
  - {id: P1-02, tier: 3, instruction: "", severity: low, verification: {method: content_analysis, evidence_sources: [a]}}
"#;
        let load = load_spec(text, "spec.yaml");
        let found: Vec<(&str, bool, usize)> = load
            .diagnostics
            .iter()
            .map(|d| (d.code.as_str(), d.is_error(), d.position.map(|p| p.line).unwrap_or(0)))
            .collect();
        assert!(found.contains(&("id-empty", true, 4)), "{found:?}");
        assert!(found.contains(&("id-empty", true, 6)), "{found:?}");
        assert!(found.contains(&("instruction-empty", false, 7)), "{found:?}");
        assert!(found.contains(&("instruction-empty", true, 8)), "{found:?}");
        // Two blank ids are two blank ids, not a repeat.
        let twice = text.replacen("id: P1-01,", "id: \"\",", 1);
        let codes: Vec<String> = load_spec(&twice, "spec.yaml").diagnostics.iter().map(|d| d.code.clone()).collect();
        assert_eq!(codes.iter().filter(|c| *c == "id-empty").count(), 3, "{codes:?}");
        assert!(!codes.iter().any(|c| c == "duplicate-id"), "{codes:?}");
    }

    #[test]
    fn the_seed_spec_loads_with_positions_in_document_order() {
        let load = load_spec(SPEC, "spec.yaml");
        assert!(load.diagnostics.is_empty(), "{:?}", load.diagnostics);
        let spec = load.spec.unwrap();
        let positions: Vec<(&str, usize, u8)> =
            spec.checkpoints.iter().map(|c| (c.checkpoint.id.as_str(), c.position_index, c.tier.number())).collect();
        assert_eq!(positions, vec![("P1-01", 1, 1), ("P2-01", 2, 2), ("P3-01", 3, 3), ("P3-02", 4, 1)]);
        assert_eq!(spec.rules.len(), 1);
    }

    #[test]
    fn lint_finds_duplicates_orphans_and_tier_mismatches() {
        let broken = SPEC
            .replace("affects: [P3-02]", "affects: [P3-20]")
            .replace("id: P3-02", "id: P1-01")
            .replace("method: tool_sequence", "method: api_state");
        let found = codes(&broken);
        let has = |code: &str| found.iter().any(|(c, _)| c == code);
        assert!(has("orphaned-id"), "{found:?}");
        assert!(has("duplicate-id"), "{found:?}");
        assert!(has("tier-method-mismatch"), "{found:?}");
        let orphan = found.iter().find(|(c, _)| c == "orphaned-id").unwrap();
        assert_eq!(orphan.1, 7, "{found:?}");
        // A near id with another number is another checkpoint: not suggested. One written
        // another way (case) is.
        let hint = |affects: &str| {
            let text = SPEC.replace("affects: [P3-02]", &format!("affects: [{affects}]"));
            let loaded = load_spec(&text, "spec.yaml");
            let orphan = loaded.diagnostics.iter().find(|d| d.code == "orphaned-id").unwrap();
            orphan.hint.clone().unwrap()
        };
        assert_eq!(
            hint("P3-03"),
            "list ids from `checkpoints:` only: add the checkpoint `P3-03`, or take it out of `affects`"
        );
        assert_eq!(hint("p3-02"), "did you mean `P3-02`?");
        assert!(hint("P2-02").starts_with("list ids from `checkpoints:` only"), "another phase is another checkpoint");
        assert_eq!(
            hint("ENV-01"),
            "`ENV-01` is an environment constraint; `affects` lists the checkpoints it can block"
        );
        assert_eq!(hint("\"\""), "remove the empty id from `affects`");
        assert_eq!(hint("\"  \""), "remove the empty id from `affects`");
        assert!(hint("env-01").contains("is an environment constraint"));
    }

    /// A number too large for a float in a field of names (`severity`) is reported once.
    #[test]
    fn a_non_finite_number_in_a_field_of_names_is_reported_once() {
        let text = SPEC.replacen("severity: critical", "severity: 1e400", 1);
        let line = text.lines().position(|line| line.contains("1e400")).unwrap() + 1;
        let found: Vec<(String, usize)> = codes(&text).into_iter().filter(|(_, at)| *at == line).collect();
        assert_eq!(found, vec![("yaml-non-finite".to_owned(), line)]);
    }

    /// `equals: no` is text in YAML 1.2 and `one_of: [1.10]` the number 1.1: lint says which
    /// reading was taken where a value is compared with evidence, and nowhere else.
    #[test]
    fn plain_scalars_read_otherwise_than_meant_are_warned_of_where_compared() {
        let with = |assert: &str| SPEC_ONE_TIER1.replace("{path: pr.n, equals: 1}", assert);
        let warned = |text: &str| {
            load_spec(text, "spec.yaml")
                .diagnostics
                .into_iter()
                .filter(|d| matches!(d.code.as_str(), "yaml-1.1-boolean" | "number-drops-digits"))
                .map(|d| (d.code, d.pointer.unwrap_or_default()))
                .collect::<Vec<_>>()
        };
        let at = "/checkpoints/0/verification/assert";
        assert_eq!(
            warned(&with("{path: pr.draft, equals: no}")),
            [("yaml-1.1-boolean".to_owned(), format!("{at}/equals"))]
        );
        assert_eq!(
            warned(&with("{path: pr.v, one_of: [1.10, \"1.10\", 1.1, 0755, 0, 2.50e1, On]}")),
            [
                ("number-drops-digits".to_owned(), format!("{at}/one_of/0")),
                ("number-drops-digits".to_owned(), format!("{at}/one_of/3")),
                ("yaml-1.1-boolean".to_owned(), format!("{at}/one_of/6")),
            ]
        );
        assert_eq!(warned(&with("{path: pr.v, not_equals: Off}")).len(), 1);
        // Quoted, a true boolean, a length, a numeric bound or text to search: as meant.
        for meant in [
            "{path: pr.draft, equals: \"no\"}",
            "{path: pr.draft, equals: false}",
            "{path: pr.v, length: {equals: 010}}",
            "{path: pr.v, gte: 1.10}",
            "{path: pr.v, contains: no}",
        ] {
            assert_eq!(warned(&with(meant)), [], "{meant}");
        }
        let loaded = load_spec(&with("{path: pr.draft, equals: no}"), "spec.yaml");
        let warning = loaded.diagnostics.iter().find(|d| d.code == "yaml-1.1-boolean").unwrap();
        assert_eq!(
            warning.hint.as_deref(),
            Some(
                "write `false` to compare with a boolean, or quote it (\"no\") to keep the text and silence this warning"
            )
        );
        assert!(loaded.spec.is_some(), "a warning does not stop the check");
    }

    /// Argument paths that can name no argument (empty segments, the evidence paths'
    /// brackets) are errors: a `never` on them would pass unseen.
    #[test]
    fn argument_paths_that_name_nothing_are_errors() {
        let rule = |args: &str| {
            format!(
                "workflow: wf\nspec_version: \"1\"\ncheckpoints:\n  - {{id: P2-01, tier: 2, instruction: x, severity: high, verification: {{method: tool_sequence, evidence_sources: [trace_file], rule: {{never: {{tool: Edit, args: {{{args}: {{contains: x}}}}}}}}}}}}\n"
            )
        };
        let found = |args: &str| {
            load_spec(&rule(args), "spec.yaml")
                .diagnostics
                .into_iter()
                .filter(|d| d.code == "invalid-argument-path")
                .map(|d| (d.pointer.unwrap_or_default(), d.hint.unwrap_or_default()))
                .collect::<Vec<_>>()
        };
        let at = "/checkpoints/0/verification/rule/never/args";
        let bracket = found("\"edits[0].old_string\"");
        assert_eq!(bracket.len(), 1, "{bracket:?}");
        assert_eq!(bracket[0].0, format!("{at}/edits[0].old_string"));
        assert!(bracket[0].1.starts_with("write `edits.0.old_string`:"), "{bracket:?}");
        assert!(found("'a[\"b\"]'")[0].1.starts_with("write `a.b`:"));
        // `[*]` has no dotted form (`edits.*.x` would name nothing).
        assert!(found("\"edits[*].x\"")[0].1.contains("there is no `*` for every element"));
        // Placed at the path (the key), not at its matcher.
        let loaded = load_spec(&rule("\"command.\""), "spec.yaml");
        let at = loaded.diagnostics.iter().find(|d| d.code == "invalid-argument-path").unwrap().position.unwrap();
        let line = rule("\"command.\"").lines().nth(at.line - 1).unwrap().to_owned();
        assert!(line[at.column - 1..].starts_with("\"command.\""), "{line} at {at:?}");
        for bad in ["\"command.\"", "\".\"", "\"\"", "\"a..b\""] {
            assert_eq!(found(bad).len(), 1, "{bad}");
        }
        for good in ["command", "edits.0.old_string", "\"a.0\""] {
            assert_eq!(found(good), [], "{good}");
        }
    }

    /// `args: {regex: ...}` is told to write `args_text`, and the matcher left in its place
    /// (every `Bash` call) is not said to contradict other checkpoints.
    #[test]
    fn a_text_matcher_under_args_points_to_args_text() {
        let text = "workflow: wf\nspec_version: \"1\"\ncheckpoints:\n  - {id: P2-01, tier: 2, instruction: x, severity: high, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {never: {tool: Bash, args: {regex: \"git push -f\"}}}}}\n  - {id: P2-02, tier: 2, instruction: y, severity: high, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {count: {of: {tool: Bash}, at_least: 1}}}}\n";
        let loaded = load_spec(text, "spec.yaml");
        let codes: Vec<&str> = loaded.diagnostics.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(codes, ["invalid-type"], "{:?}", loaded.diagnostics);
        assert!(loaded.diagnostics[0].hint.as_deref().unwrap().contains("write `args_text: {regex: ...}`"));
    }

    #[test]
    fn an_empty_partial_criteria_points_to_mode_b() {
        let text = SPEC.replace("    partial_criteria:\n", "    partial_criteria: []\n    x-old:\n");
        let loaded = load_spec(&text, "spec.yaml");
        let empty = loaded.diagnostics.iter().find(|d| d.code == "invalid-value").expect("reported");
        assert!(
            empty.hint.as_deref().is_some_and(|hint| hint.starts_with("leave `partial_criteria` out (for a tier-3"))
        );
    }

    /// A whole number written with a fraction is a whole number (JSON Schema counts it as
    /// one); a number out of its field's range is reported at its own line, and every such
    /// field is, not only the first.
    #[test]
    fn whole_numbers_with_a_fraction_load_and_out_of_range_numbers_are_located() {
        let spec = rules_spec(&[
            ("{count: {of: {tool: Bash}, at_least: 2.0, at_most: 3}}", None),
            ("{count: {of: {tool: Bash}, at_most: 18446744073709551616}}", None),
            ("{count: {of: {tool: Read}, at_least: 18446744073709551617}}", None),
        ])
        .replacen("tier: 2", "tier: 2.0", 1);
        let line_of = |needle: &str| spec.lines().position(|line| line.contains(needle)).unwrap() + 1;
        let load = load_spec(&spec, "spec.yaml");
        let errors: Vec<(String, usize, String)> = load
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| (d.code.clone(), d.position.map_or(0, |p| p.line), d.message.clone()))
            .collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!((errors[0].0.as_str(), errors[0].1), ("invalid-value", line_of("at_most: 1844")), "{errors:?}");
        assert!(errors[0].2.starts_with("`checkpoints[1].verification.rule.count.at_most`"), "{errors:?}");
        assert_eq!(errors[1].1, line_of("at_least: 1844"), "{errors:?}");
        assert!(errors[1].2.starts_with("`checkpoints[2].verification.rule.count.at_least`"), "{errors:?}");
        let fixed = rules_spec(&[("{count: {of: {tool: Bash}, at_least: 2.0, at_most: 3}}", None)]).replacen(
            "tier: 2",
            "tier: 2.0",
            1,
        );
        let load = load_spec(&fixed, "spec.yaml");
        assert!(load.diagnostics.iter().all(|d| !d.is_error()), "{:?}", load.diagnostics);
        assert!(load.spec.is_some());
    }

    #[test]
    fn lint_finds_schema_and_routing_problems() {
        let found = codes(&SPEC.replace("severity: critical", "severity: critcal"));
        assert_eq!(found, vec![("invalid-value".to_owned(), 13)]);
        let found =
            codes(&SPEC.replace("evidence_sources: [issue_tracker_state]", "evidence_sources: [issue_tracker]"));
        assert!(found.iter().any(|(c, _)| c == "evidence-source-undeclared"), "{found:?}");
        let found = codes(&SPEC.replace("      evidence_sources: [trace_file]\n", "      evidence_sources: []\n"));
        assert!(found.iter().any(|(c, _)| c == "evidence-sources-missing"), "{found:?}");
        // An empty list is said once, not again for every path the checkpoint reads.
        let found = codes(&SPEC.replace("evidence_sources: [issue_tracker_state]", "evidence_sources: []"));
        assert!(found.iter().any(|(c, _)| c == "evidence-sources-missing"), "{found:?}");
        assert!(!found.iter().any(|(c, _)| c == "evidence-source-undeclared"), "{found:?}");
        let found = codes(&SPEC.replace("      evidence_sources: [pr_body]\n", ""));
        assert!(found.iter().any(|(c, _)| c == "missing-field"), "{found:?}");
        // A value of another type for an enum lists the allowed values.
        let load = load_spec(&SPEC.replace("severity: critical", "severity: 3"), "spec.yaml");
        assert_eq!(load.diagnostics.len(), 1, "{:?}", load.diagnostics);
        assert!(
            load.diagnostics[0].message.contains("is the number 3, which is not allowed"),
            "{:?}",
            load.diagnostics
        );
        assert!(load.diagnostics[0].hint.as_deref().unwrap_or("").contains("critical, high, medium, low"));
        // Without readable checkpoints, every `affects` would be orphaned: not said.
        let found = codes(&SPEC.replacen("checkpoints:", "checkponts:", 1));
        assert!(!found.iter().any(|(c, _)| c == "orphaned-id"), "{found:?}");
        assert!(found.iter().any(|(c, _)| c == "missing-field"), "{found:?}");
    }

    /// A whole number written with a fraction (`tier: 1.0`) beside a real schema error does
    /// not hide the other findings, and neither does an unrelated error hide an empty list
    /// of checkpoints.
    #[test]
    fn a_fractional_whole_number_or_an_unknown_key_hides_no_finding() {
        let spec = "workflow: w\nspec_version: \"1\"\ncheckpoints:\n  - {id: P1-01, tier: 1.0, instruction: x, severity: low, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {never: {tool: Bash}}}}\n  - {id: P1-02, tier: 2, instruction: y, severity: urgent, verification: {method: tool_sequence, evidence_sources: [trace_file], rule: {never: {tool: Write}}}}\n";
        let found = codes(spec);
        assert!(found.iter().any(|(c, _)| c == "invalid-value"), "{found:?}");
        assert!(found.iter().any(|(c, line)| c == "tier-method-mismatch" && *line == 4), "{found:?}");
        let found = codes("workflow: w\nspec_version: \"1\"\nx: 1\ncheckpoints: []\n");
        assert!(found.iter().any(|(c, _)| c == "unknown-key"), "{found:?}");
        assert!(found.iter().any(|(c, _)| c == "spec-empty"), "{found:?}");
    }

    /// A key given twice or a tag that does not fit its value leaves a whole document: it is
    /// reported with every other finding, not alone, and the spec is still refused.
    #[test]
    fn a_repeated_key_or_a_bad_tag_hides_no_finding() {
        let spec = "workflow: w\nspec_version: \"1\"\ncheckpoints:\n  - id: P1-01\n    tier: 2\n    instruction: x\n    severity: low\n    severity: high\n    verification: {method: api_state, evidence_sources: [trace_file], rule: {never: {tool: Bash}}}\n  - {id: P1-01, tier: !!int two, instruction: y, severity: urgent, verification: {method: tool_sequence, evidence_sources: [git], rule: {never: {tool: Write}}}}\n";
        let found = codes(spec);
        for (code, line) in [
            ("duplicate-key", 8),
            ("yaml-tag", 10),
            ("duplicate-id", 10),
            ("invalid-value", 10),
            ("invalid-type", 10),
            ("tier-method-mismatch", 9),
        ] {
            assert!(found.iter().any(|(c, l)| c == code && *l == line), "{code} at {line}: {found:?}");
        }
        assert!(load_spec(spec, "spec.yaml").spec.is_none());
    }

    /// A value the schema rejects is reported once: the semantic check of the repaired spec
    /// does not add that the matcher it sat in has no forms.
    #[test]
    fn a_schema_error_is_not_restated_by_a_semantic_one() {
        let spec = "workflow: w\nspec_version: \"1\"\ncheckpoints:\n  - id: N-01\n    tier: 2\n    instruction: x\n    severity: low\n    verification:\n      method: tool_sequence\n      evidence_sources: [trace_file]\n      rule: {count: {of: {tool: Bash, args: {limit: {equals: 3}}}, at_least: 1}}\n";
        let found = codes(spec);
        assert!(found.iter().any(|(c, _)| c == "invalid-type"), "{found:?}");
        assert!(!found.iter().any(|(c, _)| c == "matcher-empty"), "{found:?}");
        // A matcher that really has no form is still reported.
        let found = codes(&spec.replace("{equals: 3}", "{}"));
        assert!(found.iter().any(|(c, _)| c == "matcher-empty"), "{found:?}");
    }

    #[test]
    fn lint_finds_contradictions() {
        let found = codes(&SPEC.replace(
            "assert: {path: pr.checks_run, gte: 1}",
            "assert: {all: [{path: pr.checks_run, gte: 5}, {path: pr.checks_run, lt: 2}]}",
        ));
        assert!(found.iter().any(|(c, _)| c == "condition-contradiction"), "{found:?}");
        let extra = format!(
            "{SPEC}  - id: P2-02\n    tier: 2\n    instruction: never run Bash\n    severity: low\n    verification:\n      method: tool_sequence\n      evidence_sources: [trace_file]\n      rule: {{never: {{tool: [Bash, Write]}}}}\n"
        );
        let found = codes(&extra);
        assert!(found.iter().any(|(c, _)| c == "checkpoint-contradiction"), "{found:?}");
        // The published schema bounds a weight (exclusively), so the schema answers first.
        for weight in ["1.5", "1", "0", "-0.2"] {
            let found = codes(&SPEC.replace("weight: 0.3", &format!("weight: {weight}")));
            assert!(found.iter().any(|(c, _)| c == "invalid-value"), "{weight}: {found:?}");
        }
        // A criterion the judge and a verdict could only name as blank text; a list of none
        // (neither Mode A nor Mode B: the key left out is Mode B).
        let found =
            codes(&SPEC.replace("{condition: \"Has WHAT only\", weight: 0.3}", "{condition: \"  \", weight: 0.3}"));
        assert!(found.iter().any(|(c, _)| c == "criterion-blank"), "{found:?}");
        let criteria = "      - {condition: \"Has WHAT and WHY, but missing HOW\", weight: 0.7}\n      - {condition: \"Has WHAT only\", weight: 0.3}\n";
        assert!(SPEC.contains(criteria));
        let found = codes(&SPEC.replace(&format!("    partial_criteria:\n{criteria}"), "    partial_criteria: []\n"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "invalid-value", "{found:?}");
        // `b` covers `a`: `before` can never hold; `only_after` only without any `b`.
        let rule = |relation: &str| {
            format!(
                "{SPEC}  - id: P2-02\n    tier: 2\n    instruction: x\n    severity: low\n    verification:\n      method: tool_sequence\n      evidence_sources: [trace_file]\n      rule: {{{relation}: {{a: {{tool: Bash}}, b: {{tool: [Bash, Write]}}}}}}\n"
            )
        };
        let found = codes(&rule("before"));
        assert!(found.iter().any(|(c, _)| c == "rule-contradiction"), "{found:?}");
        let found = codes(&rule("only_after"));
        assert!(found.iter().any(|(c, _)| c == "rule-vacuous"), "{found:?}");
        // Nor can `immediately_before`: the `a` right before the first `b` would be a `b`.
        let found = codes(&rule("immediately_before"));
        assert!(found.iter().any(|(c, _)| c == "rule-contradiction"), "{found:?}");
        let found = codes(
            &rule("immediately_before")
                .replace("a: {tool: Bash}, b: {tool: [Bash, Write]}", "a: {tool: [Bash, Write]}, b: {tool: Bash}"),
        );
        assert!(!found.iter().any(|(c, _)| c == "rule-contradiction"), "{found:?}");
        // Not the other way round: `b` narrower than `a` can hold.
        let found = codes(
            &rule("before")
                .replace("a: {tool: Bash}, b: {tool: [Bash, Write]}", "a: {tool: [Bash, Write]}, b: {tool: Bash}"),
        );
        assert!(!found.iter().any(|(c, _)| c == "rule-contradiction" || c == "rule-vacuous"), "{found:?}");
        // `tool: []` names nothing: its own error, not "any tool" (which would forbid every call).
        let found =
            codes(&rule("before").replace("before: {a: {tool: Bash}, b: {tool: [Bash, Write]}}", "never: {tool: []}"));
        let found: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
        assert!(found.contains(&"matcher-empty-names"), "{found:?}");
        assert!(
            !found.iter().any(|c| matches!(*c, "checkpoint-contradiction" | "matcher-matches-everything")),
            "{found:?}"
        );
    }

    #[test]
    fn previous_version_ids_are_immutable() {
        let previous: CheckpointSpec =
            serde_json::from_value(agentic_core::yaml::parse_yaml(SPEC).unwrap().value).unwrap();
        let renumbered = SPEC.replace("id: P2-01", "id: P2-02");
        let reused = SPEC.replace("Trigger CI on the PR", "Request a review");
        let removed = SPEC.split("  - id: P3-02").next().unwrap().replace("affects: [P3-02]", "affects: [P3-01]");
        let check = |text: &str| -> Vec<String> {
            let document = agentic_core::yaml::parse_yaml(text).unwrap();
            let current: CheckpointSpec =
                serde_json::from_value(document.value.clone()).unwrap_or_else(|_| previous.clone());
            lint_against_previous(&previous, &current, "new.yaml", &document.source_map)
                .iter()
                .map(|d| d.code.clone())
                .collect()
        };
        assert_eq!(check(SPEC), Vec::<String>::new());
        assert_eq!(check(&renumbered), vec!["id-renumbered"]);
        assert_eq!(check(&reused), vec!["id-reused"]);
        assert_eq!(check(&removed), vec!["id-removed"]);
        let lower = SPEC.replace(
            "checkpoints:\n",
            "checkpoints:\n  - id: P1-00\n    tier: 3\n    instruction: new\n    severity: low\n    verification:\n      method: content_analysis\n      evidence_sources: [pr_body]\n",
        );
        assert_eq!(check(&lower), vec!["id-not-appended"]);
        // The findings of `new` against `old`, both spec texts.
        let compare = |old: &str, new: &str| {
            let old: CheckpointSpec =
                serde_json::from_value(agentic_core::yaml::parse_yaml(old).unwrap().value).unwrap();
            let document = agentic_core::yaml::parse_yaml(new).unwrap();
            let current: CheckpointSpec = serde_json::from_value(document.value.clone()).unwrap();
            lint_against_previous(&old, &current, "new.yaml", &document.source_map)
        };
        // The next free number is past the new spec's own ids too: `P1-03` is taken here.
        let taken = lower.replace(
            "checkpoints:\n",
            "checkpoints:\n  - id: P1-03\n    tier: 3\n    instruction: newer\n    severity: low\n    verification:\n      method: content_analysis\n      evidence_sources: [pr_body]\n",
        );
        let found = compare(SPEC, &taken);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].hint.as_deref(), Some("new checkpoints take the next free number, `P1-04`"));
        // The previous highest id is named as written, and the next keeps its width.
        let wide = |text: &str| text.replace("P1-0", "P1-00");
        let found = compare(&wide(SPEC), &wide(&lower));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.ends_with("the previous highest `P1-001`"), "{}", found[0].message);
        assert_eq!(found[0].hint.as_deref(), Some("new checkpoints take the next free number, `P1-002`"));
        // The highest number there is has no next: said, not wrapped around (or a panic).
        let huge = |text: &str| wide(text).replace("P1-001", "P1-18446744073709551615");
        let found = compare(&huge(SPEC), &huge(&lower));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].hint.as_deref().is_some_and(|hint| hint.contains("the highest number there is")), "{found:?}");
        // A removed checkpoint is placed where it stood: at the previous checkpoint after it
        // that is still there, or (the last one removed) at the one before it.
        let middle_start = SPEC.find("  - id: P2-01").unwrap();
        let middle_end = SPEC.find("  - id: P3-01").unwrap();
        let without_middle = format!("{}{}", &SPEC[..middle_start], &SPEC[middle_end..]);
        let found = compare(SPEC, &without_middle);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].message, "checkpoint `P2-01` was removed (it stood before `P3-01`)");
        assert_eq!(found[0].pointer.as_deref(), Some("/checkpoints/1"));
        let found = compare(SPEC, &removed);
        assert_eq!(found[0].message, "checkpoint `P3-02` was removed (it stood after `P3-01`)");
        assert_eq!(found[0].pointer.as_deref(), Some("/checkpoints/2"));
        // `P1-+7` is no number: not compared as 7.
        assert_eq!(split_id("P1-+7"), None);
        assert_eq!(split_id("P1-007"), Some(("P1", 7)));
        // Another workflow's spec is compared too, with a warning that says so.
        let workflow = &SPEC[SPEC.find("workflow:").unwrap()..];
        let workflow = workflow.lines().next().unwrap();
        let other = SPEC.replacen(workflow, "workflow: \"another\"", 1);
        assert_eq!(check(&other), vec!["previous-other-workflow"]);
    }

    /// A spec of tier-2 checkpoints `P2-01`, `P2-02`, ... with these rules (flow YAML), each
    /// optionally with an `applies_when` condition.
    fn rules_spec(rules: &[(&str, Option<&str>)]) -> String {
        let mut text = "workflow: w\nspec_version: \"1.0.0\"\ncheckpoints:\n".to_owned();
        for (idx, (rule, applies_when)) in rules.iter().enumerate() {
            text.push_str(&format!(
                "  - id: P2-{:02}\n    tier: 2\n    instruction: rule {idx}\n    severity: high\n    verification:\n      method: tool_sequence\n      evidence_sources: [trace_file]\n      rule: {rule}\n",
                idx + 1
            ));
            if let Some(condition) = applies_when {
                text.push_str(&format!("    applies_when: {condition}\n"));
            }
        }
        text
    }

    fn contradictions(rules: &[&str]) -> Vec<String> {
        let rules: Vec<(&str, Option<&str>)> = rules.iter().map(|rule| (*rule, None)).collect();
        load_spec(&rules_spec(&rules), "spec.yaml")
            .diagnostics
            .iter()
            .filter(|d| d.code == "checkpoint-contradiction")
            .map(|d| d.message.clone())
            .collect()
    }

    /// A scoped `never` forbids what a rule of the same scope needs; it leaves alone rules of
    /// another scope and unscoped ones (their calls may be outside its scope).
    #[test]
    fn a_scoped_never_contradicts_rules_of_the_same_scope_only() {
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash}, within: {tool: Task}}",
                "{count: {of: {tool: Bash}, at_least: 1}, within: {tool: Task}}"
            ]),
            vec![
                "checkpoint `P2-02` needs Bash, which checkpoint `P2-01` forbids with `never` in the same `within` scope"
            ]
        );
        // A scope written another way, or inside the forbidding one (every such span is one).
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash}, within: {tool: Task}}",
                "{count: {of: {tool: Bash}, at_least: 1}, within: {tool: [Task]}}"
            ])
            .len(),
            1
        );
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash}, within: {tool: Task}}",
                "{count: {of: {tool: Bash}, at_least: 1}, within: {tool: Task, args: {subagent_type: {equals: rev}}}}"
            ]),
            vec![
                "checkpoint `P2-02` needs Bash, which checkpoint `P2-01` forbids with `never` in a `within` scope around this rule's"
            ]
        );
        for other in [
            "{count: {of: {tool: Bash}, at_least: 1}}",
            "{count: {of: {tool: Bash}, at_least: 1}, within: {agent: reviewer}}",
            // A wider scope than the `never`'s: its calls may be outside the narrower one.
            "{count: {of: {tool: Bash}, at_least: 1}, within: {tool: \"*\"}}",
        ] {
            assert!(contradictions(&["{never: {tool: Bash}, within: {tool: Task}}", other]).is_empty(), "{other}");
        }
        // An unscoped `never` forbids what any scoped rule needs, as before.
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash}}",
                "{count: {of: {tool: Bash}, at_least: 1}, within: {tool: Task}}"
            ])
            .len(),
            1
        );
    }

    /// `count: {at_most: 0}` forbids like `never`; a rule that both needs and forbids a call
    /// is reported once, as its own bounds.
    #[test]
    fn a_count_of_at_most_zero_forbids_like_never() {
        assert_eq!(
            contradictions(&["{count: {of: {tool: Bash}, at_most: 0}}", "{count: {of: {tool: Bash}, at_least: 1}}"]),
            vec!["checkpoint `P2-02` needs Bash, which checkpoint `P2-01` forbids with `count: {at_most: 0}`"]
        );
        assert_eq!(
            contradictions(&[
                "{count: {of: {tool: \"*\"}, at_most: 0}}",
                "{before: {a: {tool: Read}, b: {tool: Bash}}}"
            ])
            .len(),
            2
        );
        assert!(
            contradictions(&["{count: {of: {tool: Bash}, at_most: 1}}", "{count: {of: {tool: Bash}, at_least: 1}}"])
                .is_empty()
        );
        assert!(contradictions(&["{count: {of: {tool: Bash}, at_least: 1, at_most: 0}}"]).is_empty());
    }

    /// Two `before` rules asking for opposite orders can never both pass.
    #[test]
    fn before_rules_in_opposite_orders_are_a_contradiction() {
        assert_eq!(
            contradictions(&[
                "{before: {a: {tool: Read}, b: {tool: Write}}}",
                "{before: {a: {tool: Write}, b: {tool: Read}}}"
            ]),
            vec![
                "checkpoint `P2-02` needs the first Write before the first Read, and checkpoint `P2-01` needs the opposite order"
            ]
        );
        // Narrower `a` matchers are still covered by the other's `b`.
        assert_eq!(
            contradictions(&[
                "{before: {a: {tool: Read, args: {file_path: {glob: \"**/skill.md\"}}}, b: {tool: Write}}}",
                "{before: {a: {tool: Write}, b: {tool: [Read, Grep]}}}",
            ])
            .len(),
            1
        );
        // One scope written two ways is one scope.
        assert_eq!(
            contradictions(&[
                "{before: {a: {tool: Read}, b: {tool: Write}}, within: {tool: Task}}",
                "{before: {a: {tool: Write}, b: {tool: Read}}, within: {tool: [Task]}}",
            ])
            .len(),
            1
        );
        for pair in [
            // A narrower `b` may be met by other calls than the other rule's `a`.
            [
                "{before: {a: {tool: Read}, b: {tool: Write}}}",
                "{before: {a: {tool: Write}, b: {tool: Read, args: {file_path: {contains: x}}}}}",
            ],
            // Different scopes.
            [
                "{before: {a: {tool: Read}, b: {tool: Write}}, within: {tool: Task}}",
                "{before: {a: {tool: Write}, b: {tool: Read}}}",
            ],
            // The same order twice.
            ["{before: {a: {tool: Read}, b: {tool: Write}}}", "{before: {a: {tool: Read}, b: {tool: Write}}}"],
        ] {
            assert!(contradictions(&pair).is_empty(), "{pair:?}");
        }
    }

    #[test]
    fn a_never_that_covers_a_required_matcher_is_a_contradiction() {
        let needs_deploy = "{count: {of: {tool: Bash, args: {command: {contains: deploy}}}, at_least: 1}}";
        let found = contradictions(&["{never: {tool: Bash}}", needs_deploy]);
        assert_eq!(
            found,
            vec![
                "checkpoint `P2-02` needs Bash(command contains \"deploy\"), which checkpoint `P2-01` forbids with `never: Bash`"
            ]
        );
        // Wildcards and name lists that contain every name of the required matcher.
        assert_eq!(contradictions(&["{never: {tool: \"*\"}}", needs_deploy]).len(), 1);
        assert_eq!(contradictions(&["{never: {tool: \"B*\"}}", needs_deploy]).len(), 1);
        assert_eq!(contradictions(&["{never: {}}", needs_deploy]).len(), 1);
        assert_eq!(
            contradictions(&["{never: {tool: \"*\"}}", "{count: {of: {tool: \"mcp__*\"}, at_least: 2}}"]).len(),
            1
        );
        assert_eq!(
            contradictions(&[
                "{never: {tool: [Read, Bash, Write]}}",
                "{before: {a: {tool: Read}, b: {tool: [Bash, Write]}}}"
            ])
            .len(),
            2
        );
        // The forbidden argument checks are a subset of the required ones.
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash, args: {command: {contains: rm}}}}",
                "{count: {of: {tool: Bash, args: {command: {contains: rm, regex: \"^sudo\"}, cwd: {equals: /}}}, at_least: 1}}"
            ])
            .len(),
            1
        );
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash, args_text: {contains: rm}}}",
                "{count: {of: {tool: Bash, args_text: {contains: rm, regex: x}}, at_least: 1}}"
            ])
            .len(),
            1
        );
        // `immediately_before` needs its `a` too: a passing rule has a `b`, right after an `a`.
        assert_eq!(
            contradictions(&["{never: {tool: Read}}", "{immediately_before: {a: {tool: Read}, b: {tool: Bash}}}"]),
            vec!["checkpoint `P2-02` needs Read, which checkpoint `P2-01` forbids with `never`"]
        );
        // A scoped rule still needs its calls in the trace, which the unscoped `never` sees.
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash}}",
                "{count: {of: {tool: Bash}, at_least: 1}, within: {agent: dev}}"
            ])
            .len(),
            1
        );
        // Identical `applies_when`: whenever one applies, so does the other.
        let same_condition = rules_spec(&[
            ("{never: {tool: Bash}}", Some("{path: pr.draft, equals: true}")),
            ("{count: {of: {tool: Bash}, at_least: 1}}", Some("{path: pr.draft, equals: true}")),
        ]);
        let found = codes(&same_condition);
        assert!(found.iter().any(|(c, _)| c == "checkpoint-contradiction"), "{found:?}");
        // The same condition with its path written another way is the same condition.
        let same_condition = rules_spec(&[
            ("{never: {tool: Bash}}", Some("{path: pr.draft, equals: true}")),
            ("{count: {of: {tool: Bash}, at_least: 1}}", Some("{all: [{path: 'pr[\"draft\"]', equals: true}]}")),
        ]);
        let found = codes(&same_condition);
        assert!(!found.iter().any(|(c, _)| c == "checkpoint-contradiction"), "`all` is another condition: {found:?}");
        let same_condition = rules_spec(&[
            ("{never: {tool: Bash}}", Some("{path: pr.draft, equals: true}")),
            ("{count: {of: {tool: Bash}, at_least: 1}}", Some("{path: 'pr[\"draft\"]', equals: true}")),
        ]);
        let found = codes(&same_condition);
        assert!(found.iter().any(|(c, _)| c == "checkpoint-contradiction"), "{found:?}");
    }

    #[test]
    fn a_never_that_may_miss_a_required_call_is_no_contradiction() {
        let none = Vec::<String>::new();
        // The `never` is narrower (its argument check) or just different.
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash, args: {command: {contains: rm}}}}",
                "{count: {of: {tool: Bash}, at_least: 1}}"
            ]),
            none
        );
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash, args: {command: {contains: rm}}}}",
                "{count: {of: {tool: Bash, args: {command: {contains: rmdir}}}, at_least: 1}}"
            ]),
            none
        );
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash, args_text: {contains: rm}}}",
                "{count: {of: {tool: Bash, args: {command: {contains: rm}}}, at_least: 1}}"
            ]),
            none
        );
        assert_eq!(
            contradictions(&["{never: {tool: [Bash, Read]}}", "{count: {of: {tool: [Bash, Write]}, at_least: 1}}"]),
            none
        );
        // `*` stays within one `/` segment; a name-less matcher matches names with `/` too.
        assert_eq!(contradictions(&["{never: {tool: \"*\"}}", "{count: {of: {}, at_least: 1}}"]), none);
        assert_eq!(contradictions(&["{never: {tool: \"*\"}}", "{count: {of: {tool: \"a/*\"}, at_least: 1}}"]), none);
        assert_eq!(
            contradictions(&["{never: {tool: \"mcp__*\"}}", "{count: {of: {tool: \"mcp*\"}, at_least: 1}}"]),
            none
        );
        // Agents are not tool calls; `Bash|Write` is one name, not two.
        assert_eq!(contradictions(&["{never: {agent: Bash}}", "{count: {of: {tool: Bash}, at_least: 1}}"]), none);
        assert_eq!(
            contradictions(&[
                "{never: {tool: \"Bash|Write\"}}",
                "{before: {a: {tool: Read}, b: {tool: [Bash, Write]}}}"
            ]),
            none
        );
        // Rules that do not need the call, and a scoped `never`.
        assert_eq!(
            contradictions(&["{never: {tool: Bash}}", "{only_after: {a: {tool: Read}, b: {tool: Bash}}}"]),
            none
        );
        assert_eq!(contradictions(&["{never: {tool: Bash}}", "{count: {of: {tool: Bash}, at_least: 0}}"]), none);
        assert_eq!(contradictions(&["{never: {tool: Bash}}", "{count: {of: {tool: Bash}, at_most: 3}}"]), none);
        assert_eq!(
            contradictions(&[
                "{never: {tool: Bash}, within: {agent: dev}}",
                "{count: {of: {tool: Bash}, at_least: 1}}"
            ]),
            none
        );
        // Different `applies_when`: one of them may be NOT_APPLICABLE whenever the other applies.
        let exclusive = rules_spec(&[
            ("{never: {tool: Bash}}", Some("{path: pr.draft, equals: true}")),
            ("{count: {of: {tool: Bash}, at_least: 1}}", Some("{path: pr.draft, equals: false}")),
        ]);
        let load = load_spec(&exclusive, "spec.yaml");
        assert!(load.diagnostics.is_empty(), "{:?}", load.diagnostics);
    }

    fn everything_warnings(rule: &str) -> Vec<(String, String)> {
        load_spec(&rules_spec(&[(rule, None)]), "spec.yaml")
            .diagnostics
            .iter()
            .filter(|d| d.code == "matcher-matches-everything")
            .map(|d| (d.message.clone(), d.pointer.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn matchers_that_match_every_call_through_a_pattern_warn() {
        let every = |key: &str| {
            vec![("this matcher matches every tool call".to_owned(), format!("/checkpoints/0/verification/rule/{key}"))]
        };
        assert_eq!(everything_warnings("{never: {}}"), every("never"));
        assert_eq!(everything_warnings("{never: {tool: \"*\"}}"), every("never"));
        assert_eq!(everything_warnings("{never: {tool: \"**\"}}"), every("never"));
        assert_eq!(everything_warnings("{never: {tool: [Bash, \"*\"]}}"), every("never"));
        assert_eq!(everything_warnings("{count: {of: {args_text: {regex: \".*\"}}, at_most: 3}}"), every("count/of"));
        assert_eq!(everything_warnings("{count: {of: {args_text: {regex: \"^.*$\"}}, at_most: 3}}"), every("count/of"));
        assert_eq!(
            everything_warnings("{before: {a: {tool: Read}, b: {tool: \"*\", args_text: {regex: \"(?s)^.*$\"}}}}"),
            every("before/b")
        );
        assert_eq!(
            everything_warnings("{count: {of: {tool: Bash}, at_least: 1}, within: {tool: \"*\"}}"),
            every("within")
        );
        assert_eq!(
            everything_warnings("{never: {args: {command: {regex: \".*\"}}}}"),
            vec![(
                "this matcher matches every tool call (that has a `command` argument)".to_owned(),
                "/checkpoints/0/verification/rule/never".to_owned()
            )]
        );
        // Constrained matchers, and agents (`within: {agent: "*"}` is any sub-agent).
        let none = Vec::<(String, String)>::new();
        assert_eq!(everything_warnings("{never: {tool: \"*\", args: {command: {contains: rm}}}}"), none);
        assert_eq!(everything_warnings("{never: {tool: Bash, args_text: {regex: \".*\"}}}"), none);
        assert_eq!(everything_warnings("{never: {args_text: {regex: \".*x\"}}}"), none);
        assert_eq!(everything_warnings("{never: {args_text: {regex: \".*\", contains: rm}}}"), none);
        assert_eq!(everything_warnings("{never: {tool: \"mcp__*\"}}"), none);
        assert_eq!(everything_warnings("{count: {of: {tool: Bash}, at_least: 1}, within: {agent: \"*\"}}"), none);
    }

    #[test]
    fn only_regexes_that_hold_on_any_text_match_everything() {
        let regex = |pattern: &str| TextMatch { regex: Some(pattern.to_owned()), ..TextMatch::default() };
        for pattern in ["", ".*", "^.*", ".*$", "(?s)^.*$", "(?m)^.*$", "(?i).*"] {
            assert!(text_matches_everything(&regex(pattern), true), "{pattern}");
            let compiled = regex::Regex::new(pattern).unwrap();
            for text in ["", "a", "a\nb", "\n", "x\n"] {
                assert!(compiled.is_match(text), "{pattern} on {text:?}");
            }
        }
        // `^.*$` misses text with a line break: a warning may say "every call", a
        // contradiction may not rely on it.
        assert!(!regex::Regex::new("^.*$").unwrap().is_match("a\nb"));
        assert!(text_matches_everything(&regex("^.*$"), false));
        assert!(!text_matches_everything(&regex("^.*$"), true));
        for pattern in [".+", "^$", "(?-s)^.*$", "(?s:.*)x", "a*b"] {
            assert!(!text_matches_everything(&regex(pattern), false), "{pattern}");
        }
    }

    #[test]
    fn swapped_and_cycled_ids_are_renumbered_not_reused() {
        let previous: CheckpointSpec =
            serde_json::from_value(agentic_core::yaml::parse_yaml(SPEC).unwrap().value).unwrap();
        let check = |text: &str| -> Vec<(String, String)> {
            let document = agentic_core::yaml::parse_yaml(text).unwrap();
            let current: CheckpointSpec = serde_json::from_value(document.value.clone()).unwrap();
            lint_against_previous(&previous, &current, "new.yaml", &document.source_map)
                .iter()
                .map(|d| (d.code.clone(), d.message.clone()))
                .collect()
        };
        let renumbered = |from: &str, to: &str| {
            ("id-renumbered".to_owned(), format!("checkpoint `{from}` was renumbered to `{to}`"))
        };
        // Two checkpoints trade ids.
        let swapped =
            SPEC.replace("id: P1-01", "id: TMP").replace("id: P3-02", "id: P1-01").replace("id: TMP", "id: P3-02");
        assert_eq!(check(&swapped), vec![renumbered("P1-01", "P3-02"), renumbered("P3-02", "P1-01")]);
        // Three ids in a cycle.
        let cycled = SPEC
            .replace("id: P1-01", "id: TMP")
            .replace("id: P3-01", "id: P1-01")
            .replace("id: P2-01", "id: P3-01")
            .replace("id: TMP", "id: P2-01");
        let mut found = check(&cycled);
        found.sort();
        assert_eq!(
            found,
            vec![renumbered("P1-01", "P2-01"), renumbered("P2-01", "P3-01"), renumbered("P3-01", "P1-01")]
        );
        // A checkpoint moved to a new id while its old id took a new instruction: both.
        let moved_and_reused = SPEC.replace("id: P3-02", "id: P3-03").replace(
            "checkpoints:\n",
            "checkpoints:\n  - id: P3-02\n    tier: 3\n    instruction: new\n    severity: low\n    verification:\n      method: content_analysis\n      evidence_sources: [pr_body]\n",
        ).replace("affects: [P3-02]", "affects: [P3-03]");
        let found: Vec<String> = check(&moved_and_reused).into_iter().map(|(code, _)| code).collect();
        assert_eq!(found, vec!["id-reused", "id-renumbered"]);
        // One instruction moved onto another's id, whose own instruction is gone.
        let taken_over = SPEC.split("  - id: P3-02").next().unwrap().replace("id: P3-01", "id: P3-02");
        let found = check(&taken_over);
        assert_eq!(
            found,
            vec![
                renumbered("P3-01", "P3-02"),
                (
                    "id-removed".to_owned(),
                    "checkpoint `P3-02` was removed (its id now holds the instruction of `P3-01`)".to_owned()
                )
            ]
        );
        // A tier change under the same id stays a reuse, even with a copy elsewhere.
        let retiered = format!(
            "{}  - id: P3-03\n    tier: 1\n    instruction: Trigger CI on the PR\n    severity: high\n    verification:\n      method: api_state\n      evidence_sources: [pr]\n      assert: {{path: pr.checks_run, gte: 1}}\n",
            SPEC.replace("    tier: 1\n    instruction: Trigger CI", "    tier: 3\n    instruction: Trigger CI")
        );
        let found: Vec<String> = check(&retiered).into_iter().map(|(code, _)| code).collect();
        assert_eq!(found, vec!["id-reused"]);
    }
}
