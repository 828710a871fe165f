#!/usr/bin/env python3
"""Side-by-side: stackbench's CUDA benchmarks against PyTorch on the same GPU, in one run.

Why: the issue's acceptance figures are ratios to what PyTorch reaches on the same
machine (bf16 GEMM at 8192^3 >= 95 % of torch.matmul, device copy >= 95 % of a tensor
copy, pinned host-to-device within 5 % of torch's pinned copy_). Ratios only mean
something when both sides run on the same device, at the same time, with the same
method, so this script runs both:

  1. `cargo bench` for the selected stackbench ids (Criterion, CUDA events, L2 flushed
     before each sample), into a private CRITERION_HOME;
  2. the torch equivalents, timed the same way: CUDA events around N back-to-back calls,
     a 256 MiB buffer zeroed before each sample outside the events, random normal inputs,
     medians over samples.

It prints one table (median per call, throughput, ratio, pass/fail) and exits 1 if an
acceptance check fails, 2 on a usage or environment error. Attention is reported for
information (the fused kernel need not beat SDPA): time, and peak memory of both kernels.

Usage: scripts/gpu/compare_torch.sh [--json out.json] [--samples N]
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

GIB = 1 << 30
MIB = 1 << 20

# (label, stackbench id, bench target, torch case, acceptance (kind, bound) or None)
CASES = [
    ("bf16 GEMM 8192^3", "gemm/cuda/bf16/8192x8192x8192", "gemm", "matmul_bf16_8192", ("min_ratio", 0.95)),
    ("f16 GEMM 8192^3", "gemm/cuda/f16/8192x8192x8192", "gemm", "matmul_f16_8192", None),
    ("tf32 GEMM 8192^3", "gemm/cuda/tf32/8192x8192x8192", "gemm", "matmul_tf32_8192", None),
    ("device copy 1 GiB (read+write)", "memory_bandwidth/cuda/copy/1GiB", "memory_bandwidth", "copy_1gib", ("min_ratio", 0.95)),
    ("d2d memcpy 512 MiB (read+write)", "memory_bandwidth/cuda/d2d/512MiB", "memory_bandwidth", "copy_512mib", None),
    ("h2d pinned 512 MiB", "memory_bandwidth/cuda/h2d_pinned/512MiB", "memory_bandwidth", "h2d_pinned_512mib", ("within", 0.05)),
    ("d2h pinned 512 MiB", "memory_bandwidth/cuda/d2h_pinned/512MiB", "memory_bandwidth", "d2h_pinned_512mib", None),
    ("softmax bf16 16384x4096", "tensor_ops/cuda/softmax_bf16/16384x4096", "tensor_ops", "softmax_bf16", None),
    ("layer_norm bf16 16384x4096", "tensor_ops/cuda/layer_norm_bf16/16384x4096", "tensor_ops", "layer_norm_bf16", None),
    ("flash causal bf16 s4096", "attention/cuda/flash_causal_bf16/b1_h32_s4096_d128", "attention", "sdpa_causal_bf16_4096", None),
    ("standard causal bf16 s4096", "attention/cuda/standard_causal_bf16/b1_h32_s4096_d128", "attention", "math_causal_bf16_4096", None),
]


def run_stackbench(ids, targets, criterion_home, repo):
    """Runs each bench target once, filtered to the wanted ids (regex alternation)."""
    env = dict(os.environ, CRITERION_HOME=criterion_home, STACKBENCH_SUITE="quick")
    for target in targets:
        wanted = [i for i, t in ids if t == target]
        pattern = "^(" + "|".join(w.replace("^", r"\^") for w in wanted) + ")$"
        # Prebuilt bench executables (ci/gpu_bundle.sh) where the GPU machine has no cargo.
        bench_dir = os.environ.get("STACKBENCH_BENCH_DIR")
        if bench_dir:
            cmd = [os.path.join(bench_dir, target), "--bench", "--noplot", pattern]
        else:
            cmd = ["cargo", "bench", "--bench", target, "--", "--noplot", pattern]
        print("+", " ".join(cmd), file=sys.stderr, flush=True)
        done = subprocess.run(cmd, cwd=repo, env=env)
        if done.returncode != 0:
            print(f"warning: {target} exited {done.returncode}", file=sys.stderr)


def read_criterion(criterion_home):
    """full_id -> (median ns per call, throughput dict, notes) from Criterion's files."""
    out = {}
    for path in glob.glob(os.path.join(criterion_home, "**", "new", "benchmark.json"), recursive=True):
        with open(path) as f:
            bench = json.load(f)
        with open(os.path.join(os.path.dirname(path), "estimates.json")) as f:
            estimates = json.load(f)
        out[bench["full_id"]] = (estimates["median"]["point_estimate"], bench.get("throughput"))
    notes = {}
    for path in glob.glob(os.path.join(criterion_home, "stackbench", "targets", "*.json")):
        with open(path) as f:
            for bid, entry in json.load(f).get("benchmarks", {}).items():
                notes[bid] = entry
    return out, notes


def throughput_units(throughput):
    if not throughput:
        return None, None
    if "Elements" in throughput:
        return throughput["Elements"], "FLOP/s"
    if "Bytes" in throughput:
        return throughput["Bytes"], "B/s"
    return None, None


