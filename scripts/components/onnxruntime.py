"""stackbench worker: ONNX Runtime on the transformer block of transformer_block.py.

Benchmarks (ids ``components/onnxruntime/transformer_block/<ep>_<level>_b<B>_s<S>``): one
per execution provider present (``cpu``, ``cuda``, ``tensorrt``, ``rocm``, ``migraphx``,
``openvino``, ``dml``) and graph-optimisation level (``disable``, ``basic``, ``extended``,
``all``). Throughput B·S tokens per call.

Notes: ``optimization_time_ns`` (creating the session, which is where ORT optimises the
graph for that level and provider), ``graph_nodes_before`` / ``graph_nodes_after`` (the
optimised model written through ``optimized_model_filepath``), latency p50/p90/p99 and
``tokens_per_s``. Outputs are checked against the float64 NumPy reference.

A session whose first provider is not the one its id names (ONNX Runtime's silent fallback
to the CPU when a GPU provider cannot start) fails that id, with what ORT logged.

``sess.run`` returns host arrays, so on a GPU provider each call includes the input and
output copies and returns only when the device is done: the host clock is correct there.
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so `import onnxruntime` finds the real package,
# and import the shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


import shutil
import tempfile
import time

from stackbench_worker import Benchmark, Component, Mismatch, Skip, captured_stderr, import_modules, latency_metrics, main, suite

LEVELS = ("disable", "basic", "extended", "all")
EP_NAMES = {
    "CPUExecutionProvider": "cpu",
    "CUDAExecutionProvider": "cuda",
    "TensorrtExecutionProvider": "tensorrt",
    "ROCMExecutionProvider": "rocm",
    "MIGraphXExecutionProvider": "migraphx",
    "OpenVINOExecutionProvider": "openvino",
    "DmlExecutionProvider": "dml",
}
TOLERANCE = 1e-3
# The device each GPU execution provider runs on: NVIDIA's CUDA and TensorRT, AMD's ROCm
# and MIGraphX. OpenVINO and DirectML are left out: they are not CUDA or ROCm devices.
GPU_EP_DEVICE = {"cuda": "cuda", "tensorrt": "cuda", "rocm": "rocm", "migraphx": "rocm"}


def component_device(eps):
    """The device the component's GPU ids run on: ``cuda``, ``rocm`` or ``cpu``."""
    devices = {GPU_EP_DEVICE[ep] for ep in eps if ep in GPU_EP_DEVICE}
    return "cuda" if "cuda" in devices else ("rocm" if "rocm" in devices else "cpu")


def fallback_error(requested, started, stderr_text):
    """The failure for a session that did not start the provider its id names: ORT then
    runs the whole graph on the CPU, and timing that under a GPU id would be a lie."""
    lines = [line for line in stderr_text.strip().splitlines() if line.strip()][-8:]
    detail = ("; onnxruntime said: " + " | ".join(lines)) if lines else ""
    return RuntimeError(
        f"onnxruntime did not start {requested}: the session's providers are {started} "
        f"(a silent fallback to the CPU){detail}"
    )


class OnnxRuntime(Component):
    name = "onnxruntime"

    def __init__(self):
        self.missing = None
        self.model_path = None
        modules, self.missing = import_modules("numpy", "onnx", "onnxruntime")
        if self.missing:
            return
        self.np, self.onnx, self.ort = modules

    def providers(self):
        present = self.ort.get_available_providers()
        return [p for p in present if p in EP_NAMES]

    def describe(self):
        shapes = FULL_SHAPES if suite() == "full" else QUICK_SHAPES
        eps = ["cpu"] if self.missing else [EP_NAMES[p] for p in self.providers()]
        benchmarks = [
            {"benchmark": "transformer_block", "parameters": f"{ep}_{level}_b{b}_s{s}", "throughput": {"elements": b * s}}
            for ep in eps
            for level in LEVELS
            for b, s in shapes
        ]
        if self.missing:
            return {"component": self.name, "available": False, "reason": self.missing, "benchmarks": benchmarks}
        facts = {
            "onnxruntime_version": self.ort.__version__,
            "onnx_version": self.onnx.__version__,
            "execution_providers": self.providers(),
            "model": f"transformer block d{D_MODEL} h{HEADS} ffn{FFN}, opset {OPSET}",
        }
        return {"component": self.name, "available": True, "device": component_device(eps), "facts": facts, "benchmarks": benchmarks}

    def make(self, benchmark, parameters):
        if benchmark != "transformer_block":
            raise ValueError(f"onnxruntime does not offer {benchmark}")
        ep, level = parameters.split("_")[:2]
        by_short = {EP_NAMES[p]: p for p in self.providers()}
        if ep not in by_short:
            raise Skip(f"execution provider {ep} is not available in onnxruntime {self.ort.__version__}")
        if level not in LEVELS:
            raise ValueError(f"unknown optimisation level {level!r}")
        if self.model_path is None:
            self.model_path, self.weights, self.nodes_before = write_model(self.onnx, self.np)
        return OrtBlock(self, by_short[ep], level, *block_params(parameters))


