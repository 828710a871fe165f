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

echo "== collectives on NCCL (RCCL on ROCm): one torchrun rank per GPU, quick sizes"
# Needs the component virtualenv (STACKBENCH_PYTHON, else .venv-components) with a CUDA or
# ROCm torch and two or more GPUs; one GPU makes the component skip with that reason. The
# ignored test above (components_collectives::nccl_collectives_on_every_gpu) checks every
# all_reduce ran on NCCL/RCCL and names its algorithm; this pass records them all.
STACKBENCH_COMPONENTS=collectives STACKBENCH_SUITE=quick \
    cargo bench --bench components -- --test "^components/collectives/"
if grep -q '"outcome": "failed"' "$CRITERION_HOME/stackbench/targets/components.json" 2>/dev/null; then
    echo "some collectives failed (see $CRITERION_HOME/stackbench/targets/components.json)" >&2
    exit 1
fi

if [[ "${STACKBENCH_COMPARE_TORCH:-0}" == 1 ]]; then
    echo "== side by side with PyTorch"
    scripts/gpu/compare_torch.sh --json "$CRITERION_HOME/compare_torch.json"
fi
