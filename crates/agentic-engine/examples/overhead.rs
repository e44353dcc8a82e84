//! Engine overhead per step, on no-op tool steps (no process spawn, no IO): a chain of 1000
//! steps and a fan-out/fan-in of 100 branches of 10 steps.
//!
//! Run with `cargo run --release -p agentic-engine --example overhead -- [--repeats N] [--json] [--run-dir]`.
//! Without `--run-dir` nothing observes the run, so events are numbered but not built; with it,
//! every run writes `runs/<id>/` (run.json, events.jsonl, result.json) like `agentic run`.
//! `benches/langgraph/compare.py` runs it side by side with the same graphs in LangGraph.

use std::sync::Arc;
use std::time::Instant;

use agentic_core::load_workflow;
use agentic_engine::{Engine, EngineSettings, LocalRunner, RunRequest};

fn chain(steps: usize) -> String {
    let mut yaml = String::from("name: chain\nmax_parallel: 64\nsteps:\n");
    for idx in 0..steps {
        yaml.push_str(&format!("  - {{name: s{idx}, kind: tool, tool: noop"));
        if idx > 0 {
            yaml.push_str(&format!(", depends_on: [s{}]", idx - 1));
        }
        yaml.push_str("}\n");
    }
    yaml
}

fn fan(branches: usize, depth: usize) -> String {
    let mut yaml = String::from("name: fan\nmax_parallel: 64\nsteps:\n  - {name: start, kind: tool, tool: noop}\n");
    for branch in 0..branches {
        for level in 0..depth {
            let parent = if level == 0 { "start".to_owned() } else { format!("b{branch}_{}", level - 1) };
            yaml.push_str(&format!(
                "  - {{name: b{branch}_{level}, kind: tool, tool: noop, depends_on: [{parent}]}}\n"
            ));
        }
    }
    let ends: Vec<String> = (0..branches).map(|branch| format!("b{branch}_{}", depth - 1)).collect();
    yaml.push_str(&format!("  - {{name: join, kind: tool, tool: noop, depends_on: [{}]}}\n", ends.join(", ")));
    yaml
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let repeats = args
        .iter()
        .position(|arg| arg == "--repeats")
        .and_then(|idx| args.get(idx + 1))
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(20);
    let as_json = args.iter().any(|arg| arg == "--json");
    let with_run_dir = args.iter().any(|arg| arg == "--run-dir");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let engine = Engine::new(Arc::new(LocalRunner))
        .with_settings(EngineSettings { max_parallel: 64, allow_experimental: false });
    let workspace = std::env::temp_dir().join("agentic-overhead-bench");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let mut results = Vec::new();
    for (name, yaml) in [("chain_1000", chain(1000)), ("fanout_100x10", fan(100, 10))] {
        let _ = std::fs::remove_dir_all(workspace.join("runs"));
        let workflow = Arc::new(load_workflow(&yaml, name).workflow.expect("the generated workflow validates"));
        let steps = workflow.workflow().steps.len();
        let mut per_step_us = Vec::new();
        let mut totals_ms = Vec::new();
        for round in 0..=repeats {
            let request = RunRequest {
                workspace: Some(workspace.clone()),
                runs_dir: with_run_dir.then(|| workspace.join("runs")),
                ..RunRequest::default()
            };
            let started = Instant::now();
            let outcome = runtime.block_on(engine.run(workflow.clone(), request)).expect("the run starts");
            let elapsed = started.elapsed().as_secs_f64();
            assert!(outcome.evaluation.passed, "every no-op step succeeds");
            if round > 0 {
                // Round 0 warms up allocators and the runtime.
                per_step_us.push(elapsed * 1e6 / steps as f64);
                totals_ms.push(elapsed * 1e3);
            }
        }
        results.push((name, steps, median(&mut totals_ms), median(&mut per_step_us)));
    }
    let _ = std::fs::remove_dir_all(workspace.join("runs"));
    if as_json {
        let items: Vec<String> = results
            .iter()
            .map(|(name, steps, total, per_step)| {
                format!(
                    "{{\"graph\": \"{name}\", \"steps\": {steps}, \"median_total_ms\": {total:.3}, \"median_per_step_us\": {per_step:.3}}}"
                )
            })
            .collect();
        println!(
            "{{\"framework\": \"agentic\", \"run_dir\": {with_run_dir}, \"repeats\": {repeats}, \"results\": [{}]}}",
            items.join(", ")
        );
    } else {
        for (name, steps, total, per_step) in results {
            println!("{name:<16} {steps:>5} steps  median {total:>9.3} ms  {per_step:>8.3} us/step");
        }
    }
}
