//! Golden-set calibration of the tier-3 evaluator.
//!
//! A golden set is a few historical runs (the seed suggests 5) whose tier-3 checkpoints a
//! person annotated with the right state. Each run is checked as usual; the evaluator's
//! state for every annotated tier-3 checkpoint is compared with the annotation.
//! **Agreement below [`CALIBRATION_THRESHOLD`] percent raises a calibration warning**: the
//! evaluator's tier-3 verdicts should not be trusted until its prompt or model is fixed.
//! Annotations of tier-1 and tier-2 checkpoints are ignored (code decides those). The
//! framework's own decisions are not held against the evaluator: BLOCKED is a FAIL under an
//! active environment constraint, so BLOCKED and FAIL compare as FAIL on both sides, and a
//! checkpoint the report has as NOT_APPLICABLE (no evidence, `applies_when`) was not judged and
//! is not compared.

use std::collections::BTreeMap;

use super::report::{ComplianceReport, ResultState, round2, shown_on_one_line};

/// The agreement (percent) below which calibration warns.
pub const CALIBRATION_THRESHOLD: f64 = 90.0;

/// One annotated run: its report and the human states by checkpoint id.
#[derive(Debug, Clone)]
pub struct GoldenCase {
    /// A name for messages.
    pub name: String,
    /// The report of checking the run.
    pub report: ComplianceReport,
    /// The states a person assigned, by checkpoint id.
    pub human: BTreeMap<String, ResultState>,
}

/// One disagreement.
#[derive(Debug, Clone, PartialEq)]
pub struct Disagreement {
    /// The golden case.
    pub case: String,
    /// The checkpoint.
    pub id: String,
    /// What the person said.
    pub human: ResultState,
    /// What the evaluator said.
    pub evaluator: ResultState,
}

/// The calibration outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// Cases checked.
    pub cases: usize,
    /// Annotated tier-3 checkpoints compared.
    pub compared: usize,
    /// Of those, how many agreed.
    pub agreed: usize,
    /// `agreed / compared * 100`, rounded to 2 decimals; `None` when nothing was compared.
    pub agreement_percent: Option<f64>,
    /// True when agreement is below [`CALIBRATION_THRESHOLD`] (or nothing was compared).
    pub warning: bool,
    /// Every disagreement.
    pub disagreements: Vec<Disagreement>,
    /// Annotations naming ids that are not in the report.
    pub unknown_ids: Vec<(String, String)>,
    /// Annotations of tier-1 and tier-2 checkpoints (case, id, tier): not compared, since
    /// calibration measures the tier-3 evaluator.
    pub not_semantic: Vec<(String, String, u8)>,
    /// Annotations of tier-3 checkpoints that were not applicable in their case (case, id):
    /// nothing was judged, so nothing is compared.
    pub not_applicable: Vec<(String, String)>,
}

/// Compares evaluator and human states over the golden set.
pub fn calibrate(cases: &[GoldenCase]) -> Calibration {
    let mut compared = 0;
    let mut agreed = 0;
    let mut disagreements = Vec::new();
    let mut unknown_ids = Vec::new();
    let mut not_semantic = Vec::new();
    let mut not_applicable = Vec::new();
    for case in cases {
        for (id, human) in &case.human {
            let Some(result) = case.report.checkpoints.iter().find(|c| &c.id == id) else {
                unknown_ids.push((case.name.clone(), id.clone()));
                continue;
            };
            if result.tier != 3 {
                not_semantic.push((case.name.clone(), id.clone(), result.tier));
                continue;
            }
            if result.result == ResultState::NotApplicable {
                not_applicable.push((case.name.clone(), id.clone()));
                continue;
            }
            compared += 1;
            let judged = |state: ResultState| if state == ResultState::Blocked { ResultState::Fail } else { state };
            if judged(result.result) == judged(*human) {
                agreed += 1;
            } else {
                disagreements.push(Disagreement {
                    case: case.name.clone(),
                    id: id.clone(),
                    human: *human,
                    evaluator: result.result,
                });
            }
        }
    }
    let agreement_percent = (compared > 0).then(|| round2(agreed as f64 / compared as f64 * 100.0));
    Calibration {
        cases: cases.len(),
        compared,
        agreed,
        agreement_percent,
        // The bar is on the exact ratio, not the rounded figure: 2249 of 2499 (89.996%) is
        // below 90% though it shows as 90.00%.
        warning: compared == 0 || (agreed as f64) * 100.0 < CALIBRATION_THRESHOLD * compared as f64,
        disagreements,
        unknown_ids,
        not_semantic,
        not_applicable,
    }
}

