#!/usr/bin/env bash
# The test command (README's second set-up command; .ci/run calls exactly this).
# Needs Rust, Python 3 and gcc; installs what else the tests use from inside the project:
# the CPU Python stack for the component tier (a virtualenv, ci/setup_python_env.sh) and
# clang and the NVRTC/ptxas wheels for compiling the GPU kernels without a GPU. No GPU needed: GPU tests skip with
# their reason (ci/gpu_tests.sh runs them on a GPU machine).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says when it starts, in seconds since the script began, so a CI log shows where
# the time went (the clean-clone budget is 30 minutes).
step() { printf '\n==> [%4ds] %s\n' "$SECONDS" "$*"; }

step "free disk: the build, the Python stack and the test stores need room (ci/test.sh)"
# A clean run builds target/ (debug tests and release benches) and installs the PyPI
# torch wheel with its CUDA libraries into .venv-components (about 6 GB): a disk that
# fills up halfway fails a later step with ENOSPC, so say it here, with the numbers.
free_gib=$(( $(df -Pk . | awk 'NR==2 {print $4}') / 1024 / 1024 ))
echo "free on $(df -P . | awk 'NR==2 {print $6}'): ${free_gib} GiB"
# Debug info is line tables only (Cargo.toml's [profile.dev]); with full debug info the
# test binaries alone took 22 GB and a clean run on a 27 GiB disk died linking them.
if [[ $free_gib -lt 14 ]]; then
    echo "ci/test.sh: only ${free_gib} GiB free; a clean run needs about 16 GiB (target/ and the torch virtualenv)" >&2
    exit 1
elif [[ $free_gib -lt 20 ]]; then
    echo "warning: ${free_gib} GiB free; a clean run needs about 16 GiB" >&2
fi
disk_report() {
    echo "ci/test.sh: target/ $(du -sh target 2>/dev/null | cut -f1), .venv-components $(du -sh .venv-components 2>/dev/null | cut -f1), $(( $(df -Pk . | awk 'NR==2 {print $4}') / 1024 / 1024 )) GiB left on disk"
}
trap disk_report EXIT

step "formatting"
cargo fmt --all -- --check

step "every tracked shell script parses (bash -n) and every Python file compiles (ci/check_scripts.sh)"
ci/check_scripts.sh

step "in the background: GitHub Actions workflows, zizmor and the project's workflow rules (ci/lint_workflows.sh)"
# About 20 s, most of it installing zizmor into its virtualenv: beside the build below, not
# before it. Its log and its failure come with the background set-up's.
lint_log=$(mktemp)
ci/lint_workflows.sh >"$lint_log" 2>&1 &
lint_pid=$!

