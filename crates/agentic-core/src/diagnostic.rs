//! Diagnostics: one problem found in a file, with where it is, a stable code and a hint.
//!
//! Loaders never stop at the first problem: they return every diagnostic they can find.
//! Codes are stable kebab-case names (for example `unknown-reference`); tools and tests
//! match on them, so a code is never renamed once shipped.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A line and column, both 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Position {
    /// The start of a file.
    pub const START: Position = Position { line: 1, column: 1 };
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The file cannot be used as it is.
    Error,
    /// The file works, but probably not as meant.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// The file, as the user named it; set by whoever knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Where in the file, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    /// The JSON pointer of the offending value inside the document, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// Error or warning.
    pub severity: Severity,
    /// Stable code, for example `unknown-reference`.
    pub code: String,
    /// What is wrong, naming the offending value.
    pub message: String,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A new error with a code and message.
    pub fn error(code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: None,
            position: None,
            pointer: None,
            severity: Severity::Error,
            code: code.to_owned(),
            message: message.into(),
            hint: None,
        }
    }

    /// A new warning with a code and message.
    pub fn warning(code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(code, message) }
    }

    /// Sets the position.
    pub fn at(mut self, position: Position) -> Diagnostic {
        self.position = Some(position);
        self
    }

    /// Sets the JSON pointer.
    pub fn at_pointer(mut self, pointer: impl Into<String>) -> Diagnostic {
        self.pointer = Some(pointer.into());
        self
    }

    /// Sets the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    /// Sets the file.
    pub fn in_file(mut self, file: impl Into<String>) -> Diagnostic {
        self.file = Some(file.into());
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Renders `path:line:col: error[code]: message` and an indented `hint:` line.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let position = self.position.unwrap_or(Position::START);
        write!(
            f,
            "{}:{}:{}: {}[{}]: {}",
            self.file.as_deref().unwrap_or("<input>"),
            position.line,
            position.column,
            self.severity,
            self.code,
            Printable(&self.message)
        )?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {}", Printable(hint))?;
        }
        Ok(())
    }
}

/// Text from a user's file as a terminal shows it safely: control characters (an id
/// holding ESC or a carriage return would move the cursor or hide the line) are written as
/// escapes (`\u{1b}`); line feeds and tabs stay.
struct Printable<'a>(&'a str);

impl fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() && c != '\n' && c != '\t' {
                write!(f, "{}", c.escape_unicode())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Sorts diagnostics by file and position, keeping the order of equal positions.
pub fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| (&a.file, a.position).cmp(&(&b.file, b.position)));
}

/// The closest candidate to `word` by edit distance, if it is close enough to be a typo.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        // Case is a typo too (`HIGH` for `high`), and the closest one.
        let distance = if word != candidate && word.to_lowercase() == candidate.to_lowercase() {
            0
        } else {
            edit_distance(word, candidate)
        };
        let limit = (word.chars().count().max(candidate.chars().count()) / 3).max(1);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current[j + 1] = (previous[j] + cost).min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Control characters from a file (an id holding ESC or CR) are printed as escapes.
    #[test]
    fn control_characters_are_printed_as_escapes() {
        let diagnostic = Diagnostic::error("id-lookalike", "id `P1-01\u{1b}[2K\rP1-01` is odd\nsecond line")
            .with_hint("rename `a\u{7}b`");
        let text = diagnostic.to_string();
        assert!(text.contains("id `P1-01\\u{1b}[2K\\u{d}P1-01` is odd\nsecond line"), "{text}");
        assert!(text.ends_with("hint: rename `a\\u{7}b`"), "{text}");
    }

    #[test]
    fn renders_like_a_compiler() {
        let diagnostic = Diagnostic::error("unknown-key", "unknown key `depnds_on`")
            .at(Position { line: 4, column: 5 })
            .with_hint("did you mean `depends_on`?")
            .in_file("wf.yaml");
        assert_eq!(
            diagnostic.to_string(),
            "wf.yaml:4:5: error[unknown-key]: unknown key `depnds_on`\n  hint: did you mean `depends_on`?"
        );
    }

    #[test]
    fn did_you_mean_finds_typos_only() {
        let keys = ["depends_on", "timeout_s", "name"];
        assert_eq!(did_you_mean("depnds_on", keys), Some("depends_on"));
        assert_eq!(did_you_mean("timeout", keys), Some("timeout_s"));
        assert_eq!(did_you_mean("colour", keys), None);
        assert_eq!(did_you_mean("HIGH", ["critical", "high", "medium", "low"]), Some("high"));
    }
}
