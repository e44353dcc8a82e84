//! `cargo xtask bench-judge`: judge throughput against a local OpenAI-compatible server that
//! takes 100 ms per reply, side by side with Inspect AI against the same server.
//!
//! The server is the loopback test server of `agentic-adapters` (real HTTP on 127.0.0.1).
//! Our side: 500 pointwise judge calls at concurrency 50 through `agentic_judge::Judge`
//! (prompt rendering, structured output, validation, adaptive limiter); the ideal is
//! 500 / 50 * 100 ms = 1.0 s. Inspect AI runs `generate()` on 500 samples with
//! `--max-connections 50` against the same URL, when a Python with `inspect_ai` is found
//! (`--inspect PATH` to its `inspect` executable, else `inspect` on PATH).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use agentic_adapters::provider::testing::{RecordedRequest, Reply, TestServer};
use agentic_judge::{Judge, JudgeCase, JudgeConfig, JudgeCriterion, JudgeModelConfig};
use anyhow::{Context, Result};
use serde_json::{Value, json};

/// Options of the benchmark.
#[derive(Debug)]
pub(crate) struct BenchOptions {
    pub(crate) calls: usize,
    pub(crate) concurrency: usize,
    pub(crate) delay_ms: u64,
    pub(crate) rounds: usize,
    pub(crate) inspect: Option<PathBuf>,
}

impl BenchOptions {
    pub(crate) fn parse(args: &[String]) -> Result<BenchOptions> {
        let mut options = BenchOptions { calls: 500, concurrency: 50, delay_ms: 100, rounds: 3, inspect: None };
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let mut value = || iter.next().with_context(|| format!("`{arg}` needs a value"));
            match arg.as_str() {
                "--calls" => options.calls = value()?.parse().context("--calls")?,
                "--concurrency" => options.concurrency = value()?.parse().context("--concurrency")?,
                "--delay-ms" => options.delay_ms = value()?.parse().context("--delay-ms")?,
                "--rounds" => options.rounds = value()?.parse().context("--rounds")?,
                "--inspect" => options.inspect = Some(PathBuf::from(value()?)),
                other => anyhow::bail!(
                    "unknown option `{other}`; use --calls N --concurrency N --delay-ms N --rounds N --inspect PATH"
                ),
            }
        }
        anyhow::ensure!(options.calls > 0 && options.concurrency > 0 && options.rounds > 0, "counts must be positive");
        Ok(options)
    }
}

/// The reply of the benchmark server: a valid pointwise verdict when the prompt is a judge
/// prompt, a short text otherwise (Inspect AI's plain prompts).
fn reply(request: &RecordedRequest) -> Reply {
    let text = request.prompt_text();
    let marker = "one entry for each of: ";
    match text.find(marker) {
        Some(start) => {
            let line = text[start + marker.len()..].lines().next().unwrap_or_default().trim_end_matches('.');
            let entries: Vec<Value> =
                line.split(", ").map(|name| json!({"name": name, "score": 4, "evidence": "ok"})).collect();
            Reply::chat_json(&json!({ "criteria": entries }))
        }
        None => Reply::chat("ok"),
    }
}

pub(crate) fn run(options: &BenchOptions) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("tokio runtime")?;
    runtime.block_on(run_async(options))
}

async fn run_async(options: &BenchOptions) -> Result<()> {
    let delay = Duration::from_millis(options.delay_ms);
    let server = TestServer::start(move |request| reply(request).after(delay)).await.context("starting the server")?;
    let ideal = options.calls.div_ceil(options.concurrency) as f64 * delay.as_secs_f64();
    println!(
        "bench-judge: {} judge calls, concurrency {}, server delay {} ms, ideal {:.3} s, server {}",
        options.calls,
        options.concurrency,
        options.delay_ms,
        ideal,
        server.base_url()
    );

    let mut judge_model = JudgeModelConfig::openai("bench", server.base_url(), "bench-judge");
    judge_model.max_retries = 0;
    judge_model.timeout_secs = 30.0;
    let mut config = JudgeConfig::single(judge_model);
    config.seed = Some(1);
    config.max_concurrency = options.concurrency;
    let judge = Judge::builder(config).build()?;
    let criteria = vec![JudgeCriterion::likert("correctness", "The answer is right.")];
    let cases: Vec<JudgeCase> = (0..options.calls)
        .map(|index| JudgeCase {
            id: format!("case-{index}"),
            task: format!("Question {index}: what is {index} + 1?"),
            candidate: format!("{}", index + 1),
            reference: None,
            criteria: criteria.clone(),
        })
        .collect();

    // Warm up the connection pool and the code paths.
    grade_all(&judge, &cases[..options.concurrency.min(cases.len())]).await?;
    let mut timings = Vec::new();
    let mut spans = Vec::new();
    for _ in 0..options.rounds {
        let before = server.request_count();
        let started = Instant::now();
        let scored = grade_all(&judge, &cases).await?;
        let elapsed = started.elapsed().as_secs_f64();
        anyhow::ensure!(scored == cases.len(), "only {scored} of {} verdicts were scored", cases.len());
        timings.push(elapsed);
        let requests = server.requests();
        if let (Some(first), Some(last)) = (requests.get(before), requests.last()) {
            spans.push(last.received.duration_since(first.received).as_secs_f64() + delay.as_secs_f64());
        }
    }
    spans.sort_by(f64::total_cmp);
    timings.sort_by(f64::total_cmp);
    println!(
        "agentic-judge: wall {} s (rounds sorted), best {:.3} s, median {:.3} s, overhead over ideal {:+.1}% (best), peak server concurrency {}",
        timings.iter().map(|t| format!("{t:.3}")).collect::<Vec<_>>().join(" "),
        timings[0],
        timings[timings.len() / 2],
        (timings[0] / ideal - 1.0) * 100.0,
        server.peak_concurrency()
    );
    println!(
        "agentic-judge: server-side span (first request to last reply) best {:.3} s",
        spans.first().copied().unwrap_or_default()
    );

    let inspect = options.inspect.clone().unwrap_or_else(|| PathBuf::from("inspect"));
    let base_url = server.base_url();
    let calls = options.calls;
    let concurrency = options.concurrency;
    let before = server.request_count();
    let inspect_result =
        tokio::task::spawn_blocking(move || run_inspect(&inspect, &base_url, calls, concurrency)).await?;
    match inspect_result {
        Ok((wall, eval_seconds)) => {
            let requests = server.requests();
            let inspect_requests = &requests[before..];
            // First request in to last request in, plus the last reply's delay.
            let span = match (inspect_requests.first(), inspect_requests.last()) {
                (Some(first), Some(last)) => {
                    last.received.duration_since(first.received).as_secs_f64() + delay.as_secs_f64()
                }
                _ => 0.0,
            };
            println!(
                "inspect-ai: {} requests, server-side span {span:.3} s (first request to last reply), process wall {wall:.3} s (includes Python start-up), log {} s (second resolution)",
                inspect_requests.len(),
                eval_seconds.map(|s| format!("{s:.0}")).unwrap_or_else(|| "n/a".into())
            );
        }
        Err(error) => println!("inspect-ai: not run ({error:#}); install it with `pip install inspect-ai openai`"),
    }
    Ok(())
}

