"""stackbench worker: Triton kernels against PyTorch on the GPU.

Benchmarks (ids ``components/triton/<benchmark>/<parameters>``):

* ``vector_add/<triton|torch>_<n>``: out = x + y in f32; throughput 3·4·n bytes.
* ``softmax/<triton|torch>_<rows>x<cols>``: row softmax in f32, Triton's fused kernel
  against ``torch.softmax``; throughput 2·4·rows·cols bytes.

Notes of the Triton benchmarks: ``compile_time_ns``, the first launch of the kernel for
these arguments, which JIT-compiles it, minus a warm launch. Every measurement is on a
cold cache: ``TRITON_CACHE_DIR`` points at a fresh folder and the kernel's in-process
variants are dropped first (else every size after the first of a kernel is a cache hit
and reads about 0). The fresh folder must hold compiled files afterwards, which proves a
compile happened; where it does not, or this Triton's in-process cache cannot be dropped,
``compile_time_ns`` is null and ``compile_time_note`` says why.
Outputs are checked against PyTorch in float64. Timed with CUDA events.
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so the real package is imported, and import the
# shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import tempfile  # noqa: E402
import time  # noqa: E402

from stackbench_worker import Benchmark, Component, Skip, import_module, latency_metrics, main, suite  # noqa: E402

QUICK = {"vector_add": [1 << 24], "softmax": [(4096, 1024)]}
FULL = {"vector_add": [1 << 20, 1 << 24, 1 << 28], "softmax": [(4096, c) for c in (256, 1024, 4096, 16384)]}


class Triton(Component):
    name = "triton"

    def __init__(self):
        from torch_common import device_kind, import_torch, no_gpu_reason

        self.reason = None
        # A fresh cache, set before triton is imported, so the compile time is measured.
        self.cache_root = tempfile.mkdtemp(prefix="stackbench-triton-cache-")
        os.environ["TRITON_CACHE_DIR"] = self.cache_root
        self.torch, missing = import_torch()
        triton, self.reason = import_module("triton")
        if triton is None:
            return
        self.version = triton.__version__
        if missing:
            self.reason = missing
        elif device_kind(self.torch) == "cpu":
            self.reason = no_gpu_reason(self.torch, f"triton {self.version}")
        self.kind = None if self.reason else device_kind(self.torch)

    def offered(self):
        plan = FULL if suite() == "full" else QUICK
        specs = []
        for impl in ("triton", "torch"):
            specs += [("vector_add", f"{impl}_{n}", {"bytes": 12 * n}) for n in plan["vector_add"]]
            specs += [("softmax", f"{impl}_{r}x{c}", {"bytes": 8 * r * c}) for r, c in plan["softmax"]]
        return specs

    def describe(self):
        from torch_common import torch_facts

        benchmarks = [{"benchmark": b, "parameters": p, "throughput": t} for b, p, t in self.offered()]
        if self.reason:
            return {"component": self.name, "available": False, "reason": self.reason, "benchmarks": benchmarks}
        facts = torch_facts(self.torch, self.kind)
        facts["triton_version"] = self.version
        return {"component": self.name, "available": True, "device": self.kind, "facts": facts, "benchmarks": benchmarks}

    def make(self, benchmark, parameters):
        if self.reason:
            raise Skip(self.reason)
        if (benchmark, parameters) not in {(b, p) for b, p, _ in self.offered()}:
            raise ValueError(f"triton does not offer {benchmark}/{parameters}")
        impl, size = parameters.split("_", 1)
        return TritonBenchmark(self.torch, self.kind, benchmark, impl, size, self.cache_root)


class TritonBenchmark(Benchmark):
    def __init__(self, torch, kind, benchmark, impl, size, cache_root):
        import triton_kernels
        from torch_common import clock

        self.torch, self.clock, self.impl = torch, clock(torch, kind), impl
        generator = torch.Generator(device="cpu").manual_seed(0)
        if benchmark == "vector_add":
            n = int(size)
            self.x, self.y = (torch.randn(n, generator=generator).cuda() for _ in range(2))
            self.out = torch.empty_like(self.x)
            self.kernel = triton_kernels.vector_add_kernel
            triton_call = lambda: triton_kernels.vector_add(self.x, self.y, self.out)  # noqa: E731
            torch_call = lambda: torch.add(self.x, self.y, out=self.out)  # noqa: E731
            self.reference = lambda: self.x.double() + self.y.double()  # noqa: E731
        else:
            rows, cols = (int(v) for v in size.split("x"))
            self.x = torch.randn(rows, cols, generator=generator).cuda()
            self.out = torch.empty_like(self.x)
            self.kernel = triton_kernels.softmax_kernel
            triton_call = lambda: triton_kernels.softmax(self.x, self.out)  # noqa: E731
            torch_call = lambda: torch.softmax(self.x, dim=-1)  # noqa: E731
            self.reference = lambda: torch.softmax(self.x.double(), dim=-1)  # noqa: E731
        self.call = triton_call if impl == "triton" else torch_call
        self.compile_ns, self.compile_note = None, None
        if impl == "triton":
            self.compile_ns, self.compile_note = self.cold_compile_cost(triton_kernels, cache_root)

    def cold_compile_cost(self, triton_kernels, cache_root):
        """(ns, None) for the first launch on a cold cache beyond a warm launch, or
        (None, why) when the compile could not be made, or shown to be, cold."""
        if not triton_kernels.forget_compiled(self.kernel):
            return None, "this Triton keeps compiled kernels where stackbench cannot drop them"
        cache = tempfile.mkdtemp(prefix="cold-", dir=cache_root)
        os.environ["TRITON_CACHE_DIR"] = cache
        cost = self.first_launch_cost()
        if not any(files for _, _, files in os.walk(cache)):
            return None, f"the first launch wrote nothing to the fresh cache {cache}: no compile happened"
        return cost, None

    def first_launch_cost(self):
        """The first launch compiles; the cost is its time beyond a warm launch."""
        def timed():
            self.torch.cuda.synchronize()
            started = time.perf_counter_ns()
            self.call()
            self.torch.cuda.synchronize()
            return time.perf_counter_ns() - started

        first = timed()
        warm = min(timed() for _ in range(3))
        return first - warm

    def facts(self):
        return {"implementation": self.impl, "compile_time_ns": self.compile_ns, "compile_time_note": self.compile_note}

    def verify(self):
        from torch_common import check_close

        got = self.call()
        self.torch.cuda.synchronize()
        check_close(f"{self.impl} output", got, self.reference(), 1e-5)

    def step(self):
        self.call()

    def metrics(self, latencies_ns):
        return latency_metrics(latencies_ns)


if __name__ == "__main__":
    sys.exit(main(Triton))
