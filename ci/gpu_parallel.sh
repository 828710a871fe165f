#!/usr/bin/env bash
# ci/gpu_tests.sh for a GPU machine lent for a few minutes: its sections in three groups,
# one process each, side by side, each logging to its own file as it goes, so a time limit
# that ends the run still leaves every log and every result file written so far.
#
#   group 1: probe, tests, benches, vulkan, validate  (the backends' own kernels, then the
#            verdict)
#   group 2: components, models               (the Python tier and the model sweep)
#   group 3: kernels, compile, alloc, clocks, profile, collectives (compilers, allocators,
#            clock locking and Ctrl-C, a profiler, NCCL)
#
# validate measures; with the other groups on the same GPU its figures are not a quiet
# machine's, so a validate failure here is to be re-run alone before it is believed.
#
# Usage: ci/gpu_parallel.sh OUT_DIR [SECONDS]   (default 540: each group is ended after it)
# Env:   STACKBENCH_GPU_BUNDLE  a ci/gpu_bundle.sh archive (default .gpu/bundle.tar.xz when
#                               present; without one, every section builds with cargo)
#        STACKBENCH_PYTHON      the GPU torch interpreter (default: python3 when its torch
#                               sees a GPU)
# Exit status: 0 when every group passed, else 1 (each log ends with its group's exit code).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:?usage: ci/gpu_parallel.sh OUT_DIR [SECONDS]}"
limit="${2:-540}"
mkdir -p "$out"
out=$(cd "$out" && pwd)

archive="${STACKBENCH_GPU_BUNDLE:-}"
[[ -z "$archive" && -f .gpu/bundle.tar.xz ]] && archive=.gpu/bundle.tar.xz
if [[ -n "$archive" ]]; then
    if [[ -f "$archive" ]]; then
        # Unpacked once here: three runs unpacking into one directory would race.
        rm -rf .gpu/bundle && mkdir -p .gpu && tar -C .gpu -xJf "$archive" || exit 2
        export STACKBENCH_GPU_BUNDLE="$PWD/.gpu/bundle"
    else
        export STACKBENCH_GPU_BUNDLE="$archive"
    fi
fi
if [[ -z "${STACKBENCH_PYTHON:-}" ]] &&
    python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    export STACKBENCH_PYTHON=python3
fi
echo "gpu_parallel: bundle ${STACKBENCH_GPU_BUNDLE:-none}, python ${STACKBENCH_PYTHON:-none}, ${limit} s a group, logs in $out"
nvidia-smi -L 2>/dev/null | tee "$out/gpus.txt" || true

# STACKBENCH_GPU_GROUPS overrides the groups (space-separated, each a comma-separated list).
read -r -a groups <<<"${STACKBENCH_GPU_GROUPS:-probe,tests,benches,vulkan,validate components,models kernels,compile,alloc,clocks,profile,collectives}"
pids=()
for i in "${!groups[@]}"; do
    n=$((i + 1))
    mkdir -p "$out/group$n/tmp"
    (
        echo "== group $n: ${groups[$i]} (started $(date -u +%H:%M:%S))"
        TMPDIR="$out/group$n/tmp" CRITERION_HOME="$out/group$n/criterion" STACKBENCH_GPU_SECTIONS="${groups[$i]}" \
            timeout --signal=INT --kill-after=20 "$limit" ci/gpu_tests.sh
        status=$?
        echo "== group $n exit $status (ended $(date -u +%H:%M:%S))"
        exit $status
    ) >"$out/group$n.log" 2>&1 &
    pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed=1
    tail -n 1 "$out/group$((i + 1)).log"
done
exit $failed
