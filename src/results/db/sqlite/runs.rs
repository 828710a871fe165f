//! Writing and reading whole runs. A run goes in as one immediate transaction (its row,
//! every benchmark, every sample blob), so a reader or a crash sees all of it or none.

use super::SqliteDb;
use crate::results::db::codec::{benchmark_from_row, benchmark_row, run_json};
use crate::results::db::{
    DbError, Inserted, RunOrder, content_sha256, pause_before_commit_for_tests,
};
use crate::results::run::RunRecord;
use rusqlite::{OptionalExtension, TransactionBehavior, params};

const INSERT_RUN: &str = "INSERT INTO runs (run_id, created_unix_ms, timestamp, label,
    git_revision, git_dirty, fingerprint, schema, benchmark_count, failed_count, skipped_count,
    unreadable_count, stored_unix_ms, run_json, content_sha256)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

const INSERT_BENCHMARK: &str = "INSERT INTO benchmarks (run_pk, bench_id, median_ns, min_ns,
    sample_count, throughput_kind, throughput_elements, throughput_bytes, outcome, error,
    record_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

impl SqliteDb {
    /// Stores `run` unless a run with its id is already there (then nothing changes; a
    /// different fingerprint under the same id is a conflict, not a duplicate).
    pub(in crate::results::db) fn insert_run(
        &mut self,
        run: &RunRecord,
    ) -> Result<Inserted, DbError> {
        // Benchmarks whose samples cannot be used are stored as failures, never as rows
        // with a median: every reader of the store then sees the same run.
        let run = run.with_unusable_failed();
        let run = run.as_ref();
        let path = self.path.clone();
        let sql = |context: &str, source| DbError::Sql {
            path: path.clone(),
            context: format!("run {}: {context}", run.run_id),
            source,
        };
        let encode = |e: serde_json::Error| DbError::Unreadable {
            store: format!("sqlite:{}", path.display()),
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
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sql("starting the transaction", e))?;
        let stored: Option<Option<String>> = tx
            .query_row(
                "SELECT fingerprint FROM runs WHERE run_id = ?1",
                [&run.run_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| sql("looking up the id", e))?;
        if let Some(stored) = stored {
            if stored == run.fingerprint {
                return Ok(Inserted::AlreadyPresent);
            }
            return Err(DbError::Conflict {
                store: format!("sqlite:{}", path.display()),
                run_id: run.run_id.clone(),
                stored: stored.unwrap_or_else(|| "none".into()),
                incoming: run.fingerprint.clone().unwrap_or_else(|| "none".into()),
            });
        }
        let count = |outcome: &str| {
            rows.iter()
                .filter(|r| r.outcome.as_deref() == Some(outcome))
                .count() as i64
        };
        tx.execute(
            INSERT_RUN,
            params![
                run.run_id,
                run.created_unix_ms as i64,
                run.timestamp,
                run.label,
                run.git_revision,
                run.git_dirty,
                run.fingerprint,
                run.schema,
                rows.len() as i64,
                count("failed"),
                count("skipped"),
                run.skipped.len() as i64,
                crate::results::now_unix_ms() as i64,
                header,
                content_sha256(run),
            ],
        )
        .map_err(|e| sql("inserting the run", e))?;
        let run_pk = tx.last_insert_rowid();
        {
            let mut bench = tx
                .prepare_cached(INSERT_BENCHMARK)
                .map_err(|e| sql("preparing", e))?;
            let mut samples = tx
                .prepare_cached(
                    "INSERT INTO samples (benchmark_pk, count, iters, times) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|e| sql("preparing", e))?;
            for (b, row) in run.benchmarks.iter().zip(&rows) {
                let bench_pk = bench
                    .insert(params![
                        run_pk,
                        b.id,
                        row.median_ns,
                        row.min_ns,
                        row.sample_count as i64,
                        row.throughput_kind,
                        row.throughput_elements.map(|v| v as i64),
                        row.throughput_bytes.map(|v| v as i64),
                        row.outcome,
                        row.error,
                        row.record_json,
                    ])
                    .map_err(|e| sql(&format!("inserting benchmark {}", b.id), e))?;
                samples
                    .execute(params![
                        bench_pk,
                        row.sample_count as i64,
                        row.iters,
                        row.times
                    ])
                    .map_err(|e| sql(&format!("inserting samples of {}", b.id), e))?;
            }
        }
        pause_before_commit_for_tests(&run.run_id);
        tx.commit().map_err(|e| sql("committing", e))?;
        Ok(Inserted::New)
    }

    /// Run ids in time order (oldest first), each with its fingerprint.
    pub(in crate::results::db) fn run_ids(&self) -> Result<RunOrder, DbError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT run_id, fingerprint FROM runs ORDER BY created_unix_ms, run_id")
            .map_err(|e| self.sql("listing runs", e))?;
        let rows = stmt
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.sql("listing runs", e))?;
        Ok(rows)
    }

