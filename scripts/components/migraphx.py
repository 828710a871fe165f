"""stackbench worker: AMD MIGraphX on the transformer block of transformer_block.py.

Benchmarks (ids ``components/migraphx/transformer_block/gpu_b<B>_s<S>``): the ONNX model
parsed by ``migraphx.parse_onnx`` with the input shape fixed, compiled for the GPU target
with ``offload_copy`` (inputs and outputs on the host, so ``run`` returns finished work
and the host clock is correct). Throughput B·S tokens per call.

Notes: ``compile_time_ns``, ``graph_nodes_before`` (ONNX nodes), ``graph_nodes_after``
(instructions of the compiled program's main module), latency p50/p90/p99,
``tokens_per_s``. Outputs are checked against the float64 NumPy reference.
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so the real package is imported, and import the
# shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import time  # noqa: E402

from stackbench_worker import Benchmark, Component, Mismatch, Skip, import_modules, latency_metrics, main, suite  # noqa: E402

TOLERANCE = 1e-3


class MiGraphX(Component):
    name = "migraphx"

    def __init__(self):
        self.missing = None
        self.model_path = None
        modules, self.missing = import_modules("migraphx", "numpy", "onnx")
        if self.missing:
            return
        self.migraphx, self.np, self.onnx = modules
        self.no_gpu = self.gpu_reason()

    def gpu_reason(self):
        """MIGraphX compiles for ROCm GPUs: no device is a skip; a device whose GPU target
        MIGraphX cannot load is a broken install, raised (the component fails)."""
        if not os.path.exists("/dev/kfd"):
            return "MIGraphX needs a ROCm GPU; /dev/kfd is absent, so none is visible"
        try:
            self.migraphx.get_target("gpu")
        except Exception as error:
            raise RuntimeError(f"MIGraphX cannot load its GPU target although /dev/kfd exists: {error}") from error
        return None

    def describe(self):
        from transformer_block import FULL_SHAPES, QUICK_SHAPES

        shapes = FULL_SHAPES if suite() == "full" else QUICK_SHAPES
        benchmarks = [
            {"benchmark": "transformer_block", "parameters": f"gpu_b{b}_s{s}", "throughput": {"elements": b * s}}
            for b, s in shapes
        ]
        reason = self.missing or self.no_gpu
        if reason:
            return {"component": self.name, "available": False, "reason": reason, "benchmarks": benchmarks}
        version = getattr(self.migraphx, "__version__", "unknown")
        return {"component": self.name, "available": True, "device": "rocm", "facts": {"migraphx_version": version}, "benchmarks": benchmarks}

    def make(self, benchmark, parameters):
        from transformer_block import block_params, write_model

        if benchmark != "transformer_block":
            raise ValueError(f"migraphx does not offer {benchmark}")
        if self.missing or self.no_gpu:
            raise Skip(self.missing or self.no_gpu)
        if self.model_path is None:
            self.model_path, self.weights, self.nodes_before = write_model(self.onnx, self.np)
        return MgxBlock(self, *block_params(parameters))


class MgxBlock(Benchmark):
    def __init__(self, component, batch, seq):
        from transformer_block import D_MODEL, make_input

        mgx, np = component.migraphx, component.np
        self.component, self.np, self.batch, self.seq = component, np, batch, seq
        self.program = mgx.parse_onnx(component.model_path, map_input_dims={"x": [batch, seq, D_MODEL]})
        started = time.perf_counter_ns()
        self.program.compile(mgx.get_target("gpu"), offload_copy=True)
        self.compile_ns = time.perf_counter_ns() - started
        # The printed main module has one line per instruction ("@3 = gpu::gemm...").
        self.nodes_after = sum(1 for line in str(self.program).splitlines() if line.lstrip().startswith("@"))
        self.x = make_input(np, batch, seq)
        self.feeds = {"x": mgx.argument(self.x)}

    def facts(self):
        return {
            "compile_time_ns": self.compile_ns,
            "graph_nodes_before": self.component.nodes_before,
            "graph_nodes_after": self.nodes_after,
        }

    def verify(self):
        from transformer_block import reference, relative_error

        got = self.np.array(self.program.run(self.feeds)[0])
        want = reference(self.np, self.component.weights, self.x)
        error = relative_error(self.np, got, want)
        if error > TOLERANCE:
            raise Mismatch(f"MIGraphX: max relative error {error:.3g} exceeds {TOLERANCE}")

    def step(self):
        self.program.run(self.feeds)

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns)
        if latencies_ns:
            metrics["tokens_per_s"] = self.batch * self.seq * len(latencies_ns) / (sum(latencies_ns) / 1e9)
        return metrics


if __name__ == "__main__":
    sys.exit(main(MiGraphX))
