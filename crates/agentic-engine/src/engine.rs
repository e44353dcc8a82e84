//! [`Engine`]: checks that a workflow can run here, sets up the run (id, directory,
//! workspace, event sinks), hands it to the workflow's strategy and records the outcome.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use agentic_adapters::{AgentAdapter, EventSink, JsonlSink, ToolAdapter, ToolRegistry, WorkflowAdapter, WorkflowError};
use agentic_core::diagnostic::did_you_mean;
use agentic_core::workflow::StepKind;
use agentic_core::{
    CanonicalEvent, EventStatus, EventType, StepStatus, ValidatedWorkflow, WorkflowResult, check_inputs,
};
use async_trait::async_trait;
use chrono::Utc;
use serde_json::{Map, Value, json};

use crate::cancel::CancelToken;
use crate::command::CommandRunner;
use crate::evaluate::{GateEvaluator, RunEvaluation, RunEvaluator};
use crate::events::EventBus;
use crate::run::RunShared;
use crate::rundir::RunDir;
use crate::strategy::{AttemptSummary, ExecutionStrategy, RunHandle, StopReason, strategy_for};

/// Engine settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSettings {
    /// Most steps running at once when the workflow sets no `max_parallel`.
    pub max_parallel: usize,
    /// Run workflows marked `experimental: true`.
    pub allow_experimental: bool,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings { max_parallel: 8, allow_experimental: false }
    }
}

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The inputs do not fit the workflow.
    #[error("invalid inputs for workflow `{workflow}`:\n  - {}", reasons.join("\n  - "))]
    InvalidInputs {
        /// The workflow.
        workflow: String,
        /// One reason per problem.
        reasons: Vec<String>,
    },
    /// The workflow is experimental and the opt-in is missing.
    #[error("workflow `{workflow}` is experimental; pass `--allow-experimental` to run it")]
    Experimental {
        /// The workflow.
        workflow: String,
    },
    /// A tool step names a tool nobody registered.
    #[error("step `{step}` uses unknown tool `{tool}`{}; registered tools: {known}", hint.as_ref().map(|h| format!(" (did you mean `{h}`?)")).unwrap_or_default())]
    UnknownTool {
        /// The step.
        step: String,
        /// The tool asked for.
        tool: String,
        /// The closest registered name.
        hint: Option<String>,
        /// Every registered tool.
        known: String,
    },
    /// The workflow has agent steps and no agent (model provider) is configured.
    #[error("workflow `{workflow}` has agent steps ({}) but no model provider is configured; pass `--provider replay` (recorded answers) or `--provider openai`", steps.join(", "))]
    NoAgent {
        /// The workflow.
        workflow: String,
        /// The agent steps.
        steps: Vec<String>,
    },
    /// The run directory or workspace could not be set up.
    #[error("cannot set up the run: {0}")]
    Setup(String),
}

/// What to run and where.
#[derive(Clone, Default)]
pub struct RunRequest {
    /// Workflow inputs; missing ones take their defaults.
    pub inputs: Map<String, Value>,
    /// The run id (default: a new UUID v7).
    pub run_id: Option<String>,
    /// Where `runs/<run_id>/` is created; `None` writes no run directory.
    pub runs_dir: Option<PathBuf>,
    /// The workspace of tool and command steps (default: `<run dir>/workspace`, or a
    /// temporary directory removed after the run when there is no run directory).
    pub workspace: Option<PathBuf>,
    /// Extra event sinks (progress display, SSE).
    pub sinks: Vec<Arc<dyn EventSink>>,
    /// Cancels the run.
    pub cancel: CancelToken,
    /// Judges attempts (default: the engine's hard gates).
    pub evaluator: Option<Arc<dyn RunEvaluator>>,
    /// Facts recorded in `run.json` and the result's metadata (dataset, sample, provider).
    pub metadata: Map<String, Value>,
    /// Overrides the workflow's strategy.
    pub strategy: Option<Arc<dyn ExecutionStrategy>>,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// The final attempt's result.
    pub result: WorkflowResult,
    /// Its evaluation.
    pub evaluation: RunEvaluation,
    /// Every attempt of an iterative run.
    pub attempts: Vec<AttemptSummary>,
    /// Why the strategy stopped.
    pub stop_reason: StopReason,
    /// The strategy used.
    pub strategy: String,
    /// `runs/<run_id>/`, when one was written.
    pub run_dir: Option<PathBuf>,
}

/// The workflow engine.
#[derive(Clone)]
pub struct Engine {
    commands: Arc<dyn CommandRunner>,
    agent: Option<Arc<dyn AgentAdapter>>,
    tools: Arc<ToolRegistry>,
    settings: EngineSettings,
}

impl Engine {
    /// An engine that runs command steps with `commands`, has the built-in tools and no agent.
    pub fn new(commands: Arc<dyn CommandRunner>) -> Engine {
        Engine {
            commands,
            agent: None,
            tools: Arc::new(ToolRegistry::with_builtins()),
            settings: EngineSettings::default(),
        }
    }

