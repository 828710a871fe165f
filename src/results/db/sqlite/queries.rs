//! The questions the store answers without loading whole runs: the list of runs, one
//! benchmark's history (from the indexed median column), comparisons, acknowledgements,
//! and cleanup.

use super::SqliteDb;
use crate::results::db::DbError;
use crate::results::db::model::{
    Acknowledgement, ComparisonRecord, HistoryPoint, MedianSeries, PruneOutcome, StoredRun,
};
use rusqlite::{Row, TransactionBehavior, params};

fn stored_run(row: &Row<'_>) -> rusqlite::Result<StoredRun> {
    Ok(StoredRun {
        run_id: row.get(0)?,
        timestamp: row.get(1)?,
        created_unix_ms: row.get::<_, i64>(2)? as u64,
        label: row.get(3)?,
        git_revision: row.get(4)?,
        git_dirty: row.get(5)?,
        fingerprint: row.get(6)?,
        benchmarks: row.get::<_, i64>(7)? as u64,
        failed: row.get::<_, i64>(8)? as u64,
        skipped: row.get::<_, i64>(9)? as u64,
        unreadable: row.get::<_, i64>(10)? as u64,
    })
}

fn comparison(row: &Row<'_>) -> rusqlite::Result<ComparisonRecord> {
    Ok(ComparisonRecord {
        id: row.get(0)?,
        created_unix_ms: row.get::<_, i64>(1)? as u64,
        kind: row.get(2)?,
        baseline: row.get(3)?,
        baseline_run_id: row.get(4)?,
        candidate: row.get(5)?,
        candidate_run_id: row.get(6)?,
        fingerprint: row.get(7)?,
        threshold_percent: row.get(8)?,
        verdict: row.get(9)?,
        degraded: row.get::<_, i64>(10)? as u64,
        improved: row.get::<_, i64>(11)? as u64,
        unchanged: row.get::<_, i64>(12)? as u64,
        inconclusive: row.get::<_, i64>(13)? as u64,
        detail_json: row.get(14)?,
    })
}

impl SqliteDb {
    /// Runs $query with $params and collects every row through $map.
    pub(super) fn collect<T>(
        &self,
        context: &str,
        query: &str,
        params: impl rusqlite::Params,
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, DbError> {
        let mut stmt = self
            .conn
            .prepare_cached(query)
            .map_err(|e| self.sql(context, e))?;
        stmt.query_map(params, map)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.sql(context, e))
    }

    /// Every run, newest first, without loading benchmarks.
    pub(in crate::results::db) fn list_runs(&self) -> Result<Vec<StoredRun>, DbError> {
        self.collect(
            "listing runs",
            "SELECT run_id, timestamp, created_unix_ms, label, git_revision, git_dirty,
                    fingerprint, benchmark_count, failed_count, skipped_count, unreadable_count
             FROM runs ORDER BY created_unix_ms DESC, run_id DESC",
            [],
            stored_run,
        )
    }

