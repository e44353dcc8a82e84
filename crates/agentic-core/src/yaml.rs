//! YAML to JSON with positions: the one YAML reader of agentic.
//!
//! Every YAML file agentic reads (workflows, rubrics, checkpoint specs) goes through
//! [`parse_yaml`]. It turns the text into a `serde_json::Value` and a [`SourceMap`] that
//! gives the line and column of every value and mapping key by JSON pointer, so later
//! checks can point at the exact place of a problem.
//!
//! Scalars follow the YAML 1.2 core schema: `yes`/`no`/`on`/`off` stay strings (the
//! "Norway problem" does not exist here). Anchors and aliases work, as do `<<` merge keys,
//! but every alias counts against a node budget, so an alias bomb is rejected in bounded
//! time and memory. Oversize input is rejected before parsing starts.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Position};

/// Limits that keep parsing bounded whatever the input.
#[derive(Debug, Clone, Copy)]
pub struct YamlLimits {
    /// The largest input accepted, in bytes.
    pub max_bytes: usize,
    /// The most values the document may expand to, counting every alias expansion.
    pub max_nodes: usize,
    /// The most bytes of scalar text (keys included) the document may expand to, counting
    /// every alias expansion: a long string repeated through aliases is a bomb too.
    pub max_expanded_bytes: usize,
    /// The deepest nesting of sequences and mappings.
    pub max_depth: usize,
}

