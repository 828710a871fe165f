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
    /// The error against the float64 reference, when the run recorded it.
    pub accuracy: Option<crate::workload::Accuracy>,
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
                accuracy: b.accuracy.clone(),
            })
        })
        .collect()
}

/// The accuracy cell beside a rate: the error in epsilons and the largest relative error
/// (`2.4 ε, rel 3.1e-3`), `exact` for an exact match, `—` when not recorded.
pub fn accuracy_cell(m: &Measured) -> String {
    match &m.accuracy {
        None => "—".into(),
        Some(a) if a.comparison == crate::workload::accuracy::Comparison::Exact => "exact".into(),
        Some(a) => format!(
            "{} ε, rel {:.1e}",
            crate::workload::accuracy::eps_figure(a.max_eps_error),
            a.max_rel_error
        ),
    }
}

/// Whether any measured benchmark carries accuracy (views add their accuracy column then,
/// and otherwise say in one line that the run recorded none).
pub fn any_accuracy(measured: &[&Measured]) -> bool {
    measured.iter().any(|m| m.accuracy.is_some())
}

/// The columns of a run's accuracy table: the rate beside the accuracy set.
pub const ACCURACY_HEADERS: [&str; 8] = [
    "benchmark",
    "rate",
    "max abs error",
    "max rel error",
    "mean rel error",
    "error in ε",
    "ε",
    "reference",
];

/// A run's accuracy beside its throughput, one row per benchmark that carries accuracy
/// (cells as [`ACCURACY_HEADERS`]); or one line saying the run recorded none.
pub fn accuracy_table(run: &RunRecord) -> Result<Vec<Vec<String>>, String> {
    let all = measured(run);
    let with: Vec<&Measured> = all.iter().filter(|m| m.accuracy.is_some()).collect();
    if with.is_empty() {
        return Err(
            "accuracy: not recorded in this run (an older run, a plain Criterion run, or no benchmark with a float64 reference)"
                .into(),
        );
    }
    Ok(with
        .into_iter()
        .filter_map(|m| {
            let a = m.accuracy.as_ref()?;
            let rate = m
                .rate
                .as_ref()
                .map_or("—".to_string(), |r| format!("{:.1} {}", r.value, r.unit));
            Some(vec![
                m.id.clone(),
                rate,
                format!("{:.2e}", a.max_abs_error),
                format!("{:.2e}", a.max_rel_error),
                format!("{:.2e}", a.mean_rel_error),
                crate::workload::accuracy::eps_figure(a.max_eps_error),
                format!("{} ({:e})", a.dtype, a.epsilon),
                a.reference.clone(),
            ])
        })
        .collect())
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
