"""stackbench worker: OpenVINO on the transformer block of transformer_block.py.

Benchmarks (ids ``components/openvino/transformer_block/<device>_b<B>_s<S>``): the ONNX
model read by ``openvino.Core().read_model`` and compiled with ``compile_model`` for CPU,
and for each GPU OpenVINO sees. Throughput B·S tokens per call.

Notes: ``compile_time_ns``, ``graph_nodes_before`` (operations of the read model),
``graph_nodes_after`` (operations of the compiled runtime model), ``inference_precision``
(OpenVINO picks bf16 or f16 on some hardware by default; the check's tolerance follows),
latency p50/p90/p99 and ``tokens_per_s``. Outputs are checked against the float64 NumPy
reference. ``infer()`` is synchronous, so the host clock times finished work.
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so `import openvino` finds the real package,
# and import the shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import time  # noqa: E402

from stackbench_worker import Benchmark, Component, Mismatch, Skip, import_modules, latency_metrics, main, suite  # noqa: E402

# Relative error allowed against the float64 reference, by the precision OpenVINO ran in.
TOLERANCE = {"f32": 1e-3, "bf16": 6e-2, "f16": 2e-2}


class OpenVino(Component):
    name = "openvino"

    def __init__(self):
        self.missing = None
        self.model_path = None
        modules, self.missing = import_modules("numpy", "onnx", "openvino")
        if self.missing:
            return
        self.np, self.onnx, self.ov = modules
        self.core = self.ov.Core()

    def devices(self):
        return [d for d in self.core.available_devices if d == "CPU" or d.startswith("GPU")]

    def describe(self):
        from transformer_block import FULL_SHAPES, QUICK_SHAPES

        shapes = FULL_SHAPES if suite() == "full" else QUICK_SHAPES
        devices = ["CPU"] if self.missing else self.devices()
        benchmarks = [
            {"benchmark": "transformer_block", "parameters": f"{device_id(d)}_b{b}_s{s}", "throughput": {"elements": b * s}}
            for d in devices
            for b, s in shapes
        ]
        if self.missing:
            return {"component": self.name, "available": False, "reason": self.missing, "benchmarks": benchmarks}
        facts = {
            "openvino_version": self.ov.get_version(),
            "openvino_devices": {d: self.core.get_property(d, "FULL_DEVICE_NAME") for d in self.devices()},
        }
        # OpenVINO's GPU plugin drives Intel graphics (OpenCL / Level Zero), never CUDA:
        # labelling it cuda would file its numbers with NVIDIA's.
        device = "intel_gpu" if any(d.startswith("GPU") for d in devices) else "cpu"
        return {"component": self.name, "available": True, "device": device, "facts": facts, "benchmarks": benchmarks}

    def make(self, benchmark, parameters):
        from transformer_block import block_params, write_model

        if benchmark != "transformer_block":
            raise ValueError(f"openvino does not offer {benchmark}")
        wanted = parameters.split("_")[0]
        matches = [d for d in self.devices() if device_id(d) == wanted]
        if not matches:
            raise Skip(f"OpenVINO {self.ov.get_version()} sees no device {wanted} (it sees {self.devices()})")
        if self.model_path is None:
            self.model_path, self.weights, _ = write_model(self.onnx, self.np)
        return OvBlock(self, matches[0], *block_params(parameters))


def device_id(device):
    """``GPU.0`` → ``gpu0``: ids must not carry dots or slashes."""
    return device.lower().replace(".", "")


def precision_name(hint):
    """OpenVINO's element type (printed ``<Type: 'bfloat16'>`` or ``bf16``) → bf16/f16/f32."""
    text = str(hint).lower()
    for keys, name in ((("bfloat16", "bf16"), "bf16"), (("float16", "f16"), "f16"), (("float32", "f32"), "f32")):
        if any(key in text for key in keys):
            return name
    return text


class OvBlock(Benchmark):
    def __init__(self, component, device, batch, seq):
        from transformer_block import make_input

        ov, np = component.ov, component.np
        self.component, self.np, self.device, self.batch, self.seq = component, np, device, batch, seq
        model = component.core.read_model(component.model_path)
        self.nodes_before = len(model.get_ops())
        started = time.perf_counter_ns()
        self.compiled = component.core.compile_model(model, device, {"PERFORMANCE_HINT": "LATENCY"})
        self.compile_ns = time.perf_counter_ns() - started
        self.nodes_after = len(self.compiled.get_runtime_model().get_ops())
        self.precision = precision_name(self.compiled.get_property("INFERENCE_PRECISION_HINT"))
        self.x = make_input(np, batch, seq)
        self.request = self.compiled.create_infer_request()
        self.request.set_input_tensor(ov.Tensor(self.x))

    def facts(self):
        return {
            "openvino_device": self.device,
            "compile_time_ns": self.compile_ns,
            "graph_nodes_before": self.nodes_before,
            "graph_nodes_after": self.nodes_after,
            "inference_precision": self.precision,
        }

    def verify(self):
        from transformer_block import reference, relative_error

        self.request.infer()
        got = self.request.get_output_tensor(0).data.copy()
        want = reference(self.np, self.component.weights, self.x)
        error = relative_error(self.np, got, want)
        tolerance = TOLERANCE.get(self.precision, TOLERANCE["bf16"])
        if error > tolerance:
            raise Mismatch(f"OpenVINO {self.device} ({self.precision}): max relative error {error:.3g} exceeds {tolerance}")

    def step(self):
        self.request.infer()

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns)
        if latencies_ns:
            metrics["tokens_per_s"] = self.batch * self.seq * len(latencies_ns) / (sum(latencies_ns) / 1e9)
        return metrics

    def teardown(self):
        self.request = None
        self.compiled = None


if __name__ == "__main__":
    sys.exit(main(OpenVino))
