#!/usr/bin/env bash
# GPU job: run on a self-hosted runner with an NVIDIA (or AMD) GPU. Exercises every GPU
# path the CPU-only CI cannot: the ignored device tests, one pass of each GPU benchmark in
# Criterion's --test mode (verify + one run each, no timing), and the system probe.
# Exit status: non-zero if any of them fails. Set STACKBENCH_COMPARE_TORCH=1 to also run
# the side-by-side PyTorch comparison (needs torch; it takes a few minutes).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "== system probe"
cargo run --release --quiet --bin stackbench -- info --no-measure

echo "== tests, including the ones that need a GPU"
cargo test --release -- --include-ignored

echo "== every GPU benchmark once (Criterion --test: verify and run, no measurement)"
export CRITERION_HOME="${CRITERION_HOME:-$(mktemp -d)}"
for target in gemm memory_bandwidth tensor_ops attention; do
    for backend in cuda rocm; do
        cargo bench --bench "$target" -- --test "^${target}/${backend}/"
    done
done
# A benchmark that failed its correctness check is recorded as failed in the sidecar.
if grep -l '"outcome": "failed"' "$CRITERION_HOME"/stackbench/targets/*.json 2>/dev/null; then
    echo "some GPU benchmarks failed (see the files above)" >&2
    exit 1
fi

echo "== stackbench validate: the pre-installation suite against vendor and peak thresholds"
# Unconfirmed without a GPU: the GPU backend must load, and its GEMM/bandwidth checks must be
# judged by vendor (H100 80GB HBM3, MI300X) or peak-fraction thresholds. Exit 1 here means
# this machine does not perform as it should, which is the job's business to report.
verdict="$CRITERION_HOME/validate.json"
validate_status=0
cargo run --release --quiet --bin stackbench -- validate --json --results "$(mktemp -d)" >"$verdict" || validate_status=$?
python3 - "$verdict" <<'PY'
import json, sys
verdict = json.load(open(sys.argv[1]))
checks = verdict["threshold_checks"]
loads = [c for c in checks if c["name"] in ("installation/cuda loads", "installation/rocm loads")]
assert loads and all(c["passed"] for c in loads), f"no GPU backend loaded: {loads}"
gpu = [c for c in checks if c.get("benchmark", "").split("/")[1:2] in (["cuda"], ["rocm"])]
assert any(c["threshold_kind"] in ("vendor", "peak_fraction") for c in gpu), "no GPU figure was judged"
for c in checks:
    print(f'{c["status"]:8} {c["threshold_kind"]:13} {c["name"]}: expected {c["expected"]}, actual {c["actual"]}')
PY
if [[ $validate_status -ne 0 ]]; then
    echo "stackbench validate: this machine failed a check (exit $validate_status; see above)" >&2
    exit "$validate_status"
fi

if [[ "${STACKBENCH_COMPARE_TORCH:-0}" == 1 ]]; then
    echo "== side by side with PyTorch"
    scripts/gpu/compare_torch.sh --json "$CRITERION_HOME/compare_torch.json"
fi
