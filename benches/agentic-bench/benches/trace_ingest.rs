//! Trace ingest of a pretty-printed OTLP/JSON export: one document of 3,000 spans over
//! 69,000 lines. Run with `cargo bench -p agentic-bench --bench trace_ingest`.
//!
//! Guards the reader's linear handling of documents spread over lines: it once parsed the
//! whole document again after every line (6 minutes for this input; see
//! `docs/benchmarks.md`).

use std::hint::black_box;

use agentic_adapters::trace::TraceReader;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

/// One OTLP document with `spans` tool spans under one agent, pretty-printed.
fn pretty_otlp(spans: usize) -> String {
    let mut list = vec![json!({"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": format!("{:016x}", 1),
        "name": "invoke_agent bot", "kind": 1, "startTimeUnixNano": "1000", "endTimeUnixNano": "900000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                       {"key": "gen_ai.agent.name", "value": {"stringValue": "bot"}}]})];
    for idx in 0..spans {
        list.push(json!({"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": format!("{:016x}", idx + 2),
            "parentSpanId": format!("{:016x}", 1), "name": format!("execute_tool t{idx}"), "kind": 1,
            "startTimeUnixNano": (2000 + idx).to_string(), "endTimeUnixNano": (3000 + idx).to_string(),
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                           {"key": "gen_ai.tool.name", "value": {"stringValue": "Bash"}}]}));
    }
    let document =
        json!({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": Value::Array(list)}]}]});
    serde_json::to_string_pretty(&document).expect("serializes")
}

fn benches(c: &mut Criterion) {
    let text = pretty_otlp(3_000);
    let mut group = c.benchmark_group("trace_ingest");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    group.bench_function("pretty_otlp_3000_spans", |b| {
        b.iter(|| TraceReader::new(black_box(text.as_bytes()), None).filter(Result::is_ok).count())
    });
    group.finish();
}

criterion_group!(trace_ingest, benches);
criterion_main!(trace_ingest);