impl Default for YamlLimits {
    fn default() -> Self {
        YamlLimits {
            max_bytes: 4 * 1024 * 1024,
            max_nodes: 200_000,
            max_expanded_bytes: 16 * 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// Where each value and key of a parsed document came from, keyed by JSON pointer.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    values: HashMap<String, Position>,
    keys: HashMap<String, Position>,
    surprising: Vec<SurprisingScalar>,
}

/// A plain scalar that YAML 1.2 reads otherwise than its writer may have meant: a word that
/// YAML 1.1 (PyYAML, older tools) reads as a boolean, or a number whose written form holds
/// more than its value (`0755`, `1.10`). Recorded for callers that compare values with data
/// (a checkpoint spec's `equals`), where the other reading decides a verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct SurprisingScalar {
    /// Where the value is (a JSON pointer).
    pub pointer: String,
    /// The scalar as written.
    pub text: String,
    pub position: Position,
    pub kind: Surprise,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surprise {
    /// `yes`, `no`, `on`, `off`, `y`, `n` (any case YAML 1.1 knows): text in YAML 1.2, the
    /// boolean given in YAML 1.1.
    Yaml11Boolean(bool),
    /// A number written with leading zeros (`0755`, `007`) or trailing zeros after its point
    /// (`1.10`): the number loses that spelling, which text (a version, a file mode) keeps.
    NumberDropsDigits,
}

impl SourceMap {
    /// The position of the value at `pointer` (for example `/steps/0/argv`).
    pub fn value(&self, pointer: &str) -> Option<Position> {
        self.values.get(pointer).copied()
    }

    /// The position of the mapping key whose value is at `pointer`; falls back to the value.
    pub fn key(&self, pointer: &str) -> Option<Position> {
        self.keys.get(pointer).copied().or_else(|| self.value(pointer))
    }

    /// The plain scalars whose reading may surprise their writer, in document order.
    pub fn surprising(&self) -> &[SurprisingScalar] {
        &self.surprising
    }

    /// The position of `pointer`, or of its nearest ancestor that has one.
    pub fn nearest(&self, pointer: &str) -> Position {
        let mut current = pointer;
        loop {
            if let Some(position) = self.value(current) {
                return position;
            }
            match current.rfind('/') {
                Some(idx) => current = &current[..idx],
                None => return Position::START,
            }
        }
    }
}

/// A parsed YAML document.
#[derive(Debug, Clone)]
pub struct YamlDocument {
    /// The document as JSON.
    pub value: Value,
    /// Positions of values and keys.
    pub source_map: SourceMap,
}

/// Escapes one JSON pointer segment (`~` and `/`).
pub fn pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Parses one YAML document with the default limits.
pub fn parse_yaml(text: &str) -> Result<YamlDocument, Vec<Diagnostic>> {
    parse_yaml_with_limits(text, YamlLimits::default())
}

/// Parses one YAML document. On failure returns at least one diagnostic (without a file).
pub fn parse_yaml_with_limits(text: &str, limits: YamlLimits) -> Result<YamlDocument, Vec<Diagnostic>> {
    match recovering_with_limits(text, limits)? {
        (document, errors) if errors.is_empty() => Ok(document),
        (_, errors) => Err(errors),
    }
}

/// Parses one YAML document, and goes on past errors that leave a whole document: a key
/// given twice (the later value stays), a tag that does not fit its value or is not read
/// (the value as if untagged), a non-finite number (a string). Those come back beside the
/// document, so a caller can report what else is wrong with it in the same pass; anything
/// else (a syntax error, a document too large or too deep) is `Err`. Default limits.
pub fn parse_yaml_recovering(text: &str) -> Result<(YamlDocument, Vec<Diagnostic>), Vec<Diagnostic>> {
    recovering_with_limits(text, YamlLimits::default())
}

fn recovering_with_limits(text: &str, limits: YamlLimits) -> Result<(YamlDocument, Vec<Diagnostic>), Vec<Diagnostic>> {
    read_document(text, limits).map_err(|mut errors| {
        for error in &mut errors {
            explain_brackets(text, error);
        }
        errors
    })
}

/// A syntax error at or after an index written into a plain value inside a flow mapping
/// (`{path: ci.checks[*].status, ...}`, on one line or over several): there `[` starts a
/// list, so such a path does not parse unless quoted. The general hint would not say so.
fn explain_brackets(text: &str, error: &mut Diagnostic) {
    let Some(at) = error.position.filter(|_| error.code == "yaml-syntax") else { return };
    // An index right after a word character, inside `{`, outside quotes and comments, up to
    // the error's place: `[*]`, `[0]`, or a quoted key (`["a.b"]`).
    let is_index = |rest: &[char]| match rest.iter().position(|&c| c == ']') {
        Some(end) => {
            let inside = &rest[..end];
            end > 0
                && (inside == ['*']
                    || inside.iter().all(char::is_ascii_digit)
                    || (end >= 2 && inside[0] == '"' && inside[end - 1] == '"'))
        }
        None => false,
    };
    let mut braces = 0usize;
    // A quoted scalar may go on over lines.
    let mut quote = None;
    for (index, line) in text.lines().enumerate().take(at.line) {
        let last = index + 1 == at.line;
        let chars: Vec<char> = line.chars().collect();
        let (mut previous, mut i) = (' ', 0);
        while i < chars.len() && !(last && i + 1 > at.column) {
            let c = chars[i];
            match quote {
                // An escape in double quotes, and `''` in single quotes, stay inside.
                Some('"') if c == '\\' => i += 1,
                Some('\'') if c == '\'' && chars.get(i + 1) == Some(&'\'') => i += 1,
                Some(open) if c == open => quote = None,
                Some(_) => {}
                // A quote opens a scalar only where one starts (`it's` is plain text).
                None if matches!(c, '"' | '\'') && matches!(previous, ' ' | '{' | '[' | ',' | ':') => quote = Some(c),
                None if c == '#' && previous == ' ' => break,
                None if c == '{' => braces += 1,
                None if c == '}' => braces = braces.saturating_sub(1),
                None if c == '['
                    && last
                    && braces > 0
                    && (previous.is_alphanumeric() || previous == '_')
                    && is_index(&chars[i + 1..]) =>
                {
                    error.hint = Some(
                        "inside `{...}`, `[` and `]` start and end a list: quote a value that holds them, as in \
                         `{path: \"ci.checks[*].status\", contains: failure}`, or write the mapping in block style"
                            .to_owned(),
                    );
                    return;
                }
                None => {}
            }
            previous = c;
            i += 1;
        }
    }
}

fn read_document(text: &str, limits: YamlLimits) -> Result<(YamlDocument, Vec<Diagnostic>), Vec<Diagnostic>> {
    if text.len() > limits.max_bytes {
        return Err(vec![
            Diagnostic::error(
                "yaml-too-large",
                format!("file is {} bytes; the limit is {} bytes", text.len(), limits.max_bytes),
            )
            .with_hint("split the file, or move large data into a dataset file"),
        ]);
    }
    let mut builder = Builder {
        limits,
        nodes: 0,
        bytes: 0,
        anchors: HashMap::new(),
        source_map: SourceMap::default(),
        deferred: Vec::new(),
        aliased: false,
    };
    let mut parser = Parser::new_from_str(text);
    let mut root: Option<Value> = None;
    let mut documents = 0usize;
    while let Some((event, span)) = next(&mut parser)? {
        match event {
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(vec![
                        Diagnostic::error("yaml-multiple-documents", "file holds more than one YAML document")
                            .at(position(&span))
                            .with_hint("keep one document per file; remove the extra `---`"),
                    ]);
                }
            }
            other => {
                let value = builder.node(&mut parser, other, span, String::new(), 0)?;
                root = Some(value);
            }
        }
    }
    Ok((YamlDocument { value: root.unwrap_or(Value::Null), source_map: builder.source_map }, builder.deferred))
}

type Item<'a> = (Event<'a>, Span);

fn next<'a>(parser: &mut Parser<'a, saphyr_parser::StrInput<'a>>) -> Result<Option<Item<'a>>, Vec<Diagnostic>> {
    match parser.next_event() {
        None => Ok(None),
        Some(Ok(item)) => Ok(Some(item)),
        Some(Err(error)) => {
            let marker = error.marker();
            if error.info().contains("recursion limit") {
                // The parser's own depth limit, above ours (flow collections nest before we see them).
                return Err(vec![
                    Diagnostic::error("yaml-too-deep", "nesting is deeper than the parser follows")
                        .at(Position { line: marker.line(), column: marker.col() + 1 })
                        .with_hint("flatten the structure"),
                ]);
            }
            Err(vec![
                Diagnostic::error("yaml-syntax", format!("malformed YAML: {}", error.info()))
                    .at(Position { line: marker.line(), column: marker.col() + 1 })
                    .with_hint("check indentation, quotes and `:` after keys near this line"),
            ])
        }
    }
}

