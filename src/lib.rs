//! stackbench: a Criterion-based benchmark harness for ML/GPU stacks, with a regression gate.
//!
//! This crate is the top floor of the workspace (docs/ARCHITECTURE.md): the command lines
//! ([`cli`]) of the binaries `stackbench` and `analyze-trends`, and the JSON Schemas derived
//! from the documents' types ([`schemas`]). Every floor below it is re-exported under the
//! name it always had, so `stackbench::workload::…` still names a family's ids,
//! `stackbench::results::…` the store and `stackbench::gate::…` the gate.

// Every floor below, under the names the dashboard crate gives them: one list, there.
pub use stackbench_report::*;

pub use stackbench_gate::gate;
pub use stackbench_serve::serve;
pub use stackbench_validate::validate;

pub mod cli;
pub mod schemas;
