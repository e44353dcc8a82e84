//! `${...}` expressions: parsing, reference extraction and resolution.
//!
//! Grammar (whitespace allowed around tokens):
//!
//! ```text
//! template   := ( text | "$${" | "${" expression "}" )*
//! expression := path ( "??" literal )?
//! path       := ident ( "." ident | "[" integer "]" | "[" quoted-string "]" )*
//! literal    := quoted-string | number | true | false | null | "[]" | "{}"
//! ```
//!
//! Roots are `inputs`, `steps` and `attempt`. `$${` writes a literal `${`.
//! A string that is exactly one expression keeps the JSON type of its value; an expression
//! embedded in text is interpolated (strings as they are, `null` as nothing, other values as
//! JSON). Resolution never fails: a missing key or index anywhere in a path gives `null`,
//! and then the `??` default if there is one.
//!
//! ```
//! use agentic_core::expr::Template;
//! use serde_json::json;
//!
//! let context = json!({"steps": {"parse": {"outputs": {"ast": {"functions": ["main"]}}}}});
//! let template = Template::parse("${steps.parse.outputs.ast.functions[0]}").unwrap();
//! assert_eq!(template.render(&context), json!("main"));
//! let missing = Template::parse("${steps.nope.outputs.x ?? 'none'}").unwrap();
//! assert_eq!(missing.render(&context), json!("none"));
//! ```

use std::fmt;

use serde_json::Value;

/// One step of a path after its root.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// `.name` or `['name']`.
    Key(String),
    /// `[3]`.
    Index(usize),
}

/// A parsed `${...}` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    /// The root name: `inputs`, `steps` or `attempt`.
    pub root: String,
    /// What follows the root.
    pub segments: Vec<Segment>,
    /// The `?? default`, if any.
    pub default: Option<Value>,
    /// Byte offset of the `${` in the template text.
    pub offset: usize,
    /// The expression text between `${` and `}`.
    pub text: String,
}

impl Expression {
    /// Whether a missing value is acceptable (the expression has a `??` default).
    pub fn is_optional(&self) -> bool {
        self.default.is_some()
    }

    /// For `steps.<name>...` expressions, the step name.
    pub fn step_name(&self) -> Option<&str> {
        match (self.root.as_str(), self.segments.first()) {
            ("steps", Some(Segment::Key(name))) => Some(name),
            _ => None,
        }
    }

    /// Resolves against a context object `{inputs, steps, attempt}`; never fails.
    pub fn resolve(&self, context: &Value) -> Value {
        let mut current = context.get(&self.root);
        for segment in &self.segments {
            current = match (current, segment) {
                (Some(Value::Object(map)), Segment::Key(key)) => map.get(key),
                (Some(Value::Array(items)), Segment::Index(idx)) => items.get(*idx),
                // A string key that is a number also indexes an array: `outputs['0']`.
                (Some(Value::Array(items)), Segment::Key(key)) => {
                    key.parse::<usize>().ok().and_then(|idx| items.get(idx))
                }
                _ => None,
            };
        }
        match current {
            Some(Value::Null) | None => self.default.clone().unwrap_or(Value::Null),
            Some(value) => value.clone(),
        }
    }
}

impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${{{}}}", self.text)
    }
}

/// A piece of a template.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Literal text (with `$${` already turned into `${`).
    Text(String),
    /// An expression.
    Expr(Expression),
}

/// A string value that may contain `${...}` expressions.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The pieces in order.
    pub parts: Vec<Part>,
}

/// A syntax error in an expression.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ExprError {
    /// What is wrong.
    pub message: String,
    /// Byte offset in the template text where the problem is.
    pub offset: usize,
}

impl Template {
    /// Parses a template; text without `${` is a single literal part.
    pub fn parse(text: &str) -> Result<Template, ExprError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let bytes = text.as_bytes();
        let mut idx = 0;
        while idx < bytes.len() {
            if text[idx..].starts_with("$${") {
                literal.push_str("${");
                idx += 3;
            } else if text[idx..].starts_with("${") {
                let close = find_close(text, idx + 2).ok_or_else(|| ExprError {
                    message: "`${` is never closed; add the matching `}`".to_owned(),
                    offset: idx,
                })?;
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                let inner = &text[idx + 2..close];
                let expression = parse_expression(inner, idx)?;
                parts.push(Part::Expr(expression));
                idx = close + 1;
            } else {
                let ch = text[idx..].chars().next().expect("idx is on a char boundary");
                literal.push(ch);
                idx += ch.len_utf8();
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template { parts })
    }

    /// Every expression in the template.
    pub fn expressions(&self) -> impl Iterator<Item = &Expression> {
        self.parts.iter().filter_map(|part| match part {
            Part::Expr(expression) => Some(expression),
            Part::Text(_) => None,
        })
    }

    /// True when the template has no expression.
    pub fn is_literal(&self) -> bool {
        self.expressions().next().is_none()
    }

