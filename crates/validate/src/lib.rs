//! stackbench-validate: whether a machine performs as it should (docs/ARCHITECTURE.md).
//! [`validate`] runs the checks of each level against the machine's own peaks and the
//! libraries' figures, and writes the validation document. The floors below are
//! re-exported under the names they always had.

pub use stackbench_report::{
    analysis, backend, components, config, criterion_output, dashboard, family, files, harness,
    probe, report, results, sidecar, stats, system, time, units, view, workload,
};

pub mod validate;
