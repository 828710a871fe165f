//! What the store answers, whatever the engine: rows of the run list, history points,
//! stored comparisons and acknowledgements, and what a prune removed.

use serde::Serialize;

/// One row of `analyze-trends runs`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredRun {
    pub run_id: String,
    pub timestamp: String,
    pub created_unix_ms: u64,
    pub label: Option<String>,
    pub git_revision: Option<String>,
    pub git_dirty: Option<bool>,
    /// The hardware fingerprint (`cpu=<model> x<threads>;gpu=<names>`).
    pub fingerprint: Option<String>,
    pub benchmarks: u64,
    pub failed: u64,
    pub skipped: u64,
    /// Criterion results the recorder could not read.
    pub unreadable: u64,
}

/// Per benchmark id, its medians as (index into a list of runs, median ns).
pub type MedianSeries = Vec<(String, Vec<(usize, f64)>)>;

/// One run's value of one benchmark.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryPoint {
    pub run_id: String,
    pub timestamp: String,
    pub created_unix_ms: u64,
    pub label: Option<String>,
    pub git_revision: Option<String>,
    pub fingerprint: Option<String>,
    pub median_ns: f64,
    pub min_ns: Option<f64>,
    pub samples: u64,
}

/// One stored `compare` or gate verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComparisonRecord {
    /// Assigned by the store; 0 before it is recorded.
    pub id: i64,
    pub created_unix_ms: u64,
    /// `compare` or `gate`.
    pub kind: String,
    /// The names as given (a Criterion baseline, a run id, `latest`, ...).
    pub baseline: String,
    pub candidate: String,
    /// The stored runs they resolved to, when they were stored runs: what prune protects.
    pub baseline_run_id: Option<String>,
    pub candidate_run_id: Option<String>,
    pub fingerprint: Option<String>,
    pub threshold_percent: f64,
    /// `regression`, `unsure`, `unsure, accepted` or `clean`.
    pub verdict: String,
    pub degraded: u64,
    pub improved: u64,
    pub unchanged: u64,
    pub inconclusive: u64,
    /// The full comparison as its JSON writer produced it.
    #[serde(skip)]
    pub detail_json: String,
}

/// An intentional step: from `run_id` on, `bench_id`'s new level is the baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Acknowledgement {
    pub bench_id: String,
    pub run_id: String,
    pub reason: String,
    pub who: String,
    pub created_unix_ms: u64,
}

/// What `prune` removed (or would remove).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PruneOutcome {
    pub removed_runs: Vec<String>,
    pub removed_comparisons: u64,
    /// Old runs kept only because a kept comparison or an acknowledgement refers to them.
    pub protected_runs: Vec<String>,
    pub kept_runs: u64,
}