fn position(span: &Span) -> Position {
    Position { line: span.start.line(), column: span.start.col() + 1 }
}

struct Builder {
    limits: YamlLimits,
    nodes: usize,
    /// Bytes of scalar text expanded so far.
    bytes: usize,
    /// Each anchor's value, with the values and bytes it expands to.
    anchors: HashMap<usize, (Value, usize, usize)>,
    source_map: SourceMap,
    /// Whether an alias was expanded (a document over the limits without one is just large).
    aliased: bool,
    /// Errors that do not stop the parse (repeated keys, infinite numbers), all reported.
    deferred: Vec<Diagnostic>,
}

impl Builder {
    /// Adds `nodes` values and `bytes` bytes of text to what the document expands to; an
    /// error once either passes its limit.
    fn charge(&mut self, nodes: usize, bytes: usize, span: &Span) -> Result<(), Vec<Diagnostic>> {
        self.nodes = self.nodes.saturating_add(nodes);
        self.bytes = self.bytes.saturating_add(bytes);
        let (what, hint) = if self.nodes > self.limits.max_nodes {
            if !self.aliased {
                // No alias: the file itself is that large.
                return Err(vec![
                    Diagnostic::error(
                        "yaml-too-large",
                        format!("the document has more than {} values", self.limits.max_nodes),
                    )
                    .at(position(span))
                    .with_hint("split it into smaller files"),
                ]);
            }
            (format!("{} values", self.limits.max_nodes), "remove nested aliases (`*name`) that multiply the document")
        } else if self.bytes > self.limits.max_expanded_bytes {
            (
                format!("{} bytes of text", self.limits.max_expanded_bytes),
                "remove aliases (`*name`) that repeat long values",
            )
        } else {
            return Ok(());
        };
        Err(vec![
            Diagnostic::error(
                "yaml-alias-limit",
                format!("document expands to more than {what} (an alias bomb, or far too large)"),
            )
            .at(position(span))
            .with_hint(hint),
        ])
    }

