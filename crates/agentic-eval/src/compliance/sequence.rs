//! Tier 2: sequence assertions over a trace's canonical events, in one streaming pass.
//!
//! A rule names event *matchers* (a tool or agent name glob, argument matchers) and one
//! relation between them:
//!
//! | rule | passes when |
//! |---|---|
//! | `before: {a, b}` | both occur and the first `a` comes before the first `b` |
//! | `only_after: {a, b}` | every `b` has some `a` before it (no `b` at all passes) |
//! | `immediately_before: {a, b}` | at least one `b` occurs and the call right before every `b` is an `a` |
//! | `never: m` | nothing matches `m` |
//! | `count: {of: m, at_least, at_most}` | the number of matches is within the bounds |
//!
//! `within: m` limits a rule to the span subtree under events matching `m` (a sub-agent):
//! an occurrence is inside when its parent span is a scope root or an open container span
//! already inside.
//!
//! **Occurrences.** Each tool call or agent invocation counts once: at its start event when
//! the trace has starts, otherwise at its end event (post-only traces such as the seed's
//! JSONL). Order is the order of events in the trace, not their timestamps.
//!
//! **Memory.** [`SequenceEngine`] keeps a fixed amount of state per rule plus the ids of
//! calls that are open (started, not yet ended) and of open container spans inside a
//! `within` scope; neither grows with the length of the trace. Open calls are bounded by
//! a window of 2 x [`MAX_OPEN_SPANS`] ids (the oldest is forgotten first); a scope holds at
//! most [`MAX_OPEN_SPANS`] started spans (a rule whose scope overflows fails with a note
//! saying so) plus the latest [`POST_ONLY_SCOPE_WINDOW`] spans that ended or never end
//! (post-only spans).
//!
//! **Ended spans.** A span that ended still holds its subtree: a call that names it as its
//! parent later in the trace is inside (OTLP exports in several batches, where a parent's
//! batch may come first). The latest [`POST_ONLY_SCOPE_WINDOW`] ended spans are kept.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};

mod summary;

pub use summary::{Summarizer, Summary, SummaryLink};

use agentic_core::json_scan::bytes_eq;
use agentic_core::json_strict::member;

use super::condition::compare_numbers;
use super::report::append_sentence;
use hashbrown::HashTable;

use agentic_core::{CanonicalEvent, Diagnostic, EventType};
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most open spans a scope (or the open-call set) tracks.
pub const MAX_OPEN_SPANS: usize = 100_000;

/// The most tool or agent names with open starts without a span id the engine tracks.
pub const MAX_IDLESS_NAMES: usize = 4096;

/// Kind (agent or tool), trace and name of a start without a span id.
type IdlessKey = (bool, Option<String>, String);

fn idless_key(agent: bool, event: &EventRef<'_>) -> IdlessKey {
    (agent, event.trace_id.map(str::to_owned), event.name.unwrap_or("").to_owned())
}

/// A call's arguments as a value, to compare a start's with an end's (`None` when the call
/// has none, or when they are not JSON).
fn args_value(args: ArgsRef<'_>) -> Option<Value> {
    match args {
        ArgsRef::None => None,
        ArgsRef::Value(value) => Some(value.clone()),
        ArgsRef::Json(text) => serde_json::from_str(text).ok(),
    }
    .filter(|value| !value.is_null())
}

/// True when a call's arguments say nothing: absent, `null`, `{}`, or JSON text that does not
/// parse (read as absent, as [`args_value`] reads it). Only starts and ends are asked.
fn bare_args(args: ArgsRef<'_>) -> bool {
    let empty = |value: &Value| value.is_null() || value.as_object().is_some_and(serde_json::Map::is_empty);
    match args {
        ArgsRef::None => true,
        ArgsRef::Value(value) => empty(value),
        ArgsRef::Json(text) => serde_json::from_str::<Value>(text).map_or(true, |value| empty(&value)),
    }
}

/// A started tool call whose arguments argument conditions cannot read (see
/// [`SequenceEngine::unread_starts`]).
#[derive(Debug, Clone)]
struct UnreadStart {
    /// Its span's hash (0: none).
    span: u64,
    name: Box<str>,
    as_text: bool,
    line: Option<u64>,
}

/// The most started calls with unread arguments kept until their end; past it the oldest
/// is counted at once.
const MAX_UNREAD_STARTS: usize = 4096;

/// Why argument conditions cannot read a call's arguments: `Some(false)` when there are
/// none (absent or `null`), `Some(true)` when they are text or a lone value (a tooltrace
/// `args` or a hook's `tool_input` written as a string); `None` for an object or a list,
/// which `args` paths read.
#[inline]
fn unreadable_arguments(args: ArgsRef<'_>) -> Option<bool> {
    match args {
        ArgsRef::None | ArgsRef::Value(Value::Null) => Some(false),
        ArgsRef::Value(Value::Object(_) | Value::Array(_)) => None,
        ArgsRef::Value(_) => Some(true),
        // (Readers give the value from its first byte: the common case is one compare.)
        ArgsRef::Json(text) => match text.as_bytes().first() {
            Some(b'{' | b'[') => None,
            _ => match text.trim_start().as_bytes().first() {
                Some(b'{' | b'[') => None,
                None | Some(b'n') => Some(false),
                Some(_) => Some(true),
            },
        },
    }
}

/// How many scope spans that ended, or never get an end event (post-only spans, as in the
/// seed's JSONL), a scope remembers; the oldest is forgotten first.
pub const POST_ONLY_SCOPE_WINDOW: usize = 4096;

/// A sequence rule as written in YAML: exactly one relation, optionally scoped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SequenceRule {
    /// Both occur and the first `a` precedes the first `b`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<EventPair>,
    /// Every `b` has an earlier `a`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_after: Option<EventPair>,
    /// Some `b` occurs and the call right before every `b` is an `a`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immediately_before: Option<EventPair>,
    /// Nothing matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub never: Option<EventMatcher>,
    /// The number of matches is within bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<CountRule>,
    /// Only consider calls inside the span subtree of events matching this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<EventMatcher>,
}

/// Two matchers for a relation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventPair {
    /// The first event.
    pub a: EventMatcher,
    /// The second event.
    pub b: EventMatcher,
}

/// Bounds on a count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountRule {
    /// What to count.
    pub of: EventMatcher,
    /// At least this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<u64>,
    /// At most this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<u64>,
}

/// One name pattern or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Patterns {
    /// One glob.
    One(String),
    /// Any of these globs.
    Many(Vec<String>),
}

impl Patterns {
    fn items(&self) -> Vec<&str> {
        match self {
            Patterns::One(one) => vec![one.as_str()],
            Patterns::Many(many) => many.iter().map(String::as_str).collect(),
        }
    }
}

/// Which calls match: a tool call (by `tool`) or an agent invocation (by `agent`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventMatcher {
    /// Tool name globs, for example `Read`, `[Bash, Write]` or `mcp__*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Patterns>,
    /// Agent name globs; the matcher then matches agent invocations, not tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Patterns>,
    /// Argument matchers by dotted argument path, for example `file_path: {glob: "**/skill.md"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<BTreeMap<String, TextMatch>>,
    /// A matcher on the argument text: it holds on the whole arguments (a string argument as
    /// is, otherwise compact JSON) or on any one string value in them, unescaped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_text: Option<TextMatch>,
}

/// A match on text; every given form must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextMatch {
    /// A path glob: `*` and `?` stay within one `/` segment, `**` crosses them; `[ab]`,
    /// `[a-z]`, `[!ab]` classes, `{a,b}` alternatives, `\` for a plain character.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// A regular expression, searched (use `^...$` to anchor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Exactly this text; a number also matches a number argument of the same value
    /// (`"100"` matches `100`, `100.0` and `1e2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    /// Contains this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
}

/// Whether a name or argument pattern is a glob (otherwise it is matched exactly).
pub(crate) fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{', '\\'])
}

/// Converts a path glob into an anchored regular expression: `*` and `?` stay within one
/// `/` segment, `**` crosses them (`**/` also matches no directory), `[ab]`, `[a-z]` and
/// `[!ab]` are classes (never matching `/`), `{a,b}` are alternatives (they may nest), and
/// `\` makes the next character plain. Characters, not bytes: `?` matches `é`.
pub fn glob_to_regex(glob: &str) -> Result<String, String> {
    translate(glob).map(|(regex, _)| regex)
}

/// Whether `glob` matches `text` (false for an invalid glob).
pub(crate) fn glob_matches(glob: &str, text: &str) -> bool {
    glob_to_regex(glob).ok().and_then(|regex| Regex::new(&regex).ok()).is_some_and(|regex| regex.is_match(text))
}

/// The regex of a glob (see [`glob_to_regex`]) and its runs of plain characters outside
/// alternatives, in order: every match holds each run, the first at its start and the last
/// at its end (each empty when the glob starts or ends with something else).
fn translate(glob: &str) -> Result<(String, Vec<String>), String> {
    let mut out = String::from("^");
    let mut runs = vec![String::new()];
    translate_glob(&mut glob.chars().peekable(), &mut out, &mut runs, 0)?;
    out.push('$');
    Ok((out, runs))
}

/// Translates up to the end (or, inside `depth` levels of `{...}`, up to the closing brace);
/// plain characters outside braces extend the last of `runs`, anything else starts a new one.
fn translate_glob(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut String,
    runs: &mut Vec<String>,
    depth: usize,
) -> Result<(), String> {
    const MAX_BRACE_DEPTH: usize = 16;
    let top = depth == 0;
    let plain = |out: &mut String, runs: &mut Vec<String>, c: char| {
        out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
        if let (true, Some(run)) = (top, runs.last_mut()) {
            run.push(c);
        }
    };
    let cut = |runs: &mut Vec<String>| {
        if top {
            runs.push(String::new());
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                // `s`: `**` crosses line breaks too (`*` and `?` do, as classes), so a
                // multi-line command cannot slip past `**rm -rf**`.
                if chars.peek() == Some(&'/') {
                    chars.next();
                    out.push_str("(?s:.*/)?");
                } else {
                    out.push_str("(?s:.*)");
                }
                // `**` may match no directory at all, taking a `/` before it with it.
                if let (true, Some(run)) = (top, runs.last_mut())
                    && run.ends_with('/')
                {
                    run.pop();
                }
                cut(runs);
            }
            '*' => {
                out.push_str("[^/]*");
                cut(runs);
            }
            '?' => {
                out.push_str("[^/]");
                cut(runs);
            }
            '\\' => plain(out, runs, chars.next().ok_or("a `\\` at the end escapes nothing")?),
            '[' => {
                let negated = chars.next_if(|&c| c == '!' || c == '^').is_some();
                let mut members = String::new();
                let mut first = true;
                let mut previous = None;
                loop {
                    let c = chars.next().ok_or("a `[` is never closed with `]`")?;
                    if c == ']' && !first {
                        break;
                    }
                    first = false;
                    if c == '-' && !members.is_empty() && chars.peek().is_some_and(|&next| next != ']') {
                        if let (Some(low), Some(&high)) = (previous, chars.peek())
                            && low > high
                        {
                            return Err(format!("the range `{low}-{high}` is reversed; write `{high}-{low}`"));
                        }
                        members.push('-');
                    } else {
                        members.push_str(&format!("\\x{{{:x}}}", u32::from(c)));
                    }
                    previous = Some(c);
                }
                if negated {
                    out.push_str(&format!("[^/{members}]"));
                } else {
                    out.push_str(&format!("[[{members}]&&[^/]]"));
                }
                cut(runs);
            }
            '{' if depth == MAX_BRACE_DEPTH => return Err(format!("`{{...}}` nest deeper than {MAX_BRACE_DEPTH}")),
            '{' => {
                cut(runs);
                out.push_str("(?:");
                translate_glob(chars, out, runs, depth + 1)?;
                out.push(')');
                cut(runs);
            }
            ',' if !top => out.push('|'),
            '}' if !top => return Ok(()),
            other => plain(out, runs, other),
        }
    }
    if top { Ok(()) } else { Err("a `{` is never closed with `}`".to_owned()) }
}

#[derive(Debug, Clone)]
enum NameMatch {
    Exact(String),
    /// `equals` with a number: the text as written, or a number argument of that value.
    Number(String, serde_json::Number),
    Contains(memchr::memmem::Finder<'static>),
    Pattern(Pattern),
}

impl NameMatch {
    fn contains(needle: &str) -> NameMatch {
        NameMatch::Contains(memchr::memmem::Finder::new(needle).into_owned())
    }

    /// Matches an argument's text (see [`Occurrence::arg_text`]): `json` when it is not a
    /// string but compact JSON, for a number argument equals a number by value, so
    /// `equals: "100"` matches `100`, `100.0` and `1e2`, but not the string `"1e2"`.
    #[inline]
    fn is_arg_match(&self, text: &str, json: bool) -> bool {
        match self {
            NameMatch::Number(_, number) if json => {
                self.is_match(text)
                    || serde_json::from_str::<serde_json::Number>(text)
                        .is_ok_and(|arg| compare_numbers(&arg, number) == Some(std::cmp::Ordering::Equal))
            }
            _ => self.is_match(text),
        }
    }

    #[inline]
    fn is_match(&self, text: &str) -> bool {
        match self {
            NameMatch::Exact(exact) | NameMatch::Number(exact, _) => bytes_eq(exact.as_bytes(), text.as_bytes()),
            NameMatch::Contains(needle) => needle.find(text.as_bytes()).is_some(),
            NameMatch::Pattern(pattern) => pattern.is_match(text),
        }
    }
}

/// A regular expression with the literals every match has: a text that lacks one is
/// rejected without running the regex.
#[derive(Debug, Clone)]
struct Pattern {
    regex: Regex,
    prefix: String,
    suffix: String,
    inner: Option<memchr::memmem::Finder<'static>>,
}

impl Pattern {
    /// A user's regular expression (the regex engine finds its own literals).
    fn regex(regex: Regex) -> Pattern {
        Pattern { regex, prefix: String::new(), suffix: String::new(), inner: None }
    }

    /// A path glob (see [`glob_to_regex`]) with its literal start, end and longest inner run.
    fn glob(glob: &str) -> Result<Pattern, String> {
        let (regex, runs) = translate(glob)?;
        let regex = Regex::new(&regex).map_err(|error| error.to_string())?;
        let (prefix, suffix) = match runs.as_slice() {
            [only] => (only.clone(), String::new()),
            [first, .., last] => (first.clone(), last.clone()),
            [] => (String::new(), String::new()),
        };
        let inner = (runs.get(1..runs.len().saturating_sub(1)).unwrap_or_default().iter())
            .max_by_key(|run| run.len())
            .filter(|run| run.len() >= 2)
            .map(|run| memchr::memmem::Finder::new(run.as_str()).into_owned());
        Ok(Pattern { regex, prefix, suffix, inner })
    }

    #[inline]
    fn is_match(&self, text: &str) -> bool {
        let (text_bytes, prefix, suffix) = (text.as_bytes(), self.prefix.as_bytes(), self.suffix.as_bytes());
        text_bytes.len() >= prefix.len().max(suffix.len())
            && bytes_eq(&text_bytes[..prefix.len()], prefix)
            && bytes_eq(&text_bytes[text_bytes.len() - suffix.len()..], suffix)
            && self.inner.as_ref().is_none_or(|inner| inner.find(text.as_bytes()).is_some())
            && self.regex.is_match(text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    Tool,
    Agent,
}

/// A compiled [`EventMatcher`].
#[derive(Debug, Clone)]
pub struct CompiledMatcher {
    kind: CallKind,
    names: Vec<NameMatch>,
    args: Vec<(Vec<String>, Vec<NameMatch>)>,
    args_text: Vec<NameMatch>,
    /// A short description for notes, for example `Read(file_path ~ **/skill.md)`.
    pub description: String,
    /// The matcher as written (two equal ones match the same calls).
    source: EventMatcher,
}

impl CompiledMatcher {
    /// The matcher as written.
    pub fn source(&self) -> &EventMatcher {
        &self.source
    }

    /// Whether it has conditions on the arguments (`args`, `args_text`).
    fn reads_arguments(&self) -> bool {
        !self.args.is_empty() || !self.args_text.is_empty()
    }

    /// Whether it has conditions on argument paths (`args`), which need JSON arguments.
    fn reads_argument_paths(&self) -> bool {
        !self.args.is_empty()
    }

    /// Whether it names calls in a way a call without a name cannot satisfy (`tool: Bash`,
    /// `agent: fixer`; not `tool: "*"`, whose glob matches the empty name).
    fn misses_nameless(&self) -> bool {
        !self.names.is_empty() && !self.names.iter().any(|pattern| pattern.is_match(""))
    }

    fn matches(&self, occurrence: &Occurrence<'_>) -> bool {
        self.name_matches(occurrence.kind, occurrence.name) && self.args_match(occurrence)
    }

    /// The kind and name checks.
    fn name_matches(&self, kind: CallKind, name: &str) -> bool {
        kind == self.kind && (self.names.is_empty() || self.names.iter().any(|pattern| pattern.is_match(name)))
    }

    /// The argument checks.
    fn args_match(&self, occurrence: &Occurrence<'_>) -> bool {
        self.args_match_memo(occurrence, &[], &mut [])
    }

    /// The argument checks, with the argument at `self.args[i]`'s path remembered in
    /// `memo[slots[i]]` (when both exist), so matchers of one event that read the same
    /// argument look it up once.
    #[inline]
    fn args_match_memo<'a>(&self, occurrence: &Occurrence<'a>, slots: &[usize], memo: &mut [ArgMemo<'a>]) -> bool {
        for (idx, (path, matchers)) in self.args.iter().enumerate() {
            let cell = slots.get(idx).and_then(|&slot| memo.get_mut(slot));
            let ok = match cell.and_then(|cell| occurrence.borrowed_arg_memo(path, cell)) {
                Some(Some(text)) => all_match(matchers, text),
                Some(None) => false,
                None => occurrence.arg_text(path).is_some_and(|text| all_match(matchers, text)),
            };
            if !ok {
                return false;
            }
        }
        if !self.args_text.is_empty() {
            // The whole text, or any one string value in it as written (without JSON's
            // escapes): `contains: 'cat "secrets.env"'` and `regex: '^git status$'` mean
            // the command, not its JSON spelling.
            let holds = |text: &str| self.args_text.iter().all(|m| m.is_match(text));
            if !holds(&occurrence.args_text()) && !occurrence.args().is_some_and(|args| any_string(args, &holds)) {
                return false;
            }
        }
        true
    }
}

/// Whether all `matchers` hold on an argument's text (see [`Occurrence::arg_text`]: a string
/// is borrowed, any other value is owned compact JSON).
#[inline]
fn all_match(matchers: &[NameMatch], text: Cow<'_, str>) -> bool {
    let json = matches!(text, Cow::Owned(_));
    matchers.iter().all(|m| m.is_arg_match(&text, json))
}

const GLOB_HINT: &str = "globs know `*`, `?`, `**`, `[ab]`, `[!ab]` and `{a,b}`; `\\` before a character makes it plain (in YAML, \
     write '\\[' in single quotes or \"\\\\[\" in double quotes)";

fn compile_text_match(text: &TextMatch, pointer: &str, diagnostics: &mut Vec<Diagnostic>) -> Vec<NameMatch> {
    let mut out = Vec::new();
    if let Some(glob) = &text.glob {
        if is_glob(glob) {
            match Pattern::glob(glob) {
                Ok(pattern) => out.push(NameMatch::Pattern(pattern)),
                Err(reason) => diagnostics.push(
                    Diagnostic::error("invalid-glob", format!("glob `{glob}` is invalid: {reason}"))
                        .at_pointer(format!("{pointer}/glob"))
                        .with_hint(GLOB_HINT),
                ),
            }
        } else {
            out.push(NameMatch::Exact(glob.clone()));
        }
    }
    if let Some(pattern) = &text.regex {
        match Regex::new(pattern) {
            // A pattern of plain characters only (no metacharacter, no flag) matches exactly
            // where the text contains it: a substring search is enough.
            Ok(_) if pattern.bytes().all(|b| b.is_ascii_alphanumeric() || b" -_/,:;=@%!<>'\"`".contains(&b)) => {
                out.push(NameMatch::contains(pattern))
            }
            Ok(regex) => out.push(NameMatch::Pattern(Pattern::regex(regex))),
            Err(error) => diagnostics.push(
                Diagnostic::error(
                    "invalid-regex",
                    format!("`regex` pattern `{pattern}` is not a valid regex ({})", super::condition::regex_problem(&error)),
                )
                .at_pointer(format!("{pointer}/regex"))
                .with_hint(
                    "Rust regex syntax: no look-around or back-references; check brackets and escapes; write `\\\\.` for a literal dot in YAML double quotes",
                ),
            ),
        }
    }
    if let Some(equals) = &text.equals {
        // Only a number as written is one: JSON would skip the spaces around " 100".
        let number =
            (equals.trim() == equals).then(|| serde_json::from_str::<serde_json::Number>(equals).ok()).flatten();
        out.push(match number {
            Some(number) => NameMatch::Number(equals.clone(), number),
            None => NameMatch::Exact(equals.clone()),
        });
    }
    if let Some(contains) = &text.contains {
        out.push(NameMatch::contains(contains));
    }
    if out.is_empty() && text.regex.is_none() && text.glob.is_none() {
        diagnostics.push(
            Diagnostic::error("matcher-empty", "this text matcher has no `glob`, `regex`, `equals` or `contains`")
                .at_pointer(pointer)
                .with_hint("write for example `{glob: \"**/skill.md\"}`"),
        );
    }
    out
}

/// A JSON string of `text`.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// A name or argument path as notes show it: as written when it is made of name characters
/// (and glob characters), else quoted, so a `(`, `,`, `|`, space or an empty name cannot
/// read as part of the note around it.
fn shown_name(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '*' | '?' | '/' | ':' | '@' | '+'));
    if plain { text.to_owned() } else { quoted(text) }
}

/// A regular expression as notes show it: between slashes unless it holds one, a `)` or a
/// `,` (any of which could read as the end of it in a note), then between backticks, so its
/// backslashes are not doubled as JSON would write them; as a JSON string when it holds a
/// backtick, a character a line cannot show, or a space at an end (which a Markdown code
/// span drops).
pub(crate) fn shown_regex(regex: &str) -> String {
    if regex.chars().any(|c| c == '`' || c.is_control() || c.is_whitespace() && c != ' ')
        || regex.starts_with(' ')
        || regex.ends_with(' ')
    {
        quoted(regex)
    } else if regex.chars().any(|c| matches!(c, '/' | ')' | ',')) {
        format!("`{regex}`")
    } else {
        format!("/{regex}/")
    }
}

/// A text matcher as notes show it; values are quoted as JSON strings, so an empty value, a
/// space or a `)` in one reads back as what the spec says (a regular expression as
/// [`shown_regex`] shows it).
fn describe_text_match(text: &TextMatch) -> String {
    let mut parts = Vec::new();
    if let Some(glob) = &text.glob {
        parts.push(format!("~ {}", quoted(glob)));
    }
    if let Some(regex) = &text.regex {
        parts.push(format!("=~ {}", shown_regex(regex)));
    }
    if let Some(equals) = &text.equals {
        parts.push(format!("== {}", quoted(equals)));
    }
    if let Some(contains) = &text.contains {
        parts.push(format!("contains {}", quoted(contains)));
    }
    parts.join(" ")
}

/// What is wrong with an argument path, if anything: an empty path or segment (`a..b`,
/// `command.`), or brackets (`edits[0]`, the evidence paths' spelling, which argument paths
/// do not read: the key would be looked up with its brackets).
fn argument_path_problem(key: &str, path: &[String]) -> Option<&'static str> {
    if key.is_empty() {
        Some("is empty")
    } else if path.iter().any(String::is_empty) {
        Some("has an empty segment (a dot at its start or end, or two in a row)")
    } else if key.contains(['[', ']']) {
        Some("has brackets, which argument paths do not read (segments are separated by dots)")
    } else {
        None
    }
}

/// `edits[0].old_string` and `a["b"]` written with dots (`edits.0.old_string`, `a.b`), when
/// that reads as a path.
fn dotted_form(key: &str) -> Option<String> {
    let mut dotted = String::new();
    for part in key.split(['[', ']']).filter(|part| !part.is_empty()) {
        let part = part.trim_matches('.');
        let part = part.trim_matches(|c| c == '"' || c == '\'');
        if part.is_empty() {
            continue;
        }
        if !dotted.is_empty() {
            dotted.push('.');
        }
        dotted.push_str(part);
    }
    let path: Vec<String> = dotted.split('.').map(str::to_owned).collect();
    // `[*]` has no dotted form: an argument path names one position.
    (dotted != key && !path.iter().any(|segment| segment == "*") && argument_path_problem(&dotted, &path).is_none())
        .then_some(dotted)
}

pub(crate) fn compile_matcher(
    matcher: &EventMatcher,
    pointer: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> CompiledMatcher {
    let (kind, patterns) = match (&matcher.tool, &matcher.agent) {
        (Some(_), Some(_)) => {
            diagnostics.push(
                Diagnostic::error("matcher-ambiguous", "a matcher names both `tool` and `agent`")
                    .at_pointer(pointer)
                    .with_hint("match tool calls with `tool:` or agent invocations with `agent:`, not both"),
            );
            (CallKind::Tool, matcher.tool.as_ref())
        }
        (None, Some(agent)) => (CallKind::Agent, Some(agent)),
        (tool, None) => (CallKind::Tool, tool.as_ref()),
    };
    let mut names = Vec::new();
    let pattern_texts = patterns.map(Patterns::items).unwrap_or_default();
    if patterns.is_some() && pattern_texts.is_empty() {
        let key = if kind == CallKind::Agent { "agent" } else { "tool" };
        diagnostics.push(
            Diagnostic::error("matcher-empty-names", format!("`{key}: []` names no {key}"))
                .at_pointer(format!("{pointer}/{key}"))
                .with_hint(format!(
                    "list the names this matcher is about (`{key}: [Read, Grep]`), or leave `{key}` out to match every {}",
                    if kind == CallKind::Agent { "agent" } else { "tool call" }
                )),
        );
    }
    for pattern in &pattern_texts {
        if is_glob(pattern) {
            match Pattern::glob(pattern) {
                Ok(pattern) => names.push(NameMatch::Pattern(pattern)),
                Err(reason) => diagnostics.push(
                    Diagnostic::error("invalid-glob", format!("name glob `{pattern}` is invalid: {reason}"))
                        .at_pointer(pointer)
                        .with_hint(GLOB_HINT),
                ),
            }
        } else {
            names.push(NameMatch::Exact((*pattern).to_owned()));
        }
    }
    let mut args = Vec::new();
    let mut arg_descriptions = Vec::new();
    for (key, text) in matcher.args.iter().flatten() {
        let path: Vec<String> = key.split('.').map(str::to_owned).collect();
        if let Some(problem) = argument_path_problem(key, &path) {
            diagnostics.push(
                Diagnostic::error("invalid-argument-path", format!("argument path `{key}` {problem}"))
                    .at_pointer(format!("{pointer}/args/{}", agentic_core::yaml::pointer_segment(key)))
                    .with_hint(match dotted_form(key) {
                        Some(dotted) => format!(
                            "write `{dotted}`: segments are separated by dots, and list positions are numbers; \
                             `args_text` matches the whole arguments as text"
                        ),
                        None => "name an argument (`command`), or one inside it with dots and list positions as \
                                 numbers (`edits.0.old_string`; there is no `*` for every element); `args_text` \
                                 matches the whole arguments as text, and any string in them"
                            .to_owned(),
                    }),
            );
        }
        let compiled = compile_text_match(text, &format!("{pointer}/args/{key}"), diagnostics);
        arg_descriptions.push(format!("{} {}", shown_name(key), describe_text_match(text)));
        args.push((path, compiled));
    }
    let args_text = match &matcher.args_text {
        Some(text) => {
            arg_descriptions.push(format!("args {}", describe_text_match(text)));
            compile_text_match(text, &format!("{pointer}/args_text"), diagnostics)
        }
        None => Vec::new(),
    };
    if patterns.is_none() && args.is_empty() && args_text.is_empty() && matcher.agent.is_none() {
        diagnostics.push(
            Diagnostic::warning("matcher-matches-everything", "this matcher matches every tool call")
                .at_pointer(pointer)
                .with_hint("name a tool with `tool:` or an agent with `agent:`"),
        );
    }
    let base = match (kind, pattern_texts.is_empty()) {
        (CallKind::Tool, true) => "any tool".to_owned(),
        (CallKind::Agent, true) => "any agent".to_owned(),
        (CallKind::Tool, false) => pattern_texts.iter().map(|name| shown_name(name)).collect::<Vec<_>>().join("|"),
        (CallKind::Agent, false) => {
            format!("agent {}", pattern_texts.iter().map(|name| shown_name(name)).collect::<Vec<_>>().join("|"))
        }
    };
    let description =
        if arg_descriptions.is_empty() { base } else { format!("{base}({})", arg_descriptions.join(", ")) };
    CompiledMatcher { kind, names, args, args_text, description, source: matcher.clone() }
}

/// A compiled relation.
#[derive(Debug, Clone)]
pub enum Relation {
    /// See [`SequenceRule::before`].
    Before(CompiledMatcher, CompiledMatcher),
    /// See [`SequenceRule::only_after`].
    OnlyAfter(CompiledMatcher, CompiledMatcher),
    /// See [`SequenceRule::immediately_before`].
    ImmediatelyBefore(CompiledMatcher, CompiledMatcher),
    /// See [`SequenceRule::never`].
    Never(CompiledMatcher),
    /// See [`SequenceRule::count`].
    Count(CompiledMatcher, Option<u64>, Option<u64>),
}

/// Appends the warning `sentence(count, at)` to `notes` when `applies` and the tally counted
/// something (`at` is " (first at line N)", or empty).
fn warn_of_tally(
    notes: &mut String,
    (count, first): (u64, Option<u64>),
    applies: bool,
    sentence: impl FnOnce(u64, &str) -> String,
) {
    if count > 0 && applies {
        append_sentence(notes, &sentence(count, &super::report::first_at_line(first)));
    }
}

/// Counts one more event of a kind a warning tells of, keeping the line of the first.
fn tally((count, first): &mut (u64, Option<u64>), line: Option<u64>) {
    *count += 1;
    *first = first.or(line);
}

/// Counts `calls` more, the first of them at `line`, which may come before the first so far
/// (calls that waited for their parent are told of after later ones).
fn tally_many((count, first): &mut (u64, Option<u64>), calls: u64, line: Option<u64>) {
    *count += calls;
    *first = match (*first, line) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
}

/// Whether `rule` (the `idx`-th) has argument conditions that cannot see the arguments a
/// call's end brings after a start without them: those of an order rule, which places the
/// call at its start, of a rule past the 64th (see [`StartMatch`]), and of a scope (opened at
/// the start).
fn misses_late_arguments(idx: usize, rule: &CompiledRule) -> bool {
    let relation_reads = rule.relation.matchers().into_iter().any(CompiledMatcher::reads_arguments);
    ((rule.relation.is_order() || idx >= 64) && relation_reads)
        || rule.within.as_ref().is_some_and(CompiledMatcher::reads_arguments)
}

impl CompiledRule {
    /// The rule's matchers: its relation's, then its scope's.
    fn all_matchers(&self) -> impl Iterator<Item = &CompiledMatcher> {
        self.relation.matchers().into_iter().chain(self.within.as_ref())
    }
}

impl Relation {
    /// Whether the verdict depends on the order of calls (`before`, `only_after`,
    /// `immediately_before`).
    fn is_order(&self) -> bool {
        matches!(self, Relation::Before(..) | Relation::OnlyAfter(..) | Relation::ImmediatelyBefore(..))
    }

    /// The relation's matchers.
    fn matchers(&self) -> Vec<&CompiledMatcher> {
        match self {
            Relation::Before(a, b) | Relation::OnlyAfter(a, b) | Relation::ImmediatelyBefore(a, b) => vec![a, b],
            Relation::Never(one) | Relation::Count(one, ..) => vec![one],
        }
    }
}

/// A compiled [`SequenceRule`].
#[derive(Debug, Clone)]
pub struct CompiledRule {
    /// The relation.
    pub relation: Relation,
    /// The scope, if any.
    pub within: Option<CompiledMatcher>,
}

pub(crate) fn compile_rule(
    rule: &SequenceRule,
    pointer: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<CompiledRule> {
    let given = [
        rule.before.is_some(),
        rule.only_after.is_some(),
        rule.immediately_before.is_some(),
        rule.never.is_some(),
        rule.count.is_some(),
    ]
    .iter()
    .filter(|given| **given)
    .count();
    if given != 1 {
        diagnostics.push(
            Diagnostic::error(
                if given == 0 { "rule-empty" } else { "rule-ambiguous" },
                format!("a sequence rule has exactly one of `before`, `only_after`, `immediately_before`, `never`, `count` (found {given})"),
            )
            .at_pointer(pointer)
            .with_hint("split several relations into several checkpoints"),
        );
        return None;
    }
    let pair = |key: &str, pair: &EventPair, diagnostics: &mut Vec<Diagnostic>| {
        let a = compile_matcher(&pair.a, &format!("{pointer}/{key}/a"), diagnostics);
        let b = compile_matcher(&pair.b, &format!("{pointer}/{key}/b"), diagnostics);
        if pair.a == pair.b {
            diagnostics.push(
                Diagnostic::error("rule-contradiction", format!("`{key}` relates `{}` to itself", a.description))
                    .at_pointer(format!("{pointer}/{key}"))
                    .with_hint("`a` and `b` must describe different calls"),
            );
        }
        (a, b)
    };
    let relation = if let Some(p) = &rule.before {
        let (a, b) = pair("before", p, diagnostics);
        Relation::Before(a, b)
    } else if let Some(p) = &rule.only_after {
        let (a, b) = pair("only_after", p, diagnostics);
        Relation::OnlyAfter(a, b)
    } else if let Some(p) = &rule.immediately_before {
        let (a, b) = pair("immediately_before", p, diagnostics);
        Relation::ImmediatelyBefore(a, b)
    } else if let Some(m) = &rule.never {
        Relation::Never(compile_matcher(m, &format!("{pointer}/never"), diagnostics))
    } else {
        let count = rule.count.as_ref()?;
        if count.at_least.is_none() && count.at_most.is_none() {
            diagnostics.push(
                Diagnostic::error("rule-empty", "`count` has neither `at_least` nor `at_most`")
                    .at_pointer(format!("{pointer}/count"))
                    .with_hint("add `at_least: 1` or `at_most: N`"),
            );
        }
        // At least zero, and no most: every trace holds it.
        if count.at_least == Some(0) && count.at_most.is_none() {
            diagnostics.push(
                Diagnostic::error("rule-empty", "`count` with only `at_least: 0` holds on every trace")
                    .at_pointer(format!("{pointer}/count"))
                    .with_hint("ask for `at_least: 1` (the call must occur), or add `at_most: N`"),
            );
        }
        if let (Some(low), Some(high)) = (count.at_least, count.at_most)
            && low > high
        {
            diagnostics.push(
                Diagnostic::error("rule-contradiction", format!("`count` needs at least {low} but at most {high}"))
                    .at_pointer(format!("{pointer}/count"))
                    .with_hint("make `at_least` no larger than `at_most`"),
            );
        }
        Relation::Count(
            compile_matcher(&count.of, &format!("{pointer}/count/of"), diagnostics),
            count.at_least,
            count.at_most,
        )
    };
    let within = rule.within.as_ref().map(|m| compile_matcher(m, &format!("{pointer}/within"), diagnostics));
    Some(CompiledRule { relation, within })
}

/// One remembered [`borrowed_arg`] answer (`None`: not looked up yet).
type ArgMemo<'a> = Option<Option<Option<Cow<'a, str>>>>;

/// One tool call or agent invocation seen in the trace.
struct Occurrence<'a> {
    kind: CallKind,
    name: &'a str,
    raw_args: ArgsRef<'a>,
    parsed_args: std::cell::OnceCell<Option<Value>>,
}

impl<'a> Occurrence<'a> {
    /// The arguments as JSON; JSON text is parsed on first use only.
    fn args(&self) -> Option<&Value> {
        match self.raw_args {
            ArgsRef::None => None,
            ArgsRef::Value(value) => Some(value),
            ArgsRef::Json(text) => self.parsed_args.get_or_init(|| serde_json::from_str(text).ok()).as_ref(),
        }
    }

    /// [`borrowed_arg`] on this occurrence's JSON arguments, computed once per `cell`.
    #[inline]
    fn borrowed_arg_memo(&self, path: &[String], cell: &mut ArgMemo<'a>) -> Option<Option<Cow<'a, str>>> {
        let ArgsRef::Json(text) = self.raw_args else { return None };
        if self.parsed_args.get().is_some() {
            return None;
        }
        cell.get_or_insert_with(|| borrowed_arg(text, path)).clone()
    }

    /// The text of the argument at `path` (a string as is, borrowed; anything else as
    /// compact JSON, owned: [`NameMatch::is_arg_match`] tells numbers by that), `None` when
    /// it is absent.
    fn arg_text(&self, path: &[String]) -> Option<std::borrow::Cow<'_, str>> {
        if let ArgsRef::Json(text) = self.raw_args
            && self.parsed_args.get().is_none()
            && let Some(found) = borrowed_arg(text, path)
        {
            return found;
        }
        let mut value = self.args();
        for segment in path {
            // A number picks a list element (`edits.0.old_string`).
            value = Some(match value? {
                Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                other => other.get(segment.as_str())?,
            });
        }
        Some(match value? {
            Value::String(text) => std::borrow::Cow::Borrowed(text.as_str()),
            other => std::borrow::Cow::Owned(other.to_string()),
        })
    }

    /// The whole argument text: a string argument as is, anything else as compact JSON.
    fn args_text(&self) -> std::borrow::Cow<'_, str> {
        if let ArgsRef::Json(text) = self.raw_args
            && self.parsed_args.get().is_none()
            && let Ok(plain) = serde_json::from_str::<&str>(text)
        {
            return std::borrow::Cow::Borrowed(plain);
        }
        match self.args() {
            None => std::borrow::Cow::Borrowed(""),
            Some(Value::String(text)) => std::borrow::Cow::Borrowed(text.as_str()),
            Some(other) => std::borrow::Cow::Owned(other.to_string()),
        }
    }
}

