//! `agentic run WORKFLOW`: run a workflow (once, or once per dataset sample) and report.
//!
//! Exit codes: 0 when every run passes its evaluation, 1 when any does not, 2 when nothing
//! could start (a workflow with errors, bad inputs, an incompatible dataset, a missing
//! cassette). With `--json` the result is printed as one JSON document: a run object for a
//! single run, or `{"runs": [...], "total", "passed"}` for several samples.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agentic_adapters::{
    AgentSettings, ChannelSink, EventSink, HttpProviderConfig, ModelProvider, OpenAiCompatible, ProviderAgent,
    RecordingProvider, ReplayProvider,
};
use agentic_core::dataset::{Dataset, parse_dataset_json, parse_dataset_jsonl};
use agentic_core::workflow::StepKind;
use agentic_core::{
    CanonicalEvent, EventType, ValidatedWorkflow, adapt_sample_to_workflow_inputs, load_workflow,
    match_workflow_dataset,
};
use agentic_engine::{CancelToken, Engine, EngineSettings, RunOutcome, RunRequest, SandboxRunner};
use agentic_eval::{
    FormulaRegistry, ProfileRegistry, ResolvedRubric, RubricDefinition, RubricSources, judged_criteria, load_rubric,
    resolve_rubric,
};
use agentic_judge::{Judge, JudgeConfig, JudgeModelConfig};
use anyhow::Context;
use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};

use super::evaluation::{self, SharedJudge};

/// Where agent steps get their answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProviderKind {
    /// Recorded exchanges from a cassette file (offline, deterministic).
    Replay,
    /// An OpenAI-compatible chat-completions service (`--base-url`, `OPENAI_API_KEY`).
    Openai,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The workflow YAML file.
    workflow: PathBuf,
    /// A workflow input as `name=value` (repeatable). JSON values are parsed for non-string
    /// inputs; `name=@path` reads the value from a file.
    #[arg(long = "input", short = 'i', value_name = "NAME=VALUE")]
    inputs: Vec<String>,
    /// Take inputs from a dataset file (JSON or JSONL); every sample runs unless `--sample`.
    #[arg(long, value_name = "FILE")]
    dataset: Option<PathBuf>,
    /// Run only the sample with this id.
    #[arg(long, value_name = "ID", requires = "dataset")]
    sample: Option<String>,
    /// Who answers agent steps.
    #[arg(long, value_enum, default_value_t = ProviderKind::Replay)]
    provider: ProviderKind,
    /// The cassette to replay or record (default: `cassettes/<workflow>.jsonl` next to the
    /// workflow's directory, for example `examples/cassettes/code_review.jsonl`).
    #[arg(long, value_name = "FILE")]
    cassette: Option<PathBuf>,
    /// Record every model exchange into the cassette (needs a real provider).
    #[arg(long)]
    record: bool,
    /// The model for agent steps that name none (default: `$AGENTIC_MODEL`, else `default`).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// Map a step's `model:` tier to a provider model, as `tier=model` (repeatable).
    #[arg(long = "tier", value_name = "TIER=MODEL")]
    tiers: Vec<String>,
    /// API root of the OpenAI-compatible service (default: `$OPENAI_BASE_URL`, else OpenAI).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Where run directories are written.
    #[arg(long, value_name = "DIR", default_value = "runs")]
    runs_dir: PathBuf,
    /// The workspace of tool and command steps (default: `<run dir>/workspace`).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Most steps running at once when the workflow sets no `max_parallel`.
    #[arg(long, value_name = "N", default_value_t = 8)]
    max_parallel: usize,
    /// Run a workflow marked `experimental: true`.
    #[arg(long)]
    allow_experimental: bool,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Score runs against this rubric file instead of the workflow's `evaluation` block.
    #[arg(long, value_name = "FILE")]
    rubric: Option<PathBuf>,
    /// The LLM judge for judged criteria (a judge YAML, see `docs/judge.md`). Default: the run's
    /// provider with the model of tier `judge` (`--tier judge=MODEL`, else `--model`, else a
    /// model named `judge`); `--provider replay` answers it from the cassette.
    #[arg(long, value_name = "FILE")]
    judge: Option<PathBuf>,
}