    /// Every run's stored checksum, oldest first.
    pub(in crate::results::db) fn stored_checksums(
        &self,
    ) -> Result<Vec<(String, Option<String>)>, DbError> {
        self.collect(
            "listing checksums",
            "SELECT run_id, content_sha256 FROM runs ORDER BY created_unix_ms, run_id",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
    }

    /// Whether a run with this id is stored.
    pub(in crate::results::db) fn has_run(&self, run_id: &str) -> Result<bool, DbError> {
        self.conn
            .query_row("SELECT 1 FROM runs WHERE run_id = ?1", [run_id], |_| Ok(()))
            .optional()
            .map(|found| found.is_some())
            .map_err(|e| self.sql(&format!("looking up run {run_id}"), e))
    }

    /// One whole run by id, or `None` when the store has no such run.
    pub(in crate::results::db) fn load_run(
        &self,
        run_id: &str,
    ) -> Result<Option<RunRecord>, DbError> {
        let row: Option<(i64, String)> = self
            .conn
            .query_row(
                "SELECT pk, run_json FROM runs WHERE run_id = ?1",
                [run_id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(&format!("reading run {run_id}"), e))?;
        row.map(|(pk, json)| self.assemble(run_id, pk, &json))
            .transpose()
    }

    /// Every run, oldest first. Runs are rebuilt on all cores, each thread with its own
    /// connection (WAL readers do not block each other); unreadable runs come back as
    /// errors beside the others.
    pub(in crate::results::db) fn load_all(
        &self,
    ) -> Result<Vec<Result<RunRecord, DbError>>, DbError> {
        let ids: Vec<String> = self.run_ids()?.into_iter().map(|(id, _)| id).collect();
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 16);
        let path = self.path.clone();
        let load_chunk = |chunk: &[String]| -> Vec<Result<RunRecord, DbError>> {
            let db = match SqliteDb::open(&path, false) {
                Ok(db) => db,
                Err(e) => return vec![Err(e)],
            };
            chunk
                .iter()
                .filter_map(|id| db.load_run(id).transpose())
                .collect()
        };
        // One chunk per thread (not `parallel_map`, which parallelises only long lists):
        // each thread pays for one connection, then streams its runs.
        let per_chunk: Vec<Vec<Result<RunRecord, DbError>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = ids
                .chunks(ids.len().div_ceil(threads).max(1))
                .map(|chunk| scope.spawn(|| load_chunk(chunk)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        Ok(per_chunk.into_iter().flatten().collect())
    }

    fn assemble(&self, run_id: &str, pk: i64, run_json: &str) -> Result<RunRecord, DbError> {
        let unreadable = |reason: String| DbError::Unreadable {
            store: self.store(),
            run_id: run_id.to_string(),
            reason,
        };
        let mut run: RunRecord =
            serde_json::from_str(run_json).map_err(|e| unreadable(format!("run JSON: {e}")))?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT b.record_json, s.iters, s.times FROM benchmarks b
                 LEFT JOIN samples s ON s.benchmark_pk = b.pk
                 WHERE b.run_pk = ?1 ORDER BY b.bench_id",
            )
            .map_err(|e| self.sql("reading benchmarks", e))?;
        let mut rows = stmt
            .query([pk])
            .map_err(|e| self.sql(&format!("reading benchmarks of {run_id}"), e))?;
        while let Some(row) = rows
            .next()
            .map_err(|e| self.sql(&format!("reading benchmarks of {run_id}"), e))?
        {
            let read = |e| self.sql(&format!("reading benchmarks of {run_id}"), e);
            let json: String = row.get(0).map_err(read)?;
            let iters: Option<Vec<u8>> = row.get(1).map_err(read)?;
            let times: Option<Vec<u8>> = row.get(2).map_err(read)?;
            run.benchmarks.push(
                benchmark_from_row(&json, iters.as_deref(), times.as_deref())
                    .map_err(unreadable)?,
            );
        }
        // Byte order of ids, as `load_run` sorts and `RunRecord::benchmark` searches.
        run.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
        // A run stored by an older version may hold samples no statistic can use: they
        // leave the store as failures, never as numbers.
        run.fail_unusable();
        Ok(run)
    }
}
