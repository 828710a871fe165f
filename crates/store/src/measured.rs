//! What a run may hold: only benchmarks its bench targets say they measured in this run.
//!
//! Criterion leaves every benchmark's `new/` folder in place between runs, so a filtered
//! run, or one in which a benchmark failed, still finds older `new/` data on disk. The
//! harness lists each benchmark's outcome in `targets/<target>.json` with the time the
//! target started; a benchmark is kept only when that list says `measured` and its samples
//! were written after the target started. A failure is kept as a failure, without samples.
//!
//! A benchmark kept by that rule whose samples are unusable (the reader's
//! [`CriterionBenchmark::unusable`]) becomes a failure naming its id and the reason: a
//! verdict must never count it as measured, and no view may show a number for it.

use super::run::FailedBenchmark;
use crate::criterion_output::CriterionBenchmark;
use crate::sidecar::{BenchmarkOutcome, TargetReport};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The benchmarks a run keeps, the failures it records, and a note for what it dropped.
#[derive(Debug, Default)]
pub struct MeasuredOnly {
    pub kept: Vec<CriterionBenchmark>,
    pub failed: Vec<FailedBenchmark>,
    pub notes: Vec<String>,
}

/// Splits `benchmarks` (one baseline read from Criterion's tree) by the target reports.
/// With no target reports (a plain Criterion crate) everything is kept: nothing says
/// otherwise.
pub fn measured_only(
    benchmarks: Vec<CriterionBenchmark>,
    reports: &[TargetReport],
) -> MeasuredOnly {
    let mut out = MeasuredOnly::default();
    if reports.is_empty() {
        for bench in benchmarks {
            keep_if_usable(bench, &mut out);
        }
        return out;
    }
    let outcomes: HashMap<&str, (&BenchmarkOutcome, u64)> = reports
        .iter()
        .flat_map(|r| {
            r.benchmarks
                .iter()
                .map(move |(id, e)| (id.as_str(), (&e.outcome, r.started_unix_s)))
        })
        .collect();
    let (mut stale, mut unlisted) = (0usize, 0usize);
    for bench in benchmarks {
        match outcomes.get(bench.id.as_str()) {
            Some((BenchmarkOutcome::Measured { notes }, started)) => {
                if written_since(&bench, *started) {
                    let mut bench = bench;
                    // Allocation figures live in the harness's notes; their one-line summary
                    // joins the benchmark's notes, which every view lists beside the figure.
                    let per_iteration = bench.samples.per_iteration_ns();
                    let median =
                        (!per_iteration.is_empty()).then(|| crate::stats::median(&per_iteration));
                    if let Some(line) = crate::workload::alloc::summary(notes, median)
                        .filter(|_| bench.id.starts_with("alloc/"))
                    {
                        bench.notes.push(line);
                    }
                    keep_if_usable(bench, &mut out);
                } else {
                    stale += 1;
                }
            }
            // Failed ones are added below from the reports; skipped ones are in the reports.
            Some(_) => {}
            None => unlisted += 1,
        }
    }
    for report in reports {
        for (id, entry) in &report.benchmarks {
            if let BenchmarkOutcome::Failed { error } = &entry.outcome {
                out.failed.push(FailedBenchmark {
                    id: id.clone(),
                    error: error.clone(),
                });
            }
        }
    }
    if stale > 0 {
        out.notes.push(format!(
            "{stale} benchmark(s) left out: their samples predate their target's run (stale data from an earlier run)"
        ));
    }
    if unlisted > 0 {
        out.notes.push(format!(
            "{unlisted} benchmark(s) left out: no target report says this run measured them (left over from an earlier or unfiltered run)"
        ));
    }
    out
}

/// Keeps `bench` as measured, or records it as failed when its samples are unusable.
fn keep_if_usable(bench: CriterionBenchmark, out: &mut MeasuredOnly) {
    match &bench.unusable {
        Some(reason) => out
            .failed
            .push(FailedBenchmark::unusable_samples(bench.id, reason)),
        None => out.kept.push(bench),
    }
}

/// True when the benchmark's samples were written at or after `started_unix_s` (the report
/// keeps whole seconds, so one second of slack; an unreadable time counts as stale).
fn written_since(bench: &CriterionBenchmark, started_unix_s: u64) -> bool {
    let started = UNIX_EPOCH + Duration::from_secs(started_unix_s.saturating_sub(1));
    // A benchmark without a readable sample.json is dated by its benchmark.json, so a
    // missing samples file in this run is a failure, not stale data.
    let modified = |file: &str| std::fs::metadata(bench.path.join(file)).and_then(|m| m.modified());
    modified("sample.json")
        .or_else(|_| modified("benchmark.json"))
        .is_ok_and(|written: SystemTime| written >= started)
}
