//! The tool port: [`ToolAdapter`], a [`ToolRegistry`] that dispatches by tool name, and the
//! built-in tools every run has.
//!
//! Built-ins (all paths are relative to the run's workspace; a path that would leave it,
//! through `..`, an absolute path or a symlink, is refused):
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `noop` | anything | `null` (measures engine overhead) |
//! | `echo` | anything | the arguments, unchanged |
//! | `read_file` | `path` | the file's text |
//! | `write_file` | `path`, `content` (string, or any JSON value written as JSON) | `{"path", "bytes"}` |
//! | `append_file` | `path`, `content` | `{"path", "bytes"}` |
//! | `list_dir` | `path` (default `.`) | sorted names, directories with a trailing `/` |
//! | `sleep` | `seconds` (at most 3600) | `{"slept_s"}` |

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentic_core::ErrorClass;
use agentic_core::diagnostic::did_you_mean;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One tool invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The step that calls.
    pub step: String,
    /// The tool's registered name.
    pub tool: String,
    /// The arguments (the step's resolved `with:`).
    pub args: Value,
    /// The run's workspace; file tools stay inside it.
    pub workspace: PathBuf,
}

/// What a tool returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The result value; a step exposes it as `outputs.result`, and the top-level keys of an
    /// object result as its declared outputs.
    pub result: Value,
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool of that name is registered.
    #[error("unknown tool `{tool}`{}; registered tools: {known}", hint.as_ref().map(|h| format!(" (did you mean `{h}`?)")).unwrap_or_default())]
    UnknownTool {
        /// The name asked for.
        tool: String,
        /// The closest registered name.
        hint: Option<String>,
        /// Every registered name, comma-separated.
        known: String,
    },
    /// The arguments are not what the tool takes.
    #[error("tool `{tool}`: {message}")]
    InvalidArgs {
        /// The tool.
        tool: String,
        /// What is wrong and what to pass instead.
        message: String,
    },
    /// A path argument would leave the workspace.
    #[error("tool `{tool}`: path `{path}` is outside the run's workspace; use a relative path without `..`")]
    PathEscapes {
        /// The tool.
        tool: String,
        /// The path as given.
        path: String,
    },
    /// The file system refused.
    #[error("tool `{tool}`: cannot access `{path}`: {message}")]
    Io {
        /// The tool.
        tool: String,
        /// The path as given.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The tool ran and failed.
    #[error("tool `{tool}` failed: {message}")]
    Failed {
        /// The tool.
        tool: String,
        /// What went wrong.
        message: String,
        /// Whether trying again may help.
        retryable: bool,
    },
}

impl ToolError {
    /// The error class that retry policies match on.
    pub fn class(&self) -> ErrorClass {
        match self {
            ToolError::UnknownTool { .. } | ToolError::InvalidArgs { .. } | ToolError::PathEscapes { .. } => {
                ErrorClass::Validation
            }
            ToolError::Io { .. } => ErrorClass::Infra,
            ToolError::Failed { retryable: true, .. } => ErrorClass::Transient,
            ToolError::Failed { .. } => ErrorClass::User,
        }
    }

    /// A short machine-readable type.
    pub fn error_type(&self) -> &'static str {
        match self {
            ToolError::UnknownTool { .. } => "unknown_tool",
            ToolError::InvalidArgs { .. } => "invalid_args",
            ToolError::PathEscapes { .. } => "path_escapes_workspace",
            ToolError::Io { .. } => "io_error",
            ToolError::Failed { .. } => "tool_failed",
        }
    }
}

/// A provider of one or more tools.
#[async_trait]
pub trait ToolAdapter: Send + Sync {
    /// The tool names this adapter serves.
    fn tools(&self) -> Vec<String>;

    /// Runs one call. Must be cancel-safe: the engine drops the future on timeout.
    async fn execute(&self, call: &ToolCall) -> Result<ToolResult, ToolError>;
}

/// Dispatches tool calls by name to registered adapters. Later registrations of a name win.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn ToolAdapter>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> ToolRegistry {
        ToolRegistry::default()
    }

    /// A registry with the built-in tools.
    pub fn with_builtins() -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        registry.register(Arc::new(BuiltinTools));
        registry
    }

    /// Registers every tool of `adapter`.
    pub fn register(&mut self, adapter: Arc<dyn ToolAdapter>) {
        for name in adapter.tools() {
            self.tools.insert(name, adapter.clone());
        }
    }

    /// Whether `tool` is registered.
    pub fn contains(&self, tool: &str) -> bool {
        self.tools.contains_key(tool)
    }

    /// The error for an unknown tool, with a suggestion.
    pub fn unknown(&self, tool: &str) -> ToolError {
        ToolError::UnknownTool {
            tool: tool.to_owned(),
            hint: did_you_mean(tool, self.tools.keys().map(String::as_str)).map(str::to_owned),
            known: self.tools.keys().cloned().collect::<Vec<_>>().join(", "),
        }
    }
}

