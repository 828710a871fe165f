#!/usr/bin/env bash
# Runs the stackbench suite end to end: builds the bench targets once, runs each one
# (a failing target is reported and the others still run), keeps Criterion's output with
# the system probe beside it, records the run in the results directory and writes the
# report. Exits non-zero at the end if any target failed.
set -uo pipefail

# Started from `cargo test` or `cargo run`, this script inherits the variables cargo sets for
# the package it runs (CARGO_MANIFEST_DIR, CARGO_PKG_*). cargo passes them on to build
# scripts' change tracking, and ring's tracks CARGO_MANIFEST_DIR: with them the build below
# and one from a shell would each recompile ring and every crate above it for the other.
# Dropped here, as stackbench's own cargo commands drop them (crates/measure/src/system/cargo.rs).
for name in $(compgen -e); do
    case "$name" in
    CARGO_PKG_* | CARGO_MANIFEST_DIR | CARGO_MANIFEST_PATH | CARGO_MANIFEST_LINKS | CARGO_CRATE_NAME | \
        CARGO_BIN_NAME | CARGO_PRIMARY_PACKAGE | CARGO_TARGET_TMPDIR | CARGO_RUSTC_CURRENT_DIR | OUT_DIR)
        unset "$name"
        ;;
    esac
done

usage() {
    cat <<'EOF'
Usage: ./run_benchmarks.sh [OPTIONS]

Runs every stackbench bench target (gemm, memory_bandwidth, tensor_ops, attention,
components, models, alloc, compile), records the run under the results directory and writes the report.

Options:
  --quick             the quick suite: a few points per axis (default; minutes)
  --full              every axis value
  --suite NAME        a suite by name: quick, full, pre-installation, component, sweep,
                      or one defined in stackbench.toml (stackbench suite NAME shows it)
  --config FILE       the config file (default: ./stackbench.toml when present)
  --filter REGEX      only benchmarks whose id matches REGEX (Criterion's filter),
                      e.g. 'gemm/cpu/f32' or 'triad'
  --label TEXT        a label stored with the run (e.g. a branch or a PR number)
  --baseline NAME     save Criterion's results as baseline NAME (--save-baseline)
  --targets LIST      comma-separated bench targets to run (default: all)
  --results DIR       where runs and reports are kept (default: $STACKBENCH_RESULTS_DIR,
                      else the config's results_dir, else benchmark_results)
  --list              list the benchmark ids (after --filter) and exit
  --dashboard         show the suite live in the terminal dashboard while it runs
                      (Criterion's output then goes only to the logs); q leaves the
                      dashboard, the suite goes on to the end
  -h, --help          this help

Environment:
  STACKBENCH_SUITE    a suite name (the flags above set it)
  STACKBENCH_CONFIG   the config file (--config sets it)
  CRITERION_HOME      where Criterion writes (default: target/criterion)
  STACKBENCH_PYTHON   the Python interpreter the component tier drives
  STACKBENCH_BIN_DIR  a directory holding the stackbench and analyze-trends to use,
                      e.g. an installed one's bin/, instead of building them here
                      (the build is then the bench targets' alone)
  STACKBENCH_MEASURE  time (default) or instructions: count each CPU benchmark's
                      instructions under Valgrind instead of timing it (one
                      iteration, a single-threaded variant: the CPU pool and rayon
                      run on the calling thread); GPU and Python-worker ids are
                      recorded as not countable with the reason

Examples:
  ./run_benchmarks.sh                       # quick suite, everything
  ./run_benchmarks.sh --full --label nightly
  ./run_benchmarks.sh --filter 'gemm/cpu/f32' --baseline main
  ./run_benchmarks.sh --list --filter triad
  ./run_benchmarks.sh --dashboard           # watch the charts fill in as it runs
  STACKBENCH_MEASURE=instructions ./run_benchmarks.sh --targets memory_bandwidth
EOF
}

# Progress goes to stderr: stdout carries only what a caller may parse (ids, the summary).
say() {
    echo "==> $*" >&2
}

die() {
    echo "run_benchmarks.sh: $*" >&2
    exit 2
}

# shellcheck source=ci/bench_targets.sh
. "$(dirname "$0")/ci/bench_targets.sh"
mapfile -t ALL_TARGETS < <(bench_targets "$(dirname "$0")") && [[ ${#ALL_TARGETS[@]} -gt 0 ]] ||
    die "cannot read the bench targets from crates/benches/Cargo.toml"
suite="${STACKBENCH_SUITE:-quick}"
filter=""
label=""
baseline=""
list=0
dashboard=0
results_dir="benchmark_results"
results_given=0
targets_csv=""

while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) suite=quick ;;
        --full) suite=full ;;
        --suite) [[ $# -ge 2 ]] || die "--suite needs a value"; suite="$2"; shift ;;
        --suite=*) suite="${1#*=}" ;;
        --filter) [[ $# -ge 2 ]] || die "--filter needs a value"; filter="$2"; shift ;;
        --filter=*) filter="${1#*=}" ;;
        --label) [[ $# -ge 2 ]] || die "--label needs a value"; label="$2"; shift ;;
        --label=*) label="${1#*=}" ;;
        --baseline) [[ $# -ge 2 ]] || die "--baseline needs a value"; baseline="$2"; shift ;;
        --baseline=*) baseline="${1#*=}" ;;
        --targets) [[ $# -ge 2 ]] || die "--targets needs a value"; targets_csv="$2"; shift ;;
        --targets=*) targets_csv="${1#*=}" ;;
        --results) [[ $# -ge 2 ]] || die "--results needs a value"; results_dir="$2"; results_given=1; shift ;;
        --results=*) results_dir="${1#*=}"; results_given=1 ;;
        --config) [[ $# -ge 2 ]] || die "--config needs a value"; STACKBENCH_CONFIG="$2"; shift ;;
        --config=*) STACKBENCH_CONFIG="${1#*=}" ;;
        --list) list=1 ;;
        --dashboard) dashboard=1 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
    shift
done

# Built-in suites need no file; any other name must come from the config, which the
# stackbench binary resolves after the build (below).
# Absolute: the bench targets run in the package root, not where this was called from.
if [[ -n "${STACKBENCH_CONFIG:-}" ]]; then
    STACKBENCH_CONFIG="$(realpath -m "$STACKBENCH_CONFIG")"
    export STACKBENCH_CONFIG
fi
config_file="${STACKBENCH_CONFIG:-}"
# The same for Criterion's output directory, which the bench executables read themselves.
if [[ -n "${CRITERION_HOME:-}" ]]; then
    CRITERION_HOME="$(realpath -m "$CRITERION_HOME")"
    export CRITERION_HOME
fi
# And for the binaries' directory, named from the caller's directory.
if [[ -n "${STACKBENCH_BIN_DIR:-}" ]]; then
    STACKBENCH_BIN_DIR="$(realpath -m "$STACKBENCH_BIN_DIR")"
fi
[[ -z "$config_file" && -f "$(dirname "$0")/stackbench.toml" ]] && config_file="$(dirname "$0")/stackbench.toml"
case "$suite" in
    quick | full | pre-installation | component | sweep) ;;
    *) [[ -n "$config_file" ]] || die "unknown suite '$suite': expected quick, full, pre-installation, component, sweep, or a suite defined in stackbench.toml" ;;
esac
[[ -z "$config_file" || -f "$config_file" ]] || die "the config file '$config_file' does not exist"
export STACKBENCH_SUITE="$suite"

targets=("${ALL_TARGETS[@]}")
if [[ -n "$targets_csv" ]]; then
    IFS=',' read -r -a targets <<<"$targets_csv"
    for t in "${targets[@]}"; do
        [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || die "unknown bench target '$t' (known: ${ALL_TARGETS[*]})"
    done
fi

cd "$(dirname "$0")" || die "cannot enter the repository"
command -v cargo >/dev/null || die "cargo is not on PATH: install Rust (https://rustup.rs) first"

# Absolute, because the live progress file below is handed to bench executables that run in
# crates/benches (a relative path there named a directory that does not exist, and every
# benchmark warned that it could not append its progress).
criterion_dir="$(realpath -m "${CRITERION_HOME:-${CARGO_TARGET_DIR:-target}/criterion}")"

# Fail before any work if the places we write to are not writable.
check_writable() {
    local dir="$1" what="$2"
    mkdir -p "$dir" 2>/dev/null || die "cannot create the $what directory '$dir'"
    local probe
    probe=$(mktemp "$dir/.write-test.XXXXXX" 2>/dev/null) || die "the $what directory '$dir' is not writable"
    rm -f "$probe"
}

criterion_args=(--noplot)
[[ -n "$baseline" ]] && criterion_args+=(--save-baseline "$baseline")

# The two binaries: this checkout's, built below, or those STACKBENCH_BIN_DIR holds.
bin_dir="${STACKBENCH_BIN_DIR:-}"
build_bins=()
if [[ -n "$bin_dir" ]]; then
    for bin in stackbench analyze-trends; do
        [[ -f "$bin_dir/$bin" && -x "$bin_dir/$bin" ]] ||
            die "STACKBENCH_BIN_DIR '$bin_dir' holds no executable $bin"
        "$bin_dir/$bin" --version >/dev/null 2>&1 ||
            die "STACKBENCH_BIN_DIR's $bin ('$bin_dir/$bin') does not run (--version failed)"
    done
    say "building the bench targets (release); the binaries are $bin_dir's"
else
    bin_dir="$(realpath -m "${CARGO_TARGET_DIR:-target}/release")"
    build_bins=(--bin analyze-trends --bin stackbench)
    say "building the bench targets and the two binaries (release, one cargo build)"
fi
# One invocation, in the bench profile: `cargo bench` builds with the dev-dependencies'
# features unified in, a separate `cargo build --release --bin …` without them, so two
# commands compiled nearly every crate twice (2026-11-28, 2-core VM, another build beside
# it: the separate binaries' build recompiled 340 crates in 679 s; in the same invocation
# the binaries added 11 crates, 192 s). Built together they share one feature set, and the
# `cargo bench` runs below find everything fresh. Cargo prints its progress as it goes.
build_args=()
for t in "${targets[@]}"; do build_args+=(--bench "$t"); done
cargo build --profile bench "${build_args[@]}" "${build_bins[@]}" ||
    die "the build failed (see cargo's messages above)"

# Without --results, runs go where $STACKBENCH_RESULTS_DIR, else the config's results_dir,
# says, as analyze-trends and stackbench validate read them (the binary resolves it, so the
# script neither parses TOML nor repeats the precedence).
if [[ "$results_given" == 0 ]]; then
    config_args=()
    [[ -n "$config_file" ]] && config_args=(--config "$config_file")
    results_dir=$("$bin_dir/stackbench" config --get results_dir "${config_args[@]}") ||
        die "cannot resolve the results directory (see above)"
fi

# A named suite picks its own targets (unless --targets narrows them) and checks the config.
if [[ "$suite" != quick && "$suite" != full ]] || [[ -n "$config_file" ]]; then
    suite_targets=$("$bin_dir/stackbench" suite "$suite" --targets) ||
        die "cannot use suite '$suite' (see above)"
    if [[ -z "$targets_csv" ]]; then
        IFS=',' read -r -a targets <<<"$suite_targets"
    fi
fi

# Which ids each target would run (stdout, Criterion's list format) and which it would
# record as skipped with a reason (stderr, "skipped <id>: <reason>"). A target with only
# skips still runs, so its reasons reach the run record; a filter matching neither is an error.
list_target() {
    local target="$1" listing="$2"
    local args=(--list)
    [[ -n "$filter" ]] && args+=("$filter")
    cargo bench --quiet --bench "$target" -- "${args[@]}" >"$listing.out" 2>"$listing.err"
    sed -n 's/: benchmark$//p' "$listing.out" >"$listing.ids"
    sed -n 's/^skipped \([^:]*\): .*/\1/p' "$listing.err" >"$listing.skips"
}

listing_dir=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf "$listing_dir"' EXIT
declare -A selected skipped
total=0
for target in "${targets[@]}"; do
    list_target "$target" "$listing_dir/$target"
    selected[$target]=$(grep -c . "$listing_dir/$target.ids" || true)
    skipped[$target]=$(grep -c . "$listing_dir/$target.skips" || true)
    total=$((total + selected[$target] + skipped[$target]))
    if [[ $list -eq 1 ]]; then
        cat "$listing_dir/$target.ids"
        sed 's/^/(skipped here) /' "$listing_dir/$target.skips" >&2
    fi
done

if [[ $total -eq 0 ]]; then
    if [[ -n "$filter" ]]; then
        die "the filter '$filter' matches no benchmark of suite '$suite' (try: ./run_benchmarks.sh --list)"
    fi
    die "suite '$suite' selects no benchmark (stackbench suite $suite shows what it selects)"
fi
[[ $list -eq 1 ]] && exit 0

check_writable "$criterion_dir" "Criterion output"
check_writable "$results_dir" "results"

log_dir="${CARGO_TARGET_DIR:-target}/stackbench-logs/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$log_dir" || die "cannot create the log directory '$log_dir'"

say "suite: $suite${filter:+, filter: $filter}${label:+, label: $label}${baseline:+, baseline: $baseline}"
# The live progress file: the plan and the end from here, one line per benchmark from the
# harness as it lands. `stackbench dashboard --follow` reads it; nothing parses stdout.
export STACKBENCH_PROGRESS="$criterion_dir/stackbench/progress.jsonl"
mkdir -p "$(dirname "$STACKBENCH_PROGRESS")"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
printf '{"event":"plan","total":%d,"suite":"%s","unix_ms":%s}\n' "$total" "$suite" "$(now_ms)" >"$STACKBENCH_PROGRESS"
stackbench_bin="$bin_dir/stackbench"
failed=()
start_all=$(date +%s)
run_targets() {
    for target in "${targets[@]}"; do
        if [[ $((selected[$target] + skipped[$target])) -eq 0 ]]; then
            say "$target: no benchmark selected"
            continue
        fi
        say "$target (${selected[$target]} to run, ${skipped[$target]} skipped here; log: $log_dir/$target.log)"
        local start status
        start=$(date +%s)
        local run_args=("${criterion_args[@]}")
        [[ -n "$filter" ]] && run_args+=("$filter")
        if [[ $dashboard -eq 1 ]]; then
            cargo bench --quiet --bench "$target" -- "${run_args[@]}" >"$log_dir/$target.log" 2>&1
        else
            cargo bench --quiet --bench "$target" -- "${run_args[@]}" 2>&1 | tee "$log_dir/$target.log"
        fi
        status=${PIPESTATUS[0]}
        if [[ $status -ne 0 ]]; then
            say "$target FAILED (exit $status): see $log_dir/$target.log"
            echo "$target" >>"$log_dir/failed-targets"
        else
            say "$target done in $(($(date +%s) - start)) s"
        fi
    done
    printf '{"event":"done","unix_ms":%s}\n' "$(now_ms)" >>"$STACKBENCH_PROGRESS"
}
if [[ $dashboard -eq 1 ]]; then
    # The suite runs in the background; the dashboard owns the terminal until q.
    run_targets 2>>"$log_dir/runner.log" &
    runner=$!
    "$stackbench_bin" dashboard --follow --progress "$STACKBENCH_PROGRESS" \
        --criterion-dir "$criterion_dir" --results "$results_dir" ||
        say "the dashboard exited with an error; the suite goes on (logs: $log_dir)"
    say "waiting for the suite to finish (logs: $log_dir)"
    wait "$runner"
else
    run_targets
fi
if [[ -f "$log_dir/failed-targets" ]]; then
    mapfile -t failed <"$log_dir/failed-targets"
fi

analyzer="$bin_dir/analyze-trends"
record_args=(record --criterion-dir "$criterion_dir" --results "$results_dir")
[[ -n "$label" ]] && record_args+=(--label "$label")
[[ -n "$baseline" ]] && record_args+=(--baseline "$baseline")
say "recording the run"
if ! "$analyzer" "${record_args[@]}"; then
    say "recording the run FAILED"
    failed+=("record")
fi
say "writing the report"
if ! "$analyzer" report "$results_dir"; then
    say "writing the report FAILED"
    failed+=("report")
fi

# The summary page as text: the same charts the dashboard shows.
"$stackbench_bin" show --page summary --results "$results_dir" || say "the summary page could not be drawn"

cat <<EOF

stackbench: suite $suite finished in $(($(date +%s) - start_all)) s
  Criterion output   $criterion_dir   (per benchmark: <id>/new/{estimates,sample,benchmark}.json)
  system probe       $criterion_dir/stackbench/system.json
  skips and failures $criterion_dir/stackbench/targets/<target>.json
  run records        $results_dir/runs/
  reports            $results_dir/reports/ (report.md, report.html, report.json, summary.csv)
  logs               $log_dir/
EOF

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "stackbench: FAILED: ${failed[*]}" >&2
    exit 1
fi
