#!/usr/bin/env bash
# Counting mode's figures for BENCHMARKS.md ("Counting mode", "In the gate"): the smallest
# regression it catches on a ~1,000-instruction routine, and what the A/A calibration costs.
#
# Writes a Criterion 0.8 crate into a new git repository (offline: cargo's cache must hold
# criterion 0.8) with one benchmark `add/<k>` per k in K: each sums 143 numbers (5
# instructions a step, plus Criterion's ~285 around the routine: about 1,000 instructions).
# Tag `base`; tag `aa` changes a comment only; tag `more` adds exactly k instructions to
# `add/<k>` (k `nop`s, one instruction each, in inline assembly). Then runs
#   analyze-trends gate --measure instructions --base base --head more   (default threshold 1 %)
# and prints each id's counts, change and verdict; with a second analyze-trends (one built
# before the calibration), the same gate's wall and CPU time with and without it, each binary
# run RUNS (3) times in turn after one warm-up run (so no run includes building the sides).
#
# usage: scripts/gate/counting_sensitivity.sh ANALYZE_TRENDS [ANALYZE_TRENDS_WITHOUT_AA]
#   SEED_TARGET=DIR   a target directory holding this crate's dependencies built in the bench
#                     profile (criterion 0.8), copied into the gate's side target directories
#                     first: a speed-up only.
#   K="0 1 5 9 10 11 20"  the added instructions, one benchmark each.
set -euo pipefail
source "$(dirname "$0")/quality_crate.sh"
with_aa=$(realpath "$1")
without_aa=${2:+$(realpath "$2")}
ks=${K:-0 1 5 9 10 11 20}
repo=$(mktemp -d)/sensitivity
trap 'rm -rf "$(dirname "$repo")"' EXIT
mkdir -p "$repo/benches" "$repo/src"
cd "$repo"
criterion08_manifest counting_sensitivity > Cargo.toml
echo 'pub fn nothing() {}' > src/lib.rs
# benches/work.rs with `extra(k)` as the body added to add/<k>'s routine.
write_bench() { # write_bench MODE (base|more)
    {
        echo 'use criterion::{Criterion, criterion_group, criterion_main};'
        echo 'use std::hint::black_box;'
        echo 'fn sum(n: u64) -> u64 { (0..n).fold(0u64, |a, x| a.wrapping_add(black_box(x))) }'
        echo '// One benchmark per k; the `more` commit adds k instructions to add/<k>.'
        echo 'fn benches(c: &mut Criterion) {'
        for k in $ks; do
            local extra=""
            if [[ $1 == more && $k -gt 0 ]]; then
                extra="unsafe { std::arch::asm!(\".rept $k\", \"nop\", \".endr\", options(nomem, nostack, preserves_flags)) };"
            fi
            echo "    c.bench_function(\"add/$k\", |b| b.iter(|| { $extra sum(black_box(143)) }));"
        done
        echo '}'
        echo 'criterion_group!(group, benches);'
        echo 'criterion_main!(group);'
    } > benches/work.rs
}
write_bench base
commit_base_and_aa '// One benchmark'
write_bench more
git commit -qam more && git tag more
git checkout -q base
if [[ -n ${SEED_TARGET:-} ]]; then
    for side in target-base target-head; do
        mkdir -p "target/stackbench-gate/$side"
        cp -a "$SEED_TARGET/." "target/stackbench-gate/$side"
    done
fi

gate() { # gate BINARY HEAD -> "W s wall, C s CPU, N s counting" (CPU: the gate and its
    # children, Valgrind's included, which a busy machine moves less than wall time; counting:
    # from the gate's "counting ..." line to its first "wrote ..." line, so no build);
    # comparison.json in out-HEAD, the gate's stderr, each line timestamped, in gate-HEAD.log
    local TIMEFORMAT='%R %U %S' times counting
    times=$({ time { "$1" gate --measure instructions --base base --head "$2" --out "out-$2" \
        --results "results-$2" 2>&1 >/dev/null || true; } |
        while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done \
            >"gate-$2.log"; } 2>&1)
    counting=$(awk '/gate: counting [0-9]+ benchmark/ {s = $1}
        / wrote / && !e {e = $1} END {printf "%.1f", e - s}' "gate-$2.log")
    awk -v c="$counting" '{printf "%.1f s wall, %.1f s CPU, %s s counting", $1, $2 + $3, c}' \
        <<<"$times"
}

echo "# warm-up (builds both sides): $(gate "$with_aa" more)"
echo "# analyze-trends gate --measure instructions --base base --head more"
printf '%-8s %8s %8s %9s  %s\n' id base head change verdict
jq -r '.counting.benchmarks[] | [.id, .base.ir, .head.ir,
        (.change_percent * 100 | round / 100), .verdict.verdict] | @tsv' out-more/comparison.json |
    while IFS=$'\t' read -r id base head change verdict; do
        printf '%-8s %8s %8s %+8.2f%%  %s\n' "$id" "$base" "$head" "$change" "$verdict"
    done
jq -r '.counting.calibration.benchmarks[] | select(.first_ir != .again_ir)
        | "A/A differs: \(.id) \(.first_ir) then \(.again_ir)"' out-more/comparison.json
echo "A/A: $(jq '[.counting.calibration.benchmarks[] | select(.first_ir == .again_ir)] | length' \
    out-more/comparison.json) of $(jq '.counting.calibration.benchmarks | length' \
    out-more/comparison.json) ids identical"

if [[ -n $without_aa ]]; then
    echo "# the same gate (base -> more), each binary ${RUNS:-3} times in turn; load: $(cut -d' ' -f1-3 /proc/loadavg)"
    for run in $(seq "${RUNS:-3}"); do
        echo "run $run: with A/A $(gate "$with_aa" more); without $(gate "$without_aa" more)"
    done
    echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
