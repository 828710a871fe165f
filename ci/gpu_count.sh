#!/usr/bin/env bash
# Prints how many GPUs this machine has: NVIDIA ones as `nvidia-smi -L` lists them plus AMD
# ones as `rocm-smi --showid` lists them (0 where neither tool is installed or answers).
# ci/gpu_tests.sh uses it to skip the tests that need two or more GPUs, with the reason.
set -uo pipefail

nvidia=0
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
amd=0
if command -v rocm-smi >/dev/null 2>&1; then
    amd=$(rocm-smi --showid 2>/dev/null | grep -o '^GPU\[[0-9]*\]' | sort -u | grep -c . || true)
fi
echo $((nvidia + amd))