/// Whether `holds` for some string in `value` (object keys aside).
fn any_string(value: &Value, holds: &impl Fn(&str) -> bool) -> bool {
    match value {
        Value::String(text) => holds(text),
        Value::Array(items) => items.iter().any(|item| any_string(item, holds)),
        Value::Object(members) => members.values().any(|member| any_string(member, holds)),
        _ => false,
    }
}

/// The argument at `path` read straight from JSON text without building a [`Value`]:
/// `Some(found)` when the answer is certain (the text is valid JSON, every object on the
/// way has plain keys and no duplicate of the key looked up, and the value is a plain
/// string or any other value re-serialized from its own text), `None` when only the full
/// parse can tell (escapes, duplicates, invalid JSON, a top level that is not an object).
#[inline]
fn borrowed_arg<'t>(text: &'t str, path: &[String]) -> Option<Option<std::borrow::Cow<'t, str>>> {
    let mut raw = text;
    // Whether `raw`, a string, is known to have no escapes (the scanner saw it whole).
    let mut plain = false;
    for (depth, segment) in path.iter().enumerate() {
        let opens_object = raw.trim_start().starts_with('{');
        if !opens_object {
            // Below the top level `raw` is a validated value: a non-object has no keys, and
            // a list's elements are left to the full parse.
            return if depth == 0 || raw.trim_start().starts_with('[') { None } else { Some(None) };
        }
        // The strict scanner answers the common case; serde_json whatever it leaves.
        plain = false;
        let found = match agentic_core::json_scan::find_member(raw, segment) {
            Some(found) => found.map(|value| {
                plain = !value.escaped;
                &raw[value.range]
            }),
            None => {
                let seed = FindKey { key: segment };
                let mut deserializer = serde_json::Deserializer::from_str(raw);
                let found = serde::de::DeserializeSeed::deserialize(seed, &mut deserializer).ok()?;
                deserializer.end().ok()?;
                found.map(serde_json::value::RawValue::get)
            }
        };
        match found {
            Some(value) => raw = value,
            None => return Some(None),
        }
    }
    if raw.starts_with('"') {
        // `raw` is a string token serde_json already checked (no control characters); without
        // a backslash its content is the value itself.
        if (plain || memchr::memchr(b'\\', raw.as_bytes()).is_none())
            && let Some(inner) = raw.strip_prefix('"').and_then(|rest| rest.strip_suffix('"'))
        {
            return Some(Some(std::borrow::Cow::Borrowed(inner)));
        }
        return serde_json::from_str::<&str>(raw).ok().map(|plain| Some(std::borrow::Cow::Borrowed(plain)));
    }
    let value: Value = serde_json::from_str(raw).ok()?;
    Some(Some(std::borrow::Cow::Owned(value.to_string())))
}

/// Finds one key of a JSON object, borrowing its value; fails on escaped keys and on a
/// duplicate of the key (the full parse decides those).
struct FindKey<'k> {
    key: &'k str,
}

impl<'de> serde::de::DeserializeSeed<'de> for FindKey<'_> {
    type Value = Option<&'de serde_json::value::RawValue>;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for FindKey<'_> {
    type Value = Option<&'de serde_json::value::RawValue>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON object")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<&'de str>()? {
            if key == self.key {
                if found.is_some() {
                    return Err(serde::de::Error::custom("duplicate key"));
                }
                found = Some(map.next_value::<&'de serde_json::value::RawValue>()?);
            } else {
                map.next_value::<Skip>()?;
            }
        }
        Ok(found)
    }
}

/// Any JSON value, validated exactly as parsing it into a [`Value`] would (escapes,
/// surrogates, number ranges, depth) but without building it.
struct Skip;

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Skip, D::Error> {
        deserializer.deserialize_any(Skip)
    }
}

impl<'de> serde::de::Visitor<'de> for Skip {
    type Value = Skip;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_none<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Skip, M::Error> {
        while map.next_key::<Skip>()?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}

/// The arguments of a call as the engine receives them.
#[derive(Debug, Clone, Copy)]
pub enum ArgsRef<'a> {
    /// No arguments.
    None,
    /// Parsed arguments.
    Value(&'a Value),
    /// Unparsed JSON text (parsed only when a matcher needs it).
    Json(&'a str),
}

/// A borrowed view of one trace event: everything the tier-2 engine reads.
///
/// [`SequenceEngine::feed`] builds it from a [`CanonicalEvent`]; fast ingest paths build it
/// directly from a record without allocating an event.
#[derive(Debug, Clone, Copy)]
pub struct EventRef<'a> {
    /// What happened.
    pub event_type: EventType,
    /// The tool or agent name.
    pub name: Option<&'a str>,
    /// The call's arguments (`data.input`).
    pub args: ArgsRef<'a>,
    /// This span's id.
    pub span_id: Option<&'a str>,
    /// The parent span's id.
    pub parent_span_id: Option<&'a str>,
    /// The id of the tool call as its writer gave it (`gen_ai.tool.call.id`: a hook's or
    /// tooltrace v2's `tool_use_id`), when it has one: an end pairs first with a start of the
    /// same call id among the starts in flight under its span id.
    pub call_id: Option<&'a str>,
    /// The trace (session) both span ids belong to: one id in two traces names two spans (a
    /// file of Claude Code hook records from several sessions, an OTLP file of several
    /// traces). `None` when ids are file-wide (tooltrace lines).
    pub trace_id: Option<&'a str>,
    /// A post-only container span (`x.tooltrace.span_type: parent`).
    pub post_only_parent: bool,
    /// The call ended with an error (an end event whose status is `error`): the tier-3
    /// excerpt marks it.
    pub failed: bool,
    /// The 1-based line in the trace file.
    pub line: Option<u64>,
    /// The event's sequence number (cited in notes; the order is the order events are fed in).
    pub seq: u64,
}

impl<'a> EventRef<'a> {
    /// The view of a canonical event.
    pub fn from_event(event: &'a CanonicalEvent) -> EventRef<'a> {
        let name_key = match event.event_type {
            EventType::AgentInvokeStart | EventType::AgentInvokeEnd => "gen_ai.agent.name",
            _ => "gen_ai.tool.name",
        };
        EventRef {
            event_type: event.event_type,
            name: event.step_name.as_deref().or_else(|| member(&event.attributes, name_key).and_then(Value::as_str)),
            args: event.data.as_object().and_then(|data| member(data, "input")).map_or(ArgsRef::None, ArgsRef::Value),
            span_id: event.span.as_ref().and_then(|span| span.span_id.as_deref()),
            parent_span_id: event.span.as_ref().and_then(|span| span.parent_span_id.as_deref()),
            call_id: member(&event.attributes, "gen_ai.tool.call.id").and_then(Value::as_str),
            // Tooltrace ids are file-wide (its fast reader has no session either).
            trace_id: event
                .span
                .as_ref()
                .and_then(|span| span.trace_id.as_deref())
                .filter(|_| event.source.as_ref().is_none_or(|source| source.format != "tooltrace")),
            post_only_parent: member(&event.attributes, "x.tooltrace.span_type").and_then(Value::as_str)
                == Some("parent"),
            failed: event.status == Some(agentic_core::EventStatus::Error),
            line: event.source.as_ref().and_then(|s| s.line),
            seq: event.seq,
        }
    }
}

/// Where an occurrence is in the trace, for notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Location {
    line: Option<u64>,
    seq: u64,
    /// An OTLP span's id (16 hex digits, as the reader normalizes them): one line of an
    /// export holds many spans, so the line alone does not say which.
    span: Option<u64>,
}

impl Location {
    fn of(event: &EventRef<'_>) -> Location {
        // Span ids are cited for traces whose ids are per trace (not tooltrace lines), when
        // they are OTLP's 8 bytes in hex.
        let span = event
            .trace_id
            .and(event.span_id)
            .filter(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|id| u64::from_str_radix(id, 16).ok());
        Location { line: event.line, seq: event.seq, span }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.span) {
            (Some(line), Some(span)) => write!(f, "line {line} (span {span:016x}, event {})", self.seq),
            (Some(line), None) => write!(f, "line {line} (event {})", self.seq),
            (None, Some(span)) => write!(f, "span {span:016x} (event {})", self.seq),
            (None, None) => write!(f, "event {}", self.seq),
        }
    }
}

/// The matcher ids of one rule (`usize::MAX` when absent): the relation's first and second
/// matcher and the scope root.
#[derive(Debug, Clone, Copy)]
struct RuleIds {
    first: usize,
    second: usize,
    within: usize,
    /// The bits of `first` and `second` in [`MatchBits::low`].
    relation_mask: u64,
    /// The rule's state can change on an event that matches neither `first` nor `second`
    /// (`immediately_before`), or a relation id is beyond `low`: always step it.
    always_step: bool,
}

impl RuleIds {
    fn new(first: usize, second: usize, within: usize, immediately: bool) -> RuleIds {
        let bit = |id: usize| if id < 64 { 1u64 << id } else { 0 };
        let wide = first >= 64 || (second != usize::MAX && second >= 64);
        RuleIds { first, second, within, relation_mask: bit(first) | bit(second), always_step: immediately || wide }
    }

    /// False only when the relation certainly does not change on an event with these
    /// matches: neither of its matchers matched (and its state only changes on a match).
    fn may_step(&self, bits: &MatchBits) -> bool {
        self.always_step || bits.low & self.relation_mask != 0
    }
}

/// The rules by what can change them, as bit sets over rule indexes (for up to 64 rules).
#[derive(Debug, Clone)]
struct RuleMasks {
    /// Rules with a scope.
    scoped: u64,
    /// Rules stepped on every event that counts.
    always: u64,
    /// The relation matchers of all rules, as match bits.
    relations: u64,
    /// The rule of each relation matcher bit.
    rule_of: [u8; 64],
    /// The root matchers of the rules with a scope, as match bits.
    scoped_roots: u64,
    /// Their relation matchers, as match bits.
    scoped_relations: u64,
    /// A rule with a scope is stepped on every event that counts.
    scoped_always: bool,
    /// A rule with a scope has its root matcher beyond [`MatchBits::low`]: the masks above
    /// do not tell, each rule is asked.
    scoped_wide: bool,
}

impl RuleMasks {
    /// The rules whose relation may step on an event with these matches (see
    /// [`RuleIds::may_step`]), scoped or not.
    #[inline]
    fn stepped(&self, bits: &MatchBits) -> u64 {
        let mut rules = self.always;
        let mut matched = bits.low & self.relations;
        while matched != 0 {
            rules |= 1 << self.rule_of[matched.trailing_zeros() as usize];
            matched &= matched - 1;
        }
        rules
    }

    fn new(rules: &[CompiledRule], ids: &[RuleIds]) -> RuleMasks {
        let mut masks = RuleMasks {
            scoped: 0,
            always: 0,
            relations: 0,
            rule_of: [0; 64],
            scoped_roots: 0,
            scoped_relations: 0,
            scoped_always: false,
            scoped_wide: false,
        };
        for (idx, (rule, ids)) in rules.iter().zip(ids).enumerate().take(64) {
            if rule.within.is_some() {
                masks.scoped |= 1 << idx;
                masks.scoped_relations |= ids.relation_mask;
                masks.scoped_always |= ids.always_step;
                if ids.within < 64 {
                    masks.scoped_roots |= 1 << ids.within;
                } else {
                    masks.scoped_wide = true;
                }
            }
            if ids.always_step {
                masks.always |= 1 << idx;
            }
            masks.relations |= ids.relation_mask;
            for id in [ids.first, ids.second] {
                if id < 64 {
                    masks.rule_of[id] = idx as u8;
                }
            }
        }
        masks
    }
}

/// Where match results come from: matching the occurrence now, or precomputed bits.
enum Matches<'o, 'a> {
    Lazy(&'o Occurrence<'a>),
    Bits(&'o MatchBits),
}

impl Matches<'_, '_> {
    /// False only when the rule's relation certainly does not change on this event: with
    /// precomputed bits, neither of its matchers matched (and its state only changes on a
    /// match).
    fn may_step(&self, ids: &RuleIds) -> bool {
        match self {
            Matches::Lazy(_) => true,
            Matches::Bits(bits) => ids.may_step(bits),
        }
    }

    fn check(&self, matcher: &CompiledMatcher, id: usize) -> bool {
        match self {
            Matches::Lazy(occurrence) => matcher.matches(occurrence),
            Matches::Bits(bits) => bits.get(id),
        }
    }
}

/// The matchers of a rule set, numbered; see [`SequenceEngine::match_plan`].
///
/// Matching depends only on the event itself, so it can run on any thread, in any order.
#[derive(Debug, Clone)]
pub struct MatchPlan {
    matchers: Vec<CompiledMatcher>,
    /// For every exact name some matcher mentions: by kind (tool, agent), the matchers whose
    /// kind and name checks pass for it, so only their argument checks are left.
    by_name: Vec<(String, [NameMatchers; 2])>,
    /// For every entry of `by_name`, its [`name_key`] and length: a short name is found
    /// without a `memcmp` call.
    name_keys: Vec<(u64, usize)>,
    /// Per matcher, per argument check: the index of its path among the distinct paths.
    arg_slots: Vec<Vec<usize>>,
    /// An index into `by_name` when it is long (a short one is searched in order).
    name_index: Option<FastMap<String, usize>>,
    /// By kind, the matchers that can match a name no matcher mentions exactly (those with a
    /// name glob or no name at all).
    others: [Vec<usize>; 2],
    /// Per matcher, an earlier one written the same way (whose answer it copies).
    same_as: Vec<Option<usize>>,
}

impl MatchPlan {
    /// Which matchers `event` satisfies.
    #[inline]
    pub fn evaluate(&self, event: &EventRef<'_>) -> MatchBits {
        let mut bits = MatchBits::default();
        let kind = match event.event_type {
            EventType::ToolCallStart | EventType::ToolCallEnd => CallKind::Tool,
            EventType::AgentInvokeStart | EventType::AgentInvokeEnd => CallKind::Agent,
            _ => return bits,
        };
        let occurrence = Occurrence {
            kind,
            name: event.name.unwrap_or(""),
            raw_args: event.args,
            parsed_args: std::cell::OnceCell::new(),
        };
        let slot = usize::from(kind == CallKind::Agent);
        let found = match &self.name_index {
            None => {
                let (key, len) = (name_key(occurrence.name), occurrence.name.len());
                self.name_keys
                    .iter()
                    .zip(&self.by_name)
                    .find(|(known, (name, _))| {
                        **known == (key, len) && (len <= 8 || bytes_eq(name.as_bytes(), occurrence.name.as_bytes()))
                    })
                    .map(|(_, entry)| entry)
            }
            Some(index) => index.get(occurrence.name).map(|&idx| &self.by_name[idx]),
        }
        .map(|(_, lists)| lists);
        match found {
            Some(lists) => {
                let lists = &lists[slot];
                bits = lists.always.clone();
                if lists.check.is_empty() {
                    return bits;
                }
                let mut memo: [ArgMemo<'_>; 4] = Default::default();
                for &id in &lists.check {
                    let matched = match self.same_as[id] {
                        Some(earlier) => bits.get(earlier),
                        None => self.matchers[id].args_match_memo(&occurrence, &self.arg_slots[id], &mut memo),
                    };
                    if matched {
                        bits.set(id);
                    }
                }
            }
            None => {
                for &id in &self.others[slot] {
                    let matched = match self.same_as[id] {
                        Some(earlier) => bits.get(earlier),
                        None => self.matchers[id].matches(&occurrence),
                    };
                    if matched {
                        bits.set(id);
                    }
                }
            }
        }
        bits
    }
}

/// The matchers whose kind and name checks pass for one name.
#[derive(Debug, Clone, Default)]
struct NameMatchers {
    /// Those without argument checks: they match every call of the name.
    always: MatchBits,
    /// Those with argument checks, in order.
    check: Vec<usize>,
}

/// What [`MatchPlan::prepare`] works out for one event apart from the engine: the matchers it
/// satisfies and the hashes of its span ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// The matchers the event satisfies.
    pub bits: MatchBits,
    span_hash: u64,
    parent_hash: u64,
    flags: u8,
}

impl Prepared {
    const CALL_END: u8 = 1;
    const HAS_PARENT: u8 = 2;
    const POST_ONLY_PARENT: u8 = 4;
    const HAS_SPAN: u8 = 8;
    const TOOL_WITH_PARENT: u8 = 16;
    const AGENT: u8 = 32;

    /// The event ends a tool call or an agent invocation.
    fn is_call_end(&self) -> bool {
        self.flags & Prepared::CALL_END != 0
    }

    fn has_parent(&self) -> bool {
        self.flags & Prepared::HAS_PARENT != 0
    }

    fn post_only_parent(&self) -> bool {
        self.flags & Prepared::POST_ONLY_PARENT != 0
    }

    fn has_span(&self) -> bool {
        self.flags & Prepared::HAS_SPAN != 0
    }

    /// The event starts or ends a tool call that has a parent.
    fn tool_with_parent(&self) -> bool {
        self.flags & Prepared::TOOL_WITH_PARENT != 0
    }

    /// The event starts or ends an agent invocation.
    fn is_agent(&self) -> bool {
        self.flags & Prepared::AGENT != 0
    }
}

impl MatchPlan {
    /// [`MatchPlan::evaluate`], and the hashes the engine keeps span ids by; for
    /// [`SequenceEngine::feed_prepared`] and [`Summarizer::push`].
    #[inline]
    pub fn prepare(&self, event: &EventRef<'_>) -> Prepared {
        let call_end = matches!(event.event_type, EventType::ToolCallEnd | EventType::AgentInvokeEnd);
        let tool = matches!(event.event_type, EventType::ToolCallStart | EventType::ToolCallEnd);
        let (span_hash, parent_hash) = event_hashes(event);
        Prepared {
            bits: self.evaluate(event),
            span_hash,
            parent_hash,
            flags: (u8::from(call_end) * Prepared::CALL_END)
                | (u8::from(event.parent_span_id.is_some()) * Prepared::HAS_PARENT)
                | (u8::from(event.post_only_parent) * Prepared::POST_ONLY_PARENT)
                | (u8::from(event.span_id.is_some()) * Prepared::HAS_SPAN)
                | (u8::from(tool && event.parent_span_id.is_some()) * Prepared::TOOL_WITH_PARENT)
                | (u8::from(matches!(event.event_type, EventType::AgentInvokeStart | EventType::AgentInvokeEnd))
                    * Prepared::AGENT),
        }
    }
}

/// The starts in flight under one open id: see [`SequenceEngine::open_call_info`].
#[derive(Debug, Clone, Default)]
struct OpenCall {
    /// Per call: [`call_key`] of its start, what the rules made of its start, and how many
    /// such starts have not ended. Almost always one entry, kept inline: every start of a
    /// hook or OTLP trace makes one.
    starts: smallvec::SmallVec<[(Option<u64>, StartMatch, u32); 1]>,
}

/// What keys a call's line in the tier-3 excerpt, for its end to mark: its span's hash, or
/// for a start without an id its feed order ([`SequenceEngine::order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExcerptKey {
    Span(u64),
    Idless(u64),
}

/// What a call's start told the rules, for its end: whether it had no arguments (see
/// [`bare_args`]), which `never` and `count` rules with argument conditions (bit `i`: rule
/// `i`, the first 64) its start matched, and the hash of its parent span (0: none). An end
/// with arguments is checked against the others, placed by the start's parent (else its
/// own): a start without arguments, or an input a hook rewrote, hid them from the start
/// ([`SequenceEngine::feed_inner`]). For an end, the same of the end ([`OpenCall::end`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct StartMatch {
    bare: bool,
    matched: u64,
    parent: u64,
    /// A hash of the call id ([`EventRef::call_id`]; 0: none).
    call: u64,
    /// Argument conditions cannot read the start's arguments (see `unreadable_arguments`):
    /// its entry in [`SequenceEngine::unread_starts`] is settled at the end.
    unread: bool,
}

impl OpenCall {
    fn start(&mut self, what: Option<u64>, bare: StartMatch) {
        match self.starts.iter_mut().find(|(w, b, _)| *w == what && *b == bare) {
            Some((_, _, count)) => *count = count.saturating_add(1),
            None => self.starts.push((what, bare, 1)),
        }
    }

    /// Ends one start this end is of (same kind and name; an end or a start without a name
    /// pairs with any, the oldest first). Of several of its name, the end (`like`: its call
    /// id, whether it has arguments, the rules they matched, its parent) takes the one most
    /// like it: one of its call id; else, of the starts whose matches it also has, one of no
    /// other call id, the one with the most matches, then one with arguments, then one under
    /// its parent. An end without arguments (`like.bare`) takes one of its call id, else one
    /// under its parent, then one without arguments either, else the oldest. What the start
    /// told, when one was open.
    fn end(&mut self, what: Option<u64>, like: StartMatch) -> Option<StartMatch> {
        let likeness = |start: &StartMatch| {
            let same_call = like.call != 0 && start.call == like.call;
            let other_call = like.call != 0 && start.call != 0 && !same_call;
            let same_parent = like.parent != 0 && start.parent == like.parent;
            if like.bare {
                // (A bare end's keys are compared only with each other.)
                return Some((same_call, !other_call, 0, same_parent, start.bare));
            }
            (same_call || start.matched & !like.matched == 0).then_some((
                same_call,
                !other_call,
                start.matched.count_ones(),
                !start.bare,
                same_parent,
            ))
        };
        // The first of the most alike (`max_by_key` keeps the last of equals: reversed).
        let idx = (self.starts.iter().enumerate().rev())
            .filter(|(_, (w, ..))| *w == what)
            .filter_map(|(idx, (_, start, _))| Some((idx, likeness(start)?)))
            .max_by_key(|(_, key)| *key)
            .map(|(idx, _)| idx)
            .or_else(|| self.starts.iter().position(|(w, ..)| *w == what))
            .or_else(|| self.starts.iter().position(|(w, ..)| w.is_none() || what.is_none()))?;
        let (_, bare, count) = &mut self.starts[idx];
        let bare = *bare;
        *count -= 1;
        if *count == 0 {
            self.starts.remove(idx);
        }
        Some(bare)
    }
}

/// A hash of a call id (0: none): see [`StartMatch::call`].
fn call_hash(id: Option<&str>) -> u64 {
    id.filter(|id| !id.is_empty()).map_or(0, |id| span_hash(None, id))
}

/// A call's kind and name as one number, to tell an end of another call apart: a tool
/// call's kind and name (`None` without a name), an agent invocation's kind alone (a
/// subagent's stop may name its type otherwise than its start).
fn call_key(agent: bool, name: Option<&str>) -> Option<u64> {
    use std::hash::BuildHasher as _;
    if agent {
        return Some(foldhash::fast::FixedState::default().hash_one(true));
    }
    let name = name.filter(|name| !name.is_empty())?;
    Some(foldhash::fast::FixedState::default().hash_one((false, name)))
}

/// The first eight bytes of a name as a number: with the length, the whole of a name of at
/// most eight bytes.
fn name_key(name: &str) -> u64 {
    name.as_bytes().iter().take(8).fold(0, |key, byte| (key << 8) | u64::from(*byte))
}

/// The matchers one event satisfies (see [`MatchPlan::evaluate`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchBits {
    low: u64,
    /// Bits 64 and up (boxed once more: a thin pointer keeps every event's bits at 16 bytes).
    more: Option<Box<Words>>,
}

impl MatchBits {
    #[inline]
    fn set(&mut self, id: usize) {
        if id < 64 {
            self.low |= 1 << id;
        } else {
            self.set_wide(id);
        }
    }

    #[cold]
    fn set_wide(&mut self, id: usize) {
        let word = (id - 64) / 64;
        let more = &mut self.more.get_or_insert_with(Default::default).0;
        if more.len() <= word {
            more.resize(word + 1, 0);
        }
        more[word] |= 1 << ((id - 64) % 64);
    }

    #[inline]
    fn get(&self, id: usize) -> bool {
        if id < 64 {
            self.low & (1 << id) != 0
        } else {
            let word = self.more.as_deref().and_then(|more| more.0.get((id - 64) / 64));
            word.is_some_and(|word| word & (1 << ((id - 64) % 64)) != 0)
        }
    }
}

/// The words of [`MatchBits`] past the first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Words(Vec<u64>);

/// A hash map for names, with a fast fixed-seed hasher (the same on every run).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// A span id with its hash (worked out once per event, possibly on another thread).
#[derive(Debug, Clone, Copy)]
struct SpanRef<'a> {
    hash: u64,
    id: &'a str,
}

/// The span and parent of `event`, with `hashes` (worked out on another thread) or hashed now.
fn span_refs<'a>(event: &EventRef<'a>, hashes: Option<(u64, u64)>) -> (Option<SpanRef<'a>>, Option<SpanRef<'a>>) {
    let (span_hash, parent_hash) = hashes.unwrap_or_else(|| event_hashes(event));
    (
        event.span_id.map(|id| SpanRef { hash: span_hash, id }),
        event.parent_span_id.map(|id| SpanRef { hash: parent_hash, id }),
    )
}

/// The hash span ids are known by (in span sets, and alone where a parent is known only by
/// its hash: [`Links`], awaited parents): foldhash's quality variant with a fixed seed, so
/// that every bit of the id reaches every bit of the hash. A weaker hash (FxHash, used here
/// before) gave sequential ids such as `call_1119` and `call_1192` the same 64 bits, and so
/// put calls in scopes they were not in. Never 0, which stands for no span.
#[inline]
fn span_hash(trace: Option<&str>, id: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = foldhash::quality::FixedState::default().build_hasher();
    if let Some(trace) = trace {
        hasher.write(trace.as_bytes());
        hasher.write_usize(trace.len());
    }
    hasher.write(id.as_bytes());
    hasher.finish().max(1)
}

/// The hashes of an event's span and parent, within its trace when it names one (0: none).
#[inline]
fn event_hashes(event: &EventRef<'_>) -> (u64, u64) {
    let hash = |id: &str| span_hash(event.trace_id, id);
    (event.span_id.map_or(0, hash), event.parent_span_id.map_or(0, hash))
}

/// A set of span ids, each hashed once. Members live in reused slots, so a set that stays
/// the same size allocates nothing; a slot's generation tells a remembered member from a
/// later one in the same slot.
#[derive(Debug, Default)]
struct SpanSet {
    table: HashTable<u32>,
    slots: Vec<SpanSlot>,
    free: Vec<u32>,
}

#[derive(Debug)]
struct SpanSlot {
    hash: u64,
    id: String,
    generation: u32,
}

impl SpanSlot {
    fn holds(&self, span: SpanRef<'_>) -> bool {
        // The hash tells one id in two traces apart.
        self.hash == span.hash && bytes_eq(self.id.as_bytes(), span.id.as_bytes())
    }
}

/// A member as inserted: its slot and the slot's generation then.
type SpanKey = (u32, u32);

impl SpanSet {
    fn len(&self) -> usize {
        self.table.len()
    }

    fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    fn contains(&self, span: SpanRef<'_>) -> bool {
        let slots = &self.slots;
        self.table.find(span.hash, |&slot| slots[slot as usize].holds(span)).is_some()
    }

