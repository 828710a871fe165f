#!/usr/bin/env bash
# Measures stackbench's CPU INT8 GEMM (gemm/cpu/int8, int8 x int8 -> int32) beside
# torch._int_mm on the CPU (oneDNN), in one run, with the same thread count, alternating
# the two over several rounds (as compare_reference.sh does for f32: shared hosts drift
# within minutes). Prints each pair in TOPS, the ratio (median of per-round medians) and
# whether stackbench reaches the issue's goal of 0.8x the reference.
#
# Usage: scripts/compare_int8_reference.sh [ROUNDS] [SIZES...]
#   (default 3 rounds of 512 1024 2048 4096; torch from .venv-components, built by
#   ci/setup_python_env.sh, or the interpreter STACKBENCH_PYTHON names)
set -euo pipefail
cd "$(dirname "$0")/.."

threads=$(nproc)
rounds="${1:-3}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS] [SIZES...]" >&2; exit 2; }
shift || true
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(512 1024 2048 4096)
python="${STACKBENCH_PYTHON:-.venv-components/bin/python}"
if ! "$python" -c "import torch" 2>/dev/null; then
    echo "no torch in $python: run ci/setup_python_env.sh or set STACKBENCH_PYTHON" >&2
    exit 2
fi
out=target/reference-int8
mkdir -p "$out"
export CRITERION_HOME="$out/criterion"
shapes=()
alternation=""
for s in "${sizes[@]}"; do
    [[ "$s" =~ ^[1-9][0-9]*$ ]] || { echo "size '$s' is not a positive integer" >&2; exit 2; }
    shapes+=("${s}x${s}x${s}")
    alternation="${alternation:+$alternation|}${s}x${s}x${s}"
done

echo "==> building stackbench's gemm bench target"
cargo bench --no-run --bench gemm >/dev/null 2>&1

rm -f "$out"/torch.txt "$out"/stackbench.txt
for round in $(seq 1 "$rounds"); do
    echo "==> round $round/$rounds: torch._int_mm ($threads threads)"
    OMP_NUM_THREADS=$threads "$python" scripts/reference/torch_int_mm.py "$threads" "${shapes[@]}" | tee -a "$out/torch.txt"
    echo "==> round $round/$rounds: stackbench gemm/cpu/int8"
    STACKBENCH_SUITE=full cargo bench --quiet --bench gemm -- --noplot \
        "^gemm/cpu/int8/(${alternation})\$" >"$out/gemm.log" 2>&1 || { cat "$out/gemm.log" >&2; exit 1; }
    python3 scripts/reference/criterion_median.py "$CRITERION_HOME" '^gemm/cpu/int8/' | tee -a "$out/stackbench.txt"
done
grep -m1 '^#' "$out/torch.txt" || true

echo
echo "comparison over $rounds rounds (median of per-round medians; goal: stackbench >= 0.8x torch)"
python3 - "$out" "${shapes[@]}" <<'PY'
import sys
out, shapes = sys.argv[1], sys.argv[2:]
def rounds(path, key, scale):
    found = {}
    for line in open(path):
        parts = line.split()
        if key in parts:
            found.setdefault(parts[0], []).append(float(parts[parts.index(key) + 1]) * scale)
    return {name: (sorted(v)[len(v) // 2], min(v), max(v)) for name, v in found.items()}
torch = rounds(f"{out}/torch.txt", "median_tops", 1.0)
# criterion_median.py prints elements per ns (= 1e9 ops/s) as "gflops": /1000 is TOPS.
ours = rounds(f"{out}/stackbench.txt", "gflops", 1e-3)
below = False
print(f"{'benchmark':<30}{'stackbench':>12}{'torch':>10}{'ratio':>8}")
# Every shape asked for: one without a figure on either side is a failure, never skipped.
for shape in shapes:
    key = f"gemm/cpu/int8/{shape}"
    if shape not in torch:
        print(f"{key:<30} missing from torch's output"); below = True; continue
    ref = torch[shape]
    if key not in ours:
        print(f"{key:<30} missing from stackbench's output"); below = True; continue
    mine = ours[key]
    ratio = mine[0] / ref[0]
    ok = ratio >= 0.8
    below |= not ok and int(shape.split("x")[0]) >= 2048
    print(f"{key:<30}{mine[0]:>7.3f} TOPS{ref[0]:>7.3f} TOPS{ratio:>8.2f} {'goal met' if ok else 'below goal'}"
          f"  (rounds: stackbench {mine[1]:.3f}-{mine[2]:.3f}, torch {ref[1]:.3f}-{ref[2]:.3f})")
sys.exit(1 if below else 0)
PY
