//! `agentic judge calibrate|drift|confidence`: run the LLM judge on a golden set of human
//! labels and gate on its agreement, its drift from a stored baseline, or its stability.
//!
//! Exit codes: 0 the judge passed, 1 it missed the bar (calibration failure, drift, low
//! confidence), 2 unusable input (a file that cannot be read, a bad configuration).

use std::path::PathBuf;
use std::process::ExitCode;

use agentic_judge::{
    AgreementMetric, Baseline, CacheMode, ConfidenceReport, ConfidenceStatus, GoldenSet, Judge, JudgeCache,
    JudgeConfig, baseline_from, calibrate, compare_with_baseline, confidence_runs, grade_golden_set,
};
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};

/// Arguments of `agentic judge`.
#[derive(Debug, Args)]
pub(crate) struct JudgeArgs {
    #[command(subcommand)]
    command: JudgeCommand,
}

#[derive(Debug, Subcommand)]
enum JudgeCommand {
    /// Grade a golden set and compare with its human labels; exit 1 below the bar.
    Calibrate(CalibrateArgs),
    /// Re-grade a golden set and compare with a stored baseline; exit 1 on drift.
    Drift(DriftArgs),
    /// Grade a golden set N times and report range, variance and flakiness per case.
    Confidence(ConfidenceArgs),
}

/// Options shared by every judge command.
#[derive(Debug, Args)]
struct CommonArgs {
    /// The golden set (YAML), for example `examples/judge/golden.yaml`.
    #[arg(long)]
    golden: PathBuf,
    /// The judge configuration (YAML), for example `examples/judge/judge.yaml`.
    #[arg(long)]
    config: PathBuf,
    /// Override every judge's base URL (for example a local server `http://127.0.0.1:8090/v1`).
    #[arg(long)]
    base_url: Option<String>,
    /// Override every judge's model name.
    #[arg(long)]
    model: Option<String>,
    /// Override every judge's version label (recorded with verdicts, part of the cache key).
    #[arg(long)]
    judge_version: Option<String>,
    /// Override the run seed.
    #[arg(long)]
    seed: Option<u64>,
    /// SQLite reply cache; replies are reused when the judge and request are identical.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Use only the cache and never call a model (CI); a miss errors the criterion.
    #[arg(long, requires = "cache")]
    replay: bool,
    /// Agreement metric the bar applies to.
    #[arg(long, value_enum, default_value_t = Metric::WithinOne)]
    metric: Metric,
    /// Override the configured calibration bar (0..1).
    #[arg(long)]
    bar: Option<f64>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Metric {
    Exact,
    WithinOne,
    Kappa,
}

impl From<Metric> for AgreementMetric {
    fn from(metric: Metric) -> AgreementMetric {
        match metric {
            Metric::Exact => AgreementMetric::Exact,
            Metric::WithinOne => AgreementMetric::WithinOne,
            Metric::Kappa => AgreementMetric::Kappa,
        }
    }
}

#[derive(Debug, Args)]
struct CalibrateArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Also write the judge's scores as a drift baseline (JSON) to this file.
    #[arg(long)]
    write_baseline: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct DriftArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The baseline written by `agentic judge calibrate --write-baseline`.
    #[arg(long)]
    baseline: PathBuf,
    /// Largest share of scores allowed to move by a point or more.
    #[arg(long, default_value_t = 0.1)]
    max_drift: f64,
}

#[derive(Debug, Args)]
struct ConfidenceArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// How many times to grade every case.
    #[arg(long, default_value_t = 3)]
    eval_runs: u32,
}

/// Runs `agentic judge ...`.
pub(crate) fn run(args: JudgeArgs) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        match args.command {
            JudgeCommand::Calibrate(args) => run_calibrate(args).await,
            JudgeCommand::Drift(args) => run_drift(args).await,
            JudgeCommand::Confidence(args) => run_confidence(args).await,
        }
    })
}

struct Loaded {
    set: GoldenSet,
    judge: Judge,
    metric: AgreementMetric,
    bar: f64,
}

