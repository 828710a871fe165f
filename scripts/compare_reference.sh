#!/usr/bin/env bash
# Measures stackbench's CPU tier beside its references in one run, with the same thread
# count: f32 GEMM at 1024, 2048 and 4096 against numpy's matmul (OpenBLAS), and the triad
# on arrays at least 4x the last-level cache against a C OpenMP triad compiled here.
# Prints each pair, the ratio, and whether stackbench reaches 95 % of the reference.
#
# Usage: scripts/compare_reference.sh            (takes about 3 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."

threads=$(nproc)
venv=.venv-reference
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

echo "==> numpy matmul (OpenBLAS, $threads threads)"
OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$venv/bin/python" scripts/reference/numpy_matmul.py 1024 2048 4096 | tee "$out/numpy.txt"
echo "==> stackbench gemm/cpu/f32"
STACKBENCH_SUITE=full cargo bench --quiet --bench gemm -- --noplot \
    '^gemm/cpu/f32/(1024x1024x1024|2048x2048x2048|4096x4096x4096)$' >"$out/gemm.log" 2>&1
python3 scripts/reference/criterion_median.py "$CRITERION_HOME" '^gemm/cpu/f32/' | tee "$out/stackbench_gemm.txt"
echo "==> C OpenMP triad, $triad_size per array ($threads threads, OMP_PROC_BIND=true)"
OMP_NUM_THREADS=$threads OMP_PROC_BIND=true "$out/stream_triad" "$triad_bytes" 50 | tee "$out/c_triad.txt"
echo "==> stackbench $triad_id"
cargo bench --quiet --bench memory_bandwidth -- --noplot "^${triad_id}\$" >"$out/triad.log" 2>&1
python3 scripts/reference/criterion_median.py "$CRITERION_HOME" "^${triad_id}\$" | tee "$out/stackbench_triad.txt"

echo
echo "comparison (median vs median; pass = stackbench >= 95 % of the reference)"
python3 - "$out" "$triad_id" <<'PY'
import sys
out, triad_id = sys.argv[1], sys.argv[2]
def pairs(path, key):
    rows = {}
    for line in open(path):
        parts = line.split()
        if key in parts:
            rows[parts[0]] = float(parts[parts.index(key) + 1])
    return rows
numpy = pairs(f"{out}/numpy.txt", "median_gflops")
ours = pairs(f"{out}/stackbench_gemm.txt", "gflops")
failed = False
print(f"{'benchmark':<34}{'stackbench':>12}{'reference':>12}{'ratio':>8}")
for n, ref in numpy.items():
    key = f"gemm/cpu/f32/{n}x{n}x{n}"
    mine = ours.get(key)
    if mine is None:
        print(f"{key:<34} missing from stackbench's output"); failed = True; continue
    ok = mine >= 0.95 * ref
    failed |= not ok
    print(f"{key:<34}{mine:>9.1f} GF{ref:>9.1f} GF{mine / ref:>8.3f} {'pass' if ok else 'FAIL'}  (numpy matmul)")
ref = pairs(f"{out}/c_triad.txt", "median_gbps")["median_gbps"]
mine = pairs(f"{out}/stackbench_triad.txt", "gbps")[triad_id]
ok = mine >= 0.95 * ref
failed |= not ok
print(f"{triad_id:<34}{mine:>9.2f} GB{ref:>9.2f} GB{mine / ref:>8.3f} {'pass' if ok else 'FAIL'}  (C OpenMP triad)")
sys.exit(1 if failed else 0)
PY
