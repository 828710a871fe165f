//! The run store under `benchmark_results/`: versioned schema (written atomically through
//! `crate::files`), the history store (SQLite or PostgreSQL), import/export.
//! A run is one self-contained JSON file holding the raw samples, so every statistic can be
//! recomputed later by a newer analyzer.
//!
//! The store floor of the workspace (docs/ARCHITECTURE.md): above the measuring floors,
//! below every verdict and view. The root crate re-exports it as `stackbench::results`.

// The floors below, under the names the root crate gives them, so `crate::stats::…`
// reads the same here as it did when this was the root's `results` module.
pub(crate) use stackbench_measure::{
    criterion_output, files, sidecar, stats, system, time, workload,
};

/// The Criterion tree of tests/fixtures, for the unit tests: cargo runs a member's tests
/// from its own folder, two below the repository's.
#[cfg(test)]
const CRITERION_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/criterion-0.8"
);

mod comparison;
pub mod db;
pub mod evidence;
mod export;
mod measured;
mod record;
mod run;
mod run_evidence;
pub mod server_client;
pub mod spool;
mod store;

pub use crate::stats::UNUSABLE_SAMPLES;
pub use comparison::{StoredVerdict, comparison_record, keep_comparison_verdict};
pub use db::{
    Acknowledgement, ComparisonRecord, DbError, HistoryPoint, MedianSeries, PruneOutcome, RunOrder,
    StoreUrl, StoredRun,
};
pub use export::{ExportRow, export_rows};
pub use measured::{MeasuredOnly, measured_only};
pub use record::{counted_run, new_run_id, run_for_comparison, run_from_criterion, run_from_tree};
// The probe and target reports beside a Criterion tree: `validate` reads them for a suite
// that measured nothing (all skipped), where no baseline exists to record.
pub use crate::time::{format_rfc3339_ms, now_unix_ms};
pub use evidence::{
    AcceptanceError, AcceptedUnsure, Evidence, NoEvidence, Outcome, UNSURE_EXIT_CODE,
};
pub use record::sidecar_files;
pub use run::{
    BenchmarkRecord, COUNTED_STATUS, FailedBenchmark, GATE_PROBE_NOTE, NOT_COUNTABLE_STATUS,
    RUN_SCHEMA, RUN_SCHEMA_PREFIX, RUN_SCHEMA_VERSION, RunRecord, Samples, SourceInfo,
    probe_fingerprint,
};
pub use store::{
    ImportProblem, ImportReport, LoadedRuns, ReportHistory, ResultsError, RunStore, load_run,
};
// `stackbench import` (the root's cli) reads files one at a time through these.
pub use store::{import_files, importable};
