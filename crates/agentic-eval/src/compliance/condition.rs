//! Tier 1: state assertions over the evidence JSON, and the conditions that make an
//! environment constraint active or a checkpoint applicable.
//!
//! A [`Condition`] is either a combinator (`all`, `any`, `not`) or a check of one
//! [`EvidencePath`] with one or more operators, all of which must hold:
//!
//! ```yaml
//! assert:
//!   all:
//!     - path: git.branches
//!       contains: feature/login
//!     - path: pr.labels[*].name
//!       contains: ready-for-review
//!     - path: pr.title
//!       matches: "^feat(\\(.+\\))?: "
//!       length: {lte: 72}
//! ```
//!
//! Paths start with an evidence source name (the top-level key of the evidence JSON), then
//! `.key`, `[n]`, `["key.with.dots"]` or `[*]` (every element; the rest of the path is applied
//! to each and the results form a list, leaving out elements where it is missing or null). A path that does not resolve, or resolves to
//! `null`, is *missing*: every operator is false on a missing value except `exists: false`.

use agentic_core::{Diagnostic, Severity};
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;

/// A condition over the evidence, as written in YAML.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// Every sub-condition holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<Vec<Condition>>,
    /// At least one sub-condition holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any: Option<Vec<Condition>>,
    /// The sub-condition does not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not: Option<Box<Condition>>,
    /// The evidence path to check, for example `git.current_branch` or `pr.labels[*].name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The value equals this (numbers compare by value).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    /// The value is present and differs from this.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub not_equals: Option<Value>,
    /// `true`: the value is present and not null; `false`: it is missing or null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// A string contains this substring, a list contains this element, or a mapping has this key.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub contains: Option<Value>,
    /// A string matches this regular expression (searched, not anchored; use `^...$`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
    /// The value equals one of these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<Value>>,
    /// A number greater than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gt: Option<Number>,
    /// A number greater than or equal to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gte: Option<Number>,
    /// A number less than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lt: Option<Number>,
    /// A number less than or equal to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lte: Option<Number>,
    /// The length of a string (characters), list or mapping compares as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<LengthCheck>,
}

/// Numeric comparisons on a length; every given bound must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LengthCheck {
    /// The length is exactly this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<u64>,
    /// The length is greater than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gt: Option<u64>,
    /// The length is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gte: Option<u64>,
    /// The length is less than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lt: Option<u64>,
    /// The length is at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lte: Option<u64>,
}

/// Deserializes a present key (even `null`) as `Some`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// One step of an evidence path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(usize),
    /// Every list element (`[*]`).
    Each,
}

/// A parsed evidence path; its first segment is the evidence source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidencePath {
    /// The text as written.
    pub text: String,
    /// The segments; the first is always a [`PathSegment::Key`] naming the source.
    pub segments: Vec<PathSegment>,
}

impl EvidencePath {
    /// Parses `source.key[0]["odd.key"][*].leaf`.
    pub fn parse(text: &str) -> Result<EvidencePath, String> {
        let mut segments = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        let mut idx = 0;
        let mut expect_key = true;
        while idx < chars.len() {
            match chars[idx] {
                '.' => {
                    if expect_key {
                        return Err(format!("empty key at character {}", idx + 1));
                    }
                    expect_key = true;
                    idx += 1;
                }
                '[' => {
                    // A quoted key may hold `]` (and `.`): the bracket closes after the quote.
                    let mut from = idx + 1;
                    while chars.get(from) == Some(&' ') {
                        from += 1;
                    }
                    if let Some(&quote) = chars.get(from).filter(|c| matches!(c, '"' | '\'')) {
                        from = chars[from + 1..]
                            .iter()
                            .position(|c| *c == quote)
                            .map(|offset| from + 1 + offset)
                            .ok_or_else(|| format!("unclosed quote at character {}", from + 1))?;
                    }
                    let close = chars[from..]
                        .iter()
                        .position(|c| *c == ']')
                        .map(|offset| from + offset)
                        .ok_or_else(|| format!("unclosed `[` at character {}", idx + 1))?;
                    let inner: String = chars[idx + 1..close].iter().collect();
                    let inner = inner.trim();
                    if inner == "*" {
                        segments.push(PathSegment::Each);
                    } else if let Some(quoted) = inner
                        .strip_prefix('"')
                        .and_then(|rest| rest.strip_suffix('"'))
                        .or_else(|| inner.strip_prefix('\'').and_then(|rest| rest.strip_suffix('\'')))
                    {
                        segments.push(PathSegment::Key(quoted.to_owned()));
                    } else if let Ok(index) = inner.parse::<usize>() {
                        segments.push(PathSegment::Index(index));
                    } else {
                        return Err(format!("`[{inner}]` is not an index, `[*]` or a quoted key"));
                    }
                    if segments.len() == 1 {
                        return Err("a path starts with the evidence source name, not `[`".to_owned());
                    }
                    expect_key = false;
                    idx = close + 1;
                }
                _ => {
                    if !expect_key {
                        return Err(format!("expected `.` or `[` at character {}", idx + 1));
                    }
                    let start = idx;
                    while idx < chars.len() && chars[idx] != '.' && chars[idx] != '[' {
                        idx += 1;
                    }
                    segments.push(PathSegment::Key(chars[start..idx].iter().collect()));
                    expect_key = false;
                }
            }
        }
        if segments.is_empty() {
            return Err("the path is empty".to_owned());
        }
        if expect_key {
            return Err("the path ends with `.`".to_owned());
        }
        Ok(EvidencePath { text: text.to_owned(), segments })
    }

    /// The evidence source this path reads.
    pub fn source(&self) -> &str {
        match &self.segments[0] {
            PathSegment::Key(key) => key,
            _ => "",
        }
    }

    /// The value at this path, `None` when missing or null.
    pub fn resolve(&self, evidence: &Map<String, Value>) -> Option<Value> {
        let PathSegment::Key(source) = &self.segments[0] else { return None };
        let root = evidence.get(source)?;
        resolve_from(root, &self.segments[1..]).filter(|value| !value.is_null())
    }
}

fn resolve_from(value: &Value, segments: &[PathSegment]) -> Option<Value> {
    let Some((first, rest)) = segments.split_first() else { return Some(value.clone()) };
    match first {
        PathSegment::Key(key) => resolve_from(value.as_object()?.get(key)?, rest),
        PathSegment::Index(index) => resolve_from(value.as_array()?.get(*index)?, rest),
        PathSegment::Each => {
            let items = value.as_array()?;
            let mut found = Vec::new();
            for item in items {
                collect_each(item, rest, &mut found);
            }
            Some(Value::Array(found))
        }
    }
}

/// What one element of a `[*]` has at `segments`, added to `found`. An element where the
/// rest is missing or null has nothing there: left out. A further `[*]` adds each of its
/// elements' values, so `a[*].b[*].c` is one flat list, as in JSONPath (a list value at the
/// end of the path stays one value).
fn collect_each(value: &Value, segments: &[PathSegment], found: &mut Vec<Value>) {
    let Some((first, rest)) = segments.split_first() else {
        if !value.is_null() {
            found.push(value.clone());
        }
        return;
    };
    match first {
        PathSegment::Key(key) => {
            if let Some(next) = value.as_object().and_then(|object| object.get(key)) {
                collect_each(next, rest, found);
            }
        }
        PathSegment::Index(index) => {
            if let Some(next) = value.as_array().and_then(|items| items.get(*index)) {
                collect_each(next, rest, found);
            }
        }
        PathSegment::Each => {
            for item in value.as_array().into_iter().flatten() {
                collect_each(item, rest, found);
            }
        }
    }
}

/// A numeric comparison, exact for whole numbers of any size JSON has (see
/// [`compare_numbers`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Comparison {
    /// `>`.
    Gt(Number),
    /// `>=`.
    Gte(Number),
    /// `<`.
    Lt(Number),
    /// `<=`.
    Lte(Number),
    /// `==`.
    Eq(Number),
}

