#!/usr/bin/env bash
# The gate's verdicts under two machine conditions, a benchmark rather than a timed test
# (BENCHMARKS.md, "Verdicts a busy machine cannot change"). Builds the three-benchmark crate of
# scripts/gate/quality.sh (sum, xor, mul; an A/A commit changing a comment; a commit making
# `sum` do 8 % more work), then gates each pair REPEATS times in one measure and condition:
#
#   scripts/gate/noise_quality.sh --measure time|instructions --condition quiet|hog \
#       [--repeats 5] [--workdir DIR] [--plain] [-- GATE_ARGS...]
#
# Conditions:
#   quiet  the gate's bench executables pinned to the last CPU (`--cpus`), and every other
#          process on this machine moved off it every 0.5 s (`taskset -p`), as pyperf advises;
#   hog    a busy loop on every CPU for the whole run (nothing pinned): the shared CI host.
# --plain also times two plain `cargo bench` runs of both sides (Criterion's default timing) in
# the same condition, the reference for the gate's wall time.
#
# Each gate is one JSON line in WORKDIR/results-<measure>-<condition>.jsonl: pair, rep, exit
# code, seconds, degraded and unsure ids; the summary line reads: A/A false alarms (exit 1),
# A/A unsure (exit 3), 8 % caught alone (exit 1, only `sum` degraded), 8 % unsure (exit 3),
# wrong (anything else), and wall time.
set -euo pipefail

measure=time condition=quiet repeats=5 work="" plain=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --measure) measure=$2; shift 2 ;;
        --condition) condition=$2; shift 2 ;;
        --repeats) repeats=$2; shift 2 ;;
        --workdir) work=$2; shift 2 ;;
        --plain) plain=1; shift ;;
        --) shift; break ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$measure" in time | instructions) ;; *) echo "--measure is time or instructions" >&2; exit 2 ;; esac
case "$condition" in quiet | hog) ;; *) echo "--condition is quiet or hog" >&2; exit 2 ;; esac
work=${work:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")/../.." && pwd)
# ANALYZE_TRENDS: a binary to use instead of this checkout's debug build (kept apart, so a
# rebuild while the script runs does not change the tool under measurement).
if [[ -n ${ANALYZE_TRENDS:-} ]]; then
    bin=$ANALYZE_TRENDS
else
    cargo build --quiet --bin analyze-trends --manifest-path "$here/Cargo.toml"
    bin="$here/target/debug/analyze-trends"
fi
export CARGO_NET_OFFLINE=true RUST_BACKTRACE=0
unset CARGO_TARGET_DIR CRITERION_HOME

