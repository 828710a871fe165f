//! Per-benchmark run-to-run noise floors learned from the history: the spread of a
//! benchmark's run medians across earlier runs on the same hardware. Within-run statistics
//! cannot see run-to-run drift (a different boost clock, a different memory layout); the
//! history can, and the gate uses it where it exists.
//!
//! The floor comes from first differences of the run medians, not from their spread: a
//! real step in the past (a 10 % change that landed) would inflate the spread of the raw
//! medians to about 7 % and hide any later change under 20 %, but it is only one large
//! difference among many small ones, which the median absolute deviation ignores.

use crate::results::RunRecord;
use crate::stats::{mad, median};
use std::collections::HashMap;

/// At least this many earlier runs of a benchmark before its floor is trusted.
pub const MIN_HISTORY_RUNS: usize = 5;

/// Noise floors (standard deviation of log run medians, estimated robustly from the scaled
/// MAD of consecutive differences, divided by √2 since a difference carries two runs' noise)
/// of every benchmark with at least [`MIN_HISTORY_RUNS`] runs among `runs` whose
/// fingerprint equals `fingerprint`, leaving out the runs named in `exclude` (the ones
/// being compared). Returns the floors and how many runs contributed.
pub fn noise_floors(
    runs: &[RunRecord],
    fingerprint: Option<&str>,
    exclude: &[&str],
) -> (HashMap<String, f64>, usize) {
    let Some(fingerprint) = fingerprint else {
        return (HashMap::new(), 0);
    };
    let used: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.fingerprint.as_deref() == Some(fingerprint))
        .filter(|r| !exclude.contains(&r.run_id.as_str()))
        .collect();
    let mut series: HashMap<&str, Vec<f64>> = HashMap::new();
    for run in &used {
        for b in &run.benchmarks {
            series
                .entry(b.id.as_str())
                .or_default()
                .push(median(&b.samples.per_iteration_ns()).ln());
        }
    }
    let floors = series
        .into_iter()
        .filter(|(_, logs)| logs.len() >= MIN_HISTORY_RUNS)
        .map(|(id, logs)| (id.to_string(), first_difference_sd(&logs)))
        .filter(|(_, sigma)| sigma.is_finite())
        .collect();
    (floors, used.len())
}

/// The sd of a series' noise from its first differences: steps and slow trends add one
/// outlying difference or a small offset, which the MAD does not see.
pub fn first_difference_sd(series: &[f64]) -> f64 {
    let differences: Vec<f64> = series.windows(2).map(|w| w[1] - w[0]).collect();
    if differences.is_empty() {
        return f64::NAN;
    }
    mad(&differences) / std::f64::consts::SQRT_2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic noise series of sd ≈ `sd` (a sum of sines, no generator needed).
    fn noise(n: usize, sd: f64) -> Vec<f64> {
        (0..n)
            .map(|i| {
                sd * 1.4 * ((i as f64 * 2.39).sin() * 0.8 + (i as f64 * 0.77).cos() * 0.6) / 1.0
            })
            .collect()
    }

    #[test]
    fn a_past_step_does_not_inflate_the_floor() {
        let mut series = noise(40, 0.01);
        for v in &mut series[20..] {
            *v += 0.10f64.ln_1p();
        }
        let raw_spread = mad(&series);
        let floor = first_difference_sd(&series);
        assert!(
            raw_spread > 0.04,
            "the raw spread sees the step: {raw_spread}"
        );
        assert!(floor < 0.02, "the floor stays near the 1 % noise: {floor}");
        let flat = first_difference_sd(&noise(40, 0.01));
        assert!((floor - flat).abs() < 0.005, "{floor} vs {flat}");
        assert!(first_difference_sd(&[1.0]).is_nan());
    }
}