impl Comparison {
    fn bound(&self) -> &Number {
        match self {
            Comparison::Gt(bound)
            | Comparison::Gte(bound)
            | Comparison::Lt(bound)
            | Comparison::Lte(bound)
            | Comparison::Eq(bound) => bound,
        }
    }

    fn holds(&self, number: &Number) -> bool {
        let Some(order) = compare_numbers(number, self.bound()) else { return false };
        match self {
            Comparison::Gt(_) => order == Ordering::Greater,
            Comparison::Gte(_) => order != Ordering::Less,
            Comparison::Lt(_) => order == Ordering::Less,
            Comparison::Lte(_) => order != Ordering::Greater,
            Comparison::Eq(_) => order == Ordering::Equal,
        }
    }

    fn describe(&self) -> String {
        let sign = match self {
            Comparison::Gt(_) => ">",
            Comparison::Gte(_) => ">=",
            Comparison::Lt(_) => "<",
            Comparison::Lte(_) => "<=",
            Comparison::Eq(_) => "==",
        };
        format!("{sign} {}", number_text(self.bound()))
    }
}

/// A number as notes print it: whole numbers without a fraction (`2.0` as `2`).
fn number_text(number: &Number) -> String {
    match number.as_f64() {
        Some(float) if number.as_i128().is_none() && float.fract() == 0.0 && float.abs() < 1e15 => {
            format!("{}", float as i64)
        }
        _ => number.to_string(),
    }
}

/// The order of two JSON numbers by value: whole numbers exactly (an `f64` loses precision
/// past 2^53, and nanosecond timestamps and 64-bit ids are past it), a whole number against
/// a fraction exactly too, fractions as `f64`.
pub(crate) fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (a.as_i128(), b.as_i128()) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => whole_against_float(x, b.as_f64()?),
        (None, Some(y)) => whole_against_float(y, a.as_f64()?).map(Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// A number read as a float beyond 2^53, where floats skip whole numbers.
fn imprecise(number: &Number) -> bool {
    number.as_i128().is_none() && number.as_f64().is_some_and(|float| float.abs() >= 9_007_199_254_740_992.0)
}

fn whole_against_float(whole: i128, float: f64) -> Option<Ordering> {
    if float.is_nan() {
        return None;
    }
    // JSON's whole numbers fit in 64 bits: a float this far out is beyond all of them.
    if float >= 1e38 {
        return Some(Ordering::Less);
    }
    if float <= -1e38 {
        return Some(Ordering::Greater);
    }
    let truncated = float.trunc();
    Some(whole.cmp(&(truncated as i128)).then_with(|| {
        if float > truncated {
            Ordering::Less
        } else if float < truncated {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }))
}

/// One compiled operator.
#[derive(Debug, Clone)]
pub enum Operator {
    /// `equals`.
    Equals(Value),
    /// `not_equals`.
    NotEquals(Value),
    /// `exists`.
    Exists(bool),
    /// `contains`.
    Contains(Value),
    /// `matches`.
    Matches(Regex),
    /// `one_of`.
    OneOf(Vec<Value>),
    /// `gt`, `gte`, `lt`, `lte`.
    Compare(Comparison),
    /// `length`.
    Length(Vec<Comparison>),
}

/// A checked, ready-to-evaluate condition.
#[derive(Debug, Clone)]
pub enum CompiledCondition {
    /// Every one holds.
    All(Vec<CompiledCondition>),
    /// At least one holds.
    Any(Vec<CompiledCondition>),
    /// Does not hold.
    Not(Box<CompiledCondition>),
    /// Every operator holds on the value at `path`.
    Check {
        /// Where the value is.
        path: EvidencePath,
        /// What must hold.
        operators: Vec<Operator>,
    },
}

/// Whether a condition held, and why, in words for the report.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionOutcome {
    /// The verdict.
    pub holds: bool,
    /// Which values made it so.
    pub explanation: String,
}

impl CompiledCondition {
    /// Evaluates against the evidence (a map from source name to its JSON).
    pub fn evaluate(&self, evidence: &Map<String, Value>) -> ConditionOutcome {
        match self {
            CompiledCondition::All(items) => {
                let mut explanations = Vec::new();
                for item in items {
                    let outcome = item.evaluate(evidence);
                    if !outcome.holds {
                        return outcome;
                    }
                    explanations.push(outcome.explanation);
                }
                ConditionOutcome { holds: true, explanation: explanations.join("; ") }
            }
            CompiledCondition::Any(items) => {
                let mut explanations = Vec::new();
                for item in items {
                    let outcome = item.evaluate(evidence);
                    if outcome.holds {
                        return outcome;
                    }
                    explanations.push(outcome.explanation);
                }
                ConditionOutcome { holds: false, explanation: format!("none held: {}", explanations.join("; ")) }
            }
            CompiledCondition::Not(inner) => {
                let outcome = inner.evaluate(evidence);
                ConditionOutcome { holds: !outcome.holds, explanation: format!("not ({})", outcome.explanation) }
            }
            CompiledCondition::Check { path, operators } => {
                let value = path.resolve(evidence);
                for operator in operators {
                    if !operator_holds(operator, value.as_ref()) {
                        let why = value.as_ref().and_then(|value| {
                            kind_mismatch(operator, value).map(str::to_owned).or_else(|| look_alike(operator, value))
                        });
                        return ConditionOutcome {
                            holds: false,
                            explanation: format!(
                                "`{}` is {}; expected {}{}",
                                path.text,
                                describe_value(value.as_ref()),
                                describe_operator(operator),
                                why.map(|why| format!(" ({why})")).unwrap_or_default()
                            ),
                        };
                    }
                }
                let wanted: Vec<String> = operators.iter().map(describe_operator).collect();
                ConditionOutcome {
                    holds: true,
                    explanation: format!(
                        "`{}` is {} ({})",
                        path.text,
                        describe_value(value.as_ref()),
                        wanted.join(", ")
                    ),
                }
            }
        }
    }

    /// Every evidence path the condition reads.
    pub fn paths(&self) -> Vec<&EvidencePath> {
        let mut out = Vec::new();
        self.collect_paths(&mut out);
        out
    }

    fn collect_paths<'a>(&'a self, out: &mut Vec<&'a EvidencePath>) {
        match self {
            CompiledCondition::All(items) | CompiledCondition::Any(items) => {
                items.iter().for_each(|item| item.collect_paths(out))
            }
            CompiledCondition::Not(inner) => inner.collect_paths(out),
            CompiledCondition::Check { path, .. } => out.push(path),
        }
    }
}

/// JSON equality with numbers compared by value at every depth (`1` equals `1.0`, also inside
/// lists and objects, as evidence written by another language may spell them).
fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| values_equal(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(key, x)| y.get(key).is_some_and(|y| values_equal(x, y)))
        }
        _ => a == b,
    }
}

fn operator_holds(operator: &Operator, value: Option<&Value>) -> bool {
    let Some(value) = value else { return matches!(operator, Operator::Exists(false)) };
    match operator {
        Operator::Equals(expected) => values_equal(value, expected),
        Operator::NotEquals(expected) => !values_equal(value, expected),
        Operator::Exists(expected) => *expected,
        Operator::Contains(needle) => match (value, needle) {
            (Value::String(text), Value::String(part)) => text.contains(part.as_str()),
            // A null element counts as missing, as a null value does: `contains: null` never holds.
            (Value::Array(items), needle) if !needle.is_null() => items.iter().any(|item| values_equal(item, needle)),
            (Value::Object(map), Value::String(key)) => map.contains_key(key),
            _ => false,
        },
        Operator::Matches(regex) => value.as_str().is_some_and(|text| regex.is_match(text)),
        Operator::OneOf(options) => options.iter().any(|option| values_equal(value, option)),
        Operator::Compare(comparison) => value.as_number().is_some_and(|number| comparison.holds(number)),
        Operator::Length(comparisons) => {
            let length = match value {
                Value::String(text) => text.chars().count(),
                Value::Array(items) => items.len(),
                Value::Object(map) => map.len(),
                _ => return false,
            };
            let length = Number::from(length as u64);
            comparisons.iter().all(|comparison| comparison.holds(&length))
        }
    }
}

