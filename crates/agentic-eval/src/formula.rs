//! The normalization formula registry: every raw score becomes a number in `0.0..=1.0`
//! through a formula named by its `formula_id`, so each normalized value is reproducible.
//!
//! Built-in formulas (`000` §4.1 and `001`): `binary`, `likert_1_5`, `likert_neg2_2`,
//! `scale_0_5`, `zero_one` (clamps), `lower_is_better` (params `slo_good` < `slo_bad`, clamps),
//! `pairwise` (wins/losses/ties, or a win rate), `fail_to_pass` and `pass_to_pass` (test counts,
//! or a ratio). Users register their own formulas as data ([`UserFormula`]: a linear map of a
//! declared raw range).
//!
//! **Invariant:** a raw value outside a bounded scale (7 on 1..5, 0.5 for `binary`) is an
//! error, never silently clamped; only `zero_one`, `lower_is_better` and user formulas that
//! ask for it clamp. Normalizing allocates nothing unless it fails.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The default prior of the reliability adjustment (`000` §4.1).
pub const RELIABILITY_PRIOR: f64 = 0.5;
/// The default pseudo-count `k` of the reliability adjustment (`000` §4.1).
pub const RELIABILITY_K: f64 = 20.0;

/// Pulls a normalized score toward a prior when it rests on few samples:
/// `(n * norm + k * prior) / (n + k)`.
///
/// ```
/// let adjusted = agentic_eval::adjust_for_sample_size(0.9, 5, 0.5, 20.0);
/// assert!((adjusted - 0.58).abs() < 1e-12);
/// ```
pub fn adjust_for_sample_size(norm: f64, n: u64, prior: f64, k: f64) -> f64 {
    let n = n as f64;
    if n + k <= 0.0 {
        return norm;
    }
    (n * norm + k * prior) / (n + k)
}

/// Wins, losses and ties of pairwise comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairwiseCounts {
    /// Comparisons won.
    pub wins: u64,
    /// Comparisons lost.
    pub losses: u64,
    /// Comparisons tied (default 0).
    #[serde(default)]
    pub ties: u64,
}

/// Tests that passed out of a total, for `fail_to_pass` / `pass_to_pass`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestCounts {
    /// Tests that passed.
    pub passed: u64,
    /// Tests in the set.
    pub total: u64,
}

impl TestCounts {
    /// `passed / total`, or `None` when the set is empty.
    pub fn ratio(&self) -> Option<f64> {
        (self.total > 0).then(|| self.passed as f64 / self.total as f64)
    }
}

/// A raw score before normalization: a number, pairwise counts or test counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawScore {
    /// A number on the formula's raw scale.
    Number(f64),
    /// Pairwise comparison counts (`pairwise`).
    Pairwise(PairwiseCounts),
    /// Test counts (`fail_to_pass`, `pass_to_pass`).
    Tests(TestCounts),
}

impl RawScore {
    /// The number, when the raw score is a plain number.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            RawScore::Number(value) => Some(*value),
            _ => None,
        }
    }

    /// How many observations the raw score rests on: comparisons for pairwise counts, tests
    /// for test counts, 1 for a plain number (at least 1).
    pub fn observations(&self) -> u64 {
        match self {
            RawScore::Number(_) => 1,
            RawScore::Pairwise(counts) => (counts.wins + counts.losses + counts.ties).max(1),
            RawScore::Tests(counts) => counts.total.max(1),
        }
    }

    fn shape(&self) -> &'static str {
        match self {
            RawScore::Number(_) => "a number",
            RawScore::Pairwise(_) => "pairwise counts",
            RawScore::Tests(_) => "test counts",
        }
    }
}

impl std::fmt::Display for RawScore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RawScore::Number(value) => write!(f, "{value}"),
            RawScore::Pairwise(c) => write!(f, "{{wins: {}, losses: {}, ties: {}}}", c.wins, c.losses, c.ties),
            RawScore::Tests(c) => write!(f, "{{passed: {}, total: {}}}", c.passed, c.total),
        }
    }
}

