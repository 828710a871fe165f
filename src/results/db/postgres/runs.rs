//! Writing and reading whole runs on PostgreSQL: the same rows as SQLite (run header JSON,
//! one row per benchmark, sample blobs as BYTEA), one transaction per run.

use super::PgDb;
use crate::results::db::codec::{BenchmarkRow, benchmark_from_row, benchmark_row, run_json};
use crate::results::db::{
    DbError, Inserted, RunOrder, content_sha256, pause_before_commit_for_tests,
};
use crate::results::run::RunRecord;
use ::postgres::types::ToSql;
use ::postgres::{GenericClient, Transaction};

const INSERT_RUN: &str = "INSERT INTO runs (run_id, created_unix_ms, timestamp, label,
    git_revision, git_dirty, fingerprint, schema, benchmark_count, failed_count, skipped_count,
    unreadable_count, stored_unix_ms, run_json, content_sha256)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
    ON CONFLICT (run_id) DO NOTHING RETURNING pk";

/// A benchmark and its samples in one round trip.
const INSERT_BENCHMARK: &str = "WITH b AS (
        INSERT INTO benchmarks (run_pk, bench_id, median_ns, min_ns, sample_count,
            throughput_kind, throughput_elements, throughput_bytes, outcome, error, record_json)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING pk)
    INSERT INTO samples (benchmark_pk, count, iters, times) SELECT pk, $5, $12::bytea, $13::bytea FROM b";

/// How often an insert that lost a race with a prune of the same id is tried again.
const ATTEMPTS: usize = 3;

impl PgDb {
    pub(in crate::results::db) fn insert_run(
        &mut self,
        run: &RunRecord,
    ) -> Result<Inserted, DbError> {
        // Benchmarks whose samples cannot be used are stored as failures, never as rows
        // with a median: every reader of the store then sees the same run.
        let run = run.with_unusable_failed();
        let run = run.as_ref();
        let encode = |e: serde_json::Error| DbError::Unreadable {
            store: self.store.clone(),
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
            if let Some(inserted) = self.try_insert(run, &rows, &header)? {
                return Ok(inserted);
            }
        }
        Err(DbError::Unreadable {
            store: self.store.clone(),
            run_id: run.run_id.clone(),
            reason: "its id kept appearing and disappearing under concurrent writers".into(),
        })
    }

    /// One attempt; `None` when the id was taken and then removed before it could be read.
    fn try_insert(
        &self,
        run: &RunRecord,
        rows: &[BenchmarkRow],
        header: &str,
    ) -> Result<Option<Inserted>, DbError> {
        let sql =
            |context: &str, source| self.pg(&format!("run {}: {context}", run.run_id), source);
        let mut client = self.client();
        let mut tx = client
            .transaction()
            .map_err(|e| sql("starting the transaction", e))?;
        let count = |outcome: &str| {
            rows.iter()
                .filter(|r| r.outcome.as_deref() == Some(outcome))
                .count() as i64
        };
        let params: [&(dyn ToSql + Sync); 15] = [
            &run.run_id,
            &(run.created_unix_ms as i64),
            &run.timestamp,
            &run.label,
            &run.git_revision,
            &run.git_dirty,
            &run.fingerprint,
            &run.schema,
            &(rows.len() as i64),
            &count("failed"),
            &count("skipped"),
            &(run.skipped.len() as i64),
            &(crate::results::now_unix_ms() as i64),
            &header,
            &content_sha256(run),
        ];
        let inserted = tx
            .query_opt(INSERT_RUN, &params)
            .map_err(|e| sql("inserting the run", e))?;
        let Some(inserted) = inserted else {
            // Another writer holds (or held) this id: same run, or a conflict.
            return self.existing(&mut tx, run);
        };
        let run_pk: i64 = inserted
            .try_get(0)
            .map_err(|e| sql("inserting the run", e))?;
        let statement = tx
            .prepare(INSERT_BENCHMARK)
            .map_err(|e| sql("preparing", e))?;
        for (b, row) in run.benchmarks.iter().zip(rows) {
            tx.execute(
                &statement,
                &[
                    &run_pk,
                    &b.id,
                    &row.median_ns,
                    &row.min_ns,
                    &(row.sample_count as i64),
                    &row.throughput_kind,
                    &row.throughput_elements.map(|v| v as i64),
                    &row.throughput_bytes.map(|v| v as i64),
                    &row.outcome,
                    &row.error,
                    &row.record_json,
                    &row.iters,
                    &row.times,
                ],
            )
            .map_err(|e| sql(&format!("inserting benchmark {}", b.id), e))?;
        }
        pause_before_commit_for_tests(&run.run_id);
        tx.commit().map_err(|e| sql("committing", e))?;
        Ok(Some(Inserted::New))
    }