/// Why `operator` cannot hold on a value of this kind, when that is the reason it failed:
/// evidence written by another tool may hold `"5"` where the spec compares a number.
fn kind_mismatch(operator: &Operator, value: &Value) -> Option<&'static str> {
    match (operator, value) {
        (Operator::Contains(needle), Value::String(_)) if !needle.is_string() => {
            Some("a string contains text only: quote the value to look for its text")
        }
        (Operator::Contains(needle), Value::Object(_)) if !needle.is_string() => {
            Some("a mapping contains keys, which are text: quote the value")
        }
        (Operator::Contains(_), Value::Number(_) | Value::Bool(_)) => {
            Some("`contains` looks into text, lists and mappings; use `equals` for a single value")
        }
        (Operator::Matches(_), value) if !value.is_string() => {
            Some("`matches` applies to text; the value is not a string")
        }
        (Operator::Compare(_), Value::String(_)) => {
            Some("a comparison needs a number, and the value is a string; write the evidence as a JSON number")
        }
        (Operator::Compare(_), value) if !value.is_number() => Some("a comparison needs a number"),
        (Operator::Length(_), Value::Number(_) | Value::Bool(_)) => Some("`length` measures text, lists and mappings"),
        _ => None,
    }
}

/// For an `equals` between two strings that may read alike (characters beyond ASCII, such
/// as a letter with a combining accent against the precomposed one, or spaces around the
/// text): both spelled with escapes, so a reader sees how they differ.
fn look_alike(operator: &Operator, value: &Value) -> Option<String> {
    let (Operator::Equals(Value::String(expected)), Value::String(found)) = (operator, value) else { return None };
    let subtle = !found.is_ascii() || !expected.is_ascii() || found.trim() == expected.trim();
    let spelled = |text: &str| -> String {
        text.chars()
            .map(
                |c| if c.is_ascii_graphic() || c == ' ' { c.to_string() } else { format!("\\u{{{:x}}}", u32::from(c)) },
            )
            .collect()
    };
    subtle.then(|| format!("they differ: \"{}\" against \"{}\"", spelled(found), spelled(expected)))
}

fn describe_operator(operator: &Operator) -> String {
    match operator {
        Operator::Equals(value) => format!("equals {value}"),
        Operator::NotEquals(value) => format!("not_equals {value}"),
        Operator::Exists(true) => "exists".to_owned(),
        Operator::Exists(false) => "absent".to_owned(),
        Operator::Contains(value) => format!("contains {value}"),
        Operator::Matches(regex) => format!("matches {}", super::sequence::shown_regex(regex.as_str())),
        Operator::OneOf(values) => {
            format!("one_of [{}]", values.iter().map(Value::to_string).collect::<Vec<_>>().join(", "))
        }
        Operator::Compare(comparison) => comparison.describe(),
        Operator::Length(comparisons) => {
            format!("length {}", comparisons.iter().map(|c| c.describe()).collect::<Vec<_>>().join(" and "))
        }
    }
}

/// A short rendering of a value for notes.
pub(crate) fn describe_value(value: Option<&Value>) -> String {
    match value {
        None => "missing or null".to_owned(),
        Some(value) => {
            let text = value.to_string();
            if text.chars().count() > 80 {
                let short: String = text.chars().take(77).collect();
                format!("{short}...")
            } else {
                text
            }
        }
    }
}

