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
acceptance check fails or cannot be made (either side has no figure), 2 on a usage or
environment error. Every case has an acceptance
bound (see CASES); attention also lists the peak memory of both sides.

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
import time

STARTED = time.monotonic()


def say(text):
    """A progress line with the seconds since the start, so a run cut by a time limit
    still shows where its time went."""
    print(f"[{time.monotonic() - STARTED:6.1f} s] {text}", file=sys.stderr, flush=True)

GIB = 1 << 30
MIB = 1 << 20

# (label, stackbench id, bench target, torch case, acceptance (kind, bound) or None).
# Every case has a bound: a library path (cuBLAS, cuBLASLt, the driver's copies) must run
# at the library's speed as torch calls it (>= 0.95x); stackbench's own kernels (STREAM,
# tensor ops) must reach 0.95x of torch's kernel for the same operation; the fused
# attention kernel is held to the goal against SDPA (0.6x) and the materialised
# path to torch's own materialised (math) path. Allocation is compared against torch's
# caching allocator inside the alloc family itself (ids alloc/torch_cuda/...), not here.
GEMM = "gemm/cuda/{}/8192x8192x8192"
BW = "memory_bandwidth/cuda/{}/1GiB"
OPS = "tensor_ops/cuda/{}/16384x4096"
ATT = "attention/cuda/{}/b1_h32_s4096_d128"
LIB = ("min_ratio", 0.95)
OWN = ("min_ratio", 0.95)
CASES = [
    ("bf16 GEMM 8192^3", GEMM.format("bf16"), "gemm", "matmul_bf16_8192", LIB),
    ("f16 GEMM 8192^3", GEMM.format("f16"), "gemm", "matmul_f16_8192", LIB),
    ("tf32 GEMM 8192^3", GEMM.format("tf32"), "gemm", "matmul_tf32_8192", LIB),
    ("f32 GEMM 8192^3", GEMM.format("f32"), "gemm", "matmul_f32_8192", LIB),
    ("fp8 e4m3 GEMM 8192^3 (bf16 out)", GEMM.format("fp8e4m3"), "gemm", "scaled_mm_e4m3_8192", LIB),
    ("int8 GEMM 8192^3 (int32 out)", GEMM.format("int8"), "gemm", "int_mm_8192", LIB),
    ("device copy 1 GiB (read+write)", BW.format("copy"), "memory_bandwidth", "copy_1gib", OWN),
    ("STREAM scale 1 GiB", BW.format("scale"), "memory_bandwidth", "scale_1gib", OWN),
    ("STREAM add 1 GiB", BW.format("add"), "memory_bandwidth", "add_1gib", OWN),
    ("STREAM triad 1 GiB", BW.format("triad"), "memory_bandwidth", "triad_1gib", OWN),
    ("STREAM read 1 GiB (sum)", BW.format("read"), "memory_bandwidth", "read_1gib", OWN),
    ("STREAM write 1 GiB (fill)", BW.format("write"), "memory_bandwidth", "write_1gib", OWN),
    ("d2d memcpy 512 MiB (read+write)", "memory_bandwidth/cuda/d2d/512MiB", "memory_bandwidth", "copy_512mib", LIB),
    ("h2d pinned 512 MiB", "memory_bandwidth/cuda/h2d_pinned/512MiB", "memory_bandwidth", "h2d_pinned_512mib", ("within", 0.05)),
    ("d2h pinned 512 MiB", "memory_bandwidth/cuda/d2h_pinned/512MiB", "memory_bandwidth", "d2h_pinned_512mib", ("within", 0.05)),
    ("add bf16 16384x4096", OPS.format("add_bf16"), "tensor_ops", "add_bf16", OWN),
    ("mul bf16 16384x4096", OPS.format("mul_bf16"), "tensor_ops", "mul_bf16", OWN),
    ("relu bf16 16384x4096", OPS.format("relu_bf16"), "tensor_ops", "relu_bf16", OWN),
    ("gelu (tanh) bf16 16384x4096", OPS.format("gelu_bf16"), "tensor_ops", "gelu_bf16", OWN),
    ("row sum bf16 16384x4096", OPS.format("sum_bf16"), "tensor_ops", "sum_bf16", OWN),
    ("softmax bf16 16384x4096", OPS.format("softmax_bf16"), "tensor_ops", "softmax_bf16", OWN),
    ("layer_norm bf16 16384x4096", OPS.format("layer_norm_bf16"), "tensor_ops", "layer_norm_bf16", OWN),
    ("softmax f32 16384x4096", OPS.format("softmax_f32"), "tensor_ops", "softmax_f32", OWN),
    ("layer_norm f32 16384x4096", OPS.format("layer_norm_f32"), "tensor_ops", "layer_norm_f32", OWN),
    ("flash causal bf16 s4096 vs SDPA", ATT.format("flash_causal_bf16"), "attention", "sdpa_causal_bf16_4096", ("min_ratio", 0.6)),
    ("flash bf16 s4096 vs SDPA", ATT.format("flash_bf16"), "attention", "sdpa_bf16_4096", ("min_ratio", 0.6)),
    ("standard causal bf16 s4096 vs math", ATT.format("standard_causal_bf16"), "attention", "math_causal_bf16_4096", ("min_ratio", 0.95)),
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
        say("+ " + " ".join(cmd))
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
    """case name -> (median ns per call, extra facts); a case torch cannot run here (an
    old torch without _scaled_mm, a GPU without FP8) is recorded with its error, and the
    others still run."""
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(0)
    results = {}

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device="cuda", dtype=dtype, generator=g)

    def case(name, make):
        """make() returns (fn, extra); times fn, keeps going on any error."""
        say(f"torch: {name}")
        try:
            fn, extra = make()
            results[name] = (timer.median_ns(fn), extra)
        except Exception as e:  # noqa: BLE001 - one case must not end the comparison
            results[name] = (None, {"error": f"{type(e).__name__}: {e}"})
            print(f"warning: torch case {name}: {type(e).__name__}: {e}", file=sys.stderr)
        torch.cuda.empty_cache()

    def matmul(dtype, tf32):
        def make():
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a, b = randn(8192, 8192, dtype=dtype), randn(8192, 8192, dtype=dtype)
            c = torch.empty_like(a)
            return (lambda: torch.matmul(a, b, out=c)), {}
        return make

    case("matmul_bf16_8192", matmul(torch.bfloat16, False))
    case("matmul_f16_8192", matmul(torch.float16, False))
    case("matmul_tf32_8192", matmul(torch.float32, True))
    case("matmul_f32_8192", matmul(torch.float32, False))
    torch.backends.cuda.matmul.allow_tf32 = False

    def scaled_mm():
        # TN as cuBLASLt's FP8 requires: A row-major, B column-major, bf16 out.
        a = randn(8192, 8192).to(torch.float8_e4m3fn)
        b = randn(8192, 8192).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device="cuda")
        return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), {}

    def int_mm():
        a = torch.randint(-128, 128, (8192, 8192), dtype=torch.int8, device="cuda", generator=g)
        b = torch.randint(-128, 128, (8192, 8192), dtype=torch.int8, device="cuda", generator=g)
        return (lambda: torch._int_mm(a, b)), {}

    case("scaled_mm_e4m3_8192", scaled_mm)
    case("int_mm_8192", int_mm)

    def f64(size):
        return randn(size // 8, dtype=torch.float64)

    def copy(size):
        def make():
            src = f64(size)
            dst = torch.empty_like(src)
            return (lambda: dst.copy_(src)), {}
        return make

    def stream(kind):
        def make():
            a, b, c = f64(GIB), f64(GIB), f64(GIB)
            s = 3.0
            return {
                "scale": lambda: torch.mul(c, s, out=b),
                "add": lambda: torch.add(a, b, out=c),
                "triad": lambda: torch.add(b, c, alpha=s, out=a),
                "read": lambda: torch.sum(a),
                "write": lambda: a.fill_(s),
            }[kind], {}
        return make

    case("copy_1gib", copy(GIB))
    case("copy_512mib", copy(512 * MIB))
    for kind in ["scale", "add", "triad", "read", "write"]:
        case(f"{kind}_1gib", stream(kind))

    def pinned(direction):
        def make():
            host = torch.randn(512 * MIB // 4).pin_memory()
            dev = torch.empty(512 * MIB // 4, device="cuda")
            if direction == "h2d":
                return (lambda: dev.copy_(host, non_blocking=True)), {}
            return (lambda: host.copy_(dev, non_blocking=True)), {}
        return make

    case("h2d_pinned_512mib", pinned("h2d"))
    case("d2h_pinned_512mib", pinned("d2h"))

    def op(name, dtype):
        def make():
            x, y = randn(16384, 4096, dtype=dtype), randn(16384, 4096, dtype=dtype)
            w, bias = randn(4096, dtype=dtype), randn(4096, dtype=dtype)
            return {
                "add": lambda: torch.add(x, y),
                "mul": lambda: torch.mul(x, y),
                "relu": lambda: torch.relu(x),
                "gelu": lambda: F.gelu(x, approximate="tanh"),
                "sum": lambda: torch.sum(x, dim=-1),
                "softmax": lambda: torch.softmax(x, dim=-1),
                "layer_norm": lambda: F.layer_norm(x, (4096,), w, bias),
            }[name], {}
        return make

    for name in ["add", "mul", "relu", "gelu", "sum", "softmax", "layer_norm"]:
        case(f"{name}_bf16", op(name, torch.bfloat16))
    for name in ["softmax", "layer_norm"]:
        case(f"{name}_f32", op(name, torch.float32))

    def attention(causal, backend):
        def make():
            q, k, v = (randn(1, 32, 4096, 128, dtype=torch.bfloat16) for _ in range(3))

            def call():
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            if backend is None:
                fn = call
            else:
                from torch.nn.attention import SDPBackend, sdpa_kernel

                def fn():
                    with sdpa_kernel(SDPBackend.MATH):
                        return call()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            fn()
            torch.cuda.synchronize()
            return fn, {"torch_peak_extra_bytes": torch.cuda.max_memory_allocated() - base}
        return make

    case("sdpa_causal_bf16_4096", attention(True, None))
    case("sdpa_bf16_4096", attention(False, None))
    case("math_causal_bf16_4096", attention(True, "math"))
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
    parser.add_argument("--samples", type=int, default=20, help="torch samples per case (default 20)")
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
    header = f"{'case':38} {'stackbench':>14} {'torch':>14} {'ratio':>7}  verdict"
    print(header)
    print("-" * len(header))
    rows, failed = [], False
    for label, bid, _target, case, acceptance in CASES:
        our = ours.get(bid)
        their_ns, extra = theirs.get(case, (None, {}))
        amount, unit = throughput_units(our[1]) if our else (None, None)
        fmt = lambda ns: "—" if ns is None or amount is None else f"{amount / (ns * 1e-9) / 1e12:8.2f} T{unit}"
        ratio = (their_ns / our[0]) if our and their_ns else None
        if not our:
            verdict = "stackbench result missing"
        elif their_ns is None:
            verdict = f"no torch figure ({extra.get('error', 'not run')})"
        else:
            verdict = judge(acceptance, ratio)
        # A bound that could not be checked (either side has no figure) is not a pass.
        failed |= verdict.startswith("FAIL") or (acceptance is not None and ratio is None)
        print(f"{label:38} {fmt(our[0] if our else None):>14} {fmt(their_ns):>14} "
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
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
