//! Verdicts: before/after comparison, the regression gate, trends over history and
//! cross-hardware views. Judges run records; never knows how a number was measured.
//!
//! The analysis floor of the workspace (docs/ARCHITECTURE.md): above the store, below the
//! gate, the reports and the command lines. The root crate re-exports it as
//! `stackbench::analysis`.

// The floors below, under the names the root crate gives them, so `crate::results::…` and
// `crate::stats::…` read the same here as they did when this was the root's module.
pub(crate) use stackbench_measure::{
    config, criterion_output, files, sidecar, stats, system, units, workload,
};
pub(crate) use stackbench_store as results;

pub mod accuracy;
pub mod compare;
pub mod compatibility;
pub mod estimator;
pub mod hardware;
pub mod noise;
pub mod prices;
pub mod recommend;
pub mod rounds_spread;
pub mod simulate;
pub mod throughput;
pub mod trends;
pub mod verdict;

pub use compare::{
    BenchComparison, COMPARISON_SCHEMA, CompareError, CompareOptions, Comparison, HardwareCheck,
    InstructionCounts, Judgement, Side, SkippedInComparison, Summary, SystemicShift, Unmeasured,
    UnmeasuredStatus, compare,
};
// The evidence rule lives below the verdicts, beside the run record that `record` and
// `import` judge with it; the verdicts here and the CLI reach it through these names.
pub use crate::results::evidence::{AcceptedUnsure, Evidence, NoEvidence, Outcome};
pub use crate::stats::{SampleDefect, usable_median, usable_timed};
pub use estimator::Estimator;
pub use rounds_spread::{
    CalibrationCheck, HeldChange, LoadHeld, PooledSpread, RoundLoad, RoundsSpread, SequentialLooks,
    StoppedEarly,
};
pub use verdict::{OverallStatus, Status, VerdictRule};
