//! Verdicts: before/after comparison, the regression gate, trends over history and
//! cross-hardware views. Judges run records; never knows how a number was measured.

pub mod compare;
pub mod evidence;
pub mod hardware;
pub mod noise;
pub mod prices;
pub mod simulate;
pub mod throughput;
pub mod trends;
pub mod verdict;

pub use compare::{
    BenchComparison, COMPARISON_SCHEMA, CompareError, CompareOptions, Comparison, HardwareCheck,
    Judgement, Side, SkippedInComparison, Summary, SystemicShift, Unmeasured, UnmeasuredStatus,
    compare,
};
pub use evidence::{Evidence, NoEvidence, Outcome, SampleDefect, usable_median, usable_timed};
pub use verdict::{OverallStatus, Status, VerdictRule};