/// Why a raw score could not be normalized.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FormulaError {
    /// The formula id is not registered.
    #[error("unknown formula `{id}`; known formulas: {known}")]
    UnknownFormula {
        /// The id asked for.
        id: String,
        /// The registered ids, comma separated.
        known: String,
    },
    /// The raw value lies outside the formula's bounded scale.
    #[error(
        "raw score `{raw}` is outside the `{id}` scale {min}..{max}; fix the score, or use the formula that matches its scale"
    )]
    OutOfRange {
        /// The formula.
        id: String,
        /// The raw value.
        raw: f64,
        /// Lowest allowed raw value.
        min: f64,
        /// Highest allowed raw value.
        max: f64,
    },
    /// `binary` got something other than 0 or 1.
    #[error("raw score `{raw}` is not valid for `binary`; use 0 or 1")]
    NotBinary {
        /// The raw value.
        raw: f64,
    },
    /// The raw value is NaN or infinite.
    #[error("raw score `{raw}` is not a finite number; give a finite number")]
    NotFinite {
        /// The raw value.
        raw: f64,
    },
    /// The raw score has the wrong shape for the formula.
    #[error("formula `{id}` takes {expected}, found {found}")]
    WrongShape {
        /// The formula.
        id: String,
        /// What it takes.
        expected: &'static str,
        /// What it got.
        found: &'static str,
    },
    /// The formula's parameters are missing or wrong.
    #[error("formula `{id}`: {message}")]
    InvalidParams {
        /// The formula.
        id: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// Counts that cannot be normalized (no comparisons, more passed than total).
    #[error("formula `{id}`: {message}")]
    InvalidCounts {
        /// The formula.
        id: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A user formula cannot be registered.
    #[error("cannot register formula `{id}`: {message}")]
    InvalidDefinition {
        /// The formula.
        id: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// What to do with a raw value outside a user formula's declared range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutOfRange {
    /// Reject it with an error (the default).
    #[default]
    Reject,
    /// Clamp the normalized value into 0..1.
    Clamp,
}

/// A formula a user registers as data: a linear map of the declared raw range onto 0..1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserFormula {
    /// The id criteria name in `formula_id`.
    pub id: String,
    /// The raw value that maps to 0 (or to 1 when `higher_is_better` is false).
    pub raw_min: f64,
    /// The raw value that maps to 1 (or to 0 when `higher_is_better` is false).
    pub raw_max: f64,
    /// Whether a higher raw value is better (default true).
    #[serde(default = "yes")]
    pub higher_is_better: bool,
    /// Reject (default) or clamp raw values outside `raw_min..raw_max`.
    #[serde(default)]
    pub out_of_range: OutOfRange,
    /// What the formula is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn yes() -> bool {
    true
}

/// How a registered formula computes.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Binary,
    Likert1To5,
    LikertNeg2To2,
    Scale0To5,
    ZeroOne,
    LowerIsBetter,
    Pairwise,
    FailToPass,
    PassToPass,
    Linear { min: f64, max: f64, higher_is_better: bool, clamp: bool },
}

/// One registered formula.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    id: String,
    kind: Kind,
    description: String,
}

impl Formula {
    /// The formula id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the formula computes, for people.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The bounded raw scale `(min, max)` of a plain-number raw score, when the formula has one.
    /// Formulas that clamp (`zero_one`, `lower_is_better`) have none.
    pub fn bounds(&self) -> Option<(f64, f64)> {
        match &self.kind {
            Kind::Binary => Some((0.0, 1.0)),
            Kind::Likert1To5 => Some((1.0, 5.0)),
            Kind::LikertNeg2To2 => Some((-2.0, 2.0)),
            Kind::Scale0To5 => Some((0.0, 5.0)),
            Kind::Pairwise | Kind::FailToPass | Kind::PassToPass => Some((0.0, 1.0)),
            Kind::Linear { min, max, clamp: false, .. } => Some((min.min(*max), min.max(*max))),
            Kind::ZeroOne | Kind::LowerIsBetter | Kind::Linear { .. } => None,
        }
    }

    /// The score points that need an anchor text in a rubric (discrete scales only).
    pub fn anchor_points(&self) -> Option<Vec<i64>> {
        match &self.kind {
            Kind::Binary => Some(vec![0, 1]),
            Kind::Likert1To5 => Some((1..=5).collect()),
            Kind::LikertNeg2To2 => Some((-2..=2).collect()),
            Kind::Scale0To5 => Some((0..=5).collect()),
            _ => None,
        }
    }

