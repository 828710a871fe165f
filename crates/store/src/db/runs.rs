//! Writing and reading whole runs, once for both engines. A run goes in as one transaction
//! (its row, every benchmark, every sample blob), so a reader or a crash sees all of it or
//! none, and the run id is unique, so a retried or concurrent duplicate is one run.

use super::codec::{BenchmarkRow, benchmark_from_row, benchmark_row, run_json};
use super::sql::{Columns, Engine, Finish, Sql, params};
use super::statements::*;
use super::{DbError, Inserted, RunOrder, content_sha256, pause_before_commit_for_tests};
use crate::run::RunRecord;

/// How often an insert that lost a race with a prune of the same id is tried again: on
/// PostgreSQL the id can be taken and gone again before it is read; SQLite's immediate
/// transaction excludes that, so there the first attempt always decides.
const ATTEMPTS: usize = 3;

/// Stores `run` unless a run with its id is already there (then nothing changes; a
/// different fingerprint under the same id is a conflict, not a duplicate).
pub(super) fn insert_run(engine: &impl Engine, run: &RunRecord) -> Result<Inserted, DbError> {
    // Benchmarks whose samples cannot be used are stored as failures, never as rows with
    // a median: every reader of the store then sees the same run.
    let run = run.with_unusable_failed();
    let run = run.as_ref();
    let encode = |e: serde_json::Error| DbError::Unreadable {
        store: engine.store(),
        run_id: run.run_id.clone(),
        reason: format!("cannot encode: {e}"),
    };
    let rows = run
        .benchmarks
        .iter()
        .map(benchmark_row)
        .collect::<Result<Vec<_>, _>>()
        .map_err(encode)?;
    let header = run_json(run).map_err(encode)?;
    for _ in 0..ATTEMPTS {
        let attempt = engine.write(&format!("run {}", run.run_id), |c| {
            Ok(match try_insert(c, run, &rows, &header)? {
                Some(Inserted::New) => Finish::Commit(Some(Inserted::New)),
                other => Finish::RollBack(other),
            })
        })?;
        if let Some(inserted) = attempt {
            return Ok(inserted);
        }
    }
    Err(DbError::Unreadable {
        store: engine.store(),
        run_id: run.run_id.clone(),
        reason: "its id kept appearing and disappearing under concurrent writers".into(),
    })
}

/// One attempt inside the caller's transaction; `None` when the id was taken and then
/// removed before it could be read.
fn try_insert<C: Sql>(
    c: &mut C,
    run: &RunRecord,
    rows: &[BenchmarkRow],
    header: &str,
) -> Result<Option<Inserted>, DbError> {
    let context = |what: &str| format!("run {}: {what}", run.run_id);
    let count = |outcome: &str| {
        rows.iter()
            .filter(|r| r.outcome.as_deref() == Some(outcome))
            .count() as i64
    };
    let run_pk = c.first(
        &context("inserting the run"),
        &INSERT_RUN,
        &params![
            &run.run_id,
            run.created_unix_ms as i64,
            &run.timestamp,
            &run.label,
            &run.git_revision,
            run.git_dirty,
            &run.fingerprint,
            &run.schema,
            rows.len() as i64,
            count("failed"),
            count("skipped"),
            run.skipped.len() as i64,
            crate::now_unix_ms() as i64,
            header,
            &content_sha256(run),
        ],
        |row| row.get::<i64>(0),
    )?;
    let Some(run_pk) = run_pk else {
        // Another writer holds (or held) this id: the same run, or a conflict.
        return existing(c, run);
    };
    for (b, row) in run.benchmarks.iter().zip(rows) {
        insert_benchmark(
            c,
            run_pk,
            &context(&format!("inserting benchmark {}", b.id)),
            b.id.as_str(),
            row,
        )?;
    }
    pause_before_commit_for_tests(&run.run_id);
    Ok(Some(Inserted::New))
}

/// One benchmark row and its samples.
fn insert_benchmark<C: Sql>(
    c: &mut C,
    run_pk: i64,
    context: &str,
    bench_id: &str,
    row: &BenchmarkRow,
) -> Result<(), DbError> {
    let count = row.sample_count as i64;
    let columns = params![
        run_pk,
        bench_id,
        row.median_ns,
        row.min_ns,
        count,
        row.throughput_kind,
        row.throughput_elements.map(|v| v as i64),
        row.throughput_bytes.map(|v| v as i64),
        &row.outcome,
        &row.error,
        &row.record_json,
    ];
    if C::DIALECT.chains_inserts() {
        let mut with_samples = columns.to_vec();
        with_samples.extend(params![&row.iters, &row.times]);
        c.execute(context, &INSERT_BENCHMARK_WITH_SAMPLES, &with_samples)?;
        return Ok(());
    }
    // `RETURNING` always gives the inserted row; were it missing, key 0 would fail the
    // samples' foreign key, an error rather than samples under a wrong benchmark.
    let bench_pk = c
        .first(context, &INSERT_BENCHMARK, &columns, |r| r.get::<i64>(0))?
        .unwrap_or_default();
    c.execute(
        context,
        &INSERT_SAMPLES,
        &params![bench_pk, count, &row.iters, &row.times],
    )?;
    Ok(())
}

