//! The per-benchmark verdict rule of the gate, in one place so the documentation, the
//! simulator and the comparison all use the same numbers.
//!
//! On log per-iteration times `x` (baseline) and `y` (candidate):
//! 1. fewer than [`VerdictRule::min_samples`] samples on either side: `inconclusive`;
//! 2. the change is the Hodges-Lehmann shift of the logs, reported as a percentage
//!    `100·(e^shift − 1)`, with the 95 % Moses interval;
//! 3. significance is the two-sided Mann-Whitney p-value, adjusted by Benjamini-Hochberg
//!    across every judged benchmark of the comparison (q-value);
//! 4. `degraded` when change > threshold AND q < `fdr_q` AND the interval's lower end is
//!    above `ci_floor_fraction`·threshold; `improved` symmetrically;
//! 5. otherwise `inconclusive` when the interval still reaches beyond
//!    `inconclusive_factor`·threshold on either side (the data cannot rule out a change of
//!    that size), else `unchanged`.
//!
//! Defaults (tuned with the simulator, see BENCHMARKS.md, "The regression gate"): threshold 5 %,
//! `fdr_q` 0.10, `ci_floor_fraction` 0 (the interval must exclude zero), `min_samples` 5,
//! `inconclusive_factor` 2.

use serde::{Deserialize, Serialize};

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Degraded,
    Inconclusive,
    Improved,
    Unchanged,
    /// The gate only: a time within a stated multiple of the timer floor
    /// (`crates/gate/src/gate/calibrate.rs`). Listed, never judged: neither a regression nor a pass.
    #[serde(rename = "below floor")]
    BelowFloor,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Degraded => "degraded",
            Status::Inconclusive => "inconclusive",
            Status::Improved => "improved",
            Status::Unchanged => "unchanged",
            Status::BelowFloor => "below floor",
        }
    }
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OverallStatus {
    Healthy,
    Warning,
    Critical,
}

impl OverallStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            OverallStatus::Healthy => "healthy",
            OverallStatus::Warning => "warning",
            OverallStatus::Critical => "critical",
        }
    }
}

/// Parameters of the verdict; [`VerdictRule::default`] is what the gate uses and what the
/// quality-bar simulation was tuned with.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerdictRule {
    pub threshold_percent: f64,
    pub fdr_q: f64,
    pub confidence: f64,
    pub min_samples: usize,
    pub ci_floor_fraction: f64,
    pub inconclusive_factor: f64,
}

impl Default for VerdictRule {
    fn default() -> Self {
        VerdictRule {
            threshold_percent: 5.0,
            fdr_q: 0.10,
            confidence: 0.95,
            min_samples: 5,
            ci_floor_fraction: 0.0,
            inconclusive_factor: 2.0,
        }
    }
}

/// A percentage change from a shift of log times.
pub fn percent(log_shift: f64) -> f64 {
    100.0 * log_shift.exp_m1()
}

impl VerdictRule {
    /// The status of one judged benchmark (rule steps 4 and 5).
    pub fn status(&self, change: f64, ci: [f64; 2], q_value: f64) -> Status {
        let t = self.threshold_percent;
        let significant = q_value < self.fdr_q;
        let floor = self.ci_floor_fraction * t;
        if significant && change > t && ci[0] > floor {
            Status::Degraded
        } else if significant && change < -t && ci[1] < -floor {
            Status::Improved
        } else if ci[1] > self.inconclusive_factor * t || ci[0] < -self.inconclusive_factor * t {
            Status::Inconclusive
        } else {
            Status::Unchanged
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_branch_of_the_rule_is_reachable() {
        let r = VerdictRule::default();
        assert_eq!(r.status(8.0, [6.0, 10.0], 0.001), Status::Degraded);
        assert_eq!(r.status(8.0, [6.0, 10.0], 0.5), Status::Unchanged);
        assert_eq!(r.status(-8.0, [-10.0, -6.0], 0.001), Status::Improved);
        assert_eq!(r.status(3.0, [-1.0, 12.0], 0.2), Status::Inconclusive);
        assert_eq!(r.status(4.0, [3.0, 5.0], 0.001), Status::Unchanged);
        assert!((percent(0.0)).abs() < 1e-15);
        assert!((percent(2f64.ln()) - 100.0).abs() < 1e-9);
    }
}