step "in the background: Debian's packages and the Python component stack (network and disk, beside the build)"
# What the tests need from outside, fetched while the release build below keeps the CPUs:
# one apt-get for every package the later steps and tests use (each script that needs one
# also installs it alone; here they are already there), then the virtualenv. Its log is
# printed when the step that needs it waits for it.
#   tmux (dashboard test), chromium (report.html in headless Chromium), poppler-utils
#   (tests/sweep_report.rs reads sweep-report.pdf back with pdftoppm), valgrind (counting
#   mode under callgrind), linux-perf (tests/profile_perf.rs), libopenblas0-pthread
#   (tests/cpu_blas.rs and the gemm/cpu/blas_* ids, loaded at run time), Slurm and MUNGE
#   (ci/slurm/test_local.sh), postgresql (ci/postgres.sh), clang-19 (the kernel check;
#   clang 17+ knows gfx942), and Mesa's lavapipe (mesa-vulkan-drivers) with the Vulkan
#   loader (libvulkan1) for tests/gpu_vulkan.rs and the `vulkan` ids, loaded at run time.
#   STACKBENCH_REQUIRE_TOOLS=1 below turns a missing tool into a failure.
install_packages() {
    local missing=()
    command -v tmux >/dev/null || missing+=(tmux)
    command -v chromium >/dev/null || missing+=(chromium)
    command -v pdftoppm >/dev/null || missing+=(poppler-utils)
    command -v valgrind >/dev/null || missing+=(valgrind)
    command -v perf >/dev/null || missing+=(linux-perf)
    ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so\.0 ' || missing+=(libopenblas0-pthread)
    PATH="$PATH:/usr/sbin:/sbin" command -v slurmctld >/dev/null || missing+=(slurmctld slurmd slurm-client munge)
    [[ -x /usr/lib/postgresql/15/bin/initdb ]] || command -v initdb >/dev/null || missing+=(postgresql)
    command -v clang-19 >/dev/null || command -v clang >/dev/null || missing+=(clang-19)
    ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 ' || missing+=(libvulkan1)
    compgen -G '/usr/share/vulkan/icd.d/lvp_icd.*.json' >/dev/null || missing+=(mesa-vulkan-drivers)
    [[ ${#missing[@]} -eq 0 ]] && return 0
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "installing ${missing[*]}"
        apt-get -o DPkg::Lock::Timeout=600 update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
                --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "cannot install ${missing[*]} (needs root and apt-get): the tests that need them will fail"
    fi
}
setup_log=$(mktemp)
( install_packages && ci/setup_python_env.sh ) >"$setup_log" 2>&1 &
setup_pid=$!
# wait_for_setup: the background steps' logs, and their failures as this script's.
wait_for_setup() {
    local status=0 lint_status=0
    wait "$lint_pid" || lint_status=$?
    echo "ci/lint_workflows.sh:"
    cat "$lint_log"
    wait "$setup_pid" || status=$?
    cat "$setup_log"
    [[ $lint_status -eq 0 ]] || { echo "ci/test.sh: ci/lint_workflows.sh failed (exit $lint_status, log above)" >&2; exit 1; }
    [[ $status -eq 0 ]] || { echo "ci/test.sh: the background set-up failed (exit $status, log above)" >&2; exit 1; }
}

step "building the bench targets (release, linted)"
# The lints ride on the builds this script needs anyway: rustc for this workspace's crates
# is clippy-driver with warnings denied (ci/lint_rustc.sh), so this build lints the benches
# and the crates they use, and the test build below every library, binary, test and
# example, which is what
# `cargo clippy --all-targets -- -D warnings` checks, without its third compilation of
# the workspace. Exported, so that every cargo below and in the tests shares these builds.
command -v clippy-driver >/dev/null || {
    echo "ci/test.sh: clippy-driver is not on PATH (rustup component add clippy)" >&2
    exit 1
}
export RUSTC_WORKSPACE_WRAPPER="$PWD/ci/lint_rustc.sh"
# A clean clone compiles everything once: incremental compilation's bookkeeping (the debug
# builds' default) only costs time and disk here.
export CARGO_INCREMENTAL=0
# The benches only: what the benchmark pass, `stackbench setup` and the fleet's tasks run.
# The two binaries are the test build's (the tests, the Slurm fleet's analyze-trends and
# tests/install_anywhere.rs's `cargo install --debug` use them): a release build of them
# too compiled the store, the analysis, the server and the terminal UI a second time, about
# 400 of this build's 900 CPU-seconds (cargo build --timings, 2026-11-30).
cargo build --profile bench --benches --quiet

step "waiting for the background steps (the workflow lints; packages, then the Python virtualenv)"
wait_for_setup
venv_python="$PWD/.venv-components/bin/python"

step "Criterion 0.3 into cargo's cache, for the generated 0.3 crate the gate test builds offline"
# tests/gate_criterion03.rs gates the oldest Criterion the gate supports; under
# STACKBENCH_REQUIRE_TOOLS=1 a cache without it fails that test instead of skipping it.
cargo fetch --locked --quiet --manifest-path tests/fixtures/criterion-0.3-fetch/Cargo.toml

step "PostgreSQL for the store tests: a throwaway server on 127.0.0.1 (ci/postgres.sh), stopped on exit"
# Every store test runs on SQLite and on this server (tests/pg_support: one database per test).
pg_dir=$(mktemp -d)
trap 'ci/postgres.sh stop "$pg_dir/cluster"; rm -rf "$pg_dir"; disk_report' EXIT
STACKBENCH_TEST_POSTGRES_URL=$(ci/postgres.sh start "$pg_dir/cluster")
export STACKBENCH_TEST_POSTGRES_URL
echo "$STACKBENCH_TEST_POSTGRES_URL"

step "building the tests (debug; this build lints every test and example)"
cargo test --no-run --quiet

step "Slurm fleet: a one-node cluster on localhost runs the 2-task array and the merge job (ci/slurm/test_local.sh)"
# Its analyze-trends is the test build's: the jobs record, import and report with it.
STACKBENCH_ANALYZER="${CARGO_TARGET_DIR:-$PWD/target}/debug/analyze-trends" STACKBENCH_REQUIRE_SLURM=1 \
    ci/slurm/test_local.sh

# Two phases. Every test binary that judges what it computed, not how fast, runs first,
# beside the benchmark pass and the kernel compilers (ci/bench_pass.sh): each alone leaves
# a CPU idle much of the time. Then the binaries that time work and judge the timing (the
# gate's A/A and regression verdicts, bisect, validate's levels) run alone on the machine:
# beside other work an A/A pair reads as a regression, or as unsure once the gate sees the
# load (issue 27, session 10). They find the Criterion 0.8 fixture crates' dependencies
# already built into the shared target by the first phase (tests/counting_mode.rs).
timed_tests=(gate_cli gate_counting gate_criterion03 gate_floor gate_functions gate_unsure
    bisect_cli gpu_clocks validate_cli validate_levels install_anywhere)
# Every test target of the workspace, from cargo's metadata rather than a glob of tests/*.rs,
# which would silently leave out a target declared with another path or in a member crate.
mapfile -t test_targets < <(cargo metadata --no-deps --format-version 1 --offline |
    python3 -c 'import json, sys
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if "test" in target["kind"]:
            print(target["name"])')
for name in "${timed_tests[@]}"; do
    [[ " ${test_targets[*]} " == *" $name "* ]] || {
        echo "ci/test.sh: $name is listed as timed but is no test target of the workspace" >&2
        exit 1
    }
done
timed_args=()
other_names=()
for name in "${test_targets[@]}"; do
    if [[ " ${timed_tests[*]} " == *" $name "* ]]; then
        timed_args+=(--test "$name")
    else
        other_names+=("$name")
    fi
done
test_env=(STACKBENCH_PYTHON="$venv_python" STACKBENCH_REQUIRE_COMPONENTS=1 STACKBENCH_REQUIRE_TOOLS=1)
# Failures are counted, not fatal, until every test has run (cargo test --no-fail-fast).
failed=()

# The first phase's tests run as a queue of jobs (one test binary each, plus the unit tests
# and the doc tests) taken by two workers, the longest first so that no long one starts
# last. Each job's output, time and exit status are kept apart and printed in queue order,
# so a failure names its binary and the log says where the phase's time went. (It did not
# shorten the phase: one `cargo test` lane took 750 s in ci19, two workers 743 s in ci20;
# the phase is CPU-bound, and only less work makes it shorter.)
long_first=(gpu_kernels_emulated counting_mode compile_cold own_bench_counting models_worker
    gpu_vulkan)
other_jobs=()
for name in "${long_first[@]}"; do
    [[ " ${other_names[*]} " == *" $name "* ]] || {
        echo "ci/test.sh: $name is listed as a long first-phase test but is not one" >&2
        exit 1
    }
    other_jobs+=("--test $name")
done
for name in "${other_names[@]}"; do
    [[ " ${long_first[*]} " == *" $name "* ]] || other_jobs+=("--test $name")
done
other_jobs+=("--lib --bins" "--doc")
other_dir=$(mktemp -d)
printf '%s\n' "${other_jobs[@]}" >"$other_dir/jobs"
# run_job INDEX: job INDEX of the queue (line INDEX + 1 of $other_dir/jobs: cargo test's
# arguments), its output, time and exit status kept under $other_dir by its index, so the
# log prints in queue order whatever the workers did.
run_job() {
    local index=$1 status=0 job
    job=$(sed -n "$((index + 1))p" "$other_dir/jobs")
    # shellcheck disable=SC2086 # a job is cargo test's arguments, split at the spaces
    cargo test --quiet --no-fail-fast $job >"$other_dir/$index.log" 2>&1 || status=$?
    printf 'ci/test.sh: cargo test %s: exit %d after %d s\n' "$job" "$status" "$SECONDS" \
        >>"$other_dir/$index.log"
    echo "$status" >"$other_dir/$index.status"
}
export -f run_job
export other_dir

step "the other tests (${#other_names[@]} binaries, the unit tests, the doc tests: ${#other_jobs[@]} jobs, two at a time), beside the benchmark pass and the kernel compilers"
(
    export "${test_env[@]}"
    seq 0 $(( ${#other_jobs[@]} - 1 )) | xargs -P 2 -I '{}' bash -c 'run_job {}'
) &
other_pid=$!
CI_TEST_SECONDS=$SECONDS ci/bench_pass.sh "$venv_python" ||
    failed+=("the benchmark pass, the lavapipe measurement or the kernel compilers (ci/bench_pass.sh)")
step "waiting for the other tests"
wait "$other_pid" || true
step "the other tests' output, in queue order"
for index in "${!other_jobs[@]}"; do
    cat "$other_dir/$index.log" 2>/dev/null || echo "ci/test.sh: no log of cargo test ${other_jobs[$index]}"
    status=$(cat "$other_dir/$index.status" 2>/dev/null || echo "never ran")
    [[ $status == 0 ]] || failed+=("cargo test ${other_jobs[$index]} (exit $status)")
done
rm -rf "$other_dir"

step "the tests that time work and judge it (${#timed_tests[@]} binaries), alone on the machine"
env "${test_env[@]}" cargo test --quiet --no-fail-fast "${timed_args[@]}" ||
    failed+=("the timed tests")

if [[ ${#failed[@]} -gt 0 ]]; then
    printf 'ci/test.sh: failed: %s\n' "${failed[@]}" >&2
    exit 1
fi

echo
echo "ci/test.sh: all steps passed in ${SECONDS}s"