    /// Whether a member has this hash (for ids known only by their hash).
    fn contains_hash(&self, hash: u64) -> bool {
        let slots = &self.slots;
        self.table.find(hash, |&slot| slots[slot as usize].hash == hash).is_some()
    }

    /// The key of `span`, when it is a member.
    fn key_of(&self, span: SpanRef<'_>) -> Option<SpanKey> {
        let slots = &self.slots;
        let slot = *self.table.find(span.hash, |&slot| slots[slot as usize].holds(span))?;
        Some((slot, slots[slot as usize].generation))
    }

    /// Adds `span`; `None` when it is a member already.
    fn insert(&mut self, span: SpanRef<'_>) -> Option<SpanKey> {
        let slots = &mut self.slots;
        let hasher = |slot: &u32| slots[*slot as usize].hash;
        let same = |slot: &u32| slots[*slot as usize].holds(span);
        let vacant = match self.table.entry(span.hash, same, hasher) {
            hashbrown::hash_table::Entry::Occupied(_) => return None,
            hashbrown::hash_table::Entry::Vacant(vacant) => vacant,
        };
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                slots.push(SpanSlot { hash: 0, id: String::new(), generation: 0 });
                (slots.len() - 1) as u32
            }
        };
        let entry = &mut slots[slot as usize];
        entry.hash = span.hash;
        entry.id.clear();
        entry.id.push_str(span.id);
        vacant.insert(slot);
        Some((slot, entry.generation))
    }

    /// Removes `span`; false when it was not a member.
    fn remove(&mut self, span: SpanRef<'_>) -> bool {
        let slots = &self.slots;
        match self.table.find_entry(span.hash, |&slot| slots[slot as usize].holds(span)) {
            Ok(entry) => {
                let (slot, _) = entry.remove();
                self.release(slot);
                true
            }
            Err(_) => false,
        }
    }

    /// The hash of the member inserted as `key`, unless it has gone already.
    fn hash_of(&self, (slot, generation): SpanKey) -> Option<u64> {
        self.slots.get(slot as usize).filter(|entry| entry.generation == generation).map(|entry| entry.hash)
    }

    /// Removes the member inserted as `key`, unless it has gone already (then false).
    fn remove_key(&mut self, (slot, generation): SpanKey) -> bool {
        let Some(entry) = self.slots.get(slot as usize) else { return false };
        if entry.generation != generation {
            return false;
        }
        match self.table.find_entry(entry.hash, |&member| member == slot) {
            Ok(found) => {
                found.remove();
                self.release(slot);
                true
            }
            Err(_) => false,
        }
    }

    fn release(&mut self, slot: u32) {
        let entry = &mut self.slots[slot as usize];
        entry.generation = entry.generation.wrapping_add(1);
        self.free.push(slot);
    }
}

/// Occurrences under one span that had not put them in scope yet (it came after them).
#[derive(Debug, Clone, Copy)]
struct Late {
    calls: u64,
    /// The first of them, for notes.
    first: Location,
    /// For `before` and `only_after`: the first `a` and the first `b` among them, with their
    /// feed order.
    a: Option<(u64, Location)>,
    b: Option<(u64, Location)>,
}

impl Late {
    /// Adds `other`'s occurrences.
    fn merge(&mut self, other: &Late) {
        if self.calls == 0 || other.first.seq < self.first.seq {
            self.first = other.first;
        }
        self.calls += other.calls;
        self.a = earliest(self.a, other.a);
        self.b = earliest(self.b, other.b);
    }
}

/// The earlier (by feed order) of two optional occurrences.
fn earliest(x: Option<(u64, Location)>, y: Option<(u64, Location)>) -> Option<(u64, Location)> {
    match (x, y) {
        (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A span as the set of awaited parents keys it: by hash alone, since a parent may be known
/// only by the hash a post-only call recorded for it (see [`climb`]).
fn by_hash(hash: u64) -> SpanRef<'static> {
    SpanRef { hash, id: "" }
}

/// Slots of the table of scope spans dropped from the window (see [`Scope::was_dropped`]).
const DROPPED_SCOPE_SPANS: usize = 4_096;

#[derive(Debug, Default)]
struct Scope {
    /// The spans of the scope that started and have not ended.
    open: SpanSet,
    /// The spans of the scope that ended or never end (post-only): the latest
    /// [`POST_ONLY_SCOPE_WINDOW`].
    ended: Window,
    overflowed: bool,
    /// Parents of occurrences that were outside the scope, the latest
    /// [`POST_ONLY_SCOPE_WINDOW`], oldest first: if one of them opens a scope later, its
    /// children came before it in the file.
    orphans: SpanSet,
    orphan_order: VecDeque<SpanKey>,
    /// Per slot of `orphans`: the occurrences under that parent.
    orphan_calls: Vec<Late>,
    /// Spans that opened a scope after occurrences under them were counted as outside.
    late_parents: u64,
    /// Occurrences under such spans that the rule took in when the span opened.
    attributed: u64,
    /// For `before` and `only_after`: the feed order (see [`SequenceEngine::order`]) of the
    /// rule's first `a` and first `b` inside the scope, to place calls taken in late.
    firsts: [Option<u64>; 2],
    /// Whether any span matched the scope's root.
    rooted: bool,
    /// Records that matched the scope's root but had no span id, so nothing could be under
    /// them (a Claude Code hook without `tool_use_id`, a tooltrace line without `trace_id`).
    idless_roots: u64,
    /// Occurrences outside the scope whose parent was such a span.
    under_dropped: u64,
    /// Occurrences whose parent was forgotten (more than [`POST_ONLY_SCOPE_WINDOW`] parents
    /// waited at once) before it could put them in scope.
    forgotten: u64,
    /// Occurrences more than [`MAX_LINK_DEPTH`] recorded spans below the nearest one that
    /// settles them, counted as outside.
    too_deep: u64,
    /// Occurrences counted as outside because their highest recorded ancestor had no parent
    /// and was no scope span, by that ancestor's hash (for at most
    /// [`POST_ONLY_SCOPE_WINDOW`] ancestors), with the line of the first: an ancestor id that
    /// opens the scope later names a second span (see [`Scope::reused`]).
    outside_under: FastMap<u64, (u64, Option<u64>)>,
    /// Occurrences of `outside_under` whose ancestor's id a scope span took later (an id an
    /// earlier run in the same file used): whether they were inside, the trace cannot tell.
    reused: (u64, Option<u64>),
}

impl Scope {
    /// Remembers `calls` occurrences (the first at `line`) counted as outside under the
    /// parentless span `top`.
    fn note_outside(&mut self, top: u64, calls: u64, line: Option<u64>) {
        let room = self.outside_under.len() < POST_ONLY_SCOPE_WINDOW;
        match self.outside_under.get_mut(&top) {
            Some(tallied) => tally_many(tallied, calls, line),
            None if room => {
                self.outside_under.insert(top, (calls, line));
            }
            None => {}
        }
    }

    /// The span `hash` opens the scope: occurrences counted as outside under an earlier span
    /// of that id were under another span than this one, or under this one.
    fn opened_at(&mut self, hash: u64) {
        if !self.outside_under.is_empty()
            && let Some((calls, line)) = self.outside_under.remove(&hash)
        {
            tally_many(&mut self.reused, calls, line);
        }
    }

    /// Remembers occurrences under `parent` that were outside the scope.
    fn note_orphans(&mut self, parent: SpanRef<'_>, late: Late) {
        let parent = by_hash(parent.hash);
        let (slot, _) = match self.orphans.key_of(parent) {
            Some(key) => key,
            None => {
                let Some(key) = self.orphans.insert(parent) else { return };
                let empty = Late { calls: 0, ..late };
                if self.orphan_calls.len() <= key.0 as usize {
                    self.orphan_calls.resize(key.0 as usize + 1, empty);
                }
                self.orphan_calls[key.0 as usize] = empty;
                self.orphan_order.push_back(key);
                // Parents that came (or passed their calls up) left their keys behind: only
                // awaited ones count, and the oldest of those goes.
                while self.orphans.len() > POST_ONLY_SCOPE_WINDOW
                    && let Some(oldest) = self.orphan_order.pop_front()
                {
                    if self.orphans.remove_key(oldest) {
                        self.forgotten += self.orphan_calls.get(oldest.0 as usize).map_or(0, |late| late.calls);
                    }
                }
                if self.orphan_order.len() > 2 * POST_ONLY_SCOPE_WINDOW {
                    let orphans = &self.orphans;
                    self.orphan_order.retain(|&key| orphans.hash_of(key).is_some());
                }
                key
            }
        };
        if let Some(record) = self.orphan_calls.get_mut(slot as usize) {
            record.merge(&late);
        }
    }

    /// Whether occurrences wait for any span.
    fn awaits_any(&self) -> bool {
        !self.orphans.is_empty()
    }

    /// Whether occurrences wait for `span` (see [`Scope::note_orphans`]).
    fn awaits(&self, span: SpanRef<'_>) -> bool {
        self.awaits_any() && self.orphans.contains(by_hash(span.hash))
    }

    /// The occurrences that waited for `span`, which waits no more: the caller takes them in
    /// (it opened a scope), hands them on (see [`hand_on_orphans`]) or drops them (outside).
    fn take_waiting(&mut self, span: SpanRef<'_>) -> Option<Late> {
        if self.orphans.is_empty() {
            return None;
        }
        let span = by_hash(span.hash);
        let (slot, _) = self.orphans.key_of(span)?;
        self.orphans.remove(span);
        self.orphan_calls.get(slot as usize).copied()
    }

    /// Opens a span; `post_only` spans never close, so only the latest few are kept.
    fn open(&mut self, span: SpanRef<'_>, post_only: bool) {
        if post_only {
            self.open_ended(span.hash);
        } else if self.open.len() < MAX_OPEN_SPANS {
            self.open.insert(span);
        } else if !self.open.contains(span) {
            self.overflowed = true;
        }
    }

    /// A span ends: calls that name it as their parent later are still inside, so it stays
    /// among the latest ended spans.
    fn close(&mut self, span: SpanRef<'_>) {
        // An end of a span that ended before (written twice) puts it at the window's front.
        if self.open.remove(span) || self.ended.forget(span.hash) {
            self.ended.push(span.hash);
        }
    }

    /// Opens a post-only span (one that never ends) by its hash: it joins the latest ended,
    /// unless it started and has not ended (then it stays open).
    fn open_ended(&mut self, hash: u64) {
        if !self.open.contains_hash(hash) {
            self.ended.push(hash);
        }
    }

    /// Whether `span` is in the scope (open, or among the latest ended).
    fn contains(&mut self, span: SpanRef<'_>) -> bool {
        self.open.contains(span) || self.ended.contains(span.hash)
    }

    /// Whether a span with this hash is in the scope (for ids known only by their hash).
    fn contains_hash(&mut self, hash: u64) -> bool {
        self.open.contains_hash(hash) || self.ended.contains(hash)
    }

    /// Takes `span` out of the scope (a span id that starts again outside it).
    fn remove(&mut self, span: SpanRef<'_>) {
        if !self.open.remove(span) {
            self.ended.forget(span.hash);
        }
    }

    /// Whether `parent` is probably a scope span dropped from the window (one with the same
    /// hash was; a later drop may have taken its place, so `false` does not mean it was not).
    fn was_dropped(&self, parent: SpanRef<'_>) -> bool {
        self.ended.dropped.as_ref().is_some_and(|table| {
            parent.hash != 0 && table[(parent.hash % DROPPED_SCOPE_SPANS as u64) as usize] == parent.hash
        })
    }
}

/// The latest [`POST_ONLY_SCOPE_WINDOW`] spans of a scope that ended or never end, by hash.
/// Appending one is a write to a ring ([`Links`], each span with `1`, or `0` once taken
/// out); the ring is indexed only when a call asks whether its parent is in the scope, so a
/// trace of thousands of `Task` lines whose calls sit elsewhere costs an append per line.
#[derive(Debug)]
struct Window {
    spans: Links,
    /// Hashes of spans pushed out of the window (by hash modulo its size, the latest wins),
    /// made when the first goes.
    dropped: Option<Box<[u64]>>,
}

impl Default for Window {
    fn default() -> Window {
        Window { spans: Links::with_capacity(POST_ONLY_SCOPE_WINDOW), dropped: None }
    }
}

impl Window {
    /// Adds a span (again: its latest time counts).
    fn push(&mut self, hash: u64) {
        if let Some((oldest, 1)) = self.spans.note(hash, 1) {
            let table = self.dropped.get_or_insert_with(|| vec![0; DROPPED_SCOPE_SPANS].into_boxed_slice());
            table[(oldest % DROPPED_SCOPE_SPANS as u64) as usize] = oldest;
        }
    }

    fn contains(&mut self, hash: u64) -> bool {
        self.spans.parent_of(hash) == Some(1)
    }

    /// Takes a span out; false when it was not in.
    fn forget(&mut self, hash: u64) -> bool {
        self.spans.replace(hash, 1, 0)
    }
}

/// The state of one rule; `Before::a_first`: an `a` had occurred when the first `b` did
/// (decided by the order events are fed in, not by the locations' `seq`).
#[derive(Debug)]
enum RuleState {
    Before {
        first_a: Option<Location>,
        first_b: Option<Location>,
        a_first: bool,
    },
    OnlyAfter {
        seen_a: Option<Location>,
        first_b: Option<Location>,
        violation: Option<Location>,
    },
    /// `previous`: the previous call (to tell the agent it spawned, and for the note), and
    /// `violation`'s second part the call right before the first `b` not preceded by an `a`
    /// (none: it was the first call).
    ImmediatelyBefore {
        previous_is_a: bool,
        previous: Option<Call>,
        count_b: u64,
        violation: Option<(Location, Option<Call>)>,
        first_b: Option<Location>,
    },
    Never {
        first: Option<Location>,
        count: u64,
    },
    Count {
        count: u64,
    },
}

/// The verdict of one rule.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleOutcome {
    /// Whether the rule held.
    pub passed: bool,
    /// Why, citing trace lines.
    pub notes: String,
}

/// What one pass over a trace produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceOutcome {
    /// One outcome per rule, in the order the rules were given.
    pub outcomes: Vec<RuleOutcome>,
    /// Events read.
    pub events: u64,
    /// Tool calls and agent invocations seen.
    pub calls: u64,
    /// Of the events, those taken in through [`SequenceEngine::apply_summary`] rather than
    /// one by one (for tests and `AGENTIC_CHECK_STATS`).
    pub summarized: u64,
    /// The last calls, one line each (`line 12: Read {...}`), for tier-3 evaluators.
    pub excerpt: Vec<String>,
    /// The first three traces (Claude Code sessions, OTLP traces) whose calls were seen, in
    /// order; two or more when calls of several are in one file (rules then read them as
    /// one sequence, and the notes of order rules warn). Tooltrace ids are file-wide: none.
    pub traces: Vec<String>,
    /// Subagents likely linked to the wrong spawning call (events marked
    /// [`agentic_core::event::SPAWN_MISATTRIBUTED`]), and the line of the first mark.
    pub misattributed_spawns: (u64, Option<u64>),
    /// OTLP tool calls that record no arguments (`gen_ai.tool.call.arguments` is opt-in in the
    /// OpenTelemetry GenAI conventions) and whose tool a matcher with `args` or `args_text`
    /// conditions names, and the line of the first: those conditions cannot match such calls,
    /// and the notes of the rules that have such matchers warn (each counting the calls of
    /// the tools its own matchers name).
    pub calls_without_arguments: (u64, Option<u64>),
    /// Calls whose start had no arguments (absent, `null` or `{}`) and whose end has them,
    /// with the line of the first such end, when an order rule (`before`, `only_after`,
    /// `immediately_before`) has argument conditions: it places a call at its start, so those
    /// conditions did not see the end's arguments (`never` and `count` rules do).
    pub calls_with_late_arguments: (u64, Option<u64>),
    /// Calls whose end has arguments other than its start's that match a `never` or `count`
    /// rule the start's did not (a hook that rewrote the input), with the line of the first
    /// such end: those rules took the calls in at the end.
    pub calls_with_changed_arguments: (u64, Option<u64>),
    /// Tool calls whose arguments are not a JSON object or list (a tooltrace `args` or a
    /// hook's `tool_input` written as a string; OTLP `gen_ai.tool.call.arguments` that is
    /// not JSON, such as a language's own printing of a dict, or a lone value) and whose tool
    /// a matcher with `args` path conditions names, and the line of the first: `args_text`
    /// matches such arguments, `args` paths cannot.
    pub calls_with_text_arguments: (u64, Option<u64>),
    /// Calls that record no tool or agent name (an OTLP `execute_tool` span without
    /// `gen_ai.tool.name` whose span name is only the operation), and the line of the first,
    /// when a rule's matchers name calls (none otherwise): those matchers cannot match such
    /// calls, and the notes of the rules that have them warn.
    pub calls_without_name: (u64, Option<u64>),
    /// OTLP spans placed out of time order, after events that started later (marked
    /// [`agentic_core::event::OUT_OF_ORDER`]: more spans came in between than the reader holds
    /// to order them), and the line of the first; the notes of order rules warn.
    pub out_of_order_spans: (u64, Option<u64>),
    /// OTLP spans without a start time (marked [`agentic_core::event::START_MISSING`]), placed
    /// at their end time, and the line of the first; the notes of order rules warn.
    pub spans_without_start: (u64, Option<u64>),
    /// Records whose time reads only as a time without a zone, taken as UTC, and records
    /// whose time does not read at all (marked [`agentic_core::event::TIME_UNREAD`]), each
    /// with the line of the first: their calls count (order is the file's), `check` warns.
    pub times_without_zone: (u64, Option<u64>),
    /// See [`TraceOutcome::times_without_zone`].
    pub times_unread: (u64, Option<u64>),
    /// Rules whose scope matched spans in a trace where no call records a parent (a Claude
    /// Code hook capture without `agent_id`, tooltrace lines without `parent_trace_id`): nothing
    /// could be placed inside those scopes, so the rules saw nothing inside.
    pub unlinked_scopes: u64,
    /// The scopes that no span of the trace matched, as rules describe them, and whether each
    /// names an agent: their rules saw nothing inside them (a wrong name, or an agent scope
    /// over a trace that records no agent starts, as tooltrace); the notes say so and `check`
    /// warns.
    pub unmatched_scopes: Vec<(String, bool)>,
}

/// The streaming tier-2 engine: feed events in trace order, then [`SequenceEngine::finish`].
#[derive(Debug)]
pub struct SequenceEngine {
    rules: Vec<CompiledRule>,
    ids: Vec<RuleIds>,
    masks: RuleMasks,
    matcher_count: usize,
    states: Vec<RuleState>,
    scopes: Vec<Option<Scope>>,
    open_calls: SpanSet,
    /// Per open call: what its start was (kind and name) and how many starts under its id
    /// have not ended. An end pairs with it only when it is of the same kind and name, so a
    /// call of another tool that reuses the id (a later run numbering its ids afresh) is a
    /// call of its own, not absorbed; two starts in flight under one id take two ends.
    open_call_info: FastMap<SpanKey, OpenCall>,
    open_call_order: VecDeque<SpanKey>,
    /// Starts without a span id that have not ended, by kind, trace and name, with their
    /// arguments, oldest first: an end without an id pairs with one of its name whose
    /// arguments agree (at most [`MAX_IDLESS_NAMES`] names, and as many starts per name, are
    /// tracked).
    open_idless: HashMap<IdlessKey, VecDeque<(Option<Value>, StartMatch, u64)>>,
    /// The last calls, with their span's hash (to mark a failed end on its start's line).
    excerpt: VecDeque<(Option<ExcerptKey>, String)>,
    excerpt_capacity: usize,
    events: u64,
    calls: u64,
    summarized: u64,
    /// See [`TraceOutcome::traces`].
    traces: Vec<String>,
    /// See [`TraceOutcome::misattributed_spawns`].
    misattributed_spawns: (u64, Option<u64>),
    /// See [`TraceOutcome::calls_without_arguments`].
    calls_without_arguments: (u64, Option<u64>),
    /// Per rule: the calls of [`TraceOutcome::calls_without_arguments`] and of
    /// [`TraceOutcome::calls_with_text_arguments`] that its own matchers name.
    unread_arguments_by_rule: Vec<[(u64, Option<u64>); 2]>,
    /// Started tool calls not yet ended whose arguments argument conditions cannot read
    /// (at most [`MAX_UNREAD_STARTS`]): counted at their end unless it brings arguments they
    /// read, and at the end of the trace if they never end.
    unread_starts: VecDeque<UnreadStart>,
    /// Some rule has argument conditions (`args` or `args_text`): only then are calls whose
    /// arguments they cannot read counted.
    reads_arguments: bool,
    /// See [`TraceOutcome::calls_with_late_arguments`].
    calls_with_late_arguments: (u64, Option<u64>),
    /// See [`TraceOutcome::calls_with_changed_arguments`].
    calls_with_changed_arguments: (u64, Option<u64>),
    /// The `never` and `count` rules among the first 64 whose matcher reads arguments (bit
    /// `i`: rule `i`): an end can show them what its start did not (see [`StartMatch`]).
    late_capable: u64,
    /// See [`TraceOutcome::calls_with_text_arguments`].
    calls_with_text_arguments: (u64, Option<u64>),
    /// See [`TraceOutcome::calls_without_name`].
    calls_without_name: (u64, Option<u64>),
    /// See [`TraceOutcome::out_of_order_spans`].
    out_of_order_spans: (u64, Option<u64>),
    /// See [`TraceOutcome::spans_without_start`].
    spans_without_start: (u64, Option<u64>),
    /// See [`TraceOutcome::times_without_zone`].
    times_without_zone: (u64, Option<u64>),
    /// See [`TraceOutcome::times_unread`].
    times_unread: (u64, Option<u64>),
    /// Counts the events the rules with a scope see, in feed order (events folded into a
    /// summary are not among them): it orders occurrences taken into a scope late.
    order: u64,
    /// Whether a rule has a scope (and so needs `links`).
    scoped: bool,
    /// Whether a tool call had a parent (noted when a rule has a scope): whether any tool
    /// call could be inside a scope at all. Subagents linked to their `Task` call while
    /// their tool calls carry no link (Claude Code hooks with `agent_id` on `SubagentStart`
    /// only), model calls and steps do not count.
    parented_calls: bool,
    /// Whether an agent invocation (a start or an end) was seen: a trace without any (tooltrace,
    /// Claude Code hooks without Subagent hooks or `agent_id`) cannot match agent matchers.
    agents_seen: bool,
    /// The parents of recent spans (a tooltrace `child` line, an OTLP span, a top-level call):
    /// calls under such a span are inside a scope its parent is in, and outside for good
    /// under one seen without a parent.
    links: Links,
}

/// How many of the latest recorded parents [`Links`] keeps at least.
const LINKS: usize = 262_144;

/// The most recorded parents climbed from one call.
pub const MAX_LINK_DEPTH: usize = 1024;

/// The parents of the latest [`LINKS`] spans as they were seen (0 for none), by span hash,
/// so what a span keeps depends only on how many came after it, never on its hash (a table
/// indexed by the hash alone lost a parent whenever two ids shared a slot). Recording is an
/// append to a ring; the index by hash is brought up to date only when a parent is looked up
/// (most traces never climb: their calls sit right under their scope span).
#[derive(Debug)]
struct Links {
    /// How many entries the ring keeps ([`LINKS`]; fewer in tests).
    capacity: usize,
    /// `(span hash, parent hash)` in the order seen; `next` is where the next one goes (the
    /// oldest once the ring is full).
    ring: Vec<(u64, u64)>,
    next: usize,
    /// Positions in `ring` by span hash (the newest for a span seen twice), for all but the
    /// newest `unindexed` entries.
    table: HashTable<u32>,
    unindexed: usize,
}

impl Default for Links {
    fn default() -> Links {
        Links::with_capacity(LINKS)
    }
}

impl Links {
    fn with_capacity(capacity: usize) -> Links {
        Links { capacity: capacity.max(1), ring: Vec::new(), next: 0, table: HashTable::new(), unindexed: 0 }
    }

    /// Records that the span whose id hashes to `span` is under `parent` (0: it has none);
    /// returns the entry that made room, once the ring is full.
    fn note(&mut self, span: u64, parent: u64) -> Option<(u64, u64)> {
        if span == 0 {
            return None;
        }
        let mut evicted = None;
        let at = self.next;
        if self.ring.len() < self.capacity {
            if self.ring.capacity() == 0 {
                // The whole ring at once: growing it by doubling copied it over and over
                // (only the pages written become resident).
                self.ring.reserve_exact(self.capacity);
            }
            self.ring.push((span, parent));
        } else {
            // The oldest entry goes, and with it its place in the index, if it has one.
            let oldest = self.ring[at].0;
            if self.unindexed < self.capacity
                && let Ok(entry) = self.table.find_entry(oldest, |&member| member as usize == at)
            {
                entry.remove();
            }
            evicted = Some(std::mem::replace(&mut self.ring[at], (span, parent)));
        }
        // No `%`: a division per span measured in the profile.
        self.next = if at + 1 == self.capacity { 0 } else { at + 1 };
        self.unindexed = (self.unindexed + 1).min(self.capacity);
        evicted
    }

    /// Sets the recorded parent of `span` from `from` to `to` (its latest entry); false when
    /// its parent is not `from` or it has no entry.
    fn replace(&mut self, span: u64, from: u64, to: u64) -> bool {
        if span == 0 {
            return false;
        }
        self.index();
        let ring = &mut self.ring;
        match self.table.find(span, |&at| ring[at as usize].0 == span) {
            Some(&at) if ring[at as usize].1 == from => {
                ring[at as usize].1 = to;
                true
            }
            _ => false,
        }
    }

    /// [`Links::note`] for each `(span, parent)` of `pairs` in order, as one copy into the
    /// ring (spans are never 0 here: span hashes are at least 1).
    fn note_all(&mut self, mut pairs: &[(u64, u64)]) {
        debug_assert!(pairs.iter().all(|&(span, _)| span != 0));
        while !pairs.is_empty() {
            let at = self.next;
            let take;
            if self.ring.len() < self.capacity {
                if self.ring.capacity() == 0 {
                    self.ring.reserve_exact(self.capacity);
                }
                take = pairs.len().min(self.capacity - self.ring.len());
                self.ring.extend_from_slice(&pairs[..take]);
            } else {
                take = pairs.len().min(self.capacity - at);
                // The oldest entries go, and with them their places in the index: the first
                // `capacity - unindexed` of those overwritten are indexed (see `note`).
                let indexed = (self.capacity - self.unindexed).min(take);
                if !self.table.is_empty() {
                    for (offset, &(oldest, _)) in self.ring[at..at + indexed].iter().enumerate() {
                        if let Ok(entry) = self.table.find_entry(oldest, |&member| member as usize == at + offset) {
                            entry.remove();
                        }
                    }
                }
                self.ring[at..at + take].copy_from_slice(&pairs[..take]);
            }
            pairs = &pairs[take..];
            self.next = if at + take == self.capacity { 0 } else { at + take };
            self.unindexed = (self.unindexed + take).min(self.capacity);
        }
    }

    /// The recorded parent of the span whose id hashes to `span` (`Some(0)`: seen without one).
    fn parent_of(&mut self, span: u64) -> Option<u64> {
        if span == 0 {
            return None;
        }
        self.index();
        let ring = &self.ring;
        let at = *self.table.find(span, |&at| ring[at as usize].0 == span)?;
        Some(ring[at as usize].1)
    }

    /// Brings the index up to date.
    fn index(&mut self) {
        let (ring, table) = (&self.ring, &mut self.table);
        let len = ring.len();
        while self.unindexed > 0 {
            // The oldest entry not indexed yet (entries run in order up to `next - 1`).
            let at = (self.next + len - self.unindexed) % len;
            let span = ring[at].0;
            // Span hashes are well mixed already (see `span_hash`): they are the keys' hashes.
            match table.entry(span, |&member| ring[member as usize].0 == span, |&member| ring[member as usize].0) {
                hashbrown::hash_table::Entry::Occupied(mut entry) => *entry.get_mut() = at as u32,
                hashbrown::hash_table::Entry::Vacant(entry) => {
                    entry.insert(at as u32);
                }
            }
            self.unindexed -= 1;
        }
    }
}

/// Where a call's recorded ancestry leads (see [`place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Climb {
    /// An ancestor is in the scope.
    Inside,
    /// The highest ancestor reached (its hash) was seen without a parent: outside for good.
    Outside(u64),
    /// The highest ancestor reached (its hash) has not been seen yet: calls wait for it (it
    /// may be a scope span written after its children).
    Awaits(u64),
    /// More than [`MAX_LINK_DEPTH`] recorded ancestors (or a loop of them): counted outside.
    TooDeep,
}

/// Where a call under `parent` stands in `scope`: inside when `parent` is in it or one of
/// its recorded ancestors is (a parent that is a post-only call is inside when its own
/// recorded parents are), else outside for good or waiting for a span still to come.
fn place(links: &mut Links, scope: &mut Scope, parent: SpanRef<'_>) -> Climb {
    if scope.contains(parent) {
        return Climb::Inside;
    }
    climb(links, scope, parent.hash)
}

/// Where the recorded ancestors of the span whose hash is `hash` (not itself in `scope`)
/// lead: see [`place`].
fn climb(links: &mut Links, scope: &mut Scope, hash: u64) -> Climb {
    // A loop of parent ids is found when the climb comes back to a marked id (Brent's
    // method: the mark moves up after 1, 2, 4, ... steps).
    let (mut hash, mut mark, mut lap) = (hash, hash, 1);
    for step in 1..=MAX_LINK_DEPTH {
        let up = match links.parent_of(hash) {
            None => return Climb::Awaits(hash),
            Some(0) => return Climb::Outside(hash),
            Some(up) => up,
        };
        if scope.contains_hash(up) {
            return Climb::Inside;
        }
        hash = up;
        if hash == mark {
            break;
        }
        if step == lap {
            (mark, lap) = (hash, lap * 2);
        }
    }
    Climb::TooDeep
}

/// The occurrences that waited for `span`, now that it came `placed` (under its parent, if
/// any): the rule takes them in when it is inside the scope; they wait for its ancestor
/// still to come; or they stay outside for good.
fn hand_on_orphans(
    relation: &Relation,
    state: &mut RuleState,
    scope: &mut Scope,
    span: SpanRef<'_>,
    placed: Option<Climb>,
) {
    match placed {
        Some(Climb::Inside) => {
            if let Some(late) = scope.take_waiting(span) {
                attribute_late(relation, state, scope, &late);
            }
        }
        // Not in scope yet: they wait for its parent instead (nested spans recorded as they
        // end: child, container, root).
        Some(Climb::Awaits(top)) => {
            if let Some(late) = scope.take_waiting(span) {
                scope.note_orphans(by_hash(top), late);
            }
        }
        // Said in the note, like calls placed too deep as they come.
        Some(Climb::TooDeep) => {
            if let Some(late) = scope.take_waiting(span) {
                scope.too_deep += late.calls;
            }
        }
        // Outside for good: under `top`, or under `span` itself when it has no parent (a
        // scope span that takes either id later names a second span: see `Scope::reused`).
        Some(Climb::Outside(top)) => {
            if let Some(late) = scope.take_waiting(span) {
                scope.note_outside(top, late.calls, late.first.line);
            }
        }
        None => {
            if let Some(late) = scope.take_waiting(span) {
                scope.note_outside(span.hash, late.calls, late.first.line);
            }
        }
    }
}

