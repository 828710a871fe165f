//! Per-benchmark run-to-run noise floors learned from the history: the spread of a
//! benchmark's run medians across earlier runs on the same hardware. Within-run statistics
//! cannot see run-to-run drift (a different boost clock, a different memory layout); the
//! history can, and the gate uses it where it exists.

use crate::results::RunRecord;
use crate::stats::{mad, median};
use std::collections::HashMap;

/// At least this many earlier runs of a benchmark before its floor is trusted.
pub const MIN_HISTORY_RUNS: usize = 5;

/// Noise floors (standard deviation of log run medians, estimated robustly as the scaled
/// MAD) of every benchmark with at least [`MIN_HISTORY_RUNS`] runs among `runs` whose
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
        .map(|(id, logs)| (id.to_string(), mad(&logs)))
        .filter(|(_, sigma)| sigma.is_finite())
        .collect();
    (floors, used.len())
}
