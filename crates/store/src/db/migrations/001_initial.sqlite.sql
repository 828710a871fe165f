-- Version 1: runs, benchmarks per run, samples as compact blobs, comparisons and
-- acknowledgements. Every table keeps the full JSON of what it indexes, so fields this
-- version does not know survive a round trip.
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
