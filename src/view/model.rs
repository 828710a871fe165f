//! What the pages draw, derived from run records once: each measured benchmark split into
//! its id parts with its median time, its rate and the size on its x axis. Pages, the text
//! charts and the HTML run pages all read this, so a number reads the same everywhere.

use crate::analysis::throughput::{PeakTable, Rate};
use crate::results::{BenchmarkRecord, RunRecord};
use crate::stats::median;
use crate::workload::family::IdParts;
use std::collections::BTreeMap;

/// One measured benchmark of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub id: String,
    /// `gemm`, `memory_bandwidth`, `tensor_ops`, `attention`, `components`, or the first
    /// part of a foreign id.
    pub family: String,
    pub backend: String,
    pub function: String,
    pub value: String,
    pub median_ns: f64,
    pub rate: Option<Rate>,
}

impl Measured {
    /// The series a benchmark belongs to on a chart: `backend/function`.
    pub fn series(&self) -> String {
        format!("{}/{}", self.backend, self.function)
    }

    /// GB/s or GFLOP/s, whichever the benchmark declared.
    pub fn rate_value(&self) -> Option<f64> {
        self.rate.as_ref().map(|r| r.value)
    }

    /// The peak the rate is measured against, recovered from the percentage.
    pub fn peak(&self) -> Option<f64> {
        let rate = self.rate.as_ref()?;
        let percent = rate.percent_of_peak.filter(|p| *p > 0.0)?;
        Some(rate.value * 100.0 / percent)
    }
}

/// The median time per iteration of one benchmark's samples, if it has any.
pub fn median_ns(b: &BenchmarkRecord) -> Option<f64> {
    let per_iter = b.samples.per_iteration_ns();
    let m = median(&per_iter);
    m.is_finite().then_some(m)
}

/// Every measured benchmark of `run`, with rates against the run's own probe peaks.
pub fn measured(run: &RunRecord) -> Vec<Measured> {
    let from_stackbench = run.probed_by_harness();
    let peaks = PeakTable::from_probe_peaks(&run.peaks(), from_stackbench);
    run.benchmarks
        .iter()
        .filter_map(|b| {
            let median_ns = median_ns(b)?;
            let parts = IdParts::split(&b.id);
            let rate = b
                .throughput
                .as_ref()
                .and_then(|t| peaks.rate(&b.id, t, median_ns));
            Some(Measured {
                id: b.id.clone(),
                family: parts.family.to_owned(),
                backend: parts.backend.to_owned(),
                function: parts.function.to_owned(),
                value: parts.value.to_owned(),
                median_ns,
                rate,
            })
        })
        .collect()
}

// The size axis is the family table's (`workload::family`): every chart reads it with
// the model, so it is re-exported here.
pub use crate::workload::family::log2_size;

/// The precision a benchmark ran at, from its function part (`f32`, `softmax_bf16`,
/// `flash_causal_f16`), for colouring.
pub fn dtype_of(function: &str) -> Option<&'static str> {
    const DTYPES: [&str; 6] = ["f64", "f32", "tf32", "f16", "bf16", "fp8e4m3"];
    let last = function.rsplit('_').next().unwrap_or(function);
    DTYPES.into_iter().find(|d| *d == last)
}

/// One run's change against another, per benchmark both measured: (id, before, after, %).
pub fn changes(before: &RunRecord, after: &RunRecord) -> Vec<(String, f64, f64, f64)> {
    after
        .benchmarks
        .iter()
        .filter_map(|b| {
            let new = median_ns(b)?;
            let old = median_ns(before.benchmark(&b.id)?)?;
            (old > 0.0).then(|| (b.id.clone(), old, new, 100.0 * (new / old - 1.0)))
        })
        .collect()
}

/// The harness's notes per measured benchmark (peak memory, extra metrics such as
/// tokens/s or percentiles), read from the run's target reports.
pub fn target_notes(
    run: &RunRecord,
) -> BTreeMap<String, serde_json::Map<String, serde_json::Value>> {
    let mut out = BTreeMap::new();
    for target in &run.targets {
        let Some(benchmarks) = target.get("benchmarks").and_then(|b| b.as_object()) else {
            continue;
        };
        for (id, entry) in benchmarks {
            if let Some(notes) = entry.get("notes").and_then(|n| n.as_object()) {
                out.insert(id.clone(), notes.clone());
            }
        }
    }
    out
}

/// Short display of a run: its label, else its id.
/// Every note the record keeps on a single benchmark (a peak the figure exceeded, a sample
/// file the reader repaired), as (id, note) in run order: each view lists them so no figure
/// is shown without its caveat.
pub fn benchmark_notes(run: &RunRecord) -> Vec<(&str, &str)> {
    run.benchmarks
        .iter()
        .flat_map(|b| b.notes.iter().map(move |n| (b.id.as_str(), n.as_str())))
        .collect()
}

pub fn run_name(run: &RunRecord) -> String {
    run.label.clone().unwrap_or_else(|| run.run_id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_come_from_the_function_part() {
        assert_eq!(dtype_of("f32"), Some("f32"));
        assert_eq!(dtype_of("softmax_bf16"), Some("bf16"));
        assert_eq!(dtype_of("flash_causal_f16"), Some("f16"));
        assert_eq!(dtype_of("triad"), None);
    }
}
