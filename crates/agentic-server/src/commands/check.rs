//! `agentic check SPEC`: checkpoint compliance of one run, from its trace and evidence.
//!
//! Reads the checkpoint spec (lint errors stop the check), merges the evidence JSON files,
//! streams the trace once through the tier-2 rules (worker threads scan and match lines, this
//! thread feeds the engine in trace order), asks the tier-3 evaluator (the LLM judge of
//! `--judge`, live or from `--judge-cassette`, or recorded verdicts from `--tier3-verdicts`),
//! and prints a summary. `--json` writes the report
//! (`docs/schema/compliance-report.schema.json`), `--markdown` a report for people,
//! `--baseline` compares with an older JSON report.
//!
//! Exit codes: 0 when compliance is at or above `--threshold` (and, with
//! `--fail-on-regression`, nothing regressed), 1 below it (or nothing was scorable), 2 on
//! bad input (unreadable files, a trace without one readable record, spec errors, a
//! malformed trace with `--malformed fail`, a missing or invalid tier-3 verdict).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use std::ops::ControlFlow;

use agentic_adapters::provider::{AdaptiveLimiter, ModelProvider};
use agentic_adapters::replay::{RecordingProvider, ReplayProvider};
use agentic_adapters::trace::{
    Batch, LineWork, RecordRef, TooltraceView, TraceError, TraceFormat, TraceInput, TraceItem, TraceReader,
    for_each_batch_parallel,
};
use agentic_core::Diagnostic;
use agentic_eval::compliance::report::REPORT_SCHEMA_VERSION;
use agentic_eval::compliance::spec::Tier;
use agentic_eval::compliance::{
    ArgsRef, Calibration, CheckOptions, CompiledSpec, ComplianceReport, EventRef, EvidenceSet, GoldenCase,
    MAX_EVAL_RUNS, MatchPlan, Prepared, ReplayEvaluator, ResultState, SequenceEngine, Summarizer, Summary, Tier3Error,
    Tier3Evaluator, Tier3Request, Tier3Verdict, calibrate, compare_reports, evaluate, lint_against_previous, load_spec,
    parse_spec, render_markdown, render_summary,
};
use agentic_judge::{Aggregation, Judge, JudgeConfig, JudgeTier3Evaluator};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

/// The trace format option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TraceFormatArg {
    /// Detect from the first record.
    Auto,
    /// The seed's tool-trace JSONL.
    Tooltrace,
    /// Claude Code hook records (also spelled `claude_hook`, the format's name in reports).
    #[value(alias = "claude_hook")]
    ClaudeHook,
    /// OTLP/JSON traces (also spelled `otlp_json`).
    #[value(alias = "otlp_json")]
    OtlpJson,
}

/// What to do with a malformed trace record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Malformed {
    /// Report it (with its line) on stderr and go on.
    Skip,
    /// Stop with exit code 2.
    Fail,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The checkpoint spec (`checkpoints/<workflow>.yaml`).
    spec: String,
    /// The trace of the run (tooltrace JSONL, Claude Code hook JSONL or OTLP/JSON; gzip-compressed
    /// files are read as they are; `-` reads standard input).
    #[arg(long)]
    trace: Option<String>,
    /// Evidence JSON (an object whose keys are evidence sources); repeat to merge several
    /// (a later file's source replaces an earlier one of the same name).
    #[arg(long)]
    evidence: Vec<String>,
    /// The trace format.
    #[arg(long, value_enum, default_value_t = TraceFormatArg::Auto)]
    trace_format: TraceFormatArg,
    /// Skip malformed trace records (reported with their line) or stop at the first.
    #[arg(long, value_enum, default_value_t = Malformed::Skip)]
    malformed: Malformed,
    /// Write the JSON report here (`-`: standard output; the summary then goes to standard error).
    #[arg(long)]
    json: Option<String>,
    /// Write the Markdown report here (`-`: standard output, as for `--json`).
    #[arg(long)]
    markdown: Option<String>,
    /// An earlier JSON report to compare with.
    #[arg(long)]
    baseline: Option<String>,
    /// Exit 1 when any checkpoint regressed against `--baseline`.
    #[arg(long, requires = "baseline")]
    fail_on_regression: bool,
    /// Recorded tier-3 verdicts (JSON keyed by checkpoint id).
    #[arg(long, conflicts_with = "judge")]
    tier3_verdicts: Option<String>,
    /// Tier 3 asks this LLM judge (a judge configuration, like `examples/judge/judge.yaml`;
    /// its first judge answers).
    #[arg(long)]
    judge: Option<String>,
    /// Override the judge's base URL (for example `http://127.0.0.1:8090/v1`).
    #[arg(long, requires = "judge")]
    judge_base_url: Option<String>,
    /// Answer the judge's requests from this cassette instead of calling the model (offline;
    /// a request that is not in it is an error). Needs a fixed `seed` in the configuration.
    #[arg(long, requires = "judge", conflicts_with_all = ["judge_record", "judge_base_url"])]
    judge_cassette: Option<String>,
    /// Record the judge's exchanges into this cassette (JSONL, appended) for `--judge-cassette`.
    #[arg(long, requires = "judge")]
    judge_record: Option<String>,
    /// Run tier 3 this many times and report the spread of the compliance score.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_EVAL_RUNS)))]
    eval_runs: u32,
    /// The lowest passing compliance score, in percent (`85` or `85%`).
    #[arg(long, default_value_t = 85.0, allow_negative_numbers = true, value_parser = parse_percent)]
    threshold: f64,
    /// A golden set of human-annotated runs (JSON); reports tier-3 agreement and warns below 90%.
    #[arg(long)]
    golden: Option<String>,
    /// Fixes `evaluated_at` (RFC 3339) instead of the current time, for reproducible reports.
    #[arg(long)]
    evaluated_at: Option<String>,
}

/// A percentage from 0 to 100, with or without a `%` sign.
fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim_end();
    match number.parse::<f64>() {
        Ok(value) if (0.0..=100.0).contains(&value) => Ok(value),
        _ => Err("not a percentage; use a number from 0 to 100 (`85` or `85%`)".to_owned()),
    }
}

