//! Confidence runs (`--eval-runs N`): grade the same cases N times with N seeds and report, per
//! criterion and overall, the range, mean, variance and a confidence status, plus a per-case
//! flakiness figure.
//!
//! Scores are put on 0..100 (`(raw - min) / (max - min) * 100`) before the statistics, so the
//! variance thresholds mean the same on every scale:
//! variance <= 4 is `HIGH_CONFIDENCE` (a standard deviation of 2 points of 100),
//! <= 25 is `MEDIUM_CONFIDENCE`, above is `LOW_CONFIDENCE`. A criterion errored in any run
//! is `LOW_CONFIDENCE`.
//!
//! Flakiness of a case: the share of (run, criterion) scores that differ (after rounding)
//! from that criterion's most common score across runs; 0 means every run agreed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::JudgeError;
use crate::judge::{Judge, JudgeCase};
use crate::verdict::{JudgeUsage, Verdict};

/// Variance (on 0..100) at or below which a score is `HIGH_CONFIDENCE`.
pub const HIGH_CONFIDENCE_VARIANCE: f64 = 4.0;
/// Variance (on 0..100) at or below which a score is `MEDIUM_CONFIDENCE`.
pub const MEDIUM_CONFIDENCE_VARIANCE: f64 = 25.0;

/// How much a score can be trusted across runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConfidenceStatus {
    /// Variance <= 4.
    HighConfidence,
    /// Variance <= 25.
    MediumConfidence,
    /// Larger variance, or errored runs.
    LowConfidence,
}

/// Statistics of one score across runs (0..100 scale).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    /// Runs with a usable score.
    pub runs: usize,
    /// Runs where it errored.
    pub errored: usize,
    /// `[min, max]`.
    pub range: Option<[f64; 2]>,
    /// Mean.
    pub mean: Option<f64>,
    /// Population variance.
    pub variance: Option<f64>,
    /// The status.
    pub status: ConfidenceStatus,
}

/// Computes the statistics of `values` (`None` = errored run).
pub fn run_stats(values: &[Option<f64>]) -> RunStats {
    let usable: Vec<f64> = values.iter().flatten().copied().collect();
    let errored = values.len() - usable.len();
    if usable.is_empty() {
        return RunStats {
            runs: 0,
            errored,
            range: None,
            mean: None,
            variance: None,
            status: ConfidenceStatus::LowConfidence,
        };
    }
    let n = usable.len() as f64;
    let mean = usable.iter().sum::<f64>() / n;
    let variance = usable.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let min = usable.iter().copied().fold(f64::INFINITY, f64::min);
    let max = usable.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let status = if errored > 0 {
        ConfidenceStatus::LowConfidence
    } else if variance <= HIGH_CONFIDENCE_VARIANCE {
        ConfidenceStatus::HighConfidence
    } else if variance <= MEDIUM_CONFIDENCE_VARIANCE {
        ConfidenceStatus::MediumConfidence
    } else {
        ConfidenceStatus::LowConfidence
    };
    RunStats {
        runs: usable.len(),
        errored,
        range: Some([min, max]),
        mean: Some(mean),
        variance: Some(variance),
        status,
    }
}

/// One case across runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseConfidence {
    /// The case id.
    pub case_id: String,
    /// Per criterion, on 0..100.
    pub criteria: BTreeMap<String, RunStats>,
    /// The unweighted mean of the criteria (0..100), across runs.
    pub overall: RunStats,
    /// Share of (run, criterion) scores that differ from the criterion's modal score.
    pub flakiness: f64,
}

/// The whole confidence report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceReport {
    /// Runs made.
    pub runs: u32,
    /// The seed of each run.
    pub seeds: Vec<u64>,
    /// Per case.
    pub cases: Vec<CaseConfidence>,
    /// Judge cost of all runs.
    pub usage: JudgeUsage,
}

fn to_100(verdict: &Verdict, name: &str) -> Option<f64> {
    let criterion = verdict.criteria.iter().find(|c| c.name == name)?;
    let span = (criterion.max - criterion.min) as f64;
    criterion.score.map(|score| (score - criterion.min as f64) / span * 100.0)
}

