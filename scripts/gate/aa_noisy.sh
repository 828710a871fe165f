#!/usr/bin/env bash
# One A/A gate in time mode on a machine made noisy on purpose, for BENCHMARKS.md ("Stopping
# what the budget cannot decide: measured"): the three-benchmark crate of quality_crate.sh
# (sum, xor, mul), `base` against `aa` (a comment only), with a busy loop pinned to CPU 1 for
# the whole gate. Prints the gate's wall time (the builds excluded: a short gate builds both
# sides first), its exit code, and per benchmark its status, rounds and early stop.
#
#   scripts/gate/aa_noisy.sh ANALYZE_TRENDS WORKDIR [GATE_ARGS...]
#
# ANALYZE_TRENDS is the binary under test (build main's and this branch's apart, so the two
# runs differ only in the tool). GATE_ARGS default to the gate's defaults.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 ANALYZE_TRENDS WORKDIR [GATE_ARGS...]" >&2; exit 2; }
bin=$(realpath "$1") work=$(realpath -m "$2")
shift 2
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/gate/quality_crate.sh
source "$here/scripts/gate/quality_crate.sh"
[[ -d $work/crate/.git ]] || make_quality_crate "$work/crate"
export CARGO_NET_OFFLINE=true RUST_BACKTRACE=0
unset CARGO_TARGET_DIR CRITERION_HOME
cd "$work/crate"
# Builds both sides into target/stackbench-gate (kept), so the timed gate measures only.
"$bin" gate --base base --head aa --rounds 2 --max-rounds 2 --out "$work/warm" \
    --results "$work/warm-results" -- --warm-up-time 0.1 --measurement-time 0.1 \
    > "$work/warm.log" 2>&1 || true
rm -rf "$work/out" "$work/results"
taskset -c 1 timeout 1200 sh -c 'while :; do :; done' &
hog=$!
trap 'kill "$hog" 2>/dev/null || true' EXIT
start=$(date +%s.%N)
set +e
"$bin" gate --base base --head aa --out "$work/out" --results "$work/results" "$@" \
    > "$work/gate.log" 2>&1
code=$?
set -e
end=$(date +%s.%N)
kill "$hog" 2>/dev/null || true
python3 - "$work/out/comparison.json" "$code" "$start" "$end" <<'PY'
import json, sys
path, code, start, end = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
doc = json.load(open(path))
rounds = {r["id"]: [f["change_percent"] for f in r["rounds"]] for r in doc["rounds"]}
stopped = {s["id"]: s for s in (doc.get("rounds_spread") or {}).get("stopped", [])}
print(f"exit {code}, {end - start:.0f} s, rounds run {doc['gate']['rounds_run']}, "
      f"calibration noise {doc['calibration']['noise_percent']:.2f} %")
for row in doc["comparisons"]:
    changes = ", ".join(f"{c:+.1f}" for c in rounds.get(row["id"], []))
    stop = stopped.get(row["id"])
    extra = f"; stopped: {stop['reason']}" if stop else ""
    print(f"  {row['id']}: {row['status']}, rounds {changes} %{extra}")
check = (doc.get("rounds_spread") or {}).get("calibration_check")
if check:
    print(f"  calibration check after round {check['after_round']}: median round sd "
          f"{check['round_sd_percent']:.1f} % ({check.get('warning') or 'within 2x'})")
PY