class OrtBlock(Benchmark):
    def __init__(self, component, provider, level, batch, seq):
        ort, np = component.ort, component.np
        self.np, self.onnx = np, component.onnx
        self.component, self.batch, self.seq = component, batch, seq
        options = ort.SessionOptions()
        options.graph_optimization_level = {
            "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }[level]
        threads = os.environ.get("STACKBENCH_TORCH_THREADS", "").strip()
        if threads:
            options.intra_op_num_threads = int(threads)
        self.optimized_dir = tempfile.mkdtemp(prefix="stackbench-ort-")
        self.optimized_path = os.path.join(self.optimized_dir, "optimized.onnx")
        # A session that fails to open (a provider that cannot start) must not leave the
        # directory behind: teardown never runs for a benchmark that was never made.
        try:
            self._open(component, options, provider, level, batch, seq)
        except BaseException:
            shutil.rmtree(self.optimized_dir, ignore_errors=True)
            raise

    def _open(self, component, options, provider, level, batch, seq):
        ort, np = component.ort, component.np
        # Providers that compile subgraphs (TensorRT, MIGraphX, OpenVINO) cannot save the
        # optimised model; their node counts are then the ORT-level ones left unknown.
        saves_model = provider in ("CPUExecutionProvider", "CUDAExecutionProvider", "ROCMExecutionProvider", "DmlExecutionProvider")
        if saves_model:
            options.optimized_model_filepath = self.optimized_path
        providers = [provider] if provider == "CPUExecutionProvider" else [provider, "CPUExecutionProvider"]
        with captured_stderr() as log:
            started = time.perf_counter_ns()
            self.session = ort.InferenceSession(component.model_path, sess_options=options, providers=providers)
            self.optimization_ns = time.perf_counter_ns() - started
        # ORT falls back to the CPU provider when the requested one cannot start (a missing
        # libcublas, a driver mismatch) and only logs it: the id would still say GPU.
        if self.session.get_providers()[:1] != [provider]:
            raise fallback_error(provider, self.session.get_providers(), log.text)
        self.nodes_after = len(component.onnx.load(self.optimized_path).graph.node) if saves_model else None
        self.provider, self.level = provider, level
        self.x = make_input(np, batch, seq)
        self.feeds = {"x": self.x}

    def facts(self):
        return {
            # Per id: the component's label says where its GPU ids run, this one says where
            # this id ran (its provider's device).
            "device": GPU_EP_DEVICE.get(EP_NAMES[self.provider], "cpu"),
            "execution_provider": self.provider,
            "session_providers": self.session.get_providers(),
            "optimization_level": self.level,
            "optimization_time_ns": self.optimization_ns,
            "graph_nodes_before": self.component.nodes_before,
            "graph_nodes_after": self.nodes_after,
        }

    def verify(self):
        got = self.session.run(None, self.feeds)[0]
        want = reference(self.np, self.component.weights, self.x)
        error = relative_error(self.np, got, want)
        if error > TOLERANCE:
            raise Mismatch(f"onnxruntime {self.provider} {self.level}: max relative error {error:.3g} exceeds {TOLERANCE}")

    def step(self):
        self.session.run(None, self.feeds)

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns)
        if latencies_ns:
            metrics["tokens_per_s"] = self.batch * self.seq * len(latencies_ns) / (sum(latencies_ns) / 1e9)
        return metrics

    def teardown(self):
        self.session = None
        shutil.rmtree(self.optimized_dir, ignore_errors=True)


from transformer_block import (  # noqa: E402 -- after the worker helpers, stdlib only
    D_MODEL,
    FFN,
    FULL_SHAPES,
    HEADS,
    OPSET,
    QUICK_SHAPES,
    block_params,
    make_input,
    reference,
    relative_error,
    write_model,
)

if __name__ == "__main__":
    sys.exit(main(OnnxRuntime))
