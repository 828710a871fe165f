#!/usr/bin/env bash
# Measures stackbench's CPU tier beside its references in one run, with the same thread
# count: f32 and f64 GEMM at 1024, 2048 and 4096, both stackbench's own kernels
# (gemm/cpu/<dtype>, the `gemm` crate) and the CPU BLAS it loads (gemm/cpu/blas_<dtype>),
# against numpy's matmul (its bundled OpenBLAS); and the triad on arrays at least 4x the
# last-level cache against a C OpenMP triad compiled here. Prints each figure beside the
# reference with the ratio; a GEMM passes when stackbench's best figure (own or BLAS)
# reaches 95 % of numpy's, the triad when stackbench's does.
#
# Usage: scripts/compare_reference.sh [ROUNDS]   (default 3 rounds; about 15 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."

threads=$(nproc)
rounds="${1:-3}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS]" >&2; exit 2; }
venv=.venv-reference
gemm_sizes=(1024 2048 4096)
gemm_dtypes=f32,f64
gemm_alternation=""
for s in "${gemm_sizes[@]}"; do
    gemm_alternation="${gemm_alternation:+$gemm_alternation|}${s}x${s}x${s}"
done
# Absolute: cargo runs a bench executable in its own package's directory (crates/benches),
# so a relative CRITERION_HOME would land there, not here.
out="$PWD/target/reference"
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
    OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$venv/bin/python" scripts/reference/numpy_matmul.py \
        --dtypes "$gemm_dtypes" "${gemm_sizes[@]}" | tee -a "$out/numpy.txt"
    echo "==> round $round/$rounds: stackbench gemm/cpu/{f32,f64,blas_f32,blas_f64}"
    STACKBENCH_SUITE=full cargo bench --quiet --bench gemm -- --noplot \
        "^gemm/cpu/(blas_)?(${gemm_dtypes//,/|})/(${gemm_alternation})\$" >"$out/gemm.log" 2>&1 ||
        { cat "$out/gemm.log" >&2; exit 1; }
    # A BLAS id skipped (no library) says so once; its figure is then missing below.
    grep -m1 '^skipped gemm/cpu/blas_' "$out/gemm.log" || true
    python3 scripts/reference/criterion_median.py "$CRITERION_HOME" '^gemm/cpu/(blas_)?f(32|64)/' | tee -a "$out/stackbench_gemm.txt"
    echo "==> round $round/$rounds: C OpenMP triad, $triad_size per array ($threads threads, OMP_PROC_BIND=true)"
    OMP_NUM_THREADS=$threads OMP_PROC_BIND=true "$out/stream_triad" "$triad_bytes" 50 | tee -a "$out/c_triad.txt"
    echo "==> round $round/$rounds: stackbench $triad_id"
    cargo bench --quiet --bench memory_bandwidth -- --noplot "^${triad_id}\$" >"$out/triad.log" 2>&1
    python3 scripts/reference/criterion_median.py "$CRITERION_HOME" "^${triad_id}\$" | tee -a "$out/stackbench_triad.txt"
done

echo
echo "comparison over $rounds rounds (GEMM: median of per-round medians; triad: fastest pass;"
echo "pass = stackbench >= 95 % of the reference)"
# Which BLAS the gemm/cpu/blas_* ids ran, as their notes name it.
python3 - "$CRITERION_HOME/stackbench/targets/gemm.json" <<'PY' || true
import json, sys
for id_, entry in sorted(json.load(open(sys.argv[1]))["benchmarks"].items()):
    if "/blas_" in id_:
        notes = entry.get("notes", {})
        print(f"BLAS: {notes.get('kernel', entry.get('reason', '?'))}, threads {notes.get('threads', '?')}")
        break
PY
python3 - "$out" "$triad_id" "$gemm_dtypes" "${gemm_sizes[@]}" <<'PY'
import sys
out, triad_id, dtypes, sizes = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4:]
def pairs(path, key):
    """Median over rounds of each benchmark's per-round figure, with the rounds' spread."""
    rounds = {}
    for line in open(path):
        parts = line.split()
        if key in parts:
            rounds.setdefault(parts[0], []).append(float(parts[parts.index(key) + 1]))
    return {name: (sorted(v)[len(v) // 2], min(v), max(v)) for name, v in rounds.items()}
def row(name, mine, ref, unit, what, judged=True):
    ok = mine[0] >= 0.95 * ref[0]
    verdict = ('pass' if ok else 'FAIL') if judged else '-'
    print(f"{name:<36}{mine[0]:>8.1f} {unit}{ref[0]:>8.1f} {unit}{mine[0] / ref[0]:>8.3f} {verdict:>4}"
          f"  ({what}; rounds: stackbench {mine[1]:.1f}-{mine[2]:.1f}, reference {ref[1]:.1f}-{ref[2]:.1f})")
    return ok
numpy = pairs(f"{out}/numpy.txt", "median_gflops")
ours = pairs(f"{out}/stackbench_gemm.txt", "gflops")
failed = False
print(f"{'benchmark':<36}{'stackbench':>11}{'reference':>11}{'ratio':>8}")
# Every precision and size asked for: one without a figure from numpy, or from both of
# stackbench's paths, is a failure, never skipped. The own kernels' and the BLAS's rows are
# printed; the verdict is on the best of the two (the `best` row).
for dtype in dtypes:
    for n in sizes:
        shape = f"{n}x{n}x{n}"
        if f"{dtype}/{n}" not in numpy:
            print(f"gemm/cpu/{dtype}/{shape} missing from numpy's output"); failed = True; continue
        ref = numpy[f"{dtype}/{n}"]
        found = {}
        for path in (dtype, f"blas_{dtype}"):
            key = f"gemm/cpu/{path}/{shape}"
            if key in ours:
                found[key] = ours[key]
                row(key, ours[key], ref, "GF", "numpy matmul", judged=False)
            else:
                print(f"{key:<36} missing from stackbench's output (skipped or failed: see gemm.log)")
        if not found:
            failed = True; continue
        best_key = max(found, key=lambda k: found[k][0])
        failed |= not row(f"  best: {best_key.split('/')[2]}", found[best_key], ref, "GF", "numpy matmul")
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
