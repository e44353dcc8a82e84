//! Errors of the judge crate.

use agentic_adapters::ProviderError;

/// Why a judge operation failed as a whole. A criterion whose reply stays invalid is not an
/// error here: it is recorded as `errored` in the verdict.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// A file could not be read or written.
    #[error("cannot access `{path}`: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// A configuration file is invalid.
    #[error("invalid judge configuration `{path}`: {message}")]
    Config {
        /// The file.
        path: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A golden set, baseline or rubric file is invalid (each diagnostic names line and column).
    #[error("invalid {kind} `{path}`:\n{}", diagnostics.join("\n"))]
    Document {
        /// What the file is.
        kind: &'static str,
        /// The file.
        path: String,
        /// Rendered diagnostics.
        diagnostics: Vec<String>,
    },
    /// The judge input cannot be judged (no criteria, an unknown criterion...).
    #[error("{0}")]
    Input(String),
    /// A prompt template failed to render.
    #[error("prompt template `{template}` failed to render: {message}; fix the template or its variables")]
    Template {
        /// The template id.
        template: String,
        /// The minijinja error.
        message: String,
    },
    /// The model client could not be built.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The scoring engine refused the hybrid score request.
    #[error("hybrid scoring failed: {0}")]
    Scoring(#[from] agentic_eval::ScoreError),
    /// The verdict cache failed.
    #[error("judge cache `{path}`: {message}; delete the file to start a fresh cache")]
    Cache {
        /// The database file.
        path: String,
        /// The driver error.
        message: String,
    },
}
