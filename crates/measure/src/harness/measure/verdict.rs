//! The verdict in counting mode. The same code gives the same instruction count, so the rule
//! is a plain threshold on the change in `Ir` (default 1 %): no rounds, no statistics. What
//! jitter remains is not assumed: the gate counts each benchmark's base twice, the second
//! time perturbed ([`JitterCalibration`]), and that benchmark's own A/A difference, with a
//! stated margin, is its tolerance ([`JitterTolerance::from_aa`]); identical A/A counts give
//! a tolerance of 0, so any change of the count is judged by the threshold. A benchmark whose
//! A/A counts differ by more than the threshold is not countable ([`AaOutcome`]). Estimated
//! cycles never decide: they come from a model, `Ir` does not.

use serde::{Deserialize, Serialize};

/// The default threshold: a change in `Ir` above 1 % is a regression (below −1 %, an
/// improvement).
pub const DEFAULT_THRESHOLD: f64 = 0.01;

/// The margin added to an observed A/A difference: this fraction of it, rounded up…
pub const AA_MARGIN_FRACTION: f64 = 0.10;
/// …and at least this many instructions. One A/A pair shows one draw of the jitter; the
/// margin covers a draw a little larger than the one seen. A benchmark with identical A/A
/// counts gets no margin: its tolerance is 0.
pub const AA_MARGIN_MIN_INSTRUCTIONS: u64 = 4;

/// What two counts of the same code may differ by, in instructions, for one benchmark:
/// measured by its A/A counts ([`JitterTolerance::from_aa`]), never assumed.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct JitterTolerance {
    pub instructions: u64,
}

impl JitterTolerance {
    /// No jitter: the benchmark's A/A counts were identical.
    pub const NONE: JitterTolerance = JitterTolerance { instructions: 0 };

    /// The tolerance two counts of the same code (`first_ir`, `again_ir`) give: 0 when they
    /// are identical, else their difference plus [`AA_MARGIN_FRACTION`] of it (rounded up),
    /// at least [`AA_MARGIN_MIN_INSTRUCTIONS`].
    pub fn from_aa(first_ir: u64, again_ir: u64) -> Self {
        let difference = first_ir.abs_diff(again_ir);
        if difference == 0 {
            return JitterTolerance::NONE;
        }
        let margin = ((difference as f64 * AA_MARGIN_FRACTION).ceil() as u64)
            .max(AA_MARGIN_MIN_INSTRUCTIONS);
        JitterTolerance {
            instructions: difference.saturating_add(margin),
        }
    }
}

/// What a benchmark's A/A counts say about it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AaOutcome {
    /// Countable, with this tolerance.
    Countable(JitterTolerance),
    /// Its own two counts differ by more than the threshold: the count does not say what the
    /// code does, so it is not countable (and is timed instead).
    NotCountable {
        difference: u64,
        /// `difference / first_ir`.
        change: f64,
    },
}

/// How the gate measured counting mode's jitter, as `comparison.json`'s
/// `counting.calibration` records it: the perturbation of the second count, the margin, and
/// every benchmark's two base counts. Fields default, so a file written before the
/// calibration existed still reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JitterCalibration {
    /// What differed between the two counts of the base.
    #[serde(default)]
    pub perturbation: String,
    /// [`AA_MARGIN_FRACTION`].
    #[serde(default)]
    pub margin_fraction: f64,
    /// [`AA_MARGIN_MIN_INSTRUCTIONS`].
    #[serde(default)]
    pub margin_min_instructions: u64,
    /// One entry per benchmark whose base was counted twice, by id.
    #[serde(default)]
    pub benchmarks: Vec<AaCount>,
}

impl JitterCalibration {
    /// An empty calibration with this `perturbation` and the stated margin.
    pub fn new(perturbation: impl Into<String>) -> Self {
        JitterCalibration {
            perturbation: perturbation.into(),
            margin_fraction: AA_MARGIN_FRACTION,
            margin_min_instructions: AA_MARGIN_MIN_INSTRUCTIONS,
            benchmarks: Vec::new(),
        }
    }

    /// The benchmarks whose A/A counts differed (the ones a reader needs to see).
    pub fn jittery(&self) -> impl Iterator<Item = &AaCount> {
        self.benchmarks.iter().filter(|b| b.first_ir != b.again_ir)
    }
}

/// One benchmark's A/A counts: its base counted as the gate counts it, then again perturbed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AaCount {
    pub id: String,
    /// The base side's count (the one the verdict compares with the head).
    pub first_ir: u64,
    /// The second count of the base, perturbed.
    pub again_ir: u64,
    /// The tolerance they give ([`JitterTolerance::from_aa`]); 0 when identical.
    #[serde(default)]
    pub tolerance_instructions: u64,
    /// False when they differ by more than the threshold: the benchmark was timed instead.
    #[serde(default = "countable_by_default")]
    pub countable: bool,
}

