#!/usr/bin/env bash
# Every bench target once in `--test` mode (quick suite) with the record checkers, one short
# real measurement on lavapipe, and the GPU kernels through their compilers. ci/test.sh runs
# it beside the tests that judge nothing by time; it needs the release build and the
# component virtualenv that ci/test.sh made. Usage: ci/bench_pass.sh VENV_PYTHON
set -euo pipefail
cd "$(dirname "$0")/.."
venv_python=${1:?usage: ci/bench_pass.sh VENV_PYTHON}
# Step times count from ci/test.sh's start when it passes its own (CI_TEST_SECONDS).
SECONDS=${CI_TEST_SECONDS:-0}
step() { printf '\n==> [%4ds] %s\n' "$SECONDS" "$*"; }

step "every benchmark once (cargo bench -- --test), quick suite"
# lavapipe is a CPU behind a Vulkan driver, which the vulkan backend refuses unless asked:
# here it is asked, so every vulkan id runs and is checked.
export STACKBENCH_VULKAN_ALLOW_CPU=1
# Each target's time is printed after it (beside the first phase's tests, so CPU-shared):
# the log says which of them the pass's minutes go to.
for target in gemm memory_bandwidth tensor_ops attention components models alloc compile; do
    echo "--- $target"
    started=$SECONDS
    STACKBENCH_PYTHON="$venv_python" STACKBENCH_SUITE=quick cargo bench --quiet --bench "$target" -- --test
    echo "--- $target: $(( SECONDS - started )) s"
done
# The alloc record: glibc's heap figures measured, torch's CPU allocator ran, every note holds up.
"$venv_python" scripts/components/check_alloc_run.py "${CARGO_TARGET_DIR:-target}/criterion/stackbench/targets/alloc.json" cpu --torch
# The GPU job's sweep checker on this CPU record: the notes it reads exist and hold up.
"$venv_python" scripts/components/check_gpu_sweep.py "${CARGO_TARGET_DIR:-target}/criterion/stackbench/targets/models.json" cpu

# The vulkan ids ran on lavapipe: measured and checked, or skipped with their stated reasons.
python3 scripts/gpu/check_vulkan_run.py "${CARGO_TARGET_DIR:-target}/criterion/stackbench/targets"

step "one short real measurement on lavapipe: the Vulkan copy kernel (a CPU's figure, not a GPU's)"
# About 30 s: the device's peaks (4 s), then 50 samples of the 64 MiB copy, timed with
# Vulkan timestamp queries.
STACKBENCH_SUITE=quick cargo bench --quiet --bench memory_bandwidth -- '^memory_bandwidth/vulkan/copy/'
# A target that times a vulkan id measures the device's peaks into the run's probe first
# (Vulkan reports no clocks): without them the copy's % of peak would be n/a.
python3 - "${CARGO_TARGET_DIR:-target}/criterion/stackbench/system.json" <<'PY'
import json, sys
path = sys.argv[1]
with open(path) as handle:
    probe = json.load(handle)
peaks = [p for p in probe["peaks"] if p["backend"] == "vulkan" and p.get("measured")]
found = {(p["metric"], p.get("dtype")) for p in peaks}
if not {("flops_per_second", "f32"), ("bytes_per_second", None)} <= found:
    sys.exit(f"{path}: no measured Vulkan f32 FMA and bandwidth peaks, only {sorted(map(str, found))}")
print(f"the run's probe holds {len(peaks)} measured Vulkan peaks")
PY

step "GPU kernels: NVRTC + ptxas (sm_80, sm_90, sm_100) and clang (NVPTX, gfx90a, gfx942)"
# clang-19 came with the background set-up (clang 17+ knows gfx942, MI300).
if command -v clang-19 >/dev/null || command -v clang >/dev/null || command -v clang-14 >/dev/null; then
    STACKBENCH_VENV="$PWD/.venv-components" STACKBENCH_REQUIRE_NVRTC=1 scripts/gpu/check_kernels.sh
else
    echo "clang is not installed and cannot be installed here (apt-get install clang-19 as root)" >&2
    exit 1
fi
