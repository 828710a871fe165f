#!/usr/bin/env bash
# Gate quality on this machine, a benchmark rather than a timed test (BENCHMARKS.md, "Gate
# quality on this machine"). Builds a small Criterion crate in a temporary git repository with
# three benchmarks and two head commits: an A/A commit (a comment only) and a commit making
# `sum` do 8 % more work. Gates each pair REPEATS times and, for comparison, does two plain
# `cargo bench` runs (Criterion's default timing) + `analyze-trends compare` REPEATS times.
# Prints false-alarm rate, power and wall time per run of each method as JSON lines and a
# summary.
#
#   scripts/gate/quality.sh [REPEATS (default 5)] [WORKDIR (default a new temp dir)]
#
# Needs cargo's cache to hold criterion 0.8 (it builds offline): run from the stackbench
# checkout after `cargo build`.
set -euo pipefail

repeats=${1:-5}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/gate/quality_crate.sh
source "$here/scripts/gate/quality_crate.sh"
prepare_quality_crate "$here" "$work" slow8

results="$work/results.jsonl"
: > "$results"

judge() { # method pair rep rc seconds comparison.json
    python3 - "$@" >> "$results" <<'PY'
import json, sys
method, pair, rep, rc, seconds, path = sys.argv[1:]
c = json.load(open(path))
flagged = sorted(r["id"] for r in c["comparisons"] if r["status"] == "degraded")
print(json.dumps({"method": method, "pair": pair, "rep": int(rep), "exit": int(rc),
                  "seconds": float(seconds), "degraded": flagged}))
PY
}

for rep in $(seq 1 "$repeats"); do
    for pair in aa slow8; do
        start=$(date +%s%N)
        rc=0
        "$bin" gate --base base --head "$pair" --out "$work/gate-$pair-$rep" \
            --results "$work/runs" > /dev/null 2> "$work/gate-$pair-$rep.log" || rc=$?
        end=$(date +%s%N)
        judge gate "$pair" "$rep" "$rc" "$(( (end - start) / 1000000 ))e-3" "$work/gate-$pair-$rep/comparison.json"
    done
done

# Plain runs: the same executables the gate built, Criterion's default timing, one run per
# side, then `compare`. Wall time counts the two runs (no build).
home="$work/plain"
for side in base aa slow8; do
    git worktree add -q --detach "$work/wt-$side" "$side"
    # Start from the gate's compiled dependencies: only the bench crate is rebuilt.
    rm -rf "$work/target-plain-$side"
    cp -a "$repo/target/stackbench-gate/target-base" "$work/target-plain-$side"
    (cd "$work/wt-$side" && CARGO_TARGET_DIR="$work/target-plain-$side" cargo bench --no-run --quiet 2>/dev/null)
done
# The newest `work-*`: the copied directory may also hold the gate's build of another path.
exe() { ls -t "$work/target-plain-$1"/release/deps/work-* | grep -v '\.d$' | head -1; }
for rep in $(seq 1 "$repeats"); do
    for pair in aa slow8; do
        start=$(date +%s%N)
        (cd "$work/wt-base" && CRITERION_HOME="$home" "$(exe base)" --bench --save-baseline "b-$pair-$rep" --noplot > /dev/null 2>&1)
        (cd "$work/wt-$pair" && CRITERION_HOME="$home" "$(exe "$pair")" --bench --save-baseline "h-$pair-$rep" --noplot > /dev/null 2>&1)
        end=$(date +%s%N)
        rc=0
        "$bin" compare "b-$pair-$rep" "h-$pair-$rep" --criterion-dir "$home" --results "$work/no-history" \
            --format json > "$work/plain-$pair-$rep.json" 2>/dev/null || rc=$?
        judge plain "$pair" "$rep" "$rc" "$(( (end - start) / 1000000 ))e-3" "$work/plain-$pair-$rep.json"
    done
done
for side in base aa slow8; do git worktree remove --force "$work/wt-$side"; done

python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for method in ("gate", "plain"):
    aa = [r for r in rows if r["method"] == method and r["pair"] == "aa"]
    slow = [r for r in rows if r["method"] == method and r["pair"] == "slow8"]
    # Exit 3 (unsure) is neither a false alarm nor a pass: counted on its own.
    false_alarms = sum(1 for r in aa if r["exit"] not in (0, 3))
    unsure = [sum(1 for r in rs if r["exit"] == 3) for rs in (aa, slow)]
    power = sum(1 for r in slow if r["degraded"] == ["sum"])
    others = sum(1 for r in slow if set(r["degraded"]) - {"sum"})
    secs = [r["seconds"] for r in aa + slow]
    print(f"{method}: A/A false alarms {false_alarms}/{len(aa)} (unsure {unsure[0]}); 8 % slowdown flagged alone "
          f"{power}/{len(slow)} (unsure {unsure[1]}; another benchmark flagged in {others}); wall time per run "
          f"median {sorted(secs)[len(secs)//2]:.1f} s (min {min(secs):.1f}, max {max(secs):.1f})")
PY
echo "raw results: $results"
