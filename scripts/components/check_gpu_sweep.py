"""Checks a model sweep recorded on a GPU machine (ci/gpu_tests.sh runs it after
``cargo bench --bench models -- --test`` with a plan on ``cuda`` or ``rocm``): what no
CPU-only test can confirm must show in the notes, else this exits 1 naming each problem.

* nothing failed, and at least one cell was measured (a sweep that measured nothing is
  no pass);
* every measured cell ran on the plan's GPU device (``device`` note), its memory came from
  the device's own counter (``memory_method`` ``cuda_max_memory_allocated`` or
  ``rocm_max_memory_allocated``, vLLM's engine figure for vLLM), and the peak is above
  zero: the "memory reads 0 on the wrong device index" defect of other tools;
* the average memory is at most the peak;
* energy is a number with its method, or ``energy_unavailable`` with the reason, never
  both and never neither; on NVIDIA the method is NVML's total-energy counter;
* MFU, where computed, is in (0, 1]; over 1 the runner fails the cell, so it cannot
  appear measured;
* decode cells generated exactly ``new_tokens`` tokens per sequence, and TTFT ≤ the
  end-to-end latency at each percentile;
* every skip carries a reason.

Usage: python check_gpu_sweep.py <criterion dir>/stackbench/targets/models.json [cuda|rocm]
"""

import json
import sys

DEVICE_COUNTERS = {
    "cuda": ("cuda_max_memory_allocated", "vllm"),
    "rocm": ("rocm_max_memory_allocated", "vllm"),
    # The CPU, so the checker can be run on a CPU record too (the tests do).
    "cpu": ("cpu_rss_sampled",),
}


def problems_in(report, device):
    problems = []
    benchmarks = report.get("benchmarks", {})
    measured = {i: e.get("notes", {}) for i, e in benchmarks.items() if e.get("outcome") == "measured"}
    for bench_id, entry in benchmarks.items():
        if entry.get("outcome") == "failed":
            problems.append(f"{bench_id} failed: {entry.get('error')}")
        if entry.get("outcome") == "skipped" and not entry.get("reason"):
            problems.append(f"{bench_id} skipped without a reason")
    if not measured:
        problems.append(f"no models cell was measured ({len(benchmarks)} in the record)")
    counters = DEVICE_COUNTERS[device]
    for bench_id, notes in measured.items():
        if notes.get("device") != device:
            problems.append(f"{bench_id}: ran on {notes.get('device')!r}, not {device}")
        method = str(notes.get("memory_method", ""))
        if not method.startswith(counters):
            problems.append(f"{bench_id}: memory from {method!r}, not the device's counter")
        peak = notes.get("memory_peak_bytes")
        if not isinstance(peak, (int, float)) or peak <= 0:
            problems.append(f"{bench_id}: memory_peak_bytes is {peak!r}")
        average = notes.get("memory_avg_bytes")
        if isinstance(average, (int, float)) and isinstance(peak, (int, float)) and average > peak:
            problems.append(f"{bench_id}: average memory {average} above the peak {peak}")
        energy = [k for k in notes if k.startswith("energy_j_per_")]
        if bool(energy) == ("energy_unavailable" in notes):
            problems.append(f"{bench_id}: energy must be a figure or a reason, got {sorted(k for k in notes if k.startswith('energy'))}")
        if energy and device == "cuda" and notes.get("energy_method") != "nvml_total_energy":
            problems.append(f"{bench_id}: energy from {notes.get('energy_method')!r}, not NVML")
        mfu = notes.get("mfu")
        if mfu is not None and not 0 < mfu <= 1:
            problems.append(f"{bench_id}: MFU {mfu}")
        if notes.get("phase") == "decode":
            if notes.get("new_tokens") is None:
                problems.append(f"{bench_id}: a decode cell without new_tokens")
            for p in ("p50", "p90", "p99"):
                ttft, e2e = notes.get(f"ttft_{p}_ns"), notes.get(f"e2e_{p}_ns")
                if ttft is None or e2e is None or ttft > e2e:
                    problems.append(f"{bench_id}: ttft_{p}_ns {ttft} vs e2e_{p}_ns {e2e}")
    return problems, len(measured)


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    device = argv[2] if len(argv) == 3 else "cuda"
    if device not in DEVICE_COUNTERS:
        print(f"check_gpu_sweep: device {device!r} is not one of {', '.join(DEVICE_COUNTERS)}", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError) as error:
        print(f"check_gpu_sweep: cannot read {argv[1]}: {error}", file=sys.stderr)
        return 2
    problems, count = problems_in(report, device)
    for problem in problems:
        print(f"problem: {problem}")
    print(f"check_gpu_sweep: {count} measured cells on {device}, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