    /// Renders: a lone expression keeps its JSON type; otherwise the result is a string.
    pub fn render(&self, context: &Value) -> Value {
        match self.parts.as_slice() {
            [Part::Expr(expression)] => expression.resolve(context),
            parts => {
                let mut out = String::new();
                for part in parts {
                    match part {
                        Part::Text(text) => out.push_str(text),
                        Part::Expr(expression) => match expression.resolve(context) {
                            Value::Null => {}
                            Value::String(text) => out.push_str(&text),
                            other => out.push_str(&other.to_string()),
                        },
                    }
                }
                Value::String(out)
            }
        }
    }
}

/// Finds the `}` that closes an expression, skipping quoted strings and brackets.
fn find_close(text: &str, start: usize) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    for (offset, ch) in text[start..].char_indices() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(ch),
            (None, '[' | '{') => depth += 1,
            (None, ']') => depth = depth.saturating_sub(1),
            (None, '}') if depth == 0 => return Some(start + offset),
            (None, '}') => depth -= 1,
            _ => {}
        }
    }
    None
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    base: usize,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while self.text[self.pos..].starts_with(char::is_whitespace) {
            self.pos += self.text[self.pos..].chars().next().map_or(1, char::len_utf8);
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn error(&self, message: impl Into<String>) -> ExprError {
        ExprError { message: message.into(), offset: self.base }
    }

    fn ident(&mut self) -> Result<String, ExprError> {
        let rest = &self.text[self.pos..];
        let len = rest
            .char_indices()
            .take_while(|(i, c)| c.is_ascii_alphanumeric() || *c == '_' || (*i > 0 && *c == '-'))
            .map(|(i, c)| i + c.len_utf8())
            .last()
            .unwrap_or(0);
        if len == 0 || rest.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(self.error(format!(
                "expected a name in `${{{}}}` at `{}`",
                self.text,
                rest.chars().take(10).collect::<String>()
            )));
        }
        self.pos += len;
        Ok(rest[..len].to_owned())
    }

    fn quoted(&mut self) -> Result<String, ExprError> {
        let quote = self.peek().ok_or_else(|| self.error("expected a quoted string"))?;
        let rest = &self.text[self.pos + 1..];
        let end = rest.find(quote).ok_or_else(|| self.error(format!("unclosed quote in `${{{}}}`", self.text)))?;
        self.pos += end + 2;
        Ok(rest[..end].to_owned())
    }
}

/// Roots an expression may start with. `outputs` (the workflow's resolved outputs) is only
/// meaningful after a run, in an evaluation criterion's `score_from`; the validator rejects it
/// elsewhere.
const ROOTS: [&str; 4] = ["inputs", "steps", "attempt", "outputs"];

fn parse_expression(inner: &str, offset: usize) -> Result<Expression, ExprError> {
    let mut cursor = Cursor { text: inner, pos: 0, base: offset };
    cursor.skip_ws();
    if cursor.peek().is_none() {
        return Err(cursor.error("empty expression `${}`; write a path such as `${inputs.name}`"));
    }
    let root = cursor.ident()?;
    if !ROOTS.contains(&root.as_str()) {
        let hint = crate::diagnostic::did_you_mean(&root, ROOTS)
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(cursor.error(format!(
            "unknown root `{root}` in `${{{inner}}}`{hint}; expressions start with `inputs`, `steps` or `attempt`"
        )));
    }
    let mut segments = Vec::new();
    loop {
        cursor.skip_ws();
        match cursor.peek() {
            Some('.') => {
                cursor.pos += 1;
                segments.push(Segment::Key(cursor.ident()?));
            }
            Some('[') => {
                cursor.pos += 1;
                cursor.skip_ws();
                match cursor.peek() {
                    Some('\'' | '"') => segments.push(Segment::Key(cursor.quoted()?)),
                    Some(c) if c.is_ascii_digit() => {
                        let rest = &cursor.text[cursor.pos..];
                        let len = rest.chars().take_while(char::is_ascii_digit).count();
                        let index = rest[..len].parse::<usize>().map_err(|_| cursor.error("index is too large"))?;
                        cursor.pos += len;
                        segments.push(Segment::Index(index));
                    }
                    _ => {
                        return Err(
                            cursor.error(format!("expected an index or a quoted key after `[` in `${{{inner}}}`"))
                        );
                    }
                }
                cursor.skip_ws();
                if cursor.peek() != Some(']') {
                    return Err(cursor.error(format!("expected `]` in `${{{inner}}}`")));
                }
                cursor.pos += 1;
            }
            _ => break,
        }
    }
    cursor.skip_ws();
    let mut default = None;
    if cursor.text[cursor.pos..].starts_with("??") {
        cursor.pos += 2;
        cursor.skip_ws();
        default = Some(parse_literal(&mut cursor, inner)?);
        cursor.skip_ws();
    }
    if cursor.pos != inner.len() {
        return Err(cursor.error(format!(
            "unexpected `{}` in `${{{inner}}}`; expressions are a path and an optional `?? default`",
            &inner[cursor.pos..]
        )));
    }
    Ok(Expression { root, segments, default, offset, text: inner.trim().to_owned() })
}

