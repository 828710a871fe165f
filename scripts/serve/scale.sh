#!/usr/bin/env bash
# The results server at scale, on both engines (issue 18's figures for BENCHMARKS.md):
#   1. a store of RUNS runs x BENCHMARKS benchmarks x SAMPLES samples (examples/store_scale.rs)
#      in SQLite, copied into PostgreSQL with `analyze-trends store copy` (timed: copy throughput);
#   2. per engine, `stackbench serve` over it: one benchmark's history from the JSON API and its
#      page rendered in headless Chromium (examples/serve_scale.rs);
#   3. per engine, import throughput (one run of BENCHMARKS benchmarks, then 50 small runs);
#   4. per engine, concurrent writers: WRITERS processes each importing RUNS_PER_WRITER runs.
# Goals: history API <= 50 ms, page rendered <= 1 s.
# PostgreSQL is Debian's, started here by ci/postgres.sh with STACKBENCH_PG_DURABLE=1: fsync,
# synchronous_commit and full_page_writes stay on (the test cluster turns them off).
# Usage: scripts/serve/scale.sh [WORKDIR] [RUNS] [BENCHMARKS] [SAMPLES] [WRITERS] [RUNS_PER_WRITER]
set -euo pipefail
work=$(realpath -m "${1:-/tmp/stackbench-serve-scale}")
runs=${2:-1000}
benchmarks=${3:-1000}
samples=${4:-100}
writers=${5:-8}
per_writer=${6:-50}
cd "$(dirname "$0")/../.."
root=$PWD
cargo build --release --quiet --bin analyze-trends --bin stackbench --example store_scale --example serve_scale
at=$root/target/release/analyze-trends
sb=$root/target/release/stackbench
probe=$root/target/release/examples/serve_scale
mkdir -p "$work"
TIMEFORMAT='%3R s wall'

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
if [ ! -f "$work/sqlite/stackbench.db" ]; then
    mkdir -p "$work/sqlite"
    /usr/bin/time -f "sqlite store built: %e s wall" \
        target/release/examples/store_scale "$work/sqlite" "$runs" "$benchmarks" "$samples"
fi
echo "sqlite store: $(du -h "$work/sqlite/stackbench.db" | cut -f1)"

pg_dir=$work/pg
ci/postgres.sh stop "$pg_dir" >/dev/null 2>&1 || true
rm -rf "$pg_dir"
pg_admin=$(STACKBENCH_PG_DURABLE=1 ci/postgres.sh start "$pg_dir")
servers=()
cleanup() {
    for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
    ci/postgres.sh stop "$pg_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
echo "postgres: $(psql -tA "$pg_admin" -c 'SHOW server_version'), fsync $(psql -tA "$pg_admin" -c 'SHOW fsync'), synchronous_commit $(psql -tA "$pg_admin" -c 'SHOW synchronous_commit')"
pg_url() { # a fresh database on the cluster, by name
    psql -q "$pg_admin" -c "CREATE DATABASE $1" >/dev/null
    echo "${pg_admin%/*}/$1"
}
big_pg=$(pg_url scale)
echo -n "store copy sqlite -> postgres ($runs runs x $benchmarks benchmarks): "
{ time "$at" store copy "sqlite:$work/sqlite/stackbench.db" "$big_pg" > "$work/copy.txt"; } 2>&1
tail -n 2 "$work/copy.txt"

# One of the benchmarks with a step (examples/store_scale.rs steps the first ten).
bench_id=scale/b0003

serve_and_probe() { # engine-name store-url results-dir
    local log=$work/serve-$1.log
    "$sb" serve --store "$2" --results "$3" --bind 127.0.0.1:0 > "$log" 2>&1 &
    servers+=($!)
    local url=""
    for _ in $(seq 100); do
        url=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -n 1 || true)
        [ -n "$url" ] && break
        sleep 0.1
    done
    [ -n "$url" ] || { cat "$log"; exit 1; }
    echo "--- $1: $url"
    "$probe" "$url" "$bench_id" 20
    kill "${servers[-1]}"
}
serve_and_probe sqlite "sqlite:$work/sqlite/stackbench.db" "$work/sqlite"
serve_and_probe postgres "$big_pg" "$work/sqlite"

# Run files for the import and writer measurements: variants of one small run (20
# benchmarks of the import file's shape), each with its own id.
python3 - "$work" "$writers" "$per_writer" <<'EOF'
import json, sys, pathlib
work, writers, per = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
run = json.loads((work / "sqlite" / "import-one-run.json").read_text())
small = dict(run, benchmarks=run["benchmarks"][:20])
for w in range(writers):
    d = work / "writers" / f"w{w}"
    d.mkdir(parents=True, exist_ok=True)
    for i in range(per):
        r = dict(small, run_id=f"{run['run_id']}-w{w}-{i:03d}")
        (d / f"{r['run_id']}.json").write_text(json.dumps(r))
EOF

for engine in sqlite postgres; do
    if [ $engine = sqlite ]; then
        one=sqlite:$work/import-$engine/one/stackbench.db
        small=sqlite:$work/import-$engine/small/stackbench.db
        mkdir -p "$work/import-$engine/one" "$work/import-$engine/small"
    else
        one=$(pg_url import_one); small=$(pg_url import_small)
    fi
    echo "--- import on $engine"
    echo -n "one run of $benchmarks benchmarks x $samples samples into an empty store: "
    { time "$at" import "$work/sqlite/import-one-run.json" --store "$one" --results "$work/import-$engine/one" > /dev/null; } 2>&1
    echo -n "50 runs of 20 benchmarks in one import: "
    { time "$at" import "$work"/writers/w0/*.json --store "$small" --results "$work/import-$engine/small" > /dev/null; } 2>&1
done

for engine in sqlite postgres; do
    if [ $engine = sqlite ]; then
        mkdir -p "$work/concurrent-sqlite"
        store=sqlite:$work/concurrent-sqlite/stackbench.db
    else
        store=$(pg_url concurrent)
    fi
    echo "--- $writers concurrent writers x $per_writer runs (one import per run) on $engine"
    start=$(date +%s.%N)
    for w in $(seq 0 $((writers - 1))); do
        (for f in "$work/writers/w$w"/*.json; do
            "$at" import "$f" --store "$store" --results "$work/concurrent-$engine" > /dev/null
        done) &
    done
    wait
    end=$(date +%s.%N)
    stored=$("$at" runs --store "$store" --results "$work/concurrent-$engine" --format csv | tail -n +2 | wc -l)
    python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); n=int(sys.argv[3]); print(f'{n} runs stored of {int(sys.argv[4])}, {s:.1f} s wall, {n/s:.1f} runs/s')" \
        "$start" "$end" "$stored" "$((writers * per_writer))"
done
