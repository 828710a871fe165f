#!/usr/bin/env bash
# The history database at scale: builds RUNS runs x BENCHMARKS benchmarks x SAMPLES samples
# (default 1,000 x 1,000 x 100) with examples/store_scale.rs, then times, with the release
# binary, one benchmark's history, the full history report, and the import of one run of
# BENCHMARKS benchmarks (into the big store and into an empty one).
# Goals (issue 10): history <= 50 ms, report <= 10 s on 2 cores, import <= 1 s.
# Usage: scripts/store/scale.sh [WORKDIR] [RUNS] [BENCHMARKS] [SAMPLES] [REPEATS]
set -euo pipefail
work=${1:-/tmp/stackbench-store-scale}
runs=${2:-1000}
benchmarks=${3:-1000}
samples=${4:-100}
repeats=${5:-3}
cd "$(dirname "$0")/../.."
cargo build --release --quiet --bin analyze-trends --example store_scale
bin=$PWD/target/release/analyze-trends
if [ ! -f "$work/stackbench.db" ]; then
  mkdir -p "$work"
  /usr/bin/time -f "build: %e s wall, %M KB max RSS" \
    target/release/examples/store_scale "$work" "$runs" "$benchmarks" "$samples"
fi
echo "database: $(du -h "$work/stackbench.db" | cut -f1), $("$bin" runs --results "$work" --format csv | tail -n +2 | wc -l) runs"
TIMEFORMAT='%3R s wall'
for i in $(seq "$repeats"); do
  echo -n "history scale/b0003: "
  { time "$bin" history scale/b0003 --results "$work" --format csv > "$work/history.csv"; } 2>&1
done
tail -n 3 "$work/history.csv" | cut -c1-160
"$bin" history scale/b0003 --results "$work" | tail -n 1
for i in $(seq "$repeats"); do
  echo -n "full report: "
  { /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KB max RSS" "$bin" "$work" > "$work/terminal.txt"; } 2>&1
done
head -n 3 "$work/terminal.txt"
echo "report files: $(cd "$work/reports" && du -h report.html report.json report.md summary.csv | tr '\t\n' '  ')"
for i in $(seq "$repeats"); do
  rm -rf "$work/fresh"
  echo -n "import one run of $benchmarks benchmarks into an empty store: "
  { time "$bin" import "$work/import-one-run.json" --results "$work/fresh" > /dev/null; } 2>&1
done
echo -n "import the same run into the big store: "
{ time "$bin" import "$work/import-one-run.json" --results "$work" > /dev/null; } 2>&1
echo -n "import it again (already there): "
{ time "$bin" import "$work/import-one-run.json" --results "$work" > /dev/null; } 2>&1
