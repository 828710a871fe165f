//! The questions the store answers without loading whole runs (the list of runs, one
//! benchmark's history from the indexed median column, comparisons, acknowledgements) and
//! its cleanup: once, on any [`Sql`] connection, so both engines give the same rows in the
//! same order.

use super::DbError;
use super::model::{
    Acknowledgement, ComparisonRecord, HistoryPoint, MedianSeries, PruneOutcome, StoredRun,
};
use super::sql::{Columns, Engine, Finish, Sql, params};
use super::statements::*;
use std::collections::HashMap;

fn stored_run<R: Columns + ?Sized>(row: &R) -> Result<StoredRun, R::Error> {
    Ok(StoredRun {
        run_id: row.get(0)?,
        timestamp: row.get(1)?,
        created_unix_ms: row.unsigned(2)?,
        label: row.get(3)?,
        git_revision: row.get(4)?,
        git_dirty: row.get(5)?,
        fingerprint: row.get(6)?,
        benchmarks: row.unsigned(7)?,
        failed: row.unsigned(8)?,
        skipped: row.unsigned(9)?,
        unreadable: row.unsigned(10)?,
    })
}

fn comparison<R: Columns + ?Sized>(row: &R) -> Result<ComparisonRecord, R::Error> {
    Ok(ComparisonRecord {
        id: row.get(0)?,
        created_unix_ms: row.unsigned(1)?,
        kind: row.get(2)?,
        baseline: row.get(3)?,
        baseline_run_id: row.get(4)?,
        candidate: row.get(5)?,
        candidate_run_id: row.get(6)?,
        fingerprint: row.get(7)?,
        threshold_percent: row.get(8)?,
        verdict: row.get(9)?,
        degraded: row.unsigned(10)?,
        improved: row.unsigned(11)?,
        unchanged: row.unsigned(12)?,
        inconclusive: row.unsigned(13)?,
        detail_json: row.get(14)?,
    })
}

/// Every run, newest first, without loading benchmarks.
pub(super) fn list_runs(c: &mut impl Sql) -> Result<Vec<StoredRun>, DbError> {
    c.collect("listing runs", &LIST_RUNS, &[], |row| stored_run(row))
}

/// Every run, oldest first, and per benchmark id its medians as (index into those runs,
/// median ns) in run order: what the history report is computed from. It reads the runs
/// table and the covering `benchmarks_by_id` index only, never a sample, and borrows each
/// id from its row, so 1,000 runs of 1,000 benchmarks come back in about a second.
pub(super) fn medians(c: &mut impl Sql) -> Result<(Vec<StoredRun>, MedianSeries), DbError> {
    let context = "reading the benchmark medians";
    let runs: Vec<(i64, StoredRun)> = c.collect(context, &RUNS_WITH_KEYS, &[], |row| {
        Ok((row.get(11)?, stored_run(row)?))
    })?;
    let index_of: HashMap<i64, usize> = runs
        .iter()
        .enumerate()
        .map(|(index, (pk, _))| (*pk, index))
        .collect();
    let mut series: MedianSeries = Vec::new();
    c.for_each(context, &MEDIANS, &[], |row| {
        let id = row.str(0)?;
        let run_pk: i64 = row.get(1)?;
        let median_ns: f64 = row.get(2)?;
        let Some(&index) = index_of.get(&run_pk) else {
            return Ok(());
        };
        match series.last_mut() {
            Some((last, points)) if last == id => points.push((index, median_ns)),
            _ => series.push((id.to_string(), vec![(index, median_ns)])),
        }
        Ok(())
    })?;
    for (_, points) in &mut series {
        points.sort_by_key(|&(index, _)| index);
    }
    Ok((runs.into_iter().map(|(_, run)| run).collect(), series))
}

/// Every measured value of `bench_id`, oldest first (the `benchmarks_by_id` index makes
/// this one index range, whatever the size of the store).
pub(super) fn history(c: &mut impl Sql, bench_id: &str) -> Result<Vec<HistoryPoint>, DbError> {
    c.collect(
        "reading a benchmark's history",
        &HISTORY,
        &params![bench_id],
        |row| {
            Ok(HistoryPoint {
                run_id: row.get(0)?,
                timestamp: row.get(1)?,
                created_unix_ms: row.unsigned(2)?,
                label: row.get(3)?,
                git_revision: row.get(4)?,
                fingerprint: row.get(5)?,
                median_ns: row.get(6)?,
                min_ns: row.get(7)?,
                samples: row.unsigned(8)?,
            })
        },
    )
}