impl Calibration {
    /// A few lines for the terminal and the Markdown report.
    pub fn render(&self) -> String {
        let mut out = match self.agreement_percent {
            Some(agreement) => format!(
                "golden-set calibration: tier-3 agreement {agreement:.2}% ({} of {} annotated checkpoints over {} case(s))",
                self.agreed, self.compared, self.cases
            ),
            None => format!("golden-set calibration: no annotated tier-3 checkpoint in {} case(s)", self.cases),
        };
        if self.warning {
            out.push_str(&match self.agreement_percent {
                Some(agreement) => format!(
                    "\nCALIBRATION WARNING: agreement is below {CALIBRATION_THRESHOLD:.0}%{}; do not trust tier-3 verdicts until the evaluator is fixed",
                    if agreement >= CALIBRATION_THRESHOLD { " (just below: the figure above is rounded)" } else { "" }
                ),
                None => "\nCALIBRATION WARNING: nothing to compare, so the evaluator is not calibrated; annotate the tier-3 checkpoints the golden runs judged".to_owned(),
            });
        }
        let line = shown_on_one_line;
        for d in &self.disagreements {
            out.push_str(&format!(
                "\n  {}: {} human {} vs evaluator {}",
                line(&d.case),
                line(&d.id),
                d.human.as_str(),
                d.evaluator.as_str()
            ));
        }
        for (case, id) in &self.unknown_ids {
            out.push_str(&format!("\n  {}: annotation for unknown checkpoint `{}` ignored", line(case), line(id)));
        }
        for (case, id) in &self.not_applicable {
            out.push_str(&format!(
                "\n  {}: annotation for `{}` not compared: the checkpoint was not applicable in that case \
                 (its evidence is absent or `applies_when` does not hold), so nothing was judged",
                line(case),
                line(id)
            ));
        }
        for (case, id, tier) in &self.not_semantic {
            out.push_str(&format!(
                "\n  {}: annotation for tier-{tier} checkpoint `{}` ignored (calibration compares tier-3 verdicts)",
                line(case),
                line(id)
            ));
        }
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compliance::report::{
        CheckpointResult, ConfidenceStatus, EvaluatorAudit, PositionDropout, Rating, Scores, Summary, Tier3Confidence,
    };
    use crate::compliance::spec::CheckpointSeverity;

    fn report(states: &[(&str, u8, ResultState)]) -> ComplianceReport {
        ComplianceReport {
            schema_version: "1.0.0".into(),
            workflow: "w".into(),
            spec_version: "1".into(),
            evaluated_at: "2026-01-01T00:00:00Z".into(),
            scores: Scores { compliance_percent: None, spec_health_percent: 100.0, rating: Rating::NotRated },
            summary: Summary::default(),
            evaluator_audit: EvaluatorAudit::default(),
            tier_3_confidence: Tier3Confidence {
                protocol_enabled: false,
                runs: 1,
                score_range: None,
                mean: None,
                variance: None,
                status: ConfidenceStatus::SingleRun,
            },
            position_dropout_analysis: PositionDropout::default(),
            checkpoints: states
                .iter()
                .enumerate()
                .map(|(idx, (id, tier, state))| CheckpointResult {
                    id: (*id).into(),
                    position_index: idx + 1,
                    tier: *tier,
                    severity: CheckpointSeverity::Low,
                    result: *state,
                    earned_weight: 0.0,
                    notes: String::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn agreement_below_ninety_percent_warns() {
        use ResultState::*;
        let mut cases = Vec::new();
        for (idx, evaluator) in [Pass, Pass, Partial, Fail, Pass].into_iter().enumerate() {
            cases.push(GoldenCase {
                name: format!("run-{idx}"),
                report: report(&[("A-01", 1, Pass), ("B-01", 3, evaluator)]),
                human: [("A-01".to_owned(), Fail), ("B-01".to_owned(), if idx == 3 { Partial } else { evaluator })]
                    .into_iter()
                    .collect(),
            });
        }
        let calibration = calibrate(&cases);
        // 4 of 5 tier-3 annotations agree; the tier-1 annotation is ignored.
        assert_eq!((calibration.compared, calibration.agreed), (5, 4));
        assert_eq!(calibration.agreement_percent, Some(80.0));
        assert!(calibration.warning);
        assert!(calibration.render().contains("CALIBRATION WARNING"));
        // ... and said, not dropped silently.
        assert!(
            calibration.render().contains("run-0: annotation for tier-1 checkpoint `A-01` ignored"),
            "{}",
            calibration.render()
        );
        // The bar is on the exact ratio: 2249 of 2499 (89.996%) shows as 90.00% and warns.
        let ids: Vec<String> = (0..2499).map(|idx| format!("T-{idx:04}")).collect();
        let states: Vec<(&str, u8, ResultState)> = ids.iter().map(|id| (id.as_str(), 3, Pass)).collect();
        let human = ids.iter().enumerate().map(|(idx, id)| (id.clone(), if idx < 250 { Fail } else { Pass }));
        let just_below =
            calibrate(&[GoldenCase { name: "big".into(), report: report(&states), human: human.collect() }]);
        assert_eq!((just_below.compared, just_below.agreed, just_below.agreement_percent), (2499, 2249, Some(90.0)));
        assert!(just_below.warning);
        assert!(just_below.render().contains("just below"), "{}", just_below.render());
        cases[3].human.insert("B-01".into(), Fail);
        let calibration = calibrate(&cases);
        assert_eq!(calibration.agreement_percent, Some(100.0));
        assert!(!calibration.warning);
    }

    /// BLOCKED (a FAIL under an active constraint) and NOT_APPLICABLE are the framework's, not
    /// the evaluator's; nothing to compare warns without claiming an agreement.
    #[test]
    fn framework_states_are_not_held_against_the_evaluator() {
        use ResultState::*;
        let case = |state: ResultState, human: ResultState| GoldenCase {
            name: "run".into(),
            report: report(&[("B-01", 3, state)]),
            human: [("B-01".to_owned(), human)].into_iter().collect(),
        };
        let calibration = calibrate(&[case(Blocked, Fail), case(Fail, Blocked), case(Blocked, Blocked)]);
        assert_eq!((calibration.compared, calibration.agreed), (3, 3));
        let calibration = calibrate(&[case(Blocked, Pass)]);
        assert_eq!((calibration.compared, calibration.agreed), (1, 0));
        let calibration = calibrate(&[case(NotApplicable, Pass)]);
        assert_eq!((calibration.compared, calibration.agreement_percent), (0, None));
        assert!(calibration.warning);
        let text = calibration.render();
        assert!(text.contains("nothing to compare") && !text.contains("below"), "{text}");
        assert!(text.contains("run: annotation for `B-01` not compared: the checkpoint was not applicable"), "{text}");
    }
}