async fn grade_all(judge: &Judge, cases: &[JudgeCase]) -> Result<usize> {
    let mut tasks = tokio::task::JoinSet::new();
    for case in cases {
        let judge = judge.clone();
        let case = case.clone();
        tasks.spawn(async move { judge.grade(&case).await });
    }
    let mut scored = 0;
    while let Some(joined) = tasks.join_next().await {
        if joined??.all_scored() {
            scored += 1;
        }
    }
    Ok(scored)
}

const INSPECT_TASK: &str = r#"
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
import os

@task
def bench():
    calls = int(os.environ["BENCH_CALLS"])
    return Task(
        dataset=[Sample(input=f"Question {i}: what is {i} + 1?", target="ok") for i in range(calls)],
        solver=generate(),
        scorer=includes(),
    )
"#;

/// Runs Inspect AI; returns (process wall seconds, eval seconds from the log).
fn run_inspect(inspect: &PathBuf, base_url: &str, calls: usize, concurrency: usize) -> Result<(f64, Option<f64>)> {
    let dir = std::env::temp_dir().join(format!("agentic-bench-inspect-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let task = dir.join("bench_task.py");
    std::fs::write(&task, INSPECT_TASK)?;
    let logs = dir.join("logs");
    let started = Instant::now();
    let output = Command::new(inspect)
        .current_dir(&dir)
        // `openai-api/<service>/<model>` is Inspect's OpenAI-compatible chat-completions provider;
        // it reads `<SERVICE>_BASE_URL` and `<SERVICE>_API_KEY`.
        .args(["eval", "bench_task.py", "--model", "openai-api/bench/bench-judge"])
        .env("BENCH_BASE_URL", base_url)
        .env("BENCH_API_KEY", "bench")
        .args(["--max-connections", &concurrency.to_string(), "--max-retries", "0", "--log-format", "json"])
        .args(["--display", "none", "--log-dir", logs.to_str().unwrap_or_default()])
        .env("BENCH_CALLS", calls.to_string())
        .env("INSPECT_LOG_LEVEL", "warning")
        .output()
        .with_context(|| format!("running `{}`", inspect.display()))?;
    let wall = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        output.status.success(),
        "inspect eval failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let eval_seconds = std::fs::read_dir(&logs)?
        .filter_map(|entry| entry.ok())
        .find(|entry| entry.path().extension().is_some_and(|ext| ext == "json"))
        .and_then(|entry| std::fs::read_to_string(entry.path()).ok())
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|log| {
            if log.get("status").and_then(Value::as_str) != Some("success") {
                println!(
                    "inspect-ai: the eval did not succeed: {}",
                    log.pointer("/error/message").unwrap_or(&Value::Null)
                );
                return None;
            }
            let started = log.pointer("/stats/started_at")?.as_str()?.to_owned();
            let completed = log.pointer("/stats/completed_at")?.as_str()?.to_owned();
            println!("inspect-ai: log stats started_at {started}, completed_at {completed}");
            Some(iso_seconds(&completed)? - iso_seconds(&started)?)
        });
    if std::env::var_os("AGENTIC_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("inspect-ai: kept {}", dir.display());
    }
    Ok((wall, eval_seconds))
}

/// Seconds since midnight of an ISO-8601 timestamp (same day assumed; enough for a benchmark).
fn iso_seconds(timestamp: &str) -> Option<f64> {
    let time = timestamp.split('T').nth(1)?;
    let time = time.split(['+', 'Z']).next()?;
    let mut parts = time.split(':');
    let hours: f64 = parts.next()?.parse().ok()?;
    let minutes: f64 = parts.next()?.parse().ok()?;
    let seconds: f64 = parts.next()?.parse().ok()?;
    Some(hours * 3600.0 + minutes * 60.0 + seconds)
}