pub(crate) fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    if args.threshold > 0.0 && args.threshold < 1.0 {
        say_err!(
            "warning: `--threshold {}` is {}%, not {}%; the threshold is in percent",
            args.threshold,
            percent_text(args.threshold),
            percent_text(args.threshold * 100.0)
        );
    }
    if let (Some(json), Some(markdown)) = (&args.json, &args.markdown)
        && same_file(json, markdown)
    {
        bail!("`--json` and `--markdown` both name `{json}`; give each report its own file (`-` for standard output)");
    }
    // clap's `requires` lets these through beside `--tier3-verdicts` (which conflicts with
    // `--judge`): without a judge they would be ignored in silence.
    if args.judge.is_none() {
        for (flag, given) in [
            ("--judge-record", args.judge_record.is_some()),
            ("--judge-cassette", args.judge_cassette.is_some()),
            ("--judge-base-url", args.judge_base_url.is_some()),
        ] {
            if given {
                bail!(
                    "`{flag}` needs `--judge JUDGE.yaml` (it configures the judge's calls); add it or remove `{flag}`"
                );
            }
        }
    }
    if let Some(record) = &args.judge_record {
        for (flag, output) in [("--json", &args.json), ("--markdown", &args.markdown)] {
            if let Some(output) = output
                && same_file(output, record)
            {
                bail!("`{flag} {output}` and `--judge-record` name the same file; give each its own");
            }
        }
    }
    // A report must never overwrite what the check reads (the golden set's own files too).
    let golden = match &args.golden {
        Some(path) => Some((path, read_golden(path)?)),
        None => None,
    };
    let golden_files: Vec<&String> = golden
        .iter()
        .flat_map(|(_, set)| set.cases.iter())
        .flat_map(|case| case.trace.iter().chain(&case.evidence).chain(&case.tier3_verdicts))
        .collect();
    let inputs = std::iter::once(("the spec", &args.spec))
        .chain(args.trace.iter().map(|path| ("the trace", path)))
        .chain(args.evidence.iter().map(|path| ("an evidence file", path)))
        .chain(args.tier3_verdicts.iter().map(|path| ("the tier-3 verdicts", path)))
        .chain(args.baseline.iter().map(|path| ("the baseline", path)))
        .chain(args.golden.iter().map(|path| ("the golden set", path)))
        .chain(args.judge.iter().map(|path| ("the judge configuration", path)))
        .chain(args.judge_cassette.iter().map(|path| ("the judge cassette", path)))
        .chain(golden_files.into_iter().map(|path| ("a file of the golden set", path)));
    for (what, input) in inputs {
        for (flag, output) in [("--json", &args.json), ("--markdown", &args.markdown)] {
            if let Some(output) = output
                && output != "-"
                && same_file(output, input)
            {
                bail!("`{flag} {output}` would overwrite {what}, which the check reads; write the report elsewhere");
            }
        }
    }
    // A report on standard output keeps it clean: the summary goes to standard error.
    let to_stdout = [&args.json, &args.markdown].iter().any(|path| path.as_deref() == Some("-"));
    // Output errors (a full disk, a closed descriptor) are errors, not panics.
    let say = |text: &str| -> anyhow::Result<()> {
        if to_stdout {
            std::io::stderr().write_all(text.as_bytes()).context("cannot write to standard error")
        } else {
            std::io::stdout().write_all(text.as_bytes()).context("cannot write to standard output")
        }
    };
    let spec = read_spec(&args.spec)?;
    // Said before anything runs, whatever the evidence: a CI job that forgot the option must
    // not pass on a run whose tier-3 evidence happens to be absent.
    if args.judge.is_none()
        && args.tier3_verdicts.is_none()
        && let Some(first) = spec.checkpoints.iter().find(|c| c.tier == Tier::Semantic)
    {
        bail!(
            "the spec has tier-3 checkpoints (`{}` first) and no tier-3 evaluator is configured; pass \
             `--judge JUDGE.yaml` (an LLM judge) or `--tier3-verdicts FILE` (recorded verdicts)",
            first.checkpoint.id
        );
    }
    // Every input is read and checked before the trace pass and any judge call (which may
    // cost money): a typo in `--baseline` or `--evaluated-at` fails at once.
    let evaluated_at = match &args.evaluated_at {
        // The report's time is UTC, as its schema says.
        Some(stamp) => {
            let utc = chrono::DateTime::parse_from_rfc3339(stamp)
                .with_context(|| format!("`--evaluated-at` `{stamp}` is not an RFC 3339 time"))?
                .with_timezone(&chrono::Utc);
            if misplaced_leap_second(&utc) {
                bail!(
                    "`--evaluated-at` `{stamp}` has second 60 outside the last minute of a UTC day; RFC 3339 allows a \
                     leap second only at 23:59:60 UTC: give the time with seconds 00 to 59"
                );
            }
            // RFC 3339 has four-digit years: an offset must not carry the time past them.
            if !(0..=9999).contains(&chrono::Datelike::year(&utc)) {
                bail!(
                    "`--evaluated-at` `{stamp}` is outside the years 0000 to 9999 in UTC, which RFC 3339 cannot \
                     write; give a time from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59Z"
                );
            }
            utc.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        }
        None => chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    let baseline = match &args.baseline {
        Some(path) => {
            let text = read_text(path, "the --baseline report")?;
            let not_a_report =
                || format!("`{path}` is not a compliance report (docs/schema/compliance-report.schema.json)");
            let mut value: Value = agentic_core::json_strict::from_str(&text).map_err(|error| {
                let advice = json_advice(&text, &error);
                anyhow::Error::new(error).context(format!(
                    "{}, as it is not valid JSON{advice}; give a report written by `agentic check --json`",
                    not_a_report()
                ))
            })?;
            if !value.is_object() {
                bail!(
                    "baseline `{path}` holds {}, not a JSON object; give a report written by `agentic check --json`",
                    json_kind(&value)
                );
            }
            // The version first: a report of another major version is named as such, not as
            // a field this agentic does not know.
            let version = value.get("schema_version").and_then(Value::as_str).map(str::to_owned);
            // Parts compare as numbers (`01` is `1`).
            let part = |version: &str, idx: usize| {
                let text = version.split('.').nth(idx).unwrap_or_default();
                text.parse::<u64>().map_or_else(|_| text.to_owned(), |number| number.to_string())
            };
            if let Some(version) = &version {
                // The schema's form, `MAJOR.MINOR.PATCH` in digits: nothing `agentic check` wrote
                // looks otherwise.
                let parts: Vec<&str> = version.split('.').collect();
                if parts.len() != 3 || parts.iter().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
                    bail!(
                        "baseline `{path}` has schema_version `{version}`, not a version `agentic check` writes (three \
                         numbers, like {REPORT_SCHEMA_VERSION}); use a report written by `agentic check --json`, not an \
                         edited one"
                    );
                }
                if part(version, 0) != part(REPORT_SCHEMA_VERSION, 0) {
                    bail!(
                        "baseline `{path}` is a report of schema_version `{version}`; this agentic reads reports of \
                         schema_version {}.x; run `agentic check` again on the baseline's trace to make a comparable \
                         report",
                        part(REPORT_SCHEMA_VERSION, 0)
                    );
                }
                // A newer minor version only adds fields: they are ignored, with a note.
                let minor = |version: &str| part(version, 1).parse::<u64>().ok();
                if minor(version) > minor(REPORT_SCHEMA_VERSION) {
                    let mut ignored = Vec::new();
                    prune_to_schema(&mut value, &report_schema(), "", &mut ignored);
                    if !ignored.is_empty() {
                        say_err!(
                            "note: baseline `{path}` is a report of schema_version `{version}`, newer than this \
                             agentic's {REPORT_SCHEMA_VERSION}; ignored the fields it does not know: {}",
                            ignored.join(", ")
                        );
                    }
                }
            }
            // `"tier": 1.0` is the integer 1 to the schema, so it is to the reader too.
            agentic_core::document::whole_floats_as_integers(&mut value);
            let baseline: ComplianceReport = from_value_at(value).with_context(not_a_report)?;
            let mut seen = std::collections::HashSet::new();
            if let Some(twice) = baseline.checkpoints.iter().find(|c| !seen.insert(c.id.as_str())) {
                bail!(
                    "baseline `{}` lists checkpoint `{}` twice, and a report has each id once; use a report written \
                     by `agentic check --json`, not an edited or merged one",
                    path,
                    twice.id
                );
            }
            if !chrono::DateTime::parse_from_rfc3339(&baseline.evaluated_at)
                .is_ok_and(|time| !misplaced_leap_second(&time.with_timezone(&chrono::Utc)))
            {
                bail!(
                    "baseline `{path}` has `evaluated_at` `{}`, not an RFC 3339 time (like 2026-11-24T09:30:00Z); use a \
                     report written by `agentic check --json`, not an edited one",
                    baseline.evaluated_at
                );
            }
            if let Some(problem) = baseline.inconsistency() {
                bail!(
                    "baseline `{path}` is not a report `agentic check` wrote: {problem}; use a report written by \
                     `agentic check --json`, not an edited one"
                );
            }
            if baseline.workflow != spec.spec.workflow {
                bail!(
                    "baseline `{path}` is a report of workflow `{}`, not `{}`; compare reports of the same workflow",
                    baseline.workflow,
                    spec.spec.workflow
                );
            }
            Some(baseline)
        }
        None => None,
    };
    let sources = SourcesRead::of(&spec);
    let evidence = read_evidence(&spec, &sources, &args.evidence)?;
    let trace = match &args.trace {
        Some(path) => Some(run_trace(&spec, path, args.trace_format, args.malformed)?),
        None => None,
    };
    warn_on_missing_inputs(&spec, &sources, &args, &evidence);
    let mut judge = match &args.judge {
        Some(path) => Some(judge_evaluator(path, &args)?),
        None => None,
    };
    let mut evaluator: Box<dyn Tier3Evaluator> = match &args.tier3_verdicts {
        Some(path) => {
            let replay = read_verdicts(&spec, path, "the --tier3-verdicts file")?;
            // (`read_verdicts` said which ids are no tier-3 checkpoint.)
            let tier3 = tier3_ids(&spec);
            for id in replay.ids().filter(|id| tier3.contains(id)) {
                if replay.recorded_runs(id).is_none() && args.eval_runs > 1 {
                    say_err!(
                        "warning: {path}: `{id}` has one verdict for all {} runs, so it adds nothing to their spread; \
                         record a list of {} verdicts (one per run) to measure it",
                        args.eval_runs,
                        args.eval_runs
                    );
                } else if let Some(recorded) = replay.recorded_runs(id)
                    && recorded > args.eval_runs as usize
                {
                    say_err!(
                        "note: {path}: `{id}` has verdicts for {recorded} runs and {} run(s) were asked for; the rest \
                         are not used (pass `--eval-runs {recorded}` to use them all and report their spread)",
                        args.eval_runs
                    );
                }
            }
            Box::new(replay)
        }
        None => Box::new(NoVerdicts),
    };
    let evaluator: &mut dyn Tier3Evaluator = match judge.as_mut() {
        Some(judge) => judge,
        None => evaluator.as_mut(),
    };
    let options = CheckOptions { evaluated_at, eval_runs: args.eval_runs };
    let report = evaluate(&spec, &EvidenceSet { values: evidence, trace }, &mut *evaluator, &options);
    // What the judge spent is said also when it stopped the check.
    let report = report.map_err(|error| {
        say_judge_usage(judge.as_ref(), &args);
        naming_verdicts(error, args.tier3_verdicts.as_deref())
    })?;
    if args.eval_runs > 1 && report.checkpoints.iter().all(|c| c.tier != 3 || c.result == ResultState::NotApplicable) {
        say_err!(
            "warning: --eval-runs {}: no tier-3 checkpoint was judged (the spec has none, or none applies), so the runs \
             are one run repeated; tier_3_confidence says INSUFFICIENT_DATA",
            args.eval_runs
        );
    }
    let comparison = baseline.as_ref().map(|baseline| compare_reports(baseline, &report));
    let calibration = match golden {
        Some((path, golden)) => {
            let run = run_golden(&spec, path, golden, &options, args.malformed, judge.as_mut());
            Some(run.inspect_err(|_| say_judge_usage(judge.as_ref(), &args))?)
        }
        None => None,
    };
    say(&render_summary(&report, comparison.as_ref()))?;
    say_judge_usage(judge.as_ref(), &args);
    if let Some(calibration) = &calibration {
        say(&calibration.render())?;
    }
    let write = |path: &str, text: String| -> anyhow::Result<()> {
        if path == "-" {
            return std::io::stdout().write_all(text.as_bytes()).context("cannot write to standard output");
        }
        super::write_output(path, text.as_bytes())
    };
    if let Some(path) = &args.json {
        let mut text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
        write(path, text)?;
    }
    if let Some(path) = &args.markdown {
        let mut markdown = render_markdown(&report, comparison.as_ref());
        if let Some(calibration) = &calibration {
            // A fence longer than any run of backticks in the text (case names and ids are
            // the user's), so nothing inside can close it.
            let text = calibration.render();
            let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
            let fence = "`".repeat(longest.max(2) + 1);
            markdown.push_str(&format!("\n## Golden-set calibration\n\n{fence}text\n{text}{fence}\n"));
        }
        write(path, markdown)?;
    }
    let regressions = comparison.as_ref().map_or(0, |c| c.regressions().count());
    let verdict = match report.scores.compliance_percent {
        None => {
            say("FAIL: no checkpoint was scorable (all NOT_APPLICABLE or BLOCKED)\n")?;
            ExitCode::from(1)
        }
        Some(score) if score < args.threshold => {
            say(&format!("FAIL: compliance {score:.2}% is below the threshold {}%\n", percent_text(args.threshold)))?;
            ExitCode::from(1)
        }
        Some(_) if args.fail_on_regression && regressions > 0 => {
            say(&format!("FAIL: {regressions} checkpoint(s) regressed against the baseline\n"))?;
            ExitCode::from(1)
        }
        Some(score) => {
            say(&format!("PASS: compliance {score:.2}% meets the threshold {}%\n", percent_text(args.threshold)))?;
            ExitCode::SUCCESS
        }
    };
    std::io::stdout().flush().context("cannot write to standard output")?;
    Ok(verdict)
}

