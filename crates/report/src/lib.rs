//! stackbench-report: every report writer (docs/ARCHITECTURE.md). [`report`] holds the one
//! `Format` trait and its terminal table, Markdown, HTML, JSON, CSV and PDF writers for each
//! report. The floors below are re-exported under the names they always had.

pub use stackbench_dashboard::{
    analysis, backend, components, config, criterion_output, dashboard, family, files, harness,
    probe, results, sidecar, stats, system, time, units, view, workload,
};

pub mod report;
