#!/usr/bin/env bash
# The fleet scripts, run for real on a one-node Slurm cluster on localhost: installs
# Debian's Slurm and MUNGE when missing, starts munged, slurmctld and slurmd on a private
# config in a temporary directory (their own socket, key, ports and spool, nothing in
# /etc), submits ci/slurm/submit.sh's 2-task array on the quick CPU suite narrowed to one
# small triad, plus the dependent merge job, waits for them with a timeout and checks both
# runs and the merged store and report. Always stops the daemons it started, by their PIDs,
# and fails if any of them, or any job step, is left behind.
#
# STACKBENCH_REQUIRE_SLURM=1 (ci/test.sh sets it) turns "cannot install Slurm here" from a
# skip into a failure. STACKBENCH_SLURM_GPUS=N (ci/gpu_tests.sh sets it on a GPU machine)
# declares N GPUs as generic resources (gres.conf: STACKBENCH_SLURM_GPU_FILES, default
# /dev/nvidia[0-(N-1)]) and submits the array as kind `gpu` with --gres=gpu:1, measuring
# STACKBENCH_SLURM_GPU_FILTER (default: the CUDA triads) instead of the CPU triad.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
export PATH="$PATH:/usr/sbin:/sbin"
started=$(date +%s)
timeout_s="${STACKBENCH_SLURM_TEST_TIMEOUT:-180}"
gpus="${STACKBENCH_SLURM_GPUS:-0}"
[[ "$gpus" =~ ^[0-9]+$ ]] || { echo "slurm-test: STACKBENCH_SLURM_GPUS must be a count" >&2; exit 2; }
if [[ $gpus -gt 0 ]]; then
    kind=gpu
    bench_filter="${STACKBENCH_SLURM_GPU_FILTER:-^memory_bandwidth/cuda/triad/}"
    gpu_files="${STACKBENCH_SLURM_GPU_FILES:-/dev/nvidia[0-$((gpus - 1))]}"
else
    kind=default
    # The quick suite's in-cache triad: its size follows the L2 (128KiB where two cores
    # share 1 MiB, 256KiB with 1 MiB per core), so match whichever KiB size this machine
    # runs; a machine whose L2 totals 6 MiB or more runs it in MiB, and the job then says
    # its filter matched nothing.
    bench_filter='^memory_bandwidth/cpu/triad/[0-9]+KiB$'
fi

say() { echo "slurm-test: $*"; }
fail() {
    echo "slurm-test: FAILED: $*" >&2
    exit 1
}

install_slurm() {
    local tools=(slurmctld slurmd sbatch scontrol sinfo squeue scancel munged munge unmunge)
    local missing=() tool
    for tool in "${tools[@]}"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
        local reason="Slurm/MUNGE are missing (${missing[*]}) and cannot be installed here (needs root and apt-get)"
        [[ "${STACKBENCH_REQUIRE_SLURM:-0}" == 1 ]] && fail "$reason"
        say "skipped: $reason"
        exit 0
    fi
    say "installing slurmctld slurmd slurm-client munge (Debian packages)"
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
}

install_slurm
# Job steps already on this machine (another cluster's) are not ours: remember them.
steps_before=" $(pgrep -x slurmstepd | tr "\n" " " || true) "
tmp=$(mktemp -d /tmp/stackbench-slurm.XXXXXX)
munged_pid="" ctld_pid="" slurmd_pid=""

