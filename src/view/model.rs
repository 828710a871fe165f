//! What the pages draw, derived from run records once: each measured benchmark split into
//! its id parts with its median time, its rate and the size on its x axis. Pages, the text
//! charts and the HTML run pages all read this, so a number reads the same everywhere.

use crate::analysis::throughput::{PeakTable, Rate};
use crate::results::{BenchmarkRecord, RunRecord};
use crate::stats::median;
use crate::workload::ids::parse_bytes_id;
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
    let from_stackbench = run.system.is_some();
    let peaks = PeakTable::from_probe_peaks(&run.peaks(), from_stackbench);
    run.benchmarks
        .iter()
        .filter_map(|b| {
            let median_ns = median_ns(b)?;
            let mut parts = b.id.splitn(4, '/');
            let family = parts.next().unwrap_or_default().to_string();
            let backend = parts.next().unwrap_or_default().to_string();
            let function = parts.next().unwrap_or_default().to_string();
            let value = parts.next().unwrap_or_default().to_string();
            let rate = b
                .throughput
                .as_ref()
                .and_then(|t| peaks.rate(&b.id, t, median_ns));
            Some(Measured {
                id: b.id.clone(),
                family,
                backend,
                function,
                value,
                median_ns,
                rate,
            })
        })
        .collect()
}

/// The x position of a benchmark on a size axis, as log2 of bytes or elements:
/// `256MiB` → 28, GEMM `MxNxK` → log2 of the cube root of M·N·K (the side of the cube of
/// equal work), `RxC` → log2(R·C), attention `b_h_s_d` → log2(S).
pub fn log2_size(family: &str, value: &str) -> Option<f64> {
    let size = match family {
        "memory_bandwidth" => parse_bytes_id(value)? as f64,
        "gemm" => {
            let dims = parse_dims(value, 'x')?;
            (dims.iter().product::<f64>()).cbrt()
        }
        "tensor_ops" => parse_dims(value, 'x')?.iter().product(),
        "attention" => attention_seq(value)?,
        _ => parse_bytes_id(value)
            .map(|b| b as f64)
            .or_else(|| value.parse::<f64>().ok())?,
    };
    (size > 0.0).then(|| size.log2())
}

fn parse_dims(value: &str, sep: char) -> Option<Vec<f64>> {
    let dims: Option<Vec<f64>> = value.split(sep).map(|d| d.parse::<f64>().ok()).collect();
    dims.filter(|d| !d.is_empty())
}

/// The sequence length of an attention id value `b1_h8_s1024_d64`.
pub fn attention_seq(value: &str) -> Option<f64> {
    value
        .split('_')
        .find_map(|p| p.strip_prefix('s'))
        .and_then(|s| s.parse().ok())
}

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
pub fn run_name(run: &RunRecord) -> String {
    run.label.clone().unwrap_or_else(|| run.run_id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_log2_of_bytes_or_elements() {
        assert_eq!(log2_size("memory_bandwidth", "256MiB"), Some(28.0));
        assert_eq!(log2_size("gemm", "1024x1024x1024"), Some(10.0));
        assert_eq!(log2_size("tensor_ops", "256x4096"), Some(20.0));
        assert_eq!(log2_size("attention", "b1_h8_s1024_d64"), Some(10.0));
        assert_eq!(log2_size("gemm", "odd"), None);
        assert_eq!(log2_size("memory_bandwidth", "0B"), None);
    }

    #[test]
    fn dtypes_come_from_the_function_part() {
        assert_eq!(dtype_of("f32"), Some("f32"));
        assert_eq!(dtype_of("softmax_bf16"), Some("bf16"));
        assert_eq!(dtype_of("flash_causal_f16"), Some("f16"));
        assert_eq!(dtype_of("triad"), None);
    }
}