fn countable_by_default() -> bool {
    true
}

/// One benchmark's verdict on two counts. `change` is `(candidate − baseline) / baseline`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum CountVerdict {
    /// The same count.
    Identical,
    /// A difference no larger than the jitter tolerance.
    WithinJitter {
        change: f64,
    },
    /// A real change, no larger than the threshold.
    BelowThreshold {
        change: f64,
    },
    Regressed {
        change: f64,
    },
    Improved {
        change: f64,
    },
}

impl CountVerdict {
    /// Whether the gate fails on it: only a regression does.
    pub fn fails(&self) -> bool {
        matches!(self, CountVerdict::Regressed { .. })
    }

    pub fn change(&self) -> f64 {
        match *self {
            CountVerdict::Identical => 0.0,
            CountVerdict::WithinJitter { change }
            | CountVerdict::BelowThreshold { change }
            | CountVerdict::Regressed { change }
            | CountVerdict::Improved { change } => change,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CountingRuleError {
    #[error(
        "the counting threshold {threshold} is not a finite fraction above 0 (write 1 % as \
         0.01): each benchmark whose own A/A counts differ by more than it is timed instead"
    )]
    BadThreshold { threshold: f64 },
    #[error("{id}: the baseline counted 0 instructions, which nothing can be compared with")]
    ZeroBaseline { id: String },
}

/// The counting mode's rule: a threshold on the relative change in `Ir`, above each
/// benchmark's measured tolerance.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CountingRule {
    pub threshold: f64,
}

impl Default for CountingRule {
    fn default() -> Self {
        CountingRule {
            threshold: DEFAULT_THRESHOLD,
        }
    }
}

impl CountingRule {
    /// The rule with `threshold` (a fraction: 0.01 is 1 %). Zero is refused: every benchmark
    /// with any A/A difference would be timed, which is time mode with extra steps.
    pub fn new(threshold: f64) -> Result<Self, CountingRuleError> {
        if !threshold.is_finite() || threshold <= 0.0 {
            return Err(CountingRuleError::BadThreshold { threshold });
        }
        Ok(CountingRule { threshold })
    }

    /// What a benchmark's A/A counts (`first_ir`, then `again_ir` of the same code) make of
    /// it: countable with the tolerance they give, or not countable when they differ by more
    /// than the threshold.
    pub fn calibrate(&self, first_ir: u64, again_ir: u64) -> AaOutcome {
        let difference = first_ir.abs_diff(again_ir);
        let change = difference as f64 / first_ir.max(1) as f64;
        if change > self.threshold {
            AaOutcome::NotCountable { difference, change }
        } else {
            AaOutcome::Countable(JitterTolerance::from_aa(first_ir, again_ir))
        }
    }

