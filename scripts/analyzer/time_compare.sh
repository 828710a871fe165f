#!/usr/bin/env bash
# Times `analyze-trends compare` against `critcmp` on one simulated Criterion tree of
# 10,000 benchmarks x 100 samples (two baselines), interleaved in one shell session.
# Usage: scripts/analyzer/time_compare.sh [WORKDIR] [REPEATS]
# Needs critcmp on PATH or in $CRITCMP (cargo install critcmp).
set -euo pipefail
work=${1:-/tmp/stackbench-compare-timing}
repeats=${2:-5}
cd "$(dirname "$0")/../.."
cargo build --release --quiet --bin analyze-trends
bin=$PWD/target/release/analyze-trends
critcmp=${CRITCMP:-critcmp}
if [ ! -d "$work/target/criterion/sim" ]; then
  rm -rf "$work" && mkdir -p "$work/target"
  "$bin" simulate tree --out "$work/target/criterion" --per-population 5000 --samples 100 --seed 3
fi
echo "tree: $(find "$work/target/criterion" -name benchmark.json | wc -l) benchmark.json files, $(du -sh "$work/target/criterion" | cut -f1)"
# Warm the page cache once for both tools so neither pays the other's cold reads.
"$critcmp" --target-dir "$work/target" base new > /dev/null
"$bin" compare base new --criterion-dir "$work/target/criterion" > /dev/null || true
for i in $(seq "$repeats"); do
  /usr/bin/time -f "critcmp         %e s wall  %U s user  %S s sys" \
    "$critcmp" --target-dir "$work/target" base new > "$work/critcmp.out"
  /usr/bin/time -f "analyze-trends  %e s wall  %U s user  %S s sys" \
    "$bin" compare base new --criterion-dir "$work/target/criterion" > "$work/analyze.out" || true
done
echo "rows: critcmp $(wc -l < "$work/critcmp.out"), analyze-trends $(wc -l < "$work/analyze.out")"
uptime
