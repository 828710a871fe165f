#!/usr/bin/env python3
"""Side by side of the Vulkan and CUDA backends on one GPU, from one Criterion directory
(ci/gpu_tests.sh's vulkan section): each STREAM kernel's bandwidth at the same array size
must be at least 0.9x CUDA's (the issue's bar for a Vulkan copy: no vendor library
involved, the same memory); each f32 GEMM is printed with its GFLOP/s beside cuBLAS's and
as a percentage of the Vulkan device's measured f32 FMA peak (`stackbench info --format
json`). Names come from each benchmark.json, never from directory names.

usage: vulkan_vs_cuda.py CRITERION_HOME INFO_JSON
"""
import json
import sys
from pathlib import Path

STREAM = ("copy", "scale", "add", "triad")
RATIO = 0.9


def per_second(home: Path) -> dict:
    """Full id -> bytes or FLOP per second, from Criterion's mean and declared throughput."""
    out = {}
    for meta in home.rglob("new/benchmark.json"):
        try:
            bench = json.loads(meta.read_text())
            estimates = json.loads((meta.parent / "estimates.json").read_text())
        except (OSError, ValueError) as e:
            sys.exit(f"{meta}: {e}")
        throughput = bench.get("throughput") or {}
        amount = throughput.get("Bytes") or throughput.get("BytesDecimal") or throughput.get("Elements")
        mean_ns = estimates["mean"]["point_estimate"]
        if amount and mean_ns > 0:
            out[bench["full_id"]] = amount / (mean_ns * 1e-9)
    return out


def vulkan_f32_peak(info: Path):
    probe = json.loads(info.read_text())
    for peak in probe.get("peaks", []):
        if peak.get("backend") == "vulkan" and peak.get("metric") == "flops_per_second" and peak.get("dtype") == "f32":
            return peak.get("measured")
    return None


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rates = per_second(Path(sys.argv[1]))
    problems = []
    compared = 0
    for bench_id, vk in sorted(rates.items()):
        family, backend, function, size = (bench_id.split("/") + ["", "", "", ""])[:4]
        if family != "memory_bandwidth" or backend != "vulkan" or function not in STREAM:
            continue
        cuda = rates.get(f"memory_bandwidth/cuda/{function}/{size}")
        if cuda is None:
            problems.append(f"{bench_id}: no CUDA figure at the same size to compare with")
            continue
        compared += 1
        ratio = vk / cuda
        print(f"{function:6} {size:>8}: vulkan {vk / 1e9:8.1f} GB/s, cuda {cuda / 1e9:8.1f} GB/s, {ratio:.2f}x")
        if ratio < RATIO:
            problems.append(f"{bench_id}: {ratio:.2f}x CUDA's, below {RATIO}x")
    if compared == 0:
        problems.append("no Vulkan STREAM figure was measured")
    peak = vulkan_f32_peak(Path(sys.argv[2]))
    gemms = 0
    for bench_id, vk in sorted(rates.items()):
        parts = bench_id.split("/")
        if parts[:3] != ["gemm", "vulkan", "f32"]:
            continue
        gemms += 1
        cuda = rates.get(f"gemm/cuda/f32/{parts[3]}")
        of_peak = f"{100 * vk / peak:5.1f}% of the measured Vulkan f32 peak" if peak else "no measured peak"
        beside = f", cuBLAS {cuda / 1e12:6.2f} TFLOP/s" if cuda else ""
        print(f"gemm f32 {parts[3]:>16}: vulkan {vk / 1e12:6.2f} TFLOP/s ({of_peak}){beside}")
    if gemms == 0:
        problems.append("no Vulkan f32 GEMM was measured")
    if problems:
        sys.exit("\n".join(problems))


if __name__ == "__main__":
    main()