    fn node<'a>(
        &mut self,
        parser: &mut Parser<'a, saphyr_parser::StrInput<'a>>,
        event: Event<'a>,
        span: Span,
        pointer: String,
        depth: usize,
    ) -> Result<Value, Vec<Diagnostic>> {
        if depth > self.limits.max_depth {
            return Err(vec![
                Diagnostic::error("yaml-too-deep", format!("nesting is deeper than {} levels", self.limits.max_depth))
                    .at(position(&span))
                    .with_hint("flatten the structure"),
            ]);
        }
        self.source_map.values.insert(pointer.clone(), position(&span));
        let (nodes_before, bytes_before) = (self.nodes, self.bytes);
        self.charge(1, 0, &span)?;
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.charge(0, text.len(), &span)?;
                let tag_name = self.read_tag(tag.as_deref(), Kind::Scalar, &span, &pointer).unwrap_or(None);
                let mut said = false;
                if style == ScalarStyle::Plain
                    && !matches!(tag_name, Some("str"))
                    && let Some(what) = non_finite(&text)
                {
                    said = true;
                    // YAML 1.2 reads `.inf`, `.nan` and `1e400` as floats, which JSON (and so
                    // every document here) cannot hold: not silently a string.
                    self.deferred.push(
                        Diagnostic::error(
                            "yaml-non-finite",
                            format!("`{text}` is {what}, which no field here can hold"),
                        )
                        .at(position(&span))
                        .at_pointer(pointer.clone())
                        .with_hint(format!("write a finite number, or quote it (\"{text}\") if you mean the text")),
                    );
                }
                let value = resolve_scalar(&text, style, tag_name);
                if style == ScalarStyle::Plain
                    && tag_name.is_none()
                    && let Some(kind) = surprise(&text, &value)
                {
                    self.source_map.surprising.push(SurprisingScalar {
                        pointer: pointer.clone(),
                        text: text.to_string(),
                        position: position(&span),
                        kind,
                    });
                }
                // (`!!float 1e400` is a float: said above as too large, not as no number.)
                if let Some(expected) = tag_name.filter(|_| !said).and_then(|tag| tag_mismatch(tag, &text, &value)) {
                    let tag = tag_name.unwrap_or_default();
                    self.deferred.push(
                        Diagnostic::error("yaml-tag", format!("`!!{tag} {text}`: {} is not {expected}", shown(&text)))
                            .at(position(&span))
                            .at_pointer(pointer.clone())
                            .with_hint(format!("write {expected}, or remove the `!!{tag}` tag")),
                    );
                }
                if anchor > 0 {
                    self.anchors.insert(anchor, (value.clone(), 1, text.len()));
                }
                Ok(value)
            }
            Event::Alias(anchor) => match self.anchors.get(&anchor) {
                Some((_, size, bytes)) => {
                    let (size, bytes) = (*size, *bytes);
                    self.aliased = true;
                    // Counted before the value is copied: a bomb stops before it takes memory.
                    self.charge(size, bytes, &span)?;
                    Ok(self.anchors[&anchor].0.clone())
                }
                None => Err(vec![
                    Diagnostic::error("yaml-syntax", "alias refers to an unknown anchor")
                        .at(position(&span))
                        .with_hint("define the anchor (`&name`) before using `*name`"),
                ]),
            },
            Event::SequenceStart(anchor, tag) => {
                let _ = self.read_tag(tag.as_deref(), Kind::Sequence, &span, &pointer);
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.required(parser)?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    let child = format!("{pointer}/{}", items.len());
                    items.push(self.node(parser, event, span, child, depth + 1)?);
                }
                let value = Value::Array(items);
                if anchor > 0 {
                    self.anchors.insert(anchor, (value.clone(), self.nodes - nodes_before, self.bytes - bytes_before));
                }
                Ok(value)
            }
            Event::MappingStart(anchor, tag) => {
                let _ = self.read_tag(tag.as_deref(), Kind::Mapping, &span, &pointer);
                let mut map = Map::new();
                let mut merges: Vec<(Value, Position)> = Vec::new();
                loop {
                    let (key_event, key_span) = self.required(parser)?;
                    if matches!(key_event, Event::MappingEnd) {
                        break;
                    }
                    // Only a plain `<<` is a merge key; a quoted one is an ordinary key.
                    let (key, merge, child) = match key_event {
                        Event::Scalar(text, style, _, tag) => {
                            self.charge(0, text.len(), &key_span)?;
                            let child = format!("{pointer}/{}", pointer_segment(&text));
                            // A tagged `<<` (`!!str <<`) is an ordinary key.
                            let untagged =
                                matches!(self.read_tag(tag.as_deref(), Kind::Key, &key_span, &child), Ok(None));
                            let merge = style == ScalarStyle::Plain && text == "<<" && untagged;
                            (text.into_owned(), merge, child)
                        }
                        _ => {
                            return Err(vec![
                                Diagnostic::error("yaml-complex-key", "mapping keys must be plain scalars")
                                    .at(position(&key_span))
                                    .with_hint("use a string key"),
                            ]);
                        }
                    };
                    let (value_event, value_span) = self.required(parser)?;
                    if merge {
                        let at = position(&value_span);
                        let merged = self.node(parser, value_event, value_span, child, depth + 1)?;
                        merges.push((merged, at));
                        continue;
                    }
                    if map.contains_key(&key) {
                        self.deferred.push(
                            Diagnostic::error(
                                "duplicate-key",
                                format!("key `{key}` appears twice in the same mapping"),
                            )
                            .at(position(&key_span))
                            .at_pointer(child.clone())
                            .with_hint("remove or rename one of them; YAML keeps only one"),
                        );
                    }
                    self.source_map.keys.insert(child.clone(), position(&key_span));
                    let value = self.node(parser, value_event, value_span, child, depth + 1)?;
                    map.insert(key, value);
                }
                for (merged, at) in merges {
                    let sources = match merged {
                        Value::Array(items) => items,
                        other => vec![other],
                    };
                    for source in sources {
                        match source {
                            Value::Object(source) => {
                                for (key, value) in source {
                                    map.entry(key).or_insert(value);
                                }
                            }
                            // Merging anything else would drop it without a word.
                            _ => {
                                self.deferred.push(
                                    Diagnostic::error(
                                        "yaml-merge-invalid",
                                        "a merge key `<<` takes a mapping or a list of mappings",
                                    )
                                    .at(at)
                                    .with_hint("merge an anchored mapping (`<<: *defaults`), or quote `\"<<\"` to mean the key"),
                                );
                                break;
                            }
                        }
                    }
                }
                let value = Value::Object(map);
                if anchor > 0 {
                    self.anchors.insert(anchor, (value.clone(), self.nodes - nodes_before, self.bytes - bytes_before));
                }
                Ok(value)
            }
            _ => Ok(Value::Null),
        }
    }

    fn required<'a>(
        &mut self,
        parser: &mut Parser<'a, saphyr_parser::StrInput<'a>>,
    ) -> Result<Item<'a>, Vec<Diagnostic>> {
        match next(parser)? {
            Some(item) => Ok(item),
            None => Err(vec![
                Diagnostic::error("yaml-syntax", "unexpected end of file")
                    .with_hint("the document ends inside a sequence or mapping"),
            ]),
        }
    }
}

/// What a tag is put on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Scalar,
    /// A mapping key: text, so only `!!str` and `!` fit.
    Key,
    Sequence,
    Mapping,
}

impl Builder {
    /// The core-schema name of a node's tag (see [`core_tag`]); a tag that does not fit is
    /// an error at the node (`Err`, and the node reads as untagged), never dropped.
    fn read_tag(
        &mut self,
        tag: Option<&saphyr_parser::Tag>,
        kind: Kind,
        span: &Span,
        pointer: &str,
    ) -> Result<Option<&'static str>, ()> {
        core_tag(tag, kind).map_err(|error| self.deferred.push((*error).at(position(span)).at_pointer(pointer)))
    }
}

