//! The questions the store answers without loading whole runs, on PostgreSQL: the same
//! queries as `sqlite/queries.rs` in PostgreSQL's dialect (`strpos` for `instr`,
//! `jsonb_array_elements` for `json_each`), giving the same rows in the same order.

use super::PgDb;
use crate::results::db::DbError;
use crate::results::db::model::{
    Acknowledgement, ComparisonRecord, HistoryPoint, MedianSeries, PruneOutcome, StoredRun,
};
use ::postgres::Row;
use ::postgres::types::ToSql;

type PgResult<T> = Result<T, ::postgres::Error>;

const RUN_COLUMNS: &str = "run_id, timestamp, created_unix_ms, label, git_revision, git_dirty,
    fingerprint, benchmark_count, failed_count, skipped_count, unreadable_count";

fn stored_run(row: &Row) -> PgResult<StoredRun> {
    Ok(StoredRun {
        run_id: row.try_get(0)?,
        timestamp: row.try_get(1)?,
        created_unix_ms: row.try_get::<_, i64>(2)? as u64,
        label: row.try_get(3)?,
        git_revision: row.try_get(4)?,
        git_dirty: row.try_get(5)?,
        fingerprint: row.try_get(6)?,
        benchmarks: row.try_get::<_, i64>(7)? as u64,
        failed: row.try_get::<_, i64>(8)? as u64,
        skipped: row.try_get::<_, i64>(9)? as u64,
        unreadable: row.try_get::<_, i64>(10)? as u64,
    })
}

fn comparison(row: &Row) -> PgResult<ComparisonRecord> {
    Ok(ComparisonRecord {
        id: row.try_get(0)?,
        created_unix_ms: row.try_get::<_, i64>(1)? as u64,
        kind: row.try_get(2)?,
        baseline: row.try_get(3)?,
        baseline_run_id: row.try_get(4)?,
        candidate: row.try_get(5)?,
        candidate_run_id: row.try_get(6)?,
        fingerprint: row.try_get(7)?,
        threshold_percent: row.try_get(8)?,
        verdict: row.try_get(9)?,
        degraded: row.try_get::<_, i64>(10)? as u64,
        improved: row.try_get::<_, i64>(11)? as u64,
        unchanged: row.try_get::<_, i64>(12)? as u64,
        inconclusive: row.try_get::<_, i64>(13)? as u64,
        detail_json: row.try_get(14)?,
    })
}

impl PgDb {
    /// Runs `query` with `params` and maps every row through `map`.
    pub(super) fn collect<T>(
        &self,
        context: &str,
        query: &str,
        params: &[&(dyn ToSql + Sync)],
        map: impl FnMut(&Row) -> PgResult<T>,
    ) -> Result<Vec<T>, DbError> {
        self.client()
            .query(query, params)
            .and_then(|rows| rows.iter().map(map).collect())
            .map_err(|e| self.pg(context, e))
    }

    pub(in crate::results::db) fn list_runs(&self) -> Result<Vec<StoredRun>, DbError> {
        self.collect(
            "listing runs",
            &format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY created_unix_ms DESC, run_id DESC"),
            &[],
            stored_run,
        )
    }