/// `println!` that ignores a closed stdout (`agentic run ... | head`) instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// A reason the run cannot start: printed, then exit 2.
struct Unusable(String);

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    match prepare(&args) {
        Ok(prepared) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(execute(&args, prepared))
        }
        Err(Unusable(message)) => {
            say_err!("{message}");
            Ok(ExitCode::from(2))
        }
    }
}

struct Prepared {
    workflow: Arc<ValidatedWorkflow>,
    runs: Vec<(Option<String>, Map<String, Value>)>,
    dataset: Option<Dataset>,
    engine: Engine,
    provider_note: Value,
    scoring: Option<Scoring>,
}

/// How runs are scored: the rubric, its formulas and the judge.
struct Scoring {
    rubric: ResolvedRubric,
    formulas: FormulaRegistry,
    judge: SharedJudge,
}

fn read_text(path: &Path, what: &str) -> Result<String, Unusable> {
    std::fs::read_to_string(path)
        .map_err(|error| Unusable(format!("error: cannot read {what} `{}`: {error}", path.display())))
}

fn prepare(args: &RunArgs) -> Result<Prepared, Unusable> {
    let shown = args.workflow.display().to_string();
    let text = read_text(&args.workflow, "workflow")?;
    let load = load_workflow(&text, &shown);
    let Some(workflow) = load.workflow else {
        let mut message = String::new();
        for diagnostic in &load.diagnostics {
            message.push_str(&format!("{diagnostic}\n"));
        }
        let errors = load.diagnostics.iter().filter(|d| d.is_error()).count();
        message.push_str(&format!("error: `{shown}` has {errors} error(s); fix them (see `agentic lint {shown}`)"));
        return Err(Unusable(message));
    };
    let workflow = Arc::new(workflow);
    let definition = workflow.workflow();
    if definition.experimental && !args.allow_experimental {
        return Err(Unusable(format!(
            "error: workflow `{}` is experimental\n  hint: pass `--allow-experimental` to run it",
            definition.name
        )));
    }

    let given = parse_inputs(&args.inputs, &workflow)?;
    let mut dataset = None;
    let runs = match &args.dataset {
        None => vec![(None, given.clone())],
        Some(path) => {
            let loaded = load_dataset(path)?;
            let (compatible, reasons) = match_workflow_dataset(definition, &loaded.descriptor);
            if !compatible {
                return Err(Unusable(format!(
                    "error: dataset `{}` does not fit workflow `{}`:\n  - {}\n  hint: add the missing fields to every sample, or declare them as `aliases:` of the inputs",
                    path.display(),
                    definition.name,
                    reasons.join("\n  - ")
                )));
            }
            let samples: Vec<_> = match &args.sample {
                Some(id) => match loaded.sample(id) {
                    Some(sample) => vec![sample.clone()],
                    None => {
                        let ids: Vec<&str> = loaded.samples.iter().map(|sample| sample.id.as_str()).collect();
                        return Err(Unusable(format!(
                            "error: dataset `{}` has no sample `{id}`; its samples: {}",
                            path.display(),
                            ids.join(", ")
                        )));
                    }
                },
                None => loaded.samples.clone(),
            };
            if samples.is_empty() {
                return Err(Unusable(format!("error: dataset `{}` has no samples", path.display())));
            }
            let runs = samples
                .iter()
                .map(|sample| {
                    let mut inputs = adapt_sample_to_workflow_inputs(definition, sample);
                    inputs.extend(given.clone());
                    (Some(sample.id.clone()), inputs)
                })
                .collect();
            dataset = Some(loaded);
            runs
        }
    };
    for (sample, inputs) in &runs {
        if let Err(error) = Engine::resolve_inputs(&workflow, inputs) {
            let at = sample.as_ref().map(|id| format!(" (sample `{id}`)")).unwrap_or_default();
            return Err(Unusable(format!(
                "error{at}: {error}\n  hint: pass inputs with `--input name=value` or `--dataset FILE`"
            )));
        }
    }

    let runner = Arc::new(SandboxRunner::subprocess());
    let settings =
        EngineSettings { max_parallel: args.max_parallel.max(1), allow_experimental: args.allow_experimental };
    let mut engine = Engine::new(runner).with_settings(settings);
    let mut provider_note = json!({"provider": "none"});
    let rubric = resolve_run_rubric(args, &workflow)?;
    let judged = rubric.as_ref().map(|(rubric, _)| judged_criteria(&rubric.rubric).len()).unwrap_or(0);
    let has_agents = definition.steps.iter().any(|step| step.kind == StepKind::Agent);
    let judge_on_run_provider = judged > 0 && (args.judge.is_none() || args.provider == ProviderKind::Replay);
    let mut provider = None;
    if has_agents || judge_on_run_provider {
        let (built, note) = build_provider(args, &workflow)?;
        provider_note = note;
        provider = Some(built);
    }
    if let (true, Some(provider)) = (has_agents, &provider) {
        let agent = ProviderAgent::new(provider.clone(), agent_settings(args)?);
        engine = engine.with_agent(Arc::new(agent));
    }
    engine.check(&workflow).map_err(|error| Unusable(format!("error: {error}")))?;
    let scoring = match rubric {
        None => None,
        Some((rubric, formulas)) => {
            let judge = if judged == 0 {
                Err("no criterion is judged".to_owned())
            } else {
                build_judge(args, provider.filter(|_| judge_on_run_provider))?
            };
            if let Ok(judge) = &judge {
                provider_note["judge"] = json!(
                    judge.config().judges.iter().map(|j| json!({"name": j.name, "model": j.model})).collect::<Vec<_>>()
                );
            }
            Some(Scoring { rubric, formulas, judge })
        }
    };
    Ok(Prepared { workflow, runs, dataset, engine, provider_note, scoring })
}