/// The failures runs recorded for `bench_id` (from each run's header, without loading a
/// sample), oldest run first, as (run id, error). A benchmark whose samples the store
/// refused has no row in `benchmarks`: this is where its history's evidence lives.
pub(super) fn recorded_failures(
    c: &mut impl Sql,
    bench_id: &str,
) -> Result<Vec<(String, String)>, DbError> {
    c.collect(
        "reading a benchmark's recorded failures",
        &RECORDED_FAILURES,
        &params![bench_id],
        |row| {
            Ok((
                row.get(0)?,
                row.get::<Option<String>>(1)?.unwrap_or_default(),
            ))
        },
    )
}

/// Benchmark ids that contain `fragment`, for "did you mean" messages.
pub(super) fn similar_benchmark_ids(
    c: &mut impl Sql,
    fragment: &str,
) -> Result<Vec<String>, DbError> {
    c.collect(
        "searching benchmark ids",
        &SIMILAR_BENCHMARK_IDS,
        &params![fragment],
        |row| row.get(0),
    )
}

/// Stores a comparison; its id in the store.
pub(super) fn record_comparison(c: &mut impl Sql, r: &ComparisonRecord) -> Result<i64, DbError> {
    let id = c.first(
        "recording a comparison",
        &INSERT_COMPARISON,
        &params![
            r.created_unix_ms as i64,
            &r.kind,
            &r.baseline,
            &r.baseline_run_id,
            &r.candidate,
            &r.candidate_run_id,
            &r.fingerprint,
            r.threshold_percent,
            &r.verdict,
            r.degraded as i64,
            r.improved as i64,
            r.unchanged as i64,
            r.inconclusive as i64,
            &r.detail_json,
        ],
        |row| row.get::<i64>(0),
    )?;
    Ok(id.unwrap_or_default())
}

/// Stored comparisons, newest first.
pub(super) fn comparisons(c: &mut impl Sql) -> Result<Vec<ComparisonRecord>, DbError> {
    c.collect("listing comparisons", &COMPARISONS, &[], |row| {
        comparison(row)
    })
}

pub(super) fn acknowledge(c: &mut impl Sql, a: &Acknowledgement) -> Result<(), DbError> {
    c.execute(
        "recording an acknowledgement",
        &INSERT_ACKNOWLEDGEMENT,
        &params![
            &a.bench_id,
            &a.run_id,
            &a.reason,
            &a.who,
            a.created_unix_ms as i64
        ],
    )?;
    Ok(())
}

/// Every acknowledgement, oldest first.
pub(super) fn acknowledgements(c: &mut impl Sql) -> Result<Vec<Acknowledgement>, DbError> {
    c.collect("listing acknowledgements", &ACKNOWLEDGEMENTS, &[], |row| {
        Ok(Acknowledgement {
            bench_id: row.get(0)?,
            run_id: row.get(1)?,
            reason: row.get(2)?,
            who: row.get(3)?,
            created_unix_ms: row.unsigned(4)?,
        })
    })
}

/// Removes comparisons older than `cutoff_unix_ms`, then every run older than it that is
/// not among the `keep_latest` newest of its hardware and that no remaining comparison
/// and no acknowledgement refers to. One transaction, with writers kept out: all of it or
/// none, and a dry run rolls back what it did.
pub(super) fn prune(
    engine: &impl Engine,
    cutoff_unix_ms: u64,
    keep_latest: usize,
    dry_run: bool,
) -> Result<PruneOutcome, DbError> {
    engine.write("pruning", |c| {
        prune_in(c, cutoff_unix_ms, keep_latest).map(|outcome| {
            if dry_run {
                Finish::RollBack(outcome)
            } else {
                Finish::Commit(outcome)
            }
        })
    })
}

fn prune_in<C: Sql>(
    c: &mut C,
    cutoff_unix_ms: u64,
    keep_latest: usize,
) -> Result<PruneOutcome, DbError> {
    c.batch("pruning: locking", PRUNE_LOCK.text(C::DIALECT))?;
    let cutoff = cutoff_unix_ms as i64;
    let removed_comparisons = c.execute(
        "pruning: removing old comparisons",
        &DELETE_OLD_COMPARISONS,
        &params![cutoff],
    )?;
    let candidates: Vec<(String, bool)> = c.collect(
        "pruning: selecting runs",
        &PRUNE_CANDIDATES,
        &params![cutoff, keep_latest as i64],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    let mut outcome = PruneOutcome {
        removed_comparisons,
        ..PruneOutcome::default()
    };
    for (run_id, referenced) in candidates {
        if referenced {
            outcome.protected_runs.push(run_id);
        } else {
            c.execute(
                &format!("pruning: removing run {run_id}"),
                &DELETE_RUN,
                &params![&run_id],
            )?;
            outcome.removed_runs.push(run_id);
        }
    }
    // Counted inside the transaction: on a dry run, what would remain.
    outcome.kept_runs = c
        .first("pruning: counting runs", &COUNT_RUNS, &[], |row| {
            row.unsigned(0)
        })?
        .unwrap_or_default();
    Ok(outcome)
}
