#!/usr/bin/env bash
# Times the full history report over 50 runs x 1,000 benchmarks (100 samples each), with
# one step change injected in 20 benchmarks at run 40.
# Usage: scripts/analyzer/time_report.sh [WORKDIR] [REPEATS]
set -euo pipefail
work=${1:-/tmp/stackbench-report-timing}
repeats=${2:-3}
cd "$(dirname "$0")/../.."
cargo build --release --quiet --bin analyze-trends
bin=$PWD/target/release/analyze-trends
if [ ! -d "$work/runs" ]; then
  "$bin" simulate history --results "$work" --runs 50 --benchmarks 1000 --stepped 20 \
    --step-at 40 --samples 100 --seed 9
fi
echo "runs: $(ls "$work/runs" | wc -l) files, $(du -sh "$work/runs" | cut -f1)"
for i in $(seq "$repeats"); do
  /usr/bin/time -f "report  %e s wall  %U s user  %S s sys  %M KB max RSS" "$bin" "$work" > "$work/terminal.txt"
done
head -4 "$work/terminal.txt"
ls -la "$work/reports"