/// A golden set: annotated runs, paths relative to the golden file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GoldenFile {
    cases: Vec<GoldenEntry>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GoldenEntry {
    name: String,
    #[serde(default)]
    trace: Option<String>,
    #[serde(default)]
    evidence: Vec<String>,
    /// Recorded verdicts; with `--judge` the judge evaluates the case instead.
    #[serde(default)]
    tier3_verdicts: Option<String>,
    human: std::collections::BTreeMap<String, agentic_eval::compliance::ResultState>,
}

/// Reads a golden set (strict JSON: a label given twice is a conflict, not "the last one
/// wins"), with the paths of its cases resolved against the set's own directory.
fn read_golden(path: &str) -> anyhow::Result<GoldenFile> {
    let text = read_text(path, "the golden set")?;
    let mut golden: GoldenFile = from_strict_json(&text).with_context(|| {
        format!("golden set `{path}` is invalid; write {{\"cases\": [{{\"name\", \"trace\", \"evidence\": [...], \"tier3_verdicts\", \"human\": {{\"ID\": \"PASS\"}}}}]}}")
    })?;
    let mut names = std::collections::HashSet::new();
    if let Some(twice) = golden.cases.iter().find(|case| !names.insert(case.name.as_str())) {
        bail!("golden set `{path}` has two cases named `{}`; give each case its own name", twice.name);
    }
    let base = std::path::Path::new(path).parent().unwrap_or(std::path::Path::new("."));
    let resolve = |relative: &mut String| *relative = base.join(&*relative).to_string_lossy().into_owned();
    for case in &mut golden.cases {
        case.trace.iter_mut().chain(&mut case.evidence).chain(&mut case.tier3_verdicts).for_each(resolve);
    }
    Ok(golden)
}

fn run_golden(
    spec: &CompiledSpec,
    path: &str,
    golden: GoldenFile,
    options: &CheckOptions,
    malformed: Malformed,
    mut judge: Option<&mut JudgeTier3Evaluator>,
) -> anyhow::Result<Calibration> {
    let mut cases = Vec::new();
    let sources = SourcesRead::of(spec);
    for entry in golden.cases {
        let name = entry.name.clone();
        let mut run_case = || -> anyhow::Result<GoldenCase> {
            let values = read_evidence(spec, &sources, &entry.evidence)?;
            let trace = match &entry.trace {
                // A malformed record is skipped or fatal as for the main trace (`--malformed`).
                Some(trace) => Some(run_trace(spec, trace, TraceFormatArg::Auto, malformed)?),
                None => None,
            };
            let mut recorded;
            let (evaluator, verdicts_file): (&mut dyn Tier3Evaluator, _) =
                match (judge.as_deref_mut(), &entry.tier3_verdicts) {
                    (Some(judge), _) => (judge, None),
                    (None, Some(file)) => {
                        recorded = read_verdicts(spec, file, "the tier-3 verdicts file of a golden case")?;
                        (&mut recorded, Some(file))
                    }
                    (None, None) => {
                        bail!(
                            "it has no `tier3_verdicts`; add the file, or pass `--judge` to let the judge evaluate it"
                        )
                    }
                };
            let single = CheckOptions { evaluated_at: options.evaluated_at.clone(), eval_runs: 1 };
            let report = evaluate(spec, &EvidenceSet { values, trace }, evaluator, &single)
                .map_err(|error| naming_verdicts(error, verdicts_file.map(String::as_str)))?;
            Ok(GoldenCase { name: entry.name.clone(), report, human: entry.human.clone() })
        };
        // Every error names the golden set and the case, whatever went wrong inside it.
        cases.push(run_case().with_context(|| format!("golden set `{path}`, case `{name}`"))?);
    }
    Ok(calibrate(&cases))
}

/// Reads a file of recorded tier-3 verdicts (`what` names it in errors) and checks every
/// verdict in it against the spec now, also those this trace and evidence will not use
/// (every run of a list, checkpoints that turn out not applicable); a verdict for an id
/// that is not a tier-3 checkpoint is most likely a typo: said, and ignored.
fn read_verdicts(spec: &CompiledSpec, path: &str, what: &str) -> anyhow::Result<ReplayEvaluator> {
    let text = read_text(path, what)?;
    let replay = ReplayEvaluator::from_json(&text).map_err(|error| {
        // A file none of whose keys is a checkpoint of the spec is most likely another kind
        // of file (evidence given as verdicts: the two options swapped).
        let keys: Vec<String> = serde_json::from_str::<Map<String, Value>>(&text)
            .map(|map| map.keys().cloned().collect())
            .unwrap_or_default();
        let none_is_a_checkpoint =
            !keys.is_empty() && !keys.iter().any(|key| spec.checkpoints.iter().any(|c| c.checkpoint.id == *key));
        let error = anyhow::Error::new(error).context(format!("reading `{path}`"));
        if none_is_a_checkpoint {
            let shown: Vec<String> = keys.iter().take(5).map(|key| format!("`{key}`")).collect();
            error.context(format!(
                "`{path}` is not a tier-3 verdicts file: its keys ({}{}) are no checkpoint ids of the spec; is it an \
                 evidence file? (evidence goes to --evidence)",
                shown.join(", "),
                if keys.len() > 5 { ", ..." } else { "" }
            ))
        } else {
            error
        }
    })?;
    replay
        .validate_against(spec.checkpoints.iter().filter(|c| c.tier == Tier::Semantic).map(|c| &c.checkpoint))
        .with_context(|| format!("reading `{path}`"))?;
    let tier3 = tier3_ids(spec);
    for id in replay.ids() {
        if !tier3.contains(id) {
            say_err!(
                "warning: {path}: verdict for `{id}` ignored: the spec has no tier-3 checkpoint `{id}`; fix the id or remove the verdict"
            );
        }
    }
    Ok(replay)
}

/// The ids of the spec's tier-3 checkpoints, to look verdict ids up in (a spec may hold
/// thousands).
fn tier3_ids(spec: &CompiledSpec) -> std::collections::HashSet<&str> {
    spec.checkpoints.iter().filter(|c| c.tier == Tier::Semantic).map(|c| c.checkpoint.id.as_str()).collect()
}

/// Tier 3 without `--tier3-verdicts`: every tier-3 checkpoint is an input error.
struct NoVerdicts;

impl Tier3Evaluator for NoVerdicts {
    fn evaluate(&mut self, request: &Tier3Request<'_>) -> Result<Tier3Verdict, Tier3Error> {
        Err(Tier3Error::Evaluator {
            checkpoint: request.checkpoint.id.clone(),
            reason: "no tier-3 evaluator is configured; pass `--judge JUDGE.yaml` (an LLM judge) or `--tier3-verdicts FILE` (recorded verdicts)".to_owned(),
        })
    }
}

/// Says on stderr what the judge of `--judge` spent: calls, repairs and tokens.
fn say_judge_usage(judge: Option<&JudgeTier3Evaluator>, args: &CheckArgs) {
    if let Some(judge) = judge {
        let usage = &judge.usage;
        let source =
            if args.judge_cassette.is_some() { " (answered from the cassette; tokens as recorded)" } else { "" };
        say_err!(
            "judge: {} call(s), {} repair(s), {} prompt + {} completion tokens{source}",
            usage.calls,
            usage.repairs,
            usage.prompt_tokens,
            usage.completion_tokens
        );
    }
}