    /// The verdict on benchmark `id` counted `baseline_ir` then `candidate_ir`, whose A/A
    /// counts gave `tolerance`. A change counts only beyond both the tolerance and the
    /// threshold.
    pub fn judge(
        &self,
        id: &str,
        baseline_ir: u64,
        candidate_ir: u64,
        tolerance: JitterTolerance,
    ) -> Result<CountVerdict, CountingRuleError> {
        if baseline_ir == 0 {
            return Err(CountingRuleError::ZeroBaseline { id: id.to_owned() });
        }
        if baseline_ir == candidate_ir {
            return Ok(CountVerdict::Identical);
        }
        let delta = candidate_ir as f64 - baseline_ir as f64;
        let change = delta / baseline_ir as f64;
        Ok(if delta.abs() <= tolerance.instructions as f64 {
            CountVerdict::WithinJitter { change }
        } else if change > self.threshold {
            CountVerdict::Regressed { change }
        } else if change < -self.threshold {
            CountVerdict::Improved { change }
        } else {
            CountVerdict::BelowThreshold { change }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn judge(base: u64, candidate: u64, tolerance: u64) -> CountVerdict {
        CountingRule::default()
            .judge(
                "sum",
                base,
                candidate,
                JitterTolerance {
                    instructions: tolerance,
                },
            )
            .unwrap()
    }

    #[test]
    fn two_percent_more_work_regresses_and_the_same_work_is_identical() {
        assert_eq!(judge(100_000, 100_000, 0), CountVerdict::Identical);
        assert!(judge(100_000, 102_000, 0).fails());
        assert!(matches!(
            judge(100_000, 98_000, 0),
            CountVerdict::Improved { .. }
        ));
    }

    #[test]
    fn with_identical_aa_counts_the_threshold_alone_draws_the_line() {
        // issue 28: `encode_slice/50` went 726 -> 764 instructions (+5.2 %) and a fixed
        // tolerance of 256 instructions called it unchanged. Measured jitter of 0 does not.
        assert!(judge(726, 764, 0).fails());
        // 3 % more work on a 700-instruction routine, and 1 % exactly (not above).
        assert!(judge(700, 721, 0).fails());
        assert!(matches!(
            judge(700, 707, 0),
            CountVerdict::BelowThreshold { .. }
        ));
        assert!(matches!(
            judge(1_000, 1_011, 0),
            CountVerdict::Regressed { .. }
        ));
        assert!(matches!(
            judge(1_000, 1_010, 0),
            CountVerdict::BelowThreshold { .. }
        ));
    }

    #[test]
    fn a_measured_tolerance_covers_its_own_jitter_and_nothing_more() {
        // A/A counts 15 831 and 15 846: tolerance 15 + max(ceil(1.5), 4) = 19.
        let tolerance = JitterTolerance::from_aa(15_831, 15_846);
        assert_eq!(tolerance.instructions, 19);
        let rule = CountingRule::default();
        let at = |candidate| rule.judge("alloc", 15_831, candidate, tolerance).unwrap();
        assert!(matches!(at(15_850), CountVerdict::WithinJitter { .. }));
        assert!(matches!(at(15_812), CountVerdict::WithinJitter { .. }));
        assert!(matches!(at(15_851), CountVerdict::BelowThreshold { .. }));
        assert!(at(16_000).fails());
    }

    #[test]
    fn the_margin_is_a_tenth_of_the_difference_and_at_least_four() {
        assert_eq!(JitterTolerance::from_aa(500, 500), JitterTolerance::NONE);
        assert_eq!(JitterTolerance::from_aa(500, 501).instructions, 1 + 4);
        assert_eq!(JitterTolerance::from_aa(1_000, 1_040).instructions, 40 + 4);
        assert_eq!(
            JitterTolerance::from_aa(10_204, 10_000).instructions,
            204 + 21
        );
    }

    #[test]
    fn aa_counts_apart_by_more_than_the_threshold_are_not_countable() {
        let rule = CountingRule::default();
        assert_eq!(
            rule.calibrate(25_000, 25_000),
            AaOutcome::Countable(JitterTolerance::NONE)
        );
        assert_eq!(
            rule.calibrate(25_000, 25_020),
            AaOutcome::Countable(JitterTolerance { instructions: 24 })
        );
        // 1 % exactly is still countable; more is not.
        assert!(matches!(
            rule.calibrate(1_000, 1_010),
            AaOutcome::Countable(_)
        ));
        match rule.calibrate(1_000, 989) {
            AaOutcome::NotCountable { difference, change } => {
                assert_eq!(difference, 11);
                assert!((change - 0.011).abs() < 1e-12);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_configured_threshold_applies() {
        let rule = CountingRule::new(0.05).unwrap();
        let none = JitterTolerance::NONE;
        assert!(!rule.judge("sum", 100_000, 104_000, none).unwrap().fails());
        assert!(rule.judge("sum", 100_000, 106_000, none).unwrap().fails());
        // A small threshold is fine now that the tolerance is measured.
        assert!(CountingRule::new(0.0005).is_ok());
    }

    #[test]
    fn zero_negative_or_non_finite_thresholds_and_zero_baselines_are_refused() {
        for bad in [0.0, -0.01, f64::NAN, f64::INFINITY] {
            let error = CountingRule::new(bad).unwrap_err().to_string();
            assert!(error.contains("above 0"), "{error}");
        }
        let zero = CountingRule::default()
            .judge("empty", 0, 10, JitterTolerance::NONE)
            .unwrap_err();
        assert!(zero.to_string().contains("empty"), "{zero}");
    }

    #[test]
    fn an_older_calibration_without_its_newer_fields_still_reads() {
        let old: JitterCalibration = serde_json::from_str("{}").unwrap();
        assert_eq!(old, JitterCalibration::default());
        let count: AaCount =
            serde_json::from_str(r#"{"id": "sum", "first_ir": 5, "again_ir": 5}"#).unwrap();
        assert!(count.countable);
        assert_eq!(count.tolerance_instructions, 0);
    }

    proptest! {
        #[test]
        fn only_a_change_beyond_threshold_and_tolerance_fails(
            base in 1u64..1_000_000_000,
            candidate in 1u64..1_000_000_000,
            jitter in 0u64..10_000,
        ) {
            let rule = CountingRule::default();
            let tolerance = JitterTolerance::from_aa(base, base.saturating_add(jitter));
            let verdict = rule.judge("x", base, candidate, tolerance).unwrap();
            let delta = candidate as f64 - base as f64;
            let beyond = delta > DEFAULT_THRESHOLD * base as f64
                && delta > tolerance.instructions as f64;
            prop_assert_eq!(verdict.fails(), beyond);
            prop_assert!((verdict.change() - delta / base as f64).abs() < 1e-12);
            prop_assert_eq!(verdict == CountVerdict::Identical, base == candidate);
            prop_assert!(tolerance.instructions >= jitter);
        }
    }
}