/// Compiles a condition, reporting problems with JSON pointers under `pointer`.
pub(crate) fn compile_condition(
    condition: &Condition,
    pointer: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<CompiledCondition> {
    compile_nested(condition, pointer, false, diagnostics)
}

/// [`compile_condition`]; `in_all` for an item of an `all`, whose own `all` leaves the search
/// for contradictions to the outer one (which sees both levels).
fn compile_nested(
    condition: &Condition,
    pointer: &str,
    in_all: bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<CompiledCondition> {
    let forms = [condition.all.is_some(), condition.any.is_some(), condition.not.is_some(), condition.path.is_some()];
    let has_operator = condition.equals.is_some()
        || condition.not_equals.is_some()
        || condition.exists.is_some()
        || condition.contains.is_some()
        || condition.matches.is_some()
        || condition.one_of.is_some()
        || condition.gt.is_some()
        || condition.gte.is_some()
        || condition.lt.is_some()
        || condition.lte.is_some()
        || condition.length.is_some();
    match forms.iter().filter(|f| **f).count() {
        0 => {
            diagnostics.push(
                Diagnostic::error("condition-empty", "this condition has neither `path` nor `all`/`any`/`not`")
                    .at_pointer(pointer)
                    .with_hint("write `path: source.key` with an operator such as `equals:`, or combine with `all:`"),
            );
            return None;
        }
        1 => {}
        _ => {
            diagnostics.push(
                Diagnostic::error(
                    "condition-ambiguous",
                    "a condition has exactly one of `all`, `any`, `not` or `path`",
                )
                .at_pointer(pointer)
                .with_hint("nest the parts: `all: [{path: ...}, {any: [...]}]`"),
            );
            return None;
        }
    }
    if let Some(items) = condition.all.as_ref().or(condition.any.as_ref()) {
        let key = if condition.all.is_some() { "all" } else { "any" };
        if has_operator {
            diagnostics.push(
                Diagnostic::error("condition-ambiguous", format!("operators next to `{key}` have no path to check"))
                    .at_pointer(pointer)
                    .with_hint(format!("move them into an item of `{key}` with its own `path:`")),
            );
        }
        if items.is_empty() {
            diagnostics.push(
                Diagnostic::error("condition-empty", format!("`{key}` has no items"))
                    .at_pointer(format!("{pointer}/{key}"))
                    .with_hint("add at least one condition"),
            );
            return None;
        }
        let compiled: Vec<Option<CompiledCondition>> = items
            .iter()
            .enumerate()
            .map(|(idx, item)| compile_nested(item, &format!("{pointer}/{key}/{idx}"), key == "all", diagnostics))
            .collect();
        let compiled: Option<Vec<CompiledCondition>> = compiled.into_iter().collect();
        let compiled = compiled?;
        if key == "all" {
            if !in_all {
                detect_contradictions(&compiled, &format!("{pointer}/all"), diagnostics);
            }
            return Some(CompiledCondition::All(compiled));
        }
        return Some(CompiledCondition::Any(compiled));
    }
    if let Some(inner) = &condition.not {
        if has_operator {
            diagnostics.push(
                Diagnostic::error("condition-ambiguous", "operators next to `not` have no path to check")
                    .at_pointer(pointer)
                    .with_hint("move them inside `not:` with a `path:`"),
            );
        }
        // A condition that can never hold makes its `not` always hold: worth a warning, not an
        // error (and the other way round under a second `not`).
        let mut inner_diagnostics = Vec::new();
        let compiled = compile_condition(inner, &format!("{pointer}/not"), &mut inner_diagnostics);
        for mut diagnostic in inner_diagnostics {
            // Flipped where they were found (the inner pointer is the precise one).
            match diagnostic.code.as_str() {
                "condition-contradiction" => {
                    diagnostic.severity = Severity::Warning;
                    diagnostic.code = "condition-always-holds".to_owned();
                    diagnostic.message.push_str(", so the `not` around it always holds");
                    diagnostic.hint =
                        Some("a check that can never fail checks nothing; fix the condition inside `not`".to_owned());
                }
                "condition-always-holds" => {
                    diagnostic.severity = Severity::Error;
                    diagnostic.code = "condition-contradiction".to_owned();
                    diagnostic.message.push_str(", so the `not` around it never holds");
                    diagnostic.hint = Some("remove the double negation and fix the condition".to_owned());
                }
                _ => {}
            }
            diagnostics.push(diagnostic);
        }
        return compiled.map(|inner| CompiledCondition::Not(Box::new(inner)));
    }
    let path_text = condition.path.as_deref().unwrap_or_default();
    let path = match EvidencePath::parse(path_text) {
        Ok(path) => path,
        Err(reason) => {
            diagnostics.push(
                Diagnostic::error("invalid-path", format!("evidence path `{path_text}` is invalid: {reason}"))
                    .at_pointer(format!("{pointer}/path"))
                    .with_hint("write `source.key.sub`, `source.list[0]`, `source.list[*].name` or `source[\"a.b\"]`"),
            );
            return None;
        }
    };
    if !has_operator {
        diagnostics.push(
            Diagnostic::error("condition-without-operator", format!("`{path_text}` is read but nothing is checked"))
                .at_pointer(pointer)
                .with_hint(
                    "add an operator: equals, not_equals, exists, contains, matches, one_of, gt, gte, lt, lte, length",
                ),
        );
        return None;
    }
    let mut operators = Vec::new();
    // A missing or null value fails every operator but `exists: false`: `null` as a value
    // to compare with is never met.
    for (key, lists_null) in [
        ("equals", condition.equals.as_ref().is_some_and(Value::is_null)),
        ("one_of", condition.one_of.as_ref().is_some_and(|values| values.iter().any(Value::is_null))),
        ("contains", condition.contains.as_ref().is_some_and(Value::is_null)),
    ] {
        if lists_null {
            diagnostics.push(
                Diagnostic::warning(
                    "condition-null",
                    format!("`{key}` compares with null, which never matches: a null value counts as missing"),
                )
                .at_pointer(format!("{pointer}/{key}"))
                .with_hint("to check that the value is missing or null, write `exists: false`"),
            );
        }
    }
    if let Some(value) = &condition.equals {
        operators.push(Operator::Equals(value.clone()));
    }
    if let Some(value) = &condition.not_equals {
        operators.push(Operator::NotEquals(value.clone()));
    }
    if let Some(value) = condition.exists {
        operators.push(Operator::Exists(value));
    }
    if let Some(value) = &condition.contains {
        operators.push(Operator::Contains(value.clone()));
    }
    if let Some(pattern) = &condition.matches {
        match Regex::new(pattern) {
            Ok(regex) => operators.push(Operator::Matches(regex)),
            Err(error) => {
                diagnostics.push(
                    Diagnostic::error("invalid-regex", format!("`matches` pattern `{pattern}` is not a valid regex"))
                        .at_pointer(format!("{pointer}/matches"))
                        .with_hint(regex_problem(&error)),
                );
                return None;
            }
        }
    }
    if let Some(values) = &condition.one_of {
        if values.is_empty() {
            diagnostics.push(
                Diagnostic::error("condition-contradiction", "`one_of` is empty, so it can never hold")
                    .at_pointer(format!("{pointer}/one_of"))
                    .with_hint("list the allowed values"),
            );
        }
        operators.push(Operator::OneOf(values.clone()));
    }
    for (bound, make) in [
        (&condition.gt, Comparison::Gt as fn(Number) -> Comparison),
        (&condition.gte, Comparison::Gte),
        (&condition.lt, Comparison::Lt),
        (&condition.lte, Comparison::Lte),
    ] {
        if let Some(bound) = bound {
            operators.push(Operator::Compare(make(bound.clone())));
        }
    }
    if let Some(length) = &condition.length {
        let mut comparisons = Vec::new();
        for (bound, make) in [
            (length.equals, Comparison::Eq as fn(Number) -> Comparison),
            (length.gt, Comparison::Gt),
            (length.gte, Comparison::Gte),
            (length.lt, Comparison::Lt),
            (length.lte, Comparison::Lte),
        ] {
            if let Some(bound) = bound {
                comparisons.push(make(Number::from(bound)));
            }
        }
        if comparisons.is_empty() {
            diagnostics.push(
                Diagnostic::error("condition-without-operator", "`length` has no bound")
                    .at_pointer(format!("{pointer}/length"))
                    .with_hint("write for example `length: {gte: 1}`"),
            );
            return None;
        }
        // Lengths are whole numbers from 0: `gt: 4` means `gte: 5`, and `lt: 0` holds for none.
        let step = |bound: &Number, by: i128| {
            Number::from_i128(bound.as_i128().unwrap_or(0) + by).unwrap_or_else(|| bound.clone())
        };
        let whole: Vec<Comparison> = comparisons
            .iter()
            .map(|c| match c {
                Comparison::Gt(b) => Comparison::Gte(step(b, 1)),
                Comparison::Lt(b) => Comparison::Lte(step(b, -1)),
                other => other.clone(),
            })
            .chain([Comparison::Gte(Number::from(0))])
            .collect();
        if !interval_possible(&whole) {
            diagnostics.push(
                Diagnostic::error(
                    "condition-contradiction",
                    format!("the `length` bounds on `{path_text}` exclude every length"),
                )
                .at_pointer(format!("{pointer}/length"))
                .with_hint("check the bounds: they can never all hold"),
            );
        }
        operators.push(Operator::Length(comparisons));
    }
    let own: Vec<&Operator> = operators.iter().collect();
    report_contradictions(&path, contradiction_reasons(&own), pointer, diagnostics);
    if path.segments.contains(&PathSegment::Each) {
        check_list_operators(condition, path_text, pointer, diagnostics);
    }
    Some(CompiledCondition::Check { path, operators })
}

/// A `[*]` path reads a list (of what each element has), or nothing: an operator that
/// compares that list with one value, or reads it as text or a number, can never hold (or,
/// `not_equals`, always holds): "no check failed" written `checks[*].status: {not_equals:
/// failure}` would pass over a failed check.
fn check_list_operators(condition: &Condition, path_text: &str, pointer: &str, diagnostics: &mut Vec<Diagnostic>) {
    let scalar = |value: &Value| !value.is_array();
    let contains_hint = format!(
        "`{path_text}` is a list: to ask whether an element is the value, write `contains:`; to ask that none is, `not: {{path: \"{path_text}\", contains: ...}}` (quoted: inside `{{...}}`, `[` starts a list)"
    );
    let never = |key: &str, why: &str| {
        Diagnostic::error(
            "condition-contradiction",
            format!("`{path_text}` (a `[*]` path) is a list of what each element has, so `{key}` {why} can never hold"),
        )
        .at_pointer(format!("{pointer}/{key}"))
    };
    if condition.equals.as_ref().is_some_and(scalar) {
        diagnostics.push(never("equals", "with a single value").with_hint(contains_hint.clone()));
    }
    if condition.one_of.as_ref().is_some_and(|values| !values.is_empty() && values.iter().all(scalar)) {
        diagnostics.push(never("one_of", "with single values").with_hint(contains_hint.clone()));
    }
    if condition.matches.is_some() {
        diagnostics.push(never("matches", "(which reads text)").with_hint(
            "match one element (an index such as `[0]` in place of `[*]`), or list the values with `contains:`",
        ));
    }
    for (key, bound) in [("gt", &condition.gt), ("gte", &condition.gte), ("lt", &condition.lt), ("lte", &condition.lte)]
    {
        if bound.is_some() {
            diagnostics.push(never(key, "(which reads a number)").with_hint(
                "compare one element (an index such as `[0]` in place of `[*]`), or bound the count with `length:`",
            ));
        }
    }
    if condition.not_equals.as_ref().is_some_and(scalar) {
        diagnostics.push(
            Diagnostic::warning(
                "condition-always-holds",
                format!(
                    "`{path_text}` (a `[*]` path) is a list of what each element has, so `not_equals` with a single \
                     value holds whenever the list is there, whatever its elements"
                ),
            )
            .at_pointer(format!("{pointer}/not_equals"))
            .with_hint(contains_hint),
        );
    }
    if condition.exists == Some(true) {
        // The list is there even when no element has the key (a misspelled one too). Its own
        // code: it does hold when the list is missing, so under `not` it is no contradiction.
        diagnostics.push(
            Diagnostic::warning(
                "condition-list-exists",
                format!(
                    "`{path_text}` (a `[*]` path) is a list of what each element has, so `exists: true` holds \
                     whenever the list is there, even when no element has the key (a misspelled key passes)"
                ),
            )
            .at_pointer(format!("{pointer}/exists"))
            .with_hint(
                "to require that some element has it, write `length: {gte: 1}`; to check one element, use an index \
                 such as `[0]` in place of `[*]`",
            ),
        );
    }
}

/// What is wrong with a pattern, in one line: the regex crate's message ends with it
/// (`error: look-around, including look-ahead and look-behind, is not supported`), after the
/// pattern and a caret line.
pub(crate) fn regex_problem(error: &regex::Error) -> String {
    let text = error.to_string();
    text.lines().rfind(|line| !line.trim().is_empty()).unwrap_or(&text).trim().to_owned()
}

/// Whether some number satisfies every comparison.
fn interval_possible(comparisons: &[Comparison]) -> bool {
    // The tightest lower and upper bounds, each with whether it is open (`None`: unbounded).
    let mut low: Option<(&Number, bool)> = None;
    let mut high: Option<(&Number, bool)> = None;
    let above = |b: &Number, bound: Option<(&Number, bool)>| {
        bound.is_none_or(|(low, _)| compare_numbers(b, low) == Some(Ordering::Greater))
    };
    let below = |b: &Number, bound: Option<(&Number, bool)>| {
        bound.is_none_or(|(high, _)| compare_numbers(b, high) == Some(Ordering::Less))
    };
    let same = |b: &Number, bound: Option<(&Number, bool)>| {
        bound.is_some_and(|(other, _)| compare_numbers(b, other) == Some(Ordering::Equal))
    };
    for comparison in comparisons {
        match comparison {
            Comparison::Gt(b) if above(b, low) || same(b, low) => low = Some((b, true)),
            Comparison::Gte(b) if above(b, low) => low = Some((b, false)),
            Comparison::Lt(b) if below(b, high) || same(b, high) => high = Some((b, true)),
            Comparison::Lte(b) if below(b, high) => high = Some((b, false)),
            // A number that is equal to a bound either satisfies every comparison or none can.
            Comparison::Eq(b) => return comparisons.iter().all(|c| c.holds(b)),
            _ => {}
        }
    }
    match (low, high) {
        (Some((low, low_open)), Some((high, high_open))) => match compare_numbers(low, high) {
            Some(Ordering::Less) => true,
            // Past 2^53 a written number may not be the float it was read as (`1e29` and
            // `100000000000000000000000000002` read alike): no contradiction is claimed there.
            Some(Ordering::Equal) => (!low_open && !high_open) || imprecise(low),
            _ => false,
        },
        _ => true,
    }
}

/// Flags checks on the same path inside one `all` that can never hold together. The checks of
/// an `all` nested straight inside it count too (`all: [a, {all: [b]}]` is `all: [a, b]`),
/// paths are compared by their segments (`git.branch` is `git["branch"]`), and what a single
/// check contradicts on its own is left to that check's own report (said once).
fn detect_contradictions(items: &[CompiledCondition], pointer: &str, diagnostics: &mut Vec<Diagnostic>) {
    let mut checks: Vec<(&EvidencePath, &[Operator])> = Vec::new();
    collect_checks(items, &mut checks);
    // In order of first appearance: a path and the operators of each of its checks.
    let mut groups: Vec<(&EvidencePath, Vec<&[Operator]>)> = Vec::new();
    for (path, operators) in checks {
        match groups.iter_mut().find(|(seen, _)| seen.segments == path.segments) {
            Some((_, lists)) => lists.push(operators),
            None => groups.push((path, vec![operators])),
        }
    }
    for (path, lists) in groups.into_iter().filter(|(_, lists)| lists.len() > 1) {
        let operators: Vec<&Operator> = lists.iter().flat_map(|list| list.iter()).collect();
        let mut reasons = contradiction_reasons(&operators);
        let own: Vec<String> =
            lists.iter().flat_map(|list| contradiction_reasons(&list.iter().collect::<Vec<_>>())).collect();
        reasons.retain(|reason| !own.contains(reason));
        report_contradictions(path, reasons, pointer, diagnostics);
    }
}

/// One `condition-contradiction` error per reason the checks on `path` can never all hold.
fn report_contradictions(path: &EvidencePath, reasons: Vec<String>, pointer: &str, diagnostics: &mut Vec<Diagnostic>) {
    for reason in reasons {
        diagnostics.push(
            Diagnostic::error(
                "condition-contradiction",
                format!("the checks on `{}` can never all hold: {reason}", path.text),
            )
            .at_pointer(pointer)
            .with_hint("remove one of the conflicting checks, or use `any:` for alternatives"),
        );
    }
}

/// The checks of `items`, also inside `all`s nested in them (not inside `any` or `not`).
fn collect_checks<'a>(items: &'a [CompiledCondition], out: &mut Vec<(&'a EvidencePath, &'a [Operator])>) {
    for item in items {
        match item {
            CompiledCondition::Check { path, operators } => out.push((path, operators)),
            CompiledCondition::All(inner) => collect_checks(inner, out),
            _ => {}
        }
    }
}

/// Why operators on one path can never all hold (empty when they can).
fn contradiction_reasons(operators: &[&Operator]) -> Vec<String> {
    let mut reasons = Vec::new();
    let equals: Vec<&Value> =
        operators.iter().filter_map(|op| if let Operator::Equals(v) = op { Some(v) } else { None }).collect();
    // The distinct values it must equal, said in one reason.
    let mut distinct: Vec<&Value> = Vec::new();
    for value in &equals {
        if !distinct.iter().any(|seen| values_equal(seen, value)) {
            distinct.push(value);
        }
    }
    let equals_differ = distinct.len() > 1;
    if let [init @ .., last] = distinct.as_slice()
        && !init.is_empty()
    {
        let init: Vec<String> = init.iter().map(ToString::to_string).collect();
        let both = if init.len() == 1 { "both " } else { "all of " };
        reasons.push(format!("it must equal {both}{} and {last}", init.join(", ")));
    }
    for op in operators {
        match op {
            Operator::NotEquals(v) if equals.iter().any(|e| values_equal(e, v)) => {
                reasons.push(format!("it must equal and not equal {v}"))
            }
            Operator::OneOf(options) => {
                for expected in &equals {
                    if !options.iter().any(|o| values_equal(o, expected)) {
                        reasons.push(format!("it must equal {expected}, which is not in `one_of`"));
                    }
                }
            }
            _ => {}
        }
    }
    // One value it must equal: every other check must hold on that value.
    if let [value] = distinct.as_slice() {
        for op in operators {
            let failed = match op {
                Operator::Contains(needle) => Some(format!("`contains: {needle}`")),
                Operator::Matches(regex) => Some(format!("`matches: {}`", regex.as_str())),
                Operator::Length(_) => Some("its `length` bounds".to_owned()),
                // Numbers are compared with the numeric bounds below.
                Operator::Compare(_) if !value.is_number() => Some("a numeric comparison".to_owned()),
                _ => None,
            };
            if let Some(check) = failed.filter(|_| !operator_holds(op, Some(value))) {
                reasons.push(format!("it must equal {value}, which fails {check}"));
            }
        }
    }
    let absent = operators.iter().any(|op| matches!(op, Operator::Exists(false)));
    // `exists: true` beside `exists: false` is said as such, once.
    if absent && operators.iter().any(|op| matches!(op, Operator::Exists(true))) {
        reasons.push("it must both exist and be absent".to_owned());
    } else if absent && operators.iter().any(|op| !matches!(op, Operator::Exists(false) | Operator::NotEquals(_))) {
        reasons.push("it must be absent, yet another operator needs a value".to_owned());
    }
    let comparisons: Vec<Comparison> = operators
        .iter()
        .filter_map(|op| if let Operator::Compare(c) = op { Some(c.clone()) } else { None })
        .chain(equals.iter().filter_map(|v| v.as_number().cloned()).map(Comparison::Eq))
        .collect();
    // Two different `equals` were said above; their numbers need not be said again.
    if !equals_differ && comparisons.len() > 1 && !interval_possible(&comparisons) {
        reasons.push("its numeric bounds exclude every number".to_owned());
    }
    reasons.dedup();
    reasons
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn compile(yaml_like: Value) -> (Option<CompiledCondition>, Vec<Diagnostic>) {
        let condition: Condition = serde_json::from_value(yaml_like).unwrap();
        let mut diagnostics = Vec::new();
        let compiled = compile_condition(&condition, "/c", &mut diagnostics);
        (compiled, diagnostics)
    }

    fn evidence() -> Map<String, Value> {
        json!({
            "git": {"current_branch": "feature/login", "branches": ["main", "feature/login"], "dirty": false,
                     "recent_commits": [{"sha": "a1", "parents": 1}, {"sha": "b2", "parents": 2}]},
            "pr": {"title": "feat: login", "draft": true, "labels": [{"name": "ready"}], "checks": 3,
                   "meta": {"a.b": "dotted"}, "empty": null}
        })
        .as_object()
        .unwrap()
        .clone()
    }

    fn holds(condition: Value) -> bool {
        let (compiled, diagnostics) = compile(condition);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        compiled.unwrap().evaluate(&evidence()).holds
    }

    /// Bounds compare exactly past 2^53 (nanosecond timestamps, 64-bit ids), whole numbers
    /// against fractions too, and a note prints the bound as written.
    #[test]
    fn numeric_bounds_are_exact_for_large_whole_numbers() {
        let evidence = json!({"build": 9007199254740992u64, "t_ns": 1700000000000000001u64, "big": 18446744073709551615u64, "half": 2.5})
            .as_object()
            .unwrap()
            .clone();
        let holds = |condition: Value| {
            let (compiled, diagnostics) = compile(condition.clone());
            assert!(diagnostics.is_empty(), "{condition}: {diagnostics:?}");
            compiled.unwrap().evaluate(&evidence)
        };
        for (condition, expected) in [
            (json!({"path": "build", "gte": 9007199254740993u64}), false),
            (json!({"path": "build", "lt": 9007199254740993u64}), true),
            (json!({"path": "build", "equals": 9007199254740993u64}), false),
            (json!({"path": "t_ns", "gt": 1700000000000000000u64}), true),
            (json!({"path": "t_ns", "lte": 1700000000000000000u64}), false),
            (json!({"path": "big", "gt": 18446744073709551614u64}), true),
            (json!({"path": "big", "gt": -1}), true),
            (json!({"path": "big", "lt": 1.9e19}), true),
            (json!({"path": "build", "gt": 9007199254740991.0}), true),
            (json!({"path": "build", "lte": 9007199254740991.0}), false),
            (json!({"path": "half", "gt": 2}), true),
            (json!({"path": "half", "lt": 3}), true),
            (json!({"path": "half", "gte": 2.5, "lte": 2.5}), true),
            (json!({"path": "half", "equals": 2.5}), true),
        ] {
            assert_eq!(holds(condition.clone()).holds, expected, "{condition}");
        }
        let note = holds(json!({"path": "build", "gte": 9007199254740993u64})).explanation;
        assert!(note.contains(">= 9007199254740993"), "{note}");
        // Bounds that leave exactly one whole number are no contradiction.
        let (_, diagnostics) = compile(json!({"path": "build", "gt": 9007199254740992u64, "lte": 9007199254740993u64}));
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let (_, diagnostics) = compile(json!({"path": "build", "gt": 9007199254740993u64, "lt": 9007199254740993u64}));
        assert!(diagnostics.iter().any(|d| d.code == "condition-contradiction"), "{diagnostics:?}");
        // Beyond 64 bits numbers are floats, and two bounds that read alike may differ as written.
        let huge: Value =
            serde_json::from_str(r#"{"path": "build", "gt": 1e29, "lt": 100000000000000000000000000002}"#).unwrap();
        let (_, diagnostics) = compile(huge);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
    }

    /// An operator that cannot apply to the kind of value found says so in the note: the
    /// usual cause is evidence that writes a number as text, or a number where text was meant.
    #[test]
    fn a_failure_from_the_kind_of_value_says_why() {
        let evidence = json!({"v": "build 5", "n": "12", "m": {"5": 1}, "b": true}).as_object().unwrap().clone();
        let explain = |condition: Value| {
            let (compiled, diagnostics) = compile(condition);
            assert!(diagnostics.is_empty(), "{diagnostics:?}");
            let outcome = compiled.unwrap().evaluate(&evidence);
            assert!(!outcome.holds);
            outcome.explanation
        };
        let cases = [
            (json!({"path": "v", "contains": 5}), "a string contains text only: quote the value"),
            (json!({"path": "m", "contains": 5}), "a mapping contains keys, which are text"),
            (json!({"path": "b", "contains": "t"}), "use `equals` for a single value"),
            (json!({"path": "n", "gt": 3}), "a comparison needs a number, and the value is a string"),
            (json!({"path": "b", "matches": "t"}), "`matches` applies to text"),
            (json!({"path": "b", "length": {"gt": 0}}), "`length` measures text, lists and mappings"),
        ];
        for (condition, why) in cases {
            let explanation = explain(condition.clone());
            assert!(explanation.contains(why), "{condition}: {explanation}");
        }
        // A plain miss gives no such reason.
        assert!(!explain(json!({"path": "v", "contains": "7"})).contains('('));
    }

    #[test]
    fn every_operator_on_present_and_missing_values() {
        assert!(holds(json!({"path": "git.current_branch", "equals": "feature/login"})));
        assert!(!holds(json!({"path": "git.current_branch", "equals": "main"})));
        assert!(holds(json!({"path": "git.current_branch", "not_equals": "main"})));
        assert!(holds(json!({"path": "pr.checks", "equals": 3.0})));
        // Numbers compare by value inside lists and objects too.
        assert!(holds(json!({"path": "git.recent_commits[1]", "equals": {"sha": "b2", "parents": 2.0}})));
        assert!(holds(json!({"path": "git.recent_commits[*].parents", "equals": [1.0, 2]})));
        assert!(!holds(json!({"path": "git.recent_commits[*].parents", "not_equals": [1, 2.0]})));
        assert!(holds(json!({"path": "git.recent_commits", "contains": {"parents": 1.0, "sha": "a1"}})));
        assert!(holds(json!({"path": "git.recent_commits[*].parents", "one_of": [[1.0, 2.0]]})));
        assert!(!holds(json!({"path": "git.recent_commits[*].parents", "equals": [1, 2, 3]})));
        assert!(!holds(json!({"path": "git.recent_commits[1]", "equals": {"sha": "b2"}})));
        assert!(holds(json!({"path": "git.branches", "contains": "main"})));
        assert!(holds(json!({"path": "pr.title", "contains": "login"})));
        assert!(holds(json!({"path": "pr.meta", "contains": "a.b"})));
        assert!(holds(json!({"path": "pr.title", "matches": "^feat: "})));
        assert!(!holds(json!({"path": "pr.checks", "matches": "3"})));
        assert!(holds(json!({"path": "pr.draft", "one_of": [true, "yes"]})));
        assert!(holds(json!({"path": "pr.checks", "gt": 2, "lte": 3})));
        assert!(!holds(json!({"path": "pr.checks", "lt": 3})));
        assert!(holds(json!({"path": "git.branches", "length": {"equals": 2}})));
        assert!(holds(json!({"path": "pr.title", "length": {"lte": 72, "gte": 5}})));
        assert!(holds(json!({"path": "git.recent_commits[*].parents", "contains": 2})));
        assert!(holds(json!({"path": "git.recent_commits[1].sha", "equals": "b2"})));
        assert!(holds(json!({"path": "pr.meta[\"a.b\"]", "equals": "dotted"})));
        assert!(holds(json!({"path": "pr.labels[*].name", "contains": "ready"})));
        // `[*]` leaves out elements where the rest of the path is missing or null.
        let path = EvidencePath::parse("pr.labels[*].name").unwrap();
        let labels = json!({"pr": {"labels": [{"name": "bug"}, {"name": null}, {"x": 1}, 3, null]}});
        assert_eq!(path.resolve(labels.as_object().unwrap()), Some(json!(["bug"])));
        let every = EvidencePath::parse("pr.labels[*]").unwrap();
        assert_eq!(every.resolve(json!({"pr": {"labels": [1, null, 2]}}).as_object().unwrap()), Some(json!([1, 2])));
        // A `[*]` after a `[*]` gives one flat list; a list at the end of the path stays one
        // value.
        let nested = json!({"x": {"n": [{"b": [{"c": 1}, {"c": 2}]}, {"b": [{"c": 3}, {"d": 4}]}, {"b": 5}, {}]}});
        let nested = nested.as_object().unwrap();
        let flat = EvidencePath::parse("x.n[*].b[*].c").unwrap();
        assert_eq!(flat.resolve(nested), Some(json!([1, 2, 3])));
        let lists = EvidencePath::parse("x.n[*].b").unwrap();
        assert_eq!(lists.resolve(nested), Some(json!([[{"c": 1}, {"c": 2}], [{"c": 3}, {"d": 4}], 5])));
        let grid = json!({"g": [[1, 2], [3], 4, [null]]});
        assert_eq!(EvidencePath::parse("g[*][*]").unwrap().resolve(grid.as_object().unwrap()), Some(json!([1, 2, 3])));
        assert_eq!(EvidencePath::parse("g[*][0]").unwrap().resolve(grid.as_object().unwrap()), Some(json!([1, 3])));
        // Missing and null values: only `exists: false` holds.
        assert!(holds(json!({"path": "pr.nothing", "exists": false})));
        assert!(holds(json!({"path": "pr.empty", "exists": false})));
        assert!(!holds(json!({"path": "pr.nothing", "not_equals": "x"})));
        assert!(!holds(json!({"path": "issue.state", "exists": true})));
        assert!(holds(json!({"any": [{"path": "pr.draft", "equals": false}, {"path": "git.dirty", "equals": false}]})));
        assert!(holds(json!({"not": {"path": "git.dirty", "equals": true}})));
        assert!(!holds(json!({"all": [{"path": "pr.draft", "equals": true}, {"path": "git.dirty", "equals": true}]})));
    }

    #[test]
    fn explanations_name_the_value() {
        let (compiled, _) = compile(json!({"path": "git.current_branch", "equals": "main"}));
        let outcome = compiled.unwrap().evaluate(&evidence());
        assert_eq!(outcome.explanation, "`git.current_branch` is \"feature/login\"; expected equals \"main\"");
        // Two strings that read alike are spelled out.
        let (compiled, _) = compile(json!({"path": "pr.title", "equals": "caf\u{e9}"}));
        let evidence = json!({"pr": {"title": "cafe\u{301}"}}).as_object().unwrap().clone();
        let outcome = compiled.unwrap().evaluate(&evidence);
        assert!(!outcome.holds);
        assert!(
            outcome.explanation.ends_with("(they differ: \"cafe\\u{301}\" against \"caf\\u{e9}\")"),
            "{}",
            outcome.explanation
        );
    }

    #[test]
    fn paths_parse_and_reject_bad_syntax() {
        let path = EvidencePath::parse("a.b[0][*][\"c.d\"]").unwrap();
        let quoted = EvidencePath::parse("e[\"a]b\"]['x[0]'].c").unwrap();
        assert_eq!(
            quoted.segments,
            vec![
                PathSegment::Key("e".into()),
                PathSegment::Key("a]b".into()),
                PathSegment::Key("x[0]".into()),
                PathSegment::Key("c".into())
            ]
        );
        assert!(EvidencePath::parse("e[\"a]").unwrap_err().contains("unclosed quote"));
        // No escapes in a quoted key (docs/checkpoints.md): a backslash is itself, and the
        // other quote character holds a quote.
        let plain = EvidencePath::parse(r#"m["a\b"]['say "hi"']"#).unwrap();
        assert_eq!(plain.segments[1..], [PathSegment::Key(r"a\b".into()), PathSegment::Key(r#"say "hi""#.into())]);
        // The key ends at the quote before the first `]` after its second quote.
        let inner = EvidencePath::parse(r#"m['it's']['say "hi"]']"#).unwrap();
        assert_eq!(inner.segments[1..], [PathSegment::Key("it's".into()), PathSegment::Key(r#"say "hi"]"#.into())]);
        assert_eq!(path.segments.len(), 5);
        assert_eq!(path.source(), "a");
        for bad in ["", "a.", ".a", "a..b", "a[x]", "a[0", "[0]"] {
            assert!(EvidencePath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn static_contradictions_are_reported() {
        for condition in [
            json!({"all": [{"path": "a.x", "equals": 1}, {"path": "a.x", "equals": 2}]}),
            json!({"all": [{"path": "a.x", "equals": "v"}, {"path": "a.x", "not_equals": "v"}]}),
            json!({"path": "a.x", "gt": 5, "lt": 3}),
            json!({"path": "a.x", "exists": false, "equals": 3}),
            json!({"path": "a.x", "length": {"gt": 4, "lt": 5}}),
            // No length is below 0.
            json!({"path": "a.x", "length": {"lt": 0}}),
            json!({"path": "a.x", "equals": "q", "one_of": ["r", "s"]}),
            // A value it must equal that fails another check on the path.
            json!({"all": [{"path": "a.x", "equals": "ab"}, {"path": "a.x", "matches": "^z"}]}),
            json!({"all": [{"path": "a.x", "equals": "ab"}, {"path": "a.x", "length": {"equals": 3}}]}),
            json!({"all": [{"path": "a.x", "equals": "ab"}, {"path": "a.x", "contains": "q"}]}),
            json!({"all": [{"path": "a.x", "equals": "a"}, {"path": "a.x", "gt": 1}]}),
            json!({"path": "a.x", "equals": [1, 2], "contains": 3}),
        ] {
            let (_, diagnostics) = compile(condition.clone());
            assert!(diagnostics.iter().any(|d| d.code == "condition-contradiction"), "{condition}: {diagnostics:?}");
        }
        // Checks the value it must equal passes are fine.
        for condition in [
            json!({"all": [{"path": "a.x", "equals": "ab"}, {"path": "a.x", "matches": "^a"}, {"path": "a.x", "length": {"equals": 2}}, {"path": "a.x", "contains": "b"}]}),
            json!({"path": "a.x", "equals": [1, 2], "contains": 2, "length": {"gte": 2}}),
            json!({"all": [{"path": "a.x", "equals": 2}, {"path": "a.x", "gt": 1}]}),
        ] {
            let (_, diagnostics) = compile(condition.clone());
            assert!(diagnostics.is_empty(), "{condition}: {diagnostics:?}");
        }
        let (_, diagnostics) = compile(json!({"path": "a.x", "gte": 3, "lte": 3}));
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let (_, diagnostics) = compile(json!({"path": "a.x", "length": {"lte": 0}}));
        assert!(diagnostics.is_empty(), "an empty list has length 0: {diagnostics:?}");
        // `null` never matches (null is missing): a warning that says to use `exists: false`.
        for condition in [
            json!({"path": "a.x", "equals": null}),
            json!({"path": "a.x", "one_of": ["a", null]}),
            json!({"path": "a.x", "contains": null}),
        ] {
            let (compiled, diagnostics) = compile(condition.clone());
            assert!(compiled.is_some(), "{condition}");
            // A null element of a list is missing too: it does not answer `contains: null`.
            let nulls = json!({"a": {"x": [null, 1]}}).as_object().unwrap().clone();
            assert!(!compiled.unwrap().evaluate(&nulls).holds, "{condition}");
            assert_eq!(diagnostics.len(), 1, "{condition}: {diagnostics:?}");
            assert_eq!((diagnostics[0].code.as_str(), diagnostics[0].is_error()), ("condition-null", false));
            assert!(diagnostics[0].hint.as_deref().unwrap_or("").contains("exists: false"), "{diagnostics:?}");
        }
        // Said once: two different `equals` are not also "numeric bounds".
        let (_, diagnostics) = compile(json!({"all": [{"path": "a.x", "equals": 1}, {"path": "a.x", "equals": 2}]}));
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        // Three values in one `all`: one diagnostic naming them all.
        let (_, diagnostics) = compile(json!({"all": [
            {"path": "a.x", "equals": 1}, {"path": "a.x", "equals": 2}, {"path": "a.x", "equals": 1.0}, {"path": "a.x", "equals": 3}
        ]}));
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        assert!(diagnostics[0].message.ends_with("it must equal all of 1, 2 and 3"), "{diagnostics:?}");
        // A path spelled two ways is one path; an `all` inside an `all` is part of it; what one
        // check contradicts alone is said once, by that check.
        let (_, diagnostics) = compile(json!({"all": [
            {"path": "git.branch", "equals": "main", "not_equals": "main"},
            {"path": "git[\"branch\"]", "equals": "dev"},
            {"all": [{"path": "git.dirty", "equals": true}]},
            {"path": "git.dirty", "equals": false},
        ]}));
        let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "the checks on `git.branch` can never all hold: it must equal and not equal \"main\"",
                "the checks on `git.branch` can never all hold: it must equal both \"main\" and \"dev\"",
                "the checks on `git.dirty` can never all hold: it must equal both true and false",
            ],
            "{diagnostics:?}"
        );
        // Alternatives are not contradictions, nor are checks of different paths.
        for condition in [
            json!({"all": [{"path": "a.x", "equals": 1}, {"any": [{"path": "a.x", "equals": 2}]}]}),
            json!({"all": [{"path": "a.x", "equals": 1}, {"not": {"path": "a.x", "equals": 2}}]}),
            json!({"all": [{"path": "a.x", "equals": 1}, {"all": [{"path": "a.y", "equals": 2}]}]}),
            json!({"all": [{"path": "a[0]", "equals": 1}, {"path": "a[1]", "equals": 2}]}),
        ] {
            let (_, diagnostics) = compile(condition.clone());
            assert!(diagnostics.is_empty(), "{condition}: {diagnostics:?}");
        }
        // Under `not` a contradiction always holds: a warning; under two, an error again.
        let contradiction = json!({"all": [{"path": "a.x", "equals": 1}, {"path": "a.x", "equals": 2}]});
        let (compiled, diagnostics) = compile(json!({"not": contradiction}));
        assert!(compiled.is_some());
        let codes: Vec<(&str, bool)> = diagnostics.iter().map(|d| (d.code.as_str(), d.is_error())).collect();
        assert_eq!(codes, vec![("condition-always-holds", false)], "{diagnostics:?}");
        assert_eq!(diagnostics[0].pointer.as_deref(), Some("/c/not/all"), "{diagnostics:?}");
        let (_, diagnostics) = compile(json!({"not": {"not": contradiction}}));
        let codes: Vec<(&str, bool)> = diagnostics.iter().map(|d| (d.code.as_str(), d.is_error())).collect();
        assert_eq!(codes, vec![("condition-contradiction", true)], "{diagnostics:?}");
    }

    /// A `[*]` path reads a list: operators that compare it with one value, or read text or
    /// a number, can never hold, and `not_equals` with one value always holds.
    #[test]
    fn list_paths_with_single_value_operators_are_reported() {
        let cases = [
            (json!({"path": "ci.checks[*].status", "not_equals": "failure"}), vec![("condition-always-holds", false)]),
            (json!({"path": "ci.checks[*].status", "equals": "success"}), vec![("condition-contradiction", true)]),
            (json!({"path": "ci.checks[*].status", "one_of": ["a", "b"]}), vec![("condition-contradiction", true)]),
            (json!({"path": "ci.checks[*].status", "matches": "^ok$"}), vec![("condition-contradiction", true)]),
            (
                json!({"path": "ci.checks[*].took", "gt": 1, "lte": 5}),
                vec![("condition-contradiction", true), ("condition-contradiction", true)],
            ),
            // Whether elements have the key is not what `exists: true` asks of a list.
            (json!({"path": "ci.checks[*].statsu", "exists": true}), vec![("condition-list-exists", false)]),
            (json!({"not": {"path": "ci.checks[*].status", "exists": true}}), vec![("condition-list-exists", false)]),
            (json!({"path": "ci.checks[*].status", "exists": false}), vec![]),
            // Under `not`: flipped like any other.
            (
                json!({"not": {"path": "ci.checks[*].status", "equals": "success"}}),
                vec![("condition-always-holds", false)],
            ),
        ];
        for (condition, expected) in cases {
            let (compiled, diagnostics) = compile(condition.clone());
            assert!(compiled.is_some(), "{condition}");
            let codes: Vec<(&str, bool)> = diagnostics.iter().map(|d| (d.code.as_str(), d.is_error())).collect();
            assert_eq!(codes, expected, "{condition}: {diagnostics:?}");
        }
        assert!(
            compile(json!({"path": "ci.checks[*].status", "not_equals": "failure"})).1[0]
                .hint
                .as_deref()
                .is_some_and(|hint| hint.contains("contains"))
        );
        // Operators that read a list, and values that are lists, are fine.
        for condition in [
            json!({"path": "ci.checks[*].status", "contains": "failure"}),
            json!({"path": "ci.checks[*].status", "equals": ["success", "success"]}),
            json!({"path": "ci.checks[*].status", "not_equals": []}),
            json!({"path": "ci.checks[*].status", "one_of": [["success"], []]}),
            json!({"path": "ci.checks[*].status", "length": {"gte": 1}}),
            json!({"path": "ci.checks[0].status", "equals": "success"}),
        ] {
            let (_, diagnostics) = compile(condition.clone());
            assert!(diagnostics.is_empty(), "{condition}: {diagnostics:?}");
        }
    }

    #[test]
    fn malformed_conditions_are_reported() {
        let cases = [
            (json!({}), "condition-empty"),
            (json!({"path": "a.x"}), "condition-without-operator"),
            (json!({"path": "a.x", "all": [{"path": "a.y", "exists": true}]}), "condition-ambiguous"),
            (json!({"path": "a.x", "matches": "("}), "invalid-regex"),
            (json!({"path": "a..x", "exists": true}), "invalid-path"),
            (json!({"all": []}), "condition-empty"),
        ];
        for (condition, code) in cases {
            let (_, diagnostics) = compile(condition.clone());
            assert!(diagnostics.iter().any(|d| d.code == code), "{condition}: {diagnostics:?}");
        }
    }
}