/// The LLM judge of `--judge` as the tier-3 evaluator: built from the configuration like
/// `agentic judge calibrate` builds it (`JudgeConfig::load`, `Judge::builder`), with the
/// clients of the configuration, or answered from `--judge-cassette` by the replay provider,
/// or recorded into `--judge-record`.
fn judge_evaluator(path: &str, args: &CheckArgs) -> anyhow::Result<JudgeTier3Evaluator> {
    let mut config = JudgeConfig::load(Path::new(path))?;
    if let Some(base_url) = &args.judge_base_url {
        for judge in &mut config.judges {
            judge.base_url.clone_from(base_url);
        }
    }
    // Tier 3 asks one sample per checkpoint and run: repeats are `--eval-runs`.
    if config.sampling_count > 1 || config.aggregation != Aggregation::Mean {
        say_err!(
            "warning: `{path}` sets `sampling_count: {}` / `aggregation`; tier 3 of `check` asks one sample per \
             checkpoint and run (its first judge answers) and ignores them; use `--eval-runs N` to repeat tier 3 \
             and report the spread",
            config.sampling_count
        );
    }
    // Greedy decoding gives most models the same reply whatever the seed: the runs would
    // repeat one verdict, and `tier_3_confidence` would show no spread it could measure.
    if args.eval_runs > 1 && config.temperature == 0.0 {
        say_err!(
            "warning: the judge of `{path}` decodes at `temperature: 0` (set, or left out), so the {} runs of \
             `--eval-runs` decode greedily and most models give every run the same verdicts whatever the seed: \
             `tier_3_confidence` then shows no spread (a HIGH_CONFIDENCE says little); set a small `temperature` \
             (such as 0.1) to measure the judge's spread",
            args.eval_runs
        );
    }
    let mut builder = Judge::builder(config.clone());
    if let Some(cassette) = &args.judge_cassette {
        // A replay asks with the recording's seeds: without a fixed seed every request misses.
        if config.seed.is_none() {
            bail!(
                "`--judge-cassette {cassette}` needs a fixed `seed` in `{path}` (a replay asks with the seeds of \
                 the recording); add the `seed:` the recording used (`--judge-record` printed it)"
            );
        }
        // The cassette's callers name the judge (name, version, provider, structured
        // output), so a changed judge misses instead of replaying another judge's verdicts.
        let replay: Arc<dyn ModelProvider> = Arc::new(ReplayProvider::load(Path::new(cassette))?.with_strict_callers());
        builder = builder.providers(vec![replay; config.judges.len()]);
    } else if let Some(cassette) = &args.judge_record {
        let limiter = Arc::new(AdaptiveLimiter::new(config.max_concurrency));
        let mut providers: Vec<Arc<dyn ModelProvider>> = Vec::new();
        for judge in &config.judges {
            providers.push(Arc::new(RecordingProvider::new(judge.client(limiter.clone())?, Path::new(cassette))?));
        }
        builder = builder.providers(providers);
    }
    let judge = builder.build().with_context(|| match &args.judge_base_url {
        Some(url) => format!("configuring the judge from `{path}` with `--judge-base-url {url}`"),
        None => format!("configuring the judge from `{path}`"),
    })?;
    if let Some(cassette) = &args.judge_record {
        // A replay asks with the seeds of the recording: without a fixed seed the next run
        // draws others and misses every exchange.
        if config.seed.is_none() {
            say_err!(
                "warning: `{path}` sets no `seed`, so this run drew {}; to replay `{cassette}` with --judge-cassette, \
                 add `seed: {}` to the judge configuration",
                judge.seed(),
                judge.seed()
            );
        }
        if std::fs::metadata(cassette).is_ok_and(|metadata| metadata.len() > 0) {
            say_err!(
                "warning: `{cassette}` already holds exchanges; new ones are appended, and a replay answers a \
                 request asked again with the earliest recording first (delete the file to record afresh)"
            );
        }
    }
    Ok(JudgeTier3Evaluator::new(judge)?)
}

/// Whether two output paths name the same file (also through `.`, `..` or a symbolic link);
/// `-` is standard output.
fn same_file(a: &str, b: &str) -> bool {
    if a == b {
        // A device (`/dev/null`) can take both reports.
        return std::fs::metadata(a).map_or(true, |metadata| metadata.is_file());
    }
    // The same regular file under two names (a hard link, standard input redirected from
    // it); devices such as /dev/null are shared harmlessly.
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let metadata = |path: &str| std::fs::metadata(if path == "-" { "/dev/stdin" } else { path }).ok();
        if let (Some(x), Some(y)) = (metadata(a), metadata(b))
            && x.is_file()
            && y.is_file()
        {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    if a == "-" || b == "-" {
        return false;
    }
    matches!((super::where_written(Path::new(a)), super::where_written(Path::new(b))), (Some(a), Some(b)) if a == b)
}

/// A text input of the check (spec, evidence, verdicts, baseline, golden set), without the
/// byte-order mark some editors write.
/// `what` names the input in errors (`the --baseline report`), so a missing file says which
/// option gave it.
pub(crate) fn read_text(path: &str, what: &str) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {what} `{path}`"))?;
    let mut text =
        String::from_utf8(bytes).map_err(|error| anyhow::anyhow!("{what} `{path}` {}", super::not_utf8(&error)))?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

fn read_spec(path: &str) -> anyhow::Result<CompiledSpec> {
    let text = read_text(path, "the checkpoint spec")?;
    // Another kind of document would only give a page of unknown keys.
    if let Some(kind) = other_document_kind(&text) {
        bail!(
            "`{path}` is {kind}, not a checkpoint spec (which has `workflow`, `spec_version` and `checkpoints`); \
             pass the checkpoint spec, see docs/checkpoints.md"
        );
    }
    let load = load_spec(&text, path);
    let errors = load.diagnostics.iter().filter(|d| d.is_error()).count();
    for diagnostic in &load.diagnostics {
        say_err!("{diagnostic}");
    }
    match load.spec {
        Some(spec) if errors == 0 => Ok(spec),
        _ => bail!(format!(
            "checkpoint spec `{path}` has {errors} error(s); fix them (run `agentic lint {path}`) and check again"
        )),
    }
}

/// A percentage as given, with at least two decimals (`85.00`, `57.004`): a threshold is
/// never shown rounded to what the score it failed on shows.
fn percent_text(value: f64) -> String {
    let two = format!("{value:.2}");
    if two.parse::<f64>().is_ok_and(|rounded| rounded == value) { two } else { format!("{value}") }
}

/// JSON that people write, read strictly (a key repeated in one object is an error with its
/// line) into `T`.
/// The published JSON Schema of the compliance report.
fn report_schema() -> Value {
    agentic_eval::compliance::published_schemas()
        .into_iter()
        .find_map(|(path, schema)| path.ends_with("compliance-report.schema.json").then_some(schema))
        .unwrap_or_default()
}

/// Removes from `value` the object keys `schema` does not list (a report of a newer minor
/// version), naming each removed key by its JSON pointer in `ignored`.
fn prune_to_schema(value: &mut Value, schema: &Value, at: &str, ignored: &mut Vec<String>) {
    prune_in(value, schema, schema, at, ignored);
}

fn prune_in(value: &mut Value, schema: &Value, root: &Value, at: &str, ignored: &mut Vec<String>) {
    // Follow `$ref: #/$defs/Name`.
    let schema = match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(name) => root.pointer(&format!("/$defs/{name}")).unwrap_or(schema),
        None => schema,
    };
    match value {
        Value::Object(map) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
            map.retain(|key, _| {
                let known = properties.contains_key(key);
                if !known {
                    ignored.push(format!("`{at}/{key}`"));
                }
                known
            });
            for (key, member) in map.iter_mut() {
                prune_in(member, &properties[key], root, &format!("{at}/{key}"), ignored);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (idx, item) in items.iter_mut().enumerate() {
                    prune_in(item, item_schema, root, &format!("{at}/{idx}"), ignored);
                }
            }
        }
        _ => {}
    }
}

/// What kind of JSON value `value` is, for a message: "a list", "a string", "null".
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "an object",
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

/// Strict JSON (a key given twice is refused) read into `T`; a value of the wrong shape is
/// named by its place (`cases[0].human.P3-01: unknown variant ...`).
fn from_strict_json<T: serde::de::DeserializeOwned>(text: &str) -> anyhow::Result<T> {
    let value: Value = agentic_core::json_strict::from_str(text)?;
    if !value.is_object() {
        bail!("expected a JSON object, found {}", json_kind(&value));
    }
    from_value_at(value)
}

/// `value` read into `T`; a value of the wrong shape is named by its place
/// (`checkpoints[3].tier: invalid type ...`).
fn from_value_at<T: serde::de::DeserializeOwned>(value: Value) -> anyhow::Result<T> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let place = error.path().to_string();
        anyhow::anyhow!("at `{place}`: {}", error.into_inner())
    })
}

/// An evaluation error, naming the recorded verdicts file when there is one (a verdict it
/// holds is what to fix).
fn naming_verdicts(error: agentic_eval::compliance::ComplianceError, file: Option<&str>) -> anyhow::Error {
    match file {
        Some(file) => anyhow::Error::new(error).context(format!("in tier-3 verdicts file `{file}`")),
        None => anyhow::Error::new(error),
    }
}

fn read_evidence(
    spec: &CompiledSpec,
    sources: &SourcesRead<'_>,
    paths: &[String],
) -> anyhow::Result<Map<String, Value>> {
    let mut merged = Map::new();
    for path in paths {
        let text = read_text(path, "evidence file")?;
        // A lone surrogate escape (a string cut inside an emoji) reads as U+FFFD, as in traces.
        let value: Value = agentic_core::json_strict::from_str_lenient_surrogates(&text).map_err(|error| {
            let advice = json_advice(&text, &error);
            anyhow::Error::new(error).context(format!("evidence file `{path}` is not valid JSON{advice}"))
        })?;
        let Value::Object(object) = value else {
            bail!("evidence file `{path}` must hold a JSON object whose keys are evidence sources");
        };
        if looks_like_verdicts(spec, sources, &object) {
            say_err!(
                "warning: the keys of evidence file `{path}` ({}) are checkpoint ids, not evidence sources: is it a \
                 tier-3 verdicts file? (verdicts go to --tier3-verdicts; evidence is an object of sources such as \
                 `git`, as `agentic evidence git` writes)",
                object.keys().take(5).map(|key| format!("`{key}`")).collect::<Vec<_>>().join(", ")
            );
        }
        // In order: a later file's source replaces an earlier one (a golden case layers its
        // own `pr_body` over the shared evidence).
        for (key, value) in object {
            merged.insert(key, value);
        }
    }
    Ok(merged)
}

