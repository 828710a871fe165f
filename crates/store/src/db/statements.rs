//! Every statement the store runs, once, for both engines (placeholders `$1`, `$2`, ...:
//! see [`Statement`]). Four differ between the dialects and carry both texts: the medians
//! scan (SQLite is told its covering index), the recorded failures (each engine's JSON
//! functions), the id search (`instr` or `strpos`) and the prune's table lock. One is
//! PostgreSQL's alone: a benchmark and its samples in one statement (see
//! [`Dialect::chains_inserts`](super::sql::Dialect::chains_inserts)).
//!
//! Both engines order text byte-wise (PostgreSQL's id columns are `COLLATE "C"`), so the
//! same store lists in the same order on either.

use super::sql::Statement;

/// The columns of a [`StoredRun`](super::StoredRun), in the order `queries::stored_run`
/// reads them.
macro_rules! run_columns {
    () => {
        "run_id, timestamp, created_unix_ms, label, git_revision, git_dirty, fingerprint,
         benchmark_count, failed_count, skipped_count, unreadable_count"
    };
}

/// The insert of one benchmark row; alone on SQLite, inside a CTE on PostgreSQL.
macro_rules! insert_benchmark {
    () => {
        "INSERT INTO benchmarks (run_pk, bench_id, median_ns, min_ns, sample_count,
             throughput_kind, throughput_elements, throughput_bytes, outcome, error, record_json)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING pk"
    };
}

// ---- Schema version -------------------------------------------------------------------

pub(super) static META_VALUE: Statement =
    Statement::both("SELECT value FROM stackbench_meta WHERE key = $1");

pub(super) static UPSERT_META: Statement = Statement::both(
    "INSERT INTO stackbench_meta (key, value) VALUES ($1, $2)
     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
);

// ---- Whole runs -----------------------------------------------------------------------

/// `RETURNING` nothing when the id is taken: of two writers of one run, the second learns
/// it without an error that would abort its transaction.
pub(super) static INSERT_RUN: Statement = Statement::both(
    "INSERT INTO runs (run_id, created_unix_ms, timestamp, label, git_revision, git_dirty,
         fingerprint, schema, benchmark_count, failed_count, skipped_count, unreadable_count,
         stored_unix_ms, run_json, content_sha256)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (run_id) DO NOTHING RETURNING pk",
);

pub(super) static RUN_FINGERPRINT: Statement =
    Statement::both("SELECT fingerprint FROM runs WHERE run_id = $1");

pub(super) static INSERT_BENCHMARK: Statement = Statement::both(insert_benchmark!());

pub(super) static INSERT_SAMPLES: Statement = Statement::both(
    "INSERT INTO samples (benchmark_pk, count, iters, times) VALUES ($1, $2, $3, $4)",
);

/// PostgreSQL only: [`INSERT_BENCHMARK`] and [`INSERT_SAMPLES`] in one round trip, with
/// the samples as `$12` and `$13`.
pub(super) static INSERT_BENCHMARK_WITH_SAMPLES: Statement = Statement::both(concat!(
    "WITH b AS (",
    insert_benchmark!(),
    ") INSERT INTO samples (benchmark_pk, count, iters, times)
     SELECT pk, $5, $12::bytea, $13::bytea FROM b"
));

pub(super) static RUN_IDS: Statement =
    Statement::both("SELECT run_id, fingerprint FROM runs ORDER BY created_unix_ms, run_id");

pub(super) static CHECKSUMS: Statement =
    Statement::both("SELECT run_id, content_sha256 FROM runs ORDER BY created_unix_ms, run_id");

pub(super) static HAS_RUN: Statement = Statement::both("SELECT 1 FROM runs WHERE run_id = $1");

pub(super) static RUN_HEADER: Statement =
    Statement::both("SELECT pk, run_json FROM runs WHERE run_id = $1");

pub(super) static RUN_BENCHMARKS: Statement = Statement::both(
    "SELECT b.record_json, s.iters, s.times FROM benchmarks b
     LEFT JOIN samples s ON s.benchmark_pk = b.pk
     WHERE b.run_pk = $1 ORDER BY b.bench_id",
);

