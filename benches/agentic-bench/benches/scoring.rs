//! Scoring throughput: one whole run (`score`), per criterion (`normalize`), and the
//! aggregation core (`aggregate`). Run with `cargo bench -p agentic-bench`.
//!
//! A counting global allocator reports how many allocations one call of each makes, so the
//! "no allocation per criterion on the hot path" goal is measured, not assumed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentic_eval::{FormulaRegistry, RawScore, Scored, aggregate, score};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to the system allocator unchanged; the counter is a relaxed
// atomic increment with no effect on the memory handed out.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_of(mut f: impl FnMut()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    f();
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

fn report_allocations(registry: &FormulaRegistry) {
    let params: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"slo_good": 8, "slo_bad": 30}"#).expect("params are JSON");
    let raw = RawScore::Number(12.0);
    let normalize = allocations_of(|| {
        black_box(registry.normalize("lower_is_better", black_box(&raw), Some(&params)).expect("valid"));
    });
    let scored: Vec<Scored> =
        (0..64).map(|idx| Scored { normalized: 0.5, weight: 1.0 + idx as f64, floor: Some(0.3) }).collect();
    let aggregated = allocations_of(|| {
        black_box(aggregate(black_box(&scored)).expect("valid"));
    });
    for count in [8, 64] {
        let request = agentic_bench::request(count);
        let whole = allocations_of(|| {
            black_box(score(black_box(&request), registry).expect("valid"));
        });
        println!("allocations: score() with {count} criteria = {whole}");
    }
    println!("allocations: normalize() = {normalize}, aggregate() over 64 criteria = {aggregated}");
}

fn benches(c: &mut Criterion) {
    let registry = FormulaRegistry::builtin();
    report_allocations(&registry);

    let mut group = c.benchmark_group("score_run");
    for count in [8usize, 64] {
        let request = agentic_bench::request(count);
        group.throughput(Throughput::Elements(count as u64));
        group.bench_with_input(BenchmarkId::from_parameter(count), &request, |b, request| {
            b.iter(|| score(black_box(request), &registry).expect("valid"));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("per_criterion");
    group.throughput(Throughput::Elements(1));
    let params: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"slo_good": 8, "slo_bad": 30}"#).expect("params are JSON");
    let likert = RawScore::Number(4.0);
    group.bench_function("normalize_likert_1_5", |b| {
        b.iter(|| registry.normalize(black_box("likert_1_5"), black_box(&likert), None).expect("valid"));
    });
    let latency = RawScore::Number(12.0);
    group.bench_function("normalize_lower_is_better", |b| {
        b.iter(|| registry.normalize(black_box("lower_is_better"), black_box(&latency), Some(&params)).expect("valid"));
    });
    group.finish();

    let mut group = c.benchmark_group("aggregate");
    let scored: Vec<Scored> =
        (0..64).map(|idx| Scored { normalized: (idx % 10) as f64 / 10.0, weight: 1.0, floor: Some(0.3) }).collect();
    group.throughput(Throughput::Elements(64));
    group.bench_function("64_criteria", |b| b.iter(|| aggregate(black_box(&scored)).expect("valid")));
    group.finish();
}

criterion_group!(scoring, benches);
criterion_main!(scoring);