    /// The parameter names the formula requires.
    pub fn required_params(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::LowerIsBetter => &["slo_good", "slo_bad"],
            _ => &[],
        }
    }

    /// Normalizes one raw score into `0.0..=1.0`.
    pub fn normalize(&self, raw: &RawScore, params: Option<&Map<String, Value>>) -> Result<f64, FormulaError> {
        match (&self.kind, raw) {
            (Kind::Pairwise, RawScore::Pairwise(counts)) => {
                let total = counts.wins + counts.losses + counts.ties;
                if total == 0 {
                    return Err(FormulaError::InvalidCounts {
                        id: self.id.clone(),
                        message: "wins + losses + ties is 0; at least one comparison is needed".to_owned(),
                    });
                }
                Ok((counts.wins as f64 + 0.5 * counts.ties as f64) / total as f64)
            }
            (Kind::FailToPass | Kind::PassToPass, RawScore::Tests(counts)) => {
                if counts.passed > counts.total {
                    return Err(FormulaError::InvalidCounts {
                        id: self.id.clone(),
                        message: format!(
                            "`passed` ({}) is greater than `total` ({}); passed counts a subset of total",
                            counts.passed, counts.total
                        ),
                    });
                }
                counts.ratio().ok_or_else(|| FormulaError::InvalidCounts {
                    id: self.id.clone(),
                    message: "`total` is 0; an empty test set proves nothing, give the real counts".to_owned(),
                })
            }
            (_, RawScore::Number(value)) => self.normalize_number(*value, params),
            (kind, other) => Err(FormulaError::WrongShape {
                id: self.id.clone(),
                expected: match kind {
                    Kind::Pairwise => "`{wins, losses, ties}` or a win rate in 0..1",
                    Kind::FailToPass | Kind::PassToPass => "`{passed, total}` or a ratio in 0..1",
                    _ => "a number",
                },
                found: other.shape(),
            }),
        }
    }

    fn normalize_number(&self, raw: f64, params: Option<&Map<String, Value>>) -> Result<f64, FormulaError> {
        if !raw.is_finite() {
            return Err(FormulaError::NotFinite { raw });
        }
        if let Some((min, max)) = self.bounds()
            && (raw < min || raw > max)
        {
            return Err(FormulaError::OutOfRange { id: self.id.clone(), raw, min, max });
        }
        let norm = match &self.kind {
            Kind::Binary => {
                if raw != 0.0 && raw != 1.0 {
                    return Err(FormulaError::NotBinary { raw });
                }
                raw
            }
            Kind::Likert1To5 => (raw - 1.0) / 4.0,
            Kind::LikertNeg2To2 => (raw + 2.0) / 4.0,
            Kind::Scale0To5 => raw / 5.0,
            Kind::ZeroOne => clamp(raw),
            Kind::Pairwise | Kind::FailToPass | Kind::PassToPass => raw,
            Kind::LowerIsBetter => {
                let (good, bad) = self.slo(params)?;
                clamp((bad - raw) / (bad - good))
            }
            Kind::Linear { min, max, higher_is_better, .. } => {
                let up = (raw - min) / (max - min);
                clamp(if *higher_is_better { up } else { 1.0 - up })
            }
        };
        Ok(norm)
    }

    fn slo(&self, params: Option<&Map<String, Value>>) -> Result<(f64, f64), FormulaError> {
        let get = |name: &str| -> Result<f64, FormulaError> {
            let value = params.and_then(|params| params.get(name)).ok_or_else(|| FormulaError::InvalidParams {
                id: self.id.clone(),
                message: format!("missing parameter `{name}`; add `params: {{slo_good: N, slo_bad: M}}` with N < M"),
            })?;
            value.as_f64().filter(|v| v.is_finite()).ok_or_else(|| FormulaError::InvalidParams {
                id: self.id.clone(),
                message: format!("parameter `{name}` must be a number, found {value}"),
            })
        };
        let good = get("slo_good")?;
        let bad = get("slo_bad")?;
        if good >= bad {
            return Err(FormulaError::InvalidParams {
                id: self.id.clone(),
                message: format!(
                    "`slo_good` ({good}) must be less than `slo_bad` ({bad}); lower raw values are better"
                ),
            });
        }
        Ok((good, bad))
    }

    /// Checks the formula's parameters without a raw value (for rubric validation).
    pub fn check_params(&self, params: Option<&Map<String, Value>>) -> Result<(), FormulaError> {
        if matches!(self.kind, Kind::LowerIsBetter) {
            self.slo(params)?;
        }
        Ok(())
    }
}

