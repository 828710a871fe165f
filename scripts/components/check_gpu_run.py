"""Checks the component tier's record from a GPU machine (ci/gpu_tests.sh runs it after
``cargo bench --bench components -- --test``): the GPU fixes of issue 9 that no CPU-only
test can confirm must show in the notes, else this exits 1 naming each problem.

* nothing failed;
* torch ran on the GPU (pytorch and attention ids measured with device cuda or rocm);
* every Triton kernel measured a cold compile (compile_time_ns > 0, no note saying why not);
* ONNX Runtime's GPU ids ran on the provider they name;
* vLLM, where measured: per-request TTFT and TPOT, and the engine's device memory with
  its method; DeepSpeed, where measured: the one-rank label, and the memory phases of the
  stacked bars (at rest, after backward) present, positive and within the peak.

Usage: python check_gpu_run.py <criterion dir>/stackbench/targets/components.json
"""

import json
import sys

GPU_DEVICES = ("cuda", "rocm")


def measured(report, prefix):
    """{id: notes} of the measured ids starting with ``prefix``."""
    return {
        bench_id: entry.get("notes", {})
        for bench_id, entry in report["benchmarks"].items()
        if bench_id.startswith(prefix) and entry["outcome"] == "measured"
    }


def check_failures(report):
    return [f"{i} failed: {e['error']}" for i, e in report["benchmarks"].items() if e["outcome"] == "failed"]


def check_torch_on_gpu(report):
    problems = []
    for component in ("pytorch", "attention"):
        runs = measured(report, f"components/{component}/")
        if not any(notes.get("device") in GPU_DEVICES for notes in runs.values()):
            problems.append(f"{component}: no id was measured on a GPU ({len(runs)} measured)")
    return problems


def check_triton(report):
    runs = {i: n for i, n in measured(report, "components/triton/").items() if n.get("implementation") == "triton"}
    if not runs:
        return ["triton: no Triton kernel was measured"]
    problems = []
    for bench_id, notes in runs.items():
        compile_ns = notes.get("compile_time_ns")
        if not isinstance(compile_ns, (int, float)) or compile_ns <= 0:
            problems.append(f"{bench_id}: compile_time_ns {compile_ns!r} ({notes.get('compile_time_note')})")
    return problems


def check_onnxruntime(report):
    problems = []
    short = {"cuda": "CUDAExecutionProvider", "rocm": "ROCMExecutionProvider", "tensorrt": "TensorrtExecutionProvider"}
    for bench_id, notes in measured(report, "components/onnxruntime/").items():
        wanted = short.get(bench_id.rsplit("/", 1)[-1].split("_")[0])
        started = notes.get("session_providers") or []
        if wanted and started[:1] != [wanted]:
            problems.append(f"{bench_id}: session providers {started}, expected {wanted} first")
    return problems


def check_vllm(report):
    problems = []
    for bench_id, notes in measured(report, "components/vllm/").items():
        for key in ("ttft_p50_ns", "ttft_p99_ns", "tpot_p50_ns", "tpot_p99_ns", "peak_memory_bytes"):
            value = notes.get(key)
            if not isinstance(value, (int, float)) or value <= 0:
                problems.append(f"{bench_id}: {key} is {value!r}")
        if not notes.get("peak_memory_method"):
            problems.append(f"{bench_id}: peak_memory_method missing")
    return problems


def check_deepspeed(report):
    problems = []
    for bench_id, notes in measured(report, "components/deepspeed/").items():
        if notes.get("world_size") == 1 and "one rank" not in str(notes.get("partitioning")):
            problems.append(f"{bench_id}: one-rank row without its label")
        problems += memory_phase_problems(bench_id, notes)
    return problems


def memory_phase_problems(bench_id, notes):
    """The stacked bars' phases: each present and positive, and none above the peak."""
    keys = ("memory_at_rest_bytes", "memory_after_backward_bytes", "peak_memory_bytes")
    values = [notes.get(key) for key in keys]
    bad = [f"{key} is {value!r}" for key, value in zip(keys, values) if not isinstance(value, (int, float)) or value <= 0]
    if bad:
        return [f"{bench_id}: {problem}" for problem in bad]
    if max(values[:2]) > values[2]:
        return [f"{bench_id}: a phase ({values[0]}, {values[1]} bytes) exceeds the peak {values[2]}"]
    return []


CHECKS = (check_failures, check_torch_on_gpu, check_triton, check_onnxruntime, check_vllm, check_deepspeed)


def problems_in(report):
    return [problem for check in CHECKS for problem in check(report)]


def main(path):
    with open(path, encoding="utf-8") as file:
        report = json.load(file)
    problems = problems_in(report)
    for problem in problems:
        print(f"check_gpu_run: {problem}", file=sys.stderr)
    print(f"check_gpu_run: {len(report['benchmarks'])} component ids, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