/// The core-schema name of a node's tag (`str`, `int`, `float`, `bool`, `null` on a scalar;
/// `seq` and `map` on collections), `None` for no tag or the non-specific `!`, or an error
/// for a tag this reader cannot honour (`!!binary`, `!!timestamp`, `!!set`, a local `!mytag`):
/// a tag's meaning is never dropped in silence.
fn core_tag(tag: Option<&saphyr_parser::Tag>, kind: Kind) -> Result<Option<&'static str>, Box<Diagnostic>> {
    let Some(tag) = tag else { return Ok(None) };
    if matches!((tag.handle.as_str(), tag.suffix.as_str()), ("!", "") | ("", "!")) {
        // `! text`: the non-specific tag, a plain string for a scalar or a key.
        return Ok(matches!(kind, Kind::Scalar | Kind::Key).then_some("str"));
    }
    // `!!int`, a `%TAG` handle for the core schema, or the verbatim `!<tag:yaml.org,2002:int>`.
    const CORE: &str = "tag:yaml.org,2002:";
    let verbatim = tag.handle.is_empty().then(|| tag.suffix.strip_prefix(CORE)).flatten();
    let core = tag.is_yaml_core_schema() || verbatim.is_some();
    let name = verbatim.unwrap_or(tag.suffix.as_str());
    let fitting: &[&'static str] = match kind {
        Kind::Scalar => &["str", "int", "float", "bool", "null"],
        Kind::Key => &["str"],
        Kind::Sequence => &["seq"],
        Kind::Mapping => &["map"],
    };
    if core && let Some(&name) = fitting.iter().find(|&&fits| fits == name) {
        return Ok(Some(name));
    }
    let written = match (core, tag.handle.is_empty()) {
        (true, _) => format!("!!{name}"),
        (false, true) => format!("!<{}>", tag.suffix),
        (false, false) => format!("{}{}", tag.handle, tag.suffix),
    };
    let what = match kind {
        Kind::Scalar => "a value",
        Kind::Key => "a key (keys are text)",
        Kind::Sequence => "a list",
        Kind::Mapping => "a mapping",
    };
    let message = if core && matches!(name, "str" | "int" | "float" | "bool" | "null" | "seq" | "map") {
        // A core tag on the wrong kind of node: `!!str [a]`, `!!seq {a: 1}`.
        format!("the tag `{written}` does not fit {what}")
    } else {
        format!("the tag `{written}` on {what} is not one this reader honours")
    };
    Err(Box::new(Diagnostic::error("yaml-tag", message).with_hint(format!(
        "remove `{written}`: only the YAML 1.2 core tags (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null` on values, \
         `!!seq` on lists, `!!map` on mappings) are read, and a value's meaning is never guessed from another tag"
    ))))
}

/// A scalar's text in a message: in backticks, or "the empty value".
fn shown(text: &str) -> String {
    if text.is_empty() { "the empty value".to_owned() } else { format!("`{text}`") }
}

/// What a value with the core tag `tag` must be, when `value` (read from `text`) is not that.
fn tag_mismatch(tag: &str, text: &str, value: &Value) -> Option<&'static str> {
    // An integer too large for 64 bits is still one (it reads as a float, as untagged).
    let digits = |text: &str| text.trim_start_matches(['-', '+']).bytes().all(|b| b.is_ascii_digit());
    match (tag, value) {
        ("str", Value::String(_)) | ("bool", Value::Bool(_)) | ("null", Value::Null) => None,
        ("float", Value::Number(_)) => None,
        ("int", Value::Number(number)) if number.is_i64() || number.is_u64() || digits(text) => None,
        ("int", _) => Some("an integer"),
        ("float", _) => Some("a number"),
        ("bool", _) => Some("`true` or `false`"),
        ("null", _) => Some("null (`null`, `~` or nothing)"),
        _ => None,
    }
}

/// Resolves a scalar by the YAML 1.2 core schema. Quoted and block scalars are strings.
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> Value {
    match tag {
        Some("str") => return Value::String(text.to_owned()),
        Some("int") | Some("float") => {
            if let Some(number) = parse_number(text) {
                return number;
            }
        }
        Some("bool") => {
            if let Some(value) = parse_bool(text) {
                return Value::Bool(value);
            }
        }
        Some("null") if matches!(text, "" | "~" | "null" | "Null" | "NULL") => return Value::Null,
        _ => {}
    }
    if style != ScalarStyle::Plain {
        return Value::String(text.to_owned());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        _ => {}
    }
    if let Some(value) = parse_bool(text) {
        return Value::Bool(value);
    }
    parse_number(text).unwrap_or_else(|| Value::String(text.to_owned()))
}

/// What a plain scalar that YAML 1.2 reads as a non-finite float is: `.inf`, `-.Inf`, `.NaN`
/// and the like, or a decimal too large for a float (`1e400`).
fn non_finite(text: &str) -> Option<&'static str> {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") {
        return Some("infinity");
    }
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return Some("not a number");
    }
    let decimal = unsigned.bytes().any(|b| b.is_ascii_digit())
        && unsigned.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    (decimal && text.parse::<f64>().is_ok_and(f64::is_infinite)).then_some("a number too large for a float")
}

