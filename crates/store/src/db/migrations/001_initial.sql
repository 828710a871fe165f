-- Version 1: runs, benchmarks per run, samples as compact blobs, comparisons and
-- acknowledgements. Every table keeps the full JSON of what it indexes, so fields this
-- version does not know survive a round trip. The names in braces are the types each
-- dialect spells its own way (DIALECT_TYPES in mod.rs): PostgreSQL's keys are BIGINT
-- identities, its ids compare byte-wise (COLLATE "C") as SQLite's do, so the same store
-- lists in the same order on either engine.
CREATE TABLE runs (
    pk               {pk},
    run_id           {bytewise_text} NOT NULL UNIQUE,
    created_unix_ms  {int} NOT NULL,
    timestamp        TEXT NOT NULL,
    label            TEXT,
    git_revision     TEXT,
    git_dirty        {bool},
    fingerprint      TEXT,
    schema           TEXT NOT NULL,
    benchmark_count  {int} NOT NULL,
    failed_count     {int} NOT NULL,
    skipped_count    {int} NOT NULL,
    unreadable_count {int} NOT NULL,
    stored_unix_ms   {int} NOT NULL,
    run_json         TEXT NOT NULL
);
CREATE INDEX runs_by_time ON runs (created_unix_ms, run_id);
CREATE INDEX runs_by_fingerprint ON runs (fingerprint, created_unix_ms);

CREATE TABLE benchmarks (
    pk                  {pk},
    run_pk              {int} NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
    bench_id            {bytewise_text} NOT NULL,
    median_ns           {real},
    min_ns              {real},
    sample_count        {int} NOT NULL,
    throughput_kind     TEXT,
    throughput_elements {int},
    throughput_bytes    {int},
    outcome             TEXT,
    error               TEXT,
    record_json         TEXT NOT NULL,
    UNIQUE (run_pk, bench_id)
);
-- Covering: one benchmark's history is read from the index alone.
CREATE INDEX benchmarks_by_id ON benchmarks (bench_id, run_pk, median_ns, min_ns, sample_count);

CREATE TABLE samples (
    benchmark_pk {int} PRIMARY KEY REFERENCES benchmarks (pk) ON DELETE CASCADE,
    count        {int} NOT NULL,
    iters        {blob} NOT NULL,
    times        {blob} NOT NULL
);

CREATE TABLE comparisons (
    pk                {pk},
    created_unix_ms   {int} NOT NULL,
    kind              TEXT NOT NULL,
    baseline          TEXT NOT NULL,
    baseline_run_id   TEXT,
    candidate         TEXT NOT NULL,
    candidate_run_id  TEXT,
    fingerprint       TEXT,
    threshold_percent {real} NOT NULL,
    verdict           TEXT NOT NULL,
    degraded          {int} NOT NULL,
    improved          {int} NOT NULL,
    unchanged         {int} NOT NULL,
    inconclusive      {int} NOT NULL,
    detail_json       TEXT NOT NULL
);
CREATE INDEX comparisons_by_time ON comparisons (created_unix_ms);
CREATE INDEX comparisons_by_baseline ON comparisons (baseline_run_id);
CREATE INDEX comparisons_by_candidate ON comparisons (candidate_run_id);

CREATE TABLE acknowledgements (
    pk              {pk},
    bench_id        TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    reason          TEXT NOT NULL,
    who             TEXT NOT NULL,
    created_unix_ms {int} NOT NULL
);
CREATE INDEX acknowledgements_by_bench ON acknowledgements (bench_id);
CREATE INDEX acknowledgements_by_run ON acknowledgements (run_id);
