//! stackbench-gate: the regression gate and bisect (docs/ARCHITECTURE.md). [`gate`] checks
//! base and head out into worktrees, builds and runs their benchmarks in interleaved rounds
//! (time or counting mode), judges them and writes the verdict and the PR comment;
//! [`gate::bisect`] finds the commit that made a benchmark slower. The floors below are
//! re-exported under the names they always had.

// Every floor below, under the names the dashboard crate gives them: one list, there.
pub use stackbench_report::*;

pub mod gate;