stop_pid() {
    local pid="$1" name="$2" i
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "$name ($pid) ignored TERM: killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# Processes still running from this test: anything whose command line names the
# temporary directory (daemons, batch scripts in the spool) and new job steps. Zombies
# (exited, waiting for init to reap them) run nothing and are not counted.
leftovers() {
    local pid
    for pid in $(pgrep -f -- "$tmp" || true) $(pgrep -x slurmstepd || true); do
        [[ "$pid" == "$$" || "$steps_before" == *" $pid "* ]] && continue
        [[ "$(ps -o stat= -p "$pid" 2>/dev/null)" == Z* ]] && continue
        kill -0 "$pid" 2>/dev/null && echo "$pid"
    done
}

cleanup() {
    local rc=$? pid left
    trap - EXIT
    if [[ -n "$ctld_pid" ]] && kill -0 "$ctld_pid" 2>/dev/null; then
        scancel --quiet --full --user="$(id -un)" 2>/dev/null || true
        for _ in $(seq 50); do
            [[ -z "$(squeue -h 2>/dev/null)" ]] && break
            sleep 0.2
        done
    fi
    stop_pid "$slurmd_pid" slurmd
    stop_pid "$ctld_pid" slurmctld
    stop_pid "$munged_pid" munged
    left=$(leftovers | sort -u)
    if [[ -n "$left" ]]; then
        echo "slurm-test: FAILED: processes left behind:" >&2
        for pid in $left; do ps -o pid=,args= -p "$pid" >&2 || true; done
        for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
        rc=1
    fi
    if [[ $rc -ne 0 ]]; then
        for log in "$tmp"/*.log "$tmp"/results/fleet/*/logs/*.out; do
            [[ -f "$log" ]] && { echo "--- $log" >&2; tail -n 25 "$log" >&2; }
        done
    fi
    [[ "${STACKBENCH_SLURM_KEEP:-0}" == 1 ]] && say "kept $tmp" || rm -rf "$tmp"
    say "$([[ $rc -eq 0 ]] && echo passed || echo failed) in $(($(date +%s) - started)) s (daemons stopped)"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() {
    local what="$1" seconds="$2"
    shift 2
    local deadline=$(($(date +%s) + seconds))
    until "$@"; do
        [[ $(date +%s) -lt $deadline ]] || fail "$what did not happen within $seconds s"
        sleep 0.5
    done
}

start_munge() {
    mkdir -m 700 "$tmp/munge"
    dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$tmp/munge/munge.key"
    munged --foreground --force --socket="$tmp/munge/socket" --key-file="$tmp/munge/munge.key" \
        --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/seed" \
        --log-file="$tmp/munged.log" >>"$tmp/munged.log" 2>&1 &
    munged_pid=$!
    wait_for "munged answering" 15 bash -c "munge -n -S '$tmp/munge/socket' 2>/dev/null | unmunge -S '$tmp/munge/socket' >/dev/null 2>&1"
}

write_slurm_conf() {
    local host
    host=$(hostname -s)
    mkdir -p "$tmp/state" "$tmp/spool"
    cat >"$tmp/slurm.conf" <<EOF
ClusterName=stackbenchtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN$([[ $gpus -gt 0 ]] && echo " Gres=gpu:$gpus")
PartitionName=test Nodes=$host Default=YES MaxTime=30 State=UP
EOF
    if [[ $gpus -gt 0 ]]; then
        echo "GresTypes=gpu" >>"$tmp/slurm.conf"
        # slurmd reads gres.conf beside slurm.conf.
        echo "Name=gpu File=$gpu_files" >"$tmp/gres.conf"
    fi
    export SLURM_CONF="$tmp/slurm.conf"
}

node_idle() {
    [[ "$(sinfo -h -N -o '%T' 2>/dev/null)" == idle ]]
}

start_slurm() {
    slurmctld -D -i -f "$SLURM_CONF" >>"$tmp/slurmctld.log" 2>&1 &
    ctld_pid=$!
    slurmd -D -f "$SLURM_CONF" >>"$tmp/slurmd.log" 2>&1 &
    slurmd_pid=$!
    wait_for "the node becoming idle" 30 node_idle
}

job_states() {
    # One JobState per job (one per array task); empty when the job is unknown.
    scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2
}

job_finished() {
    local state
    state=$(job_states "$1" | sort -u | tr '\n' ' ')
    [[ -n "$state" && ! "$state" =~ (PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED) ]]
}

start_munge
write_slurm_conf
start_slurm
say "one-node cluster up on $(hostname -s) in $(($(date +%s) - started)) s (config $SLURM_CONF)"

kind_args=()
[[ $gpus -gt 0 ]] && kind_args=(--kind "gpu=--gres=gpu:1")
submitted=$(ci/slurm/submit.sh --results "$tmp/results" --tasks 2 --targets memory_bandwidth \
    --filter "$bench_filter" --label slurm-test --sbatch-arg=--time=5 "${kind_args[@]}") || fail "submit.sh failed"
echo "$submitted"
array_id=$(sed -n "s/^array_$kind=//p" <<<"$submitted")
merge_id=$(sed -n 's/^merge=//p' <<<"$submitted")
fleet=$(sed -n 's/^fleet_dir=//p' <<<"$submitted")
[[ "$array_id" =~ ^[0-9]+$ && "$merge_id" =~ ^[0-9]+$ && -d "$fleet" ]] || fail "submit.sh printed no job ids"
# The analyze-trends the jobs run, as submit.sh names it: STACKBENCH_ANALYZER's (ci/test.sh
# passes its test build's, so CI builds no release analyze-trends), else the one it built.
analyzer=$(sed -n 's/^analyzer=//p' <<<"$submitted")
[[ -x "$analyzer" ]] || fail "submit.sh named no analyze-trends the jobs run"
scontrol show job -o "$merge_id" | grep -q "Dependency=afterok:${array_id}" ||
    fail "the merge job $merge_id does not depend on afterok:$array_id"

# Each fleet's jobs get the whole timeout from the moment they are queued: submit.sh's release
# build (of analyze-trends too, without STACKBENCH_ANALYZER) can take minutes on a loaded
# machine, and that is not the fleet under test.
wait_for "the merge job finishing" "$timeout_s" job_finished "$merge_id"
array_states=$(job_states "$array_id" | tr '\n' ' ')
say "array $array_id: $array_states; merge $merge_id: $(job_states "$merge_id")"
[[ "$array_states" == "COMPLETED COMPLETED " ]] || fail "expected 2 COMPLETED array tasks, got: $array_states"

check_runs() {
    python3 - "$fleet/incoming" "$bench_filter" "$array_id" "$kind" <<'PY'
import json, pathlib, re, sys
incoming, bench_filter, array_id, kind = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
files = sorted(incoming.iterdir())
names = [f.name for f in files]
assert all(n.endswith(".json") and not n.startswith(".") for n in names), f"stray files: {names}"
assert [n.split("-", 1)[0] for n in names] == [f"{array_id}_0", f"{array_id}_1"], f"per-task names: {names}"
for f in files:
    run = json.loads(f.read_text())
    assert run["schema"] == "stackbench.run.v1", f"{f}: schema {run.get('schema')}"
    ids = [b["id"] for b in run["benchmarks"]]
    assert ids and all(re.search(bench_filter, i) for i in ids), f"{f}: benchmarks {ids}, skipped {run['skipped']}"
    for bench in run["benchmarks"]:
        times = bench["samples"]["times"]
        assert len(times) >= 10 and min(times) > 0, f"{f}: {bench['id']}: {len(times)} samples"
    assert run["label"].startswith(f"slurm-test/{kind}/"), f"{f}: label {run['label']}"
print(f"slurm-test: {len(files)} runs delivered, one per task, each measured {', '.join(ids)}")
PY
}

rows_for() {
    # Rows (one per benchmark per run) whose id, the 6th column, matches the filter.
    "$analyzer" export --results "$1" --format csv |
        awk -F, -v re="$bench_filter" 'NR > 1 && $6 ~ re' | wc -l
}

check_runs || fail "the per-task runs are wrong"
if [[ $gpus -gt 0 ]]; then
    [[ $(grep -lE 'GPUs visible: [0-9]' "$fleet"/logs/stackbench-gpu-*.out | wc -l) -eq 2 ]] ||
        fail "a task of the gpu array was not given a GPU (no CUDA_VISIBLE_DEVICES in its log)"
fi
# What the two runs hold, read by analyze-trends itself from a store of just those files.
mkdir -p "$tmp/check/runs" && cp "$fleet"/incoming/*.json "$tmp/check/runs/"
expected=$(rows_for "$tmp/check")
[[ $expected -ge 2 ]] || fail "analyze-trends reads $expected benchmark rows from the 2 delivered runs"
merge_state=$(job_states "$merge_id")
if "$analyzer" help import >/dev/null 2>&1 && "$analyzer" help hardware >/dev/null 2>&1; then
    [[ "$merge_state" == COMPLETED ]] || fail "the merge job ended $merge_state"
    [[ $(rows_for "$tmp/results") -eq $expected ]] || fail "the merged store does not hold the 2 runs"
    for report in hardware.md hardware.html hardware.json; do
        grep -q triad "$tmp/results/reports/$report" || fail "reports/$report does not show the triad"
    done
    "$analyzer" import "$fleet/incoming" --results "$tmp/results" >/dev/null
    [[ $(rows_for "$tmp/results") -eq $expected ]] || fail "importing the same runs again duplicated them"
    say "merge job imported both runs (idempotent on a second import) and wrote reports/hardware.{md,html,json}"
else
    # This build predates `import`/`hardware`: the merge job must have run and refused.
    [[ "$merge_state" == FAILED ]] || fail "the merge job ended $merge_state, expected FAILED without import"
    grep -q "no \`import\` command" "$fleet"/logs/merge-*.out || fail "the merge job's log does not say why it failed"
    say "NOTE: analyze-trends has no import/hardware in this build: the merge job ran and failed naming" \
        "the missing command; checked the 2 per-task runs instead (they load with analyze-trends export)"
fi

# A node that delivers no run (here: a filter that matches nothing, so `record` refuses)
# fails its task, and afterok then cancels the merge instead of merging a partial fleet.
submitted=$(ci/slurm/submit.sh --results "$tmp/results-empty" --tasks 2 --targets memory_bandwidth \
    --filter '^no-such-benchmark$' --label slurm-test --sbatch-arg=--time=5 "${kind_args[@]}") ||
    fail "submit.sh failed (second fleet)"
array_id=$(sed -n "s/^array_$kind=//p" <<<"$submitted")
merge_id=$(sed -n 's/^merge=//p' <<<"$submitted")
wait_for "the second merge job being cancelled" "$timeout_s" job_finished "$merge_id"
array_states=$(job_states "$array_id" | tr '\n' ' ')
[[ "$array_states" == "FAILED FAILED " ]] || fail "tasks that delivered no run ended: $array_states"
[[ "$(job_states "$merge_id")" == CANCELLED ]] || fail "the merge after failed tasks ended $(job_states "$merge_id")"
say "tasks that delivered no run failed, and the merge was cancelled (afterok)"