impl SequenceEngine {
    /// An engine for `rules`, keeping the last `excerpt_capacity` calls as an excerpt.
    pub fn new(rules: Vec<CompiledRule>, excerpt_capacity: usize) -> SequenceEngine {
        let reads_arguments = rules.iter().any(|rule| rule.all_matchers().any(CompiledMatcher::reads_arguments));
        let states = rules
            .iter()
            .map(|rule| match rule.relation {
                Relation::Before(..) => RuleState::Before { first_a: None, first_b: None, a_first: false },
                Relation::OnlyAfter(..) => RuleState::OnlyAfter { seen_a: None, first_b: None, violation: None },
                Relation::ImmediatelyBefore(..) => RuleState::ImmediatelyBefore {
                    previous_is_a: false,
                    previous: None,
                    count_b: 0,
                    violation: None,
                    first_b: None,
                },
                Relation::Never(..) => RuleState::Never { first: None, count: 0 },
                Relation::Count(..) => RuleState::Count { count: 0 },
            })
            .collect();
        let scopes: Vec<Option<Scope>> =
            rules.iter().map(|rule| rule.within.as_ref().map(|_| Scope::default())).collect();
        let scoped = scopes.iter().any(Option::is_some);
        let mut matcher_count = 0;
        let mut next_id = |present: bool| {
            if present {
                matcher_count += 1;
                matcher_count - 1
            } else {
                usize::MAX
            }
        };
        let ids: Vec<RuleIds> = rules
            .iter()
            .map(|rule| {
                let pair = !matches!(rule.relation, Relation::Never(..) | Relation::Count(..));
                let immediately = matches!(rule.relation, Relation::ImmediatelyBefore(..));
                let (first, second) = (next_id(true), next_id(pair));
                RuleIds::new(first, second, next_id(rule.within.is_some()), immediately)
            })
            .collect();
        let masks = RuleMasks::new(&rules, &ids);
        let rule_count = rules.len();
        let late_capable = rules.iter().take(64).enumerate().fold(0u64, |mask, (idx, rule)| match &rule.relation {
            Relation::Never(matcher) | Relation::Count(matcher, ..) if matcher.reads_arguments() => mask | 1 << idx,
            _ => mask,
        });
        SequenceEngine {
            rules,
            ids,
            masks,
            matcher_count,
            states,
            scopes,
            open_calls: SpanSet::default(),
            open_call_info: FastMap::default(),
            open_call_order: VecDeque::new(),
            open_idless: HashMap::new(),
            excerpt: VecDeque::new(),
            excerpt_capacity,
            events: 0,
            calls: 0,
            summarized: 0,
            traces: Vec::new(),
            misattributed_spawns: (0, None),
            calls_without_arguments: (0, None),
            unread_arguments_by_rule: vec![[(0, None); 2]; rule_count],
            unread_starts: VecDeque::new(),
            reads_arguments,
            calls_with_late_arguments: (0, None),
            calls_with_changed_arguments: (0, None),
            late_capable,
            calls_without_name: (0, None),
            calls_with_text_arguments: (0, None),
            out_of_order_spans: (0, None),
            spans_without_start: (0, None),
            times_without_zone: (0, None),
            times_unread: (0, None),
            order: 0,
            scoped,
            parented_calls: false,
            agents_seen: false,
            links: Links::default(),
        }
    }

    /// Runs every rule over `events` in one pass.
    pub fn run(
        rules: Vec<CompiledRule>,
        events: impl IntoIterator<Item = CanonicalEvent>,
        excerpt_capacity: usize,
    ) -> TraceOutcome {
        let mut engine = SequenceEngine::new(rules, excerpt_capacity);
        for event in events {
            engine.feed(&event);
        }
        engine.finish()
    }

    /// Processes one event.
    pub fn feed(&mut self, event: &CanonicalEvent) {
        // Marks an adapter put on events, counted with the line of the first.
        let line = event.source.as_ref().and_then(|source| source.line);
        let tally = |counter: &mut (u64, Option<u64>)| tally(counter, line);
        let marked = |key: &str| member(&event.attributes, key);
        if marked(agentic_core::event::SPAWN_MISATTRIBUTED).is_some() {
            tally(&mut self.misattributed_spawns);
        }
        if marked(agentic_core::event::OUT_OF_ORDER).is_some() {
            tally(&mut self.out_of_order_spans);
        }
        if marked(agentic_core::event::START_MISSING).is_some() {
            tally(&mut self.spans_without_start);
        }
        match marked(agentic_core::event::TIME_UNREAD).and_then(Value::as_str) {
            Some(agentic_core::event::TIME_NO_ZONE) => tally(&mut self.times_without_zone),
            Some(_) => tally(&mut self.times_unread),
            None => {}
        }
        // Tooltrace ids are file-wide (not keyed by session), but a file of several sessions
        // is still said to be one, as for the other formats.
        if let Some(session) = (event.source.as_ref())
            .filter(|source| source.format == "tooltrace")
            .and(event.span.as_ref())
            .and_then(|span| span.trace_id.as_deref())
        {
            self.note_session(session);
        }
        // (Calls whose arguments argument conditions cannot read are counted by `feed_inner`.)
        self.feed_ref(&EventRef::from_event(event));
    }

    /// Counts `calls` tool calls named `name`, the first at `line`, whose arguments argument
    /// conditions cannot read (none recorded, or, `as_text`, not a JSON object), for the rules
    /// with a matcher that names its tool and has such conditions (`args` or `args_text`;
    /// `args` alone for text): a call of a tool no such matcher names is nothing those rules
    /// missed.
    fn tally_unread_arguments(&mut self, as_text: bool, name: &str, calls: u64, line: Option<u64>) {
        let misses = |matcher: &CompiledMatcher| {
            (if as_text { matcher.reads_argument_paths() } else { matcher.reads_arguments() })
                && matcher.name_matches(CallKind::Tool, name)
        };
        let mut any = false;
        for (rule, tallies) in self.rules.iter().zip(&mut self.unread_arguments_by_rule) {
            if rule.all_matchers().any(misses) {
                tally_many(&mut tallies[usize::from(as_text)], calls, line);
                any = true;
            }
        }
        if any {
            tally_many(
                if as_text { &mut self.calls_with_text_arguments } else { &mut self.calls_without_arguments },
                calls,
                line,
            );
        }
    }

    /// Notes the session of a tooltrace record (whose ids are file-wide, so its events carry
    /// no trace id): a file of several sessions gets the same warning as other formats.
    pub fn note_session(&mut self, session: &str) {
        if self.traces.len() < 3 && self.traces.iter().all(|seen| seen != session) {
            self.traces.push(session.to_owned());
        }
    }

    /// The matchers of this engine's rules, to evaluate events apart from the engine (for
    /// example on other threads) and feed them with [`SequenceEngine::feed_matched`].
    pub fn match_plan(&self) -> MatchPlan {
        let mut matchers = Vec::with_capacity(self.matcher_count);
        for rule in &self.rules {
            match &rule.relation {
                Relation::Before(a, b) | Relation::OnlyAfter(a, b) | Relation::ImmediatelyBefore(a, b) => {
                    matchers.push(a.clone());
                    matchers.push(b.clone());
                }
                Relation::Never(m) | Relation::Count(m, ..) => matchers.push(m.clone()),
            }
            if let Some(within) = &rule.within {
                matchers.push(within.clone());
            }
        }
        let same_as: Vec<Option<usize>> = (0..matchers.len())
            .map(|id| (0..id).find(|&earlier| matchers[earlier].source == matchers[id].source))
            .collect();
        let mut by_name: Vec<(String, [NameMatchers; 2])> = Vec::new();
        for matcher in &matchers {
            for name in &matcher.names {
                let NameMatch::Exact(name) = name else { continue };
                if by_name.iter().any(|(known, _)| known == name) {
                    continue;
                }
                let lists = [CallKind::Tool, CallKind::Agent].map(|kind| {
                    let mut lists = NameMatchers::default();
                    for id in (0..matchers.len()).filter(|&id| matchers[id].name_matches(kind, name)) {
                        // Without argument checks the name decides (and so for a copy of
                        // such a matcher); the others are checked per event, in order, so
                        // a copy finds the answer of the matcher it copies.
                        if matchers[id].args.is_empty() && matchers[id].args_text.is_empty() {
                            lists.always.set(id);
                        } else {
                            lists.check.push(id);
                        }
                    }
                    lists
                });
                by_name.push((name.clone(), lists));
            }
        }
        let others = [CallKind::Tool, CallKind::Agent].map(|kind| {
            (0..matchers.len())
                .filter(|&id| {
                    let matcher = &matchers[id];
                    matcher.kind == kind
                        && (matcher.names.is_empty()
                            || matcher.names.iter().any(|name| !matches!(name, NameMatch::Exact(_))))
                })
                .collect()
        });
        let name_index = (by_name.len() > 16)
            .then(|| by_name.iter().enumerate().map(|(idx, (name, _))| (name.clone(), idx)).collect());
        let name_keys = by_name.iter().map(|(name, _)| (name_key(name), name.len())).collect();
        let mut paths: Vec<&[String]> = Vec::new();
        let arg_slots = matchers
            .iter()
            .map(|matcher| {
                (matcher.args.iter())
                    .map(|(path, _)| match paths.iter().position(|known| *known == path.as_slice()) {
                        Some(slot) => slot,
                        None => {
                            paths.push(path);
                            paths.len() - 1
                        }
                    })
                    .collect()
            })
            .collect();
        MatchPlan { matchers, by_name, name_keys, arg_slots, name_index, others, same_as }
    }

    /// Processes one event given as a borrowed view.
    pub fn feed_ref(&mut self, event: &EventRef<'_>) {
        self.feed_inner(event, None, None);
    }

    /// Processes one event whose matches [`MatchPlan::evaluate`] (of this engine's
    /// [`SequenceEngine::match_plan`]) already computed; the same as [`SequenceEngine::feed_ref`]
    /// on that event, without matching again.
    pub fn feed_matched(&mut self, event: &EventRef<'_>, bits: &MatchBits) {
        self.feed_inner(event, Some(bits), None);
    }

    /// Processes one event that [`MatchPlan::prepare`] (of this engine's
    /// [`SequenceEngine::match_plan`]) already prepared; the same as [`SequenceEngine::feed_ref`]
    /// on that event, with the matching and the hashing done.
    pub fn feed_prepared(&mut self, event: &EventRef<'_>, prepared: &Prepared) {
        self.feed_inner(event, Some(&prepared.bits), Some((prepared.span_hash, prepared.parent_hash)));
    }

    fn feed_inner(&mut self, event: &EventRef<'_>, bits: Option<&MatchBits>, hashes: Option<(u64, u64)>) {
        self.events += 1;
        self.order += 1;
        let (span, parent) = span_refs(event, hashes);
        let parent_hash = parent.map_or(0, |parent| parent.hash);
        let call_kind = match event.event_type {
            EventType::ToolCallStart | EventType::ToolCallEnd => Some(CallKind::Tool),
            EventType::AgentInvokeStart | EventType::AgentInvokeEnd => {
                self.agents_seen = true;
                Some(CallKind::Agent)
            }
            _ => None,
        };
        let occurrence;
        let matches = match (bits, call_kind) {
            (_, None) => None,
            (Some(bits), Some(_)) => Some(Matches::Bits(bits)),
            (None, Some(kind)) => {
                let name = event.name.unwrap_or("");
                occurrence = Occurrence { kind, name, raw_args: event.args, parsed_args: std::cell::OnceCell::new() };
                Some(Matches::Lazy(&occurrence))
            }
        };
        // The `never` and `count` rules an end with the arguments its start lacked matches
        // and the start did not: they take the call in at the end, placed by the start's
        // parent (order rules cannot), and that parent's hash.
        let mut late_rules = (0u64, 0u64);
        let (kind, counts) = match event.event_type {
            EventType::ToolCallStart => (Some(CallKind::Tool), true),
            EventType::AgentInvokeStart => (Some(CallKind::Agent), true),
            EventType::ToolCallEnd | EventType::AgentInvokeEnd => {
                let kind = if event.event_type == EventType::ToolCallEnd { CallKind::Tool } else { CallKind::Agent };
                let pairs = match span {
                    Some(_) => !self.open_calls.is_empty(),
                    None => !self.open_idless.is_empty(),
                };
                // Whether the end's arguments say nothing (asked once: it parses JSON text),
                // and what the rules make of them (only an end that may pair asks).
                let bare_end = !pairs || bare_args(event.args);
                let end_matched = match &matches {
                    Some(matches) if !bare_end && self.late_capable != 0 => self.unordered_matches(matches),
                    _ => 0,
                };
                let paired = match span {
                    Some(span) if pairs => {
                        let like = StartMatch {
                            bare: bare_end,
                            matched: end_matched,
                            parent: parent_hash,
                            call: call_hash(event.call_id),
                            unread: false,
                        };
                        self.end_open_call(span, kind, event.name, like)
                            .map(|start| (start, ExcerptKey::Span(span.hash)))
                    }
                    // A start without an id, of the same name, is this call's start.
                    None if pairs => self.end_idless(kind == CallKind::Agent, event),
                    _ => None,
                };
                let started = paired.is_some();
                // An end with arguments its start did not show (it had none, or a hook
                // rewrote the input): `never` and `count` rules the start did not match check
                // the end's; order rules judged the call at its start (their notes say so).
                if let Some((start, key)) = paired
                    && !bare_end
                {
                    // Placed by the start's parent (an end need not repeat it), else the end's.
                    let placed_by = match start.parent {
                        0 => parent_hash,
                        parent => parent,
                    };
                    late_rules = (end_matched & !start.matched, placed_by);
                    if start.bare {
                        tally(&mut self.calls_with_late_arguments, event.line);
                        self.note_end_arguments(key, event.args);
                    } else if late_rules.0 != 0 {
                        tally(&mut self.calls_with_changed_arguments, event.line);
                    }
                }
                if event.failed
                    && let Some((_, key)) = paired
                {
                    self.mark_failed(key);
                }
                // A call whose start had arguments argument conditions cannot read, and whose
                // end brings none they read either (an OTLP end carries none at all).
                if let Some((start, _)) = paired
                    && start.unread
                {
                    let span_hash = span.map_or(0, |span| span.hash);
                    let name = event.name.unwrap_or("");
                    let at = self.unread_starts.iter().position(|open| open.span == span_hash && *open.name == *name);
                    if let Some(open) = at.and_then(|at| self.unread_starts.remove(at))
                        && let Some(end_text) = unreadable_arguments(event.args)
                    {
                        self.tally_unread_arguments(open.as_text || end_text, &open.name, 1, open.line);
                    }
                }
                (Some(kind), !started)
            }
            _ => (None, false),
        };
        // A call without arguments, or with text or a lone value for them (a tooltrace `args`
        // or a hook's `tool_input` written as a string, OTLP arguments that are not JSON):
        // argument conditions cannot read them. Counted once per call: at an end without a
        // start here; a started one at its end above (which may bring arguments they read),
        // or at the end of the trace when it never ends (`unread_starts`).
        if counts
            && self.reads_arguments
            && kind == Some(CallKind::Tool)
            && !matches!(event.event_type, EventType::ToolCallStart)
            && let Some(as_text) = unreadable_arguments(event.args)
        {
            self.tally_unread_arguments(as_text, event.name.unwrap_or(""), 1, event.line);
        }
        let is_start = matches!(event.event_type, EventType::ToolCallStart | EventType::AgentInvokeStart);
        let unread = match event.event_type {
            EventType::ToolCallStart if self.reads_arguments => unreadable_arguments(event.args),
            _ => None,
        };
        let bare = match &matches {
            Some(matches) if is_start => StartMatch {
                bare: bare_args(event.args),
                matched: if self.late_capable == 0 { 0 } else { self.unordered_matches(matches) },
                parent: parent_hash,
                call: call_hash(event.call_id),
                unread: unread.is_some(),
            },
            _ => StartMatch::default(),
        };
        if let Some(as_text) = unread {
            if self.unread_starts.len() == MAX_UNREAD_STARTS
                && let Some(oldest) = self.unread_starts.pop_front()
            {
                self.tally_unread_arguments(oldest.as_text, &oldest.name, 1, oldest.line);
            }
            self.unread_starts.push_back(UnreadStart {
                span: span.map_or(0, |span| span.hash),
                name: event.name.unwrap_or("").into(),
                as_text,
                line: event.line,
            });
        }
        if is_start && span.is_none() {
            self.start_idless(event.event_type == EventType::AgentInvokeStart, event, bare, self.order);
        }
        if is_start && let Some(span) = span {
            let what = call_key(event.event_type == EventType::AgentInvokeStart, event.name);
            match self.open_calls.insert(span) {
                Some(key) => {
                    let mut open = OpenCall::default();
                    open.start(what, bare);
                    self.open_call_info.insert(key, open);
                    self.open_call_order.push_back(key);
                    if self.open_call_order.len() > 2 * MAX_OPEN_SPANS
                        && let Some(oldest) = self.open_call_order.pop_front()
                    {
                        self.open_calls.remove_key(oldest);
                        self.open_call_info.remove(&oldest);
                    }
                }
                // Another start under an open id: one more end is due.
                None => {
                    if let Some(info) = self.open_calls.key_of(span).and_then(|key| self.open_call_info.get_mut(&key)) {
                        info.start(what, bare);
                    }
                }
            }
        }
        // Steps and model calls are spans too: calls under them are in the subtree of their parent.
        let is_end = matches!(
            event.event_type,
            EventType::ToolCallEnd | EventType::AgentInvokeEnd | EventType::StepEnd | EventType::LlmResponse
        );
        let is_container = is_start
            || matches!(event.event_type, EventType::StepStart | EventType::LlmRequest)
            || event.post_only_parent;
        // Every span's parent, as it starts (or, post-only, ends): calls that come under it
        // later climb through it to a scope, also one that opens after them (an OTLP batch
        // that holds an agent and the tool calls under it, before the batch of its parent).
        if self.scoped
            && (is_container || (counts && is_end))
            && let Some(span) = span
        {
            self.links.note(span.hash, parent_hash);
        }
        let (Some(kind), Some(matches)) = (kind, matches) else {
            self.update_scopes_only(span, parent, is_container, is_end);
            return;
        };
        self.parented_calls |= self.scoped && parent.is_some() && kind == CallKind::Tool;
        let name = event.name.unwrap_or("");
        let location = Location::of(event);
        if counts {
            self.calls += 1;
            if name.is_empty() {
                tally(&mut self.calls_without_name, event.line);
            }
            let key = match span {
                Some(span) => Some(ExcerptKey::Span(span.hash)),
                None if is_start => Some(ExcerptKey::Idless(self.order)),
                None => None,
            };
            self.push_excerpt(location, event, key);
            if self.traces.len() < 3
                && let Some(trace) = event.trace_id
                && self.traces.iter().all(|seen| seen != trace)
            {
                self.traces.push(trace.to_owned());
            }
        }
        // With precomputed bits, only rules that can change are visited: those with a
        // scope (which follows every event), those stepped on every event, and those one of
        // whose matchers matched.
        let agent_start = event.event_type == EventType::AgentInvokeStart;
        let visit = match bits {
            Some(bits) if self.rules.len() <= 64 => {
                Some(self.masks.scoped | if counts { self.masks.stepped(bits) } else { 0 })
            }
            _ => None,
        };
        match visit {
            Some(mut todo) => {
                while todo != 0 {
                    let idx = todo.trailing_zeros() as usize;
                    todo &= todo - 1;
                    self.step(idx, counts, is_container, is_end, agent_start, span, parent, location, &matches);
                }
            }
            None => {
                for idx in 0..self.rules.len() {
                    self.step(idx, counts, is_container, is_end, agent_start, span, parent, location, &matches);
                }
            }
        }
        // The end's arguments for the rules they make match.
        let (mut todo, start_parent) = late_rules;
        while todo != 0 {
            let idx = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            self.step_late(idx, start_parent, location, &matches);
        }
    }

    /// A `never` or `count` rule takes in a call whose end showed it arguments its start did
    /// not (see [`StartMatch`]): at the end's place, inside the rule's scope when `parent` (a
    /// hash; 0: none) is: the start's parent, else the end's, as the start would have been.
    fn step_late(&mut self, idx: usize, parent: u64, location: Location, matches: &Matches<'_, '_>) {
        let (Some(rule), Some(ids), Some(state), Some(scope)) =
            (self.rules.get(idx), self.ids.get(idx), self.states.get_mut(idx), self.scopes.get_mut(idx))
        else {
            return;
        };
        let inside = match scope.as_mut() {
            None => true,
            Some(_) if parent == 0 => false,
            Some(scope) => {
                let placed =
                    if scope.contains_hash(parent) { Climb::Inside } else { climb(&mut self.links, scope, parent) };
                match placed {
                    Climb::Inside => true,
                    Climb::Awaits(top) | Climb::Outside(top) => {
                        if scope.was_dropped(by_hash(parent)) || scope.was_dropped(by_hash(top)) {
                            scope.under_dropped += 1;
                        } else if let Climb::Outside(top) = placed {
                            scope.note_outside(top, 1, location.line);
                        }
                        if let Climb::Awaits(top) = placed {
                            let late = late_occurrence(&rule.relation, *ids, matches, location, self.order);
                            scope.note_orphans(by_hash(top), late);
                        }
                        false
                    }
                    Climb::TooDeep => {
                        scope.too_deep += 1;
                        false
                    }
                }
            }
        };
        if inside {
            step_rule(&rule.relation, *ids, state, location, CallLink::default(), matches);
        }
    }

    /// The rules of [`SequenceEngine::late_capable`] (bit `i`: rule `i`) whose matcher
    /// `matches` satisfies: see [`StartMatch`].
    fn unordered_matches(&self, matches: &Matches<'_, '_>) -> u64 {
        let mut found = 0;
        let mut todo = self.late_capable;
        while todo != 0 {
            let idx = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            if let (Some(rule), Some(ids)) = (self.rules.get(idx), self.ids.get(idx))
                && let Relation::Never(matcher) | Relation::Count(matcher, ..) = &rule.relation
                && matches.check(matcher, ids.first)
            {
                found |= 1 << idx;
            }
        }
        found
    }

    /// One rule on one event: its scope follows the event, and its relation steps when the
    /// event counts and is inside the scope.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn step(
        &mut self,
        idx: usize,
        counts: bool,
        is_container: bool,
        is_end: bool,
        agent_start: bool,
        span: Option<SpanRef<'_>>,
        parent: Option<SpanRef<'_>>,
        location: Location,
        matches: &Matches<'_, '_>,
    ) {
        let (Some(rule), Some(ids), Some(state), Some(scope)) =
            (self.rules.get(idx), self.ids.get(idx), self.states.get_mut(idx), self.scopes.get_mut(idx))
        else {
            return;
        };
        let order = self.order;
        let links = &mut self.links;
        let steps = counts && matches.may_step(ids);
        let in_scope = match (&rule.within, scope.as_mut()) {
            (Some(root), Some(scope)) => {
                // Whether the parent is in scope matters only to step the rule or to open a
                // container (read before the scope changes, as the events go).
                let counted = steps && concerns(&rule.relation, *ids, matches);
                let placed =
                    if steps || is_container { parent.map(|parent| place(links, scope, parent)) } else { None };
                let inside = placed == Some(Climb::Inside);
                if counted
                    && let (Some(parent), Some(placed)) = (parent, placed)
                    && placed != Climb::Inside
                {
                    match placed {
                        Climb::Awaits(top) | Climb::Outside(top) => {
                            if scope.was_dropped(parent) || scope.was_dropped(by_hash(top)) {
                                scope.under_dropped += 1;
                            } else if let Climb::Outside(top) = placed {
                                scope.note_outside(top, 1, location.line);
                            }
                            if let Climb::Awaits(top) = placed {
                                let late = late_occurrence(&rule.relation, *ids, matches, location, order);
                                scope.note_orphans(by_hash(top), late);
                            }
                        }
                        Climb::TooDeep => scope.too_deep += 1,
                        Climb::Inside => {}
                    }
                }
                if let Some(span) = span {
                    // An end that pairs with a start closes the span; a post-only end (no
                    // start seen) is the whole call and may open a scope.
                    if is_end && !counts {
                        scope.close(span);
                    } else if matches.check(root, ids.within) || (inside && is_container) {
                        scope.rooted |= !inside;
                        scope.open(span, is_end);
                        scope.opened_at(span.hash);
                        if let Some(late) = scope.take_waiting(span) {
                            attribute_late(&rule.relation, state, scope, &late);
                        }
                    } else if (is_container || (counts && is_end)) && scope.awaits(span) {
                        // Calls that came before this span wait for it: they are inside when
                        // it is, else they wait for its ancestor still to come (outside for
                        // good when there is none).
                        let placed = placed.or_else(|| parent.map(|parent| place(links, scope, parent)));
                        hand_on_orphans(&rule.relation, state, scope, span, placed);
                        if !is_end {
                            scope.remove(span);
                        }
                    } else if !is_end {
                        // A span id that starts again outside (a resumed subagent under another
                        // call) leaves the scope its earlier run was in.
                        scope.remove(span);
                    }
                } else if !scope.rooted && (!is_end || counts) && matches.check(root, ids.within) {
                    scope.idless_roots += 1;
                }
                inside
            }
            _ => true,
        };
        if steps && in_scope {
            let link = CallLink {
                span: span.map_or(0, |span| span.hash),
                parent: parent.map_or(0, |parent| parent.hash),
                agent_start,
            };
            step_rule(&rule.relation, *ids, state, location, link, matches);
            if let Some(scope) = scope.as_mut() {
                note_firsts(state, &mut scope.firsts, order);
            }
        }
    }

    /// Opens a start without an id; `order` keys its line in the excerpt.
    fn start_idless(&mut self, agent: bool, event: &EventRef<'_>, bare: StartMatch, order: u64) {
        let key = idless_key(agent, event);
        if self.open_idless.len() >= MAX_IDLESS_NAMES && !self.open_idless.contains_key(&key) {
            return;
        }
        let starts = self.open_idless.entry(key).or_default();
        if starts.len() == MAX_IDLESS_NAMES {
            starts.pop_front();
        }
        starts.push_back((args_value(event.args), bare, order));
    }

    /// Pairs an end without an id with the oldest open start of its kind, trace and name
    /// whose arguments equal the end's (or, when one of the two has none, whose arguments
    /// are unknown); false when there is none: an end whose arguments differ from every open
    /// start's is a call of its own (a post-only record after a start that never ended).
    /// Ends the open call `span` when this end is its (of the same kind and name; an end or a
    /// start without a name pairs with any): what its start told when it did.
    fn end_open_call(
        &mut self,
        span: SpanRef<'_>,
        kind: CallKind,
        name: Option<&str>,
        like: StartMatch,
    ) -> Option<StartMatch> {
        let key = self.open_calls.key_of(span)?;
        let mut bare = StartMatch::default();
        if let Some(info) = self.open_call_info.get_mut(&key) {
            bare = info.end(call_key(kind == CallKind::Agent, name), like)?;
            if !info.starts.is_empty() {
                return Some(bare);
            }
            self.open_call_info.remove(&key);
        }
        self.open_calls.remove(span).then_some(bare)
    }

    /// Ends an open start without an id that this end pairs with: what that start told, and
    /// its key in the excerpt, when it did.
    fn end_idless(&mut self, agent: bool, event: &EventRef<'_>) -> Option<(StartMatch, ExcerptKey)> {
        let key = idless_key(agent, event);
        let starts = self.open_idless.get_mut(&key)?;
        // Arguments that say nothing (absent, `null`, `{}`) pair with any start, the oldest;
        // others with a start of equal arguments, else with one that had none.
        let args = args_value(event.args).filter(|args| !bare_args(ArgsRef::Value(args)));
        let idx = match &args {
            Some(args) => (starts.iter().position(|(start, ..)| start.as_ref() == Some(args))).or_else(|| {
                starts
                    .iter()
                    .position(|(start, ..)| start.as_ref().is_none_or(|start| bare_args(ArgsRef::Value(start))))
            })?,
            None => 0,
        };
        let (_, bare, order) = starts.remove(idx)?;
        if starts.is_empty() {
            self.open_idless.remove(&key);
        }
        Some((bare, ExcerptKey::Idless(order)))
    }

    fn update_scopes_only(
        &mut self,
        span: Option<SpanRef<'_>>,
        parent: Option<SpanRef<'_>>,
        is_container: bool,
        is_end: bool,
    ) {
        let Some(span) = span else { return };
        let links = &mut self.links;
        for ((rule, state), scope) in self.rules.iter().zip(&mut self.states).zip(&mut self.scopes) {
            let Some(scope) = scope else { continue };
            if is_end {
                scope.close(span);
                continue;
            }
            if !is_container {
                continue;
            }
            // A step or model call nests like a call: see `step`. Calls that came before it
            // (an OTLP batch exported ahead of the one holding their step) wait for it.
            let placed = parent.map(|parent| place(links, scope, parent));
            if placed == Some(Climb::Inside) {
                scope.open(span, false);
            } else {
                // Started again outside: see `step`.
                scope.remove(span);
            }
            if scope.awaits(span) {
                hand_on_orphans(&rule.relation, state, scope, span, placed);
            }
        }
    }

    /// The verdicts.
    pub fn finish(mut self) -> TraceOutcome {
        // Calls that never ended with arguments argument conditions cannot read.
        for open in std::mem::take(&mut self.unread_starts) {
            self.tally_unread_arguments(open.as_text, &open.name, 1, open.line);
        }
        let unlinked = |scope: &Option<Scope>| !self.parented_calls && scope.as_ref().is_some_and(|scope| scope.rooted);
        let unlinked_scopes = self.scopes.iter().filter(|scope| unlinked(scope)).count() as u64;
        // Scopes no span matched (nor an id-less call), each described once.
        let mut unmatched_scopes: Vec<(String, bool)> = Vec::new();
        for (rule, scope) in self.rules.iter().zip(&self.scopes) {
            if let (Some(within), Some(scope)) = (&rule.within, scope)
                && !scope.rooted
                && scope.idless_roots == 0
                && !unmatched_scopes.iter().any(|(seen, _)| *seen == within.description)
            {
                unmatched_scopes.push((within.description.clone(), within.source().agent.is_some()));
            }
        }
        let late_arguments_missed = self.rules.iter().enumerate().any(|(idx, rule)| misses_late_arguments(idx, rule));
        let names_calls = self.rules.iter().any(|rule| rule.all_matchers().any(CompiledMatcher::misses_nameless));
        let outcomes = self
            .rules
            .iter()
            .zip(&self.states)
            .zip(&self.scopes)
            .enumerate()
            .map(|(idx, ((rule, state), scope))| {
                // A scoped rule saw only the calls inside its scope: "no Bash" is inside it.
                let place = if rule.within.is_some() { "inside the scope" } else { "in the trace" };
                let mut outcome = conclude(&rule.relation, state, place);
                if let Some(within) = &rule.within {
                    outcome.notes = format!("within {}: {}", within.description, outcome.notes);
                }
                if let (Some(within), Some(scope)) = (&rule.within, scope)
                    && !scope.rooted
                {
                    // Likely a spec or capture problem, not a clean pass: say so.
                    let note = if scope.idless_roots > 0 {
                        format!(
                            "Note: {} call(s) matched the scope ({}) but carried no span id (a Claude Code hook \
                             record without `tool_use_id`, a SubagentStart without `agent_id`, a tooltrace line \
                             without `trace_id`), so nothing could \
                             be placed inside them and nothing was inside the scope.",
                            scope.idless_roots, within.description
                        )
                    } else {
                        format!(
                            "Note: no span matched the scope ({}) in the trace, so nothing was inside it.",
                            within.description
                        )
                    };
                    append_sentence(&mut outcome.notes, &note);
                }
                // Agent matchers in the relation over a trace that records no agents at all
                // (a scope says so above).
                let names_agents = rule.relation.matchers().into_iter().any(|m| m.kind == CallKind::Agent);
                if names_agents && !self.agents_seen && self.calls > 0 {
                    append_sentence(
                        &mut outcome.notes,
                        "Note: the trace records no agent invocations (tooltrace records none, nor do Claude Code \
                         hook captures without Subagent hooks or `agent_id`), so agent matchers matched nothing; to \
                         check a sub-agent there, match the call that spawned it, such as `{tool: Task, args: \
                         {subagent_type: NAME}}`.",
                    );
                }
                if unlinked(scope) {
                    // The scope's spans came, but nothing can be under them: a pass here
                    // proves nothing about the calls made inside.
                    append_sentence(
                        &mut outcome.notes,
                        "Warning: spans matched the scope, but no tool call in the trace records a parent \
                         (Claude Code hook tool records without `agent_id`, as versions before subagent ids \
                         write them; tooltrace lines without `parent_trace_id`), so no tool call could be \
                         placed inside the scope and the rule saw nothing inside it; capture the subagent \
                         links to check this rule.",
                    );
                }
                if let Some(lost) = scope.as_ref().map(|s| s.forgotten).filter(|&lost| lost > 0) {
                    append_sentence(
                        &mut outcome.notes,
                        &format!(
                            "Warning: {lost} call(s) under spans recorded after them were not placed: more than \
                             {POST_ONLY_SCOPE_WINDOW} such spans were awaited at once."
                        ),
                    );
                }
                if let Some(lost) = scope.as_ref().map(|s| s.too_deep).filter(|&lost| lost > 0) {
                    append_sentence(
                        &mut outcome.notes,
                        &format!(
                            "Warning: {lost} call(s) were nested more than {MAX_LINK_DEPTH} spans deep (or under a loop \
                             of parent ids) and counted as outside the scope; check the parent ids the trace \
                             writer records."
                        ),
                    );
                }
                // Calls still waiting: their parent never came, or came so long before them
                // (more than `LINKS` spans) that it was forgotten. Outside, but not silently.
                // (Without any scope span, nothing could be inside: the note says so already.)
                let waiting: u64 = scope.as_ref().filter(|scope| scope.rooted).map_or(0, |scope| {
                    let orphans = &scope.orphans;
                    scope
                        .orphan_order
                        .iter()
                        .filter(|&&key| orphans.hash_of(key).is_some())
                        .filter_map(|key| scope.orphan_calls.get(key.0 as usize))
                        .map(|late| late.calls)
                        .sum()
                });
                if waiting > 0 {
                    append_sentence(
                        &mut outcome.notes,
                        &format!(
                            "Warning: {waiting} call(s) were under a span that never appeared in the trace, or appeared \
                             more than {LINKS} spans before them and was forgotten; they counted as outside the scope \
                             (a trace cut short, an exporter that drops parent spans, or a Claude Code capture \
                             without the end record of the call that spawned a subagent, does this: capture the \
                             whole run; so does a Claude Code subagent whose `agent_type` is not the \
                             `subagent_type` its `Task` call asked for, or whose `SubagentStart` has none, which \
                             is not linked to that call)."
                        ),
                    );
                }
                if let Some(lost) = scope.as_ref().map(|s| s.under_dropped).filter(|&lost| lost > 0) {
                    append_sentence(
                        &mut outcome.notes,
                        &format!(
                            "Warning: {lost} call(s) were under a scope span more than {POST_ONLY_SCOPE_WINDOW} ended \
                             scope spans back, which the rule no longer tracks; they counted as outside the scope \
                             (a writer that logs the calls of a scope within {POST_ONLY_SCOPE_WINDOW} scope lines of it avoids this)."
                        ),
                    );
                }
                if let Some(taken) = scope.as_ref().map(|s| s.attributed).filter(|&taken| taken > 0) {
                    append_sentence(
                        &mut outcome.notes,
                        &format!(
                            "Note: {taken} call(s) came before the scope span they are under (the span was \
                             recorded after its children) and count inside it."
                        ),
                    );
                }
                if let Some(scope) = scope {
                    warn_of_tally(&mut outcome.notes, scope.reused, true, |count, at| {
                        format!(
                            "Warning: {count} call(s){at} were under a span id that a scope span took later, after \
                             an earlier span of that id without a parent had put them outside the scope (an id an \
                             earlier run in the same file used?); they counted as outside, though they may belong \
                             to the scope span: span ids must be unique within a file (write one run per file)."
                        )
                    });
                }
                if let Some(late) = scope.as_ref().map(|s| s.late_parents).filter(|&late| late > 0) {
                    append_sentence(
                        &mut outcome.notes,
                        &format!(
                            "Warning: {late} scope span(s) came after calls under them (recorded after their \
                             children); those calls counted as outside the scope, as `immediately_before` cannot \
                             place them."
                        ),
                    );
                }
                let notes = &mut outcome.notes;
                warn_of_tally(notes, self.misattributed_spawns, rule.within.is_some(), |count, at| {
                    format!(
                        "Warning: {count} spawning call(s) ended in a way that contradicts how subagents were \
                         linked to the calls of their session and subagent type{at}: a call ended without a subagent \
                         while an earlier one, linked to a subagent, had not ended (the earlier call was most likely \
                         denied, which Claude Code ends without a record), or a call ended while the subagent linked \
                         to it still ran (parallel subagents of one type that started in another order than their \
                         calls); hook records do not say which call spawned which subagent, so calls inside those \
                         subagents may be counted under the wrong call; to check such rules, have Claude Code \
                         run subagents of one type one after another, or scope the rules by subagent type \
                         (`within: {{agent: TYPE}}`) with distinct types."
                    )
                });
                // Calls whose arguments an argument condition could not read.
                let [without_arguments, with_text_arguments] = self.unread_arguments_by_rule[idx];
                let unread = [
                    (
                        without_arguments,
                        "no arguments",
                        " (a tooltrace record without `args`, a hook record without `tool_input`; in OTLP, \
                         `gen_ai.tool.call.arguments` is opt-in in the OpenTelemetry GenAI conventions), so \
                         argument conditions could not match them; record the arguments",
                    ),
                    (
                        with_text_arguments,
                        "arguments that are text or a lone value, not a JSON object",
                        ", so `args` conditions could not match them (`args_text` matches such text); record the \
                         arguments as a JSON object (for OTLP, an SDK's attribute length limit, \
                         `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`, cuts JSON short into text)",
                    ),
                ];
                for (tally, what, why) in unread {
                    warn_of_tally(notes, tally, true, |count, at| {
                        format!("Warning: {count} tool call(s) record {what}{at}{why} to check this rule on every call.")
                    });
                }
                warn_of_tally(notes, self.calls_with_late_arguments, misses_late_arguments(idx, rule), |count, at| {
                    format!(
                        "Warning: {count} call(s) started without arguments and ended with them{at}, the line of the \
                         end; this rule's argument conditions that judge a call at its start (an order rule's, a \
                         scope's, and every one from a spec's 65th rule on) did not see the end's arguments: record \
                         the arguments at the start."
                    )
                });
                let names_calls = rule.all_matchers().any(CompiledMatcher::misses_nameless);
                warn_of_tally(notes, self.calls_without_name, names_calls, |count, at| {
                    format!(
                        "Warning: {count} call(s) record no tool or agent name{at} (an OTLP `execute_tool` or \
                         `invoke_agent` span without `gen_ai.tool.name` or `gen_ai.agent.name` and with nothing after \
                         the operation in its span name, or a Claude Code `SubagentStart` without `agent_type`), so \
                         matchers by name could not match them; record the name to check this rule on every call."
                    )
                });
                let order = rule.relation.is_order();
                warn_of_tally(notes, self.out_of_order_spans, order, |count, at| {
                    format!(
                        "Warning: {count} OTLP span(s) came after more records than the reader holds to order spans \
                         by time{at} and are placed after events that started later, so this rule may see calls out \
                         of order; check one run per file, and merge its exports into one document, which is \
                         ordered whole (`jq -cs '{{resourceSpans: map(.resourceSpans[])}}' FILE`)."
                    )
                });
                warn_of_tally(notes, self.spans_without_start, order, |count, at| {
                    format!(
                        "Warning: {count} OTLP span(s) record no start time{at} and are placed at their end time \
                         (before every other event when they record no end either), so this rule may see them where \
                         they did not run; export `startTimeUnixNano` on every span."
                    )
                });
                if let [first, second, more @ ..] = self.traces.as_slice()
                    && rule.relation.is_order()
                {
                    append_sentence(
                        &mut outcome.notes,
                        &format!(
                            "Warning: the trace holds the calls of more than one session or trace (`{first}`, \
                             `{second}`{}), read as one sequence (in file order; OTLP spans by time), so a call of one can satisfy \
                             or break this rule for another; check one session's records at a time.",
                            if more.is_empty() { "" } else { ", ..." }
                        ),
                    );
                }
                if scope.as_ref().is_some_and(|s| s.overflowed) {
                    outcome.passed = false;
                    outcome.notes = format!(
                        "more than {MAX_OPEN_SPANS} spans were open at once, so scopes could not be tracked; {}",
                        outcome.notes
                    );
                }
                if self.calls == 0 && outcome.passed {
                    // A pass on a trace without calls proves nothing: the report says so, where
                    // a CI job reads the verdict.
                    append_sentence(
                        &mut outcome.notes,
                        "Warning: the trace holds no tool calls or agent invocations, so this rule passed without \
                         evidence (is the trace capture installed, and is --trace-format right?).",
                    );
                }
                outcome
            })
            .collect();
        TraceOutcome {
            outcomes,
            events: self.events,
            calls: self.calls,
            summarized: self.summarized,
            excerpt: self.excerpt.into_iter().map(|(_, line)| line).collect(),
            traces: self.traces,
            misattributed_spawns: self.misattributed_spawns,
            calls_without_arguments: self.calls_without_arguments,
            calls_with_late_arguments: if late_arguments_missed { self.calls_with_late_arguments } else { (0, None) },
            calls_with_changed_arguments: self.calls_with_changed_arguments,
            calls_with_text_arguments: self.calls_with_text_arguments,
            calls_without_name: if names_calls { self.calls_without_name } else { (0, None) },
            out_of_order_spans: self.out_of_order_spans,
            spans_without_start: self.spans_without_start,
            times_without_zone: self.times_without_zone,
            times_unread: self.times_unread,
            unlinked_scopes,
            unmatched_scopes,
        }
    }
}

