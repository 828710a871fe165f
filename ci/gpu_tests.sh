#!/usr/bin/env bash
# GPU job: run on a self-hosted runner with an NVIDIA (or AMD) GPU. Exercises every GPU
# path the CPU-only CI cannot: the ignored device tests, one pass of each GPU benchmark in
# Criterion's --test mode (verify + one run each, no timing), and the system probe.
# The device tests (tests/gpu_cuda.rs, tests/gpu_rocm.rs) fail on a machine whose probe
# finds the GPU unless every benchmark they name is measured and checked; they also cover
# what only a GPU can confirm: NVRTC/hipRTC kernels compiled and loaded by the backend
# (a build error is a failure, not a skip), the host link (PCIe/NVLink-C2C) and the
# library choice in the probe, the MI300X bandwidth cross-check, and throttle notes from
# busy clocks after warm-up.
# Exit status: non-zero if any of them fails. Set STACKBENCH_COMPARE_TORCH=1 to also run
# the side-by-side PyTorch comparison (needs torch; it takes a few minutes).
#
# Without a Rust toolchain on the GPU machine: build a bundle where there is one
# (ci/gpu_bundle.sh, same commit) and run STACKBENCH_GPU_BUNDLE=.gpu/bundle.tar.xz
# ci/gpu_tests.sh. The prebuilt executables then replace every cargo call; the full test
# suite shrinks to the ignored GPU tests (the rest ran in the CPU CI, and some of them build
# with cargo), and the Slurm part (which builds) is skipped with that reason.
#
# STACKBENCH_GPU_SECTIONS=a,b,...: run only these sections (default: all of them, in order):
#   probe tests kernels compile benches vulkan alloc components models collectives clocks
#   profile validate compare slurm
# A machine lent for a few minutes can run groups of them side by side, one process each
# (give them a bundle directory, not the archive, so they do not unpack it at once).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