#[async_trait]
impl ToolAdapter for ToolRegistry {
    fn tools(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    async fn execute(&self, call: &ToolCall) -> Result<ToolResult, ToolError> {
        match self.tools.get(&call.tool) {
            Some(adapter) => adapter.execute(call).await,
            None => Err(self.unknown(&call.tool)),
        }
    }
}

/// The built-in tools (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinTools;

const BUILTINS: [&str; 7] = ["noop", "echo", "read_file", "write_file", "append_file", "list_dir", "sleep"];

#[async_trait]
impl ToolAdapter for BuiltinTools {
    fn tools(&self) -> Vec<String> {
        BUILTINS.iter().map(|name| (*name).to_owned()).collect()
    }

    async fn execute(&self, call: &ToolCall) -> Result<ToolResult, ToolError> {
        let result = match call.tool.as_str() {
            "noop" => Value::Null,
            "echo" => call.args.clone(),
            "read_file" => {
                let path = string_arg(call, "path")?;
                let target = resolve_existing(call, &path)?;
                let text = tokio::fs::read_to_string(&target).await.map_err(|error| io_error(call, &path, &error))?;
                Value::String(text)
            }
            "write_file" | "append_file" => {
                let path = string_arg(call, "path")?;
                let content = match call.args.get("content") {
                    Some(Value::String(text)) => text.clone(),
                    Some(Value::Null) | None => {
                        return Err(ToolError::InvalidArgs {
                            tool: call.tool.clone(),
                            message: "`content` is missing or null; pass the text to write under `with.content`"
                                .to_owned(),
                        });
                    }
                    Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
                };
                let target = resolve_new(call, &path).await?;
                if call.tool == "write_file" {
                    tokio::fs::write(&target, content.as_bytes())
                        .await
                        .map_err(|error| io_error(call, &path, &error))?;
                } else {
                    use tokio::io::AsyncWriteExt;
                    let mut file = tokio::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&target)
                        .await
                        .map_err(|error| io_error(call, &path, &error))?;
                    file.write_all(content.as_bytes()).await.map_err(|error| io_error(call, &path, &error))?;
                    // tokio's File finishes writes in the background; without a flush the
                    // next step could read the file before the appended bytes land.
                    file.flush().await.map_err(|error| io_error(call, &path, &error))?;
                }
                json!({"path": path, "bytes": content.len()})
            }
            "list_dir" => {
                let path = match call.args.get("path") {
                    Some(Value::String(path)) => path.clone(),
                    _ => ".".to_owned(),
                };
                let target = resolve_existing(call, &path)?;
                let mut entries = tokio::fs::read_dir(&target).await.map_err(|error| io_error(call, &path, &error))?;
                let mut names = Vec::new();
                while let Some(entry) = entries.next_entry().await.map_err(|error| io_error(call, &path, &error))? {
                    let mut name = entry.file_name().to_string_lossy().into_owned();
                    if entry.file_type().await.is_ok_and(|kind| kind.is_dir()) {
                        name.push('/');
                    }
                    names.push(name);
                }
                names.sort();
                json!(names)
            }
            "sleep" => {
                let seconds = call.args.get("seconds").and_then(Value::as_f64).filter(|s| (0.0..=3600.0).contains(s));
                let Some(seconds) = seconds else {
                    return Err(ToolError::InvalidArgs {
                        tool: call.tool.clone(),
                        message: "`seconds` must be a number from 0 to 3600".to_owned(),
                    });
                };
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                json!({"slept_s": seconds})
            }
            other => {
                return Err(ToolError::UnknownTool {
                    tool: other.to_owned(),
                    hint: did_you_mean(other, BUILTINS).map(str::to_owned),
                    known: BUILTINS.join(", "),
                });
            }
        };
        Ok(ToolResult { result })
    }
}

fn string_arg(call: &ToolCall, name: &str) -> Result<String, ToolError> {
    match call.args.get(name) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        _ => Err(ToolError::InvalidArgs {
            tool: call.tool.clone(),
            message: format!("argument `{name}` must be a non-empty string; pass it under `with.{name}`"),
        }),
    }
}

fn io_error(call: &ToolCall, path: &str, error: &std::io::Error) -> ToolError {
    ToolError::Io { tool: call.tool.clone(), path: path.to_owned(), message: error.to_string() }
}