/// The run already stored under `run`'s id: the same run, or a conflict.
fn existing(c: &mut impl Sql, run: &RunRecord) -> Result<Option<Inserted>, DbError> {
    let stored: Option<Option<String>> = c.first(
        &format!("run {}: looking up the id", run.run_id),
        &RUN_FINGERPRINT,
        &params![&run.run_id],
        |row| row.get(0),
    )?;
    let Some(stored) = stored else {
        return Ok(None);
    };
    if stored == run.fingerprint {
        return Ok(Some(Inserted::AlreadyPresent));
    }
    Err(DbError::Conflict {
        store: c.store(),
        run_id: run.run_id.clone(),
        stored: stored.unwrap_or_else(|| "none".into()),
        incoming: run.fingerprint.clone().unwrap_or_else(|| "none".into()),
    })
}

/// Run ids in time order (oldest first), each with its fingerprint.
pub(super) fn run_ids(c: &mut impl Sql) -> Result<RunOrder, DbError> {
    c.collect("listing runs", &RUN_IDS, &[], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })
}

/// Every run's stored checksum, oldest first.
pub(super) fn stored_checksums(c: &mut impl Sql) -> Result<Vec<(String, Option<String>)>, DbError> {
    c.collect("listing checksums", &CHECKSUMS, &[], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })
}

/// Whether a run with this id is stored.
pub(super) fn has_run(c: &mut impl Sql, run_id: &str) -> Result<bool, DbError> {
    let found = c.first(
        &format!("looking up run {run_id}"),
        &HAS_RUN,
        &params![run_id],
        |_| Ok(()),
    )?;
    Ok(found.is_some())
}

/// Every run, oldest first, over one connection; unreadable runs come back as errors
/// beside the others.
pub(super) fn load_all(c: &mut impl Sql) -> Result<Vec<Result<RunRecord, DbError>>, DbError> {
    let ids = run_ids(c)?;
    Ok(ids
        .into_iter()
        .filter_map(|(id, _)| load_run(c, &id).transpose())
        .collect())
}

/// One whole run by id (its header, then its benchmarks with their samples), or `None`
/// when the store has no such run.
pub(super) fn load_run(c: &mut impl Sql, run_id: &str) -> Result<Option<RunRecord>, DbError> {
    let header = c.first(
        &format!("reading run {run_id}"),
        &RUN_HEADER,
        &params![run_id],
        |row| Ok((row.get::<i64>(0)?, row.get::<String>(1)?)),
    )?;
    let Some((pk, json)) = header else {
        return Ok(None);
    };
    let store = c.store();
    let unreadable = |reason: String| DbError::Unreadable {
        store: store.clone(),
        run_id: run_id.to_string(),
        reason,
    };
    let mut run: RunRecord =
        serde_json::from_str(&json).map_err(|e| unreadable(format!("run JSON: {e}")))?;
    // Decoded straight from the row's borrowed blobs; the first bad benchmark is the one
    // reported, the rest are not decoded.
    let mut bad = None;
    c.for_each(
        &format!("reading benchmarks of {run_id}"),
        &RUN_BENCHMARKS,
        &params![pk],
        |row| {
            if bad.is_none() {
                match benchmark_from_row(row.str(0)?, row.bytes(1)?, row.bytes(2)?) {
                    Ok(b) => run.benchmarks.push(b),
                    Err(reason) => bad = Some(reason),
                }
            }
            Ok(())
        },
    )?;
    if let Some(reason) = bad {
        return Err(unreadable(reason));
    }
    // Byte order of ids, as `RunRecord::benchmark` searches.
    run.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
    // A run stored by an older version may hold samples no statistic can use: they leave
    // the store as failures, never as numbers.
    run.fail_unusable();
    Ok(Some(run))
}

/// Fills `content_sha256` of runs written without it (by version 1), inside the caller's
/// migration transaction.
pub(super) fn backfill_checksums(c: &mut impl Sql) -> Result<(), DbError> {
    let missing: Vec<String> = c.collect(
        "listing runs without a checksum",
        &RUNS_WITHOUT_CHECKSUM,
        &[],
        |row| row.get(0),
    )?;
    for run_id in missing {
        if let Some(run) = load_run(c, &run_id)? {
            c.execute(
                &format!("run {run_id}: writing its checksum"),
                &SET_CHECKSUM,
                &params![&content_sha256(&run), &run_id],
            )?;
        }
    }
    Ok(())
}
