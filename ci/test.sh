#!/usr/bin/env bash
# The test command (README's second set-up command; .ci/run calls exactly this).
# Needs only Rust, Python 3 and gcc; installs what else the tests use from inside the
# project's scripts. No GPU needed: GPU tests skip with their reason.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "formatting and lints"
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings

step "building the bench targets (release)"
cargo bench --no-run --quiet

step "unit and integration tests"
cargo test --quiet

step "every benchmark once (cargo bench -- --test), quick suite"
for target in gemm memory_bandwidth tensor_ops attention components; do
    echo "--- $target"
    STACKBENCH_SUITE=quick cargo bench --quiet --bench "$target" -- --test
done

echo
echo "ci/test.sh: all steps passed"