    fn existing(
        &self,
        tx: &mut Transaction<'_>,
        run: &RunRecord,
    ) -> Result<Option<Inserted>, DbError> {
        let sql = |source| self.pg(&format!("run {}: looking up the id", run.run_id), source);
        let row = tx
            .query_opt(
                "SELECT fingerprint FROM runs WHERE run_id = $1",
                &[&run.run_id],
            )
            .map_err(sql)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let stored: Option<String> = row.try_get(0).map_err(sql)?;
        if stored == run.fingerprint {
            return Ok(Some(Inserted::AlreadyPresent));
        }
        Err(DbError::Conflict {
            store: self.store.clone(),
            run_id: run.run_id.clone(),
            stored: stored.unwrap_or_else(|| "none".into()),
            incoming: run.fingerprint.clone().unwrap_or_else(|| "none".into()),
        })
    }

    /// Run ids in time order (oldest first), each with its fingerprint.
    pub(in crate::results::db) fn run_ids(&self) -> Result<RunOrder, DbError> {
        self.collect(
            "listing runs",
            "SELECT run_id, fingerprint FROM runs ORDER BY created_unix_ms, run_id",
            &[],
            |row| Ok((row.try_get(0)?, row.try_get(1)?)),
        )
    }

    /// Every run's stored checksum, oldest first.
    pub(in crate::results::db) fn stored_checksums(
        &self,
    ) -> Result<Vec<(String, Option<String>)>, DbError> {
        self.collect(
            "listing checksums",
            "SELECT run_id, content_sha256 FROM runs ORDER BY created_unix_ms, run_id",
            &[],
            |row| Ok((row.try_get(0)?, row.try_get(1)?)),
        )
    }

    pub(in crate::results::db) fn has_run(&self, run_id: &str) -> Result<bool, DbError> {
        Ok(!self
            .collect(
                &format!("looking up run {run_id}"),
                "SELECT 1 FROM runs WHERE run_id = $1",
                &[&run_id],
                |_| Ok(()),
            )?
            .is_empty())
    }

    pub(in crate::results::db) fn load_run(
        &self,
        run_id: &str,
    ) -> Result<Option<RunRecord>, DbError> {
        load_run(&mut *self.client(), &self.store, run_id)
    }

    /// Every run, oldest first, over this one connection.
    pub(in crate::results::db) fn load_all(
        &self,
    ) -> Result<Vec<Result<RunRecord, DbError>>, DbError> {
        let ids = self.run_ids()?;
        let mut client = self.client();
        Ok(ids
            .into_iter()
            .filter_map(|(id, _)| load_run(&mut *client, &self.store, &id).transpose())
            .collect())
    }
}

/// One whole run by id (its header, then its benchmarks with their samples).
fn load_run(
    client: &mut impl GenericClient,
    store: &str,
    run_id: &str,
) -> Result<Option<RunRecord>, DbError> {
    let sql = |source| DbError::Postgres {
        store: store.to_string(),
        context: format!("reading run {run_id}"),
        source,
    };
    let unreadable = |reason: String| DbError::Unreadable {
        store: store.to_string(),
        run_id: run_id.to_string(),
        reason,
    };
    let Some(row) = client
        .query_opt(
            "SELECT pk, run_json FROM runs WHERE run_id = $1",
            &[&run_id],
        )
        .map_err(sql)?
    else {
        return Ok(None);
    };
    let pk: i64 = row.try_get(0).map_err(sql)?;
    let json: String = row.try_get(1).map_err(sql)?;
    let mut run: RunRecord =
        serde_json::from_str(&json).map_err(|e| unreadable(format!("run JSON: {e}")))?;
    let rows = client
        .query(
            "SELECT b.record_json, s.iters, s.times FROM benchmarks b
             LEFT JOIN samples s ON s.benchmark_pk = b.pk
             WHERE b.run_pk = $1 ORDER BY b.bench_id",
            &[&pk],
        )
        .map_err(sql)?;
    for row in rows {
        let json: String = row.try_get(0).map_err(sql)?;
        let iters: Option<Vec<u8>> = row.try_get(1).map_err(sql)?;
        let times: Option<Vec<u8>> = row.try_get(2).map_err(sql)?;
        run.benchmarks.push(
            benchmark_from_row(&json, iters.as_deref(), times.as_deref()).map_err(unreadable)?,
        );
    }
    // Byte order of ids, as SQLite and `RunRecord::benchmark` use.
    run.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
    // A run stored by an older version may hold samples no statistic can use.
    run.fail_unusable();
    Ok(Some(run))
}

/// Fills `content_sha256` of runs written without it (by version 1), inside `tx`.
pub(super) fn backfill_checksums(tx: &mut Transaction<'_>, store: &str) -> Result<(), DbError> {
    let sql = |source| DbError::Postgres {
        store: store.to_string(),
        context: "writing run checksums".into(),
        source,
    };
    let missing: Vec<String> = tx
        .query("SELECT run_id FROM runs WHERE content_sha256 IS NULL", &[])
        .map_err(sql)?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()
        .map_err(sql)?;
    for run_id in missing {
        if let Some(run) = load_run(tx, store, &run_id)? {
            tx.execute(
                "UPDATE runs SET content_sha256 = $1 WHERE run_id = $2",
                &[&content_sha256(&run), &run_id],
            )
            .map_err(sql)?;
        }
    }
    Ok(())
}
