"""stackbench worker: compile time of Triton kernels and of ``torch.compile`` (the Python
compilers of ``cargo bench --bench compile``; see ``crates/model/src/workload/compile.rs``).

One script, run once per compiler: ``STACKBENCH_COMPILE_COMPILER`` is ``triton`` or
``torch_compile`` (the ids' second part), and ``STACKBENCH_COMPILE_CASES`` is the JSON
list of ``{"benchmark", "parameters"}`` the runner wants, which this worker offers back.

* ``compile/triton/<kernel>/<shape>_<target>``: ``triton.compile`` of the component tier's
  kernels (``lib/triton_kernels.py``) for a named target (``sm80``, ``sm90``: CUDA;
  ``gfx942``: HIP) with the signature, constants and divisibility a launch on
  16-byte-aligned tensors of that shape gives. No GPU is needed.
* ``compile/torch_compile/<model>/cold``: the first call of a ``torch.compile``d model
  (Dynamo, AOTAutograd, Inductor, the C++ or Triton build) with empty caches.
* ``compile/torch_compile/<model>/warm``: the same on a populated cache after a Dynamo
  reset, what a restart of a deployed service pays.

A compile time is only a compile time if the compile happened, so every sample is
prepared outside the timed window and checked after it:

* Triton: ``TRITON_CACHE_DIR`` is a new folder, empty before the compile and holding the
  kernel binary after it; ``verify`` shows that a second compile into the same folder
  writes nothing (a hit), so the check can tell a hit from a compile.
* ``torch.compile`` cold: fresh Inductor and Triton cache folders, Dynamo reset and
  Inductor's in-memory caches cleared; the FX graph cache must count a miss and no hit,
  and the folder must fill. Warm: the populated folder, Dynamo reset and in-memory caches
  cleared; the FX graph cache must count a hit and no miss.

A sample that does not pass raises, so the run fails; ``compiles_proven`` counts the
samples that passed since setup (verify included), which the runner compares with the
calls it asked for.
"""

import json
import os
import sys

# Workers share their names with the packages they measure: take this folder off the
# import path so the real packages are imported, and import the helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from stackbench_worker import Benchmark, Component, Mismatch, Skip, import_module, latency_metrics, main  # noqa: E402

COMPILER_ENV = "STACKBENCH_COMPILE_COMPILER"
CASES_ENV = "STACKBENCH_COMPILE_CASES"

# Triton targets as the ids name them: GPUTarget(backend, arch, warp size).
TRITON_TARGETS = {"sm80": ("cuda", 80, 32), "sm90": ("cuda", 90, 32), "gfx942": ("hip", "gfx942", 64)}
# The binary each Triton backend ends in.
TRITON_BINARIES = {"cuda": "cubin", "hip": "hsaco"}


def files_under(folder):
    """Every file below ``folder`` with its size, as {relative path: bytes}."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = os.path.getsize(path)
    return found


def read_cases():
    raw = os.environ.get(CASES_ENV, "")
    try:
        cases = json.loads(raw)
    except ValueError as error:
        raise ValueError(f"{CASES_ENV} is not JSON: {error}: {raw[:200]!r}") from None
    if not isinstance(cases, list) or not all(
        isinstance(c, dict) and isinstance(c.get("benchmark"), str) and isinstance(c.get("parameters"), str)
        for c in cases
    ):
        raise ValueError(f'{CASES_ENV} must be a list of {{"benchmark", "parameters"}} strings: {raw[:200]!r}')
    return cases


class ColdSamples(Benchmark):
    """Times ``compile_sample`` ``iters`` times, each prepared and checked outside the clock;
    ``proven`` counts the samples that passed their check since setup."""

    def __init__(self):
        self.proven = 0
        self.scratch = None
        self.sample_index = 0

    def fresh_dir(self, what):
        """A new empty folder for one sample's cache."""
        if self.scratch is None:
            self.scratch = tempfile.mkdtemp(prefix="stackbench-compile-")
        self.sample_index += 1
        folder = os.path.join(self.scratch, f"{what}-{self.sample_index}")
        os.makedirs(folder)
        if files_under(folder):
            raise RuntimeError(f"the fresh cache folder {folder} is not empty")
        return folder

    def one_sample(self):
        """(ns) of one prepared, timed and checked sample."""
        state = self.prepare_sample()
        started = time.perf_counter_ns()
        result = self.compile_sample(state)
        took = time.perf_counter_ns() - started
        self.check_sample(state, result)
        self.proven += 1
        return took

    def timed_run(self, iters):
        per_call = [self.one_sample() for _ in range(iters)]
        return sum(per_call), per_call

    def verify(self):
        self.one_sample()

    def step(self):
        raise RuntimeError("compile benchmarks time their own samples (timed_run)")

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns)
        metrics["compiles_proven"] = self.proven
        return metrics

    def teardown(self):
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