/// Occurrences that came before the span that puts them in scope (it was recorded after its
/// children): `never` and `count` take them in, since order does not matter to them;
/// `before` and `only_after` depend only on the first `a` and the first `b`, which are placed
/// by feed order among those inside (`firsts`: theirs); all true. `immediately_before` needs
/// the call before each `b`, which a late call cannot give: it leaves them outside (false).
fn take_late_calls(relation: &Relation, state: &mut RuleState, firsts: &mut [Option<u64>; 2], late: &Late) -> bool {
    // The earlier of the state's first and the late one (by feed order).
    let place = |first: &mut Option<Location>, order: &mut Option<u64>, late: Option<(u64, Location)>| {
        if let Some((late_order, location)) = late
            && order.is_none_or(|order| late_order < order)
        {
            *first = Some(location);
            *order = Some(late_order);
        }
    };
    let a_first = |firsts: &[Option<u64>; 2]| matches!(firsts, [Some(a), Some(b)] if a < b);
    match (relation, state) {
        (Relation::Never(_), RuleState::Never { first, count }) => {
            *count += late.calls;
            if first.is_none_or(|first| late.first.seq < first.seq) {
                *first = Some(late.first);
            }
            true
        }
        (Relation::Count(..), RuleState::Count { count }) => {
            *count += late.calls;
            true
        }
        (Relation::Before(..), RuleState::Before { first_a, first_b, a_first: holds }) => {
            place(first_a, &mut firsts[0], late.a);
            place(first_b, &mut firsts[1], late.b);
            *holds = a_first(firsts);
            true
        }
        (Relation::OnlyAfter(..), RuleState::OnlyAfter { seen_a, first_b, violation }) => {
            place(seen_a, &mut firsts[0], late.a);
            place(first_b, &mut firsts[1], late.b);
            // A violation is about the first `b`: it has no earlier `a` unless the first `a`
            // came before it.
            *violation = if a_first(firsts) { None } else { *first_b };
            true
        }
        _ => false,
    }
}

/// Takes occurrences that came before the span that put them in scope into the rule, or
/// counts a span whose calls it cannot place (see [`take_late_calls`]).
fn attribute_late(relation: &Relation, state: &mut RuleState, scope: &mut Scope, late: &Late) {
    if take_late_calls(relation, state, &mut scope.firsts, late) {
        scope.attributed += late.calls;
    } else {
        scope.late_parents += 1;
    }
}

/// After a step inside the scope: the feed order of the rule's first `a` and first `b`
/// (`before`, `only_after`), when they were just found.
fn note_firsts(state: &RuleState, firsts: &mut [Option<u64>; 2], order: u64) {
    let (a, b) = match state {
        RuleState::Before { first_a, first_b, .. } => (first_a.is_some(), first_b.is_some()),
        RuleState::OnlyAfter { seen_a, first_b, .. } => (seen_a.is_some(), first_b.is_some()),
        _ => return,
    };
    if a && firsts[0].is_none() {
        firsts[0] = Some(order);
    }
    if b && firsts[1].is_none() {
        firsts[1] = Some(order);
    }
}

/// One occurrence outside the scope, under a parent that may come later.
fn late_occurrence(
    relation: &Relation,
    ids: RuleIds,
    matches: &Matches<'_, '_>,
    location: Location,
    order: u64,
) -> Late {
    let (a, b) = match relation {
        Relation::Before(a, b) | Relation::OnlyAfter(a, b) => (
            matches.check(a, ids.first).then_some((order, location)),
            matches.check(b, ids.second).then_some((order, location)),
        ),
        _ => (None, None),
    };
    Late { calls: 1, first: location, a, b }
}

/// Whether an occurrence concerns a relation: it matches one of its matchers, or, for
/// `immediately_before`, it is any call (the call before a `b` matters). Exact with lazy and
/// with precomputed matches alike.
fn concerns(relation: &Relation, ids: RuleIds, matches: &Matches<'_, '_>) -> bool {
    match relation {
        Relation::ImmediatelyBefore(..) => true,
        Relation::Before(a, b) | Relation::OnlyAfter(a, b) => {
            matches.check(a, ids.first) || matches.check(b, ids.second)
        }
        Relation::Never(m) | Relation::Count(m, ..) => matches.check(m, ids.first),
    }
}

/// A call `immediately_before` remembers, to name the one right before a `b` it failed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Call {
    at: Location,
    /// An agent's start (a subagent, an OTLP `invoke_agent` span), not a tool call.
    agent_start: bool,
    /// The hash of its span (0: none, or not known: a block summary keeps none), to tell the
    /// agent it spawned.
    span: u64,
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.agent_start { "an agent's start" } else { "the call" };
        write!(f, "{what} at {}", self.at)
    }
}

/// Where a call sits in the span tree, for `immediately_before`: its span and parent (hashes;
/// 0: none) and whether it is an agent's start.
#[derive(Debug, Clone, Copy, Default)]
struct CallLink {
    span: u64,
    parent: u64,
    agent_start: bool,
}

fn step_rule(
    relation: &Relation,
    ids: RuleIds,
    state: &mut RuleState,
    here: Location,
    link: CallLink,
    matches: &Matches<'_, '_>,
) {
    let (first_id, second_id) = (ids.first, ids.second);
    match (relation, state) {
        (Relation::Before(a, b), RuleState::Before { first_a, first_b, a_first }) => {
            if first_b.is_none() && matches.check(b, second_id) {
                *first_b = Some(here);
                *a_first = first_a.is_some();
            }
            if first_a.is_none() && matches.check(a, first_id) {
                *first_a = Some(here);
            }
        }
        (Relation::OnlyAfter(a, b), RuleState::OnlyAfter { seen_a, first_b, violation }) => {
            if matches.check(b, second_id) {
                if first_b.is_none() {
                    *first_b = Some(here);
                }
                if seen_a.is_none() && violation.is_none() {
                    *violation = Some(here);
                }
            }
            if seen_a.is_none() && matches.check(a, first_id) {
                *seen_a = Some(here);
            }
        }
        (
            Relation::ImmediatelyBefore(a, b),
            RuleState::ImmediatelyBefore { previous_is_a, previous, count_b, violation, first_b },
        ) => {
            if matches.check(b, second_id) {
                *count_b += 1;
                if first_b.is_none() {
                    *first_b = Some(here);
                }
                if !*previous_is_a && violation.is_none() {
                    *violation = Some((here, *previous));
                }
            }
            // The agent a call spawned (a `Task` and its subagent, an OTLP `execute_tool` span
            // and the `invoke_agent` inside it) is one step with that call: what comes right
            // after the agent starts comes right after the call too, as in a trace that
            // records no agent starts (tooltrace).
            let spawned = link.agent_start && link.parent != 0 && previous.is_some_and(|call| call.span == link.parent);
            let is_a = matches.check(a, first_id);
            *previous_is_a = is_a || (spawned && *previous_is_a);
            *previous = Some(Call { at: here, agent_start: link.agent_start, span: link.span });
        }
        (Relation::Never(m), RuleState::Never { first, count }) if matches.check(m, first_id) => {
            *count += 1;
            if first.is_none() {
                *first = Some(here);
            }
        }
        (Relation::Count(m, _, _), RuleState::Count { count }) if matches.check(m, first_id) => {
            *count += 1;
        }
        _ => {}
    }
}

/// `place` says where the rule looked: "in the trace", or "inside the scope" for a scoped one.
fn conclude(relation: &Relation, state: &RuleState, place: &str) -> RuleOutcome {
    let (passed, notes) = match (relation, state) {
        (Relation::Before(a, b), RuleState::Before { first_a, first_b, a_first }) => match (first_a, first_b) {
            (Some(la), Some(lb)) if *a_first => {
                (true, format!("first {} at {la} precedes first {} at {lb}", a.description, b.description))
            }
            (Some(la), Some(lb)) if la == lb => (
                false,
                format!(
                    "the first {} at {la} is also the first {}, and a call does not come before itself",
                    a.description, b.description
                ),
            ),
            (Some(la), Some(lb)) => {
                (false, format!("first {} at {lb} comes before first {} at {la}", b.description, a.description))
            }
            (None, Some(lb)) => (false, format!("{} at {lb} but no {} {place}", b.description, a.description)),
            (Some(la), None) => (false, format!("{} at {la} but no {} {place}", a.description, b.description)),
            (None, None) => (false, format!("neither {} nor {} occurs {place}", a.description, b.description)),
        },
        (Relation::OnlyAfter(a, b), RuleState::OnlyAfter { seen_a, first_b, violation }) => {
            match (violation, first_b) {
                (Some(lv), _) => (false, format!("{} at {lv} has no earlier {}", b.description, a.description)),
                (None, None) => {
                    (true, format!("no {} {place}, so none came without an earlier {}", b.description, a.description))
                }
                (None, Some(lb)) => {
                    let la = seen_a.map(|l| l.to_string()).unwrap_or_default();
                    (
                        true,
                        format!(
                            "every {} comes after {} (first at {la}, first {} at {lb})",
                            b.description, a.description, b.description
                        ),
                    )
                }
            }
        }
        (Relation::ImmediatelyBefore(a, b), RuleState::ImmediatelyBefore { count_b, violation, first_b, .. }) => {
            match (violation, count_b) {
                (_, 0) => (false, format!("no {} {place}", b.description)),
                (Some((lv, before)), _) => {
                    let before = match before {
                        Some(call) => format!("right before it came {call}"),
                        None => format!("it is the first call {place}"),
                    };
                    (
                        false,
                        format!("{} at {lv} is not directly preceded by {} ({before})", b.description, a.description),
                    )
                }
                (None, n) => (
                    true,
                    format!(
                        "all {n} occurrence(s) of {} directly follow {} (the first at {})",
                        b.description,
                        a.description,
                        first_b.map(|l| l.to_string()).unwrap_or_default()
                    ),
                ),
            }
        }
        (Relation::Never(m), RuleState::Never { first, count }) => match first {
            Some(at) => (false, format!("{} occurs {count} time(s), first at {at}", m.description)),
            None => (true, format!("{} never occurs", m.description)),
        },
        (Relation::Count(m, low, high), RuleState::Count { count }) => {
            let low_ok = low.is_none_or(|low| *count >= low);
            let high_ok = high.is_none_or(|high| *count <= high);
            let bounds = match (low, high) {
                (Some(l), Some(h)) => format!("between {l} and {h}"),
                (Some(l), None) => format!("at least {l}"),
                (None, Some(h)) => format!("at most {h}"),
                (None, None) => "any number".to_owned(),
            };
            (low_ok && high_ok, format!("{} occurs {count} time(s); expected {bounds}", m.description))
        }
        _ => (false, "internal mismatch between rule and state".to_owned()),
    };
    RuleOutcome { passed, notes }
}

#[cfg(test)]
mod tests {
    use agentic_core::event::{EventSource, SpanContext};
    use serde_json::json;

    use super::*;

