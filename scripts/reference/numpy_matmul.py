"""Reference GEMM for stackbench's comparison: numpy's matmul (OpenBLAS in the PyPI
wheel) on random normal f32 matrices, timed the way Criterion's median is: the median of
per-call times over ~2 s after a warm-up. Prints "SIZE median_gflops X" lines."""
import sys

import numpy as np
from call_timing import median_and_best


def main(sizes):
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        c = np.empty((n, n), dtype=np.float32)
        seconds, _ = median_and_best(lambda: np.matmul(a, b, out=c))
        print(f"{n} median_gflops {2.0 * n**3 / seconds / 1e9:.2f}", flush=True)


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or [1024, 2048, 4096])
