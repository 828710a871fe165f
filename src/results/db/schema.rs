//! The schema and its forward migrations. `PRAGMA user_version` holds the version; each
//! entry of [`MIGRATIONS`] takes a database from version `i` to `i + 1`, so an old
//! database is brought up to date in order, inside one transaction.

use super::{DbError, HistoryDb};
use rusqlite::TransactionBehavior;

/// Version 1: runs, benchmarks per run, samples as compact blobs, comparisons and
/// acknowledgements. Every table keeps the full JSON of what it indexes, so fields this
/// version does not know survive a round trip.
const V1: &str = "
CREATE TABLE runs (
    pk               INTEGER PRIMARY KEY,
    run_id           TEXT NOT NULL UNIQUE,
    created_unix_ms  INTEGER NOT NULL,
    timestamp        TEXT NOT NULL,
    label            TEXT,
    git_revision     TEXT,
    git_dirty        INTEGER,
    fingerprint      TEXT,
    schema           TEXT NOT NULL,
    benchmark_count  INTEGER NOT NULL,
    failed_count     INTEGER NOT NULL,
    skipped_count    INTEGER NOT NULL,
    unreadable_count INTEGER NOT NULL,
    stored_unix_ms   INTEGER NOT NULL,
    run_json         TEXT NOT NULL
);
CREATE INDEX runs_by_time ON runs (created_unix_ms, run_id);
CREATE INDEX runs_by_fingerprint ON runs (fingerprint, created_unix_ms);

CREATE TABLE benchmarks (
    pk                  INTEGER PRIMARY KEY,
    run_pk              INTEGER NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
    bench_id            TEXT NOT NULL,
    median_ns           REAL,
    min_ns              REAL,
    sample_count        INTEGER NOT NULL,
    throughput_kind     TEXT,
    throughput_elements INTEGER,
    throughput_bytes    INTEGER,
    outcome             TEXT,
    error               TEXT,
    record_json         TEXT NOT NULL,
    UNIQUE (run_pk, bench_id)
);
-- Covering: one benchmark's history is read from the index alone.
CREATE INDEX benchmarks_by_id ON benchmarks (bench_id, run_pk, median_ns, min_ns, sample_count);

CREATE TABLE samples (
    benchmark_pk INTEGER PRIMARY KEY REFERENCES benchmarks (pk) ON DELETE CASCADE,
    count        INTEGER NOT NULL,
    iters        BLOB NOT NULL,
    times        BLOB NOT NULL
);

CREATE TABLE comparisons (
    pk                INTEGER PRIMARY KEY,
    created_unix_ms   INTEGER NOT NULL,
    kind              TEXT NOT NULL,
    baseline          TEXT NOT NULL,
    baseline_run_id   TEXT,
    candidate         TEXT NOT NULL,
    candidate_run_id  TEXT,
    fingerprint       TEXT,
    threshold_percent REAL NOT NULL,
    verdict           TEXT NOT NULL,
    degraded          INTEGER NOT NULL,
    improved          INTEGER NOT NULL,
    unchanged         INTEGER NOT NULL,
    inconclusive      INTEGER NOT NULL,
    detail_json       TEXT NOT NULL
);
CREATE INDEX comparisons_by_time ON comparisons (created_unix_ms);
CREATE INDEX comparisons_by_baseline ON comparisons (baseline_run_id);
CREATE INDEX comparisons_by_candidate ON comparisons (candidate_run_id);

CREATE TABLE acknowledgements (
    pk              INTEGER PRIMARY KEY,
    bench_id        TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    reason          TEXT NOT NULL,
    who             TEXT NOT NULL,
    created_unix_ms INTEGER NOT NULL
);
CREATE INDEX acknowledgements_by_bench ON acknowledgements (bench_id);
CREATE INDEX acknowledgements_by_run ON acknowledgements (run_id);
";

const MIGRATIONS: &[&str] = &[V1];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database to [`SCHEMA_VERSION`]. The version is re-read inside an immediate
/// transaction, so two processes opening a fresh file at once migrate it exactly once.
pub(super) fn migrate(db: &mut HistoryDb) -> Result<(), DbError> {
    if db.user_version()? == SCHEMA_VERSION {
        return Ok(());
    }
    let path = db.path.clone();
    let sql = |context: &str, source| DbError::Sql {
        path: path.clone(),
        context: context.to_string(),
        source,
    };
    let tx = db
        .conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sql("starting the migration", e))?;
    let found: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| sql("reading the schema version", e))?;
    if found > SCHEMA_VERSION {
        return Err(DbError::NewerSchema {
            path: path.clone(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (from, step) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        tx.execute_batch(step)
            .map_err(|e| sql(&format!("migrating from schema version {from}"), e))?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| sql("writing the schema version", e))?;
    tx.commit().map_err(|e| sql("committing the migration", e))
}