/// Whether evidence keys are all checkpoint ids of the spec and no source it reads: most
/// likely a tier-3 verdicts file given as evidence (a spec may name a source like a
/// checkpoint, and one it reads is evidence).
fn looks_like_verdicts(spec: &CompiledSpec, sources: &SourcesRead<'_>, evidence: &Map<String, Value>) -> bool {
    !evidence.is_empty()
        && evidence.keys().all(|key| spec.checkpoints.iter().any(|c| c.checkpoint.id == *key) && !sources.reads(key))
}

/// The evidence sources a spec reads: by checkpoint (its `evidence_sources` and the paths of
/// its `applies_when`, with the ids of the checkpoints that read each), and by constraint
/// (the paths of `active_when`).
struct SourcesRead<'s> {
    by_checkpoints: std::collections::BTreeMap<&'s str, Vec<&'s str>>,
    by_constraints: Vec<&'s str>,
}

impl<'s> SourcesRead<'s> {
    fn of(spec: &'s CompiledSpec) -> SourcesRead<'s> {
        let mut by_checkpoints: std::collections::BTreeMap<&str, Vec<&str>> = std::collections::BTreeMap::new();
        for checkpoint in &spec.checkpoints {
            let id = checkpoint.checkpoint.id.as_str();
            let condition_sources = checkpoint
                .applies_when
                .iter()
                .flat_map(|condition| condition.paths().into_iter().map(|path| path.source()));
            for source in
                checkpoint.checkpoint.verification.evidence_sources.iter().map(String::as_str).chain(condition_sources)
            {
                let ids = by_checkpoints.entry(source).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        let by_constraints = spec
            .constraints
            .iter()
            .filter_map(|constraint| constraint.active_when.as_ref())
            .flat_map(|condition| condition.paths().into_iter().map(|path| path.source()))
            .collect();
        SourcesRead { by_checkpoints, by_constraints }
    }

    /// Whether a checkpoint or a constraint reads `source`.
    fn reads(&self, source: &str) -> bool {
        self.by_checkpoints.contains_key(source) || self.by_constraints.contains(&source)
    }
}

fn run_trace(
    spec: &CompiledSpec,
    path: &str,
    format: TraceFormatArg,
    malformed: Malformed,
) -> anyhow::Result<agentic_eval::compliance::TraceOutcome> {
    let input = if path == "-" { TraceInput::stream(std::io::stdin()) } else { TraceInput::open(Path::new(path)) }
        .with_context(|| format!("cannot read trace `{path}`"))?;
    let format = match format {
        TraceFormatArg::Auto => None,
        TraceFormatArg::Tooltrace => Some(TraceFormat::Tooltrace),
        TraceFormatArg::ClaudeHook => Some(TraceFormat::ClaudeHook),
        TraceFormatArg::OtlpJson => Some(TraceFormat::OtlpJson),
    };
    let mut input = input;
    if let Some(forced) = format {
        warn_on_forced_format(path, forced, &mut input);
    }
    let has_tier3 = spec.checkpoints.iter().any(|c| c.tier == Tier::Semantic);
    let mut engine = SequenceEngine::new(spec.rules.clone(), if has_tier3 { 40 } else { 0 });
    let mut skipped = 0u64;
    let mut first_skipped = None;
    let mut fatal = None;
    let mut on_error = |error: TraceError| match malformed {
        // A damaged file (a read error, a corrupt gzip stream) ends the input: never skipped.
        _ if error.unreadable => {
            fatal = Some(error);
            ControlFlow::Break(())
        }
        Malformed::Fail => {
            fatal = Some(error);
            ControlFlow::Break(())
        }
        Malformed::Skip => {
            skipped += 1;
            first_skipped.get_or_insert(error.line);
            if skipped <= 20 {
                say_err!("warning: {path}:{error} (skipped)");
            }
            ControlFlow::Continue(())
        }
    };
    let setting = std::env::var("AGENTIC_CHECK_WORKERS").ok();
    let reference = setting.as_deref() == Some("reference");
    match input {
        TraceInput::File(file) if reference => {
            run_reference(std::io::BufReader::new(file), format, &mut engine, &mut on_error);
        }
        TraceInput::Stream(stream) if reference => run_reference(stream, format, &mut engine, &mut on_error),
        TraceInput::File(file) => run_fast(file, format, setting.as_deref(), &mut engine, &mut on_error),
        TraceInput::Stream(stream) => run_stream(stream, format, &mut engine, &mut on_error),
    }
    if let Some(error) = fatal {
        if error.unreadable {
            bail!(
                "{path}:{error}\n  hint: the file is damaged or could not be read, and nothing after this point was \
                 checked; for a gzip file, `gzip -t {path}` tests it"
            );
        }
        bail!(
            "{path}:{error}\n  hint: `--malformed fail` stopped the check at this record, so nothing after it was \
             read (not even what the message says is read on its own); fix the record, or pass `--malformed skip` to \
             skip malformed records"
        );
    }
    if skipped > 20 {
        say_err!("warning: {path}: {skipped} malformed record(s) skipped in total");
    }
    let mut outcome = engine.finish();
    if std::env::var_os("AGENTIC_CHECK_STATS").is_some() {
        say_err!(
            "stats: {} event(s), {} call(s), {} event(s) through block summaries",
            outcome.events,
            outcome.calls,
            outcome.summarized
        );
    }
    if let Some(line) = first_skipped {
        // A skipped record may be a call a rule is about: the verdicts say so, not only stderr.
        let warning = format!(
            "Warning: {skipped} malformed trace record(s) were skipped (first at line {line}); a call among them \
             could change this result (the warnings name them; `--malformed fail` stops at the first)."
        );
        for rule in &mut outcome.outcomes {
            agentic_eval::compliance::append_sentence(&mut rule.notes, &warning);
        }
    }
    if outcome.calls == 0 && skipped > 0 {
        // Nothing usable: scoring the rules on a trace without calls would pass every `never`,
        // while the malformed records may be the calls (a file whose first record is of
        // another format than the rest: the first record tells the format).
        let hint = match trace_head_kind(path) {
            HeadKind::CarriageReturnsOnly => {
                "; its lines end in a carriage return alone (old Mac line endings), so it reads as one line: convert \
                 them with `tr '\\r' '\\n' < FILE > FIXED`"
            }
            HeadKind::Binary => {
                "; it is not text (a NUL byte, or bytes that are not UTF-8, near its start): a binary export, such as \
                 OTLP protobuf? `check` reads OTLP as JSON (the OpenTelemetry Collector's `file` exporter writes it)"
            }
            HeadKind::Text => "",
        };
        if outcome.events == 0 {
            bail!(
                "no record of trace `{path}` could be read ({skipped} malformed); \
                 check that it is a trace (tooltrace JSONL, Claude Code hook JSONL or OTLP/JSON) and the --trace-format{hint}"
            );
        }
        bail!(
            "no call of trace `{path}` could be read: {} event(s) were read, none of them a tool call or agent \
             invocation, and {skipped} record(s) were malformed{}, which may be the calls (the format is told from \
             the first record: a file that starts with a record of another format reads the rest as malformed); \
             check the warnings above, keep each format in a file of its own, and set --trace-format{hint}",
            outcome.events,
            first_skipped.map_or_else(String::new, |line| format!(" (first at line {line})")),
        );
    }
    if outcome.calls == 0 && !spec.rules.is_empty() {
        // Absence rules (`never`, `at_most`) pass on such a trace: say so, it is rarely meant.
        let what = match (outcome.events, path) {
            (0, "-") => "no events (standard input was empty, or closed)",
            (0, _) => "no events",
            _ => {
                "no tool calls or agent invocations (calls are tooltrace lines, Claude Code `PreToolUse`, \
                 `PostToolUse`, `PostToolUseFailure` and `SubagentStart` records, and OTLP spans that follow the \
                 OpenTelemetry GenAI conventions: `gen_ai.operation.name` `execute_tool` or `invoke_agent`, a span \
                 name that starts with it, or a `gen_ai.tool.name`)"
            }
        };
        say_err!(
            "warning: {path}: the trace has {what}; tier-2 rules that forbid something pass without \
             evidence (is the trace capture installed, and is --trace-format right?)"
        );
        // (The notes of the rules that passed say so too: `SequenceEngine::finish`.)
    }
    // Counted marks the readers left on events, each with the line of the first.
    let warn = |(count, first): (u64, Option<u64>), rest: &dyn Fn(u64, &str) -> String| {
        if count > 0 {
            say_err!("warning: {path}: {}", rest(count, &agentic_eval::compliance::first_at_line(first)));
        }
    };
    warn(outcome.misattributed_spawns, &|count, at| {
        format!(
            "{count} spawning call(s) ended in a way that contradicts how subagents were linked to the calls of \
             their session and subagent type{at} (a call ended without a subagent while an earlier one, linked to a \
             subagent, had not ended: most likely a denied call, which Claude Code ends without a record; or a call \
             ended while the subagent linked to it still ran: parallel subagents of one type that started in another \
             order than their calls): hook records do not say which call spawned which subagent, so `within` rules \
             may count calls inside those subagents under the wrong call (run subagents of one type one after \
             another, or give parallel ones distinct types and scope by `{{agent: TYPE}}`)"
        )
    });
    warn(outcome.calls_without_arguments, &|count, at| {
        format!(
            "{count} tool call(s) of tools that rules with `args` or `args_text` conditions name record no \
             arguments{at} (a tooltrace record without `args`, or a hook record without `tool_input`: check the \
             field's spelling; in OTLP, `gen_ai.tool.call.arguments` is opt-in in the OpenTelemetry GenAI \
             conventions), so those conditions could not match those calls (record the arguments; for OTLP, turn on \
             recording of tool arguments in the instrumentation)"
        )
    });
    warn(outcome.calls_with_late_arguments, &|count, at| {
        format!(
            "{count} call(s) started without arguments and ended with them{at}: order rules (`before`, \
             `only_after`, `immediately_before`), scopes (`within`) and every rule from a spec's 65th on judge a call \
             at its start, so their `args` or `args_text` conditions did not see the end's arguments (the first 64 \
             `never` and `count` rules did; record the arguments at the start)"
        )
    });
    warn(outcome.calls_with_changed_arguments, &|count, at| {
        format!(
            "{count} call(s) ended with arguments other than their start's{at}, which `never` or `count` rules matched \
             and the start's did not (a PreToolUse hook that rewrites the input does this): those rules took the calls \
             in at their end; order rules judged them by their start's arguments (to have those judge what ran, check \
             the end records alone; for Claude Code hooks: `jq -c 'select(.hook_event_name != \"PreToolUse\")'`)"
        )
    });
    warn(outcome.calls_with_text_arguments, &|count, at| {
        format!(
            "{count} tool call(s) of tools that rules with `args` conditions name record arguments that are not \
             a JSON object{at} (a tooltrace `args` or a hook's `tool_input` written as text or a lone value, or an \
             OTLP `gen_ai.tool.call.arguments` that is not JSON), so those conditions could not match those calls \
             (`args_text` matches such text; record the arguments as a JSON object, and for OTLP mind an SDK's \
             attribute length limit, `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`: JSON cut short reads as text)"
        )
    });
    warn(outcome.calls_without_name, &|count, at| {
        format!(
            "{count} call(s) record no tool or agent name{at} (an OTLP `execute_tool` or `invoke_agent` span without \
             `gen_ai.tool.name` or `gen_ai.agent.name`, named only by its operation, or a Claude Code \
             `SubagentStart` without `agent_type`), so rules that match calls by name could not match them (record \
             the name in the instrumentation)"
        )
    });
    warn(outcome.out_of_order_spans, &|count, at| {
        format!(
            "{count} OTLP span(s) came after more records than the reader holds to order spans by time ({} MiB of \
             records or {} spans){at}, so they are placed after events that started later: `before`, `only_after` \
             and `immediately_before` rules may see calls out of order (check one run per file, and merge its \
             exports into one document, which is ordered whole: `jq -cs '{{resourceSpans: map(.resourceSpans[])}}' \
             FILE`)",
            agentic_adapters::trace::ORDER_WINDOW_BYTES / (1024 * 1024),
            agentic_adapters::trace::ORDER_WINDOW_SPANS
        )
    });
    warn(outcome.times_without_zone, &|count, at| {
        format!(
            "{count} record(s) have a `timestamp` without a time zone{at}, read as UTC; their calls count as usual \
             (tooltrace and hook records are ordered by their place in the file), but write `Z` or an offset such as \
             `+02:00` so their times are right"
        )
    });
    warn(outcome.times_unread, &|count, at| {
        format!(
            "{count} record(s) have a `timestamp` that is not an RFC 3339 time{at}; their calls count as usual \
             (tooltrace and hook records are ordered by their place in the file) and carry no time: write times \
             such as \"2026-02-19T10:00:00Z\""
        )
    });
    warn(outcome.spans_without_start, &|count, at| {
        format!(
            "{count} OTLP span(s) record no `startTimeUnixNano`{at}, so they are placed at their end time (as spans \
             that took no time; before every other event when they record no end either): `before`, `only_after` and \
             `immediately_before` rules may see them where they did not run (export the start time on every span)"
        )
    });
    if !outcome.unmatched_scopes.is_empty() && outcome.calls > 0 {
        let agents = outcome.unmatched_scopes.iter().any(|(_, agent)| *agent);
        say_err!(
            "warning: {path}: no span of the trace matched the `within` scope(s) {}, so the rules scoped to them saw \
             nothing inside (check the names{})",
            outcome.unmatched_scopes.iter().map(|(scope, _)| format!("`{scope}`")).collect::<Vec<_>>().join(", "),
            if agents {
                "; tooltrace and Claude Code hook captures without `agent_type` record no agents by name: scope \
                 those by the spawning call, such as `within: {tool: Task}`"
            } else {
                ""
            }
        );
    }
    if outcome.unlinked_scopes > 0 {
        say_err!(
            "warning: {path}: {} `within` rule(s) matched their scope, but no tool call in the trace records a parent \
             (Claude Code hook records without `agent_id`, tooltrace lines without `parent_trace_id`), so nothing \
             could be inside a scope: those rules saw nothing inside it (capture the subagent links)",
            outcome.unlinked_scopes
        );
    }
    if let [first, second, more @ ..] = outcome.traces.as_slice() {
        let more = if more.is_empty() { "" } else { ", ..." };
        say_err!(
            "warning: {path}: the trace holds the calls of more than one session or trace ({first:?}, {second:?}{more}); \
             tier-2 rules read them as one sequence, in file order (OTLP spans by time), so `before`, `only_after` and \
             `immediately_before` can mix them up: check one session's records at a time"
        );
    }
    Ok(outcome)
}

/// What the first 64 KiB of the trace file at `path` (not standard input, not gzip) hold:
/// binary data (a NUL byte, or bytes that are not UTF-8 other than a character the 64 KiB
/// cut), or carriage returns and no line feed (lines ended the old Mac way, which read as one
/// line), or text.
fn trace_head_kind(path: &str) -> HeadKind {
    use std::io::Read;
    let mut head = Vec::new();
    let read = std::fs::File::open(path).and_then(|file| file.take(64 * 1024).read_to_end(&mut head));
    // Standard input was read already; a gzip file is read through its decoder.
    if path == "-" || read.is_err() || head.starts_with(&[0x1f, 0x8b]) {
        HeadKind::Text
    } else if head.contains(&0) || std::str::from_utf8(&head).is_err_and(|error| error.error_len().is_some()) {
        HeadKind::Binary
    } else if head.contains(&b'\r') && !head.contains(&b'\n') {
        HeadKind::CarriageReturnsOnly
    } else {
        HeadKind::Text
    }
}

/// What the start of a trace file that gave no record looks like, for the error's hint.
enum HeadKind {
    Text,
    /// Lines end in a carriage return alone, so the file reads as one line.
    CarriageReturnsOnly,
    /// NUL bytes or bytes that are not UTF-8 (beyond a character cut at the end of the head).
    Binary,
}

/// Warns about inputs whose absence turns checks into NOT_APPLICABLE or BLOCKED without a
/// word: no `--trace` for a spec with tier-2 checkpoints, no `--evidence` for tier-1 ones,
/// and a constraint that is active only because a source its `active_when` reads is absent
/// (a misspelt source name makes `not`, `exists: false` and `not_equals` conditions hold,
/// and the checkpoints it affects BLOCKED instead of FAIL).
fn warn_on_missing_inputs(
    spec: &CompiledSpec,
    sources: &SourcesRead<'_>,
    args: &CheckArgs,
    evidence: &serde_json::Map<String, Value>,
) {
    let ids_of = |tier: Tier| -> Vec<&str> {
        spec.checkpoints.iter().filter(|c| c.tier == tier).map(|c| c.checkpoint.id.as_str()).collect()
    };
    let listed = |ids: &[&str]| {
        let shown: Vec<&str> = ids.iter().take(5).copied().collect();
        format!("{}{}", shown.join(", "), if ids.len() > 5 { ", ..." } else { "" })
    };
    let sequence = ids_of(Tier::Sequence);
    if args.trace.is_none() && !sequence.is_empty() {
        say_err!(
            "warning: no --trace: the {} tier-2 checkpoint(s) ({}) are NOT_APPLICABLE; pass --trace FILE to check them",
            sequence.len(),
            listed(&sequence)
        );
    }
    let state = ids_of(Tier::State);
    if args.evidence.is_empty() && !state.is_empty() {
        say_err!(
            "warning: no --evidence: the {} tier-1 checkpoint(s) ({}) are NOT_APPLICABLE; pass --evidence FILE \
             (for example from `agentic evidence git`) to check them",
            state.len(),
            listed(&state)
        );
    }
    // Evidence that is all a verdicts file (the two options swapped: `read_evidence` said so
    // per file) gets no warning per source.
    let swapped = looks_like_verdicts(spec, sources, evidence);
    // A source the spec reads that the evidence lacks, while the evidence has a source
    // nothing reads: most likely one name spelt two ways (`Git` for `git`), which would make
    // the checkpoints NOT_APPLICABLE without a word.
    let unread: Vec<&str> = evidence.keys().map(String::as_str).filter(|key| !sources.reads(key)).collect();
    if !evidence.is_empty() && !unread.is_empty() && !swapped {
        for (source, ids) in &sources.by_checkpoints {
            if *source == "trace_file" || evidence.get(*source).is_some() {
                continue;
            }
            let like = agentic_core::diagnostic::did_you_mean(source, unread.iter().copied())
                .map_or(String::new(), |key| format!(" (did you mean `{key}`?)"));
            // A checkpoint that reads the source only in its `applies_when` is scored when
            // that condition holds without it (`not`, `exists: false`, `not_equals`).
            let (applying, not_applicable): (Vec<&str>, Vec<&str>) = ids.iter().partition(|id| {
                spec.checkpoints.iter().find(|c| c.checkpoint.id == **id).is_some_and(|checkpoint| {
                    !checkpoint.checkpoint.verification.evidence_sources.iter().any(|s| s == source)
                        && checkpoint.applies_when.as_ref().is_some_and(|condition| condition.evaluate(evidence).holds)
                })
            });
            let mut effects = Vec::new();
            if !not_applicable.is_empty() {
                effects
                    .push(format!("the checkpoint(s) that read it ({}) are NOT_APPLICABLE", listed(&not_applicable)));
            }
            if !applying.is_empty() {
                effects.push(format!(
                    "the checkpoint(s) whose `applies_when` reads it ({}) apply only because it is absent",
                    listed(&applying)
                ));
            }
            say_err!(
                "warning: evidence source `{source}` is not in the evidence{like}, so {}, while the evidence has {}, \
                 which no checkpoint or constraint reads; check the source names",
                effects.join(", and "),
                unread.iter().map(|key| format!("`{key}`")).collect::<Vec<_>>().join(", ")
            );
        }
    }
    for constraint in &spec.constraints {
        let Some(condition) = &constraint.active_when else { continue };
        let mut absent: Vec<&str> = condition
            .paths()
            .into_iter()
            .map(|path| path.source())
            .filter(|source| evidence.get(*source).is_none_or(Value::is_null))
            .collect();
        absent.sort_unstable();
        absent.dedup();
        if !absent.is_empty() && condition.evaluate(evidence).holds {
            say_err!(
                "warning: constraint `{}` is active while evidence source(s) {} that its `active_when` reads are \
                 absent from the evidence, so those of {} that fail are reported BLOCKED; check the source name in \
                 `active_when` and the evidence files",
                constraint.constraint.id,
                absent.iter().map(|source| format!("`{source}`")).collect::<Vec<_>>().join(", "),
                listed(&constraint.constraint.affects.iter().map(String::as_str).collect::<Vec<_>>())
            );
        }
    }
}

/// [`agentic_core::json_strict::advice`] as a clause to append to "is not valid JSON".
pub(crate) fn json_advice(text: &str, error: &serde_json::Error) -> String {
    agentic_core::json_strict::advice(text, error).map_or_else(String::new, |advice| format!(": {advice}"))
}

/// Whether `time` holds a leap second (second 60, which chrono keeps as a second's worth
/// of nanoseconds) anywhere but in the last minute of a UTC day, as RFC 3339 (§5.7) allows.
fn misplaced_leap_second(time: &chrono::DateTime<chrono::Utc>) -> bool {
    use chrono::Timelike;
    time.nanosecond() >= 1_000_000_000 && !(time.hour() == 23 && time.minute() == 59)
}

/// Warns when `--trace-format` names another format than the trace's first record looks
/// like (every line of a Claude Code hook log also reads as a tooltrace record, for example,
/// and then counts every call twice).
fn warn_on_forced_format(path: &str, forced: TraceFormat, input: &mut TraceInput) {
    let mut head = vec![0u8; 64 * 1024];
    let bytes = match input {
        TraceInput::File(file) => {
            let read = std::os::unix::fs::FileExt::read_at(file, &mut head, 0).unwrap_or(0);
            &head[..read]
        }
        TraceInput::Stream(stream) => stream.fill_buf().unwrap_or_default(),
    };
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let Some(first) = bytes.split(|&b| b == b'\n').find(|line| !line.trim_ascii().is_empty()) else { return };
    let looks = match serde_json::from_slice::<serde_json::Value>(first) {
        Ok(record) => TraceFormat::detect(&record),
        // A document over several lines (pretty-printed OTLP): the first one, when it fits in
        // the head; else its telltale key.
        Err(_) => match serde_json::Deserializer::from_slice(bytes).into_iter::<serde_json::Value>().next() {
            Some(Ok(record)) => TraceFormat::detect(&record),
            _ => bytes.windows(15).any(|window| window == b"\"resourceSpans\"").then_some(TraceFormat::OtlpJson),
        },
    };
    if let Some(looks) = looks
        && looks != forced
    {
        say_err!(
            "warning: {path}: --trace-format {} but the first record looks like {}; results may be wrong (try --trace-format auto)",
            forced.name(),
            looks.name()
        );
    }
}

/// The reference pass (for differential tests): a full canonical event per record.
fn run_reference(
    reader: impl std::io::BufRead,
    format: Option<TraceFormat>,
    engine: &mut SequenceEngine,
    on_error: &mut dyn FnMut(TraceError) -> ControlFlow<()>,
) {
    for item in TraceReader::new(reader, format) {
        match item {
            Ok(event) => engine.feed(&event),
            Err(error) => {
                if on_error(error).is_break() {
                    break;
                }
            }
        }
    }
}

/// A trace that can only be read front to back (standard input, a decompressed file): one
/// thread, tooltrace lines matched without building events.
fn run_stream(
    reader: impl std::io::BufRead,
    format: Option<TraceFormat>,
    engine: &mut SequenceEngine,
    on_error: &mut dyn FnMut(TraceError) -> ControlFlow<()>,
) {
    TraceReader::new(reader, format).for_each_item(|item| match item {
        Ok(TraceItem::Event(event)) => {
            engine.feed(&event);
            ControlFlow::Continue(())
        }
        Ok(TraceItem::Tooltrace(view)) => {
            note_session(engine, &view);
            engine.feed_ref(&view_ref(&view));
            ControlFlow::Continue(())
        }
        Err(error) => on_error(error),
    });
}

/// The fast tier-2 pass: threads scan lines, match them against the rules' matchers and
/// summarize each block for the rules without a scope; this thread merges the summaries and
/// feeds the scoped rules the events they need, in trace order (the result equals the
/// reference pass). `workers` overrides the thread count (`0`: everything on this thread).
fn run_fast(
    file: File,
    format: Option<TraceFormat>,
    workers: Option<&str>,
    engine: &mut SequenceEngine,
    on_error: &mut dyn FnMut(TraceError) -> ControlFlow<()>,
) {
    let plan = engine.match_plan();
    let summarizer = engine.summarizer();
    // A test knob: a number of threads up to `MAX_WORKERS`; anything else is said and ignored.
    const MAX_WORKERS: usize = 64;
    let chosen = workers.and_then(|text| match text.trim().parse::<usize>() {
        Ok(n) if n <= MAX_WORKERS => Some(n),
        _ => {
            say_err!(
                "warning: AGENTIC_CHECK_WORKERS={text:?} is not a thread count from 0 to {MAX_WORKERS} (or `reference`); \
                 using the default"
            );
            None
        }
    });
    let workers = chosen.unwrap_or_else(|| match std::thread::available_parallelism().map_or(1, |n| n.get()) {
        1 => 0,
        n => n,
    });
    // One copy per thread: compiled regexes then keep per-thread caches.
    let make_work =
        || CheckWork { plan: plan.clone(), summarizer: summarizer.clone(), needed: true, sessions: Vec::new() };
    for_each_batch_parallel(&file, format, workers, make_work, |batch| match batch {
        Batch::Item(Ok(TraceItem::Event(event)), _) => {
            engine.feed(&event);
            ControlFlow::Continue(())
        }
        Batch::Item(Ok(TraceItem::Tooltrace(view)), prepared) => {
            note_session(engine, &view);
            match prepared {
                Some(prepared) => engine.feed_prepared(&view_ref(&view), prepared),
                None => engine.feed_ref(&view_ref(&view)),
            }
            ControlFlow::Continue(())
        }
        Batch::Item(Err(error), _) => on_error(error),
        Batch::Records(records) => {
            let locate = |k: u32| records.position(k as usize).map_or((None, 0), |(line, seq)| (Some(line), seq));
            let block = records.block();
            for session in &block.sessions {
                engine.note_session(session);
            }
            let applied = block.summary.as_ref().is_some_and(|summary| engine.apply_summary(summary, locate));
            if applied && let Some(summary) = &block.summary {
                // The scoped rules' records, and the calls they wait for.
                let feed = |engine: &mut SequenceEngine, record: Option<RecordRef<'_, Prepared>>| {
                    if let Some(record) = record
                        && let Some(view) = record.view()
                    {
                        engine.feed_scoped(&view_ref(&view), record.data());
                    }
                };
                let wanted = records.wanted().map(|record| (records.ordinal(&record), Some(record)));
                engine.feed_summary_calls(summary, wanted, feed, |engine, k| feed(engine, records.get(k)));
                // Only the last calls are kept for tier 3 (none without tier-3 checkpoints).
                for record in records.last(engine.excerpt_capacity()) {
                    if let Some(view) = record.view() {
                        engine.note_call(&view_ref(&view));
                    }
                }
            } else {
                for record in records.iter() {
                    if let Some(view) = record.view() {
                        engine.feed_prepared(&view_ref(&view), record.data());
                    }
                }
            }
            ControlFlow::Continue(())
        }
    });
}

/// What a scanning thread of `agentic check` does: match each line against the rules, and
/// summarize each block for the rules without a scope.
struct CheckWork {
    plan: MatchPlan,
    summarizer: Option<Summarizer>,
    /// Whether the scoped rules need the last line (see [`LineWork::wanted`]).
    needed: bool,
    /// The block's first sessions (see [`CheckBlock::sessions`]).
    sessions: Vec<Box<str>>,
}

/// What a scanning thread makes of a block.
struct CheckBlock {
    summary: Option<Summary>,
    /// The first three sessions of its records, in order (enough to tell a file of several).
    sessions: Vec<Box<str>>,
}

/// Notes the session of a tooltrace record fed on its own.
fn note_session(engine: &mut SequenceEngine, view: &TooltraceView<'_>) {
    if let Some(session) = view.session_id {
        engine.note_session(session);
    }
}

impl LineWork for CheckWork {
    /// The line's matches.
    type Line = Prepared;
    type Block = CheckBlock;

    fn line(&mut self, view: &TooltraceView<'_>) -> Prepared {
        if let Some(session) = view.session_id
            && self.sessions.len() < 3
            && self.sessions.iter().all(|seen| **seen != *session)
        {
            self.sessions.push(session.into());
        }
        let event = view_ref(view);
        let prepared = self.plan.prepare(&event);
        self.needed = self.summarizer.as_mut().is_none_or(|summarizer| summarizer.push(&event, &prepared));
        prepared
    }

    /// The engine is fed this record on its own: it stays out of every block's summary.
    fn item(&mut self, view: &TooltraceView<'_>) -> Prepared {
        self.plan.prepare(&view_ref(view))
    }

    /// The scoped rules' lines are fed one by one even in a summarized block (`push` told,
    /// for the line just scanned).
    fn wanted(&self, _line: &Prepared) -> bool {
        self.needed
    }

    fn block(&mut self) -> CheckBlock {
        CheckBlock {
            summary: self.summarizer.as_mut().map(Summarizer::finish),
            sessions: std::mem::take(&mut self.sessions),
        }
    }
}

/// The engine's view of a tooltrace line.
fn view_ref<'a>(view: &'a TooltraceView<'_>) -> EventRef<'a> {
    EventRef {
        event_type: view.event_type,
        name: Some(&view.tool_name),
        args: view.args.map_or(ArgsRef::None, ArgsRef::Json),
        span_id: view.span_id.as_deref(),
        parent_span_id: view.parent_span_id.as_deref(),
        call_id: None,
        // Tooltrace ids are file-wide.
        trace_id: None,
        post_only_parent: view.span_type_parent,
        failed: view.failed,
        line: Some(view.line),
        seq: view.seq,
    }
}

/// What `text` is when it is another document agentic reads than a checkpoint spec: "a
/// rubric", or "a workflow" (it has `steps`); `None` for a spec (see
/// [`looks_like_checkpoint_spec`]) or anything else.
pub(crate) fn other_document_kind(text: &str) -> Option<&'static str> {
    if looks_like_checkpoint_spec(text) {
        None
    } else if agentic_eval::looks_like_rubric(text) {
        Some("a rubric")
    } else if parsed_for_kind(text).is_some_and(|value| value.as_object().is_some_and(|map| map.contains_key("steps")))
    {
        Some("a workflow")
    } else {
        None
    }
}

/// The YAML document of `text` to tell its kind by, also when it repeats a key or has a tag
/// that does not fit (errors its linter reports with the rest).
fn parsed_for_kind(text: &str) -> Option<Value> {
    agentic_core::yaml::parse_yaml_recovering(text).ok().map(|(document, _)| document.value)
}

/// True when YAML text is a checkpoint spec (its top level has `checkpoints`).
/// A checkpoint spec has `checkpoints`; one whose `checkpoints` key is missing or misspelled
/// is still known by its `workflow`, `spec_version` or `environment_constraints` (keys a
/// workflow does not have; a workflow has `steps`), so lint reports what is wrong with it as
/// a spec instead of as a workflow.
pub(crate) fn looks_like_checkpoint_spec(text: &str) -> bool {
    parsed_for_kind(text).is_some_and(|value| {
        let Some(map) = value.as_object() else { return false };
        // Keys as a person may misspell them (`Checkpoints:`, `checkpoint:`, `spec-version:`):
        // such a spec is still linted as a spec, whose errors then suggest the right key.
        let keys: Vec<String> = map.keys().map(|key| key.trim().to_ascii_lowercase().replace('-', "_")).collect();
        let has = |name: &str| keys.iter().any(|key| key == name);
        has("checkpoints")
            || has("checkpoint")
            || (!has("steps") && ["workflow", "spec_version", "environment_constraints"].iter().any(|key| has(key)))
    })
}

/// Why a previous spec (`lint --previous`) cannot be compared with: it could not be read
/// (`unreadable`), or it is not a valid spec.
pub(crate) struct UnusablePrevious {
    pub(crate) unreadable: bool,
    pub(crate) reason: String,
}

/// Lints a checkpoint spec, and with `previous` its ids against the previous version: the
/// spec's own diagnostics, and why the previous version could not be compared (then the
/// spec's own problems are still all reported).
pub(crate) fn lint_spec_file(
    text: &str,
    file: &str,
    previous: Option<&str>,
) -> (Vec<Diagnostic>, Option<UnusablePrevious>) {
    let mut diagnostics = load_spec(text, file).diagnostics;
    let compared = previous.map_or(Ok(()), |previous| compare_with_previous(text, file, previous, &mut diagnostics));
    (diagnostics, compared.err())
}

fn compare_with_previous(
    text: &str,
    file: &str,
    previous_path: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(), UnusablePrevious> {
    let old_text = std::fs::read_to_string(previous_path).map_err(|error| UnusablePrevious {
        unreadable: true,
        reason: format!("cannot read previous spec `{previous_path}`: {error}"),
    })?;
    let old = match parse_spec(&old_text) {
        Ok((old, _)) => old,
        Err(problems) => {
            let quote = |problem: &Diagnostic| {
                let at = problem.position.map_or_else(String::new, |p| format!("{}:{}: ", p.line, p.column));
                format!(": {at}{}", problem.message)
            };
            let first = problems.first().map_or_else(String::new, quote);
            // What keeps the ids from being compared: a problem at the workflow, the list of
            // checkpoints or a checkpoint's id, tier or instruction (else the first).
            let compared_by = |at: &str| {
                at == "/workflow"
                    || at == "/checkpoints"
                    || at.strip_prefix("/checkpoints/").is_some_and(|rest| {
                        rest.split_once('/').is_some_and(|(_, field)| matches!(field, "id" | "tier" | "instruction"))
                    })
            };
            let placed =
                |problem: &&Diagnostic| problem.is_error() && problem.pointer.as_deref().is_some_and(compared_by);
            let at_ids = |problem: &&Diagnostic| problem.pointer.as_deref().is_none_or(compared_by);
            // An error placed at the workflow or at an id, tier or instruction (a tag that does
            // not fit, a key written twice) holds the comparison back even when the value
            // still reads: which id was meant is then not certain.
            let placed_at_ids = problems.iter().find(placed);
            let blocking = placed_at_ids.or_else(|| problems.iter().find(at_ids)).map_or_else(|| first.clone(), quote);
            // The previous spec is history, often not to be edited: errors elsewhere than at
            // its ids, tiers and instructions (`severity: urgent`, an unknown key) do not hold
            // the comparison back, as they do not in the new spec; they are said.
            if let Some((old, _)) =
                agentic_eval::compliance::parse_spec_for_comparison(&old_text).filter(|_| placed_at_ids.is_none())
            {
                diagnostics.push(
                    Diagnostic::warning(
                        "previous-has-errors",
                        format!(
                            "the previous spec `{previous_path}` is not a valid checkpoint spec{first}; its ids, \
                             tiers and instructions read, so they are compared"
                        ),
                    )
                    .with_hint(format!("run `agentic lint {previous_path}` to see all its problems"))
                    .at(agentic_core::diagnostic::Position::START)
                    .in_file(file),
                );
                old
            } else {
                return Err(UnusablePrevious {
                    unreadable: false,
                    reason: format!(
                        "previous spec `{previous_path}` is not a valid checkpoint spec{blocking}; its workflow and \
                         its checkpoints' ids, tiers and instructions do not all read as written, so its ids cannot \
                         be compared; run `agentic lint {previous_path}`"
                    ),
                });
            }
        }
    };
    // Ids are what the versions are compared by: a previous spec with an empty one, or that
    // uses one twice, cannot say which checkpoint an id was.
    if old.checkpoints.iter().any(|c| c.id.trim().is_empty()) {
        return Err(UnusablePrevious {
            unreadable: false,
            reason: format!(
                "previous spec `{previous_path}` has a checkpoint with an empty id, so it cannot be compared by id; \
                 run `agentic lint {previous_path}`"
            ),
        });
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(repeated) = old.checkpoints.iter().map(|c| c.id.as_str()).find(|id| !seen.insert(*id)) {
        return Err(UnusablePrevious {
            unreadable: false,
            reason: format!(
                "previous spec `{previous_path}` uses checkpoint id `{repeated}` twice, so it cannot be compared by id; \
                 run `agentic lint {previous_path}`"
            ),
        });
    }
    match agentic_eval::compliance::parse_spec_for_comparison(text) {
        Some((current, source_map)) => diagnostics.extend(lint_against_previous(&old, &current, file, &source_map)),
        // The errors above are at an id, tier or instruction (or leave no checkpoints to
        // read): comparing now would report ids that only look changed.
        None => diagnostics.push(
            Diagnostic::warning(
                "previous-not-compared",
                format!("the checkpoint ids are not compared with the previous spec `{previous_path}` yet"),
            )
            .with_hint("fix the errors above at checkpoint ids, tiers and instructions, then lint again")
            // About the whole file: at its start, as every diagnostic has a place.
            .at(agentic_core::diagnostic::Position::START)
            .in_file(file),
        ),
    }
    Ok(())
}