    /// Sets the agent that answers agent steps.
    pub fn with_agent(mut self, agent: Arc<dyn AgentAdapter>) -> Engine {
        self.agent = Some(agent);
        self
    }

    /// Replaces the tool registry.
    pub fn with_tools(mut self, tools: ToolRegistry) -> Engine {
        self.tools = Arc::new(tools);
        self
    }

    /// Replaces the settings.
    pub fn with_settings(mut self, settings: EngineSettings) -> Engine {
        self.settings = settings;
        self
    }

    /// The command runner.
    pub fn commands(&self) -> &Arc<dyn CommandRunner> {
        &self.commands
    }

    /// Checks that `workflow` can run on this engine: the experimental opt-in, registered
    /// tools, an agent for agent steps.
    pub fn check(&self, workflow: &ValidatedWorkflow) -> Result<(), EngineError> {
        let definition = workflow.workflow();
        if definition.experimental && !self.settings.allow_experimental {
            return Err(EngineError::Experimental { workflow: definition.name.clone() });
        }
        for step in &definition.steps {
            if step.kind == StepKind::Tool {
                let tool = step.tool.as_deref().unwrap_or_default();
                if !self.tools.contains(tool) {
                    let names = self.tools.tools();
                    return Err(EngineError::UnknownTool {
                        step: step.name.clone(),
                        tool: tool.to_owned(),
                        hint: did_you_mean(tool, names.iter().map(String::as_str)).map(str::to_owned),
                        known: names.join(", "),
                    });
                }
            }
        }
        let agent_steps: Vec<String> =
            definition.steps.iter().filter(|step| step.kind == StepKind::Agent).map(|step| step.name.clone()).collect();
        if !agent_steps.is_empty() && self.agent.is_none() {
            return Err(EngineError::NoAgent { workflow: definition.name.clone(), steps: agent_steps });
        }
        Ok(())
    }

    /// The inputs a run uses: the given ones plus defaults, checked against the workflow.
    pub fn resolve_inputs(
        workflow: &ValidatedWorkflow,
        given: &Map<String, Value>,
    ) -> Result<Map<String, Value>, EngineError> {
        let definition = workflow.workflow();
        let mut inputs = given.clone();
        for (name, spec) in &definition.inputs {
            if !inputs.contains_key(name)
                && let Some(default) = &spec.default
            {
                inputs.insert(name.clone(), default.clone());
            }
        }
        check_inputs(definition, &inputs)
            .map_err(|reasons| EngineError::InvalidInputs { workflow: definition.name.clone(), reasons })?;
        Ok(inputs)
    }