pub(super) static RUNS_WITHOUT_CHECKSUM: Statement =
    Statement::both("SELECT run_id FROM runs WHERE content_sha256 IS NULL");

pub(super) static SET_CHECKSUM: Statement =
    Statement::both("UPDATE runs SET content_sha256 = $1 WHERE run_id = $2");

// ---- Questions answered without loading runs -------------------------------------------

pub(super) static LIST_RUNS: Statement = Statement::both(concat!(
    "SELECT ",
    run_columns!(),
    " FROM runs ORDER BY created_unix_ms DESC, run_id DESC"
));

/// [`LIST_RUNS`] oldest first, with each run's key last.
pub(super) static RUNS_WITH_KEYS: Statement = Statement::both(concat!(
    "SELECT ",
    run_columns!(),
    ", pk FROM runs ORDER BY created_unix_ms, run_id"
));

/// `> 0`, not `IS NOT NULL`: a store written before unusable samples became failures may
/// hold a median of non-positive times, which is no measurement. SQLite is named the
/// covering index (its planner otherwise reads the table); PostgreSQL plans it itself.
pub(super) static MEDIANS: Statement = Statement::each(
    "SELECT bench_id, run_pk, median_ns FROM benchmarks INDEXED BY benchmarks_by_id
     WHERE median_ns > 0 ORDER BY bench_id",
    "SELECT bench_id, run_pk, median_ns FROM benchmarks WHERE median_ns > 0
     ORDER BY bench_id",
);

pub(super) static HISTORY: Statement = Statement::both(
    "SELECT r.run_id, r.timestamp, r.created_unix_ms, r.label, r.git_revision,
            r.fingerprint, b.median_ns, b.min_ns, b.sample_count
     FROM benchmarks b JOIN runs r ON r.pk = b.run_pk
     WHERE b.bench_id = $1 AND b.median_ns > 0
     ORDER BY r.created_unix_ms, r.run_id",
);

/// Each run's `failed` list from its header JSON, in each engine's JSON functions.
pub(super) static RECORDED_FAILURES: Statement = Statement::each(
    "SELECT r.run_id, json_extract(f.value, '$.error')
     FROM runs r, json_each(r.run_json, '$.failed') f
     WHERE json_extract(f.value, '$.id') = $1
     ORDER BY r.created_unix_ms, r.run_id",
    "SELECT r.run_id, f.value ->> 'error'
     FROM runs r
     CROSS JOIN LATERAL jsonb_array_elements(CASE
         WHEN jsonb_typeof(r.run_json::jsonb -> 'failed') = 'array'
         THEN r.run_json::jsonb -> 'failed' ELSE '[]'::jsonb END) AS f(value)
     WHERE f.value ->> 'id' = $1
     ORDER BY r.created_unix_ms, r.run_id",
);

/// A plain substring test (`LIKE` would read `%` and `_` in the fragment as wildcards).
pub(super) static SIMILAR_BENCHMARK_IDS: Statement = Statement::each(
    "SELECT DISTINCT bench_id FROM benchmarks WHERE instr(bench_id, $1) > 0
     ORDER BY bench_id LIMIT 10",
    "SELECT DISTINCT bench_id FROM benchmarks WHERE strpos(bench_id, $1) > 0
     ORDER BY bench_id LIMIT 10",
);

pub(super) static INSERT_COMPARISON: Statement = Statement::both(
    "INSERT INTO comparisons (created_unix_ms, kind, baseline, baseline_run_id, candidate,
         candidate_run_id, fingerprint, threshold_percent, verdict, degraded, improved,
         unchanged, inconclusive, detail_json)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING pk",
);

pub(super) static COMPARISONS: Statement = Statement::both(
    "SELECT pk, created_unix_ms, kind, baseline, baseline_run_id, candidate,
            candidate_run_id, fingerprint, threshold_percent, verdict, degraded,
            improved, unchanged, inconclusive, detail_json
     FROM comparisons ORDER BY created_unix_ms DESC, pk DESC",
);