/// How a plain, untagged scalar read as `value` may surprise its writer.
fn surprise(text: &str, value: &Value) -> Option<Surprise> {
    match value {
        Value::String(_) => match text {
            "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(Surprise::Yaml11Boolean(true)),
            "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(Surprise::Yaml11Boolean(false)),
            _ => None,
        },
        Value::Number(_) => {
            let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
            let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
            let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
            let leading_zero = whole.len() > 1 && whole.starts_with('0') && all_digits(whole);
            let trailing_zero = fraction.len() > 1 && fraction.ends_with('0') && all_digits(fraction);
            (all_digits(whole) && (leading_zero || trailing_zero)).then_some(Surprise::NumberDropsDigits)
        }
        _ => None,
    }
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn parse_number(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    let first = *bytes.first()?;
    if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
        return None;
    }
    // Unsigned, like the core schema's `0x`/`0o` forms; up to `u64::MAX`, as decimals.
    for (prefix, radix) in [("0x", 16), ("0o", 8)] {
        if let Some(digits) = text.strip_prefix(prefix) {
            if digits.starts_with(['+', '-']) {
                return None;
            }
            return match u64::from_str_radix(digits, radix) {
                Ok(value) => Some(Value::from(value)),
                // Past 64 bits: a number still (as a decimal that large is), not text.
                Err(error) if *error.kind() == std::num::IntErrorKind::PosOverflow => {
                    let value = digits.chars().try_fold(0f64, |value, digit| {
                        digit.to_digit(radix).map(|digit| value * f64::from(radix) + f64::from(digit))
                    })?;
                    serde_json::Number::from_f64(value).map(Value::Number)
                }
                Err(_) => None,
            };
        }
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(value) = text.parse::<i64>() {
            return Some(Value::from(value));
        }
        if let Ok(value) = text.parse::<u64>() {
            return Some(Value::from(value));
        }
    }
    let looks_float = digits.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && digits.bytes().any(|b| b.is_ascii_digit());
    if looks_float
        && let Ok(value) = text.parse::<f64>()
        && value.is_finite()
    {
        return serde_json::Number::from_f64(value).map(Value::Number);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_schema_keeps_norway_a_string() {
        let doc = parse_yaml("country: NO\nanswer: yes\nflag: true\nn: 3\nx: 1.5\nz: ~\n").unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"country": "NO", "answer": "yes", "flag": true, "n": 3, "x": 1.5, "z": null})
        );
    }

    /// Hex and octal integers reach `u64::MAX` like decimal ones; a sign or a wider value
    /// leaves them strings (the core schema has no signed hex).
    #[test]
    fn plain_scalars_that_may_surprise_are_recorded() {
        let doc =
            parse_yaml("a: no\nb: 'no'\nc: 1.10\nd: 0755\ne: [ON, 1.5, 1.0, 0, 0.50, !!str off, true]\n").unwrap();
        let seen: Vec<(&str, &str, Surprise)> =
            doc.source_map.surprising().iter().map(|s| (s.pointer.as_str(), s.text.as_str(), s.kind)).collect();
        assert_eq!(
            seen,
            [
                ("/a", "no", Surprise::Yaml11Boolean(false)),
                ("/c", "1.10", Surprise::NumberDropsDigits),
                ("/d", "0755", Surprise::NumberDropsDigits),
                ("/e/0", "ON", Surprise::Yaml11Boolean(true)),
                ("/e/4", "0.50", Surprise::NumberDropsDigits),
            ]
        );
        assert_eq!(doc.source_map.surprising()[0].position.line, 1);
    }

    #[test]
    fn hex_and_octal_integers_past_64_bits_are_numbers() {
        let doc = parse_yaml("a: 0x10000000000000000\nb: 0o2000000000000000000000\nc: 0xfg\n").unwrap();
        assert_eq!(doc.value["a"].as_f64(), Some(18446744073709551616.0));
        assert_eq!(doc.value["b"].as_f64(), Some(18446744073709551616.0));
        assert_eq!(doc.value["c"], "0xfg");
    }

    #[test]
    fn hex_and_octal_integers_cover_the_unsigned_range() {
        let doc = parse_yaml(
            "a: 0xFF\nb: 0xFFFFFFFFFFFFFFFF\nc: 0o17\nd: 0x-1\ne: 0x1FFFFFFFFFFFFFFFF\nf: 0o1777777777777777777777\n",
        )
        .unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a": 255, "b": u64::MAX, "c": 15, "d": "0x-1", "e": 36893488147419103231.0, "f": u64::MAX})
        );
    }

    /// `.inf`, `.nan` and `1e400` are floats in YAML 1.2 that JSON cannot hold: an error at
    /// each, not a string; quoted, they are text.
    #[test]
    fn non_finite_floats_are_errors_and_quoted_ones_text() {
        let errors = parse_yaml("a: .inf\nb: [-.Inf, .NaN]\nc: 1e400\nd: 1e308\n").unwrap_err();
        let found: Vec<(&str, usize)> = errors.iter().map(|e| (e.code.as_str(), e.position.unwrap().line)).collect();
        assert_eq!(
            found,
            vec![("yaml-non-finite", 1), ("yaml-non-finite", 2), ("yaml-non-finite", 2), ("yaml-non-finite", 3)]
        );
        // Tagged as a float it is one, too large: said once, not also as no number.
        let errors = parse_yaml(
            "a: !!float 1e400
b: !!float .inf
",
        )
        .unwrap_err();
        let found: Vec<(&str, usize)> = errors.iter().map(|e| (e.code.as_str(), e.position.unwrap().line)).collect();
        assert_eq!(found, vec![("yaml-non-finite", 1), ("yaml-non-finite", 2)]);
        let doc = parse_yaml("a: '.inf'\nb: !!str .nan\nc: 1e308\nd: .infinity\n").unwrap();
        assert_eq!(doc.value, serde_json::json!({"a": ".inf", "b": ".nan", "c": 1e308, "d": ".infinity"}));
    }

    /// Core tags are honoured when the value fits them; a value that does not fit its tag,
    /// and a tag this reader does not honour, is an error at the value, never dropped.
    #[test]
    fn tags_are_honoured_or_reported() {
        let doc = parse_yaml(
            "a: !!str 123\nb: !!int '5'\nc: !!bool true\nd: !!null ~\ne: !!float 1\nf: ! 7\ng: !!seq [1]\nh: !!map {x: 1}\ni: !<tag:yaml.org,2002:int> 12\nj: !!int 99999999999999999999\n",
        )
        .unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a": "123", "b": 5, "c": true, "d": null, "e": 1, "f": "7", "g": [1], "h": {"x": 1}, "i": 12, "j": 1e20})
        );
        let errors = parse_yaml(
            "a: !!bool yes\nb: !!int abc\nc: !!null abc\nd: !!binary aGVsbG8=\ne: !mytag x\nf: !!int 1.5\ng: !!set {x: 1}\nh: !!map [1]\n",
        )
        .unwrap_err();
        let found: Vec<(&str, usize)> = errors.iter().map(|e| (e.code.as_str(), e.position.unwrap().line)).collect();
        assert_eq!(found, (1..=8).map(|line| ("yaml-tag", line)).collect::<Vec<_>>());
        assert!(errors[0].message.contains("`yes` is not `true` or `false`"), "{}", errors[0].message);
        assert!(errors[3].message.contains("the tag `!!binary` on a value"), "{}", errors[3].message);
        assert!(errors[4].message.contains("the tag `!mytag`"), "{}", errors[4].message);
        assert!(errors[5].message.contains("`1.5` is not an integer"), "{}", errors[5].message);
        assert!(errors[7].message.contains("the tag `!!map` does not fit a list"), "{}", errors[7].message);
        let errors = parse_yaml("a: !<tag:example.com,2000:x> 1\nb: !!bool\n").unwrap_err();
        assert!(errors[0].message.contains("the tag `!<tag:example.com,2000:x>`"), "{}", errors[0].message);
        assert!(errors[1].message.contains("the empty value is not `true` or `false`"), "{}", errors[1].message);
        // Keys are text: `!!str` says so; other tags on a key are errors, and `!!str <<` is a key.
        let doc = parse_yaml("!!str a: 1\n!!str <<: 2\n").unwrap();
        assert_eq!(doc.value, serde_json::json!({"a": 1, "<<": 2}));
        let errors = parse_yaml("!mytag a: 1\n!!int b: 2\n").unwrap_err();
        let found: Vec<(&str, usize)> = errors.iter().map(|e| (e.code.as_str(), e.position.unwrap().line)).collect();
        assert_eq!(found, [("yaml-tag", 1), ("yaml-tag", 2)]);
    }

    /// Over the limits without an alias, the document is just large (not an alias bomb); past
    /// the parser's own depth, it is too deep (not a syntax error).
    #[test]
    fn large_and_deep_documents_are_named_as_such() {
        let limits = YamlLimits { max_nodes: 50, ..YamlLimits::default() };
        let long: String = (0..60).map(|n| format!("k{n}: {n}\n")).collect();
        let errors = parse_yaml_with_limits(&long, limits).unwrap_err();
        assert_eq!(errors[0].code, "yaml-too-large", "{errors:?}");
        let deep = format!("a: {}1{}\n", "[".repeat(2000), "]".repeat(2000));
        let errors = parse_yaml(&deep).unwrap_err();
        assert_eq!(errors[0].code, "yaml-too-deep", "{errors:?}");
    }

    #[test]
    fn quoted_numbers_stay_strings() {
        let doc = parse_yaml("a: '1'\nb: \"true\"\n").unwrap();
        assert_eq!(doc.value, serde_json::json!({"a": "1", "b": "true"}));
    }

    #[test]
    fn positions_are_recorded_for_keys_and_values() {
        let doc = parse_yaml("name: x\nsteps:\n  - name: a\n    argv: [echo, hi]\n").unwrap();
        let argv = doc.source_map.value("/steps/0/argv/1").unwrap();
        assert_eq!((argv.line, argv.column), (4, 18));
        let key = doc.source_map.key("/steps/0/argv").unwrap();
        assert_eq!((key.line, key.column), (4, 5));
    }

    #[test]
    fn duplicate_keys_are_reported_at_the_second_key() {
        let errors = parse_yaml("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(errors[0].code, "duplicate-key");
        assert_eq!(errors[0].position.unwrap().line, 3);
    }

    #[test]
    fn alias_bomb_is_rejected_fast() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut previous = 'a';
        for name in 'b'..='k' {
            text.push_str(&format!(
                "{name}: &{name} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"
            ));
            previous = name;
        }
        let errors = parse_yaml(&text).unwrap_err();
        assert_eq!(errors[0].code, "yaml-alias-limit");
    }

    /// Few values but long ones: a 1 MB string repeated through aliases would take gigabytes.
    #[test]
    fn a_long_string_repeated_through_aliases_is_a_bomb_too() {
        let mut text = format!("a: &a \"{}\"\n", "x".repeat(1024 * 1024));
        text.push_str("b: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n");
        let errors = parse_yaml(&text).unwrap_err();
        assert_eq!(errors[0].code, "yaml-alias-limit");
        assert!(errors[0].message.contains("bytes of text"), "{}", errors[0].message);
        assert_eq!(errors[0].position.unwrap().line, 3);
        // A few repeats of a modest value are fine.
        let doc = parse_yaml("a: &a \"some text\"\nb: [*a, *a, *a]\n").unwrap();
        assert_eq!(doc.value["b"][2], "some text");
    }

    /// A merge of anything but a mapping (or a list of them) would drop it without a word.
    #[test]
    fn a_merge_of_a_scalar_is_an_error() {
        for text in ["a:\n  <<: 5\n  b: 1\n", "a:\n  <<: [severity, 3]\n", "m: &m {x: 1}\na:\n  <<: [*m, 3]\n"] {
            let errors = parse_yaml(text).unwrap_err();
            assert_eq!(errors[0].code, "yaml-merge-invalid", "{text}");
            assert_eq!(errors[0].position.unwrap().line, if text.starts_with('m') { 3 } else { 2 }, "{text}");
        }
        assert!(parse_yaml("a:\n  \"<<\": 5\n").is_ok(), "a quoted `<<` is a key");
    }

    #[test]
    fn merge_keys_merge_without_overriding() {
        let doc = parse_yaml("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n").unwrap();
        assert_eq!(doc.value["use"], serde_json::json!({"y": 3, "x": 1}));
        // A quoted `<<` is an ordinary key.
        let doc = parse_yaml("use:\n  \"<<\": {x: 1}\n").unwrap();
        assert_eq!(doc.value["use"], serde_json::json!({"<<": {"x": 1}}));
    }

    #[test]
    fn oversize_input_is_rejected_before_parsing() {
        let limits = YamlLimits { max_bytes: 10, ..YamlLimits::default() };
        let errors = parse_yaml_with_limits("a: 123456789012", limits).unwrap_err();
        assert_eq!(errors[0].code, "yaml-too-large");
    }

    #[test]
    fn syntax_error_has_a_position() {
        let errors = parse_yaml("a: [1, 2\nb: 3\n").unwrap_err();
        assert_eq!(errors[0].code, "yaml-syntax");
        assert!(errors[0].position.is_some());
        assert!(errors[0].hint.as_deref().is_some_and(|hint| hint.starts_with("check indentation")));
    }

    #[test]
    fn a_bracket_inside_a_flow_mapping_gets_its_own_hint() {
        let bracket_hint = |text: &str| {
            let errors = parse_yaml(text).unwrap_err();
            assert_eq!(errors[0].code, "yaml-syntax", "{text}");
            errors[0].hint.clone().unwrap_or_default().starts_with("inside `{...}`, `[` and `]`")
        };
        assert!(bracket_hint("assert:\n  not: {path: ci.checks[*].status, contains: failure}\n"));
        assert!(bracket_hint("x: {path: a.b[0].c, equals: 1}\n"));
        // Quoted, it parses; a bracket outside a flow mapping or in quotes is not the cause.
        assert!(parse_yaml("not: {path: \"ci.checks[*].status\", contains: failure}\n").is_ok());
        assert!(!bracket_hint("a: [1, 2\nb: 3\n"));
        assert!(!bracket_hint("x: {a: 'b[0]', c: d e: f}\n"));
        // Over several lines; after an apostrophe in plain text; not for a quoted bracket,
        // a list value, a stray `]`, or a bracket after the error.
        assert!(bracket_hint("assert: {\n  path: ci.checks[*].status,\n  contains: failure}\n"));
        assert!(bracket_hint("x: {path: it's.a[0], equals: x}\n"));
        assert!(!bracket_hint("x: {path: \"a\\\"[0]\", equals: x y: z}\n"));
        assert!(!bracket_hint("x: {path: pr.a, one_of: [a, b]]}\n"));
        assert!(!bracket_hint("x: {one_of: [a, b] c, path: x}\n"));
        assert!(!bracket_hint("x: {path: pr.a, equals: x y: z, other: b[0]}\n"));
        // A quoted key as the index; an index inside a string that goes on over lines is not.
        assert!(bracket_hint("x: {path: pr.m[\"a.b\"].c, equals: 1}\n"));
        assert!(!bracket_hint("x: {k: \"a\n  b[0]\", p: q r: s}\n"));
    }
}
