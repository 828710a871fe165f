//! `analyze-trends comparisons`: past `compare` and gate verdicts, newest first.

use super::store::{ListArgs, emit};
use crate::analysis::Outcome;
use crate::report::rows::Rows;
use crate::results::format_rfc3339_ms;
use serde::Serialize;

/// One row of `analyze-trends comparisons`.
#[derive(Serialize)]
struct ComparisonRow<'a> {
    id: i64,
    time: String,
    kind: &'a str,
    baseline: &'a str,
    candidate: &'a str,
    verdict: &'a str,
    degraded: u64,
    improved: u64,
    unchanged: u64,
    inconclusive: u64,
    threshold_percent: f64,
    hardware: Option<&'a str>,
}

pub fn comparisons(args: ListArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let store = chosen.existing(&args.results)?;
    let stored = store.comparisons()?;
    let rows: Vec<ComparisonRow> = stored
        .iter()
        .map(|c| ComparisonRow {
            id: c.id,
            time: format_rfc3339_ms(c.created_unix_ms),
            kind: &c.kind,
            baseline: c.baseline_run_id.as_deref().unwrap_or(&c.baseline),
            candidate: c.candidate_run_id.as_deref().unwrap_or(&c.candidate),
            verdict: &c.verdict,
            degraded: c.degraded,
            improved: c.improved,
            unchanged: c.unchanged,
            inconclusive: c.inconclusive,
            threshold_percent: c.threshold_percent,
            hardware: c.fingerprint.as_deref(),
        })
        .collect();
    emit(
        &Rows::listing("analyze-trends comparisons", &rows),
        args.format,
    )?;
    Ok(Outcome::Clean)
}
