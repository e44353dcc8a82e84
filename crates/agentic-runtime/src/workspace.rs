//! [`Workspace`]: the fresh directory a task runs in, and the [`Artifact`]s it leaves.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{Result, RuntimeError};

/// Most files [`collect_artifacts`](crate::IsolatedTaskRuntime::collect_artifacts) lists.
pub const MAX_ARTIFACTS: usize = 10_000;

/// The directories one task runs in.
///
/// A workspace made by [`setup`](crate::IsolatedTaskRuntime::setup) is a fresh, private
/// (mode 0700) tree: `root/work` (the working directory, where artifacts are collected from),
/// `root/home` (`HOME`) and `root/tmp` (`TMPDIR`). One made by
/// [`setup_in`](crate::IsolatedTaskRuntime::setup_in) uses an existing directory as the work
/// directory and a fresh `root` for `home` and `tmp` only.
///
/// Under Landlock only the work directory and `root` are writable.
/// [`cleanup`](crate::IsolatedTaskRuntime::cleanup) removes `root` (never an adopted work
/// directory); dropping a workspace removes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workspace {
    id: String,
    root: PathBuf,
    work_dir: PathBuf,
}

impl Workspace {
    /// A unique name, also the last component of `root`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The directory the runtime created and `cleanup` removes.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The working directory of the task, where artifacts are collected from.
    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    /// `true` when the work directory is an existing directory the caller owns (`setup_in`).
    pub fn is_adopted(&self) -> bool {
        !self.work_dir.starts_with(&self.root)
    }

    /// `HOME` of the task.
    pub fn home_dir(&self) -> PathBuf {
        self.root.join("home")
    }

    /// `TMPDIR` of the task.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The directories the task may write to under Landlock.
    pub fn writable_dirs(&self) -> Vec<&Path> {
        if self.is_adopted() { vec![&self.work_dir, &self.root] } else { vec![&self.root] }
    }

    /// Creates a fresh workspace under `base`, handed to `owner` (uid, gid) when given.
    /// With `work_dir`, that existing directory becomes the work directory.
    pub(crate) fn create(base: &Path, work_dir: Option<&Path>, owner: Option<(u32, u32)>) -> Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let adopted = match work_dir {
            Some(dir) => {
                let canonical = dir.canonicalize().map_err(|source| RuntimeError::Workspace {
                    path: dir.to_path_buf(),
                    action: "open",
                    source,
                })?;
                if !canonical.is_dir() {
                    return Err(RuntimeError::InvalidRequest {
                        reason: format!("work directory `{}` is not a directory", dir.display()),
                    });
                }
                Some(canonical)
            }
            None => None,
        };
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let id = format!("agentic-ws-{}-{}-{nanos:08x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let root = base.join(&id);
        let mut builder = std::fs::DirBuilder::new();
        builder.mode(0o700);
        // `create` (not `create_all`) on the root: it fails when the name already exists,
        // so two runs never share a workspace.
        builder.create(&root).map_err(|source| RuntimeError::Workspace {
            path: root.clone(),
            action: "create",
            source,
        })?;
        let work_dir = adopted.clone().unwrap_or_else(|| root.join("work"));
        let workspace = Self { id, root, work_dir };
        let mut created = vec![workspace.home_dir(), workspace.tmp_dir()];
        if adopted.is_none() {
            created.push(workspace.work_dir.clone());
        }
        for dir in &created {
            builder.create(dir).map_err(|source| RuntimeError::Workspace {
                path: dir.clone(),
                action: "create",
                source,
            })?;
        }
        if let Some((uid, gid)) = owner {
            created.push(workspace.root.clone());
            if adopted.is_some() {
                created.push(workspace.work_dir.clone());
            }
            for dir in &created {
                std::os::unix::fs::chown(dir, Some(uid), Some(gid)).map_err(|source| RuntimeError::Workspace {
                    path: dir.clone(),
                    action: "chown",
                    source,
                })?;
            }
        }
        Ok(workspace)
    }

    /// Removes the workspace; a workspace that is already gone is fine.
    pub(crate) fn remove(&self) -> Result<()> {
        match std::fs::remove_dir_all(&self.root) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(RuntimeError::Workspace { path: self.root.clone(), action: "remove", source }),
        }
    }

    /// Resolves a working directory given relative to `work_dir`, refusing anything that escapes it.
    pub(crate) fn resolve_workdir(&self, workdir: Option<&Path>) -> Result<PathBuf> {
        if !self.work_dir.is_dir() {
            return Err(RuntimeError::InvalidRequest {
                reason: format!(
                    "workspace work directory `{}` is gone; was the workspace cleaned up? call `setup` again",
                    self.work_dir.display()
                ),
            });
        }
        let Some(relative) = workdir else {
            return Ok(self.work_dir.clone());
        };
        let escapes = relative.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
        if escapes {
            return Err(RuntimeError::InvalidRequest {
                reason: format!(
                    "working directory `{}` must be a relative path inside the workspace, without `..`",
                    relative.display()
                ),
            });
        }
        let path = self.work_dir.join(relative);
        // A symbolic link must not lead the working directory out of the workspace.
        let inside = match (path.canonicalize(), self.work_dir.canonicalize()) {
            (Ok(resolved), Ok(work_dir)) => resolved.starts_with(work_dir),
            _ => true,
        };
        if !inside {
            return Err(RuntimeError::InvalidRequest {
                reason: format!(
                    "working directory `{}` leads outside the workspace through a symbolic link; use a real directory",
                    relative.display()
                ),
            });
        }
        if !path.is_dir() {
            return Err(RuntimeError::InvalidRequest {
                reason: format!(
                    "working directory `{}` does not exist in the workspace; create it in an earlier step",
                    relative.display()
                ),
            });
        }
        Ok(path)
    }

    /// Lists the regular files under `work_dir` (symbolic links are not followed).
    pub(crate) fn list_artifacts(&self) -> Result<Vec<Artifact>> {
        let work_dir = self.work_dir.clone();
        let mut artifacts = Vec::new();
        let mut pending = vec![work_dir.clone()];
        while let Some(dir) = pending.pop() {
            let entries = std::fs::read_dir(&dir).map_err(|source| RuntimeError::Workspace {
                path: dir.clone(),
                action: "list",
                source,
            })?;
            for entry in entries {
                let entry =
                    entry.map_err(|source| RuntimeError::Workspace { path: dir.clone(), action: "list", source })?;
                let path = entry.path();
                let metadata = entry.metadata().map_err(|source| RuntimeError::Workspace {
                    path: path.clone(),
                    action: "list",
                    source,
                })?;
                if metadata.is_dir() {
                    pending.push(path);
                } else if metadata.is_file() && artifacts.len() < MAX_ARTIFACTS {
                    let relative = path.strip_prefix(&work_dir).unwrap_or(&path).to_path_buf();
                    artifacts.push(Artifact { relative_path: relative, path, size_bytes: metadata.len() });
                }
            }
        }
        artifacts.sort_by(|a, b| a.relative_path.cmp(&b.relative_path));
        Ok(artifacts)
    }
}

/// A file a task left in its work directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// The path relative to the work directory.
    pub relative_path: PathBuf,
    /// The absolute path (valid until cleanup).
    pub path: PathBuf,
    /// The file size in bytes.
    pub size_bytes: u64,
}