fn parse_literal(cursor: &mut Cursor<'_>, inner: &str) -> Result<Value, ExprError> {
    match cursor.peek() {
        Some('\'' | '"') => Ok(Value::String(cursor.quoted()?)),
        Some(_) => {
            let rest = cursor.text[cursor.pos..].trim_end();
            let value = match rest {
                "[]" => Value::Array(Vec::new()),
                "{}" => Value::Object(serde_json::Map::new()),
                _ => serde_json::from_str::<Value>(rest).ok().filter(|v| !v.is_object() && !v.is_array()).ok_or_else(
                    || {
                        cursor.error(format!(
                            "the default in `${{{inner}}}` must be a quoted string, a number, true, false, null, [] or {{}}"
                        ))
                    },
                )?,
            };
            cursor.pos += rest.len();
            Ok(value)
        }
        None => Err(cursor.error(format!("missing default after `??` in `${{{inner}}}`"))),
    }
}

/// Renders every string inside a JSON value as a template.
pub fn render_value(value: &Value, context: &Value) -> Result<Value, ExprError> {
    Ok(match value {
        Value::String(text) => Template::parse(text)?.render(context),
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| render_value(item, context)).collect::<Result<_, _>>()?)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| Ok((key.clone(), render_value(item, context)?)))
                .collect::<Result<_, ExprError>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn context() -> Value {
        json!({
            "inputs": {"repo": "/tmp/r", "n": 3, "flag": false},
            "steps": {
                "parse_code": {"outputs": {"ast": {"functions": ["main", "helper"]}, "weird key": 1}},
                "list": {"outputs": {"items": [{"name": "a"}]}}
            }
        })
    }

    fn render(text: &str) -> Value {
        Template::parse(text).unwrap().render(&context())
    }

    #[test]
    fn test_resolve_deep_nested_step_output() {
        assert_eq!(render("${steps.parse_code.outputs.ast.functions[0]}"), json!("main"));
        assert_eq!(render("${steps.list.outputs.items[0].name}"), json!("a"));
    }

    #[test]
    fn test_resolve_missing_intermediate_returns_none() {
        assert_eq!(render("${steps.nonexistent.outputs.foo}"), Value::Null);
        assert_eq!(render("${steps.parse_code.outputs.ast.functions[9].x[2]}"), Value::Null);
        assert_eq!(render("${inputs.repo.not_an_object}"), Value::Null);
    }

    #[test]
    fn bracket_keys_and_defaults() {
        assert_eq!(render("${steps.parse_code.outputs['weird key']}"), json!(1));
        assert_eq!(render("${inputs.missing ?? 'x'}"), json!("x"));
        assert_eq!(render("${inputs.missing ?? 5}"), json!(5));
        assert_eq!(render("${inputs.missing ?? []}"), json!([]));
        assert_eq!(render("${inputs.flag ?? true}"), json!(false), "false is a value, not missing");
    }

    #[test]
    fn whole_string_keeps_type_embedded_interpolates() {
        assert_eq!(render("${inputs.n}"), json!(3));
        assert_eq!(render("n=${inputs.n}, repo=${inputs.repo}, none=${inputs.nope}"), json!("n=3, repo=/tmp/r, none="));
        assert_eq!(render("  ${inputs.n}"), json!("  3"));
    }

    #[test]
    fn dollar_dollar_is_a_literal() {
        assert_eq!(render("cost: $${HOME} and ${inputs.n}"), json!("cost: ${HOME} and 3"));
        assert!(Template::parse("$${inputs.n}").unwrap().is_literal());
    }

    #[test]
    fn syntax_errors_are_reported_not_panicked() {
        for bad in [
            "${",
            "${}",
            "${inputs.}",
            "${inputs..x}",
            "${foo.bar}",
            "${inputs.x[}",
            "${inputs.x ?? }",
            "${inputs.x y}",
            "${inputs[0}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn step_name_and_optional() {
        let template = Template::parse("${steps.a.outputs.x ?? null} ${inputs.y}").unwrap();
        let expressions: Vec<_> = template.expressions().collect();
        assert_eq!(expressions[0].step_name(), Some("a"));
        assert!(expressions[0].is_optional());
        assert_eq!(expressions[1].step_name(), None);
    }

    #[test]
    fn render_value_walks_nested_json() {
        let value = json!({"a": ["${inputs.n}", {"b": "x-${inputs.repo}"}], "c": 1});
        assert_eq!(render_value(&value, &context()).unwrap(), json!({"a": [3, {"b": "x-/tmp/r"}], "c": 1}));
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(text in ".{0,64}") {
            let _ = Template::parse(&text);
        }

        #[test]
        fn parse_never_panics_on_expression_like_text(text in "\\$\\{[a-z.\\[\\]'\"0-9? ]{0,24}\\}?") {
            if let Ok(template) = Template::parse(&text) {
                let _ = template.render(&context());
            }
        }
    }
}