fn clamp(x: f64) -> f64 {
    x.clamp(0.0, 1.0)
}

/// The formulas known by id: the built-ins plus any a user registered.
#[derive(Debug, Clone, PartialEq)]
pub struct FormulaRegistry {
    formulas: BTreeMap<String, Formula>,
}

impl Default for FormulaRegistry {
    fn default() -> Self {
        FormulaRegistry::builtin()
    }
}

impl FormulaRegistry {
    /// The built-in formulas.
    pub fn builtin() -> FormulaRegistry {
        let builtins = [
            ("binary", Kind::Binary, "0 or 1; norm = raw"),
            ("likert_1_5", Kind::Likert1To5, "1..5; norm = (raw - 1) / 4"),
            ("likert_neg2_2", Kind::LikertNeg2To2, "-2..2; norm = (raw + 2) / 4"),
            ("scale_0_5", Kind::Scale0To5, "0..5 (001 judge metrics); norm = raw / 5"),
            ("zero_one", Kind::ZeroOne, "continuous 0..1; norm = clamp(raw)"),
            (
                "lower_is_better",
                Kind::LowerIsBetter,
                "cost/latency/retries; norm = clamp((slo_bad - raw) / (slo_bad - slo_good))",
            ),
            ("pairwise", Kind::Pairwise, "norm = (wins + 0.5 * ties) / (wins + losses + ties)"),
            ("fail_to_pass", Kind::FailToPass, "norm = passed_fail_to_pass / total_fail_to_pass"),
            ("pass_to_pass", Kind::PassToPass, "norm = passed_pass_to_pass / total_pass_to_pass"),
        ];
        let formulas = builtins
            .into_iter()
            .map(|(id, kind, description)| {
                (id.to_owned(), Formula { id: id.to_owned(), kind, description: description.to_owned() })
            })
            .collect();
        FormulaRegistry { formulas }
    }

    /// Registers a user formula. Its id must be new and its range non-empty and finite.
    pub fn register(&mut self, formula: UserFormula) -> Result<(), FormulaError> {
        let invalid = |message: String| FormulaError::InvalidDefinition { id: formula.id.clone(), message };
        if formula.id.trim().is_empty() {
            return Err(invalid("the id is empty; give the formula a name".to_owned()));
        }
        if self.formulas.contains_key(&formula.id) {
            return Err(invalid("a formula with this id is already registered; pick another id".to_owned()));
        }
        if !formula.raw_min.is_finite() || !formula.raw_max.is_finite() || formula.raw_min >= formula.raw_max {
            return Err(invalid(format!(
                "`raw_min` ({}) must be a finite number below `raw_max` ({}); set `higher_is_better: false` to invert",
                formula.raw_min, formula.raw_max
            )));
        }
        let direction = if formula.higher_is_better { "higher is better" } else { "lower is better" };
        let description = formula.description.clone().unwrap_or_else(|| {
            format!("linear map of {}..{} onto 0..1, {direction}", formula.raw_min, formula.raw_max)
        });
        self.formulas.insert(
            formula.id.clone(),
            Formula {
                id: formula.id,
                kind: Kind::Linear {
                    min: formula.raw_min,
                    max: formula.raw_max,
                    higher_is_better: formula.higher_is_better,
                    clamp: formula.out_of_range == OutOfRange::Clamp,
                },
                description,
            },
        );
        Ok(())
    }

    /// The formula with id `id`, or an error listing every known id.
    pub fn get(&self, id: &str) -> Result<&Formula, FormulaError> {
        self.formulas.get(id).ok_or_else(|| FormulaError::UnknownFormula { id: id.to_owned(), known: self.known() })
    }

    /// Normalizes `raw` with formula `id`.
    pub fn normalize(
        &self,
        id: &str,
        raw: &RawScore,
        params: Option<&Map<String, Value>>,
    ) -> Result<f64, FormulaError> {
        self.get(id)?.normalize(raw, params)
    }

