#!/usr/bin/env bash
# Submits a stackbench fleet run to Slurm: builds the bench executables and analyze-trends
# once (so no two tasks ever compile; one given by --analyzer is used as it is), then one
# job array per machine kind
# (ci/slurm/stackbench.sbatch, one task per node) and the merge job
# (ci/slurm/merge.sbatch) that waits for all of them with --dependency=afterok.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: ci/slurm/submit.sh --results DIR [OPTIONS]

Options:
  --results DIR          shared results directory (on a filesystem every node sees); the
                         merged store and reports/hardware.{md,html,json} end up there
  --tasks N              array tasks (nodes) per kind (default 1)
  --kind NAME=ARGS       one array per machine kind, with its own sbatch arguments, e.g.
                         --kind h100='--partition=gpu --constraint=h100 --gres=gpu:1'
                         (repeatable; without it: one array of kind "default")
  --sbatch-arg ARG       an sbatch argument for every job (repeatable: --account=..., --time=...)
  --targets LIST         comma-separated bench targets (default: all)
  --filter REGEX         only benchmark ids matching REGEX (Criterion's filter)
  --suite quick|full     (default quick)
  --label TEXT           label stored with every run (default fleet-<timestamp>)
  --criterion-args ARGS  extra Criterion arguments (space-separated)
  --store URL            record straight into this store instead of merging files: a
                         results server http(s)://HOST:PORT (`stackbench serve`) or a
                         PostgreSQL store postgres://USER@HOST/DB; uploads are retried,
                         and a run the store cannot take stays in the task's spool for
                         the merge job to deliver (default: files into incoming/, merged)
  --token-file FILE      the server's write token, read by each task from FILE (on the
                         shared filesystem, mode 600); without it, STACKBENCH_STORE_TOKEN
                         from this environment (sbatch passes it on)
  --analyzer PATH        use this analyze-trends (an installed one, on a filesystem every
                         node sees) instead of building the checkout's; default: the
                         STACKBENCH_ANALYZER environment variable, else build it
  --shared-nodes         do not ask for --exclusive nodes (tests on a one-node cluster)
  -h, --help             this help

The checkout (its target/ holds the executables) and DIR must be on a shared filesystem.
Prints the array job ids, the merge job id, the fleet directory and the analyze-trends the
jobs run, one `name=value` per line.

Examples:
  ci/slurm/submit.sh --results /shared/stackbench --tasks 4 --sbatch-arg=--partition=gpu
  ci/slurm/submit.sh --results /shared/stackbench --tasks 4 \
      --store http://bench-server:8765 --token-file /shared/stackbench/upload.token
EOF
}

die() {
    echo "submit.sh: $*" >&2
    exit 2
}

# shellcheck source=ci/bench_targets.sh
. "$(dirname "$0")/../bench_targets.sh"
mapfile -t ALL_TARGETS < <(bench_targets "$(dirname "$0")/../..") && [[ ${#ALL_TARGETS[@]} -gt 0 ]] ||
    die "cannot read the bench targets from crates/benches/Cargo.toml"
results="" tasks=1 filter="" suite=quick label="" criterion_args="" targets_csv="" exclusive=1
store="" token_file="" analyzer="${STACKBENCH_ANALYZER:-}"
kinds=() common=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --results) results="${2:?--results needs a value}"; shift ;;
        --tasks) tasks="${2:?--tasks needs a value}"; shift ;;
        --kind) kinds+=("${2:?--kind needs NAME=ARGS}"); shift ;;
        --sbatch-arg) common+=("${2:?--sbatch-arg needs a value}"); shift ;;
        --sbatch-arg=*) common+=("${1#*=}") ;;
        --targets) targets_csv="${2:?--targets needs a value}"; shift ;;
        --filter) filter="${2:?--filter needs a value}"; shift ;;
        --suite) suite="${2:?--suite needs a value}"; shift ;;
        --label) label="${2:?--label needs a value}"; shift ;;
        --criterion-args) criterion_args="${2:?--criterion-args needs a value}"; shift ;;
        --store) store="${2:?--store needs a value}"; shift ;;
        --token-file) token_file="${2:?--token-file needs a value}"; shift ;;
        --analyzer) analyzer="${2:?--analyzer needs a value}"; shift ;;
        --shared-nodes) exclusive=0 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
    shift
done

