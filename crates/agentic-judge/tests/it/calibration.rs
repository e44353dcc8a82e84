//! Calibration, drift and confidence runs on the bundled golden set
//! (`examples/judge/golden.yaml`), judged over real HTTP.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentic_adapters::provider::testing::TestServer;
use agentic_judge::{
    AgreementMetric, ConfidenceStatus, GoldenSet, baseline_from, calibrate, compare_with_baseline, confidence_runs,
    grade_golden_set,
};

use crate::support::{config, golden_set, judge, labels_by_candidate, pointwise};

/// A judge that gives the human label, except one point off on `noisy_case`'s correctness.
async fn agreeing_server(set: &GoldenSet, noisy_case: Option<&str>) -> TestServer {
    let labels = labels_by_candidate(set);
    let noisy = noisy_case.and_then(|id| set.cases.iter().find(|c| c.id == id)).map(|c| c.candidate.clone());
    TestServer::start(move |request| {
        let labels = labels.clone();
        let noisy = noisy.clone();
        pointwise(request, move |criterion, candidate| {
            let (_, case_labels) = labels.iter().find(|(text, _)| text == candidate).expect("a golden candidate");
            let label = case_labels[criterion];
            if noisy.as_deref() == Some(candidate) && criterion == "correctness" {
                if label > 1 { label - 1 } else { label + 1 }
            } else {
                label
            }
        })
    })
    .await
    .unwrap()
}

/// P3-T001 #7: on the calibration fixture the judge scores within ±0.5 of the human labels.
#[tokio::test]
async fn test_judge_calibration_within_tolerance() {
    let set = golden_set();
    let server = agreeing_server(&set, Some("rust-ownership-slip")).await;
    let (report, verdicts) = calibrate(&judge(config(&server)), &set, AgreementMetric::WithinOne).await.unwrap();
    assert_eq!(verdicts.len(), set.cases.len());
    assert_eq!(server.request_count(), set.cases.len());
    let pairs: usize = set.cases.iter().map(|c| c.labels.len()).sum();
    assert_eq!(report.overall.pairs, pairs);
    let mae = report.overall.mean_abs_error.unwrap();
    assert!(mae <= 0.5, "mean absolute error {mae} above the ±0.5 tolerance");
    assert_eq!(report.overall.exact, (pairs - 1) as f64 / pairs as f64);
    assert_eq!(report.overall.within_one, 1.0);
    assert!(report.overall.kappa.unwrap() > 0.8, "{:?}", report.overall.kappa);
    assert!(report.passed);
    let text = report.render();
    assert!(text.contains("calibration passed"), "{text}");
    assert!(text.contains("short_answers_v1"), "{text}");
}

#[tokio::test]
async fn a_judge_that_always_says_five_fails_calibration() {
    let set = golden_set();
    let server = TestServer::start(|request| pointwise(request, |_, _| 5)).await.unwrap();
    let (report, _) = calibrate(&judge(config(&server)), &set, AgreementMetric::WithinOne).await.unwrap();
    assert!(!report.passed, "a constant judge must not pass: {}", report.render());
    assert!(report.overall.within_one < 0.9);
    assert!(report.overall.kappa.unwrap_or(0.0) < 0.2, "{:?}", report.overall.kappa);
    let text = report.render();
    assert!(text.contains("calibration FAILED"), "{text}");
    assert!(text.contains("case arithmetic-wrong correctness: human 1, judge 5.0"), "{text}");
}

#[tokio::test]
async fn drift_is_caught_against_a_stored_baseline() {
    let set = golden_set();
    let server = agreeing_server(&set, None).await;
    let judge_now = judge(config(&server));
    let verdicts = grade_golden_set(&judge_now, &set).await.unwrap();
    let baseline = baseline_from(&set, &verdicts, judge_now.seed());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baseline.json");
    baseline.save(&path).unwrap();
    let baseline = agentic_judge::Baseline::load(&path).unwrap();

    // The same judge again: no drift.
    let again = grade_golden_set(&judge_now, &set).await.unwrap();
    let report = compare_with_baseline(&set, &baseline, &again, AgreementMetric::WithinOne, 0.9, 0.1);
    assert!(report.passed, "{}", report.render());
    assert_eq!(report.changed, 0);

    // A judge that drifted: it now gives every wrong answer a 4.
    let drifted_server = TestServer::start(|request| pointwise(request, |_, _| 4)).await.unwrap();
    let drifted = grade_golden_set(&judge(config(&drifted_server)), &set).await.unwrap();
    let report = compare_with_baseline(&set, &baseline, &drifted, AgreementMetric::WithinOne, 0.9, 0.1);
    assert!(!report.passed);
    assert!(report.drift_rate > 0.1, "{}", report.drift_rate);
    assert!(report.render().contains("drift FAILED"), "{}", report.render());

    // An edited golden set invalidates the baseline.
    let mut edited = set.clone();
    edited.cases[0].labels.insert("correctness".into(), 4);
    let report = compare_with_baseline(&edited, &baseline, &again, AgreementMetric::WithinOne, 0.9, 0.1);
    assert!(report.golden_changed && !report.passed);
}

#[tokio::test]
async fn confidence_runs_report_variance_and_flakiness() {
    let set = golden_set();
    let cases: Vec<_> = set.judge_cases().into_iter().take(2).collect();
    // Steady judge: every run gives 4.
    let steady = TestServer::start(|request| pointwise(request, |_, _| 4)).await.unwrap();
    let report = confidence_runs(&judge(config(&steady)), &cases, 3).await.unwrap();
    assert_eq!(report.runs, 3);
    assert_eq!(report.seeds.len(), 3);
    assert_eq!(steady.request_count(), 6);
    for case in &report.cases {
        assert_eq!(case.flakiness, 0.0);
        assert_eq!(case.overall.status, ConfidenceStatus::HighConfidence);
        assert_eq!(case.overall.range, Some([75.0, 75.0]));
    }

    // Flaky judge: the score alternates 2, 5, 2, ... call by call.
    let calls = Arc::new(AtomicUsize::new(0));
    let flaky = {
        let calls = calls.clone();
        TestServer::start(move |request| {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            pointwise(request, move |_, _| if call.is_multiple_of(2) { 2 } else { 5 })
        })
        .await
        .unwrap()
    };
    let report = confidence_runs(&judge(config(&flaky)), &cases[..1], 4).await.unwrap();
    let case = &report.cases[0];
    assert_eq!(case.flakiness, 0.5, "half the runs differ from the modal score");
    assert_eq!(case.overall.status, ConfidenceStatus::LowConfidence);
    assert_eq!(case.criteria["correctness"].range, Some([25.0, 100.0]));
}
