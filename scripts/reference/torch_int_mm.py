"""Reference INT8 GEMM for stackbench's comparison: torch._int_mm on the CPU (int8 x int8
-> int32; oneDNN's s8s8s32 matmul where torch was built with it, as the PyPI wheel is),
with torch.set_num_threads(THREADS), on inputs quantised as stackbench's are (unit normal
x 127/3, rounded, saturated to [-128, 127]). Timed the way Criterion's median is: the
median of per-call times over ~2 s after a warm-up. Before timing, each result is checked
for equality with an exact int64 product on sampled rows, so a wrong path cannot be timed.
Prints "MxNxK median_tops X best_tops Y" lines, then the path torch took.

Usage: torch_int_mm.py THREADS MxNxK [MxNxK ...]"""
import sys

import torch
from call_timing import median_and_best


def quantised(gen, rows, cols):
    x = torch.randn(rows, cols, generator=gen) * (127.0 / 3.0)
    return x.round().clamp(-128, 127).to(torch.int8)


def check(a, b, c):
    """Exact int64 product of a few rows (all columns) against torch's int32 result."""
    rows = sorted({0, a.shape[0] // 2, a.shape[0] - 1})
    want = a[rows].to(torch.int64) @ b.to(torch.int64)
    if not torch.equal(want, c[rows].to(torch.int64)):
        sys.exit(f"torch._int_mm gave a wrong product for {tuple(a.shape)} x {tuple(b.shape)}")


def main(threads, shapes):
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    for shape in shapes:
        m, n, k = (int(x) for x in shape.split("x"))
        a, b = quantised(gen, m, k), quantised(gen, k, n)
        c = torch.empty(m, n, dtype=torch.int32)
        torch._int_mm(a, b, out=c)
        check(a, b, c)
        median, best = median_and_best(lambda: torch._int_mm(a, b, out=c))
        ops = 2.0 * m * n * k
        print(f"{shape} median_tops {ops / median / 1e12:.4f} best_tops {ops / best / 1e12:.4f}", flush=True)
    print(
        f"# torch {torch.__version__}, threads {torch.get_num_threads()}, "
        f"mkldnn (oneDNN) available: {torch.backends.mkldnn.is_available()}, "
        f"cpu capability: {torch.backends.cpu.get_cpu_capability()}",
        flush=True,
    )


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(int(sys.argv[1]), sys.argv[2:])
