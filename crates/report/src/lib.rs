//! stackbench-report: every report writer (docs/ARCHITECTURE.md). [`report`] holds the one
//! `Format` trait and its terminal table, Markdown, HTML, JSON, CSV and PDF writers for each
//! report. The floors below are re-exported under the names they always had.

// Every floor below, under the names the dashboard crate gives them: one list, there.
pub use stackbench_dashboard::*;

pub mod report;
