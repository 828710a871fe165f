#!/usr/bin/env bash
# Measures stackbench's CPU tier beside its references in one run, with the same thread
# count: f32 GEMM at 1024, 2048 and 4096 against numpy's matmul (OpenBLAS), and the triad
# on arrays at least 4x the last-level cache against a C OpenMP triad compiled here.
# Prints each pair, the ratio, and whether stackbench reaches 95 % of the reference.
#
# Usage: scripts/compare_reference.sh [ROUNDS]   (default 3 rounds; about 4 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."

threads=$(nproc)
rounds="${1:-3}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS]" >&2; exit 2; }
venv=.venv-reference
gemm_sizes=(1024 2048 4096)
gemm_alternation=""
for s in "${gemm_sizes[@]}"; do
    gemm_alternation="${gemm_alternation:+$gemm_alternation|}${s}x${s}x${s}"
done
out=target/reference
mkdir -p "$out"
export CRITERION_HOME="$out/criterion"

if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import numpy" 2>/dev/null; then
    echo "==> installing numpy into $venv"
    "$venv/bin/pip" install --quiet numpy
fi
echo "==> compiling the C triad"
gcc -O3 -march=native -fopenmp scripts/reference/stream_triad.c -o "$out/stream_triad" -lm

echo "==> building stackbench's bench targets"
cargo bench --no-run --bench gemm --bench memory_bandwidth >/dev/null 2>&1

# The triad size stackbench's quick suite uses for "at least 4x LLC" (its largest).
triad_id=$(STACKBENCH_SUITE=quick cargo bench --quiet --bench memory_bandwidth -- --list 'cpu/triad/' 2>/dev/null |
    sed -n 's/: benchmark$//p' | tail -n 1)
triad_size=${triad_id##*/}
triad_bytes=$(python3 -c "
import re,sys
m=re.fullmatch(r'(\d+)(GiB|MiB|KiB|B)', '$triad_size')
print(int(m[1]) * {'GiB':1<<30,'MiB':1<<20,'KiB':1<<10,'B':1}[m[2]])")

# Each pair is measured in alternation over several rounds: memory bandwidth on shared
# (virtualised) hosts drifts by tens of percent within minutes, so a single back-to-back
# pair would compare two different machines. GEMM compares the median of per-round
# medians; the triad compares the fastest pass of all rounds on each side.
rm -f "$out"/numpy.txt "$out"/stackbench_gemm.txt "$out"/c_triad.txt "$out"/stackbench_triad.txt
for round in $(seq 1 "$rounds"); do
    echo "==> round $round/$rounds: numpy matmul (OpenBLAS, $threads threads)"
    OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$venv/bin/python" scripts/reference/numpy_matmul.py "${gemm_sizes[@]}" | tee -a "$out/numpy.txt"
    echo "==> round $round/$rounds: stackbench gemm/cpu/f32"
    STACKBENCH_SUITE=full cargo bench --quiet --bench gemm -- --noplot \
        "^gemm/cpu/f32/(${gemm_alternation})\$" >"$out/gemm.log" 2>&1
    python3 scripts/reference/criterion_median.py "$CRITERION_HOME" '^gemm/cpu/f32/' | tee -a "$out/stackbench_gemm.txt"
    echo "==> round $round/$rounds: C OpenMP triad, $triad_size per array ($threads threads, OMP_PROC_BIND=true)"
    OMP_NUM_THREADS=$threads OMP_PROC_BIND=true "$out/stream_triad" "$triad_bytes" 50 | tee -a "$out/c_triad.txt"
    echo "==> round $round/$rounds: stackbench $triad_id"
    cargo bench --quiet --bench memory_bandwidth -- --noplot "^${triad_id}\$" >"$out/triad.log" 2>&1
    python3 scripts/reference/criterion_median.py "$CRITERION_HOME" "^${triad_id}\$" | tee -a "$out/stackbench_triad.txt"
done

echo
echo "comparison over $rounds rounds (GEMM: median of per-round medians; triad: fastest pass;"
echo "pass = stackbench >= 95 % of the reference)"
python3 - "$out" "$triad_id" "${gemm_sizes[@]}" <<'PY'
import sys
out, triad_id, sizes = sys.argv[1], sys.argv[2], sys.argv[3:]
def pairs(path, key):
    """Median over rounds of each benchmark's per-round figure, with the rounds' spread."""
    rounds = {}
    for line in open(path):
        parts = line.split()
        if key in parts:
            rounds.setdefault(parts[0], []).append(float(parts[parts.index(key) + 1]))
    return {name: (sorted(v)[len(v) // 2], min(v), max(v)) for name, v in rounds.items()}
def row(name, mine, ref, unit, what):
    ok = mine[0] >= 0.95 * ref[0]
    print(f"{name:<34}{mine[0]:>8.1f} {unit}{ref[0]:>8.1f} {unit}{mine[0] / ref[0]:>8.3f} {'pass' if ok else 'FAIL'}"
          f"  ({what}; rounds: stackbench {mine[1]:.1f}-{mine[2]:.1f}, reference {ref[1]:.1f}-{ref[2]:.1f})")
    return ok
numpy = pairs(f"{out}/numpy.txt", "median_gflops")
ours = pairs(f"{out}/stackbench_gemm.txt", "gflops")
failed = False
print(f"{'benchmark':<34}{'stackbench':>11}{'reference':>11}{'ratio':>8}")
# Every size asked for: one without a figure on either side is a failure, never skipped.
for n in sizes:
    key = f"gemm/cpu/f32/{n}x{n}x{n}"
    if n not in numpy:
        print(f"{key:<34} missing from numpy's output"); failed = True; continue
    ref = numpy[n]
    if key not in ours:
        print(f"{key:<34} missing from stackbench's output"); failed = True; continue
    failed |= not row(key, ours[key], ref, "GF", "numpy matmul")
# Bandwidth: the fastest pass on each side (BabelStream's statistic for peak bandwidth;
# a neighbour on a shared host can only slow a pass down), best over the rounds.
ref = pairs(f"{out}/c_triad.txt", "best_gbps").get("best_gbps")
mine = pairs(f"{out}/stackbench_triad.txt", "best_gbps").get(triad_id)
best = lambda r: (r[2], r[1], r[2])
if ref is None or mine is None:
    print(f"{triad_id:<34} missing from {'the C triad' if ref is None else 'stackbench'}'s output"); failed = True
else:
    failed |= not row(triad_id, best(mine), best(ref), "GB", "C OpenMP triad, best pass")
sys.exit(1 if failed else 0)
PY