    pub(in crate::results::db) fn medians(
        &self,
    ) -> Result<(Vec<StoredRun>, MedianSeries), DbError> {
        let context = "reading the benchmark medians";
        let runs: Vec<(i64, StoredRun)> = self.collect(
            context,
            &format!("SELECT {RUN_COLUMNS}, pk FROM runs ORDER BY created_unix_ms, run_id"),
            &[],
            |row| Ok((row.try_get(11)?, stored_run(row)?)),
        )?;
        let index_of: std::collections::HashMap<i64, usize> = runs
            .iter()
            .enumerate()
            .map(|(index, (pk, _))| (*pk, index))
            .collect();
        // `> 0`: a median of non-positive times is no measurement (see the SQLite engine).
        let rows: Vec<(String, i64, f64)> = self.collect(
            context,
            "SELECT bench_id, run_pk, median_ns FROM benchmarks WHERE median_ns > 0
             ORDER BY bench_id",
            &[],
            |row| Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?)),
        )?;
        let mut series: MedianSeries = Vec::new();
        for (id, run_pk, median_ns) in rows {
            let Some(&index) = index_of.get(&run_pk) else {
                continue;
            };
            match series.last_mut() {
                Some((last, points)) if *last == id => points.push((index, median_ns)),
                _ => series.push((id, vec![(index, median_ns)])),
            }
        }
        for (_, points) in &mut series {
            points.sort_by_key(|&(index, _)| index);
        }
        Ok((runs.into_iter().map(|(_, run)| run).collect(), series))
    }

    pub(in crate::results::db) fn history(
        &self,
        bench_id: &str,
    ) -> Result<Vec<HistoryPoint>, DbError> {
        self.collect(
            "reading a benchmark's history",
            "SELECT r.run_id, r.timestamp, r.created_unix_ms, r.label, r.git_revision,
                    r.fingerprint, b.median_ns, b.min_ns, b.sample_count
             FROM benchmarks b JOIN runs r ON r.pk = b.run_pk
             WHERE b.bench_id = $1 AND b.median_ns > 0
             ORDER BY r.created_unix_ms, r.run_id",
            &[&bench_id],
            |row| {
                Ok(HistoryPoint {
                    run_id: row.try_get(0)?,
                    timestamp: row.try_get(1)?,
                    created_unix_ms: row.try_get::<_, i64>(2)? as u64,
                    label: row.try_get(3)?,
                    git_revision: row.try_get(4)?,
                    fingerprint: row.try_get(5)?,
                    median_ns: row.try_get(6)?,
                    min_ns: row.try_get(7)?,
                    samples: row.try_get::<_, i64>(8)? as u64,
                })
            },
        )
    }

    pub(in crate::results::db) fn recorded_failures(
        &self,
        bench_id: &str,
    ) -> Result<Vec<(String, String)>, DbError> {
        self.collect(
            "reading a benchmark's recorded failures",
            "SELECT r.run_id, f.value ->> 'error'
             FROM runs r
             CROSS JOIN LATERAL jsonb_array_elements(CASE
                 WHEN jsonb_typeof(r.run_json::jsonb -> 'failed') = 'array'
                 THEN r.run_json::jsonb -> 'failed' ELSE '[]'::jsonb END) AS f(value)
             WHERE f.value ->> 'id' = $1
             ORDER BY r.created_unix_ms, r.run_id",
            &[&bench_id],
            |row| {
                Ok((
                    row.try_get(0)?,
                    row.try_get::<_, Option<String>>(1)?.unwrap_or_default(),
                ))
            },
        )
    }

    pub(in crate::results::db) fn similar_benchmark_ids(
        &self,
        fragment: &str,
    ) -> Result<Vec<String>, DbError> {
        self.collect(
            "searching benchmark ids",
            "SELECT DISTINCT bench_id FROM benchmarks WHERE strpos(bench_id, $1) > 0
             ORDER BY bench_id LIMIT 10",
            &[&fragment],
            |row| row.try_get(0),
        )
    }

    pub(in crate::results::db) fn record_comparison(
        &self,
        c: &ComparisonRecord,
    ) -> Result<i64, DbError> {
        let ids = self.collect(
            "recording a comparison",
            "INSERT INTO comparisons (created_unix_ms, kind, baseline, baseline_run_id,
                candidate, candidate_run_id, fingerprint, threshold_percent, verdict,
                degraded, improved, unchanged, inconclusive, detail_json)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING pk",
            &[
                &(c.created_unix_ms as i64),
                &c.kind,
                &c.baseline,
                &c.baseline_run_id,
                &c.candidate,
                &c.candidate_run_id,
                &c.fingerprint,
                &c.threshold_percent,
                &c.verdict,
                &(c.degraded as i64),
                &(c.improved as i64),
                &(c.unchanged as i64),
                &(c.inconclusive as i64),
                &c.detail_json,
            ],
            |row| row.try_get::<_, i64>(0),
        )?;
        Ok(ids.first().copied().unwrap_or_default())
    }

    pub(in crate::results::db) fn comparisons(&self) -> Result<Vec<ComparisonRecord>, DbError> {
        self.collect(
            "listing comparisons",
            "SELECT pk, created_unix_ms, kind, baseline, baseline_run_id, candidate,
                    candidate_run_id, fingerprint, threshold_percent, verdict, degraded,
                    improved, unchanged, inconclusive, detail_json
             FROM comparisons ORDER BY created_unix_ms DESC, pk DESC",
            &[],
            comparison,
        )
    }

    pub(in crate::results::db) fn acknowledge(&self, a: &Acknowledgement) -> Result<(), DbError> {
        self.client()
            .execute(
                "INSERT INTO acknowledgements (bench_id, run_id, reason, who, created_unix_ms)
                 VALUES ($1, $2, $3, $4, $5)",
                &[
                    &a.bench_id,
                    &a.run_id,
                    &a.reason,
                    &a.who,
                    &(a.created_unix_ms as i64),
                ],
            )
            .map_err(|e| self.pg("recording an acknowledgement", e))?;
        Ok(())
    }

    pub(in crate::results::db) fn acknowledgements(&self) -> Result<Vec<Acknowledgement>, DbError> {
        self.collect(
            "listing acknowledgements",
            "SELECT bench_id, run_id, reason, who, created_unix_ms FROM acknowledgements
             ORDER BY created_unix_ms, pk",
            &[],
            |row| {
                Ok(Acknowledgement {
                    bench_id: row.try_get(0)?,
                    run_id: row.try_get(1)?,
                    reason: row.try_get(2)?,
                    who: row.try_get(3)?,
                    created_unix_ms: row.try_get::<_, i64>(4)? as u64,
                })
            },
        )
    }

    /// The same rule as the SQLite engine, in one transaction; the runs table is locked
    /// against writers for its duration so the ranks it computes hold until it commits.
    pub(in crate::results::db) fn prune(
        &mut self,
        cutoff_unix_ms: u64,
        keep_latest: usize,
        dry_run: bool,
    ) -> Result<PruneOutcome, DbError> {
        let sql = |context: &str, source| self.pg(&format!("pruning: {context}"), source);
        let mut client = self.client();
        let mut tx = client.transaction().map_err(|e| sql("starting", e))?;
        tx.batch_execute("LOCK TABLE runs, comparisons, acknowledgements IN EXCLUSIVE MODE")
            .map_err(|e| sql("locking", e))?;
        let cutoff = cutoff_unix_ms as i64;
        let removed_comparisons = tx
            .execute(
                "DELETE FROM comparisons WHERE created_unix_ms < $1",
                &[&cutoff],
            )
            .map_err(|e| sql("removing old comparisons", e))?;
        let candidates: Vec<(String, bool)> = tx
            .query(
                "SELECT run_id,
                    EXISTS (SELECT 1 FROM comparisons c
                            WHERE c.baseline_run_id = r.run_id OR c.candidate_run_id = r.run_id)
                    OR EXISTS (SELECT 1 FROM acknowledgements a WHERE a.run_id = r.run_id)
                 FROM (SELECT run_id, created_unix_ms, ROW_NUMBER() OVER (
                          PARTITION BY fingerprint ORDER BY created_unix_ms DESC, run_id DESC) AS rank
                       FROM runs) r
                 WHERE r.created_unix_ms < $1 AND r.rank > $2
                 ORDER BY r.created_unix_ms, r.run_id",
                &[&cutoff, &(keep_latest as i64)],
            )
            .and_then(|rows| {
                rows.iter()
                    .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                    .collect()
            })
            .map_err(|e| sql("selecting runs", e))?;
        let mut outcome = PruneOutcome {
            removed_comparisons,
            ..PruneOutcome::default()
        };
        for (run_id, referenced) in candidates {
            if referenced {
                outcome.protected_runs.push(run_id);
            } else {
                tx.execute("DELETE FROM runs WHERE run_id = $1", &[&run_id])
                    .map_err(|e| sql(&format!("removing run {run_id}"), e))?;
                outcome.removed_runs.push(run_id);
            }
        }
        outcome.kept_runs = tx
            .query_one("SELECT COUNT(*) FROM runs", &[])
            .and_then(|row| row.try_get::<_, i64>(0))
            .map_err(|e| sql("counting runs", e))? as u64;
        if dry_run {
            tx.rollback().map_err(|e| sql("rolling back", e))?;
        } else {
            tx.commit().map_err(|e| sql("committing", e))?;
        }
        Ok(outcome)
    }
}
