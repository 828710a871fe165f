//! stackbench-validate: whether a machine performs as it should (docs/ARCHITECTURE.md).
//! [`validate`] runs the checks of each level against the machine's own peaks and the
//! libraries' figures, and writes the validation document. The floors below are
//! re-exported under the names they always had.

// Every floor below, under the names the dashboard crate gives them: one list, there.
pub use stackbench_report::*;

pub mod validate;