pub(super) static INSERT_ACKNOWLEDGEMENT: Statement = Statement::both(
    "INSERT INTO acknowledgements (bench_id, run_id, reason, who, created_unix_ms)
     VALUES ($1, $2, $3, $4, $5)",
);

pub(super) static ACKNOWLEDGEMENTS: Statement = Statement::both(
    "SELECT bench_id, run_id, reason, who, created_unix_ms FROM acknowledgements
     ORDER BY created_unix_ms, pk",
);

// ---- Prune ------------------------------------------------------------------------------

/// Writers are kept out while a prune ranks and removes runs, so the ranks hold until it
/// commits: SQLite's `BEGIN IMMEDIATE` already does that (nothing to run here); PostgreSQL
/// needs the tables locked.
pub(super) static PRUNE_LOCK: Statement = Statement::each(
    "",
    "LOCK TABLE runs, comparisons, acknowledgements IN EXCLUSIVE MODE",
);

pub(super) static DELETE_OLD_COMPARISONS: Statement =
    Statement::both("DELETE FROM comparisons WHERE created_unix_ms < $1");

/// Old runs outside the newest `$2` of their fingerprint, and whether something kept
/// refers to them.
pub(super) static PRUNE_CANDIDATES: Statement = Statement::both(
    "SELECT run_id,
        EXISTS (SELECT 1 FROM comparisons c
                WHERE c.baseline_run_id = r.run_id OR c.candidate_run_id = r.run_id)
        OR EXISTS (SELECT 1 FROM acknowledgements a WHERE a.run_id = r.run_id)
     FROM (SELECT run_id, created_unix_ms, ROW_NUMBER() OVER (
              PARTITION BY fingerprint ORDER BY created_unix_ms DESC, run_id DESC) AS rank
           FROM runs) r
     WHERE r.created_unix_ms < $1 AND r.rank > $2
     ORDER BY r.created_unix_ms, r.run_id",
);

pub(super) static DELETE_RUN: Statement = Statement::both("DELETE FROM runs WHERE run_id = $1");

pub(super) static COUNT_RUNS: Statement = Statement::both("SELECT COUNT(*) FROM runs");

/// Every statement SQLite runs, for the test that prepares each one on a fresh store.
#[cfg(test)]
pub(super) static SQLITE: &[&Statement] = &[
    &META_VALUE,
    &UPSERT_META,
    &INSERT_RUN,
    &RUN_FINGERPRINT,
    &INSERT_BENCHMARK,
    &INSERT_SAMPLES,
    &RUN_IDS,
    &CHECKSUMS,
    &HAS_RUN,
    &RUN_HEADER,
    &RUN_BENCHMARKS,
    &RUNS_WITHOUT_CHECKSUM,
    &SET_CHECKSUM,
    &LIST_RUNS,
    &RUNS_WITH_KEYS,
    &MEDIANS,
    &HISTORY,
    &RECORDED_FAILURES,
    &SIMILAR_BENCHMARK_IDS,
    &INSERT_COMPARISON,
    &COMPARISONS,
    &INSERT_ACKNOWLEDGEMENT,
    &ACKNOWLEDGEMENTS,
    &DELETE_OLD_COMPARISONS,
    &PRUNE_CANDIDATES,
    &DELETE_RUN,
    &COUNT_RUNS,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::migrations::MIGRATIONS;
    use crate::db::sql::Dialect;

    #[test]
    fn every_statement_sqlite_runs_prepares_on_the_current_schema() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for step in MIGRATIONS {
            conn.execute_batch(step.text(Dialect::Sqlite)).unwrap();
        }
        for statement in SQLITE {
            let text = statement.text(Dialect::Sqlite);
            assert!(!text.contains("$1"), "{text}");
            if let Err(e) = conn.prepare(text) {
                panic!("{e}: {text}");
            }
        }
    }
}
