#!/usr/bin/env bash
# Builds what ci/gpu_tests.sh runs, for a GPU runner that has no Rust toolchain (a lent
# machine, a locked-down runner): the release `stackbench` and `analyze-trends`, every bench
# executable, and the test executables that hold the GPU-only (ignored) tests, stripped and
# packed into one archive. On the GPU machine, in a checkout of the same commit:
#
#   STACKBENCH_GPU_BUNDLE=.gpu/bundle.tar.xz ci/gpu_tests.sh
#
# Test executables carry the paths of the checkout they were built in (the package root and
# target/release/stackbench); gpu_tests.sh links that path to the checkout it runs in when
# the two differ, and says so when it cannot.
#
# Usage: ci/gpu_bundle.sh [OUT_DIR]   (default .gpu; writes OUT_DIR/bundle.tar.xz)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-.gpu}"
# The test files that hold #[ignore]d GPU tests (gpu_tests.sh runs them with --include-ignored).
GPU_TESTS=(gpu_cuda gpu_rocm gpu_clocks components_collectives)
target_dir="${CARGO_TARGET_DIR:-target}"
stage=$(mktemp -d "${TMPDIR:-/tmp}/stackbench-bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/bench" "$stage/bundle/test" "$stage/bundle/bin"

# Every executable cargo builds, by the JSON messages it prints: (kind, name, path).
executables() {
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["kind"][0], m["target"]["name"], m["executable"])
'
}

echo "gpu_bundle: building the release binaries, the bench executables and the GPU tests"
# One cargo invocation in the bench profile for the bench executables and both binaries:
# built apart (`cargo build --release --bin …`, then `cargo bench --no-run`), the binaries
# lacked the dev-dependencies' features the benches have, and nearly every crate compiled
# twice.
cargo build --profile bench --benches --bin stackbench --bin analyze-trends --quiet --message-format=json 2>/dev/null | executables |
    while read -r kind name path; do
        if [[ $kind == bench ]]; then
            cp "$path" "$stage/bundle/bench/$name"
        elif [[ $kind == bin && ($name == stackbench || $name == analyze-trends) ]]; then
            cp "$path" "$stage/bundle/bin/$name"
        fi
    done
for b in stackbench analyze-trends; do
    [[ -x "$stage/bundle/bin/$b" ]] || { echo "gpu_bundle: the binary $b was not built" >&2; exit 1; }
done
test_args=()
for t in "${GPU_TESTS[@]}"; do test_args+=(--test "$t"); done
cargo test --release --no-run --quiet --message-format=json "${test_args[@]}" 2>/dev/null | executables |
    while read -r kind name path; do
        [[ $kind == test ]] && cp "$path" "$stage/bundle/test/$name"
    done
for t in models gemm memory_bandwidth tensor_ops attention components alloc compile; do
    [[ -x "$stage/bundle/bench/$t" ]] || { echo "gpu_bundle: no bench executable $t was built" >&2; exit 1; }
done
for t in "${GPU_TESTS[@]}"; do
    [[ -x "$stage/bundle/test/$t" ]] || { echo "gpu_bundle: no test executable $t was built" >&2; exit 1; }
done
strip "$stage"/bundle/bin/* "$stage"/bundle/bench/* "$stage"/bundle/test/*
# The Python workers, so that `stackbench setup --bundle` installs a bundle whole on a
# machine with no checkout (links followed: scripts/components/lib is shared with tests).
mkdir -p "$stage/bundle/scripts"
cp -rL scripts/components "$stage/bundle/scripts/components"
find "$stage/bundle/scripts" -name __pycache__ -prune -exec rm -rf {} +
{
    echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (dirty)')"
    echo "root $PWD"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) by $(rustc --version)"
} >"$stage/bundle/MANIFEST"
mkdir -p "$out"
tar -C "$stage" -cJf "$stage/bundle.tar.xz" bundle
mv "$stage/bundle.tar.xz" "$out/bundle.tar.xz"
echo "gpu_bundle: $out/bundle.tar.xz ($(du -h "$out/bundle.tar.xz" | cut -f1)); on the GPU machine:"
echo "  STACKBENCH_GPU_BUNDLE=$out/bundle.tar.xz ci/gpu_tests.sh"
