//! stackbench: a Criterion-based benchmark harness for ML/GPU stacks, with a regression gate.
//!
//! This crate is the top floors of the workspace (docs/ARCHITECTURE.md): the gate
//! ([`gate`]), the views ([`report`], [`dashboard`], [`serve`], [`view`]), [`validate`] and
//! the command lines ([`cli`]). The floors below it, `stackbench-model`,
//! `stackbench-measure`, `stackbench-store` ([`results`]) and `stackbench-analysis`
//! ([`analysis`]), are re-exported under the names they always had, so
//! `stackbench::workload::…` still names a family's ids and `stackbench::results::…` the store.

pub use stackbench_measure::{
    backend, components, config, criterion_output, family, files, harness, sidecar, stats, system,
    time, units, workload,
};

pub use stackbench_analysis as analysis;
pub use stackbench_store as results;

pub mod cli;
pub mod dashboard;
pub mod gate;
pub mod report;
pub mod schemas;
pub mod serve;
pub mod validate;
pub mod view;
