"""Reference GEMM for stackbench's comparison: numpy's matmul (OpenBLAS in the PyPI
wheel) on random normal matrices, timed the way Criterion's median is: the median of
per-call times over ~2 s after a warm-up. Prints "DTYPE/SIZE median_gflops X" lines.
Usage: numpy_matmul.py [--dtypes f32,f64] SIZE..."""
import sys

import numpy as np
from call_timing import median_and_best

DTYPES = {"f32": np.float32, "f64": np.float64}


def main(args):
    dtypes = ["f32"]
    if args[:1] == ["--dtypes"]:
        dtypes, args = args[1].split(","), args[2:]
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        sys.exit(f"numpy_matmul.py: unknown dtype {unknown[0]!r} (known: {', '.join(DTYPES)})")
    sizes = [int(s) for s in args] or [1024, 2048, 4096]
    rng = np.random.default_rng(0)
    for name in dtypes:
        dtype = DTYPES[name]
        for n in sizes:
            a = rng.standard_normal((n, n)).astype(dtype)
            b = rng.standard_normal((n, n)).astype(dtype)
            c = np.empty((n, n), dtype=dtype)
            seconds, _ = median_and_best(lambda: np.matmul(a, b, out=c))
            print(f"{name}/{n} median_gflops {2.0 * n**3 / seconds / 1e9:.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
