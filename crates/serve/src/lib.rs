//! stackbench-serve: the web dashboard (docs/ARCHITECTURE.md). [`serve`] answers pages and a
//! JSON API over the results store and the report models, and takes uploads. The only crate
//! of the workspace with an async runtime. The floors below are re-exported under the names
//! they always had.

pub use stackbench_report::{
    analysis, backend, components, config, criterion_output, dashboard, family, files, harness,
    probe, report, results, sidecar, stats, system, time, units, view, workload,
};

pub mod serve;
