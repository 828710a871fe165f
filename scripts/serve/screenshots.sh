#!/usr/bin/env bash
# Screenshots of each dashboard page for docs/ and the README (not a test: the Chromium
# tests check the pages; this only pictures them).
#
# With `stackbench serve` available, it serves RESULTS on a localhost port and takes the
# runs page, the newest run, one benchmark's history, the comparisons and the hardware
# matrix. Without it, it pictures the same pages as report.html shows them.
#
# Usage: scripts/serve/screenshots.sh [RESULTS_DIR] [OUT_DIR]
#   RESULTS_DIR  a results directory with runs (default: a simulated history in a temp dir)
#   OUT_DIR      where the PNGs go (default: docs/screenshots)
# Environment: STACKBENCH_BIN_DIR (default target/debug, built if missing),
#   CHROMIUM (default chromium), PORT (default 18765).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${2:-$root/docs/screenshots}"
bin="${STACKBENCH_BIN_DIR:-${CARGO_TARGET_DIR:-$root/target}/debug}"
chromium="${CHROMIUM:-chromium}"
port="${PORT:-18765}"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ ! -x "$bin/analyze-trends" ] || [ ! -x "$bin/stackbench" ]; then
  (cd "$root" && cargo build --bins)
fi
results="${1:-}"
if [ -z "$results" ]; then
  results="$work/results"
  "$bin/analyze-trends" simulate history --results "$results" --runs 40 --benchmarks 12 --seed 7 >/dev/null
fi
mkdir -p "$out"

# shot NAME URL [HEIGHT]: one page, after its scripts ran, at 1280 px wide.
shot() {
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$work/profile" --window-size="1280,${3:-1400}" \
    --virtual-time-budget=8000 --screenshot="$out/$1.png" "$2" >/dev/null 2>&1
  echo "wrote $out/$1.png"
}

if "$bin/stackbench" serve --help >/dev/null 2>&1; then
  "$bin/stackbench" serve --results "$results" --bind "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
  server_pid=$!
  base="http://127.0.0.1:$port"
  for _ in $(seq 1 100); do
    if python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1])" "$base/api/runs" 2>/dev/null; then break; fi
    sleep 0.1
  done
  # The newest run and its first benchmark, from the run files (URL-encoded).
  read -r run bench < <(python3 - "$results/runs" <<'PY'
import json, pathlib, sys, urllib.parse
runs = [json.loads(p.read_text()) for p in pathlib.Path(sys.argv[1]).glob("*.json")]
newest = max(runs, key=lambda r: r["created_unix_ms"])
quote = lambda s: urllib.parse.quote(s, safe="")
print(quote(newest["run_id"]), quote(newest["benchmarks"][0]["id"]))
PY
  )
  shot runs "$base/"
  shot run "$base/runs/$run" 2400
  shot history "$base/history/$bench"
  shot comparisons "$base/comparisons" 900
  shot hardware "$base/hardware"
else
  echo "stackbench serve is not available: picturing report.html instead" >&2
  "$bin/analyze-trends" report "$results" >/dev/null || [ $? -eq 1 ]
  report="file://$results/reports/report.html"
  shot report "$report" 3000
  shot report-history "$report#histories" 1400
fi