/// The workspace-relative path, checked lexically: relative, and no `..` above the root.
fn lexical(call: &ToolCall, path: &str) -> Result<PathBuf, ToolError> {
    let escapes = || ToolError::PathEscapes { tool: call.tool.clone(), path: path.to_owned() };
    let mut clean = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !clean.pop() {
                    return Err(escapes());
                }
            }
            Component::RootDir | Component::Prefix(_) => return Err(escapes()),
        }
    }
    Ok(clean)
}

fn canonical_workspace(call: &ToolCall) -> Result<PathBuf, ToolError> {
    call.workspace.canonicalize().map_err(|error| ToolError::Io {
        tool: call.tool.clone(),
        path: call.workspace.display().to_string(),
        message: format!("the workspace is not usable: {error}"),
    })
}

/// An existing path inside the workspace, after following symlinks.
fn resolve_existing(call: &ToolCall, path: &str) -> Result<PathBuf, ToolError> {
    let relative = lexical(call, path)?;
    let workspace = canonical_workspace(call)?;
    let target = workspace.join(relative).canonicalize().map_err(|error| io_error(call, path, &error))?;
    if !target.starts_with(&workspace) {
        return Err(ToolError::PathEscapes { tool: call.tool.clone(), path: path.to_owned() });
    }
    Ok(target)
}

/// A path to write inside the workspace: parents are created, and neither they nor an
/// existing file may lead out through a symlink.
async fn resolve_new(call: &ToolCall, path: &str) -> Result<PathBuf, ToolError> {
    let relative = lexical(call, path)?;
    let Some(file_name) = relative.file_name().map(ToOwned::to_owned) else {
        return Err(ToolError::InvalidArgs {
            tool: call.tool.clone(),
            message: format!("`{path}` names a directory; give a file path such as `notes/todo.txt`"),
        });
    };
    let workspace = canonical_workspace(call)?;
    let parent = workspace.join(relative.parent().unwrap_or(Path::new("")));
    tokio::fs::create_dir_all(&parent).await.map_err(|error| io_error(call, path, &error))?;
    let parent = parent.canonicalize().map_err(|error| io_error(call, path, &error))?;
    if !parent.starts_with(&workspace) {
        return Err(ToolError::PathEscapes { tool: call.tool.clone(), path: path.to_owned() });
    }
    let target = parent.join(file_name);
    if let Ok(existing) = target.canonicalize()
        && !existing.starts_with(&workspace)
    {
        return Err(ToolError::PathEscapes { tool: call.tool.clone(), path: path.to_owned() });
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(workspace: &Path, tool: &str, args: Value) -> ToolCall {
        ToolCall { step: "s".into(), tool: tool.into(), args, workspace: workspace.to_owned() }
    }

    #[tokio::test]
    async fn write_then_read_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let tools = ToolRegistry::with_builtins();
        let written = tools
            .execute(&call(dir.path(), "write_file", json!({"path": "notes/a.txt", "content": "hello"})))
            .await
            .unwrap();
        assert_eq!(written.result, json!({"path": "notes/a.txt", "bytes": 5}));
        tools.execute(&call(dir.path(), "append_file", json!({"path": "notes/a.txt", "content": "!"}))).await.unwrap();
        let read = tools.execute(&call(dir.path(), "read_file", json!({"path": "./notes/a.txt"}))).await.unwrap();
        assert_eq!(read.result, json!("hello!"));
        let listed = tools.execute(&call(dir.path(), "list_dir", json!({}))).await.unwrap();
        assert_eq!(listed.result, json!(["notes/"]));
    }

    #[tokio::test]
    async fn paths_leaving_the_workspace_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let tools = ToolRegistry::with_builtins();
        for (tool, path) in [
            ("read_file", "../secret"),
            ("read_file", "/etc/passwd"),
            ("read_file", "link/secret"),
            ("write_file", "a/../../x"),
            ("write_file", "link/new.txt"),
        ] {
            let error =
                tools.execute(&call(dir.path(), tool, json!({"path": path, "content": "x"}))).await.unwrap_err();
            assert!(matches!(error, ToolError::PathEscapes { .. }), "{tool} {path}: {error}");
            assert_eq!(error.class(), ErrorClass::Validation);
        }
        assert!(!outside.path().join("new.txt").exists());
    }

    #[tokio::test]
    async fn unknown_tools_and_bad_args_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let tools = ToolRegistry::with_builtins();
        let error = tools.execute(&call(dir.path(), "read_fil", json!({}))).await.unwrap_err();
        assert!(error.to_string().contains("did you mean `read_file`"), "{error}");
        let error = tools.execute(&call(dir.path(), "write_file", json!({"path": "a"}))).await.unwrap_err();
        assert!(error.to_string().contains("`content`"), "{error}");
        assert_eq!(tools.execute(&call(dir.path(), "noop", json!({}))).await.unwrap().result, Value::Null);
    }
}