class TorchTimer:
    """CUDA-event timing with an L2 flush before each sample, as stackbench does."""

    def __init__(self, torch, samples):
        self.torch = torch
        self.samples = samples
        self.flush = torch.empty(256 * MIB, dtype=torch.uint8, device="cuda")

    def median_ns(self, fn, target_ms=20.0):
        torch = self.torch
        for _ in range(5):  # warm-up (cuBLAS heuristics, clocks)
            fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        iters = max(1, int(target_ms / max(start.elapsed_time(end), 1e-3)))
        per_call = []
        for _ in range(self.samples):
            self.flush.zero_()
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            torch.cuda.synchronize()
            per_call.append(start.elapsed_time(end) * 1e6 / iters)
        return statistics.median(per_call)


def torch_cases(torch, timer):
    """case name -> (median ns per call, extra facts)."""
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(0)
    results = {}

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device="cuda", dtype=dtype, generator=g)

    for name, dtype, tf32 in [
        ("matmul_bf16_8192", torch.bfloat16, False),
        ("matmul_f16_8192", torch.float16, False),
        ("matmul_tf32_8192", torch.float32, True),
    ]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a, b = randn(8192, 8192, dtype=dtype), randn(8192, 8192, dtype=dtype)
        c = torch.empty_like(a)
        results[name] = (timer.median_ns(lambda: torch.matmul(a, b, out=c)), {})
        del a, b, c
    torch.backends.cuda.matmul.allow_tf32 = False

    for name, size in [("copy_1gib", GIB), ("copy_512mib", 512 * MIB)]:
        src = randn(size // 8, dtype=torch.float64)
        dst = torch.empty_like(src)
        results[name] = (timer.median_ns(lambda: dst.copy_(src)), {})
        del src, dst

    host = torch.randn(512 * MIB // 4).pin_memory()
    dev = torch.empty(512 * MIB // 4, device="cuda")
    results["h2d_pinned_512mib"] = (timer.median_ns(lambda: dev.copy_(host, non_blocking=True)), {})
    results["d2h_pinned_512mib"] = (timer.median_ns(lambda: host.copy_(dev, non_blocking=True)), {})
    del host, dev

    x = randn(16384, 4096, dtype=torch.bfloat16)
    w, bias = randn(4096, dtype=torch.bfloat16), randn(4096, dtype=torch.bfloat16)
    results["softmax_bf16"] = (timer.median_ns(lambda: torch.softmax(x, dim=-1)), {})
    results["layer_norm_bf16"] = (timer.median_ns(lambda: F.layer_norm(x, (4096,), w, bias)), {})
    del x

    q, k, v = (randn(1, 32, 4096, 128, dtype=torch.bfloat16) for _ in range(3))
    for name, backend in [("sdpa_causal_bf16_4096", None), ("math_causal_bf16_4096", "math")]:
        def call():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        if backend == "math":
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel(SDPBackend.MATH):
                ns = timer.median_ns(call)
        else:
            ns = timer.median_ns(call)
        peak = torch.cuda.max_memory_allocated() - base
        results[name] = (ns, {"torch_peak_extra_bytes": peak})
    return results


def judge(acceptance, ratio):
    if acceptance is None or ratio is None:
        return "info"
    kind, bound = acceptance
    if kind == "min_ratio":
        return "PASS" if ratio >= bound else f"FAIL (< {bound:.0%})"
    return "PASS" if abs(ratio - 1.0) <= bound else f"FAIL (outside ±{bound:.0%})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the table as JSON here")
    parser.add_argument("--samples", type=int, default=30, help="torch samples per case (default 30)")
    parser.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: pip install torch", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch sees no CUDA device: nothing to compare", file=sys.stderr)
        return 2

    home = tempfile.mkdtemp(prefix="stackbench-vs-torch-")
    targets = sorted({c[2] for c in CASES})
    run_stackbench([(c[1], c[2]) for c in CASES], targets, home, args.repo)
    ours, notes = read_criterion(home)
    theirs = torch_cases(torch, TorchTimer(torch, args.samples))

    print(f"\nstackbench vs torch {torch.__version__} on {torch.cuda.get_device_name()}\n")
    header = f"{'case':34} {'stackbench':>14} {'torch':>14} {'ratio':>7}  verdict"
    print(header)
    print("-" * len(header))
    rows, failed = [], False
    for label, bid, _target, case, acceptance in CASES:
        our = ours.get(bid)
        their_ns, extra = theirs.get(case, (None, {}))
        amount, unit = throughput_units(our[1]) if our else (None, None)
        fmt = lambda ns: "—" if ns is None or amount is None else f"{amount / (ns * 1e-9) / 1e12:8.2f} T{unit}"
        ratio = (their_ns / our[0]) if our and their_ns else None
        verdict = judge(acceptance, ratio) if our else "stackbench result missing"
        failed |= verdict.startswith("FAIL") or (acceptance is not None and our is None)
        print(f"{label:34} {fmt(our[0] if our else None):>14} {fmt(their_ns):>14} "
              f"{'' if ratio is None else f'{ratio:6.3f}':>7}  {verdict}")
        note = notes.get(bid, {}).get("notes", {})
        rows.append({"case": label, "id": bid, "stackbench_ns": our[0] if our else None,
                     "torch_ns": their_ns, "ratio": ratio, "verdict": verdict,
                     "stackbench_notes": note, "torch_extra": extra})
    for row in rows:
        if row["id"].startswith("attention/"):
            peak = row["stackbench_notes"].get("peak_memory_bytes")
            print(f"  {row['id']}: stackbench peak memory {peak} B; torch {row['torch_extra']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
