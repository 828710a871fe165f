//! Keeping a `compare` or gate verdict in the history database. The verdict itself is
//! judged in `analysis`; this module only knows what the store keeps of it
//! ([`StoredVerdict`]), so the store never depends on the judging.

use super::{ComparisonRecord, ResultsError, RunRecord, RunStore, now_unix_ms};

/// What the store keeps of one verdict: its counts, whether it failed, and the full
/// comparison as its JSON writer produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredVerdict {
    pub threshold_percent: f64,
    /// True when the verdict failed (a regression or a failed benchmark).
    pub regression: bool,
    /// Benchmarks left `inconclusive`: without a regression, the verdict is `unsure`.
    pub unsure: u64,
    /// A maintainer accepted the unsure verdict for this head (the detail says who, which SHA).
    pub accepted_unsure: bool,
    pub degraded: u64,
    pub improved: u64,
    pub unchanged: u64,
    pub inconclusive: u64,
    pub detail_json: String,
}

/// A verdict as the store keeps it. `kind` is `compare` or `gate`; `base` and `cand` are
/// the runs judged, with the names the user gave them. Run ids are kept only for runs the
/// store holds (a Criterion baseline compared in place is not one).
pub fn comparison_record(
    store: &RunStore,
    kind: &str,
    (base_name, base): (&str, &RunRecord),
    (cand_name, cand): (&str, &RunRecord),
    verdict: &StoredVerdict,
) -> Result<ComparisonRecord, ResultsError> {
    let db = store.database()?;
    let stored = |run: &RunRecord| -> Result<Option<String>, ResultsError> {
        Ok(db.has_run(&run.run_id)?.then(|| run.run_id.clone()))
    };
    Ok(ComparisonRecord {
        id: 0,
        created_unix_ms: now_unix_ms(),
        kind: kind.to_string(),
        baseline: base_name.to_string(),
        candidate: cand_name.to_string(),
        baseline_run_id: stored(base)?,
        candidate_run_id: stored(cand)?,
        fingerprint: cand.fingerprint.clone(),
        threshold_percent: verdict.threshold_percent,
        verdict: if verdict.regression {
            "regression"
        } else if verdict.unsure > 0 && verdict.accepted_unsure {
            "unsure, accepted"
        } else if verdict.unsure > 0 {
            "unsure"
        } else {
            "clean"
        }
        .into(),
        degraded: verdict.degraded,
        improved: verdict.improved,
        unchanged: verdict.unchanged,
        inconclusive: verdict.inconclusive,
        detail_json: verdict.detail_json.clone(),
    })
}

/// Keeps a `compare` or `gate` verdict (`kind`) in an existing results directory; `compare`
/// on bare Criterion baselines outside a stackbench checkout creates no results directory.
/// A verdict must not fail because it could not be kept: callers print the error as a
/// warning and go on.
pub fn keep_comparison_verdict(
    store: &RunStore,
    kind: &str,
    base: (&str, &RunRecord),
    cand: (&str, &RunRecord),
    verdict: &StoredVerdict,
) -> Result<(), ResultsError> {
    if store.is_absent() {
        return Ok(());
    }
    let record = comparison_record(store, kind, base, cand, verdict)?;
    store.record_comparison(&record)?;
    Ok(())
}