class TritonCompile(ColdSamples):
    def __init__(self, triton, benchmark, parameters):
        super().__init__()
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import ASTSource, make_backend

        import triton_kernels

        self.triton = triton
        shape, _, target_name = parameters.rpartition("_")
        if target_name not in TRITON_TARGETS:
            raise ValueError(f"unknown Triton target '{target_name}' in '{parameters}' (known: {', '.join(TRITON_TARGETS)})")
        backend_name, arch, warp = TRITON_TARGETS[target_name]
        self.target = GPUTarget(backend_name, arch, warp)
        self.binary = TRITON_BINARIES[backend_name]
        try:
            backend = make_backend(self.target)
        except Exception as error:  # this Triton has no backend for the target
            raise Skip(f"triton {triton.__version__} cannot compile for {target_name}: {error}") from None
        divisible = backend.parse_attr("D")

        def attrs(args):
            """What a launch on 16-byte-aligned tensors gives: pointers, and ints that are
            multiples of 16, are marked divisible by 16."""
            return {(i,): (divisible if aligned else []) for i, aligned in enumerate(args)}

        if benchmark == "vector_add":
            n = int(shape)
            self.kernel = triton_kernels.vector_add_kernel
            signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
            constants = {"BLOCK": 1024}
            attributes = attrs([True, True, True, n % 16 == 0])
        elif benchmark == "softmax":
            rows, cols = (int(v) for v in shape.split("x"))
            self.kernel = triton_kernels.softmax_kernel
            signature = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"}
            constants = {"BLOCK": triton.next_power_of_2(cols)}
            attributes = attrs([True, True] + [cols % 16 == 0] * 3)
            self.rows = rows
        else:
            raise ValueError(f"triton offers no compile benchmark '{benchmark}'")
        self.source = ASTSource(fn=self.kernel, signature=signature, constexprs=constants, attrs=attributes)
        self.constants = constants

    def prepare_sample(self):
        cache = self.fresh_dir("triton-cache")
        os.environ["TRITON_CACHE_DIR"] = cache
        return cache, files_under(cache)

    def compile_sample(self, state):
        return self.triton.compile(self.source, target=self.target)

    def check_sample(self, state, compiled):
        cache, before = state
        if before:
            raise Mismatch(f"the cache {cache} held {sorted(before)} before the compile: a sample must start empty")
        binary = compiled.asm.get(self.binary) or b""
        if not binary:
            raise Mismatch(f"triton.compile returned no {self.binary} for {self.target}")
        written = files_under(cache)
        if not any(name.endswith("." + self.binary) and size > 0 for name, size in written.items()):
            raise Mismatch(f"the fresh cache {cache} holds no {self.binary} after the compile (files: {sorted(written)}): no compile happened there")
        self.binary_bytes = len(binary)

    def verify(self):
        super().verify()
        # The check must be able to tell a hit: a second compile into the same, filled
        # folder is a hit, and a hit writes nothing.
        cache = os.environ["TRITON_CACHE_DIR"]
        before = files_under(cache)
        started = time.perf_counter_ns()
        self.triton.compile(self.source, target=self.target)
        self.hit_ns = time.perf_counter_ns() - started
        if files_under(cache) != before:
            raise Mismatch(f"a second compile into {cache} wrote files: Triton's cache did not hit, so a filled folder does not prove a compile")

    def facts(self):
        return {"triton_version": self.triton.__version__, "target": str(self.target), "constants": self.constants}

    def metrics(self, latencies_ns):
        metrics = super().metrics(latencies_ns)
        metrics["kernel_binary_bytes"] = getattr(self, "binary_bytes", None)
        metrics["cache_hit_ns"] = getattr(self, "hit_ns", None)
        metrics["cache"] = "TRITON_CACHE_DIR is a new empty folder every sample, filled after it"
        return metrics


