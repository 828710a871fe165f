//! Which estimator a comparison's numbers come from. A row's two times, its change and the
//! change's interval must be one estimator's, or the table contradicts itself (a gate once
//! showed `17.2 → 17.3 ns, +15.64 %`: times as medians of round medians, the change as the
//! mean of per-round shifts, which a single noisy round moves and the medians ignore). The
//! writers name the estimator in their column headers.

use serde::{Deserialize, Serialize};

/// The estimator behind a comparison's rows, when it is not `compare`'s own (sample
/// medians and the Hodges-Lehmann shift of one pair of runs, whose headers stay plain).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Estimator {
    /// The gate's: the change is the mean over rounds of each round's Hodges-Lehmann shift
    /// of log times, the base-first and the head-first rounds weighing half each (so a slow
    /// drift cancels in an odd number of rounds too), with the rounds' interval; the base
    /// time is the geometric mean of the base side's round medians, and the head time is
    /// that base time moved by the change, so `head / base - 1` is the change shown.
    MeanRoundShift,
}

/// Column headers that name the estimator.
pub struct EstimatorHeaders {
    pub baseline: &'static str,
    pub candidate: &'static str,
    pub change: &'static str,
    pub ci: &'static str,
}

impl Estimator {
    pub fn headers(self) -> EstimatorHeaders {
        match self {
            Estimator::MeanRoundShift => EstimatorHeaders {
                baseline: "base (geomean of round medians)",
                candidate: "head (base × change)",
                change: "change (mean of round HL shifts)",
                ci: "95% CI (between rounds)",
            },
        }
    }

    /// One sentence for the Markdown under the table.
    pub fn describe(self) -> &'static str {
        match self {
            Estimator::MeanRoundShift => {
                "Change: the mean over rounds of each round's Hodges-Lehmann shift of \
                 head vs base (log times), base-first and head-first rounds weighing half \
                 each, with its 95 % interval; base: the geometric mean \
                 of the base side's round medians; head: the base time moved by that change."
            }
        }
    }

    /// The base and head times of a row from the base side's per-round medians and the
    /// change as a log shift: the geometric mean of the medians, and that moved by the shift.
    pub fn times(self, base_round_medians_ns: &[f64], log_shift: f64) -> (f64, f64) {
        match self {
            Estimator::MeanRoundShift => {
                let logs: Vec<f64> = base_round_medians_ns
                    .iter()
                    .filter(|t| t.is_finite() && **t > 0.0)
                    .map(|t| t.ln())
                    .collect();
                if logs.is_empty() {
                    return (f64::NAN, f64::NAN);
                }
                let base = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
                (base, base * log_shift.exp())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::percent;

    #[test]
    fn the_times_agree_with_the_change_they_are_shown_beside() {
        let shift = 0.1454; // +15.65 %
        let (base, head) = Estimator::MeanRoundShift.times(&[17.0, 17.4, 17.2], shift);
        assert!(
            (base - (17.0f64 * 17.4 * 17.2).cbrt()).abs() < 1e-9,
            "{base}"
        );
        assert!(((head / base - 1.0) * 100.0 - percent(shift)).abs() < 1e-9);
    }

    #[test]
    fn no_usable_median_gives_no_time_rather_than_a_made_up_one() {
        let (base, head) = Estimator::MeanRoundShift.times(&[0.0, f64::NAN], 0.1);
        assert!(base.is_nan() && head.is_nan());
    }
}