/// The rubric runs are scored against: `--rubric FILE`, else the workflow's `evaluation`
/// block; `None` when there is neither (the engine's gates decide alone).
fn resolve_run_rubric(
    args: &RunArgs,
    workflow: &ValidatedWorkflow,
) -> Result<Option<(ResolvedRubric, FormulaRegistry)>, Unusable> {
    let definition = workflow.workflow();
    let mut formulas = FormulaRegistry::builtin();
    let mut library = BTreeMap::new();
    let mut request = None;
    let load = |path: &Path, formulas: &mut FormulaRegistry| -> Result<RubricDefinition, Unusable> {
        let shown = path.display().to_string();
        let loaded = load_rubric(&read_text(path, "rubric")?, &shown, formulas);
        match loaded.rubric {
            Some(rubric) => {
                *formulas = loaded.registry;
                Ok(rubric)
            }
            None => {
                let mut message: String = loaded.diagnostics.iter().map(|d| format!("{d}\n")).collect();
                message.push_str(&format!("error: rubric `{shown}` has errors; fix them (see `agentic lint {shown}`)"));
                Err(Unusable(message))
            }
        }
    };
    if let Some(path) = &args.rubric {
        request = Some(load(path, &mut formulas)?);
    } else if definition.evaluation.is_none() {
        return Ok(None);
    } else if let Some(id) = definition.evaluation.as_ref().and_then(|evaluation| evaluation.rubric_id.as_deref()) {
        let dir = args.workflow.parent().unwrap_or(Path::new("."));
        let candidates: Vec<PathBuf> = [dir.parent().map(|parent| parent.join("rubrics")), Some(dir.join("rubrics"))]
            .into_iter()
            .flatten()
            .flat_map(|rubrics| [rubrics.join(format!("{id}.yaml")), rubrics.join(format!("{id}.yml"))])
            .collect();
        if let Some(path) = candidates.iter().find(|path| path.is_file()) {
            let rubric = load(path, &mut formulas)?;
            library.insert(rubric.rubric_id.clone(), rubric);
        }
    }
    let profiles = ProfileRegistry::builtin();
    let sources = RubricSources {
        request: request.as_ref(),
        workflow: definition.evaluation.as_ref(),
        library: &library,
        profiles: &profiles,
        formulas: &formulas,
    };
    let resolved = resolve_rubric(&sources).map_err(|error| {
        Unusable(format!(
            "error: cannot score `{}`: {error}\n  hint: rubric ids are looked up as `rubrics/<id>.yaml` beside or above the workflow's directory; or pass `--rubric FILE`",
            args.workflow.display()
        ))
    })?;
    Ok(Some((resolved, formulas)))
}