/// Summarizes `runs[run][case]` verdicts.
pub fn summarize(runs: &[Vec<Verdict>], seeds: Vec<u64>) -> ConfidenceReport {
    let mut usage = JudgeUsage::default();
    for verdict in runs.iter().flatten() {
        usage.add(&verdict.usage);
    }
    let case_count = runs.first().map_or(0, Vec::len);
    let mut cases = Vec::new();
    for case_index in 0..case_count {
        let verdicts: Vec<&Verdict> = runs.iter().filter_map(|run| run.get(case_index)).collect();
        let names: Vec<String> = verdicts[0].criteria.iter().map(|c| c.name.clone()).collect();
        let mut criteria = BTreeMap::new();
        let mut flips = 0usize;
        let mut total = 0usize;
        for name in &names {
            let values: Vec<Option<f64>> = verdicts.iter().map(|v| to_100(v, name)).collect();
            let raw: Vec<Option<i64>> = verdicts.iter().map(|v| v.score(name).map(|s| s.round() as i64)).collect();
            let mut counts: BTreeMap<Option<i64>, usize> = BTreeMap::new();
            for value in &raw {
                *counts.entry(*value).or_default() += 1;
            }
            let modal = counts.iter().max_by_key(|(_, count)| **count).and_then(|(value, _)| *value);
            flips += raw.iter().filter(|value| **value != modal || value.is_none()).count();
            total += raw.len();
            criteria.insert(name.clone(), run_stats(&values));
        }
        let overall_values: Vec<Option<f64>> = verdicts
            .iter()
            .map(|verdict| {
                let scores: Option<Vec<f64>> = names.iter().map(|name| to_100(verdict, name)).collect();
                scores.filter(|s| !s.is_empty()).map(|s| s.iter().sum::<f64>() / s.len() as f64)
            })
            .collect();
        cases.push(CaseConfidence {
            case_id: verdicts[0].case_id.clone(),
            criteria,
            overall: run_stats(&overall_values),
            flakiness: if total == 0 { 0.0 } else { flips as f64 / total as f64 },
        });
    }
    ConfidenceReport { runs: runs.len() as u32, seeds, cases, usage }
}

/// Grades `cases` `runs` times, each run with its own seed (`judge.seed() + run`).
pub async fn confidence_runs(judge: &Judge, cases: &[JudgeCase], runs: u32) -> Result<ConfidenceReport, JudgeError> {
    if runs == 0 {
        return Err(JudgeError::Input("`--eval-runs` is 0; use 1 or more".into()));
    }
    let mut all = Vec::new();
    let mut seeds = Vec::new();
    for run in 0..runs {
        let seed = judge.seed().wrapping_add(u64::from(run));
        seeds.push(seed);
        let run_judge = judge.reseeded(seed);
        let mut tasks = tokio::task::JoinSet::new();
        for (index, case) in cases.iter().cloned().enumerate() {
            let run_judge = run_judge.clone();
            tasks.spawn(async move { (index, run_judge.grade(&case).await) });
        }
        let mut verdicts: Vec<Option<Verdict>> = vec![None; cases.len()];
        while let Some(joined) = tasks.join_next().await {
            let (index, verdict) =
                joined.map_err(|error| JudgeError::Input(format!("a grading task failed: {error}")))?;
            verdicts[index] = Some(verdict?);
        }
        all.push(verdicts.into_iter().flatten().collect());
    }
    Ok(summarize(&all, seeds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_and_status_bands() {
        let steady = run_stats(&[Some(75.0), Some(75.0), Some(75.0)]);
        assert_eq!(steady.status, ConfidenceStatus::HighConfidence);
        assert_eq!(steady.range, Some([75.0, 75.0]));
        let wobbly = run_stats(&[Some(70.0), Some(80.0)]);
        assert_eq!(wobbly.variance, Some(25.0));
        assert_eq!(wobbly.status, ConfidenceStatus::MediumConfidence);
        let noisy = run_stats(&[Some(50.0), Some(100.0)]);
        assert_eq!(noisy.status, ConfidenceStatus::LowConfidence);
        let errored = run_stats(&[Some(50.0), None]);
        assert_eq!(errored.status, ConfidenceStatus::LowConfidence);
        assert_eq!(errored.errored, 1);
    }
}
