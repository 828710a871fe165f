//! stackbench-dashboard: the views' floor of the workspace (docs/ARCHITECTURE.md). [`view`]
//! turns run records and verdicts into the rows, series and notes every view shows;
//! [`dashboard`] draws them as the terminal dashboard's pages, to a terminal or to text.
//! The floors below are re-exported under the names they always had, so this crate's code
//! names them as it did when it was the root crate's (`crate::results`, `crate::units`).

pub use stackbench_measure::{
    backend, components, config, criterion_output, family, files, harness, probe, sidecar, stats,
    system, time, units, workload,
};

pub use stackbench_analysis as analysis;
pub use stackbench_store as results;

pub mod dashboard;
pub mod view;