    /// Notes show a matcher so that it reads back as the spec has it: values quoted, names and
    /// paths quoted when they hold anything but name characters, a regex between slashes only
    /// when nothing in it could end it, else between backticks unless it holds one.
    #[test]
    fn matchers_are_described_unambiguously() {
        let describe = |matcher: Value| {
            let mut diagnostics = Vec::new();
            compile_matcher(&serde_json::from_value(matcher).unwrap(), "", &mut diagnostics).description
        };
        assert_eq!(
            describe(json!({"tool": "Bash", "args": {"command": {"contains": "cargo test"}}})),
            r#"Bash(command contains "cargo test")"#
        );
        assert_eq!(
            describe(json!({"tool": "Re(ad", "args": {"x == \"y\"), Read(z": {"equals": ""}}})),
            r#""Re(ad"("x == \"y\"), Read(z" == "")"#
        );
        assert_eq!(
            describe(json!({"tool": "mcp__*", "args": {"edits.0.path": {"regex": "^src/"}}})),
            "mcp__*(edits.0.path =~ `^src/`)"
        );
        // Backslashes as written, not doubled as in JSON.
        assert_eq!(
            describe(json!({"tool": "Bash", "args": {"command": {"regex": "git push.*(--force|-f\\b)"}}})),
            r"Bash(command =~ `git push.*(--force|-f\b)`)"
        );
        // A space at an end, which a Markdown code span would drop: quoted.
        assert_eq!(
            describe(json!({"tool": "Bash", "args": {"command": {"regex": " a "}}})),
            r#"Bash(command =~ " a ")"#
        );
        assert_eq!(
            describe(json!({"tool": "Bash", "args": {"command": {"regex": "a`b\\d/"}}})),
            r#"Bash(command =~ "a`b\\d/")"#
        );
        assert_eq!(
            describe(json!({"tool": "Bash", "args": {"command": {"regex": "^git commit"}}})),
            "Bash(command =~ /^git commit/)"
        );
        assert_eq!(describe(json!({"agent": ["code reviewer", "planner"]})), r#"agent "code reviewer"|planner"#);
    }

    fn call(
        event_type: EventType,
        tool: &str,
        args: Value,
        span: Option<&str>,
        parent: Option<&str>,
        line: u64,
    ) -> CanonicalEvent {
        let mut event = CanonicalEvent::new(event_type, "2026-01-01T00:00:00Z".parse().unwrap()).with_step(tool);
        event.data = json!({"input": args});
        event.seq = line;
        event.span = Some(SpanContext {
            trace_id: None,
            span_id: span.map(str::to_owned),
            parent_span_id: parent.map(str::to_owned),
        });
        event.source = Some(EventSource { format: "test".into(), line: Some(line), ..Default::default() });
        event
    }

    fn end(tool: &str, args: Value, line: u64) -> CanonicalEvent {
        call(EventType::ToolCallEnd, tool, args, None, None, line)
    }

    /// An event of span `id` (under `parent`) without arguments: an agent, a step, a model
    /// call or a tool call.
    fn span(event_type: EventType, name: &str, id: &str, parent: Option<&str>, line: u64) -> CanonicalEvent {
        let mut event = call(event_type, name, Value::Null, Some(id), parent, line);
        event.data = Value::Null;
        event
    }

    fn rule(yaml: Value) -> CompiledRule {
        let rule: SequenceRule = serde_json::from_value(yaml).unwrap();
        let mut diagnostics = Vec::new();
        let compiled = compile_rule(&rule, "/r", &mut diagnostics).unwrap();
        assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
        compiled
    }

    fn verdicts(rules: Vec<Value>, events: Vec<CanonicalEvent>) -> Vec<bool> {
        let rules = rules.into_iter().map(rule).collect();
        SequenceEngine::run(rules, events, 0).outcomes.iter().map(|o| o.passed).collect()
    }

    /// The agent a call spawned is one step with that call for `immediately_before`: a
    /// subagent's first call comes right after its `Task`, as in a trace without agent starts;
    /// an agent that no call right before it spawned is a call between the two.
    #[test]
    fn an_agent_is_one_step_with_the_call_that_spawned_it() {
        use EventType::{AgentInvokeEnd as AE, AgentInvokeStart as AS, ToolCallEnd as TE, ToolCallStart as TS};
        let rules = || {
            vec![
                json!({"immediately_before": {"a": {"tool": "Task"}, "b": {"tool": "Read"}}}),
                json!({"immediately_before": {"a": {"agent": "reviewer"}, "b": {"tool": "Read"}}}),
                json!({"immediately_before": {"a": {"tool": "Task"}, "b": {"agent": "reviewer"}}}),
                json!({"immediately_before": {"a": {"tool": "Grep"}, "b": {"tool": "Read"}}}),
                json!({"immediately_before": {"a": {"agent": "reviewer"}, "b": {"tool": "Read"}}, "within": {"tool": "Task"}}),
            ]
        };
        // Grep, then a Task whose subagent's first call is a Read.
        let spawned = vec![
            span(TS, "Grep", "g", None, 1),
            span(TE, "Grep", "g", None, 2),
            span(TS, "Task", "t", None, 3),
            span(AS, "reviewer", "ag", Some("t"), 4),
            span(TS, "Read", "r", Some("ag"), 5),
            span(TE, "Read", "r", Some("ag"), 6),
            span(AE, "reviewer", "ag", Some("t"), 7),
            span(TE, "Task", "t", None, 8),
        ];
        assert_eq!(verdicts(rules(), spawned), vec![true, true, true, false, true]);
        // An agent that the call before it did not spawn (an OTLP `invoke_agent` at the top)
        // stands between Grep and the Read.
        let unspawned = vec![
            span(TS, "Grep", "g", None, 1),
            span(TE, "Grep", "g", None, 2),
            span(AS, "reviewer", "ag", None, 3),
            span(TS, "Read", "r", Some("ag"), 4),
            span(TE, "Read", "r", Some("ag"), 5),
            span(AE, "reviewer", "ag", None, 6),
        ];
        assert_eq!(verdicts(rules(), unspawned), vec![false, true, false, false, false]);
        // Inside the scope the subagent's start is the first call; the Task, its root, is not
        // inside, so nothing inside comes before the Read.
        let within = vec![
            span(TS, "Task", "t", None, 1),
            span(AS, "reviewer", "ag", Some("t"), 2),
            span(TS, "Read", "r1", Some("ag"), 3),
            span(TS, "Read", "r2", Some("ag"), 4),
        ];
        let rule = vec![
            json!({"immediately_before": {"a": {"tool": "Task"}, "b": {"tool": "Read"}}, "within": {"tool": "Task"}}),
        ];
        assert_eq!(verdicts(rule, within), vec![false]);
        // A failed rule's note names the call right before the `b` it failed on.
        let notes = |events: Vec<CanonicalEvent>| {
            let rules =
                vec![super::tests::rule(json!({"immediately_before": {"a": {"tool": "Grep"}, "b": {"tool": "Read"}}}))];
            SequenceEngine::run(rules, events, 0).outcomes[0].notes.clone()
        };
        assert_eq!(
            notes(vec![
                span(TS, "Grep", "g", None, 1),
                span(AS, "reviewer", "ag", None, 2),
                span(TS, "Read", "r", Some("ag"), 3)
            ]),
            "Read at line 3 (event 3) is not directly preceded by Grep (right before it came an agent's start at line 2 \
             (event 2))"
        );
        assert_eq!(
            notes(vec![span(TS, "Read", "r", None, 1)]),
            "Read at line 1 (event 1) is not directly preceded by Grep (it is the first call in the trace)"
        );
        assert_eq!(
            notes(vec![span(TS, "Bash", "b", None, 1), span(TS, "Read", "r", None, 2)]),
            "Read at line 2 (event 2) is not directly preceded by Grep (right before it came the call at line 1 (event 1))"
        );
    }

    fn skill_trace() -> Vec<CanonicalEvent> {
        vec![
            end("Bash", json!({"command": "ls"}), 1),
            end("Read", json!({"file_path": "/repo/skills/phase1/skill.md"}), 2),
            end("Write", json!({"file_path": "src/a.rs"}), 3),
            end("Bash", json!({"command": "cargo test"}), 4),
            end("Bash", json!({"command": "git commit -m x"}), 5),
        ]
    }

    #[test]
    fn every_relation_on_one_trace() {
        let skill = json!({"tool": "Read", "args": {"file_path": {"glob": "**/skill.md"}}});
        let got = verdicts(
            vec![
                json!({"before": {"a": skill, "b": {"tool": "Write"}}}),
                json!({"before": {"a": skill, "b": {"tool": ["Bash", "Write"]}}}),
                json!({"only_after": {"a": skill, "b": {"tool": "Write"}}}),
                json!({"only_after": {"a": skill, "b": {"tool": "Bash"}}}),
                json!({"only_after": {"a": skill, "b": {"tool": "Edit"}}}),
                json!({"immediately_before": {"a": {"tool": "Bash", "args": {"command": {"contains": "cargo test"}}},
                                              "b": {"tool": "Bash", "args": {"command": {"regex": "^git commit"}}}}}),
                json!({"immediately_before": {"a": {"tool": "Read"}, "b": {"tool": "Bash"}}}),
                json!({"never": {"tool": "Bash", "args_text": {"contains": "rm -rf"}}}),
                json!({"never": {"tool": "Write"}}),
                json!({"count": {"of": {"tool": "Bash"}, "at_least": 3}}),
                json!({"count": {"of": {"tool": "Bash"}, "at_most": 2}}),
                json!({"count": {"of": {"tool": "B*"}, "at_least": 3, "at_most": 3}}),
            ],
            skill_trace(),
        );
        assert_eq!(got, vec![true, false, true, false, true, true, false, true, false, true, false, true]);
    }

    #[test]
    fn notes_cite_trace_lines() {
        let rules = vec![rule(json!({"before": {"a": {"tool": "Read"}, "b": {"tool": "Bash"}}}))];
        let outcome = SequenceEngine::run(rules, skill_trace(), 2);
        assert_eq!(
            outcome.outcomes[0].notes,
            "first Bash at line 1 (event 1) comes before first Read at line 2 (event 2)"
        );
        assert_eq!(outcome.excerpt.len(), 2);
        assert!(outcome.excerpt[1].starts_with("line 5 (event 5): Bash"), "{:?}", outcome.excerpt);
        assert_eq!((outcome.events, outcome.calls), (5, 5));
    }

    /// The tier-3 excerpt marks a call that failed: on its start's line when its end (with
    /// status `error`) pairs with it, and on the line of a post-only call that failed.
    #[test]
    fn the_excerpt_marks_failed_calls() {
        let failed = |mut event: CanonicalEvent| {
            event.status = Some(agentic_core::EventStatus::Error);
            event
        };
        let events = vec![
            call(EventType::ToolCallStart, "Bash", json!({"command": "rm -rf build"}), Some("c1"), None, 1),
            call(EventType::ToolCallStart, "Read", json!({}), Some("c2"), None, 2),
            call(EventType::ToolCallEnd, "Read", json!({}), Some("c2"), None, 3),
            failed(call(EventType::ToolCallEnd, "Bash", json!({"command": "rm -rf build"}), Some("c1"), None, 4)),
            failed(end("Write", json!({"file_path": "x"}), 5)),
            end("Edit", json!({}), 6),
            // A pair without ids (tooltrace v2 `pre`/`post_failure` without `trace_id`).
            call(EventType::ToolCallStart, "Bash", json!({"command": "rm x"}), None, None, 7),
            failed(call(EventType::ToolCallEnd, "Bash", json!({"command": "rm x"}), None, None, 8)),
        ];
        let outcome = SequenceEngine::run(vec![rule(json!({"never": {"tool": "Grep"}}))], events, 10);
        let marked: Vec<bool> = outcome.excerpt.iter().map(|line| line.ends_with(" -> failed")).collect();
        assert_eq!(marked, [true, false, true, false, true], "{:?}", outcome.excerpt);
    }

    /// An end pairs with the open start under its id only when it is of the same call: an
    /// end of another tool under that id (a later run numbering its ids afresh after a crash
    /// left a start open) is a call of its own, and two starts in flight under one id take
    /// two ends (two calls, not three).
    #[test]
    fn an_end_of_another_call_under_an_open_id_is_a_call_of_its_own() {
        use EventType::*;
        let rm = json!({"command": "rm -rf /"});
        let events = vec![
            call(ToolCallStart, "Read", json!({}), Some("t-01"), None, 1),
            call(ToolCallEnd, "Bash", rm.clone(), Some("t-01"), None, 2),
        ];
        let never_rm = json!({"never": {"tool": "Bash", "args": {"command": {"contains": "rm -rf"}}}});
        let count_all = json!({"count": {"of": {"tool": "*"}, "at_least": 2, "at_most": 2}});
        assert_eq!(verdicts(vec![never_rm.clone(), count_all.clone()], events), [false, true]);
        // The Read's own end still pairs with it afterwards.
        let events = vec![
            call(ToolCallStart, "Read", json!({}), Some("t-01"), None, 1),
            call(ToolCallEnd, "Bash", rm, Some("t-01"), None, 2),
            call(ToolCallEnd, "Read", json!({}), Some("t-01"), None, 3),
        ];
        assert_eq!(verdicts(vec![never_rm, count_all.clone()], events), [false, true]);
        let events = vec![
            call(ToolCallStart, "A", json!({"a": 1}), Some("x"), None, 1),
            call(ToolCallStart, "A", json!({"a": 2}), Some("x"), None, 2),
            call(ToolCallEnd, "A", json!({"a": 1}), Some("x"), None, 3),
            call(ToolCallEnd, "A", json!({"a": 2}), Some("x"), None, 4),
        ];
        assert_eq!(verdicts(vec![count_all.clone()], events), [true]);
        // Two calls of different tools in flight under one id: two calls, and the id closes
        // (a later call under it is one call, not two).
        let events = vec![
            call(ToolCallStart, "A", json!({}), Some("x"), None, 1),
            call(ToolCallStart, "B", json!({}), Some("x"), None, 2),
            call(ToolCallEnd, "B", json!({}), Some("x"), None, 3),
            call(ToolCallEnd, "A", json!({}), Some("x"), None, 4),
        ];
        assert_eq!(verdicts(vec![count_all.clone()], events.clone()), [true]);
        let mut again = events;
        again.push(call(ToolCallStart, "C", json!({}), Some("x"), None, 5));
        again.push(call(ToolCallEnd, "C", json!({}), Some("x"), None, 6));
        let count_three = json!({"count": {"of": {"tool": "*"}, "at_least": 3, "at_most": 3}});
        assert_eq!(verdicts(vec![count_three], again), [true]);
        // A subagent's stop that names another type than its start still ends it.
        let events = vec![
            call(AgentInvokeStart, "reviewer", json!(null), Some("g1"), None, 1),
            call(AgentInvokeEnd, "code-reviewer", json!(null), Some("g1"), None, 2),
        ];
        let one_agent = json!({"count": {"of": {"agent": "*"}, "at_least": 1, "at_most": 1}});
        assert_eq!(verdicts(vec![one_agent], events), [true]);
    }

    /// A call is judged at its start: one whose start has no arguments (absent, `null` or `{}`)
    /// and whose end has them counts once, and the rules with argument conditions say that
    /// they did not see the end's arguments (a `pre` without args, then its `post` of
    /// `rm -rf /`); an end with no arguments pairs with a start that has them.
    #[test]
    fn arguments_only_an_end_shows_reach_never_and_count_rules() {
        use EventType::*;
        let rm = json!({"command": "rm -rf /"});
        let rules = || {
            [
                json!({"never": {"tool": "Bash", "args": {"command": {"contains": "rm -rf"}}}}),
                json!({"count": {"of": {"tool": "Bash"}, "at_least": 1, "at_most": 1}}),
                json!({"count": {"of": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}, "at_most": 0}}),
                json!({"before": {"a": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}, "b": {"tool": "Read"}}}),
                json!({"never": {"tool": "Bash", "args": {"command": {"contains": "rm -rf"}}}, "within": {"tool": "Task"}}),
                json!({"never": {"tool": "Bash", "args_text": {"regex": "^\\{\\}$"}}}),
            ]
            .into_iter()
            .map(rule)
            .collect::<Vec<_>>()
        };
        for (start, end) in [(Some("c1"), Some("c1")), (None, None)] {
            for bare in [json!(null), json!({})] {
                let events = vec![
                    call(ToolCallStart, "Bash", bare.clone(), start, None, 1),
                    call(ToolCallEnd, "Bash", rm.clone(), end, None, 2),
                    call(ToolCallEnd, "Read", json!({}), None, None, 3),
                ];
                let outcome = SequenceEngine::run(rules(), events, 2);
                assert_eq!(outcome.calls, 2, "{start:?} {bare}");
                let got: Vec<bool> = outcome.outcomes.iter().map(|o| o.passed).collect();
                // The `never` rule fails at the end's line; the call counts once; the order
                // rule placed the call at its start, without arguments (and says so); outside
                // any scope, the scoped rule holds; the start's `{}` is not counted again.
                let braces = bare == json!({});
                assert_eq!(got, [false, true, false, false, true, !braces], "{start:?} {bare}");
                assert!(outcome.outcomes[0].notes.contains("line 2"), "{:?}", outcome.outcomes[0].notes);
                // The tier-3 excerpt shows what the call ran (on its start's line).
                assert!(
                    outcome.excerpt[0].ends_with(r#" -> ended with {"command":"rm -rf /"}"#),
                    "{:?}",
                    outcome.excerpt
                );
                assert_eq!(outcome.calls_with_late_arguments, (1, Some(2)), "{start:?} {bare}");
                let notes: Vec<&str> = outcome.outcomes.iter().map(|o| o.notes.as_str()).collect();
                let warned: Vec<bool> = notes.iter().map(|n| n.contains("started without arguments")).collect();
                assert_eq!(warned, [false, false, false, true, false, false], "{notes:?}");
            }
        }
        // Inside a scope, the end's arguments count there (its parent is the start's).
        let events = vec![
            call(ToolCallEnd, "Task", json!({}), Some("t1"), None, 1),
            call(ToolCallStart, "Bash", json!(null), Some("c1"), Some("t1"), 2),
            call(ToolCallEnd, "Bash", rm.clone(), Some("c1"), Some("t1"), 3),
        ];
        assert_eq!(
            verdicts(
                vec![
                    json!({"never": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}, "within": {"tool": "Task"}})
                ],
                events
            ),
            [false]
        );
        // A nested task whose prompt only its end shows is inside the outer task's scope.
        let prompt = |text: &str| json!({"prompt": text});
        let events = vec![
            call(ToolCallStart, "Task", prompt("outer"), Some("t1"), None, 1),
            call(ToolCallStart, "Task", json!(null), Some("t2"), Some("t1"), 2),
            call(ToolCallEnd, "Task", prompt("rm -rf /"), Some("t2"), Some("t1"), 3),
            call(ToolCallEnd, "Task", prompt("outer"), Some("t1"), None, 4),
        ];
        let nested =
            json!({"never": {"tool": "Task", "args": {"prompt": {"contains": "rm"}}}, "within": {"tool": "Task"}});
        assert_eq!(verdicts(vec![nested], events), [false]);
        // The call is placed by its start's parent, also when its end names none.
        let scoped_rm =
            || json!({"never": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}, "within": {"tool": "Task"}});
        let events = vec![
            call(ToolCallStart, "Task", prompt("x"), Some("t1"), None, 1),
            call(ToolCallStart, "Bash", json!(null), Some("c1"), Some("t1"), 2),
            call(ToolCallEnd, "Bash", rm.clone(), Some("c1"), None, 3),
        ];
        assert_eq!(verdicts(vec![scoped_rm()], events), [false]);
        // ... by its end's when the start names none, and by its start's when both name one.
        for (start_parent, end_parent, inside) in [(None, Some("t1"), true), (Some("t0"), Some("t1"), false)] {
            let events = vec![
                call(ToolCallStart, "Task", prompt("x"), Some("t1"), None, 1),
                call(ToolCallStart, "Bash", json!(null), Some("c1"), start_parent, 2),
                call(ToolCallEnd, "Bash", rm.clone(), Some("c1"), end_parent, 3),
            ];
            assert_eq!(verdicts(vec![scoped_rm()], events), [!inside], "{start_parent:?}");
        }
        // A start a crashed run left open under the id does not make the next call count
        // twice: the end pairs with the start whose arguments the rules see as its own.
        let rm_x = json!({"command": "rm x"});
        for stale in [json!(null), json!({"command": "ls"})] {
            let events = vec![
                call(ToolCallStart, "Bash", stale.clone(), Some("c1"), None, 1),
                call(ToolCallStart, "Bash", rm_x.clone(), Some("c1"), None, 2),
                call(ToolCallEnd, "Bash", rm_x.clone(), Some("c1"), None, 3),
            ];
            let once = json!({"count": {"of": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}, "at_least": 1, "at_most": 1}});
            assert_eq!(verdicts(vec![once], events), [true], "{stale}");
        }
        // A stale start under the id and a rewritten input: the end takes the start most like
        // it (the `git` one), counts the call once, and is placed under its parent.
        let git = |command: &str| json!({"command": command});
        let events = vec![
            call(ToolCallStart, "Bash", git("ls"), Some("c1"), None, 1),
            call(ToolCallStart, "Task", prompt("x"), Some("t1"), None, 2),
            call(ToolCallStart, "Bash", git("git status"), Some("c1"), Some("t1"), 3),
            call(ToolCallEnd, "Bash", git("git status; rm -rf /"), Some("c1"), Some("t1"), 4),
        ];
        let git_once =
            json!({"count": {"of": {"tool": "Bash", "args": {"command": {"contains": "git"}}}, "at_most": 1}});
        assert_eq!(verdicts(vec![git_once, scoped_rm()], events), [true, false]);
        let events = vec![
            call(ToolCallStart, "Bash", git("ls"), Some("c1"), None, 1),
            call(ToolCallStart, "Task", prompt("x"), Some("t1"), None, 2),
            call(ToolCallStart, "Bash", git("ls"), Some("c1"), Some("t1"), 3),
            call(ToolCallEnd, "Bash", rm.clone(), Some("c1"), Some("t1"), 4),
        ];
        assert_eq!(verdicts(vec![scoped_rm()], events), [false]);
        // Starts of two calls under one span id (a writer that reused `trace_id`), told apart
        // by their call ids (`tool_use_id`): the end pairs with its own call's start, whatever
        // the other start's arguments, so a bare start's call counts at its end, in its scope.
        let with_id = |mut event: CanonicalEvent, id: &str| {
            event.attributes.insert("gen_ai.tool.call.id".into(), json!(id));
            event
        };
        let stale_then_bare = |stale: Value| {
            vec![
                with_id(call(ToolCallStart, "Bash", stale, Some("x"), None, 1), "old1"),
                call(ToolCallStart, "Task", prompt("x"), Some("t1"), None, 2),
                with_id(call(ToolCallStart, "Bash", json!({}), Some("x"), Some("t1"), 3), "u1"),
                with_id(call(ToolCallEnd, "Bash", rm.clone(), Some("x"), Some("t1"), 4), "u1"),
            ]
        };
        let rm_twice =
            json!({"count": {"of": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}, "at_most": 1}});
        assert_eq!(verdicts(vec![scoped_rm()], stale_then_bare(git("ls"))), [false]);
        assert_eq!(verdicts(vec![rm_twice.clone()], stale_then_bare(rm.clone())), [false]);
        // Without call ids the end takes the start most like it (here the stale `rm` one).
        let mut events = stale_then_bare(rm.clone());
        events.iter_mut().for_each(|event| event.attributes.clear());
        assert_eq!(verdicts(vec![rm_twice], events), [true]);
        // Its own call's start even when that start's arguments matched a rule the end's do
        // not (an input rewritten to something harmless): the other start stays open.
        let events = vec![
            with_id(call(ToolCallStart, "Bash", git("ls"), Some("x"), None, 1), "old1"),
            with_id(call(ToolCallStart, "Bash", rm.clone(), Some("x"), None, 2), "u1"),
            with_id(call(ToolCallEnd, "Bash", git("ls"), Some("x"), None, 3), "u1"),
            with_id(call(ToolCallEnd, "Bash", git("ls"), Some("x"), None, 4), "old1"),
        ];
        let outcome = SequenceEngine::run(
            vec![rule(json!({"never": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}}))],
            events,
            0,
        );
        assert_eq!((outcome.calls, outcome.outcomes[0].passed), (2, false));
        assert_eq!(outcome.calls_with_late_arguments, (0, None));
        // An end without arguments says nothing of its start: it takes the oldest (of its
        // parent), not one with arguments, so the other end's arguments are its start's and
        // no call "started without arguments" (two OTLP spans that share an id).
        let events = vec![
            call(ToolCallStart, "Bash", json!(null), Some("x"), None, 1),
            call(ToolCallStart, "Bash", git("ls"), Some("x"), None, 2),
            call(ToolCallEnd, "Bash", json!(null), Some("x"), None, 3),
            call(ToolCallEnd, "Bash", git("ls"), Some("x"), None, 4),
        ];
        let ordered =
            json!({"before": {"a": {"tool": "Bash", "args": {"command": {"contains": "ls"}}}, "b": {"tool": "Read"}}});
        let outcome = SequenceEngine::run(vec![rule(ordered)], events, 0);
        assert_eq!(outcome.calls_with_late_arguments, (0, None));
        assert_eq!(outcome.calls, 2);
        // Three calls under one id that end in another order than they started: each end
        // takes the start with its arguments (the bare end the bare start), so none "started
        // without arguments".
        let events = vec![
            call(ToolCallStart, "Bash", git("ls"), Some("x"), None, 1),
            call(ToolCallStart, "Bash", git("pwd"), Some("x"), None, 2),
            call(ToolCallStart, "Bash", json!({}), Some("x"), None, 3),
            call(ToolCallEnd, "Bash", git("pwd"), Some("x"), None, 4),
            call(ToolCallEnd, "Bash", json!({}), Some("x"), None, 5),
            call(ToolCallEnd, "Bash", git("ls"), Some("x"), None, 6),
        ];
        let ordered =
            json!({"before": {"a": {"tool": "Bash", "args": {"command": {"contains": "ls"}}}, "b": {"tool": "Read"}}});
        let outcome = SequenceEngine::run(vec![rule(ordered)], events, 0);
        assert_eq!((outcome.calls, outcome.calls_with_late_arguments), (3, (0, None)));
        // A start that had the arguments is not counted again at its end.
        let events = vec![
            call(ToolCallStart, "Bash", rm.clone(), Some("c1"), None, 1),
            call(ToolCallEnd, "Bash", rm.clone(), Some("c1"), None, 2),
        ];
        assert_eq!(
            verdicts(
                vec![json!({"count": {"of": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}, "at_most": 1}})],
                events
            ),
            [true]
        );
        // An input rewritten between start and end: `never` and `count` see both, once.
        let ls = json!({"command": "ls"});
        let rules = || {
            [
                json!({"never": {"tool": "Bash", "args": {"command": {"contains": "rm -rf"}}}}),
                json!({"count": {"of": {"tool": "Bash", "args": {"command": {"contains": "rm"}}}, "at_most": 0}}),
                json!({"count": {"of": {"tool": "Bash", "args": {"command": {"regex": "^(ls|rm)"}}}, "at_most": 1}}),
            ]
            .into_iter()
            .map(rule)
            .collect::<Vec<_>>()
        };
        for (first, then, changed) in [(&ls, &rm, Some(2)), (&rm, &ls, None), (&rm, &rm, None)] {
            let events = vec![
                call(ToolCallStart, "Bash", first.clone(), Some("c1"), None, 1),
                call(ToolCallEnd, "Bash", then.clone(), Some("c1"), None, 2),
            ];
            let outcome = SequenceEngine::run(rules(), events, 0);
            let got: Vec<bool> = outcome.outcomes.iter().map(|o| o.passed).collect();
            assert_eq!(got, [false, false, true], "{first} {then}");
            assert_eq!(outcome.calls_with_changed_arguments, (u64::from(changed.is_some()), changed), "{first} {then}");
            assert_eq!(outcome.calls_with_late_arguments.0, 0);
        }
        // An end whose arguments say nothing pairs with a start that has them: one call.
        for bare in [json!(null), json!({})] {
            let events = vec![
                call(ToolCallStart, "Bash", rm.clone(), None, None, 1),
                call(ToolCallEnd, "Bash", bare.clone(), None, None, 2),
            ];
            let outcome = SequenceEngine::run(rules(), events, 0);
            assert_eq!((outcome.calls, outcome.calls_with_late_arguments.0), (1, 0), "{bare}");
        }
    }

    #[test]
    fn starts_and_ends_count_once() {
        let events = vec![
            call(EventType::ToolCallStart, "Read", json!({}), Some("c1"), None, 1),
            call(EventType::ToolCallEnd, "Read", json!({}), Some("c1"), None, 2),
            call(EventType::ToolCallEnd, "Read", json!({}), Some("c2"), None, 3),
        ];
        let got = verdicts(vec![json!({"count": {"of": {"tool": "Read"}, "at_least": 2, "at_most": 2}})], events);
        assert_eq!(got, vec![true]);
    }

    #[test]
    fn within_limits_rules_to_a_subtree() {
        // A Task parent (tooltrace style) with children, then a Bash outside it.
        let mut task = end("Task", json!({"description": "review"}), 1);
        task.span = Some(SpanContext { trace_id: None, span_id: Some("t1".into()), parent_span_id: None });
        task.attributes.insert("x.tooltrace.span_type".into(), json!("parent"));
        let events = vec![
            task,
            call(EventType::ToolCallEnd, "Read", json!({}), Some("t2"), Some("t1"), 2),
            call(EventType::ToolCallEnd, "Grep", json!({}), Some("t3"), Some("t1"), 3),
            call(EventType::ToolCallEnd, "Bash", json!({}), Some("t4"), None, 4),
        ];
        let got = verdicts(
            vec![
                json!({"never": {"tool": "Bash"}, "within": {"tool": "Task"}}),
                json!({"count": {"of": {"tool": "*"}, "at_least": 2, "at_most": 2}, "within": {"tool": "Task"}}),
                json!({"never": {"tool": "Bash"}}),
            ],
            events,
        );
        assert_eq!(got, vec![true, true, false]);
    }

    #[test]
    fn within_follows_nested_agent_spans_also_after_they_end() {
        let events = vec![
            span(EventType::AgentInvokeStart, "reviewer", "A", None, 1),
            span(EventType::AgentInvokeStart, "helper", "H", Some("A"), 2),
            call(EventType::ToolCallStart, "Bash", json!({}), Some("c1"), Some("H"), 3),
            call(EventType::ToolCallEnd, "Bash", json!({}), Some("c1"), Some("H"), 4),
            span(EventType::AgentInvokeEnd, "helper", "H", Some("A"), 5),
            span(EventType::AgentInvokeEnd, "reviewer", "A", None, 6),
            // Under the helper, which ended: still in the reviewer's subtree (a later batch).
            call(EventType::ToolCallStart, "Write", json!({}), Some("c2"), Some("H"), 7),
            // Under nothing the reviewer opened.
            call(EventType::ToolCallStart, "Edit", json!({}), Some("c3"), Some("X"), 8),
        ];
        let got = verdicts(
            vec![
                json!({"count": {"of": {"tool": "Bash"}, "at_least": 1, "at_most": 1}, "within": {"agent": "reviewer"}}),
                json!({"never": {"tool": "Write"}, "within": {"agent": "reviewer"}}),
                json!({"count": {"of": {"agent": "*"}, "at_least": 2, "at_most": 2}}),
                json!({"never": {"tool": "Edit"}, "within": {"agent": "reviewer"}}),
            ],
            events,
        );
        assert_eq!(got, vec![true, false, true, true]);
    }

    /// `only_after` without any `b` passes, and its note says why without claiming that
    /// nothing came before `a`.
    #[test]
    fn only_after_without_its_b_passes_and_says_so() {
        let events = vec![end("Bash", json!({}), 1), end("Edit", json!({}), 2)];
        let rules = vec![rule(json!({"only_after": {"a": {"tool": "Edit"}, "b": {"tool": "Deploy"}}}))];
        let outcome = SequenceEngine::run(rules, events, 0);
        assert!(outcome.outcomes[0].passed);
        assert_eq!(outcome.outcomes[0].notes, "no Deploy in the trace, so none came without an earlier Edit");
    }

    #[test]
    fn post_only_scopes_remember_a_bounded_window() {
        // Many Task parents (post-only, never ended), each followed by one child Bash; then a
        // child of the very first Task, which is by now outside the remembered window.
        let parent = |idx: u64| {
            let mut task = end("Task", json!({}), 2 * idx);
            task.span = Some(SpanContext { trace_id: None, span_id: Some(format!("t{idx}")), parent_span_id: None });
            task.attributes.insert("x.tooltrace.span_type".into(), json!("parent"));
            task
        };
        let total = POST_ONLY_SCOPE_WINDOW as u64 + 10;
        let mut events = Vec::new();
        for idx in 0..total {
            events.push(parent(idx));
            events.push(call(EventType::ToolCallEnd, "Bash", json!({}), None, Some(&format!("t{idx}")), 2 * idx + 1));
        }
        events.push(call(EventType::ToolCallEnd, "Bash", json!({}), None, Some("t0"), 2 * total + 1));
        events.push(call(
            EventType::ToolCallEnd,
            "Bash",
            json!({}),
            None,
            Some(&format!("t{}", total - 1)),
            2 * total + 2,
        ));
        let rules = vec![rule(
            json!({"count": {"of": {"tool": "Bash"}, "at_least": 0, "at_most": 1_000_000}, "within": {"tool": "Task"}}),
        )];
        let outcome = SequenceEngine::run(rules, events, 0);
        // Every direct child counts, plus the late child of the newest Task; the late child of
        // the oldest Task does not, and the note says so.
        assert_eq!(
            outcome.outcomes[0].notes,
            format!(
                "within Task: Bash occurs {} time(s); expected between 0 and 1000000. Warning: 1 call(s) were under a scope \
                 span more than {POST_ONLY_SCOPE_WINDOW} ended scope spans back, which the rule no longer tracks; \
                 they counted as outside the scope (a writer that logs the calls of a scope within {POST_ONLY_SCOPE_WINDOW} scope lines of it avoids this).",
                total + 1
            )
        );
    }

    #[test]
    fn children_before_their_parent_line_count_inside_and_immediately_before_warns() {
        let task_of = |id: &str, seq: u64| {
            let mut task = end("Task", json!({}), seq);
            task.span = Some(SpanContext { trace_id: None, span_id: Some(id.into()), parent_span_id: None });
            task.attributes.insert("x.tooltrace.span_type".into(), json!("parent"));
            task
        };
        let task = |seq: u64| task_of("p1", seq);
        let under_of =
            |parent: &str, tool: &str, seq: u64| call(EventType::ToolCallEnd, tool, json!({}), None, Some(parent), seq);
        let under = |tool: &str, seq: u64| under_of("p1", tool, seq);
        let never = || vec![rule(json!({"never": {"tool": "Write"}, "within": {"tool": "Task"}}))];
        // Parent line first (the seed's order): the write is inside, no note.
        let in_order = SequenceEngine::run(never(), vec![task(1), under("Write", 2)], 0);
        assert!(!in_order.outcomes[0].passed);
        assert!(!in_order.outcomes[0].notes.contains("came before"), "{}", in_order.outcomes[0].notes);
        // Parent line last (written when the task ended): the writes still count inside, first
        // at their own line, and the note says how they were placed.
        let late = SequenceEngine::run(never(), vec![under("Write", 1), under("Write", 2), task(3)], 0);
        let notes = &late.outcomes[0].notes;
        assert!(!late.outcomes[0].passed, "{notes}");
        assert!(notes.contains("Write occurs 2 time(s), first at line 1"), "{notes}");
        assert!(
            notes.ends_with(
                "Note: 2 call(s) came before the scope span they are under (the span was recorded after its \
                 children) and count inside it."
            ),
            "{notes}"
        );
        let count = vec![rule(json!({"count": {"of": {"tool": "Write"}, "at_most": 1}, "within": {"tool": "Task"}}))];
        let counted = SequenceEngine::run(count, vec![under("Write", 1), under("Write", 2), task(3)], 0);
        assert!(!counted.outcomes[0].passed, "{}", counted.outcomes[0].notes);

        // `before` and `only_after` place late calls by their order among the calls inside:
        // the same verdicts as with every parent line first.
        let ordered = |relation: &str, events: Vec<CanonicalEvent>| {
            let rules = vec![rule(
                json!({relation: {"a": {"tool": "Read"}, "b": {"tool": "Write"}}, "within": {"tool": "Task"}}),
            )];
            let outcome = SequenceEngine::run(rules, events, 0).outcomes.remove(0);
            assert!(!outcome.notes.contains("Warning"), "{}", outcome.notes);
            (outcome.passed, outcome.notes)
        };
        for relation in ["before", "only_after"] {
            // Read then Write, both under the late p1.
            let (passed, notes) = ordered(relation, vec![under("Read", 1), under("Write", 2), task(3)]);
            assert!(passed, "{relation}: {notes}");
            assert!(notes.ends_with("Note: 2 call(s) came before the scope span they are under (the span was recorded after its children) and count inside it."), "{notes}");
            // Write then Read.
            let (passed, notes) = ordered(relation, vec![under("Write", 1), under("Read", 2), task(3)]);
            assert!(!passed, "{relation}: {notes}");
            assert!(notes.contains("line 1"), "{relation}: {notes}");
            // A late Read (under p1) before a Write inside the early p2: in order.
            let events = vec![under("Read", 1), task_of("p2", 2), under_of("p2", "Write", 3), task(4)];
            let (passed, notes) = ordered(relation, events);
            assert!(passed, "{relation}: {notes}");
            // A Write inside p2 before a late Read under p1: out of order.
            let events = vec![task_of("p2", 1), under_of("p2", "Write", 2), under("Read", 3), task(4)];
            let (passed, notes) = ordered(relation, events);
            assert!(!passed, "{relation}: {notes}");
            assert!(notes.contains("line 2"), "{relation}: {notes}");
            // A late Write before the Read inside p2.
            let events = vec![under("Write", 1), task_of("p2", 2), under_of("p2", "Read", 3), task(4)];
            let (passed, notes) = ordered(relation, events);
            assert!(!passed, "{relation}: {notes}");
            assert!(notes.contains("line 1"), "{relation}: {notes}");
        }
        // Without any Write, `before` fails and `only_after` holds, late Read or not.
        assert!(!ordered("before", vec![under("Read", 1), task(2)]).0);
        assert!(ordered("only_after", vec![under("Read", 1), task(2)]).0);

        // `immediately_before` needs the call before each `b`: it cannot place them, and says so.
        let immediately = vec![rule(
            json!({"immediately_before": {"a": {"tool": "Read"}, "b": {"tool": "Write"}}, "within": {"tool": "Task"}}),
        )];
        let outcome = SequenceEngine::run(immediately, vec![under("Write", 1), task(2)], 0);
        assert!(
            outcome.outcomes[0].notes.ends_with(
                "Warning: 1 scope span(s) came after calls under them (recorded after their children); those \
                 calls counted as outside the scope, as `immediately_before` cannot place them."
            ),
            "{}",
            outcome.outcomes[0].notes
        );
        // A call that does not concern the rule changes nothing.
        let unrelated = SequenceEngine::run(never(), vec![under("Read", 1), task(2)], 0);
        assert!(unrelated.outcomes[0].passed);
        assert!(!unrelated.outcomes[0].notes.contains("Warning"), "{}", unrelated.outcomes[0].notes);
        assert!(!unrelated.outcomes[0].notes.contains("came before"), "{}", unrelated.outcomes[0].notes);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// A trace whose `Task` lines come after their children (post-order, as a writer that
        /// logs a task when it ends) gets the verdicts of the same trace with every `Task`
        /// line first: for `never`, `count`, `before` and `only_after` scoped to `Task`, with
        /// nested tasks and calls outside any task.
        #[test]
        fn scoped_verdicts_do_not_depend_on_when_the_parent_line_is_written(
            items in proptest::collection::vec(
                (0u8..4, proptest::collection::vec(0usize..3, 0..4), proptest::collection::vec(0usize..3, 0..3)),
                0..8,
            ),
        ) {
            let tools = ["Read", "Write", "Bash"];
            // A task line: a `parent` line, or (`child`) a `child` line with children of its own.
            // Scopes are the outer tasks (`d: outer`); a nested task is inside one, not a scope of its own.
            let task = |id: &str, parent: Option<&str>, child: bool, line: u64| {
                let d = if parent.is_some() { "inner" } else { "outer" };
                let mut task = call(EventType::ToolCallEnd, "Task", json!({"d": d}), Some(id), parent, line);
                if !child {
                    task.attributes.insert("x.tooltrace.span_type".into(), json!("parent"));
                }
                task
            };
            // Kind 0: a call outside any task; 1: a task; 2: a task with a nested task written
            // as a `parent` line; 3: the same written as a `child` line. `marked` writes every
            // nested task as a `parent` line.
            // `outer_last`: each task line after its calls; `nested_last`: the same for nested
            // tasks (both: post-order; only `outer_last`: nested lines first, the outer last).
            let trace = |outer_last: bool, nested_last: bool, marked: bool| {
                let mut out: Vec<CanonicalEvent> = Vec::new();
                for (idx, (kind, outer, inner)) in items.iter().enumerate() {
                    let (id, nested) = (format!("t{idx}"), format!("n{idx}"));
                    let calls = |list: &[usize], parent: &str, out: &mut Vec<CanonicalEvent>| {
                        for &tool in list {
                            let line = out.len() as u64 + 1;
                            out.push(call(EventType::ToolCallEnd, tools[tool], json!({}), None, Some(parent), line));
                        }
                    };
                    if *kind == 0 {
                        let tool = tools[outer.first().copied().unwrap_or(0)];
                        out.push(end(tool, json!({}), out.len() as u64 + 1));
                        continue;
                    }
                    let child = *kind == 3 && !marked;
                    if !outer_last {
                        out.push(task(&id, None, false, out.len() as u64 + 1));
                    }
                    calls(outer, &id, &mut out);
                    if *kind >= 2 {
                        if !nested_last {
                            out.push(task(&nested, Some(&id), child, out.len() as u64 + 1));
                        }
                        calls(inner, &nested, &mut out);
                        if nested_last {
                            out.push(task(&nested, Some(&id), child, out.len() as u64 + 1));
                        }
                    }
                    if outer_last {
                        out.push(task(&id, None, false, out.len() as u64 + 1));
                    }
                }
                out
            };
            let (pre, post, mixed, marked) =
                (trace(false, false, false), trace(true, true, false), trace(true, false, false), trace(false, false, true));
            let rules = || vec![
                json!({"never": {"tool": "Write"}, "within": {"tool": "Task", "args": {"d": {"equals": "outer"}}}}),
                json!({"count": {"of": {"tool": "Write"}, "at_most": 1}, "within": {"tool": "Task", "args": {"d": {"equals": "outer"}}}}),
                json!({"before": {"a": {"tool": "Read"}, "b": {"tool": "Write"}}, "within": {"tool": "Task", "args": {"d": {"equals": "outer"}}}}),
                json!({"only_after": {"a": {"tool": "Read"}, "b": {"tool": "Write"}}, "within": {"tool": "Task", "args": {"d": {"equals": "outer"}}}}),
                json!({"before": {"a": {"tool": "Bash"}, "b": {"tool": "Read"}}, "within": {"tool": "Task", "args": {"d": {"equals": "outer"}}}}),
            ];
            let reference = verdicts(rules(), marked);
            proptest::prop_assert_eq!(&verdicts(rules(), pre), &reference);
            proptest::prop_assert_eq!(&verdicts(rules(), post), &reference);
            proptest::prop_assert_eq!(&verdicts(rules(), mixed), &reference);
        }
    }

    /// Argument texts for the differential tests: plain, escaped, duplicated, nested,
    /// non-string, unicode and invalid JSON.
    const ARG_TEXTS: [&str; 22] = [
        r#"{"file_path":"/repo/skills/skill.md"}"#,
        r#"{"file_path":"/repo/src/a.rs","extra":[1,2,{"x":null}]}"#,
        r#"{"file_path":"/repo/sk\u0069lls/skill.md"}"#,
        r#"{"file\u005fpath":"/repo/skills/skill.md"}"#,
        r#"{"file_path":"a","file_path":"/x/skill.md"}"#,
        r#"{"file_path":7}"#,
        r#"{"file_path":{"nested":"skill.md"}}"#,
        r#"{"command":"cargo test --all"}"#,
        r#"{"command":"rm -rf /","command":"ls"}"#,
        r#"{"command":"git commit -m \"x\""}"#,
        r#"{"command":["rm -rf",1.50]}"#,
        r#"{"opts":{"deep":{"k":"v"}},"command":"ls"}"#,
        r#"{"opts":{"deep":"v"}}"#,
        r#"{"opts":{"deep":{"k":"v"},"deep":{"k":"w"}}}"#,
        r#"{"command":"é ✓ 😀 cargo test"}"#,
        r#"{"pattern":"\ud800","command":"ls"}"#,
        r#"{"n":1e400,"command":"ls"}"#,
        r#""cargo test as a string""#,
        r#""with \"escape\"""#,
        r#"[1,2]"#,
        r#"{"command":"ls""#,
        r#"  {"command" : "cargo test" }  "#,
    ];

    /// Feeds a run the way `agentic check`'s parallel reader does: the summary when it
    /// applies, then the events the summarizer marked to the scoped rules and the last ones
    /// to the excerpt; else every event one by one.
    fn feed_run(
        engine: &mut SequenceEngine,
        run: &[EventRef<'_>],
        prepared: &[Prepared],
        needs: &[bool],
        summary: &Summary,
    ) {
        let locate = |k: u32| (run[k as usize].line, run[k as usize].seq);
        if engine.apply_summary(summary, locate) {
            for call in summary.links() {
                assert!(!needs[call.index as usize], "a call is among the links or the needed, not both");
            }
            let wanted = (0..run.len()).filter(|&k| needs[k]).map(|k| (k, k));
            let feed = |engine: &mut SequenceEngine, k: usize| engine.feed_scoped(&run[k], &prepared[k]);
            engine.feed_summary_calls(summary, wanted, feed, feed);
            let keep = engine.excerpt_capacity().min(run.len());
            for event in &run[run.len() - keep..] {
                engine.note_call(event);
            }
        } else {
            for (event, prepared) in run.iter().zip(prepared) {
                engine.feed_prepared(event, prepared);
            }
        }
    }

    /// Pushes a run's prepared events to `summarizer`; which of them the scoped rules need.
    fn push_all(summarizer: &mut Summarizer, events: &[EventRef<'_>], prepared: &[Prepared]) -> Vec<bool> {
        events
            .iter()
            .zip(prepared)
            .map(|(e, p)| {
                let need = summarizer.push(e, p);
                assert_eq!(need, summarizer.scoped_need(p), "push answers what scoped_need does");
                need
            })
            .collect()
    }

    /// Feeds `events` to `engine` in runs cut by `cuts` (cycled), each summarized apart and
    /// merged as the parallel reader does.
    fn feed_in_runs(engine: &mut SequenceEngine, events: &[EventRef<'_>], cuts: &[usize]) {
        let plan = engine.match_plan();
        let mut summarizer = engine.summarizer().expect("few rules");
        let (mut start, mut cut) = (0, cuts.iter().cycle());
        while start < events.len() {
            let end = (start + cut.next().copied().unwrap_or(1)).min(events.len());
            let run = &events[start..end];
            let prepared: Vec<Prepared> = run.iter().map(|event| plan.prepare(event)).collect();
            let needs = push_all(&mut summarizer, run, &prepared);
            let summary = summarizer.finish();
            feed_run(engine, run, &prepared, &needs, &summary);
            start = end;
        }
    }

    /// Feeds `events` one by one to an engine of `rules`, and again in summarized runs cut
    /// by `cuts`; asserts both give the same outcome and returns it.
    fn both_ways(rules: &[Value], events: &[EventRef<'_>], cuts: &[usize]) -> TraceOutcome {
        let compiled: Vec<CompiledRule> = rules.iter().cloned().map(rule).collect();
        let mut reference = SequenceEngine::new(compiled.clone(), 0);
        for event in events {
            reference.feed_ref(event);
        }
        let mut summed = SequenceEngine::new(compiled, 0);
        feed_in_runs(&mut summed, events, cuts);
        let reference = reference.finish();
        assert_eq!(unsummarized(summed.finish()), reference);
        reference
    }

    /// The count a `count` outcome's notes give (`... occurs N time(s) ...`).
    fn counted(outcome: &RuleOutcome) -> u64 {
        let (_, after) = outcome.notes.split_once("occurs ").expect("a count note");
        after.split(' ').next().and_then(|n| n.parse().ok()).expect("a count")
    }

    /// A post-only call (a tooltrace line) of span `id` under `parent`; `container` marks a
    /// `parent` line.
    fn line_event<'a>(
        name: &'a str,
        args: &'a str,
        id: &'a str,
        parent: Option<&'a str>,
        container: bool,
        line: u64,
    ) -> EventRef<'a> {
        EventRef {
            event_type: EventType::ToolCallEnd,
            name: Some(name),
            args: ArgsRef::Json(args),
            span_id: Some(id),
            parent_span_id: parent,
            call_id: None,
            trace_id: None,
            post_only_parent: container,
            failed: false,
            line: Some(line),
            seq: line,
        }
    }

    const OUTER: &str = r#"{"d":"outer"}"#;

    fn outer_rules() -> Vec<Value> {
        let within = json!({"tool": "Task", "args": {"d": {"equals": "outer"}}});
        vec![
            json!({"never": {"tool": "Write"}, "within": within}),
            json!({"count": {"of": {"tool": "Write"}, "at_least": 0, "at_most": 1_000_000}, "within": within}),
        ]
    }

    /// Span ids that differ only in their last characters (tooltrace's `t-000001`, Claude's
    /// `toolu_01...`) keep their parents apart: a call two tasks down is in the outer one's scope.
    #[test]
    fn ids_that_differ_in_their_last_character_keep_their_parents() {
        for (outer, inner, write) in [
            ("t-000001", "t-000002", "t-000003"),
            ("toolu_01", "toolu_06", "toolu_07"),
            ("toolu_01ABCDEFGH", "toolu_01ABCDEFGI", "toolu_01ABCDEFGJ"),
        ] {
            let events = [
                line_event("Task", OUTER, outer, None, true, 1),
                line_event("Task", r#"{"d":"inner"}"#, inner, Some(outer), false, 2),
                line_event("Write", "{}", write, Some(inner), false, 3),
            ];
            let outcome = both_ways(&outer_rules(), &events, &[1, 2]);
            assert!(!outcome.outcomes[0].passed, "{outer}: {:?}", outcome.outcomes[0]);
            assert_eq!(counted(&outcome.outcomes[1]), 1, "{outer}");
        }
    }

    proptest::proptest! {
        /// The ring of recorded parents answers like a plain list of the latest entries
        /// (the newest entry of a span wins), whatever the mix of records (one at a time or
        /// in batches of `batch` through `note_all`, which may wrap the ring), replacements
        /// of a span's latest entry and lookups; a record returns the entry it pushed out.
        #[test]
        fn recorded_parents_are_the_latest_entries(
            capacity in 1usize..6,
            batch in 1usize..13,
            steps in proptest::collection::vec((0u8..4, 1u64..6, 0u64..6), 0..60),
        ) {
            let mut links = Links::with_capacity(capacity);
            let mut model: std::collections::VecDeque<(u64, u64)> = std::collections::VecDeque::new();
            for (action, span, parent) in steps {
                let pairs: Vec<(u64, u64)> = match action {
                    0 => vec![(span, parent)],
                    1 => (0..batch as u64).map(|k| ((span + k) % 5 + 1, (parent + k) % 6)).collect(),
                    _ => Vec::new(),
                };
                let evicted = if action == 0 { links.note(span, parent) } else { None };
                if action == 1 {
                    links.note_all(&pairs);
                }
                if action < 2 {
                    let mut pushed_out = None;
                    for pair in pairs {
                        model.push_back(pair);
                        if model.len() > capacity {
                            pushed_out = model.pop_front();
                        }
                    }
                    if action == 0 {
                        proptest::prop_assert_eq!(evicted, pushed_out);
                    }
                } else if action == 2 {
                    let expected = model.iter().rev().find(|(s, _)| *s == span).map(|&(_, parent)| parent);
                    proptest::prop_assert_eq!(links.parent_of(span), expected);
                    // Overwritten entries leave the index: it never outgrows the ring.
                    proptest::prop_assert!(links.table.len() <= capacity);
                } else {
                    let to = (parent + 1) % 6;
                    let latest = model.iter_mut().rev().find(|(s, _)| *s == span);
                    let expected = match latest {
                        Some(entry) if entry.1 == parent => {
                            entry.1 = to;
                            true
                        }
                        _ => false,
                    };
                    proptest::prop_assert_eq!(links.replace(span, parent, to), expected);
                }
            }
        }

        /// The window of ended scope spans holds the latest `POST_ONLY_SCOPE_WINDOW` pushes
        /// not taken out since, and notes a span pushed out when it was still in.
        #[test]
        fn the_window_of_ended_spans_holds_the_latest(
            steps in proptest::collection::vec((0u8..3, 1u64..12), 0..300),
        ) {
            let mut window = Window { spans: Links::with_capacity(8), dropped: None };
            let mut model: std::collections::VecDeque<(u64, bool)> = std::collections::VecDeque::new();
            for (action, span) in steps {
                match action {
                    0 => {
                        window.push(span);
                        model.push_back((span, true));
                        if model.len() > 8
                            && let Some((oldest, true)) = model.pop_front()
                        {
                            let slot = (oldest % DROPPED_SCOPE_SPANS as u64) as usize;
                            proptest::prop_assert_eq!(window.dropped.as_ref().map(|table| table[slot]), Some(oldest));
                        }
                    }
                    1 => {
                        let latest = model.iter_mut().rev().find(|(s, _)| *s == span);
                        let expected = match latest {
                            Some(entry) if entry.1 => {
                                entry.1 = false;
                                true
                            }
                            _ => false,
                        };
                        proptest::prop_assert_eq!(window.forget(span), expected);
                    }
                    _ => {
                        let expected = model.iter().rev().find(|(s, _)| *s == span).is_some_and(|&(_, live)| live);
                        proptest::prop_assert_eq!(window.contains(span), expected);
                    }
                }
            }
        }
    }

    /// A nested task stays known for the latest [`LINKS`] spans, whatever their ids; a call
    /// under it after that counts as outside, and the note says so instead of passing
    /// silently.
    #[test]
    fn a_nested_task_is_known_for_the_window_and_a_forgotten_one_is_said() {
        let ids: Vec<String> = (0..LINKS + 10).map(|n| format!("r-{n:07}")).collect();
        for filler in [LINKS - 10, LINKS + 10] {
            let mut events = vec![
                line_event("Task", OUTER, "outer", None, true, 1),
                line_event("Task", r#"{"d":"inner"}"#, "inner", Some("outer"), false, 2),
            ];
            for (n, id) in ids[..filler].iter().enumerate() {
                events.push(line_event("Read", "{}", id, None, true, 3 + n as u64));
            }
            events.push(line_event("Write", "{}", "w", Some("inner"), false, 1_000_000));
            let outcome = both_ways(&outer_rules(), &events, &[4096, 7]);
            let note = &outcome.outcomes[1].notes;
            if filler < LINKS {
                assert_eq!(counted(&outcome.outcomes[1]), 1, "{note}");
                assert!(!note.contains("Warning"), "{note}");
            } else {
                assert_eq!(counted(&outcome.outcomes[1]), 0, "{note}");
                assert!(note.contains(&format!("more than {LINKS} spans before them and was forgotten")), "{note}");
            }
        }
    }

    /// Ids whose FxHash collides (`call_1119` and `call_1192`, found by a black-box test) are
    /// told apart: a call under a top-level `Read` is not in the scope of a `Task` whose
    /// nested step has the colliding id.
    #[test]
    fn ids_with_colliding_weak_hashes_stay_apart() {
        for (task, step, read, bash) in
            [("call_1", "call_1119", "call_1192", "call_1193"), ("span-1", "span-1419", "span-1492", "span-1493")]
        {
            let events = [
                line_event("Task", OUTER, task, None, true, 1),
                line_event("Step", "{}", step, Some(task), false, 2),
                line_event("Read", "{}", read, None, true, 3),
                line_event("Write", "{}", bash, Some(read), false, 4),
            ];
            let outcome = both_ways(&outer_rules(), &events, &[1, 3]);
            assert!(outcome.outcomes[0].passed, "{task}: {:?}", outcome.outcomes[0]);
        }
    }

    /// Parents first (the seed's order): thousands of top-level tasks outside the scope, each
    /// with a call under it, then one scope written after its call. The calls under the
    /// other tasks are outside for good (their task was seen without a parent), so they do
    /// not wait, crowd out the scope, or make the verdict warn.
    #[test]
    fn calls_under_top_level_spans_already_seen_do_not_wait() {
        let ids: Vec<(String, String)> =
            (0..2 * POST_ONLY_SCOPE_WINDOW).map(|n| (format!("task-{n}"), format!("write-{n}"))).collect();
        let mut events = vec![line_event("Write", "{}", "w", Some("scope"), false, 1)];
        for (n, (task, write)) in ids.iter().enumerate() {
            events.push(line_event("Task", r#"{"d":"other"}"#, task, None, true, 2 + 2 * n as u64));
            events.push(line_event("Write", "{}", write, Some(task), false, 3 + 2 * n as u64));
        }
        events.push(line_event("Task", OUTER, "scope", None, true, 1_000_000));
        let outcome = both_ways(&outer_rules(), &events, &[1, 64, 5]);
        assert!(!outcome.outcomes[0].passed, "{:?}", outcome.outcomes[0]);
        assert_eq!(counted(&outcome.outcomes[1]), 1);
        for outcome in &outcome.outcomes {
            assert!(!outcome.notes.contains("Warning"), "{}", outcome.notes);
        }
    }

    /// A chain of nested `child` lines deeper than the old limit of 64 still reaches its
    /// scope; a loop of parent ids is counted outside with a warning, not followed forever.
    #[test]
    fn deep_chains_reach_their_scope_and_loops_are_said() {
        let ids: Vec<String> = (0..300).map(|n| format!("t-{n:06}")).collect();
        let mut events = vec![line_event("Task", OUTER, &ids[0], None, true, 1)];
        for n in 1..299 {
            events.push(line_event("Step", "{}", &ids[n], Some(&ids[n - 1]), false, n as u64 + 1));
        }
        events.push(line_event("Write", "{}", &ids[299], Some(&ids[298]), false, 300));
        let outcome = both_ways(&outer_rules(), &events, &[7]);
        assert!(!outcome.outcomes[0].passed, "{:?}", outcome.outcomes[0]);

        let looped = [
            line_event("Task", OUTER, "root", None, true, 1),
            line_event("Step", "{}", "a", Some("b"), false, 2),
            line_event("Step", "{}", "b", Some("a"), false, 3),
            line_event("Write", "{}", "w", Some("a"), false, 4),
        ];
        let outcome = both_ways(&outer_rules(), &looped, &[1]);
        assert!(outcome.outcomes[0].passed, "{:?}", outcome.outcomes[0]);
        assert!(
            outcome.outcomes[0].notes.contains("nested more than 1024 spans deep"),
            "{}",
            outcome.outcomes[0].notes
        );
    }

    /// OTLP batches exported as spans end: an agent and the tool call under it in one batch,
    /// their parent agent (the scope) in the next; with a workflow step between them too.
    #[test]
    fn a_late_scope_reaches_calls_under_containers_seen_before_it() {
        let rules = || {
            vec![
                rule(json!({"never": {"tool": "Bash"}, "within": {"agent": "main"}})),
                rule(
                    json!({"count": {"of": {"agent": "*"}, "at_least": 0, "at_most": 1_000_000}, "within": {"agent": "main"}}),
                ),
            ]
        };
        let direct = vec![
            span(EventType::AgentInvokeStart, "reviewer", "b2", Some("a1"), 1),
            span(EventType::ToolCallStart, "Bash", "c3", Some("b2"), 1),
            span(EventType::ToolCallEnd, "Bash", "c3", Some("b2"), 1),
            span(EventType::AgentInvokeEnd, "reviewer", "b2", Some("a1"), 1),
            span(EventType::AgentInvokeStart, "main", "a1", None, 2),
            span(EventType::AgentInvokeEnd, "main", "a1", None, 2),
        ];
        let stepped = vec![
            span(EventType::ToolCallStart, "Bash", "c3", Some("b2"), 1),
            span(EventType::ToolCallEnd, "Bash", "c3", Some("b2"), 1),
            span(EventType::StepStart, "workflow", "w1", Some("a1"), 2),
            span(EventType::AgentInvokeStart, "reviewer", "b2", Some("w1"), 2),
            span(EventType::AgentInvokeEnd, "reviewer", "b2", Some("w1"), 2),
            span(EventType::StepEnd, "workflow", "w1", Some("a1"), 2),
            span(EventType::AgentInvokeStart, "main", "a1", None, 3),
            span(EventType::AgentInvokeEnd, "main", "a1", None, 3),
        ];
        for events in [direct, stepped] {
            let outcome = SequenceEngine::run(rules(), events, 0);
            assert!(!outcome.outcomes[0].passed, "{}", outcome.outcomes[0].notes);
            assert_eq!(counted(&outcome.outcomes[1]), 1, "{}", outcome.outcomes[1].notes);
        }
    }

    /// A nested task's parent is kept while tens of thousands of later calls record theirs.
    #[test]
    fn a_recorded_parent_outlives_many_later_ones() {
        let ids: Vec<String> = (0..60_000).map(|n| format!("t-{n:06}")).collect();
        let mut events = vec![
            line_event("Task", OUTER, "outer", None, true, 1),
            line_event("Task", r#"{"d":"inner"}"#, "inner", Some("outer"), false, 2),
        ];
        for (n, pair) in ids.chunks(2).enumerate() {
            events.push(line_event("Bash", "{}", &pair[0], None, true, 3 + 2 * n as u64));
            events.push(line_event("Read", "{}", &pair[1], Some(&pair[0]), false, 4 + 2 * n as u64));
        }
        events.push(line_event("Write", "{}", "w", Some("inner"), false, 100_000));
        let outcome = both_ways(&outer_rules(), &events, &[1000, 7]);
        assert!(!outcome.outcomes[0].passed, "{:?}", outcome.outcomes[0]);
        assert_eq!(counted(&outcome.outcomes[1]), 1);
    }

    /// Tasks outside the scope, each written after its call (as a writer that logs a call when
    /// it ends does), are awaited only until their own line: thousands of them neither push
    /// out a scope span still awaited nor make the verdict warn.
    #[test]
    fn top_level_calls_written_after_their_children_are_awaited_no_more() {
        let ids: Vec<(String, String)> =
            (0..2 * POST_ONLY_SCOPE_WINDOW).map(|n| (format!("task-{n}"), format!("write-{n}"))).collect();
        let mut events = vec![line_event("Write", "{}", "w", Some("scope"), false, 1)];
        for (n, (task, write)) in ids.iter().enumerate() {
            events.push(line_event("Write", "{}", write, Some(task), false, 2 + 2 * n as u64));
            events.push(line_event("Task", r#"{"d":"other"}"#, task, None, true, 3 + 2 * n as u64));
        }
        events.push(line_event("Task", OUTER, "scope", None, true, 1_000_000));
        let outcome = both_ways(&outer_rules(), &events, &[1, 64, 5]);
        assert!(!outcome.outcomes[0].passed, "{:?}", outcome.outcomes[0]);
        assert_eq!(counted(&outcome.outcomes[1]), 1);
        for outcome in &outcome.outcomes {
            assert!(!outcome.notes.contains("Warning"), "{}", outcome.notes);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// On a generated forest of post-only calls, written in any mix of pre-order and
        /// post-order, with `parent` and `child` lines and ids that share long prefixes, the
        /// scoped `count` is the number of `Write` calls below an outer `Task` (walking the
        /// whole tree), one by one and summarized alike.
        #[test]
        fn scoped_counts_equal_a_walk_of_the_call_tree(
            nodes in proptest::collection::vec((0usize..7, 0usize..1000, proptest::bool::ANY, proptest::bool::ANY), 1..50),
            cuts in proptest::collection::vec(1usize..12, 1..8),
            width in 0usize..3,
        ) {
            let tools = ["Task", "Task", "Task", "Write", "Read", "Bash", "Write"];
            let descs = [OUTER, r#"{"d":"inner"}"#, r#"{"d":"other"}"#, "{}", "{}", "{}", "{}"];
            let id = |n: usize| match width {
                0 => format!("t-{n:06}"),
                1 => format!("toolu_01ABCDEF{n:02}"),
                _ => format!("{n}"),
            };
            let ids: Vec<String> = (0..nodes.len()).map(id).collect();
            // Parent: an earlier node, or none (one pick in four).
            let parent: Vec<Option<usize>> = nodes
                .iter()
                .enumerate()
                .map(|(n, &(_, pick, _, _))| (n > 0 && pick % 4 != 0).then(|| pick % n))
                .collect();
            let mut children = vec![Vec::new(); nodes.len()];
            for (n, p) in parent.iter().enumerate() {
                if let Some(p) = p {
                    children[*p].push(n);
                }
            }
            fn emit(n: usize, children: &[Vec<usize>], post: &dyn Fn(usize) -> bool, out: &mut Vec<usize>) {
                if !post(n) {
                    out.push(n);
                }
                for &child in &children[n] {
                    emit(child, children, post, out);
                }
                if post(n) {
                    out.push(n);
                }
            }
            let mut order = Vec::new();
            let post = |n: usize| nodes[n].2;
            for n in (0..nodes.len()).filter(|&n| parent[n].is_none()) {
                emit(n, &children, &post, &mut order);
            }
            let events: Vec<EventRef<'_>> = order
                .iter()
                .enumerate()
                .map(|(at, &n)| {
                    let (tool, _, _, parent_line) = nodes[n];
                    // A top-level line is a `parent` line; below, either kind.
                    let container = parent[n].is_none() || parent_line;
                    line_event(tools[tool], descs[tool], &ids[n], parent[n].map(|p| ids[p].as_str()), container, at as u64 + 1)
                })
                .collect();
            let inside = |mut n: usize| {
                while let Some(p) = parent[n] {
                    if nodes[p].0 == 0 {
                        return true;
                    }
                    n = p;
                }
                false
            };
            let expected = (0..nodes.len()).filter(|&n| tools[nodes[n].0] == "Write" && inside(n)).count() as u64;
            let outcome = both_ways(&outer_rules(), &events, &cuts);
            proptest::prop_assert_eq!(counted(&outcome.outcomes[1]), expected, "{:?}", outcome.outcomes);
            proptest::prop_assert_eq!(outcome.outcomes[0].passed, expected == 0);
        }
    }

    /// An outcome as feeding one by one gives it (which counts no events as summarized).
    fn unsummarized(mut outcome: TraceOutcome) -> TraceOutcome {
        outcome.summarized = 0;
        outcome
    }

    fn rule_pool() -> Vec<Value> {
        let skill = json!({"tool": "Read", "args": {"file_path": {"glob": "**/skill.md"}}});
        vec![
            json!({"before": {"a": skill, "b": {"tool": ["Bash", "Write"]}}}),
            json!({"only_after": {"a": skill, "b": {"tool": "Bash", "args": {"command": {"contains": "cargo test"}}}}}),
            json!({"immediately_before": {"a": {"tool": "Read"}, "b": {"tool": "B*"}}}),
            json!({"never": {"tool": "Bash", "args_text": {"contains": "rm -rf"}}}),
            json!({"never": {"tool": "*", "args": {"opts.deep.k": {"equals": "v"}}}}),
            json!({"count": {"of": {"tool": "Bash", "args": {"command": {"regex": "^(ls|cargo)"}}}, "at_least": 1}}),
            json!({"count": {"of": {"tool": "Read", "args": {"file_path": {"equals": "7"}}}, "at_most": 0}}),
            json!({"count": {"of": {"agent": "rev*"}, "at_least": 1}}),
            json!({"never": {"tool": "Write"}, "within": {"tool": "Task"}}),
            json!({"count": {"of": {"tool": "*", "args_text": {"regex": "\\[1"}}, "at_least": 1}, "within": {"agent": "reviewer"}}),
            json!({"never": {"tool": "*", "args": {"command.0": {"contains": "rm"}}}}),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// Matching apart from the engine (as the parallel reader does) and reading arguments
        /// from JSON text without a `Value` give exactly the verdicts of the reference: every
        /// argument parsed into a `Value` and matched inside the engine.
        #[test]
        fn precomputed_matches_and_borrowed_args_equal_the_reference(
            picks in proptest::collection::vec((0usize..8, 0usize..ARG_TEXTS.len(), 0usize..4, 0usize..4), 0..60),
            chosen in proptest::collection::vec(0usize..11, 1..6),
        ) {
            let names = ["Read", "Bash", "Write", "Task", "reviewer", "Grep", "Edit", "helper"];
            let kinds = [EventType::ToolCallEnd, EventType::ToolCallStart, EventType::AgentInvokeStart, EventType::AgentInvokeEnd];
            let pool = rule_pool();
            let rules: Vec<CompiledRule> = chosen.iter().map(|&idx| rule(pool[idx].clone())).collect();
            let parsed: Vec<Option<Value>> = ARG_TEXTS.iter().map(|text| serde_json::from_str(text).ok()).collect();
            let ids = ["s0", "s1", "s2", "s3"];
            let mut reference = SequenceEngine::new(rules.clone(), 0);
            let mut fast = SequenceEngine::new(rules, 0);
            let plan = fast.match_plan();
            for (seq, &(name, args, kind, span)) in picks.iter().enumerate() {
                let kind = if (3..=4).contains(&name) && kind < 2 { kinds[kind + 2] } else { kinds[kind] };
                let event = |args| EventRef {
                    event_type: kind,
                    name: Some(names[name]),
                    args,
                    span_id: Some(ids[span]),
                    parent_span_id: (span > 0).then(|| ids[span - 1]),
                    call_id: None,
                    trace_id: None,
                    post_only_parent: name == 3,
                    failed: false,
                    line: Some(seq as u64 + 1),
                    seq: seq as u64 + 1,
                };
                // Text that is not JSON never reaches the engine from a reader (the scanner
                // validates every line); both engines read it as text.
                let reference_args = parsed[args].as_ref().map_or(ArgsRef::Json(ARG_TEXTS[args]), ArgsRef::Value);
                reference.feed_ref(&event(reference_args));
                let text = event(ArgsRef::Json(ARG_TEXTS[args]));
                fast.feed_matched(&text, &plan.evaluate(&text));
            }
            proptest::prop_assert_eq!(reference.finish(), fast.finish());
        }

        /// Runs summarized apart from the engine and merged (scoped rules fed the events the
        /// summarizer marks, the excerpt fed by the caller) give exactly the one-by-one
        /// result, whatever the runs, rules, starts, spans and excerpt.
        #[test]
        fn summaries_equal_feeding_one_by_one(
            picks in proptest::collection::vec((0usize..8, 0usize..ARG_TEXTS.len(), 0usize..5, 0usize..5, proptest::bool::ANY), 0..80),
            chosen in proptest::collection::vec(0usize..10, 1..7),
            cuts in proptest::collection::vec(1usize..12, 1..12),
            excerpt in 0usize..3,
        ) {
            let names = ["Read", "Bash", "Write", "Task", "reviewer", "Grep", "Edit", "helper"];
            let pool = rule_pool();
            let rules: Vec<CompiledRule> = chosen.iter().map(|&idx| rule(pool[idx].clone())).collect();
            let ids = ["s0", "s1", "s2", "s3", "s4"];
            let mut reference = SequenceEngine::new(rules.clone(), excerpt * 2);
            let mut summed = SequenceEngine::new(rules, excerpt * 2);
            let events: Vec<EventRef<'_>> = picks
                .iter()
                .enumerate()
                .map(|(seq, &(name, args, kind, span, parent))| EventRef {
                    // Mostly post-only ends, some starts and agent calls.
                    event_type: match kind {
                        0 => EventType::ToolCallStart,
                        1 if (3..=4).contains(&name) => EventType::AgentInvokeEnd,
                        _ => EventType::ToolCallEnd,
                    },
                    name: Some(names[name]),
                    args: ArgsRef::Json(ARG_TEXTS[args]),
                    span_id: Some(ids[span]),
                    parent_span_id: (parent && span > 0).then(|| ids[span - 1]),
                    call_id: None,
                    trace_id: None,
                    post_only_parent: name == 3 || name == 4,
                    failed: false,
                    line: Some(2 * seq as u64 + 1),
                    seq: seq as u64 + 1,
                })
                .collect();
            for event in &events {
                reference.feed_ref(event);
            }
            feed_in_runs(&mut summed, &events, &cuts);
            proptest::prop_assert_eq!(reference.finish(), unsummarized(summed.finish()));
        }
    }

    /// A post-only container inside a scope (a Task under a reviewer agent) carries the scope
    /// to its children when its events go through a summary too.
    #[test]
    fn summaries_carry_scopes_through_nested_containers() {
        let rules =
            vec![rule(json!({"count": {"of": {"tool": "Bash"}, "at_least": 1}, "within": {"agent": "reviewer"}}))];
        let event = |event_type, name, span: &'static str, parent: Option<&'static str>, seq: u64| EventRef {
            event_type,
            name: Some(name),
            args: ArgsRef::None,
            span_id: Some(span),
            parent_span_id: parent,
            call_id: None,
            trace_id: None,
            post_only_parent: name != "Bash",
            failed: false,
            line: Some(seq),
            seq,
        };
        let events = [
            event(EventType::AgentInvokeEnd, "reviewer", "a", None, 1),
            event(EventType::ToolCallEnd, "Task", "b", Some("a"), 2),
            event(EventType::ToolCallEnd, "Bash", "c", Some("b"), 3),
            event(EventType::ToolCallEnd, "Bash", "d", Some("x"), 4),
            event(EventType::ToolCallEnd, "Bash", "e", None, 5),
        ];
        let mut reference = SequenceEngine::new(rules.clone(), 0);
        for e in &events {
            reference.feed_ref(e);
        }
        let mut summed = SequenceEngine::new(rules, 0);
        let plan = summed.match_plan();
        let mut summarizer = summed.summarizer().expect("one rule");
        let prepared: Vec<Prepared> = events.iter().map(|e| plan.prepare(e)).collect();
        let needs = push_all(&mut summarizer, &events, &prepared);
        // A container with a parent, and calls with a parent that may be in scope; the root
        // has no parent, so it goes with the links and opens its scope there.
        assert_eq!(needs, [false, true, true, true, false]);
        let summary = summarizer.finish();
        assert_eq!(summary.links().map(|link| link.roots).collect::<Vec<_>>(), [1, 0]);
        assert!(summed.apply_summary(&summary, |k| (Some(u64::from(k) + 1), u64::from(k) + 1)));
        let wanted = (0..events.len()).filter(|&k| needs[k]).map(|k| (k, k));
        let feed = |engine: &mut SequenceEngine, k: usize| engine.feed_scoped(&events[k], &prepared[k]);
        summed.feed_summary_calls(&summary, wanted, feed, feed);
        let (reference, summed) = (reference.finish(), summed.finish());
        assert_eq!(summed.summarized, 5);
        let summed = unsummarized(summed);
        assert_eq!(reference, summed);
        assert!(summed.outcomes[0].notes.contains("occurs 1 time(s)"), "{}", summed.outcomes[0].notes);
    }

    #[test]
    fn borrowed_arguments_read_like_parsed_ones() {
        for text in ARG_TEXTS {
            let value: Option<Value> = serde_json::from_str(text).ok();
            for path in
                [&["file_path"][..], &["command"], &["opts", "deep", "k"], &["opts", "deep"], &["n"], &["missing"]]
            {
                let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
                let expected = value.as_ref().and_then(|v| {
                    let found = path.iter().try_fold(v, |v, segment| v.get(segment.as_str()))?;
                    Some(match found {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    })
                });
                if let Some(found) = borrowed_arg(text, &path) {
                    assert_eq!(found.map(|c| c.into_owned()), expected, "{text} at {path:?}");
                }
            }
        }
        // The common shapes are answered without the full parse.
        assert!(borrowed_arg(ARG_TEXTS[0], &["file_path".to_owned()]).is_some());
        assert!(borrowed_arg(ARG_TEXTS[7], &["missing".to_owned()]).is_some());
        // Escaped keys and duplicates are left to it.
        assert!(borrowed_arg(ARG_TEXTS[3], &["file_path".to_owned()]).is_none());
        assert!(borrowed_arg(ARG_TEXTS[4], &["file_path".to_owned()]).is_none());
    }

    #[test]
    fn globs_follow_path_rules() {
        let cases = [
            ("**/skill.md", "skill.md", true),
            ("**/skill.md", "/a/b/skill.md", true),
            ("**/skill.md", "/a/b/skill.mdx", false),
            ("src/*.rs", "src/a.rs", true),
            ("src/*.rs", "src/a/b.rs", false),
            ("src/**/*.rs", "src/a/b.rs", true),
            ("**/*.{env,pem}", "/repo/.env", true),
            ("**/*.{env,pem}", "/repo/keys/key.pem", true),
            ("**/*.{env,pem}", "/repo/key.pub", false),
            ("**/[Cc]argo.lock", "/repo/Cargo.lock", true),
            ("**/[Cc]argo.lock", "/repo/xargo.lock", false),
            ("**/[!.]*.rs", "/repo/a.rs", true),
            ("**/[!.]*.rs", "/repo/.a.rs", false),
            ("**/\\[x\\].md", "/repo/[x].md", true),
            ("mcp__*", "mcp__github__create_issue", true),
            ("{a,{b,c}}.rs", "c.rs", true),
            ("{a,{b,c}}.rs", "d.rs", false),
            ("[a-c]x", "bx", true),
            ("[a-c]x", "dx", false),
            ("a[/]b", "a/b", false),
            ("[]]", "]", true),
            ("[!]]", "x", true),
            ("[!]]", "]", false),
            ("[!]a]", "b", true),
            ("[!]a]", "a", false),
            ("[^]]x", "yx", true),
            ("[]a]", "a", true),
            ("[a-]", "-", true),
            ("{src,lib}/**/*.rs", "lib/x/y.rs", true),
            ("?", "é", true),
            // Line breaks are characters like any other: `**` crosses them as `*` does.
            ("**rm -rf**", "cd /tmp\nrm -rf build", true),
            ("**", "a\nb", true),
            ("**", "\n", true),
            ("git commit **", "git commit -m \"x\n\nbody\"", true),
            ("**/x", "a\n/x", true),
            ("*", "a\nb", true),
            ("a?b", "a\nb", true),
        ];
        for (glob, path, expected) in cases {
            let pattern = Pattern::glob(glob).expect("a glob");
            assert_eq!(pattern.is_match(path), expected, "{glob} on {path}");
            assert_eq!(glob_matches(glob, path), expected, "{glob} on {path}");
        }
        for bad in ["**/[abc", "{a,b", "a\\", "[z-a]"] {
            assert!(Pattern::glob(bad).is_err(), "{bad}");
        }
        assert_eq!(glob_to_regex("[z-a]").unwrap_err(), "the range `z-a` is reversed; write `a-z`");
        // Deep nesting is an error, not a stack overflow.
        assert!(Pattern::glob(&"{a,".repeat(100_000)).is_err());
        assert!(Pattern::glob(&format!("{}{}", "{a,".repeat(16), "b}".repeat(16))).is_ok());
    }

    proptest::proptest! {
        /// The literal prefilters of a glob never change its answer.
        #[test]
        fn glob_prefilters_answer_like_the_glob(glob in "[ab/.*?{},!\\[\\]\\\\]{1,10}", path in "[ab/.{},!\\[\\]]{0,12}") {
            if let Ok(pattern) = Pattern::glob(&glob) {
                let regex = Regex::new(&glob_to_regex(&glob).unwrap()).unwrap();
                proptest::prop_assert_eq!(pattern.is_match(&path), regex.is_match(&path), "{} on {}", glob, path);
            }
        }
    }

    #[test]
    fn plain_regex_patterns_match_like_the_regex() {
        let texts = ["rm -rf /", "rm  -rf", "RM -RF", "x rm -rf", "", "a.b", "axb", "a-b=c'd\"e`f"];
        for pattern in ["rm -rf", "a.b", "a-b=c'd\"e`f", "^rm", "(?i)rm -rf", "rm\\s+-rf", ""] {
            let text = TextMatch { regex: Some(pattern.to_owned()), ..TextMatch::default() };
            let mut diagnostics = Vec::new();
            let compiled = compile_text_match(&text, "/x", &mut diagnostics);
            assert!(diagnostics.is_empty(), "{pattern}");
            let regex = Regex::new(pattern).unwrap();
            for text in texts {
                assert_eq!(compiled[0].is_match(text), regex.is_match(text), "{pattern} on {text}");
            }
        }
        let plain = |pattern: &str| {
            let text = TextMatch { regex: Some(pattern.to_owned()), ..TextMatch::default() };
            matches!(compile_text_match(&text, "/x", &mut Vec::new())[0], NameMatch::Contains(_))
        };
        assert!(plain("rm -rf") && !plain("a.b") && !plain("(?i)rm"));
    }

    /// Matchers the generated rules of [`generated_rules`] pick from.
    fn matcher_pool() -> Vec<Value> {
        vec![
            json!({"tool": "Read"}),
            json!({"tool": "Bash"}),
            json!({"tool": ["Bash", "Write"]}),
            json!({"tool": "B*"}),
            json!({"tool": "Read", "args": {"file_path": {"glob": "**/skill.md"}}}),
            json!({"tool": "Bash", "args": {"command": {"contains": "cargo test"}}}),
            json!({"tool": "*", "args_text": {"contains": "rm -rf"}}),
            json!({"agent": "reviewer"}),
            json!({"agent": "*"}),
            json!({"tool": "Task"}),
        ]
    }

    /// Rules from `(relation, a, b, within, at_least, at_most)` picks; `pad` rules that never
    /// match go first, so 33 of them push the picked rules' matcher ids past 64 (the wide
    /// [`MatchBits`]) and 70 make more than 64 rules (no summarizer).
    fn generated_rules(picks: &[(usize, usize, usize, usize, u64, u64)], pad: usize) -> Vec<CompiledRule> {
        let pool = matcher_pool();
        let scopes =
            [None, Some(json!({"tool": "Task"})), Some(json!({"agent": "reviewer"})), Some(json!({"tool": "Read"}))];
        let mut rules: Vec<CompiledRule> =
            (0..pad).map(|_| rule(json!({"before": {"a": {"tool": "Edit"}, "b": {"tool": "Glob"}}}))).collect();
        for &(relation, a, b, within, low, high) in picks {
            let b = if a == b { (b + 1) % pool.len() } else { b };
            let pair = json!({"a": pool[a], "b": pool[b]});
            let mut yaml = match relation {
                0 => json!({"before": pair}),
                1 => json!({"only_after": pair}),
                2 => json!({"immediately_before": pair}),
                3 => json!({"never": pool[a]}),
                4 => json!({"count": {"of": pool[a], "at_least": low, "at_most": low + high}}),
                _ => json!({"count": {"of": pool[a], "at_most": high}}),
            };
            if let Some(scope) = &scopes[within % scopes.len()] {
                yaml["within"] = scope.clone();
            }
            rules.push(rule(yaml));
        }
        rules
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Any rules (scoped or not, more than 64 matchers or rules), any events (starts and
        /// ends, agents, steps and other events, missing span ids, parents that come later,
        /// nested post-only containers) and any runs (empty ones too): matching apart from the
        /// engine and merging summaries give exactly the result of feeding events one by one.
        #[test]
        fn any_rules_and_events_summarize_like_one_by_one(
            rule_picks in proptest::collection::vec((0usize..6, 0usize..10, 0usize..10, 0usize..4, 0u64..3, 0u64..3), 1..8),
            pad in proptest::sample::select(vec![0usize, 0, 33, 70]),
            picks in proptest::collection::vec(
                (0usize..7, 0usize..ARG_TEXTS.len(), 0usize..11, 0usize..7, 0usize..7, 0usize..4),
                0..80,
            ),
            cuts in proptest::collection::vec(0usize..12, 1..12),
            excerpt in 0usize..3,
            ends_only in proptest::bool::ANY,
        ) {
            let names = ["Read", "Bash", "Write", "Task", "reviewer", "Grep", "helper"];
            let ids = ["s0", "s1", "s2", "s3", "s4", "s5"];
            let rules = generated_rules(&rule_picks, pad);
            let events: Vec<EventRef<'_>> = picks
                .iter()
                .enumerate()
                .map(|(seq, &(name, args, kind, span, parent, flags))| {
                    let agent = names[name] == "reviewer" || names[name] == "helper";
                    // Half the traces are post-only ends, which summaries take whole.
                    let kind = if ends_only { 2 } else { kind };
                    let event_type = match (kind, agent) {
                        (0 | 1, false) => EventType::ToolCallStart,
                        (0 | 1, true) => EventType::AgentInvokeStart,
                        (2, true) => EventType::AgentInvokeEnd,
                        (7, _) => EventType::StepStart,
                        (8, _) => EventType::StepEnd,
                        (9, _) => EventType::LlmRequest,
                        (10, _) => EventType::LlmResponse,
                        (_, true) => EventType::AgentInvokeEnd,
                        (_, false) => EventType::ToolCallEnd,
                    };
                    EventRef {
                        event_type,
                        name: Some(names[name]),
                        args: ArgsRef::Json(ARG_TEXTS[args]),
                        span_id: ids.get(span).copied(),
                        parent_span_id: ids.get(parent).copied(),
                        call_id: None,
                        trace_id: None,
                        post_only_parent: flags == 0 || (flags == 1 && names[name] == "Task"),
                    failed: false,
                        line: (flags != 3).then_some(2 * seq as u64 + 1),
                        seq: seq as u64 + 1,
                    }
                })
                .collect();
            // The reference matches inside the engine, rule by rule.
            let mut reference = SequenceEngine::new(rules.clone(), excerpt * 2);
            for event in &events {
                reference.feed_ref(event);
            }
            let mut prepared_engine = SequenceEngine::new(rules.clone(), excerpt * 2);
            let mut summed = SequenceEngine::new(rules, excerpt * 2);
            let plan = summed.match_plan();
            for event in &events {
                prepared_engine.feed_prepared(event, &plan.prepare(event));
            }
            let mut summarizer = summed.summarizer();
            proptest::prop_assert_eq!(summarizer.is_some(), summed.rules.len() <= 64);
            let (mut start, mut last_empty) = (0, false);
            let mut cut = cuts.iter().cycle();
            while start < events.len() {
                // Empty runs too, but never two in a row.
                let size = cut.next().copied().unwrap_or(1);
                let size = if last_empty { size.max(1) } else { size };
                last_empty = size == 0;
                let end = (start + size).min(events.len());
                let run = &events[start..end];
                let prepared: Vec<Prepared> = run.iter().map(|event| plan.prepare(event)).collect();
                let Some(summarizer) = summarizer.as_mut() else {
                    for (event, prepared) in run.iter().zip(&prepared) {
                        summed.feed_prepared(event, prepared);
                    }
                    start = end;
                    continue;
                };
                let needs = push_all(summarizer, run, &prepared);
                let summary = summarizer.finish();
                proptest::prop_assert_eq!(summary.events() as usize, run.len());
                feed_run(&mut summed, run, &prepared, &needs, &summary);
                start = end;
            }
            let reference = reference.finish();
            proptest::prop_assert_eq!(&reference, &prepared_engine.finish());
            proptest::prop_assert_eq!(&reference, &unsummarized(summed.finish()));
        }
    }

    /// `before` is decided by the order events are fed in, not by their `seq` (a caller's
    /// events may all carry seq 0, as `CanonicalEvent::new` makes them), one by one and
    /// through a summary alike.
    #[test]
    fn before_follows_the_feed_order_not_seq() {
        let rules = || vec![rule(json!({"before": {"a": {"tool": "Read"}, "b": {"tool": "Bash"}}}))];
        let event = |name, seq| EventRef {
            event_type: EventType::ToolCallEnd,
            name: Some(name),
            args: ArgsRef::None,
            span_id: None,
            parent_span_id: None,
            call_id: None,
            trace_id: None,
            post_only_parent: false,
            failed: false,
            line: None,
            seq,
        };
        for seqs in [[0, 0], [9, 3]] {
            let events = [event("Read", seqs[0]), event("Bash", seqs[1])];
            let mut one_by_one = SequenceEngine::new(rules(), 0);
            for e in &events {
                one_by_one.feed_ref(e);
            }
            let mut summed = SequenceEngine::new(rules(), 0);
            let plan = summed.match_plan();
            let mut summarizer = summed.summarizer().expect("one rule");
            for e in &events {
                summarizer.push(e, &plan.prepare(e));
            }
            assert!(summed.apply_summary(&summarizer.finish(), |k| (None, seqs[k as usize])));
            for outcome in [one_by_one.finish(), summed.finish()] {
                assert!(outcome.outcomes[0].passed, "{seqs:?}: {}", outcome.outcomes[0].notes);
            }
        }
        // The same event matching both is not before itself.
        let both = vec![rule(json!({"before": {"a": {"tool": "Read"}, "b": {"tool": "*"}}}))];
        let outcome = SequenceEngine::run(both, vec![end("Read", json!({}), 1)], 0);
        assert!(!outcome.outcomes[0].passed, "{}", outcome.outcomes[0].notes);
    }

    /// A model call is a span like any other: a tool call under it (OTLP `execute_tool` under
    /// `chat`) is inside the agent scope around it, also when it comes after the model call's
    /// end (another export batch).
    #[test]
    fn calls_under_a_model_call_are_inside_the_scope_around_it() {
        let events = vec![
            span(EventType::AgentInvokeStart, "reviewer", "A", None, 1),
            span(EventType::LlmRequest, "chat gpt-4o", "L", Some("A"), 2),
            span(EventType::ToolCallStart, "Bash", "c1", Some("L"), 3),
            span(EventType::ToolCallEnd, "Bash", "c1", Some("L"), 4),
            span(EventType::LlmResponse, "chat gpt-4o", "L", Some("A"), 5),
            // After the model call ended, its id still carries the scope.
            span(EventType::ToolCallStart, "Bash", "c2", Some("L"), 6),
            span(EventType::AgentInvokeEnd, "reviewer", "A", None, 7),
            // Not under the agent.
            span(EventType::ToolCallStart, "Bash", "c3", None, 8),
        ];
        let got = verdicts(
            vec![
                json!({"count": {"of": {"tool": "Bash"}, "at_least": 2, "at_most": 2}, "within": {"agent": "reviewer"}}),
            ],
            events,
        );
        assert_eq!(got, vec![true]);
    }

    /// A start and an end without span ids (a tooltrace v2 `pre`/`post` pair without
    /// `trace_id` or `tool_use_id`) are one call: the end pairs with an open start of its name.
    #[test]
    fn starts_and_ends_without_ids_pair_by_name() {
        let event = |event_type, tool: &str, line| call(event_type, tool, json!({}), None, None, line);
        let events = vec![
            event(EventType::ToolCallStart, "Read", 1),
            event(EventType::ToolCallStart, "Bash", 2),
            event(EventType::ToolCallEnd, "Read", 3),
            event(EventType::ToolCallEnd, "Bash", 4),
            // Post-only: no start to pair with, so it counts.
            event(EventType::ToolCallEnd, "Read", 5),
        ];
        let got = verdicts(
            vec![
                json!({"count": {"of": {"tool": "Read"}, "at_least": 2, "at_most": 2}}),
                json!({"count": {"of": {"tool": "Bash"}, "at_least": 1, "at_most": 1}}),
            ],
            events,
        );
        assert_eq!(got, vec![true, true]);
    }

    /// An end without an id pairs only with a start of its name whose arguments agree: an
    /// end with other arguments (a post-only record after a start that never ended, a
    /// refused `rm -rf` after a `sleep` that hangs) is a call of its own, and a start of
    /// another session is not its start.
    #[test]
    fn ends_without_ids_pair_only_with_starts_whose_arguments_agree() {
        let event = |event_type, args: Value, line| call(event_type, "Bash", args, None, None, line);
        let rules = || {
            vec![
                json!({"count": {"of": {"tool": "Bash"}, "at_least": 3, "at_most": 3}}),
                json!({"never": {"tool": "Bash", "args": {"command": {"contains": "rm -rf"}}}}),
            ]
        };
        let events = vec![
            event(EventType::ToolCallStart, json!({"command": "sleep 999"}), 1),
            event(EventType::ToolCallStart, json!({"command": "cargo test", "timeout": 5}), 2),
            // Key order does not matter: this ends line 2's call.
            event(EventType::ToolCallEnd, json!({"timeout": 5, "command": "cargo test"}), 3),
            event(EventType::ToolCallEnd, json!({"command": "rm -rf /"}), 4),
        ];
        assert_eq!(verdicts(rules(), events), vec![true, false]);
        // An end without arguments pairs with the oldest start of its name.
        let events = vec![
            event(EventType::ToolCallStart, json!({"command": "ls"}), 1),
            event(EventType::ToolCallEnd, Value::Null, 2),
            event(EventType::ToolCallEnd, json!({"command": "rm -rf /"}), 3),
            event(EventType::ToolCallEnd, json!({"command": "pwd"}), 4),
        ];
        assert_eq!(verdicts(rules(), events), vec![true, false]);
        // Two sessions: an end of session b does not end session a's call (whose start,
        // without arguments, would pair with any end of its name).
        let in_session = |mut event: CanonicalEvent, session: &str| {
            event.span.get_or_insert_with(SpanContext::default).trace_id = Some(session.to_owned());
            event
        };
        let events = vec![
            in_session(event(EventType::ToolCallStart, Value::Null, 1), "a"),
            in_session(event(EventType::ToolCallEnd, json!({"command": "rm -rf /"}), 2), "b"),
            in_session(event(EventType::ToolCallEnd, Value::Null, 3), "a"),
            in_session(event(EventType::ToolCallEnd, json!({"command": "ls"}), 4), "c"),
        ];
        assert_eq!(verdicts(rules(), events), vec![true, false]);
    }

    /// Calls of several sessions in one file are read as one sequence: order rules say so in
    /// their notes, rules that do not depend on order do not.
    #[test]
    fn order_rules_warn_when_calls_of_several_sessions_are_mixed() {
        let in_session = |tool: &str, session: &str, line| {
            let mut event = call(EventType::ToolCallEnd, tool, json!({}), None, None, line);
            event.span.get_or_insert_with(SpanContext::default).trace_id = Some(session.to_owned());
            event
        };
        let rules = || {
            vec![
                rule(json!({"before": {"a": {"tool": "Read"}, "b": {"tool": "Bash"}}})),
                rule(json!({"never": {"tool": "Write"}})),
            ]
        };
        let mixed = vec![in_session("Bash", "A", 1), in_session("Read", "B", 2), in_session("Bash", "A", 3)];
        let outcome = SequenceEngine::run(rules(), mixed, 0);
        assert_eq!(outcome.traces, vec!["A".to_owned(), "B".to_owned()]);
        assert!(outcome.outcomes[0].notes.contains("more than one session or trace (`A`, `B`), read"));
        let three = vec![in_session("Bash", "A", 1), in_session("Read", "B", 2), in_session("Bash", "C", 3)];
        let outcome = SequenceEngine::run(rules(), three, 0);
        assert!(outcome.outcomes[0].notes.contains("more than one session or trace (`A`, `B`, ...), read"));
        assert!(!outcome.outcomes[1].notes.contains("session"), "{}", outcome.outcomes[1].notes);
        let one = vec![in_session("Read", "A", 1), in_session("Bash", "A", 2)];
        let outcome = SequenceEngine::run(rules(), one, 0);
        assert_eq!(outcome.traces, vec!["A".to_owned()]);
        assert!(!outcome.outcomes[0].notes.contains("session"), "{}", outcome.outcomes[0].notes);
    }

    /// Spans recorded as they end (OTLP batches): the tool call, then its agent, then the
    /// outer agent. The call waits for its agent, which waits for the outer one: when that
    /// opens the scope, `never` sees the call.
    #[test]
    fn calls_under_late_nested_containers_reach_the_late_root() {
        let events = vec![
            span(EventType::ToolCallStart, "Bash", "t", Some("coder"), 1),
            span(EventType::ToolCallEnd, "Bash", "t", Some("coder"), 1),
            span(EventType::AgentInvokeStart, "coder", "coder", Some("orch"), 2),
            span(EventType::AgentInvokeEnd, "coder", "coder", Some("orch"), 2),
            span(EventType::AgentInvokeStart, "orchestrator", "orch", None, 3),
            span(EventType::AgentInvokeEnd, "orchestrator", "orch", None, 3),
        ];
        let rules = vec![rule(json!({"never": {"tool": "Bash"}, "within": {"agent": "orchestrator"}}))];
        let outcome = SequenceEngine::run(rules, events, 0);
        assert!(!outcome.outcomes[0].passed, "{}", outcome.outcomes[0].notes);
        assert!(outcome.outcomes[0].notes.contains("Note: 1 call(s)"), "{}", outcome.outcomes[0].notes);
    }

    /// A step or a model call that comes after the calls under it (OTLP: the tool spans in
    /// one export batch, the agent with its model call or step in the next, time-ordered)
    /// hands them to its agent, inside a scope or out of it for good.
    #[test]
    fn late_steps_and_model_calls_hand_their_calls_on() {
        for (kind, end_kind) in
            [(EventType::StepStart, EventType::StepEnd), (EventType::LlmRequest, EventType::LlmResponse)]
        {
            let events = vec![
                span(EventType::ToolCallStart, "Bash", "t1", Some("s1"), 1),
                span(EventType::ToolCallEnd, "Bash", "t1", Some("s1"), 2),
                span(EventType::ToolCallStart, "Bash", "t2", Some("s2"), 3),
                span(EventType::ToolCallEnd, "Bash", "t2", Some("s2"), 4),
                // Next batch: the scope agent and its step, then a step of no agent.
                span(EventType::AgentInvokeStart, "reviewer", "A", None, 5),
                span(kind, "step", "s1", Some("A"), 6),
                span(end_kind, "step", "s1", Some("A"), 7),
                span(EventType::AgentInvokeEnd, "reviewer", "A", None, 8),
                span(kind, "step", "s2", None, 9),
                span(end_kind, "step", "s2", None, 10),
            ];
            let rules = vec![
                rule(json!({"never": {"tool": "Bash"}, "within": {"agent": "reviewer"}})),
                rule(
                    json!({"count": {"of": {"tool": "Bash"}, "at_least": 0, "at_most": 1_000_000}, "within": {"agent": "reviewer"}}),
                ),
            ];
            let outcome = SequenceEngine::run(rules, events, 0);
            assert!(!outcome.outcomes[0].passed, "{kind:?}: {}", outcome.outcomes[0].notes);
            assert_eq!(counted(&outcome.outcomes[1]), 1, "{kind:?}: {}", outcome.outcomes[1].notes);
        }
    }

    /// More late parents awaited at once than the window holds: the calls under the
    /// forgotten ones are not counted, and the note says so.
    #[test]
    fn late_parents_beyond_the_window_are_reported() {
        let total = POST_ONLY_SCOPE_WINDOW as u64 + 100;
        let mut events = Vec::new();
        for idx in 0..total {
            events.push(call(
                EventType::ToolCallEnd,
                "Bash",
                json!({}),
                Some(&format!("c{idx}")),
                Some(&format!("p{idx}")),
                idx + 1,
            ));
        }
        for idx in 0..total {
            let mut task = end("Task", json!({}), total + idx + 1);
            task.span = Some(SpanContext { trace_id: None, span_id: Some(format!("p{idx}")), parent_span_id: None });
            task.attributes.insert("x.tooltrace.span_type".into(), json!("parent"));
            events.push(task);
        }
        let rules = vec![rule(json!({"count": {"of": {"tool": "Bash"}, "at_least": 1}, "within": {"tool": "Task"}}))];
        let outcome = SequenceEngine::run(rules, events, 0);
        let notes = &outcome.outcomes[0].notes;
        assert!(notes.contains(&format!("occurs {} time(s)", POST_ONLY_SCOPE_WINDOW)), "{notes}");
        assert!(notes.contains("Warning: 100 call(s) under spans recorded after them were not placed"), "{notes}");
    }

    /// A rule that passes on a trace without calls says it passed without evidence; one that
    /// fails, or passes on calls, does not.
    #[test]
    fn a_pass_without_calls_is_noted() {
        let rules = || {
            vec![
                rule(json!({"never": {"tool": "Write"}})),
                rule(json!({"count": {"of": {"tool": "Read"}, "at_least": 1}})),
            ]
        };
        let warning =
            "Warning: the trace holds no tool calls or agent invocations, so this rule passed without evidence";
        let empty = SequenceEngine::run(rules(), Vec::new(), 0);
        assert!(empty.outcomes[0].passed && empty.outcomes[0].notes.contains(warning), "{:?}", empty.outcomes[0]);
        assert!(!empty.outcomes[1].passed && !empty.outcomes[1].notes.contains(warning), "{:?}", empty.outcomes[1]);
        let read = SequenceEngine::run(rules(), vec![end("Read", json!({}), 1)], 0);
        assert!(read.outcomes.iter().all(|o| o.passed && !o.notes.contains(warning)), "{:?}", read.outcomes);
    }

    /// A scope that no span ever opened passes `never` vacuously: the note says so (a spec
    /// naming the wrong agent, or a capture without sub-agent spans).
    #[test]
    fn a_scope_that_never_opened_is_noted() {
        let rules = || vec![rule(json!({"never": {"tool": "Write"}, "within": {"agent": "code-reviewer"}}))];
        let write = call(EventType::ToolCallEnd, "Write", json!({}), Some("w"), Some("x"), 1);
        let none = SequenceEngine::run(rules(), vec![write.clone()], 0);
        assert!(none.outcomes[0].passed);
        assert!(
            none.outcomes[0].notes.ends_with(
                "Note: no span matched the scope (agent code-reviewer) in the trace, so nothing was inside it."
            ),
            "{}",
            none.outcomes[0].notes
        );
        let agent = span(EventType::AgentInvokeStart, "code-reviewer", "a", None, 1);
        let opened = SequenceEngine::run(rules(), vec![agent, write.clone()], 0);
        assert!(!opened.outcomes[0].notes.contains("no span matched"), "{}", opened.outcomes[0].notes);
        // What a scoped rule misses, it misses inside its scope (the Write is in the trace).
        let before = vec![rule(
            json!({"before": {"a": {"tool": "Read"}, "b": {"tool": "Write"}}, "within": {"agent": "code-reviewer"}}),
        )];
        let outside = SequenceEngine::run(before, vec![write], 0);
        assert!(
            outside.outcomes[0]
                .notes
                .starts_with("within agent code-reviewer: neither Read nor Write occurs inside the scope"),
            "{}",
            outside.outcomes[0].notes
        );
    }

    /// A scope root without a span id (a hook record without `tool_use_id`) can hold
    /// nothing: the note says that, not that no span matched.
    #[test]
    fn a_scope_root_without_an_id_is_named_in_the_note() {
        let rules = || vec![rule(json!({"never": {"tool": "Write"}, "within": {"tool": "Task"}}))];
        let events = vec![
            call(EventType::ToolCallStart, "Task", json!({"d": 1}), None, None, 1),
            call(EventType::ToolCallEnd, "Write", json!({}), Some("w"), None, 2),
            call(EventType::ToolCallEnd, "Task", json!({"d": 1}), None, None, 3),
            // A post-only Task line without an id is one call too.
            call(EventType::ToolCallEnd, "Task", json!({"d": 2}), None, None, 4),
        ];
        let outcome = SequenceEngine::run(rules(), events, 0);
        let notes = &outcome.outcomes[0].notes;
        assert!(outcome.outcomes[0].passed, "{notes}");
        assert!(
            notes.ends_with(
                "Note: 2 call(s) matched the scope (Task) but carried no span id (a Claude Code hook record \
                 without `tool_use_id`, a SubagentStart without `agent_id`, a tooltrace line without `trace_id`), so \
                 nothing could be placed inside them and nothing was inside the scope."
            ),
            "{notes}"
        );
    }

    /// A number in an argument path picks a list element, on parsed and on borrowed
    /// arguments alike.
    #[test]
    fn argument_paths_reach_into_lists() {
        let args = json!({"edits": [{"old_string": "a"}, {"old_string": "secret = 1"}], "n": [1, 2]});
        let cases = [
            ("edits.1.old_string", true),
            ("edits.0.old_string", false),
            ("edits.2.old_string", false),
            ("edits.x", false),
            ("n.1", false),
        ];
        for (path, expected) in cases {
            let rules = vec![rule(
                json!({"count": {"of": {"tool": "Edit", "args": {path: {"contains": "secret"}}}, "at_least": 1}}),
            )];
            assert_eq!(verdict_both_ways(rules, end("Edit", args.clone(), 1)), (expected, expected), "{path}");
        }
    }

    /// The verdict of one rule on one event, matched on parsed arguments inside the engine and
    /// with precomputed bits over the arguments' JSON text (borrowed, not parsed).
    fn verdict_both_ways(rules: Vec<CompiledRule>, event: CanonicalEvent) -> (bool, bool) {
        let parsed = SequenceEngine::run(rules.clone(), vec![event.clone()], 0).outcomes[0].passed;
        let mut engine = SequenceEngine::new(rules, 0);
        let plan = engine.match_plan();
        let text = event.data.get("input").map(Value::to_string).unwrap_or_default();
        let borrowed = EventRef { args: ArgsRef::Json(&text), ..EventRef::from_event(&event) };
        engine.feed_prepared(&borrowed, &plan.prepare(&borrowed));
        (parsed, engine.finish().outcomes[0].passed)
    }

    /// `args_text` reads the command as written, not its JSON spelling: quotes, anchors and
    /// nested strings match; the whole JSON text still does too.
    #[test]
    fn args_text_matches_string_values_as_written() {
        let bash = |args: Value| end("Bash", args, 1);
        let cases = [
            (json!({"contains": "cat \"secrets.env\""}), json!({"command": "cat \"secrets.env\""}), true),
            (json!({"regex": "^git status$"}), json!({"command": "git status"}), true),
            (json!({"regex": "^git status$"}), json!({"command": "git status --short"}), false),
            (json!({"equals": "ls"}), json!({"opts": {"argv": ["-l", "ls"]}}), true),
            (json!({"contains": "\"command\":"}), json!({"command": "ls"}), true),
            (json!({"contains": "rm -rf", "regex": "^sudo"}), json!({"a": "rm -rf /", "b": "sudo ls"}), false),
            (json!({"contains": "ls"}), json!({"ls": 1}), true),
            (json!({"equals": "ls"}), json!({"ls": 1}), false),
        ];
        for (text_match, args, expected) in cases {
            let rules = vec![rule(json!({"count": {"of": {"tool": "Bash", "args_text": text_match}, "at_least": 1}}))];
            assert_eq!(verdict_both_ways(rules, bash(args.clone())), (expected, expected), "{text_match} on {args}");
        }
    }

    /// `equals` with a number matches a number argument by value, however either is written;
    /// a string argument only as the same text. Parsed and borrowed arguments alike.
    #[test]
    fn numbers_in_arguments_equal_by_value() {
        let cases = [
            ("100", r#"{"n":100}"#, true),
            ("100", r#"{"n":100.0}"#, true),
            ("100", r#"{"n":1e2}"#, true),
            ("1e2", r#"{"n":100}"#, true),
            ("100.5", r#"{"n":100.50}"#, true),
            ("-0", r#"{"n":0}"#, true),
            ("100", r#"{"n":101}"#, false),
            ("100", r#"{"n":"1e2"}"#, false),
            ("100", r#"{"n":"100"}"#, true),
            ("1e2", r#"{"n":"1e2"}"#, true),
            ("9007199254740993", r#"{"n":9007199254740992}"#, false),
            ("100", r#"{"n":[100]}"#, false),
            ("true", r#"{"n":true}"#, true),
            // Spaces make text, not a number: `equals` is exactly this text.
            (" 100", r#"{"n":100}"#, false),
            ("100 ", r#"{"n":100}"#, false),
            ("\t100\n", r#"{"n":100}"#, false),
            (" 100", r#"{"n":" 100"}"#, true),
        ];
        for (pattern, args, expected) in cases {
            let rules = vec![rule(
                json!({"count": {"of": {"tool": "Bash", "args": {"n": {"equals": pattern}}}, "at_least": 1}}),
            )];
            let parsed: Value = serde_json::from_str(args).unwrap();
            let by_value = SequenceEngine::run(rules.clone(), vec![end("Bash", parsed, 1)], 0).outcomes[0].passed;
            let mut engine = SequenceEngine::new(rules, 0);
            let plan = engine.match_plan();
            let event = end("Bash", Value::Null, 1);
            let borrowed = EventRef { args: ArgsRef::Json(args), ..EventRef::from_event(&event) };
            engine.feed_prepared(&borrowed, &plan.prepare(&borrowed));
            assert_eq!((by_value, engine.finish().outcomes[0].passed), (expected, expected), "{pattern} on {args}");
        }
    }

    #[test]
    fn malformed_rules_are_reported() {
        for (yaml, code) in [
            (json!({}), "rule-empty"),
            (json!({"never": {"tool": "A"}, "count": {"of": {"tool": "A"}, "at_least": 1}}), "rule-ambiguous"),
            (json!({"count": {"of": {"tool": "A"}, "at_least": 3, "at_most": 1}}), "rule-contradiction"),
            (json!({"count": {"of": {"tool": "A"}, "at_least": 0}}), "rule-empty"),
            (
                json!({"never": {"tool": "Edit", "args": {"edits[0].old_string": {"contains": "x"}}}}),
                "invalid-argument-path",
            ),
            (json!({"before": {"a": {"tool": "A"}, "b": {"tool": "A"}}}), "rule-contradiction"),
            (json!({"never": {"tool": "A", "agent": "B"}}), "matcher-ambiguous"),
            (json!({"never": {"tool": "A", "args": {"x": {"regex": "("}}}}), "invalid-regex"),
            (json!({"never": {"tool": []}}), "matcher-empty-names"),
            (json!({"count": {"of": {"agent": []}, "at_least": 1}}), "matcher-empty-names"),
        ] {
            let rule: SequenceRule = serde_json::from_value(yaml.clone()).unwrap();
            let mut diagnostics = Vec::new();
            compile_rule(&rule, "/r", &mut diagnostics);
            assert!(diagnostics.iter().any(|d| d.code == code), "{yaml}: {diagnostics:?}");
        }
        // Zero as the lower bound of a range checks something.
        let rule: SequenceRule =
            serde_json::from_value(json!({"count": {"of": {"tool": "A"}, "at_least": 0, "at_most": 2}})).unwrap();
        let mut diagnostics = Vec::new();
        compile_rule(&rule, "/r", &mut diagnostics);
        assert_eq!(diagnostics, []);
    }
}