/// The judge for judged criteria: `--judge FILE` (answered by `provider`, the cassette, under
/// `--provider replay`), else one judge on `provider`, the run's, with model tier `judge`.
/// `provider` is `None` when the judges of `--judge FILE` call their own endpoints.
/// Without a seed in the configuration the judge uses seed 0, so replays ask what was recorded.
fn build_judge(args: &RunArgs, provider: Option<Arc<dyn ModelProvider>>) -> Result<SharedJudge, Unusable> {
    let mut config = match &args.judge {
        Some(path) => JudgeConfig::load(path).map_err(|error| Unusable(format!("error: {error}")))?,
        None => {
            let tiers = agent_settings(args)?.tiers;
            let model = tiers
                .get("judge")
                .cloned()
                .or_else(|| args.model.clone())
                .or_else(|| std::env::var("AGENTIC_MODEL").ok())
                .unwrap_or_else(|| "judge".to_owned());
            let base_url = args.base_url.clone().unwrap_or_else(|| "http://127.0.0.1/unused".to_owned());
            JudgeConfig::single(JudgeModelConfig::openai("judge", base_url, model))
        }
    };
    config.seed = config.seed.or(Some(0));
    let mut builder = Judge::builder(config.clone());
    if let Some(provider) = provider {
        builder = builder.providers(config.judges.iter().map(|_| provider.clone()).collect());
    }
    Ok(builder.build().map_err(|error| format!("the judge cannot be configured: {error}")))
}

