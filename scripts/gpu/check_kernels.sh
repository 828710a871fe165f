#!/usr/bin/env bash
# Compiles stackbench's GPU kernel source with the vendors' compilers, no GPU needed:
#  1. NVIDIA: every CUDA kernel through the backend's own NVRTC path (cudarc, pip wheel
#     libnvrtc) for sm_80, sm_90 and sm_100, each PTX assembled with ptxas -v: registers,
#     spills and shared memory per kernel; fails on any error and on any spill in the
#     bandwidth-bound kernels or the tensor-core attention kernels (examples/nvrtc_check.rs). The table goes to $KERNEL_REPORT
#     when set.
#  2. clang: NVPTX (sm_80) and AMDGPU (gfx90a, gfx942) through the shim headers here, which
#     declare the few builtins NVRTC and hipRTC provide implicitly; checks that each
#     kernel gets its own shared memory (LDS) on AMD.
# Needs the component virtualenv with the NVRTC and nvcc (ptxas) wheels
# (ci/setup_python_env.sh) and clang >= 17 for gfx942 (apt-get install clang-19).
# Env: STACKBENCH_VENV (default .venv-components at the repo root),
#      STACKBENCH_REQUIRE_NVRTC=1 to fail instead of skipping when NVRTC/ptxas are missing,
#      CLANG (default: the newest clang found).
# Usage: scripts/gpu/check_kernels.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${STACKBENCH_VENV:-$repo/.venv-components}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "-- NVRTC + ptxas (the backend's compile path)"
ptxas="$(ls "$venv"/lib/python3*/site-packages/nvidia/cu*/bin/ptxas \
            "$venv"/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas 2>/dev/null | head -n1 || true)"
if [[ -z "$ptxas" ]]; then
    msg="no ptxas in $venv (ci/setup_python_env.sh installs the nvidia-cuda-nvcc wheel)"
    if [[ "${STACKBENCH_REQUIRE_NVRTC:-0}" == 1 ]]; then echo "check_kernels: $msg" >&2; exit 1; fi
    echo "skipped: $msg"
else
    status=0
    VIRTUAL_ENV="$venv" cargo run --quiet --manifest-path "$repo/Cargo.toml" \
        --example nvrtc_check -- "$work/nvrtc" "$ptxas" sm_80 sm_90 sm_100 || status=$?
    if [[ $status -eq 2 && "${STACKBENCH_REQUIRE_NVRTC:-0}" != 1 ]]; then
        echo "skipped: NVRTC not found in $venv"
    elif [[ $status -ne 0 ]]; then
        exit 1
    elif [[ -n "${KERNEL_REPORT:-}" ]]; then
        cp "$work/nvrtc/ptxas.md" "$KERNEL_REPORT"
    fi
fi

echo "-- clang: NVPTX sm_80, AMDGPU gfx90a and gfx942"
clang="${CLANG:-}"
if [[ -z "$clang" ]]; then
    for candidate in clang-19 clang-18 clang-17 clang clang-16 clang-15 clang-14; do
        if command -v "$candidate" >/dev/null; then clang="$(command -v "$candidate")"; break; fi
    done
fi
[[ -n "$clang" ]] || { echo "check_kernels: clang not found (set CLANG)" >&2; exit 2; }
clang_major="$("$clang" -dumpversion | cut -d. -f1)"
cargo run --quiet --manifest-path "$repo/Cargo.toml" --example dump_gpu_kernels -- "$work"
shims="$repo/scripts/gpu/kernel_check"
(echo "#include \"$shims/shim_cuda.h\""; cat "$work/kernels.cu") > "$work/check.cu"
"$clang" -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_80 -std=c++17 -O3 \
    -S -o "$work/kernels.ptx" "$work/check.cu"
entries=$(grep -c '\.entry' "$work/kernels.ptx")
echo "NVPTX: $entries kernels"
(echo "#include \"$shims/shim_hip.h\""; cat "$work/kernels.hip") > "$work/check.hip"
archs=(gfx90a)
if (( clang_major >= 17 )); then
    archs+=(gfx942)
else
    echo "skipped gfx942: $clang is clang $clang_major; gfx942 needs clang 17 or newer"
fi
for arch in "${archs[@]}"; do
    "$clang" -x hip --cuda-device-only -nogpuinc -nogpulib --offload-arch="$arch" -std=c++17 -O3 \
        -S -o "$work/kernels.$arch.s" "$work/check.hip"
    echo "AMDGPU $arch: LDS bytes per kernel (count, bytes):"
    grep '\.amdhsa_group_segment_fixed_size' "$work/kernels.$arch.s" | sort | uniq -c
done