# Every CPU of the machine, whatever this shell inherited (an earlier run's pinning must not
# shrink the next one's machine).
cpus=$(nproc --all)
taskset -a -c -p "0-$((cpus - 1))" $$ > /dev/null
last=$((cpus - 1))
helpers=()
cleanup() { for p in "${helpers[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
gate_extra=()
if [[ $condition == hog ]]; then
    for _ in $(seq 1 "$cpus"); do (while :; do :; done) & helpers+=($!); done
else
    gate_extra=(--cpus "$last")
    others=$(seq -s, 0 $((last - 1)))
    me=$$
    (while :; do
        # This script's own process tree (the gate, which pins its bench executables to the
        # measurement CPU itself) keeps every CPU; everything else is moved off that CPU.
        ours=$(ps -e -o pid=,ppid= | awk -v root="$me" '
            { parent[$1] = $2 }
            END { for (p in parent) { q = p; while (q in parent && q != root && q > 1) q = parent[q]; if (q == root) print p } }')
        for pid in $(ps -e -o pid=); do
            [[ $pid == "$me" ]] && continue
            grep -qx "$pid" <<< "$ours" && continue
            taskset -a -c -p "$others" "$pid" >/dev/null 2>&1 || true
        done
        sleep 0.5
    done) & helpers+=($!)
fi

# The crate and its commits: the same as scripts/gate/quality.sh (made once per workdir).
repo="$work/crate"
# shellcheck source=scripts/gate/quality_crate.sh
source "$here/scripts/gate/quality_crate.sh"
[[ -d $repo/.git ]] || make_quality_crate "$repo"
cd "$repo"

# Warm both sides' builds once, so the timed gates rebuild nothing but the bench crate.
"$bin" gate --base base --head slow8 --rounds 2 --max-rounds 2 --out "$work/warm" \
    --results "$work/runs" -- --warm-up-time 0.1 --measurement-time 0.1 --sample-size 10 \
    > /dev/null 2>&1 || true

results="$work/results-$measure-$condition.jsonl"
: > "$results"
judge() { # pair rep rc seconds comparison.json
    python3 - "$@" >> "$results" <<'PY'
import json, sys
pair, rep, rc, seconds, path = sys.argv[1:]
try:
    c = json.load(open(path))
    rows = c["comparisons"]
except (OSError, ValueError, KeyError):
    rows = []
print(json.dumps({"pair": pair, "rep": int(rep), "exit": int(rc), "seconds": float(seconds),
                  "degraded": sorted(r["id"] for r in rows if r["status"] == "degraded"),
                  "unsure": sorted(r["id"] for r in rows if r["status"] == "inconclusive"),
                  "statuses": {r["id"]: r["status"] for r in rows}}))
PY
}

for rep in $(seq 1 "$repeats"); do
    for pair in aa slow8; do
        out="$work/gate-$measure-$condition-$pair-$rep"
        start=$(date +%s%N)
        rc=0
        "$bin" gate --base base --head "$pair" --measure "$measure" "${gate_extra[@]}" \
            --out "$out" --results "$work/runs" "$@" > /dev/null 2> "$out.log" || rc=$?
        end=$(date +%s%N)
        judge "$pair" "$rep" "$rc" "$(( (end - start) / 1000000 ))e-3" "$out/comparison.json"
        tail -1 "$results"
    done
done

plain_results="$work/plain-$condition.jsonl"
if [[ $plain == 1 ]]; then
    : > "$plain_results"
    pin=()
    [[ $condition == quiet ]] && pin=(taskset -c "$last")
    home="$work/plain-home"
    for side in base aa slow8; do
        rm -rf "$work/wt-$side"
        git worktree prune
        git worktree add -q --detach "$work/wt-$side" "$side"
        rm -rf "$work/target-plain-$side"
        cp -a "$repo/target/stackbench-gate/target-base" "$work/target-plain-$side"
        (cd "$work/wt-$side" && CARGO_TARGET_DIR="$work/target-plain-$side" cargo bench --no-run --quiet 2>/dev/null)
    done
    exe() { ls -t "$work/target-plain-$1"/release/deps/work-* | grep -v '\.d$' | head -1; }
    for rep in $(seq 1 "$repeats"); do
        for pair in aa slow8; do
            start=$(date +%s%N)
            (cd "$work/wt-base" && CRITERION_HOME="$home" "${pin[@]}" "$(exe base)" --bench --noplot > /dev/null 2>&1)
            (cd "$work/wt-$pair" && CRITERION_HOME="$home" "${pin[@]}" "$(exe "$pair")" --bench --noplot > /dev/null 2>&1)
            end=$(date +%s%N)
            printf '{"pair": "%s", "rep": %d, "seconds": %s}\n' "$pair" "$rep" "$(( (end - start) / 1000000 ))e-3" >> "$plain_results"
        done
    done
    for side in base aa slow8; do git worktree remove --force "$work/wt-$side"; done
fi

python3 - "$results" "$measure" "$condition" "$plain_results" "$plain" <<'PY'
import json, statistics, sys
path, measure, condition, plain_path, plain = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
aa = [r for r in rows if r["pair"] == "aa"]
slow = [r for r in rows if r["pair"] == "slow8"]
aa_fail = sum(r["exit"] == 1 for r in aa)
aa_unsure = sum(r["exit"] == 3 for r in aa)
caught = sum(r["exit"] == 1 and r["degraded"] == ["sum"] for r in slow)
slow_unsure = sum(r["exit"] == 3 and not r["degraded"] for r in slow)
wrong = len(slow) - caught - slow_unsure + sum(r["exit"] not in (0, 3) for r in aa)
secs = sorted(r["seconds"] for r in rows)
line = (f"{measure}/{condition}: A/A false alarms {aa_fail}/{len(aa)} (unsure, exit 3: {aa_unsure}); "
        f"8 % caught alone {caught}/{len(slow)} (unsure, exit 3: {slow_unsure}); wrong {wrong}; "
        f"wall time per gate median {statistics.median(secs):.1f} s (min {secs[0]:.1f}, max {secs[-1]:.1f})")
if plain == "1":
    p = sorted(json.loads(l)["seconds"] for l in open(plain_path))
    line += (f"; two plain runs median {statistics.median(p):.1f} s: gate = "
             f"{statistics.median(secs) / statistics.median(p):.2f}x")
print(line)
PY
echo "raw results: $results"