    /// Every run, oldest first, and per benchmark id its medians as (index into those
    /// runs, median ns) in run order: what the history report is computed from. It reads
    /// the runs table and the covering `benchmarks_by_id` index only, never a sample, so
    /// 1,000 runs of 1,000 benchmarks come back in about a second.
    pub(in crate::results::db) fn medians(
        &self,
    ) -> Result<(Vec<StoredRun>, MedianSeries), DbError> {
        let context = "reading the benchmark medians";
        let runs: Vec<(i64, StoredRun)> = self.collect(
            context,
            "SELECT run_id, timestamp, created_unix_ms, label, git_revision, git_dirty,
                    fingerprint, benchmark_count, failed_count, skipped_count, unreadable_count, pk
             FROM runs ORDER BY created_unix_ms, run_id",
            [],
            |row| Ok((row.get(11)?, stored_run(row)?)),
        )?;
        let index_of: std::collections::HashMap<i64, usize> = runs
            .iter()
            .enumerate()
            .map(|(index, (pk, _))| (*pk, index))
            .collect();
        // `> 0`, not `IS NOT NULL`: a store written before unusable samples became failures
        // may hold a median of non-positive times, which is no measurement.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT bench_id, run_pk, median_ns FROM benchmarks INDEXED BY benchmarks_by_id
                 WHERE median_ns > 0 ORDER BY bench_id",
            )
            .map_err(|e| self.sql(context, e))?;
        let mut rows = stmt.query([]).map_err(|e| self.sql(context, e))?;
        let mut series: MedianSeries = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.sql(context, e))? {
            let read = |e| self.sql(context, e);
            let id = row.get_ref(0).and_then(|v| Ok(v.as_str()?)).map_err(read)?;
            let run_pk: i64 = row.get(1).map_err(read)?;
            let median_ns: f64 = row.get(2).map_err(read)?;
            let Some(&index) = index_of.get(&run_pk) else {
                continue;
            };
            match series.last_mut() {
                Some((last, points)) if last == id => points.push((index, median_ns)),
                _ => series.push((id.to_string(), vec![(index, median_ns)])),
            }
        }
        for (_, points) in &mut series {
            points.sort_by_key(|&(index, _)| index);
        }
        Ok((runs.into_iter().map(|(_, run)| run).collect(), series))
    }

    /// Every measured value of `bench_id`, oldest first (the `benchmarks_by_id` index
    /// makes this one index range, whatever the size of the store).
    pub(in crate::results::db) fn history(
        &self,
        bench_id: &str,
    ) -> Result<Vec<HistoryPoint>, DbError> {
        self.collect(
            "reading a benchmark's history",
            "SELECT r.run_id, r.timestamp, r.created_unix_ms, r.label, r.git_revision,
                    r.fingerprint, b.median_ns, b.min_ns, b.sample_count
             FROM benchmarks b JOIN runs r ON r.pk = b.run_pk
             WHERE b.bench_id = ?1 AND b.median_ns > 0
             ORDER BY r.created_unix_ms, r.run_id",
            [bench_id],
            |row| {
                Ok(HistoryPoint {
                    run_id: row.get(0)?,
                    timestamp: row.get(1)?,
                    created_unix_ms: row.get::<_, i64>(2)? as u64,
                    label: row.get(3)?,
                    git_revision: row.get(4)?,
                    fingerprint: row.get(5)?,
                    median_ns: row.get(6)?,
                    min_ns: row.get(7)?,
                    samples: row.get::<_, i64>(8)? as u64,
                })
            },
        )
    }

    /// The failures runs recorded for `bench_id` (from each run's header, without loading a
    /// sample), oldest run first, as (run id, error). A benchmark whose samples the store
    /// refused has no row in `benchmarks`: this is where its history's evidence lives.
    pub(in crate::results::db) fn recorded_failures(
        &self,
        bench_id: &str,
    ) -> Result<Vec<(String, String)>, DbError> {
        self.collect(
            "reading a benchmark's recorded failures",
            "SELECT r.run_id, json_extract(f.value, '$.error')
             FROM runs r, json_each(r.run_json, '$.failed') f
             WHERE json_extract(f.value, '$.id') = ?1
             ORDER BY r.created_unix_ms, r.run_id",
            [bench_id],
            |row| {
                Ok((
                    row.get(0)?,
                    row.get::<_, Option<String>>(1)?.unwrap_or_default(),
                ))
            },
        )
    }

    /// Benchmark ids that contain `fragment`, for "did you mean" messages.
    pub(in crate::results::db) fn similar_benchmark_ids(
        &self,
        fragment: &str,
    ) -> Result<Vec<String>, DbError> {
        self.collect(
            "searching benchmark ids",
            "SELECT DISTINCT bench_id FROM benchmarks WHERE instr(bench_id, ?1) > 0
             ORDER BY bench_id LIMIT 10",
            [fragment],
            |row| row.get(0),
        )
    }

    pub(in crate::results::db) fn record_comparison(
        &self,
        c: &ComparisonRecord,
    ) -> Result<i64, DbError> {
        self.conn
            .execute(
                "INSERT INTO comparisons (created_unix_ms, kind, baseline, baseline_run_id,
                    candidate, candidate_run_id, fingerprint, threshold_percent, verdict,
                    degraded, improved, unchanged, inconclusive, detail_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    c.created_unix_ms as i64,
                    c.kind,
                    c.baseline,
                    c.baseline_run_id,
                    c.candidate,
                    c.candidate_run_id,
                    c.fingerprint,
                    c.threshold_percent,
                    c.verdict,
                    c.degraded as i64,
                    c.improved as i64,
                    c.unchanged as i64,
                    c.inconclusive as i64,
                    c.detail_json,
                ],
            )
            .map_err(|e| self.sql("recording a comparison", e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Stored comparisons, newest first.
    pub(in crate::results::db) fn comparisons(&self) -> Result<Vec<ComparisonRecord>, DbError> {
        self.collect(
            "listing comparisons",
            "SELECT pk, created_unix_ms, kind, baseline, baseline_run_id, candidate,
                    candidate_run_id, fingerprint, threshold_percent, verdict, degraded,
                    improved, unchanged, inconclusive, detail_json
             FROM comparisons ORDER BY created_unix_ms DESC, pk DESC",
            [],
            comparison,
        )
    }

    pub(in crate::results::db) fn acknowledge(&self, a: &Acknowledgement) -> Result<(), DbError> {
        self.conn
            .execute(
                "INSERT INTO acknowledgements (bench_id, run_id, reason, who, created_unix_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    a.bench_id,
                    a.run_id,
                    a.reason,
                    a.who,
                    a.created_unix_ms as i64
                ],
            )
            .map_err(|e| self.sql("recording an acknowledgement", e))?;
        Ok(())
    }

    /// Every acknowledgement, oldest first.
    pub(in crate::results::db) fn acknowledgements(&self) -> Result<Vec<Acknowledgement>, DbError> {
        self.collect(
            "listing acknowledgements",
            "SELECT bench_id, run_id, reason, who, created_unix_ms FROM acknowledgements
             ORDER BY created_unix_ms, pk",
            [],
            |row| {
                Ok(Acknowledgement {
                    bench_id: row.get(0)?,
                    run_id: row.get(1)?,
                    reason: row.get(2)?,
                    who: row.get(3)?,
                    created_unix_ms: row.get::<_, i64>(4)? as u64,
                })
            },
        )
    }

    /// Removes comparisons older than `cutoff_unix_ms`, then every run older than it that
    /// is not among the `keep_latest` newest of its hardware and that no remaining
    /// comparison and no acknowledgement refers to. One transaction: all of it or none.
    pub(in crate::results::db) fn prune(
        &mut self,
        cutoff_unix_ms: u64,
        keep_latest: usize,
        dry_run: bool,
    ) -> Result<PruneOutcome, DbError> {
        let path = self.path.clone();
        let sql = |context: &str, source| DbError::Sql {
            path: path.clone(),
            context: format!("pruning: {context}"),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sql("starting", e))?;
        let removed_comparisons =
            tx.execute(
                "DELETE FROM comparisons WHERE created_unix_ms < ?1",
                [cutoff_unix_ms as i64],
            )
            .map_err(|e| sql("removing old comparisons", e))? as u64;
        // Old runs outside the newest `keep_latest` of their fingerprint, and whether
        // something kept refers to them.
        let candidates: Vec<(String, bool)> = {
            let mut stmt = tx
                .prepare(
                    "SELECT run_id,
                        EXISTS (SELECT 1 FROM comparisons c
                                WHERE c.baseline_run_id = r.run_id OR c.candidate_run_id = r.run_id)
                        OR EXISTS (SELECT 1 FROM acknowledgements a WHERE a.run_id = r.run_id)
                     FROM (SELECT run_id, created_unix_ms, ROW_NUMBER() OVER (
                              PARTITION BY fingerprint ORDER BY created_unix_ms DESC, run_id DESC) AS rank
                           FROM runs) r
                     WHERE r.created_unix_ms < ?1 AND r.rank > ?2
                     ORDER BY r.created_unix_ms, r.run_id",
                )
                .map_err(|e| sql("selecting runs", e))?;
            stmt.query_map(params![cutoff_unix_ms as i64, keep_latest as i64], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| sql("selecting runs", e))?
        };
        let mut outcome = PruneOutcome {
            removed_comparisons,
            ..PruneOutcome::default()
        };
        for (run_id, referenced) in candidates {
            if referenced {
                outcome.protected_runs.push(run_id);
            } else {
                tx.execute("DELETE FROM runs WHERE run_id = ?1", [&run_id])
                    .map_err(|e| sql(&format!("removing run {run_id}"), e))?;
                outcome.removed_runs.push(run_id);
            }
        }
        // Counted inside the transaction: on a dry run, what would remain.
        outcome.kept_runs = tx
            .query_row("SELECT COUNT(*) FROM runs", [], |row| row.get::<_, i64>(0))
            .map_err(|e| sql("counting runs", e))? as u64;
        if dry_run {
            tx.rollback().map_err(|e| sql("rolling back", e))?;
        } else {
            tx.commit().map_err(|e| sql("committing", e))?;
        }
        Ok(outcome)
    }
}
