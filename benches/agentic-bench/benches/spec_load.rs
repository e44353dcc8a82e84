//! Loading and linting a checkpoint spec (`agentic_eval::compliance::load_spec`: YAML, the
//! schema, every lint check) as it grows: the time per checkpoint should stay flat. Run with
//! `cargo bench -p agentic-bench --bench spec_load`.

use std::hint::black_box;

use agentic_eval::compliance::spec::load_spec;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// A spec of `n` checkpoints: tier 1, tier 2 and tier 3 in turn, with one environment
/// constraint per 100 checkpoints.
fn spec(n: usize) -> String {
    let mut text = String::from("workflow: bench\nspec_version: \"1\"\nenvironment_constraints:\n");
    for idx in 0..n.div_ceil(100) {
        text.push_str(&format!(
            "  - {{id: ENV-{idx:03}, constraint: c, affects: [P1-{:05}], active_when: {{path: pr.draft, equals: true}}}}\n",
            idx * 100 + 1
        ));
    }
    text.push_str("checkpoints:\n");
    for idx in 0..n {
        let id = format!("P1-{:05}", idx + 1);
        let verification = match idx % 3 {
            0 => format!(
                "tier: 1, verification: {{method: api_state, evidence_sources: [pr], assert: {{path: pr.n{idx}, equals: {idx}}}}}"
            ),
            1 => format!(
                "tier: 2, verification: {{method: tool_sequence, evidence_sources: [trace_file], rule: {{before: {{a: {{tool: Read}}, b: {{tool: T{idx}}}}}}}}}"
            ),
            _ => "tier: 3, verification: {method: content_analysis, evidence_sources: [pr]}".to_owned(),
        };
        text.push_str(&format!("  - {{id: {id}, instruction: \"step {idx}\", severity: low, {verification}}}\n"));
    }
    text
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("spec_load");
    group.sample_size(10);
    for n in [1_000, 4_000, 16_000] {
        let text = spec(n);
        assert!(load_spec(&text, "bench.yaml").diagnostics.iter().all(|d| !d.is_error()), "the spec is valid");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter(|| black_box(load_spec(black_box(text), "bench.yaml")));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
