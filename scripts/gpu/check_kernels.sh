#!/usr/bin/env bash
# Compiles stackbench's GPU kernel source with clang for NVPTX (sm_80) and AMDGPU (gfx90a)
# without CUDA or ROCm: the shim headers here declare the few builtins NVRTC and hipRTC
# provide implicitly. Catches syntax and type errors, and checks that each kernel gets its
# own shared memory (LDS) on AMD, before a GPU machine sees the source.
# Needs clang (apt-get install clang-14). Usage: scripts/gpu/check_kernels.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
clang="${CLANG:-$(command -v clang || command -v clang-14 || true)}"
[[ -n "$clang" ]] || { echo "check_kernels: clang not found (set CLANG)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cargo run --quiet --manifest-path "$repo/Cargo.toml" --example dump_gpu_kernels -- "$work"
shims="$repo/scripts/gpu/kernel_check"
(echo "#include \"$shims/shim_cuda.h\""; cat "$work/kernels.cu") > "$work/check.cu"
"$clang" -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_80 -std=c++17 -O3 \
    -S -o "$work/kernels.ptx" "$work/check.cu"
entries=$(grep -c '\.entry' "$work/kernels.ptx")
echo "NVPTX: $entries kernels"
(echo "#include \"$shims/shim_hip.h\""; cat "$work/kernels.hip") > "$work/check.hip"
"$clang" -x hip --cuda-device-only -nogpuinc -nogpulib --offload-arch=gfx90a -std=c++17 -O3 \
    -S -o "$work/kernels.s" "$work/check.hip"
echo "AMDGPU: LDS bytes per kernel (count, bytes):"
grep '\.amdhsa_group_segment_fixed_size' "$work/kernels.s" | sort | uniq -c
