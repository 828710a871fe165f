//! The verdict in counting mode. The same code gives the same instruction count, so the rule
//! is a plain threshold on the change in `Ir` (default 1 %): no rounds, no statistics. What
//! remains of jitter (the heap's layout, which the lengths of the executable's path and of the
//! environment shift) is covered by a stated tolerance, measured as BENCHMARKS.md's
//! "Counting mode" section describes: a change within it is "within jitter", whatever the
//! threshold. Estimated cycles never decide: they come from a model, `Ir` does not.

use serde::{Deserialize, Serialize};

/// The default threshold: a change in `Ir` above 1 % is a regression (below −1 %, an
/// improvement).
pub const DEFAULT_THRESHOLD: f64 = 0.01;

/// What two counts of the same code may differ by, relative to the baseline and in
/// instructions; the larger of the two applies.
///
/// Measured (BENCHMARKS.md, "Counting mode"): 5 runs, a CPU hog on every core, environment
/// sizes 0 to 4096 bytes and executables at paths of eight lengths give identical `Ir` through
/// [`InstructionCounter`](super::instructions::InstructionCounter), which runs every
/// executable under one path length. Without that, the lengths of the path and of
/// `CARGO_TARGET_DIR` moved an allocating 16 k-instruction routine by up to 204 instructions
/// (1.3 %): the absolute tolerance (256) covers that case with margin, for heap shifts the
/// counter cannot normalise (a variable of the bench's own that differs between two sides).
/// The relative part (0.1 %) keeps large routines' tolerance below the default threshold.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JitterTolerance {
    pub relative: f64,
    pub instructions: u64,
}

impl JitterTolerance {
    pub const MEASURED: JitterTolerance = JitterTolerance {
        relative: 0.001,
        instructions: 256,
    };

    /// The tolerance in instructions for a baseline of `baseline_ir`.
    fn allowed(&self, baseline_ir: u64) -> f64 {
        (self.relative * baseline_ir as f64).max(self.instructions as f64)
    }
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
        "the counting threshold {threshold} is not a finite fraction above the jitter \
         tolerance {tolerance} (write 1 % as 0.01)"
    )]
    BadThreshold { threshold: f64, tolerance: f64 },
    #[error("{id}: the baseline counted 0 instructions, which nothing can be compared with")]
    ZeroBaseline { id: String },
}

/// The counting mode's rule: a threshold on the relative change in `Ir`, above a tolerance.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CountingRule {
    pub threshold: f64,
    pub tolerance: JitterTolerance,
}

impl Default for CountingRule {
    fn default() -> Self {
        CountingRule {
            threshold: DEFAULT_THRESHOLD,
            tolerance: JitterTolerance::MEASURED,
        }
    }
}

impl CountingRule {
    /// The rule with `threshold` (a fraction: 0.01 is 1 %) and the measured tolerance. A
    /// threshold inside the relative tolerance would flag jitter, so it is refused.
    pub fn new(threshold: f64) -> Result<Self, CountingRuleError> {
        let tolerance = JitterTolerance::MEASURED;
        if !threshold.is_finite() || threshold <= tolerance.relative {
            return Err(CountingRuleError::BadThreshold {
                threshold,
                tolerance: tolerance.relative,
            });
        }
        Ok(CountingRule {
            threshold,
            tolerance,
        })
    }

    /// The verdict on benchmark `id` counted `baseline_ir` then `candidate_ir`. A change
    /// counts only beyond both the tolerance and the threshold.
    pub fn judge(
        &self,
        id: &str,
        baseline_ir: u64,
        candidate_ir: u64,
    ) -> Result<CountVerdict, CountingRuleError> {
        if baseline_ir == 0 {
            return Err(CountingRuleError::ZeroBaseline { id: id.to_owned() });
        }
        if baseline_ir == candidate_ir {
            return Ok(CountVerdict::Identical);
        }
        let delta = candidate_ir as f64 - baseline_ir as f64;
        let change = delta / baseline_ir as f64;
        Ok(if delta.abs() <= self.tolerance.allowed(baseline_ir) {
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

    fn judge(base: u64, candidate: u64) -> CountVerdict {
        CountingRule::default()
            .judge("sum", base, candidate)
            .unwrap()
    }

    #[test]
    fn two_percent_more_work_regresses_and_the_same_work_is_identical() {
        assert_eq!(judge(100_000, 100_000), CountVerdict::Identical);
        assert!(judge(100_000, 102_000).fails());
        assert!(matches!(
            judge(100_000, 98_000),
            CountVerdict::Improved { .. }
        ));
    }

    #[test]
    fn the_threshold_and_the_tolerance_draw_the_lines() {
        // 1 % of 100 000 is 1 000; the tolerance is max(0.1 %, 256) = 256 instructions.
        assert!(matches!(
            judge(100_000, 101_001),
            CountVerdict::Regressed { .. }
        ));
        assert!(matches!(
            judge(100_000, 101_000),
            CountVerdict::BelowThreshold { .. }
        ));
        assert!(matches!(
            judge(100_000, 100_257),
            CountVerdict::BelowThreshold { .. }
        ));
        assert!(matches!(
            judge(100_000, 100_256),
            CountVerdict::WithinJitter { .. }
        ));
        // A small routine: 204 instructions of heap jitter on 15 846 is 1.3 %, not a change;
        // 2 % is.
        assert!(matches!(
            judge(15_846, 15_642),
            CountVerdict::WithinJitter { .. }
        ));
        assert!(judge(15_831, 16_148).fails());
        // Tiny routines: a change has to leave the absolute tolerance before it counts.
        assert!(matches!(judge(300, 556), CountVerdict::WithinJitter { .. }));
        assert!(judge(300, 557).fails());
    }

    #[test]
    fn a_configured_threshold_applies() {
        let rule = CountingRule::new(0.05).unwrap();
        assert!(!rule.judge("sum", 100_000, 104_000).unwrap().fails());
        assert!(rule.judge("sum", 100_000, 106_000).unwrap().fails());
    }

    #[test]
    fn thresholds_inside_the_tolerance_and_zero_baselines_are_refused() {
        for bad in [0.0, 0.0005, -0.01, f64::NAN, f64::INFINITY] {
            let error = CountingRule::new(bad).unwrap_err().to_string();
            assert!(error.contains("0.001"), "{error}");
        }
        let zero = CountingRule::default().judge("empty", 0, 10).unwrap_err();
        assert!(zero.to_string().contains("empty"), "{zero}");
    }

    proptest! {
        #[test]
        fn only_a_change_beyond_threshold_and_tolerance_fails(
            base in 1u64..1_000_000_000,
            candidate in 1u64..1_000_000_000,
        ) {
            let rule = CountingRule::default();
            let verdict = rule.judge("x", base, candidate).unwrap();
            let delta = candidate as f64 - base as f64;
            let beyond = delta > DEFAULT_THRESHOLD * base as f64
                && delta > 0.001 * base as f64
                && delta > 256.0;
            prop_assert_eq!(verdict.fails(), beyond);
            prop_assert!((verdict.change() - delta / base as f64).abs() < 1e-12);
            prop_assert_eq!(verdict == CountVerdict::Identical, base == candidate);
        }
    }
}