[[ -n "$results" ]] || { usage >&2; die "--results is required"; }
[[ "$tasks" =~ ^[1-9][0-9]*$ ]] || die "--tasks must be a positive integer, not '$tasks'"
[[ "$suite" == quick || "$suite" == full ]] || die "unknown suite '$suite': expected quick or full"
targets=("${ALL_TARGETS[@]}")
[[ -n "$targets_csv" ]] && IFS=',' read -r -a targets <<<"$targets_csv"
for t in "${targets[@]}"; do
    [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || die "unknown bench target '$t' (known: ${ALL_TARGETS[*]})"
done
[[ ${#kinds[@]} -gt 0 ]] || kinds=("default=")
for kind in "${kinds[@]}"; do
    [[ "$kind" == *=* && "${kind%%=*}" =~ ^[A-Za-z0-9_.-]+$ ]] ||
        die "bad --kind '$kind': expected NAME=SBATCH_ARGS, NAME of letters, digits, . _ -"
done
# The command line is checked first: its mistakes are named even off a login node.
command -v sbatch >/dev/null || die "sbatch is not on PATH: run this on a Slurm login node"

if [[ -n "$token_file" ]]; then
    [[ -r "$token_file" ]] || die "--token-file '$token_file' is not a readable file"
    token_file="$(cd "$(dirname "$token_file")" && pwd)/$(basename "$token_file")"
fi
[[ -z "$token_file" || -n "$store" ]] || die "--token-file needs --store"
if [[ -n "$analyzer" ]]; then
    [[ -f "$analyzer" && -x "$analyzer" ]] || die "--analyzer '$analyzer' is not an executable file"
    analyzer="$(cd "$(dirname "$analyzer")" && pwd)/$(basename "$analyzer")"
    "$analyzer" --version >/dev/null 2>&1 || die "--analyzer '$analyzer' does not run as analyze-trends (--version failed)"
fi
repo="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$results" || die "cannot create the results directory '$results'"
results="$(cd "$results" && pwd)"
fleet="$results/fleet/$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "$fleet/incoming" "$fleet/nodes" "$fleet/logs" || die "cannot create '$fleet'"

# Build once, here: the tasks run these executables directly.
build_args=()
for t in "${targets[@]}"; do build_args+=(--bench "$t"); done
built="the bench executables"
if [[ -n "$analyzer" ]]; then
    echo "submit.sh: building $built (release); analyze-trends is $analyzer" >&2
else
    built+=" and analyze-trends"
    echo "submit.sh: building $built (release)" >&2
    build_args+=(--bin analyze-trends)
fi
# One cargo invocation in the bench profile (as run_benchmarks.sh): built apart, the binary
# without the dev-dependencies' features and the benches with them, nearly every crate
# compiled twice.
(cd "$repo" && cargo build --profile bench --message-format=json-render-diagnostics \
    "${build_args[@]}") >"$fleet/build.jsonl" ||
    die "building $built failed"
# Each bench target's executable, and analyze-trends' when it was built here.
python3 - "$fleet/build.jsonl" >"$fleet/executables.tsv" <<'PY' || die "cannot read cargo's build messages"
import json, sys
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
        if "bench" in msg["target"]["kind"] or msg["target"]["name"] == "analyze-trends":
            print(f'{msg["target"]["name"]}\t{msg["executable"]}')
PY
if [[ -z "$analyzer" ]]; then
    analyzer=$(sed -n 's/^analyze-trends\t//p' "$fleet/executables.tsv")
    [[ -x "$analyzer" ]] || die "cargo named no analyze-trends executable (see $fleet/build.jsonl)"
    sed -i '/^analyze-trends\t/d' "$fleet/executables.tsv"
fi
[[ $(wc -l <"$fleet/executables.tsv") -eq ${#targets[@]} ]] || die "cargo listed $(wc -l <"$fleet/executables.tsv") bench executables for ${#targets[@]} targets (see $fleet/build.jsonl)"

# The jobs inherit these (sbatch exports the environment by default); exporting them here
# rather than in --export keeps commas in a filter intact.
export STACKBENCH_REPO="$repo" STACKBENCH_FLEET_DIR="$fleet" STACKBENCH_FLEET_RESULTS="$results"
export STACKBENCH_ANALYZER="$analyzer"
export STACKBENCH_FLEET_FILTER="$filter" STACKBENCH_SUITE="$suite"
export STACKBENCH_FLEET_LABEL="${label:-fleet-$(basename "$fleet")}"
export STACKBENCH_FLEET_CRITERION_ARGS="$criterion_args"
export STACKBENCH_FLEET_STORE="$store" STACKBENCH_FLEET_TOKEN_FILE="$token_file"

node_args=(--nodes=1 --ntasks=1)
[[ $exclusive -eq 1 ]] && node_args+=(--exclusive)
array_ids=()
for kind in "${kinds[@]}"; do
    name="${kind%%=*}"
    read -r -a kind_args <<<"${kind#*=}"
    id=$(STACKBENCH_FLEET_KIND="$name" sbatch --parsable --chdir="$repo" --array="0-$((tasks - 1))" \
        --job-name="stackbench-$name" --output="$fleet/logs/stackbench-$name-%A_%a.out" \
        "${node_args[@]}" "${common[@]}" "${kind_args[@]}" "$repo/ci/slurm/stackbench.sbatch") ||
        die "sbatch refused the array for kind '$name'"
    id="${id%%;*}"
    array_ids+=("$id")
    echo "array_$name=$id"
done

dependency="afterok$(printf ':%s' "${array_ids[@]}")"
merge_id=$(sbatch --parsable --chdir="$repo" --dependency="$dependency" --kill-on-invalid-dep=yes \
    --job-name=stackbench-merge --output="$fleet/logs/merge-%j.out" --nodes=1 --ntasks=1 \
    "${common[@]}" "$repo/ci/slurm/merge.sbatch") || die "sbatch refused the merge job"
echo "merge=${merge_id%%;*}"
echo "fleet_dir=$fleet"
echo "analyzer=$analyzer"