    /// Runs `workflow`. Errors mean the run could not start; a run that ran and failed is
    /// an `Ok` outcome with a failed status.
    pub async fn run(&self, workflow: Arc<ValidatedWorkflow>, request: RunRequest) -> Result<RunOutcome, EngineError> {
        self.check(&workflow)?;
        let inputs = Engine::resolve_inputs(&workflow, &request.inputs)?;
        let definition = workflow.workflow();
        let run_id = request.run_id.clone().unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        let run_dir = match &request.runs_dir {
            Some(runs_dir) => Some(RunDir::create(runs_dir, &run_id).map_err(|error| {
                EngineError::Setup(format!("cannot create `{}`: {error}", runs_dir.join(&run_id).display()))
            })?),
            None => None,
        };
        let (workspace, temporary_workspace) = match (&request.workspace, &run_dir) {
            (Some(workspace), _) => (workspace.clone(), false),
            (None, Some(run_dir)) => (run_dir.workspace(), false),
            (None, None) => (std::env::temp_dir().join(format!("agentic-{run_id}")), true),
        };
        std::fs::create_dir_all(&workspace).map_err(|error| {
            EngineError::Setup(format!("cannot create the workspace `{}`: {error}", workspace.display()))
        })?;
        let mut sinks: Vec<Arc<dyn EventSink>> = Vec::new();
        if let Some(run_dir) = &run_dir {
            let sink = JsonlSink::create(&run_dir.events_path()).map_err(|error| {
                EngineError::Setup(format!("cannot create `{}`: {error}", run_dir.events_path().display()))
            })?;
            sinks.push(Arc::new(sink));
        }
        sinks.extend(request.sinks.iter().cloned());
        let bus = Arc::new(EventBus::new(run_id.clone(), sinks));
        let strategy: Arc<dyn ExecutionStrategy> =
            request.strategy.clone().unwrap_or_else(|| Arc::from(strategy_for(&definition.strategy)));
        let evaluator = request.evaluator.clone().unwrap_or_else(|| Arc::new(GateEvaluator));
        let max_parallel = definition
            .max_parallel
            .and_then(|max| usize::try_from(max).ok())
            .unwrap_or(self.settings.max_parallel)
            .max(1);
        let started_at = Utc::now();
        let started = Instant::now();
        let mut run_json = if run_dir.is_none() {
            Value::Null
        } else {
            json!({
            "run_id": run_id,
            "status": "running",
            "started_at": started_at,
            "workflow": {
                "name": definition.name,
                "version": definition.version.to_string(),
                "experimental": definition.experimental,
                "definition": definition,
            },
            "inputs": inputs,
            "strategy": strategy.name(),
            "max_parallel": max_parallel,
            "workspace": workspace,
            "versions": {"agentic": env!("CARGO_PKG_VERSION")},
            "protections": {
                "command_runner": self.commands.name(),
                "commands": self.commands.protections(),
                "tools_confined_to_workspace": true,
                "prompt_values_are_template_variables": true,
            },
            "agent": self.agent.as_ref().map(|agent| agent.name().to_owned()),
            "evaluator": evaluator.name(),
            "metadata": request.metadata,
            })
        };
        if let Some(run_dir) = &run_dir {
            run_dir
                .write_json("run.json", &run_json)
                .map_err(|error| EngineError::Setup(format!("cannot write run.json: {error}")))?;
        }
        let shared = Arc::new(RunShared {
            workflow: workflow.clone(),
            agent: self.agent.clone(),
            tools: self.tools.clone(),
            commands: self.commands.clone(),
            bus: bus.clone(),
            cancel: request.cancel.clone(),
            workspace: workspace.clone(),
            run_dir: run_dir.clone(),
            inputs: inputs.clone(),
            max_parallel,
            run_id: run_id.clone(),
            metadata: request.metadata.clone(),
        });
        let mut start = CanonicalEvent::new(EventType::WorkflowStart, started_at);
        start.data = json!({
            "workflow": definition.name,
            "version": definition.version.to_string(),
            "strategy": strategy.name(),
            "steps": definition.steps.len(),
            "max_parallel": max_parallel,
            "inputs": inputs,
        });
        bus.publish(start);
        let handle = RunHandle { shared, evaluator };
        let outcome = strategy.execute(&handle).await;
        bus.set_attempt(None);
        let mut end = CanonicalEvent::new(EventType::WorkflowEnd, Utc::now());
        end.status = Some(match outcome.result.overall_status {
            StepStatus::Succeeded => EventStatus::Ok,
            StepStatus::Cancelled => EventStatus::Cancelled,
            StepStatus::TimedOut => EventStatus::Timeout,
            _ => EventStatus::Error,
        });
        end.data = json!({
            "overall_status": outcome.result.overall_status.as_str(),
            "passed": outcome.evaluation.passed,
            "duration_ms": started.elapsed().as_secs_f64() * 1000.0,
            "attempts": outcome.attempts.len().max(1),
            "stop_reason": outcome.stop_reason,
            "unresolved_required_outputs": outcome.result.unresolved_required_outputs,
        });
        bus.publish(end);
        bus.flush();
        if let Some(run_dir) = &run_dir {
            let _ = run_dir.write_json(
                "result.json",
                &json!({
                    "result": outcome.result,
                    "evaluation": outcome.evaluation.report,
                    "attempts": outcome.attempts,
                    "stop_reason": outcome.stop_reason,
                }),
            );
            run_json["status"] = json!(outcome.result.overall_status.as_str());
            run_json["passed"] = json!(outcome.evaluation.passed);
            run_json["ended_at"] = json!(Utc::now());
            run_json["duration_ms"] = json!(started.elapsed().as_secs_f64() * 1000.0);
            run_json["events"] = json!(bus.last_seq());
            let _ = run_dir.write_json("run.json", &run_json);
        }
        self.commands.finish(&workspace).await;
        if temporary_workspace {
            let _ = std::fs::remove_dir_all(&workspace);
        }
        Ok(RunOutcome {
            result: outcome.result,
            evaluation: outcome.evaluation,
            attempts: outcome.attempts,
            stop_reason: outcome.stop_reason,
            strategy: strategy.name().to_owned(),
            run_dir: run_dir.map(|run_dir| run_dir.root().to_owned()),
        })
    }
}

#[async_trait]
impl WorkflowAdapter for Engine {
    fn name(&self) -> &str {
        "agentic"
    }

    async fn run(
        &self,
        workflow: &ValidatedWorkflow,
        inputs: Map<String, Value>,
        events: Arc<dyn EventSink>,
    ) -> Result<WorkflowResult, WorkflowError> {
        let name = workflow.workflow().name.clone();
        let request = RunRequest { inputs, sinks: vec![events], ..RunRequest::default() };
        match Engine::run(self, Arc::new(workflow.clone()), request).await {
            Ok(outcome) => Ok(outcome.result),
            Err(EngineError::InvalidInputs { reasons, .. }) => {
                Err(WorkflowError::InvalidInputs { workflow: name, reasons })
            }
            Err(EngineError::Setup(reason)) => Err(WorkflowError::Setup { workflow: name, reason }),
            Err(other) => Err(WorkflowError::Unsupported { workflow: name, reason: other.to_string() }),
        }
    }
}