class TorchCompile(ColdSamples):
    """The first call of ``torch.compile(model)`` on cold or warm caches, in inference."""

    def __init__(self, torch, model, state):
        super().__init__()
        import torch._dynamo
        import torch._inductor.config as inductor_config
        from torch._dynamo.utils import counters
        from torch._inductor.utils import clear_inductor_caches

        from torch_common import mlp_block

        if state not in ("cold", "warm"):
            raise ValueError(f"unknown cache state '{state}' (cold or warm)")
        if not inductor_config.fx_graph_cache:
            raise Skip("Inductor's FX graph cache is off (TORCHINDUCTOR_FX_GRAPH_CACHE=0): a warm start cannot hit it, and a cold one cannot be shown to miss")
        self.torch, self.state, self.counters = torch, state, counters
        self.reset = torch._dynamo.reset
        self.clear = clear_inductor_caches
        torch.manual_seed(0)
        if model == "mlp":
            self.model = mlp_block(torch, 256)
            self.x = torch.randn(8, 128, 256)
        elif model == "transformer_block":
            self.model = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True, norm_first=True)
            self.x = torch.randn(8, 128, 256)
        else:
            raise ValueError(f"torch_compile offers no model '{model}'")
        self.model.eval()
        with torch.no_grad():
            self.expected = self.model(self.x)
        self.warm_cache = None
        if state == "warm":
            # Populated once by a cold compile; every sample then starts from it.
            self.warm_cache = self.fresh_dir("inductor-warm")
            self.point_caches_at(self.warm_cache)
            self.reset()
            self.clear()
            self.first_call()

    def point_caches_at(self, folder):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
        os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")

    def first_call(self):
        compiled = self.torch.compile(self.model)
        with self.torch.no_grad():
            return compiled(self.x)

    def counts(self):
        inductor = self.counters["inductor"]
        aot = self.counters["aot_autograd"]
        return {
            "miss": inductor["fxgraph_cache_miss"],
            "hit": inductor["fxgraph_cache_hit"] + aot["autograd_cache_hit"],
        }

    def prepare_sample(self):
        folder = self.fresh_dir("inductor-cold") if self.state == "cold" else self.warm_cache
        self.point_caches_at(folder)
        # Nothing compiled earlier in this process may serve the sample: Dynamo's code
        # caches and Inductor's in-memory module caches go; the disk cache is the folder.
        self.reset()
        self.clear()
        return folder, files_under(folder), self.counts()

    def compile_sample(self, state):
        return self.first_call()

    def check_sample(self, state, output):
        folder, files_before, before = state
        after = self.counts()
        misses, hits = after["miss"] - before["miss"], after["hit"] - before["hit"]
        if self.state == "cold":
            if misses < 1 or hits > 0:
                raise Mismatch(f"a cold sample counted {misses} FX graph cache misses and {hits} hits: it was not a cold compile")
            if files_before or not files_under(folder):
                raise Mismatch(f"the cold cache {folder} was not empty before or is empty after the compile")
        elif hits < 1 or misses > 0:
            raise Mismatch(f"a warm sample counted {hits} cache hits and {misses} misses: it did not start from the populated cache")
        error = (output - self.expected).abs().max().item()
        scale = self.expected.abs().max().item()
        if not error <= 1e-4 * max(scale, 1.0):
            raise Mismatch(f"the compiled model's output differs from eager by {error} (scale {scale})")
        self.last = {"fxgraph_cache_misses": misses, "cache_hits": hits, "cache_files": len(files_under(folder))}

    def facts(self):
        return {"torch_version": self.torch.__version__, "cache_state": self.state, "input_shape": list(self.x.shape)}

    def metrics(self, latencies_ns):
        metrics = super().metrics(latencies_ns)
        metrics.update(getattr(self, "last", {}))
        metrics["cache"] = (
            "fresh TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR every sample, Dynamo reset, in-memory caches cleared"
            if self.state == "cold"
            else "one populated TORCHINDUCTOR_CACHE_DIR; Dynamo reset and in-memory caches cleared every sample"
        )
        return metrics


class Compilers(Component):
    def __init__(self):
        self.name = os.environ.get(COMPILER_ENV, "")
        if self.name not in ("triton", "torch_compile"):
            raise ValueError(f"{COMPILER_ENV}={self.name!r}: expected 'triton' or 'torch_compile'")
        self.cases = read_cases()
        module = "triton" if self.name == "triton" else "torch"
        self.module, self.reason = import_module(module)
        if self.module is not None and self.name == "torch_compile":
            from torch_common import import_torch

            self.module, self.reason = import_torch()

    def describe(self):
        facts = {}
        if self.module is not None:
            facts[f"{self.module.__name__}_version"] = self.module.__version__
        return {
            "component": self.name,
            "available": self.reason is None,
            "reason": self.reason,
            "device": "cpu",
            "facts": facts,
            "benchmarks": [{"benchmark": c["benchmark"], "parameters": c["parameters"]} for c in self.cases],
        }

    def make(self, benchmark, parameters):
        if self.reason:
            raise Skip(self.reason)
        if {"benchmark": benchmark, "parameters": parameters} not in self.cases:
            raise ValueError(f"{self.name} was not asked for {benchmark}/{parameters}")
        if self.name == "triton":
            return TritonCompile(self.module, benchmark, parameters)
        return TorchCompile(self.module, benchmark, parameters)


if __name__ == "__main__":
    sys.exit(main(Compilers))
