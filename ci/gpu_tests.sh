#!/usr/bin/env bash
# GPU job: run on a self-hosted runner with an NVIDIA (or AMD) GPU. Exercises every GPU
# path the CPU-only CI cannot: the ignored device tests, one pass of each GPU benchmark in
# Criterion's --test mode (verify + one run each, no timing), and the system probe.
# The device tests (tests/gpu_cuda.rs, tests/gpu_rocm.rs) fail on a machine whose probe
# finds the GPU unless every benchmark they name is measured and checked; they also cover
# what only a GPU can confirm: NVRTC/hipRTC kernels compiled and loaded by the backend
# (a build error is a failure, not a skip), the host link (PCIe/NVLink-C2C) and the
# library choice in the probe, the MI300X bandwidth cross-check, and throttle notes from
# busy clocks after warm-up.
# Exit status: non-zero if any of them fails. Set STACKBENCH_COMPARE_TORCH=1 to also run
# the side-by-side PyTorch comparison (needs torch; it takes a few minutes).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "== system probe"
cargo run --release --quiet --bin stackbench -- info --no-measure

echo "== tests, including the ones that need a GPU"
cargo test --release -- --include-ignored
echo "== the device tests again, verbosely: each names what it measured or why it skipped"
cargo test --release --test gpu_cuda --test gpu_rocm -- --include-ignored --nocapture 2>&1 \
    | grep -E "measured and checked|skipped|throttl|^test " || true

echo "== the kernel source through the vendor compilers (NVRTC + ptxas, clang), when set up"
if compgen -G ".venv-components/lib/python3*/site-packages/nvidia/cu*/bin/ptxas" >/dev/null; then
    # Exit 2 is "clang not found" (the NVRTC + ptxas part has passed by then).
    STACKBENCH_REQUIRE_NVRTC=1 scripts/gpu/check_kernels.sh || [[ $? -eq 2 ]]
else
    echo "skipped: no .venv-components with ptxas (ci/setup_python_env.sh)"
fi

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

if [[ "${STACKBENCH_COMPARE_TORCH:-0}" == 1 ]]; then
    echo "== side by side with PyTorch"
    scripts/gpu/compare_torch.sh --json "$CRITERION_HOME/compare_torch.json"
fi