async fn load(common: &CommonArgs) -> Result<Loaded> {
    let set = GoldenSet::load(&common.golden)?;
    let mut config = JudgeConfig::load(&common.config)?;
    if let Some(base_url) = &common.base_url {
        for judge in &mut config.judges {
            judge.base_url.clone_from(base_url);
        }
    }
    for judge in &mut config.judges {
        if let Some(model) = &common.model {
            judge.model.clone_from(model);
        }
        if let Some(version) = &common.judge_version {
            judge.version.clone_from(version);
        }
    }
    if let Some(seed) = common.seed {
        config.seed = Some(seed);
    }
    if let Some(bar) = common.bar {
        anyhow::ensure!((0.0..=1.0).contains(&bar), "`--bar {bar}` is not a fraction; use a value in 0..1");
        config.calibration_bar = bar;
    }
    let bar = config.calibration_bar;
    let mut builder = Judge::builder(config);
    if let Some(path) = &common.cache {
        let mode = if common.replay { CacheMode::Replay } else { CacheMode::ReadWrite };
        let cache = JudgeCache::open(path, mode)
            .await
            .with_context(|| format!("opening the judge cache `{}`", path.display()))?;
        builder = builder.cache(cache);
    }
    let judge = builder.build().with_context(|| format!("configuring the judge from `{}`", common.config.display()))?;
    Ok(Loaded { set, judge, metric: common.metric.into(), bar })
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    stdout_text!("{}\n", serde_json::to_string_pretty(value)?)?;
    Ok(())
}

fn verdict_code(passed: bool) -> ExitCode {
    if passed { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

async fn run_calibrate(args: CalibrateArgs) -> Result<ExitCode> {
    let loaded = load(&args.common).await?;
    let started = std::time::Instant::now();
    let (report, verdicts) = calibrate(&loaded.judge, &loaded.set, loaded.metric).await?;
    if args.common.json {
        print_json(&report)?;
    } else {
        stdout_text!(
            "{}elapsed: {:.1}s for {} cases\n",
            report.render(),
            started.elapsed().as_secs_f64(),
            verdicts.len()
        )?;
    }
    if let Some(path) = &args.write_baseline {
        baseline_from(&loaded.set, &verdicts, loaded.judge.seed()).save(path)?;
        say_err!("wrote drift baseline `{}`", path.display());
    }
    Ok(verdict_code(report.passed))
}

async fn run_drift(args: DriftArgs) -> Result<ExitCode> {
    let baseline = Baseline::load(&args.baseline)?;
    let loaded = load(&args.common).await?;
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.max_drift),
        "`--max-drift {}` is not a fraction; use a value in 0..1",
        args.max_drift
    );
    let verdicts = grade_golden_set(&loaded.judge, &loaded.set).await?;
    let report = compare_with_baseline(&loaded.set, &baseline, &verdicts, loaded.metric, loaded.bar, args.max_drift);
    if args.common.json {
        print_json(&report)?;
    } else {
        stdout_text!("{}", report.render())?;
    }
    Ok(verdict_code(report.passed))
}

async fn run_confidence(args: ConfidenceArgs) -> Result<ExitCode> {
    let loaded = load(&args.common).await?;
    let report = confidence_runs(&loaded.judge, &loaded.set.judge_cases(), args.eval_runs).await?;
    if args.common.json {
        print_json(&report)?;
    } else {
        stdout_text!("{}", render_confidence(&report))?;
    }
    let stable = report.cases.iter().all(|case| case.overall.status != ConfidenceStatus::LowConfidence);
    Ok(verdict_code(stable))
}

fn render_confidence(report: &ConfidenceReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "judge confidence over {} runs (seeds {:?})", report.runs, report.seeds);
    let _ = writeln!(out, "{:<28} {:>15} {:>8} {:>9} {:>10}  status", "case", "range", "mean", "variance", "flakiness");
    for case in &report.cases {
        let range =
            case.overall.range.map(|[low, high]| format!("{low:.1}..{high:.1}")).unwrap_or_else(|| "n/a".into());
        let _ = writeln!(
            out,
            "{:<28} {:>15} {:>8} {:>9} {:>10.3}  {:?}",
            case.case_id,
            range,
            case.overall.mean.map(|m| format!("{m:.2}")).unwrap_or_else(|| "n/a".into()),
            case.overall.variance.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into()),
            case.flakiness,
            case.overall.status
        );
    }
    let low = report.cases.iter().filter(|c| c.overall.status == ConfidenceStatus::LowConfidence).count();
    if low == 0 {
        let _ = writeln!(out, "confidence passed: no case has LOW_CONFIDENCE");
    } else {
        let _ = writeln!(
            out,
            "confidence FAILED: {low} case(s) have LOW_CONFIDENCE; the judge is too noisy to gate on them"
        );
    }
    out
}