fn parse_inputs(raw: &[String], workflow: &ValidatedWorkflow) -> Result<Map<String, Value>, Unusable> {
    let mut inputs = Map::new();
    for item in raw {
        let Some((name, value)) = item.split_once('=') else {
            return Err(Unusable(format!(
                "error: `--input {item}` is not `name=value`\n  hint: for example `--input language=python`"
            )));
        };
        let name = name.trim();
        let text = match value.strip_prefix('@') {
            Some(path) => read_text(Path::new(path), &format!("the file of input `{name}`"))?,
            None => value.to_owned(),
        };
        let is_text = workflow.workflow().inputs.get(name).is_none_or(|spec| {
            matches!(
                spec.value_type,
                agentic_core::workflow::ValueType::String | agentic_core::workflow::ValueType::Path
            )
        });
        let value = if is_text || value.starts_with('@') {
            Value::String(text)
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        inputs.insert(name.to_owned(), value);
    }
    Ok(inputs)
}

fn load_dataset(path: &Path) -> Result<Dataset, Unusable> {
    let text = read_text(path, "dataset")?;
    let default_id = path.file_stem().and_then(|stem| stem.to_str()).unwrap_or("dataset").to_owned();
    let parsed = if path.extension().and_then(|ext| ext.to_str()) == Some("jsonl") {
        parse_dataset_jsonl(&text, &default_id)
    } else {
        parse_dataset_json(&text, &default_id)
    };
    parsed.map_err(|error| Unusable(format!("{}:{}: error[dataset]: {}", path.display(), error.line, error.message)))
}

fn default_cassette(workflow_path: &Path, name: &str) -> Vec<PathBuf> {
    let dir = workflow_path.parent().unwrap_or(Path::new("."));
    let stem = workflow_path.file_stem().and_then(|stem| stem.to_str()).unwrap_or(name);
    let mut candidates = Vec::new();
    if let Some(parent) = dir.parent() {
        candidates.push(parent.join("cassettes").join(format!("{stem}.jsonl")));
    }
    candidates.push(dir.join("cassettes").join(format!("{stem}.jsonl")));
    candidates.push(dir.join(format!("{stem}.cassette.jsonl")));
    candidates
}

fn build_provider(args: &RunArgs, workflow: &ValidatedWorkflow) -> Result<(Arc<dyn ModelProvider>, Value), Unusable> {
    let name = &workflow.workflow().name;
    match args.provider {
        ProviderKind::Replay => {
            if args.record {
                return Err(Unusable(
                    "error: `--record` needs a real provider to record from\n  hint: `--provider openai --record`"
                        .to_owned(),
                ));
            }
            let candidates = match &args.cassette {
                Some(path) => vec![path.clone()],
                None => default_cassette(&args.workflow, name),
            };
            let Some(path) = candidates.iter().find(|path| path.is_file()) else {
                let listed: Vec<String> = candidates.iter().map(|path| format!("`{}`", path.display())).collect();
                return Err(Unusable(format!(
                    "error: workflow `{name}` has agent steps and no cassette was found (looked for {})\n  hint: pass `--cassette FILE`, record one with `--provider openai --record`, or use `--provider openai`",
                    listed.join(", ")
                )));
            };
            let provider = ReplayProvider::load(path).map_err(|error| Unusable(format!("error: {error}")))?;
            Ok((Arc::new(provider), json!({"provider": "replay", "cassette": path})))
        }
        ProviderKind::Openai => {
            let unnamed: Vec<&str> = workflow
                .workflow()
                .steps
                .iter()
                .filter(|step| step.kind == StepKind::Agent && step.model.is_none())
                .map(|step| step.name.as_str())
                .collect();
            if !unnamed.is_empty() && args.model.is_none() && std::env::var_os("AGENTIC_MODEL").is_none() {
                return Err(Unusable(format!(
                    "error: agent step(s) {} name no `model:` and no default model is set\n  hint: pass `--model NAME` or set `AGENTIC_MODEL`",
                    unnamed.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
                )));
            }
            let base_url = args
                .base_url
                .clone()
                .or_else(|| std::env::var("OPENAI_BASE_URL").ok())
                .unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
            let mut config = HttpProviderConfig::new(base_url.clone(), default_model(args));
            if std::env::var_os("OPENAI_API_KEY").is_some() {
                config.api_key_env = Some("OPENAI_API_KEY".to_owned());
            }
            let client = OpenAiCompatible::new(config).map_err(|error| Unusable(format!("error: {error}")))?;
            let mut note = json!({"provider": "openai", "base_url": base_url});
            let provider: Arc<dyn ModelProvider> = if args.record {
                let path = match &args.cassette {
                    Some(path) => path.clone(),
                    None => default_cassette(&args.workflow, name).remove(0),
                };
                let recorder = RecordingProvider::new(Arc::new(client), &path)
                    .map_err(|error| Unusable(format!("error: {error}")))?;
                note["recording_to"] = json!(path);
                Arc::new(recorder)
            } else {
                Arc::new(client)
            };
            Ok((provider, note))
        }
    }
}

fn default_model(args: &RunArgs) -> String {
    args.model.clone().or_else(|| std::env::var("AGENTIC_MODEL").ok()).unwrap_or_else(|| "default".to_owned())
}

fn agent_settings(args: &RunArgs) -> Result<AgentSettings, Unusable> {
    let mut tiers = HashMap::new();
    for item in &args.tiers {
        let Some((tier, model)) = item.split_once('=') else {
            return Err(Unusable(format!(
                "error: `--tier {item}` is not `tier=model`; for example `--tier reviewer=gpt-4o`"
            )));
        };
        tiers.insert(tier.trim().to_owned(), model.trim().to_owned());
    }
    Ok(AgentSettings { default_model: default_model(args), tiers, ..AgentSettings::default() })
}

fn progress_hidden() -> bool {
    !std::io::stderr().is_terminal() || std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// Shows step progress from the event stream until the stream closes.
async fn show_progress(mut events: tokio::sync::mpsc::UnboundedReceiver<CanonicalEvent>, steps: u64, label: String) {
    let bar = indicatif::ProgressBar::new(steps);
    if progress_hidden() {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {prefix} [{bar:24}] {pos}/{len} {wide_msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(label);
    bar.enable_steady_tick(Duration::from_millis(120));
    let mut running: Vec<String> = Vec::new();
    while let Some(event) = events.recv().await {
        let step = event.step_name.clone().unwrap_or_default();
        match event.event_type {
            EventType::AttemptStart => {
                bar.set_position(0);
                running.clear();
            }
            EventType::StepStart if !running.contains(&step) => running.push(step),
            EventType::StepEnd | EventType::StepSkipped => {
                running.retain(|name| *name != step);
                bar.inc(1);
            }
            EventType::WorkflowEnd => break,
            _ => {}
        }
        bar.set_message(running.join(", "));
    }
    bar.finish_and_clear();
}

async fn execute(args: &RunArgs, prepared: Prepared) -> anyhow::Result<ExitCode> {
    let Prepared { workflow, runs, dataset, engine, provider_note, scoring } = prepared;
    let cancel = CancelToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            say_err!("interrupted: cancelling the run (running processes are killed)");
            on_interrupt.cancel();
        }
    });
    let definition = workflow.workflow();
    let mut reports = Vec::new();
    let mut all_passed = true;
    for (sample, inputs) in runs {
        if cancel.is_cancelled() {
            break;
        }
        let (sink, receiver) = ChannelSink::new();
        let label = match &sample {
            Some(id) => format!("{} [{id}]", definition.name),
            None => definition.name.clone(),
        };
        let progress = tokio::spawn(show_progress(receiver, definition.steps.len() as u64, label));
        let mut metadata = Map::new();
        metadata.insert("model_provider".into(), provider_note.clone());
        if let Some(dataset) = &dataset {
            metadata.insert(
                "dataset".into(),
                json!({
                    "id": dataset.descriptor.id,
                    "version": dataset.descriptor.version,
                    "file": args.dataset,
                    "sample_id": sample,
                }),
            );
        }
        let evaluator = scoring.as_ref().map(|scoring| {
            evaluation::evaluator(
                &scoring.rubric,
                &scoring.formulas,
                &scoring.judge,
                dataset.as_ref().map(|dataset| &dataset.descriptor),
                sample.as_deref(),
            )
        });
        let request = RunRequest {
            evaluator,
            inputs,
            runs_dir: Some(args.runs_dir.clone()),
            workspace: args.workspace.clone(),
            sinks: vec![Arc::new(sink) as Arc<dyn EventSink>],
            cancel: cancel.clone(),
            metadata,
            ..RunRequest::default()
        };
        let outcome = engine.run(workflow.clone(), request).await;
        let _ = progress.await;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(error) => {
                say_err!("error: {error}");
                return Ok(ExitCode::from(2));
            }
        };
        all_passed &= outcome.evaluation.passed;
        if !args.json {
            print_summary(&outcome, sample.as_deref());
        }
        reports.push(run_report(&outcome, sample.as_deref()));
    }
    if args.json {
        let document = if reports.len() == 1 {
            reports.remove(0)
        } else {
            let passed = reports.iter().filter(|report| report["evaluation"]["passed"] == json!(true)).count();
            json!({"workflow": definition.name, "total": reports.len(), "passed": passed, "runs": reports})
        };
        out!("{}", serde_json::to_string_pretty(&document)?);
    } else if reports.len() > 1 {
        let passed = reports.iter().filter(|report| report["evaluation"]["passed"] == json!(true)).count();
        out!("{passed}/{} run(s) passed", reports.len());
    }
    Ok(if cancel.is_cancelled() || !all_passed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The JSON report of one run.
fn run_report(outcome: &RunOutcome, sample: Option<&str>) -> Value {
    let result = &outcome.result;
    let steps: Vec<Value> = result
        .steps
        .iter()
        .map(|step| {
            json!({
                "name": step.name,
                "kind": step.kind.as_str(),
                "status": step.status.as_str(),
                "duration_ms": round1(step.duration_ms),
                "queue_wait_ms": round1(step.queue_wait_ms),
                "attempts": step.attempts,
                "model": step.model,
                "error": step.error.as_ref().map(|error| json!({"class": error.class, "type": error.error_type, "message": error.message})),
            })
        })
        .collect();
    json!({
        "run_id": result.run_id,
        "workflow": result.workflow,
        "workflow_version": result.workflow_version,
        "sample": sample,
        "status": result.overall_status.as_str(),
        "passed": outcome.evaluation.passed,
        "duration_ms": round1(result.duration_ms),
        "strategy": outcome.strategy,
        "attempts": outcome.attempts,
        "stop_reason": outcome.stop_reason,
        "steps": steps,
        "outputs": result.outputs,
        "unresolved_required_outputs": result.unresolved_required_outputs,
        "evaluation": outcome.evaluation.report,
        "run_dir": outcome.run_dir,
    })
}

fn round1(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

fn print_summary(outcome: &RunOutcome, sample: Option<&str>) {
    let result = &outcome.result;
    let sample = sample.map(|id| format!(" sample {id}")).unwrap_or_default();
    let verdict = if outcome.evaluation.passed { "PASSED" } else { "FAILED" };
    out!(
        "{verdict}  {}{sample}  status {}  {:.0} ms  run {}",
        result.workflow,
        result.overall_status.as_str(),
        result.duration_ms,
        result.run_id
    );
    for step in &result.steps {
        let mut line = format!(
            "  {:<20} {:<10} {:>8.0} ms  {} attempt(s)",
            step.name,
            step.status.as_str(),
            step.duration_ms,
            step.attempts
        );
        if let Some(model) = &step.model {
            line.push_str(&format!("  model {model}"));
        }
        if let Some(error) = &step.error {
            let first = error.message.lines().next().unwrap_or_default();
            line.push_str(&format!("\n      {first}"));
        }
        out!("{line}");
    }
    for (name, value) in &result.outputs {
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let shown: String = flat.chars().take(100).collect();
        let more = if flat.chars().count() > 100 { "…" } else { "" };
        out!("  output {name}: {shown}{more}");
    }
    if !result.unresolved_required_outputs.is_empty() {
        out!("  unresolved required outputs: {}", result.unresolved_required_outputs.join(", "));
    }
    let report = &outcome.evaluation.report;
    if let (Some(grade), Some(score)) =
        (report.get("grade").and_then(Value::as_str), report.get("weighted_score").and_then(Value::as_f64))
    {
        let threshold = report.get("pass_threshold").and_then(Value::as_f64).unwrap_or(70.0);
        out!("  grade {grade}  weighted score {score:.2} (pass threshold {threshold})");
        if let Some(sources) = report.get("score_sources").and_then(Value::as_object) {
            for (name, origin) in sources {
                if let Some(missing) = origin.get("missing").and_then(Value::as_str) {
                    out!("  not scored: {name}: {missing}");
                }
            }
        }
    }
    if let Some(failures) = outcome.evaluation.report.get("hard_gate_failures").and_then(Value::as_array)
        && !failures.is_empty()
    {
        let names: Vec<&str> = failures.iter().filter_map(Value::as_str).collect();
        out!("  failed gates: {}", names.join(", "));
    }
    if outcome.attempts.len() > 1 {
        let stop = serde_json::to_value(outcome.stop_reason).ok().and_then(|v| v.as_str().map(str::to_owned));
        out!("  attempts: {} (stopped: {})", outcome.attempts.len(), stop.unwrap_or_default());
    }
    if let Some(run_dir) = &outcome.run_dir {
        out!("  run directory: {}", run_dir.display());
    }
}