all_sections=(probe tests kernels compile benches vulkan alloc components models collectives clocks profile validate compare slurm)
sections="${STACKBENCH_GPU_SECTIONS:-$(IFS=,; echo "${all_sections[*]}")}"
for s in ${sections//,/ }; do
    [[ " ${all_sections[*]} " == *" $s "* ]] ||
        { echo "STACKBENCH_GPU_SECTIONS: unknown section '$s' (known: ${all_sections[*]})" >&2; exit 2; }
done
want() { [[ ",$sections," == *",$1,"* ]]; }
# The vendor of the GPU this machine lists: cuda, rocm, or nothing.
gpu_vendor() {
    if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
        echo cuda
    elif command -v rocm-smi >/dev/null && rocm-smi --showid 2>/dev/null | grep -q 'GPU'; then
        echo rocm
    fi
}

bundle=""
if [[ -n "${STACKBENCH_GPU_BUNDLE:-}" ]]; then
    bundle="$PWD/.gpu/bundle"
    if [[ -f "$STACKBENCH_GPU_BUNDLE" ]]; then
        rm -rf "$bundle" && mkdir -p "$PWD/.gpu"
        tar -C "$PWD/.gpu" -xJf "$STACKBENCH_GPU_BUNDLE"
    elif [[ -d "$STACKBENCH_GPU_BUNDLE" ]]; then
        bundle=$(cd "$STACKBENCH_GPU_BUNDLE" && pwd)
    else
        echo "STACKBENCH_GPU_BUNDLE=$STACKBENCH_GPU_BUNDLE: no such file or directory" >&2
        exit 2
    fi
    [[ -f "$bundle/MANIFEST" ]] || { echo "$bundle has no MANIFEST: not a ci/gpu_bundle.sh bundle" >&2; exit 2; }
    echo "== prebuilt bundle: $(tr '\n' ';' <"$bundle/MANIFEST")"
    bundle_commit=$(awk '$1 == "commit" {print $2}' "$bundle/MANIFEST")
    if [[ "$bundle_commit" != "$(git rev-parse HEAD 2>/dev/null || echo unknown)" ]]; then
        echo "warning: the bundle was built at $bundle_commit, this checkout is at $(git rev-parse HEAD 2>/dev/null || echo 'no git')"
    fi
    # The executables look for the checkout they were built in (package root, and the tests
    # for target/release/stackbench there): link that path here when it differs.
    root=$(awk '$1 == "root" {print $2}' "$bundle/MANIFEST")
    if [[ "$root" != "$PWD" ]]; then
        if [[ "$(readlink -f "$root" 2>/dev/null)" == "$(readlink -f "$PWD")" ]]; then
            : # already linked here (by an earlier or a parallel run)
        elif [[ -e "$root" ]]; then
            echo "warning: the bundle's build path $root exists and is not this checkout; its executables read files there"
        else
            mkdir -p "$(dirname "$root")" && ln -s "$PWD" "$root" ||
                { echo "cannot link the bundle's build path $root to $PWD (run as a user who can, or check out there)" >&2; exit 2; }
        fi
    fi
    mkdir -p target/release
    # A temporary name, then a rename: parallel runs (ci/gpu_parallel.sh) copy at once, and
    # cp onto a file another run is executing fails.
    for f in "$bundle"/bin/*; do
        cp -f "$f" "target/release/.$(basename "$f").$$" && mv -f "target/release/.$(basename "$f").$$" "target/release/$(basename "$f")"
    done
    export STACKBENCH_BENCH_DIR="$bundle/bench"
    sb() { target/release/stackbench "$@"; }
    # `bench TARGET ARGS…`: as `cargo bench --bench TARGET -- ARGS…`.
    bench() { local target=$1; shift; "$bundle/bench/$target" --bench "$@"; }
    # `gpu_test FILE ARGS…`: as `cargo test --release --test FILE -- ARGS…`.
    gpu_test() { local file=$1; shift; "$bundle/test/$file" "$@"; }
else
    sb() { cargo run --release --quiet --bin stackbench -- "$@"; }
    bench() { local target=$1; shift; cargo bench --bench "$target" -- "$@"; }
    gpu_test() { local file=$1; shift; cargo test --release --test "$file" -- "$@"; }
fi

if want probe; then
echo "== system probe"
sb info --no-measure
fi

if want tests; then
echo "== tests, including the ones that need a GPU"
# The multi-GPU tests need two devices: on fewer they are skipped, and the log says why.
MULTI_GPU_TESTS=(nccl_collectives_on_every_gpu)
gpus=$(ci/gpu_count.sh)
skip_args=()
if [[ $gpus -lt 2 ]]; then
    for name in "${MULTI_GPU_TESTS[@]}"; do
        echo "skipped $name: needs two or more GPUs, this machine has $gpus (nvidia-smi -L, rocm-smi --showid)"
        skip_args+=(--skip "$name")
    done
fi
if [[ -n "$bundle" ]]; then
    for file in "$bundle"/test/*; do
        # Only the ignored (GPU) tests: the others ran in the CPU CI, and some build with cargo.
        echo "--- $(basename "$file") (prebuilt, its GPU tests)"
        "$file" --ignored "${skip_args[@]}"
    done
else
    cargo test --release -- --include-ignored "${skip_args[@]}"
fi
echo "== the device tests again, verbosely: each names what it measured or why it skipped"
for file in gpu_cuda gpu_rocm; do
    gpu_test "$file" --include-ignored --nocapture 2>&1 \
        | grep -E "measured and checked|skipped|throttl|^test " || true
done
fi

if want kernels; then
echo "== the kernel source through the vendor compilers (NVRTC + ptxas, clang), when set up"
if compgen -G ".venv-components/lib/python3*/site-packages/nvidia/cu*/bin/ptxas" >/dev/null; then
    # Exit 2 is "clang not found" (the NVRTC + ptxas part has passed by then).
    STACKBENCH_REQUIRE_NVRTC=1 scripts/gpu/check_kernels.sh || [[ $? -eq 2 ]]
else
    echo "skipped: no .venv-components with ptxas (ci/setup_python_env.sh)"
fi
fi

export CRITERION_HOME="${CRITERION_HOME:-$(mktemp -d)}"
# A directory named from outside (ci/gpu_parallel.sh gives each group a fresh one) may not
# exist yet: validate.json and compare_torch.json are written straight into it.
mkdir -p "$CRITERION_HOME"
if want compile; then
# Compile time of the kernel source (crates/benches/benches/compile.rs): NVRTC runs in the CPU CI too;
# hipRTC only where ROCm is. Unconfirmed until an AMD job runs it: hipRTC compiling the HIP
# variant for gfx90a/gfx942/gfx950 with the backend's options, each sample's code object,
# and comgr's cache pointed at a new empty folder per sample (AMD_COMGR_CACHE_DIR). On a
# machine with ROCm a hipRTC skip is a failure.
STACKBENCH_SUITE=full bench compile --test '^compile/(nvrtc|hiprtc)/'
if [[ -e /dev/kfd ]]; then
    python3 - "$CRITERION_HOME/stackbench/targets/compile.json" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
hip = {k: v for k, v in record["benchmarks"].items() if k.startswith("compile/hiprtc/")}
bad = {k: v.get("reason") or v.get("error") for k, v in hip.items() if v["outcome"] != "measured"}
if not hip or bad:
    sys.exit(f"compile/hiprtc on a ROCm machine: {bad or 'no id ran'}")
for k, v in hip.items():
    notes = v.get("notes", {})
    if notes.get("check_after_timing") != "passed" or not notes.get("code_object_bytes"):
        sys.exit(f"{k}: no proven compile in {notes}")
print(f"compile/hiprtc: {len(hip)} archs compiled cold")
PY
fi
fi
if want benches; then
echo "== every GPU benchmark once (Criterion --test: verify and run, no measurement)"
for target in gemm memory_bandwidth tensor_ops attention; do
    for backend in cuda rocm; do
        bench "$target" --test "^${target}/${backend}/"
    done
done
# INT8 and the low-precision rows, per backend: where the backend measured any GEMM,
# int8 must be measured (checked for equality with the exact reference before timing);
# int8q measured on CUDA and skipped naming hipBLASLt on ROCm; fp6/fp4 skipped with a
# reason. Unconfirmed until a GPU runs it: cuBLASLt IMMA and rocBLAS int8 themselves, and
# that cuBLASLt's int8 epilogue rounds half to even as the int8q reference does.
int8_home=$(mktemp -d)
for backend in cuda rocm; do
    CRITERION_HOME="$int8_home" bench gemm --test "^gemm/${backend}/(int8|int8q|fp8e5m2|fp6e3m2|fp4e2m1)/"
    python3 - "$int8_home/stackbench/targets/gemm.json" "$backend" <<'PY'
import json, sys
report, backend = json.load(open(sys.argv[1])), sys.argv[2]
rows = {i: b for i, b in report["benchmarks"].items() if i.split("/")[1] == backend}
# The backend-absent skip (gemm/<backend>/all/all) is outside the filter: no rows at all.
if not rows or f"gemm/{backend}/all/all" in rows:
    print(f"skipped {backend}: no {backend} backend here")
    sys.exit(0)
def outcomes(function):
    return {i: b for i, b in rows.items() if i.split("/")[2] == function}
int8 = outcomes("int8")
assert int8 and all(b["outcome"] == "measured" for b in int8.values()), f"int8 not all measured: {int8}"
int8q = outcomes("int8q")
if backend == "cuda":
    assert int8q and all(b["outcome"] == "measured" for b in int8q.values()), f"int8q: {int8q}"
else:
    assert int8q and all(b["outcome"] == "skipped" and "hipBLASLt" in b.get("reason", "") for b in int8q.values()), int8q
for fmt in ("fp6e3m2", "fp4e2m1"):
    got = outcomes(fmt)
    assert got and all(b["outcome"] == "skipped" and b.get("reason") for b in got.values()), f"{fmt}: {got}"
print(f"{backend}: {len(int8)} int8, {len(int8q)} int8q, fp6/fp4 rows skipped with reasons")
PY
done
fi
if want alloc; then
# Allocation on the GPU: cuMemAlloc, the CUDA stream-ordered pool and hipMalloc, then torch's
# caching allocator when STACKBENCH_PYTHON names a GPU torch. Unconfirmed until a GPU job runs
# it: the pool's high-water marks (cuMemPoolGetAttribute), the device's used memory as the raw
# allocators' reserve, the 1 GiB rounds fitting, and torch's memory_snapshot read at the probe
# point. check_alloc_run.py fails the job if the vendor's allocators were not measured.
alloc_device=$(gpu_vendor)
if [[ -n "$alloc_device" ]]; then
    alloc_home=$(mktemp -d)
    alloc_torch=()
    alloc_filter="^alloc/(cuda|cuda_async|rocm)/"
    if [[ -n "${STACKBENCH_PYTHON:-}" ]]; then
        alloc_torch=(--torch)
        alloc_filter="^alloc/(cuda|cuda_async|rocm|torch_cuda|torch_rocm)/"
    fi
    echo "== allocation on $alloc_device (full suite: 4 KiB to 1 GiB)"
    STACKBENCH_SUITE=full CRITERION_HOME="$alloc_home" bench alloc --test "$alloc_filter"
    python3 scripts/components/check_alloc_run.py "$alloc_home/stackbench/targets/alloc.json" \
        "$alloc_device" "${alloc_torch[@]}"
else
    echo "== allocation on the GPU: skipped, neither nvidia-smi nor rocm-smi lists a GPU"
fi
fi
# The Python components on the GPU, with the interpreter STACKBENCH_PYTHON names (a CUDA or
# ROCm torch; vLLM, DeepSpeed and flash-attn where installed). Confirms what no CPU test can:
# ONNX Runtime's GPU provider really started, Triton compiles on a cold cache, vLLM's
# per-request TTFT/TPOT and engine memory, the chunked float64 attention reference at the
# full suite's largest shape (b8_h16_s8192: 68.7 GB as one score matrix), pre-created CUDA
# events (no failure in any timed loop), DeepSpeed's memory phases behind the dashboard's
# stacked bars. scripts/components/check_gpu_run.py checks the notes.
if ! want components; then
    :
elif [[ -n "${STACKBENCH_PYTHON:-}" ]]; then
    echo "== the Python components on the GPU ($STACKBENCH_PYTHON)"
    STACKBENCH_SUITE=quick bench components --test
    "$STACKBENCH_PYTHON" scripts/components/check_gpu_run.py "$CRITERION_HOME/stackbench/targets/components.json"
    STACKBENCH_SUITE=full bench components --test '^components/attention/.*/b8_h16_s8192_d128_bf16'
else
    echo "== the Python components: skipped, STACKBENCH_PYTHON is not set (point it at a GPU torch env)"
fi
# Model sweeps on the GPU. Unconfirmed until a GPU job runs it: the worker on CUDA/ROCm
# (bf16/fp16, torch's int8), memory from the device's own counter (never 0, never the host's
# RSS), NVML energy per token, MFU against the probe's GPU peak, ONNX Runtime's CUDA
# provider, vLLM as a backend where installed, and `stackbench sweep` recording it all.
# check_gpu_sweep.py fails the job on any of those.
if want models && [[ -n "${STACKBENCH_PYTHON:-}" ]]; then
    gpu_device=$(gpu_vendor)
    if [[ -n "$gpu_device" ]]; then
        echo "== model sweeps on $gpu_device: every ci- model once, then a sweep through stackbench"
        sweep_home=$(mktemp -d)
        sb sweep --print-plan \
            --models ci-gpt2,ci-llama,ci-bert,ci-t5,ci-vit,ci-whisper,ci-mixtral \
            --batch 1,8 --seq 128 --precision fp32,bf16,fp16 --device "$gpu_device" >"$sweep_home/plan.json"
        STACKBENCH_MODELS_PLAN="$sweep_home/plan.json" CRITERION_HOME="$sweep_home/criterion" \
            bench models --test
        "$STACKBENCH_PYTHON" scripts/components/check_gpu_sweep.py \
            "$sweep_home/criterion/stackbench/targets/models.json" "$gpu_device"
        sweep_status=0
        sb sweep --models gpt2-small,tinyllama-1.1b,bert-base \
            --batch 1,8 --seq 128,512 --precision fp32,bf16,fp16,int8 --backend torch,onnxruntime,vllm \
            --device "$gpu_device" --results "$sweep_home/results" || sweep_status=$?
        # 0: every cell measured or skipped with a reason; 1: a cell failed (the map says which).
        if [[ $sweep_status -ne 0 ]]; then
            echo "stackbench sweep on $gpu_device exited $sweep_status (see the compatibility map above)" >&2
            exit 1
        fi
        sb recommend --results "$sweep_home/results" \
            --slo ttft_p99\<=200ms
    else
        echo "== model sweeps: skipped, neither nvidia-smi nor rocm-smi lists a GPU"
    fi
fi
# A benchmark that failed its correctness check is recorded as failed in the sidecar.
if grep -l '"outcome": "failed"' "$CRITERION_HOME"/stackbench/targets/*.json 2>/dev/null; then
    echo "some GPU benchmarks failed (see the files above)" >&2
    exit 1
fi

if want collectives; then
echo "== collectives on NCCL (RCCL on ROCm): one torchrun rank per GPU, quick sizes"
# Needs the component virtualenv (STACKBENCH_PYTHON, else .venv-components) with a CUDA or
# ROCm torch and two or more GPUs; one GPU makes the component skip with that reason. The
# ignored test above (components_collectives::nccl_collectives_on_every_gpu) checks every
# all_reduce ran on NCCL/RCCL and names its algorithm; this pass records them all.
STACKBENCH_COMPONENTS=collectives STACKBENCH_SUITE=quick \
    bench components --test "^components/collectives/"
if grep -q '"outcome": "failed"' "$CRITERION_HOME/stackbench/targets/components.json" 2>/dev/null; then
    echo "some collectives failed (see $CRITERION_HOME/stackbench/targets/components.json)" >&2
    exit 1
fi
fi

if want clocks; then
echo "== locked GPU clocks (STACKBENCH_LOCK_CLOCKS=1): locked and restored, or not locked with the reason"
# Unconfirmed until a GPU job runs it: NVML's locked clocks (or application clocks) and
# rocm-smi's perf determinism (or manual sclk level) set and reset on real hardware, the
# rocm-smi device number matching the card the benchmarks ran on, and the cycles notes.
# As root the lock must take; as another user each run must say "clocks not locked" once.
clock_home=$(mktemp -d)
for backend in cuda rocm; do
    STACKBENCH_LOCK_CLOCKS=1 CRITERION_HOME="$clock_home" \
        bench gemm --test "^gemm/${backend}/" 2>"$clock_home/$backend.err" || {
        cat "$clock_home/$backend.err" >&2
        exit 1
    }
    python3 - "$clock_home/stackbench/targets/gemm.json" "$clock_home/$backend.err" "$backend" "$(id -u)" <<'PY'
import json, sys
report, err, backend, uid = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3], int(sys.argv[4])
clocks = report["gpu_clocks"]
assert clocks["lock_requested"], clocks
measured = [i for i, b in report["benchmarks"].items() if b["outcome"] == "measured" and i.split("/")[1] == backend]
if not measured:
    print(f"skipped {backend}: no {backend} GEMM measured here")
    sys.exit(0)
assert clocks.get("devices"), f"a {backend} GEMM ran but no clocks were recorded: {clocks}"
assert err.count("clocks not locked") <= 1, "said more than once"
for d in clocks["devices"]:
    lock = d["lock"]
    print(f'{d["device"]}: {lock}, before {d["before"]}, after {d["after"]}, min busy {d.get("min_sm_mhz_during")}')
    assert d["before"].get("sm_mhz") and d["after"].get("sm_mhz"), d
    if lock["state"] == "locked":
        assert lock["restored"], f"clocks left locked: {lock}"
    else:
        assert lock["state"] == "not_locked" and lock["reason"], lock
        assert "clocks not locked" in err, "a refused lock must be said on stderr"
        if uid == 0:
            print(f"warning: root could not lock {d['device']}: {lock['reason']}")
if backend == "cuda":
    for i in measured:
        notes = report["benchmarks"][i].get("notes", {})
        if "sm_clock_busy_median_mhz" in notes:
            assert notes.get("sm_cycles_per_iteration", 0) > 0, f"{i}: a busy clock but no cycles: {notes}"
PY
done
if command -v nvidia-smi >/dev/null && [[ $(id -u) -eq 0 ]]; then
    echo "== Ctrl-C during a locked run restores the clocks"
    # Started directly (not through the bench function), so $! is cargo or the executable.
    if [[ -n "$bundle" ]]; then
        STACKBENCH_LOCK_CLOCKS=1 CRITERION_HOME="$clock_home" \
            "$bundle/bench/gemm" --bench --measurement-time 60 "^gemm/cuda/" 2>"$clock_home/sigint.err" &
    else
        STACKBENCH_LOCK_CLOCKS=1 CRITERION_HOME="$clock_home" \
            cargo bench --bench gemm -- --measurement-time 60 "^gemm/cuda/" 2>"$clock_home/sigint.err" &
    fi
    bench=$!
    for _ in $(seq 120); do grep -q "^Benchmarking" "$clock_home/sigint.err" 2>/dev/null && break; sleep 1; done
    # The bench executable, not cargo: cargo would pass the signal on, but name the one meant.
    if [[ -n "$bundle" ]]; then kill -INT "$bench"; else pkill -INT -P "$bench" -f "gemm-" || kill -INT "$bench"; fi
    wait "$bench" || true
    grep -q "GPU clocks restored on 1 device" "$clock_home/sigint.err" || {
        echo "Ctrl-C did not restore the clocks:" >&2; tail "$clock_home/sigint.err" >&2; exit 1; }
    nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics,clocks.default_applications.graphics --format=csv
fi
fi

if want profile; then
echo "== a GPU GEMM profiled on demand (STACKBENCH_PROFILE=nsys, else ncu; rocprof on ROCm)"
# Unconfirmed until a GPU job runs it: nsys/rocprofv3 command lines, the report file each
# writes and its discovery (crates/measure/src/harness/profile.rs). The profile must be written, or say
# why not; a profiler that is not installed is skipped with the package to install.
profile_home=$(mktemp -d)
profiled=""
if command -v nvidia-smi >/dev/null && command -v nsys >/dev/null; then
    profiled="nsys cuda"
elif command -v nvidia-smi >/dev/null && command -v ncu >/dev/null; then
    profiled="ncu cuda" # the lent H100 image has Nsight Compute and no Nsight Systems
elif command -v rocm-smi >/dev/null && { command -v rocprofv3 >/dev/null || command -v rocprof >/dev/null; }; then
    profiled="rocprof rocm"
fi
if [[ -z "$profiled" ]]; then
    echo "skipped: no nsys (nsight-systems) or ncu (nsight-compute) beside an NVIDIA GPU, nor rocprofv3/rocprof (rocprofiler-sdk) beside an AMD GPU"
else
    read -r tool backend <<<"$profiled"
    STACKBENCH_SUITE=quick STACKBENCH_PROFILE="$tool" STACKBENCH_PROFILE_TIME=2 \
        STACKBENCH_PROFILE_FILTER="^gemm/${backend}/f32/" CRITERION_HOME="$profile_home" \
        bench gemm "^gemm/${backend}/f32/" --warm-up-time 1 --measurement-time 2
    python3 - "$profile_home/stackbench/targets/gemm.json" "$tool" <<'PY'
import json, os, sys
report, tool = json.load(open(sys.argv[1])), sys.argv[2]
profiles = report.get("profiles", {})
assert profiles, f"STACKBENCH_PROFILE={tool} profiled no GPU GEMM: {sorted(report['benchmarks'])}"
for id, p in sorted(profiles.items()):
    assert p["tool"] == tool, p
    assert p["status"] == "written", f"{id}: the {tool} profile was not written: {p}"
    assert os.path.exists(p["path"]) and p["bytes"] > 0, p
    print(f'{id}: {p["path"]} ({p["bytes"]} bytes)')
PY
fi
fi

if want vulkan; then
echo "== Vulkan on this GPU through its vendor's Vulkan driver, beside CUDA"
# Unconfirmed until a GPU job runs it (built and tested on lavapipe only): the WGSL kernels on
# NVIDIA's Vulkan driver, checked then timed; STREAM at >= 0.9x CUDA's at the same size; the
# f32 GEMM's share of the measured Vulkan f32 peak (no threshold: stackbench's own tiled
# kernel, no cooperative matrices, against cuBLAS).
icd=$(compgen -G '/usr/share/vulkan/icd.d/nvidia_icd*.json' || compgen -G '/etc/vulkan/icd.d/nvidia_icd*.json' || true)
icd=${icd%%$'\n'*}
if [[ "$(gpu_vendor)" != cuda ]]; then
    echo "skipped: the side by side needs an NVIDIA GPU (nvidia-smi lists none)"
elif [[ -z "$icd" ]]; then
    # A container gets NVIDIA's Vulkan driver only with NVIDIA_DRIVER_CAPABILITIES including graphics.
    echo "no NVIDIA Vulkan ICD (nvidia_icd.json under /usr/share/vulkan/icd.d or /etc/vulkan/icd.d)" >&2
    exit 1
else
    # The NVIDIA driver only, so lavapipe (if installed) cannot be the device measured.
    export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
    vk_home=$(mktemp -d)
    for target in gemm memory_bandwidth tensor_ops attention; do
        CRITERION_HOME="$vk_home" bench "$target" --test "^${target}/vulkan/"
    done
    python3 scripts/gpu/check_vulkan_run.py "$vk_home/stackbench/targets"
    python3 - "$vk_home/stackbench/system.json" <<'PY'
import json, sys
vk = json.load(open(sys.argv[1]))["backends"]["vulkan"]
assert vk["status"] == "available", vk
props = vk["devices"][0]["properties"]
assert props["device_type"] == "discrete_gpu" and "NVIDIA" in props["driver_name"].upper(), props
print(f'vulkan device: {vk["devices"][0]["name"]}, {props["driver_name"]} {props["driver_info"]}, API {props["api_version"]}')
PY
    side=$(mktemp -d)
    CRITERION_HOME="$side" bench memory_bandwidth '^memory_bandwidth/(cuda|vulkan)/(copy|scale|add|triad)/'
    CRITERION_HOME="$side" bench gemm '^gemm/(cuda|vulkan)/f32/'
    sb info --format json >"$side/info.json"
    python3 scripts/gpu/vulkan_vs_cuda.py "$side" "$side/info.json"
    unset VK_DRIVER_FILES VK_ICD_FILENAMES
fi
fi

if want validate; then
echo "== stackbench validate --level 2: bandwidth, copies and GEMM against vendor and peak thresholds, within 2 minutes"
# Unconfirmed without a GPU: the GPU backend must load, and its GEMM/bandwidth checks must be
# judged by vendor (H100 80GB HBM3, MI300X) or peak-fraction thresholds. Exit 1 here means
# this machine does not perform as it should, which is the job's business to report.
verdict="$CRITERION_HOME/validate.json"
validate_status=0
sb validate --level 2 --json --results "$(mktemp -d)" >"$verdict" || validate_status=$?
python3 - "$verdict" <<'PY'
import json, sys
verdict = json.load(open(sys.argv[1]))
checks = verdict["threshold_checks"]
loads = [c for c in checks if c["name"] in ("installation/cuda loads", "installation/rocm loads")]
assert loads and all(c["passed"] for c in loads), f"no GPU backend loaded: {loads}"
gpu = [c for c in checks if c.get("benchmark", "").split("/")[1:2] in (["cuda"], ["rocm"])]
assert any(c["threshold_kind"] in ("vendor", "peak_fraction") for c in gpu), "no GPU figure was judged"
# The suite must time a GPU GEMM, a GPU triad and both copy directions, not only load the backend.
for prefix, what in (("gemm/", "GEMM"), ("memory_bandwidth/", "triad"), ("memory_bandwidth/", "h2d_pinned"), ("memory_bandwidth/", "d2h_pinned")):
    timed = [r for r in verdict["results"] if r["outcome"] == "measured" and r["id"].startswith(prefix)
             and r["id"].split("/")[1] in ("cuda", "rocm") and (what == "GEMM" or r["id"].split("/")[2] == what)]
    assert timed, f"validate timed no GPU {what}"
level = verdict["level"]
print(f'level {level["level"]}: {verdict["wall_s"]:.1f} s of a {level["budget_s"]} s budget' + (" (OVER BUDGET)" if level["over_budget"] else ""))
evidence = verdict["evidence"]
print(f'evidence: {evidence["checks"]} checks on {evidence["tiers"]} tiers, {evidence["benchmarks"]} benchmarks, {evidence["samples"]} samples')
# Unconfirmed without a GPU: torch's CUDA build judged against the driver's CUDA version
# (crates/validate/src/validate/torch_cuda.rs) once a torch component measured something on the GPU, and
# the CPU triad either judged against its DIMMs' STREAM expectation or noted with the reason.
notes = " ".join(verdict["notes"])
torch_ran = any(r["id"].startswith("components/") and r["outcome"] == "measured" for r in verdict["results"])
torch_checks = [c for c in checks if c["name"].startswith("installation/torch ")]
if torch_ran and "installation/cuda loads" in [c["name"] for c in loads]:
    assert torch_checks or "built for ROCm" in notes or "CPU-only build" in notes, "torch's CUDA build was not judged"
for r in verdict["results"]:
    if r["id"].startswith("memory_bandwidth/cpu/triad/") and r["outcome"] == "measured":
        judged = any(c.get("benchmark") == r["id"] and c["threshold_kind"] in ("stream_expectation", "config") for c in checks)
        assert judged or f'{r["id"]}: no STREAM expectation' in notes, f'{r["id"]}: neither judged nor explained'
for c in checks:
    print(f'{c["status"]:8} {c["threshold_kind"]:13} {c["name"]}: expected {c["expected"]}, actual {c["actual"]}')
PY
if [[ $validate_status -ne 0 ]]; then
    echo "stackbench validate: this machine failed a check (exit $validate_status; see above)" >&2
    exit "$validate_status"
fi
fi

if want compare && [[ "${STACKBENCH_COMPARE_TORCH:-0}" == 1 ]]; then
    echo "== side by side with PyTorch"
    scripts/gpu/compare_torch.sh --json "$CRITERION_HOME/compare_torch.json"
fi

if want slurm; then
echo "== Slurm fleet on this machine's GPUs (one-node cluster on localhost, array tasks with --gres=gpu:1)"
if [[ "${STACKBENCH_SKIP_SLURM:-0}" == 1 ]]; then
    echo "skipped: STACKBENCH_SKIP_SLURM=1"
elif [[ -n "$bundle" ]] && ! command -v cargo >/dev/null; then
    echo "skipped: the fleet's submit.sh builds its executables with cargo, which this machine lacks"
elif command -v nvidia-smi >/dev/null && [[ $(nvidia-smi -L 2>/dev/null | grep -c '^GPU') -gt 0 ]]; then
    STACKBENCH_SLURM_GPUS=$(nvidia-smi -L | grep -c '^GPU') ci/slurm/test_local.sh
else
    echo "skipped: no NVIDIA GPU listed by nvidia-smi (for AMD, run ci/slurm/test_local.sh with" \
        "STACKBENCH_SLURM_GPUS=N STACKBENCH_SLURM_GPU_FILES=/dev/dri/renderD[128-...] and a ROCm filter)"
fi
fi
