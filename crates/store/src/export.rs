//! `analyze-trends export`: one row per benchmark per run, for spreadsheets and notebooks.
//! This is the rows' model only; they are written (CSV, JSON) by the one listing writer,
//! `stackbench::report::rows`, above this floor.

use super::run::RunRecord;
use crate::stats::median;
use serde::Serialize;

/// One benchmark of one run, flat; the fields are the CSV's columns, in order.
#[derive(Serialize)]
pub struct ExportRow<'a> {
    run_id: &'a str,
    timestamp: &'a str,
    label: &'a str,
    git_revision: &'a str,
    fingerprint: &'a str,
    id: &'a str,
    group: &'a str,
    function: &'a str,
    value: &'a str,
    throughput_kind: &'a str,
    throughput_elements: Option<u64>,
    throughput_bytes: Option<u64>,
    samples: usize,
    sampling_mode: String,
    median_ns: f64,
    min_ns: f64,
    criterion_mean_ns: Option<f64>,
    criterion_median_ns: Option<f64>,
}

/// Every benchmark of every run, in the order of `runs`.
pub fn export_rows(runs: &[RunRecord]) -> Vec<ExportRow<'_>> {
    let mut out = Vec::new();
    for run in runs {
        for b in &run.benchmarks {
            let per_iter = b.samples.per_iteration_ns();
            let est = b.estimates.as_ref();
            out.push(ExportRow {
                run_id: &run.run_id,
                timestamp: &run.timestamp,
                label: run.label.as_deref().unwrap_or(""),
                git_revision: run.git_revision.as_deref().unwrap_or(""),
                fingerprint: run.fingerprint.as_deref().unwrap_or(""),
                id: &b.id,
                group: &b.group,
                function: b.function.as_deref().unwrap_or(""),
                value: b.value.as_deref().unwrap_or(""),
                throughput_kind: b.throughput.as_ref().map_or("", |t| t.kind()),
                throughput_elements: b.throughput.and_then(|t| t.elements()),
                throughput_bytes: b.throughput.and_then(|t| t.bytes()),
                samples: per_iter.len(),
                sampling_mode: b
                    .samples
                    .sampling_mode
                    .map_or(String::new(), |m| format!("{m:?}")),
                median_ns: median(&per_iter),
                min_ns: per_iter.iter().copied().fold(f64::INFINITY, f64::min),
                criterion_mean_ns: est.and_then(|e| e.mean.as_ref()).map(|e| e.point_estimate),
                criterion_median_ns: est
                    .and_then(|e| e.median.as_ref())
                    .map(|e| e.point_estimate),
            });
        }
    }
    out
}
