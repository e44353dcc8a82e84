//! The run directory, `runs/<run_id>/`:
//!
//! ```text
//! run.json              the resolved workflow, inputs, versions, protections; status once done
//! events.jsonl          every canonical event, in seq order
//! result.json           the final WorkflowResult and its evaluation
//! logs/<step>.stdout    per-step output (agent: the reply; command: stdout)
//! logs/<step>.prompt    agent steps: the rendered prompt
//! logs/<step>.stderr    command steps' stderr
//! workspace/            the default workspace of tool and command steps
//! attempts/<N>/         iterative runs: result.json, evaluation.json, feedback.json, logs/
//! ```

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// A created run directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    /// Creates `runs_dir/<run_id>/` (and `runs_dir` when missing).
    pub fn create(runs_dir: &Path, run_id: &str) -> io::Result<RunDir> {
        let root = runs_dir.join(run_id);
        std::fs::create_dir_all(&root)?;
        Ok(RunDir { root })
    }

    /// Opens an existing run directory.
    pub fn open(root: &Path) -> RunDir {
        RunDir { root: root.to_owned() }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `events.jsonl`.
    pub fn events_path(&self) -> PathBuf {
        self.root.join("events.jsonl")
    }

    /// `workspace/`.
    pub fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }

    /// `attempts/<number>/`.
    pub fn attempt_dir(&self, number: u32) -> PathBuf {
        self.root.join("attempts").join(number.to_string())
    }

    /// Where step logs go: `logs/`, or `attempts/<N>/logs/` in iterative runs.
    pub fn logs_dir(&self, attempt: Option<u32>) -> PathBuf {
        match attempt {
            Some(number) => self.attempt_dir(number).join("logs"),
            None => self.root.join("logs"),
        }
    }

    /// Writes `value` as pretty JSON to `relative` (parents created).
    pub fn write_json(&self, relative: impl AsRef<Path>, value: &impl Serialize) -> io::Result<PathBuf> {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        std::fs::write(&path, text + "\n")?;
        Ok(path)
    }
}

/// The artifacts of one attempt of an iterative run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptArtifacts {
    /// The attempt number (1-based).
    pub number: u32,
    /// Files under `attempts/<N>/`, relative to it, sorted.
    pub files: Vec<PathBuf>,
}

/// Lists the attempts of a run directory and their files, by attempt number.
pub fn list_attempts(run_dir: &Path) -> io::Result<Vec<AttemptArtifacts>> {
    let attempts = run_dir.join("attempts");
    if !attempts.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&attempts)? {
        let entry = entry?;
        let Some(number) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        let mut files = Vec::new();
        collect_files(&entry.path(), Path::new(""), &mut files)?;
        files.sort();
        out.push(AttemptArtifacts { number, files });
    }
    out.sort_by_key(|attempt| attempt.number);
    Ok(out)
}

fn collect_files(dir: &Path, relative: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = relative.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            collect_files(&entry.path(), &path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// A file-name-safe form of a step name (step names are plain already; this is defence).
pub(crate) fn file_stem(step: &str) -> String {
    step.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}
