//! [`DockerRuntime`]: the opt-in Docker choice. This build has no Docker client, so every
//! lifecycle call fails with [`RuntimeError::Unavailable`]; the Docker runtime comes in its own issue.

use std::path::Path;

use async_trait::async_trait;

use agentic_core::workflow::RuntimeKind;

use crate::IsolatedTaskRuntime;
use crate::error::{Result, RuntimeError};
use crate::outcome::ExecutionOutcome;
use crate::request::ExecutionRequest;
use crate::workspace::{Artifact, Workspace};

/// Where a local Docker engine usually listens.
const DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// The Docker runtime as chosen by `runtime: {kind: docker}`.
///
/// It is honest about not working yet: [`setup`](IsolatedTaskRuntime::setup) fails with an
/// error that says so, and whether a Docker engine socket exists on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerRuntime {
    /// The image the steps would run in.
    pub image: String,
}

impl DockerRuntime {
    fn unavailable(&self) -> RuntimeError {
        let engine = if Path::new(DOCKER_SOCKET).exists() {
            format!("a Docker engine socket exists at `{DOCKER_SOCKET}`, but this build cannot talk to it")
        } else {
            format!("no Docker engine answers here either (no socket at `{DOCKER_SOCKET}`)")
        };
        RuntimeError::Unavailable {
            runtime: "docker",
            reason: format!(
                "this build of agentic has no Docker client yet, so image `{}` cannot run; {engine}; \
                 use `runtime: {{kind: subprocess}}` (the default) instead",
                self.image
            ),
        }
    }
}

#[async_trait]
impl IsolatedTaskRuntime for DockerRuntime {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Docker
    }

    async fn setup(&self) -> Result<Workspace> {
        Err(self.unavailable())
    }

    async fn setup_in(&self, _work_dir: &Path) -> Result<Workspace> {
        Err(self.unavailable())
    }

    async fn execute(&self, _workspace: &Workspace, _request: &ExecutionRequest) -> Result<ExecutionOutcome> {
        Err(self.unavailable())
    }

    async fn collect_artifacts(&self, _workspace: &Workspace) -> Result<Vec<Artifact>> {
        Err(self.unavailable())
    }

    async fn cleanup(&self, _workspace: &Workspace) -> Result<()> {
        Err(self.unavailable())
    }
}