    /// The registered ids, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.formulas.keys().map(String::as_str)
    }

    /// The registered ids, comma separated.
    pub fn known(&self) -> String {
        self.ids().collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(id: &str, raw: f64) -> Result<f64, FormulaError> {
        FormulaRegistry::builtin().normalize(id, &RawScore::Number(raw), None)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn test_binary_normalization() {
        assert_eq!(norm("binary", 0.0).unwrap(), 0.0);
        assert_eq!(norm("binary", 1.0).unwrap(), 1.0);
        assert_eq!(norm("binary", 0.5), Err(FormulaError::NotBinary { raw: 0.5 }));
    }

    #[test]
    fn test_likert_1_5_normalization() {
        assert_eq!(norm("likert_1_5", 1.0).unwrap(), 0.0);
        assert_eq!(norm("likert_1_5", 3.0).unwrap(), 0.5);
        assert_eq!(norm("likert_1_5", 5.0).unwrap(), 1.0);
        assert!(matches!(norm("likert_1_5", 7.0), Err(FormulaError::OutOfRange { .. })));
        assert!(matches!(norm("likert_1_5", 0.0), Err(FormulaError::OutOfRange { .. })));
    }

    #[test]
    fn test_likert_neg2_2_normalization() {
        assert_eq!(norm("likert_neg2_2", -2.0).unwrap(), 0.0);
        assert_eq!(norm("likert_neg2_2", 0.0).unwrap(), 0.5);
        assert_eq!(norm("likert_neg2_2", 2.0).unwrap(), 1.0);
        assert!(matches!(norm("likert_neg2_2", 3.0), Err(FormulaError::OutOfRange { .. })));
    }

    #[test]
    fn scale_0_5_divides_by_five() {
        assert!(close(norm("scale_0_5", 3.0).unwrap(), 0.6));
        assert!(matches!(norm("scale_0_5", 5.5), Err(FormulaError::OutOfRange { .. })));
    }

    #[test]
    fn test_lower_is_better_normalization() {
        let registry = FormulaRegistry::builtin();
        let params: Map<String, Value> = serde_json::from_str(r#"{"slo_good": 8, "slo_bad": 30}"#).unwrap();
        let at = |raw: f64| registry.normalize("lower_is_better", &RawScore::Number(raw), Some(&params)).unwrap();
        assert_eq!(at(5.0), 1.0, "below slo_good");
        assert_eq!(at(45.0), 0.0, "above slo_bad");
        assert!((at(12.0) - 0.818).abs() < 0.0005, "seed example: 12 s with SLO 8/30 gives 0.818");
        let missing = registry.normalize("lower_is_better", &RawScore::Number(1.0), None).unwrap_err();
        assert!(missing.to_string().contains("slo_good"), "{missing}");
        let inverted: Map<String, Value> = serde_json::from_str(r#"{"slo_good": 30, "slo_bad": 8}"#).unwrap();
        let error = registry.normalize("lower_is_better", &RawScore::Number(1.0), Some(&inverted)).unwrap_err();
        assert!(error.to_string().contains("must be less than"), "{error}");
    }

    #[test]
    fn test_zero_one_passthrough_clamps() {
        assert_eq!(norm("zero_one", 1.5).unwrap(), 1.0);
        assert_eq!(norm("zero_one", -0.5).unwrap(), 0.0);
        assert_eq!(norm("zero_one", 0.7).unwrap(), 0.7);
    }

    #[test]
    fn test_pairwise_normalization() {
        let raw = RawScore::Pairwise(PairwiseCounts { wins: 3, losses: 1, ties: 1 });
        let value = FormulaRegistry::builtin().normalize("pairwise", &raw, None).unwrap();
        assert!(close(value, 0.7), "{value}");
        let none = RawScore::Pairwise(PairwiseCounts { wins: 0, losses: 0, ties: 0 });
        assert!(FormulaRegistry::builtin().normalize("pairwise", &none, None).is_err());
        assert!(close(norm("pairwise", 0.25).unwrap(), 0.25), "a win rate is accepted");
        assert!(matches!(norm("pairwise", 1.5), Err(FormulaError::OutOfRange { .. })));
    }

    #[test]
    fn swe_test_formulas_take_counts() {
        let registry = FormulaRegistry::builtin();
        let counts = RawScore::Tests(TestCounts { passed: 19, total: 20 });
        assert!(close(registry.normalize("pass_to_pass", &counts, None).unwrap(), 0.95));
        let all = RawScore::Tests(TestCounts { passed: 3, total: 3 });
        assert_eq!(registry.normalize("fail_to_pass", &all, None).unwrap(), 1.0);
        let bad = RawScore::Tests(TestCounts { passed: 4, total: 3 });
        assert!(registry.normalize("fail_to_pass", &bad, None).is_err());
        let empty = RawScore::Tests(TestCounts { passed: 0, total: 0 });
        assert!(registry.normalize("fail_to_pass", &empty, None).is_err());
        let shape = registry.normalize("likert_1_5", &counts, None).unwrap_err();
        assert!(matches!(shape, FormulaError::WrongShape { .. }), "{shape}");
    }

    #[test]
    fn test_unknown_formula_id_raises() {
        let error = norm("likert_1_10", 3.0).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("`likert_1_10`"), "{text}");
        for id in ["binary", "likert_1_5", "likert_neg2_2", "lower_is_better", "zero_one", "pairwise", "scale_0_5"] {
            assert!(text.contains(id), "the error lists `{id}`: {text}");
        }
    }

    #[test]
    fn non_finite_raw_is_rejected_even_by_clamping_formulas() {
        assert!(matches!(norm("zero_one", f64::NAN), Err(FormulaError::NotFinite { .. })));
        assert!(matches!(norm("likert_1_5", f64::INFINITY), Err(FormulaError::NotFinite { .. })));
    }

    #[test]
    fn user_formula_maps_a_declared_range() {
        let mut registry = FormulaRegistry::builtin();
        let formula: UserFormula = serde_json::from_str(r#"{"id": "percent", "raw_min": 0, "raw_max": 100}"#).unwrap();
        registry.register(formula).unwrap();
        let raw = RawScore::Number(40.0);
        assert!(close(registry.normalize("percent", &raw, None).unwrap(), 0.4));
        assert!(matches!(
            registry.normalize("percent", &RawScore::Number(120.0), None),
            Err(FormulaError::OutOfRange { .. })
        ));
        let inverted = UserFormula {
            id: "tokens".to_owned(),
            raw_min: 0.0,
            raw_max: 1000.0,
            higher_is_better: false,
            out_of_range: OutOfRange::Clamp,
            description: None,
        };
        registry.register(inverted).unwrap();
        assert!(close(registry.normalize("tokens", &RawScore::Number(250.0), None).unwrap(), 0.75));
        assert_eq!(registry.normalize("tokens", &RawScore::Number(5000.0), None).unwrap(), 0.0);
        let duplicate =
            UserFormula { id: "binary".to_owned(), raw_min: 0.0, raw_max: 1.0, ..registry_formula_defaults() };
        assert!(registry.register(duplicate).is_err());
        let empty = UserFormula { id: "x".to_owned(), raw_min: 1.0, raw_max: 1.0, ..registry_formula_defaults() };
        assert!(registry.register(empty).is_err());
    }

    fn registry_formula_defaults() -> UserFormula {
        UserFormula {
            id: String::new(),
            raw_min: 0.0,
            raw_max: 1.0,
            higher_is_better: true,
            out_of_range: OutOfRange::Reject,
            description: None,
        }
    }

    #[test]
    fn test_reliability_adjustment_pulls_toward_prior() {
        let adjusted = adjust_for_sample_size(0.9, 5, RELIABILITY_PRIOR, RELIABILITY_K);
        assert!(close(adjusted, (5.0 * 0.9 + 20.0 * 0.5) / 25.0));
        assert!(adjusted < 0.6, "n=5 pulls 0.9 well toward 0.5: {adjusted}");
    }

    #[test]
    fn test_reliability_adjustment_large_n_negligible() {
        let adjusted = adjust_for_sample_size(0.9, 1000, RELIABILITY_PRIOR, RELIABILITY_K);
        assert!((adjusted - 0.9).abs() < 0.01, "{adjusted}");
    }
}
