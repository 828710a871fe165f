"""stackbench worker: model sweeps (issue 19) on one backend.

The plan is the JSON file ``STACKBENCH_MODELS_PLAN`` names (written by the Rust side from
its catalogue, crates/model/src/workload/models.rs; read and checked by lib/model_zoo.py), the backend
is ``STACKBENCH_MODELS_BACKEND``: torch | onnxruntime | openvino | vllm. Models are built
with ``transformers`` from the plan's config dicts with random weights from a fixed seed;
nothing is downloaded (the hub is switched off before transformers is imported).

One benchmark per cell of the plan: ``<model>-<precision>-<phase>`` / ``b<B>_s<S>`` (``b<B>``
for vision and speech, whose input size the config fixes). A cell this backend or device
cannot run is still offered; ``setup`` raises ``Skip`` with the reason.

The timed call of each phase:

* ``prefill``: one forward over the B×S prompt that fills the KV cache and yields the
  logits of the last position (what a server needs to pick the first token);
* ``decode``: prefill, then greedy cached steps to exactly ``new_tokens`` tokens (no stop
  on EOS); TTFT (start to the first token chosen) and TPOT = (E2E − TTFT)/(N − 1) are
  measured per call inside it, vLLM's definitions;
* ``forward``: the encoder (BERT, the T5 encoder), the vision model (ViT) or the speech
  encoder (Whisper);
* ``serve`` (``b<B>_s<S>_r<R>``, only when the sweep has rates): throughput under load.
  Load runs of the plan's ``serve.requests`` requests arrive at R requests/s (Poisson,
  seeded: ``serve.seed`` + the run's number, so every backend sees the same arrivals), each
  prompt S tokens and exactly ``new_tokens`` new tokens (no stop on EOS), at most B at once
  (lib/serving.py). torch and ONNX Runtime are served by the worker's own loop in
  scheduler rounds (each round admits the requests that have arrived, up to B, and decodes
  them together; no mid-flight joins); vLLM by its engine, each request added at its
  arrival. One timed call is one request: its E2E under load (arrival to last token,
  queueing included), replayed from the finished load runs by ``serving.ReplayClock``, so
  Criterion's figure is the mean request latency under load; the load runs' wall time is
  outside the timed calls.

ONNX Runtime and OpenVINO run graphs exported from the same torch model (TorchScript
exporter, dynamic batch and sequence axes): the forward or prefill graph, and for a
decoder-only model's decode a step graph (one token plus every layer's past keys and
values in, the logits and the extended keys and values out), driven by the same greedy
loop. Encoder-decoder decode (T5, Whisper) is not exported: a reasoned skip there.

Checked before timing (``verify``): the built model's parameter count equals the plan's
``params_expected`` (the Rust formula); outputs are finite and of the right shape; decode's
cached greedy tokens equal an uncached recompute of the whole sequence on a short prompt,
on the backend itself (a difference is accepted only at a near-tie of the reference
logits, within the precision's rounding: ``NEAR_TIE``); ONNX Runtime and OpenVINO outputs match torch's on the same weights
and inputs within the precision's tolerance (``TOLERANCE``).

Metrics of every cell: ``latency_p{50,90,99}_ns`` and ``e2e_p{50,90,99}_ns`` per call,
``tokens_per_s`` or ``samples_per_s``, ``batch``, ``seq``, ``precision``, ``phase``,
``params``, ``flops_per_token``, ``memory_peak_bytes``, ``memory_avg_bytes``,
``memory_method``, and ``energy_j_per_token`` / ``energy_j_per_sample`` with
``energy_method``, or ``energy_unavailable`` with the reason (lib/model_metrics.py).
Prefill adds ``ttft_p{50,90,99}_ns`` (its call latency: a prefill is the time to the first
token) with ``ttft_method``. Decode adds ``ttft_p{50,90,99}_ns``, ``tpot_p{50,90,99}_ns``
and ``new_tokens``. Serve
adds the load's figures: ``offered_rps``, ``achieved_rps`` (completed / elapsed),
``goodput_rps`` (requests meeting every SLO of ``serve.slos`` / elapsed),
``slo_attainment``, ``serve_slos``, ``requests_completed``, ``requests_good``,
``load_runs``, ``scheduler``, and ``queue_wait``/``ttft``/``tpot``/``request_e2e``
p50/p90/p99 under load (TTFT from arrival); its ``tokens_per_s`` is the load's output
tokens / elapsed (vLLM's output throughput).
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, vllm.py):
# take this folder off the import path so the real packages are imported, and import the
# shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import gc  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import model_zoo as zoo  # noqa: E402
import serving  # noqa: E402
from model_metrics import EnergyMeter, Sampler, memory_sampler  # noqa: E402
from stackbench_worker import Benchmark, Component, Mismatch, Skip, import_modules, latency_metrics, main  # noqa: E402

os.environ.update(zoo.OFFLINE_ENV)

TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "int8": "float32"}
# Relative error (max |got − want| / max |want|) allowed against torch's fp32 outputs.
TOLERANCE = {"fp32": 1e-3, "fp16": 2e-2, "bf16": 6e-2, "int8": 1e-1}
# A cached greedy token may differ from the uncached one only where the reference's two
# logits are this close (relative to max |logit|): a tie that rounding can break either way.
# int8 is dynamic quantization: each call's activations are scaled by that call's range, so
# a one-token step and a whole-sequence recompute round differently (1.3 % of max |logit|
# was seen on ci-llama).
NEAR_TIE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 4e-2, "int8": 5e-2}
# Decode's cached-versus-uncached check runs on a prefix of the prompt this long, for this
# many new tokens: short, so the recompute costs little even for big models.
CHECK_PROMPT, CHECK_TOKENS = 8, 8
OPSET = 17
ORT_PROVIDERS = {
    "cpu": ["CPUExecutionProvider"],
    "cuda": ["CUDAExecutionProvider"],
    "rocm": ["ROCMExecutionProvider", "MIGraphXExecutionProvider"],
    "qnn": ["QNNExecutionProvider"],
}
OPENVINO_DEVICES = {"cpu": "CPU"}



def cpu_has_vnni():
    """Whether this CPU has an int8 dot-product instruction (AVX-512 VNNI or AVX-VNNI)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            flags = info.read()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags

class Models(Component):
    name = "models"

    def __init__(self):
        self.plan = None
        self.backend = None
        self.torch = self.transformers = None
        self.loaded = None  # (key, model, params, origin): one model kept between cells
        self.export_dir = None
        self.exports = {}
        self.engines = {}

    # ---- describe ----

    def describe(self):
        self.plan = zoo.read_plan()
        self.backend = zoo.read_backend()
        self.device = self.plan["device"]
        self.new_tokens = self.plan["new_tokens"]
        benchmarks = []
        for cell in self.plan["cells"]:
            spec = self.plan["models"][cell["model"]]
            benchmark, parameters = zoo.cell_id(cell, spec)
            elements = zoo.elements_per_call(cell, spec["task"], self.new_tokens)
            benchmarks.append({"benchmark": benchmark, "parameters": parameters, "throughput": {"elements": elements}})
        description = {"component": f"models-{self.backend}", "device": self.device, "benchmarks": benchmarks}
        reason = self.load_stack()
        if reason is None:
            reason = self.device_reason()
        if reason is not None:
            return {**description, "available": False, "reason": reason}
        return {**description, "available": True, "facts": self.stack_facts()}

    def load_stack(self):
        """Imports the backend's packages; the reason when one is not installed."""
        modules, missing = import_modules("torch", "transformers")
        if missing:
            return missing
        self.torch, self.transformers = modules
        threads = os.environ.get("STACKBENCH_TORCH_THREADS", "").strip()
        if threads:
            self.torch.set_num_threads(int(threads))
        extra = {"onnxruntime": ("numpy", "onnx", "onnxruntime"), "openvino": ("numpy", "onnx", "openvino"), "vllm": ("vllm",)}
        if self.backend in extra:
            if self.backend == "vllm" and self.device in ("cpu", "mps", "qnn"):
                # vLLM is not imported where it cannot run: its import alone takes seconds.
                return None
            modules, missing = import_modules(*extra[self.backend])
            if missing:
                return missing
            self.extra = dict(zip(extra[self.backend], modules, strict=True))
        return None

    def device_reason(self):
        """Why the plan's device is not usable by this backend here, or None."""
        from torch_common import device_kind

        torch, device = self.torch, self.device
        if device == "mps":
            if self.backend != "torch":
                return f"{self.backend} has no MPS backend in this worker (MPS runs through torch)"
            mps = getattr(torch.backends, "mps", None)
            if mps is None or not mps.is_available():
                return f"MPS is not present on this machine (torch {torch.__version__}: torch.backends.mps.is_available() is False; MPS needs Apple silicon)"
            return None
        if device == "qnn":
            if self.backend != "onnxruntime":
                return f"{self.backend} has no QNN backend (QNN runs through onnxruntime's QNNExecutionProvider)"
            providers = self.extra["onnxruntime"].get_available_providers()
            if "QNNExecutionProvider" not in providers:
                return f"QNN is not present on this machine: onnxruntime {self.extra['onnxruntime'].__version__} has no QNNExecutionProvider (it has {providers}; QNN needs a Snapdragon machine and onnxruntime-qnn)"
            return None
        if self.backend == "vllm":
            if device == "cpu":
                return "vLLM needs a CUDA or ROCm GPU; the plan's device is cpu"
        if self.backend == "openvino" and device != "cpu":
            return f"OpenVINO has no {device} plugin (it drives Intel CPUs, GPUs and NPUs)"
        kind = device_kind(torch)
        if device in ("cuda", "rocm") and kind != device:
            return f"the plan's device is {device} but torch {torch.__version__} sees {'no GPU' if kind == 'cpu' else kind} (torch.cuda.is_available() is {kind != 'cpu'})"
        if self.backend == "onnxruntime" and device in ("cuda", "rocm"):
            providers = self.extra["onnxruntime"].get_available_providers()
            if not any(p in providers for p in ORT_PROVIDERS[device]):
                return f"onnxruntime {self.extra['onnxruntime'].__version__} has no {' or '.join(ORT_PROVIDERS[device])} (it has {providers})"
        return None

    def stack_facts(self):
        from torch_common import torch_facts

        kind = self.device if self.device in ("cuda", "rocm") else "cpu"
        facts = torch_facts(self.torch, kind)
        facts.update({"transformers_version": self.transformers.__version__, "models_backend": self.backend, "models_device": self.device})
        if self.backend == "onnxruntime":
            facts["onnxruntime_version"] = self.extra["onnxruntime"].__version__
        elif self.backend == "openvino":
            facts["openvino_version"] = self.extra["openvino"].get_version()
        elif self.backend == "vllm":
            facts["vllm_version"] = self.extra["vllm"].__version__
        return facts

    # ---- make ----

    def find_cell(self, benchmark, parameters):
        if self.plan is None:
            raise RuntimeError("describe was not called (the plan is read there)")
        for cell in self.plan["cells"]:
            spec = self.plan["models"][cell["model"]]
            if zoo.cell_id(cell, spec) == (benchmark, parameters):
                return cell, spec
        raise ValueError(f"the plan offers no {benchmark}/{parameters}")

    def make(self, benchmark, parameters):
        cell, spec = self.find_cell(benchmark, parameters)
        if self.backend == "torch":
            return self.make_torch(cell, spec)
        if self.backend in ("onnxruntime", "openvino"):
            return self.make_exported(cell, spec)
        return self.make_vllm(cell, spec)

    def torch_device(self):
        return {"cpu": "cpu", "cuda": "cuda", "rocm": "cuda", "mps": "mps"}[self.device]

    def release(self):
        """Drops the kept model, so the next cell's memory holds only its own."""
        self.loaded = None
        gc.collect()
        if self.torch is not None and self.device in ("cuda", "rocm"):
            self.torch.cuda.empty_cache()

    def torch_model(self, name, spec, precision):
        """(model in ``precision`` on the device, params, origin, quantized facts); the
        last one is kept for the next cell of the same model and precision."""
        key = (name, precision)
        if self.loaded is not None and self.loaded[0] == key:
            return self.loaded[1:]
        self.release()
        model, origin = zoo.build_model(self.torch, self.transformers, spec)
        params = zoo.count_params(model)
        extra = {}
        if precision == "int8":
            model, extra = quantize_int8(self.torch, model, params)
        else:
            model = model.to(getattr(self.torch, TORCH_DTYPES[precision]))
        model = model.to(self.torch_device())
        self.loaded = (key, model, params, origin, extra)
        return self.loaded[1:]

    def torch_precision_reason(self, precision):
        torch, device = self.torch, self.device
        if precision == "int8":
            if device != "cpu":
                return f"int8 here is torch's dynamic quantization (torch.ao.quantization.quantize_dynamic), which runs on the CPU only, not on {device}"
            engines = [e for e in torch.backends.quantized.supported_engines if e != "none"]
            if not engines:
                return f"torch {torch.__version__} has no quantized engine on this CPU (torch.backends.quantized.supported_engines is empty)"
        if precision == "bf16" and device in ("cuda", "rocm") and not torch.cuda.is_bf16_supported():
            return f"bf16 is not supported on {torch.cuda.get_device_name(0)} (torch.cuda.is_bf16_supported() is False)"
        return None

    def make_torch(self, cell, spec):
        reason = self.torch_precision_reason(cell["precision"])
        if reason:
            raise Skip(reason)
        serve_reason(spec, cell)
        model, params, origin, extra = self.torch_model(cell["model"], spec, cell["precision"])
        kind = {"decode": TorchDecode, "serve": TorchServe}.get(cell["phase"], TorchForward)
        bench = kind(self, cell, spec, model, params, origin, extra)
        try:
            bench.trial()
        except (RuntimeError, NotImplementedError) as error:
            # An operator without a kernel for this dtype on this device (CPU fp16 in some
            # torch builds): the dtype is unsupported here, which is a reasoned skip.
            text = str(error)
            if "not implemented for" in text or "NotImplemented" in type(error).__name__ or "Could not run" in text:
                self.release()
                raise Skip(f"{cell['precision']} on {self.device}: torch {self.torch.__version__} lacks an operator: {text.splitlines()[0]}") from None
            raise
        return bench

    def make_exported(self, cell, spec):
        if cell["phase"] == "serve" and self.backend == "openvino":
            raise Skip("openvino has no request loop in this sweep (serve cells run on torch, onnxruntime and vllm)")
        serve_reason(spec, cell)
        if cell["phase"] == "decode" and spec["task"] != "decoder":
            raise Skip(
                f"{self.backend}: this worker exports KV-cached decode graphs for decoder-only models; "
                f"{spec['arch']}'s encoder-decoder decode (cross-attention cache) is measured on torch"
            )
        reason = exported_precision_reason(self, cell["precision"])
        if reason:
            raise Skip(reason)
        graphs, params, origin, reference, inputs = self.export(cell, spec)
        runner = OrtRunner if self.backend == "onnxruntime" else OvRunner
        runners = {phase: runner(self, path, cell["precision"]) for phase, path in graphs.items()}
        kind = {"decode": ExportedDecode, "serve": ExportedServe}.get(cell["phase"], ExportedForward)
        return kind(self, cell, spec, runners, params, origin, reference, inputs)

    def export(self, cell, spec):
        """The cell's ONNX graphs by phase (``forward`` or ``prefill``, and ``step`` for
        decode: one new token against the past keys and values), each exported once per
        model and dtype with dynamic batch and sequence axes; torch's fp32 reference
        outputs of the first graph on the cell's inputs; those inputs. The torch model is
        dropped afterwards: the cell's memory is the runtime's."""
        torch = self.torch
        export_precision = cell["precision"] if (self.backend == "onnxruntime" and cell["precision"] in ("fp16", "bf16")) else "fp32"
        model, params, origin, _ = self.torch_model(cell["model"], spec, "fp32")
        # Eager attention for the trace: the TorchScript exporter cannot convert SDPA with
        # grouped-query heads (Llama, Mixtral); eager repeats the KV heads explicitly. The
        # model is released below, so the torch cells never run with it.
        if hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation("eager")
        inputs = zoo.make_inputs(torch, model.config, spec["task"], cell["batch"], cell.get("seq"))
        generating = cell["phase"] in ("decode", "serve")
        first = "prefill" if generating else cell["phase"]
        wrapper = ExportWrapper(model, spec["task"], first).eval()
        with torch.inference_mode():
            outputs = wrapper(*inputs.values())
        reference = [t.float().numpy() for t in outputs]
        phases = [first] + (["step"] if generating else [])
        missing = [phase for phase in phases if (cell["model"], phase, export_precision) not in self.exports]
        if missing:
            target = model if export_precision == "fp32" else model.to(getattr(torch, TORCH_DTYPES[export_precision]))
            examples = {first: inputs}
            if "step" in phases:
                # The step graph is traced on one token against the prompt's cache.
                token = outputs[0][:, -1].argmax(-1, keepdim=True)
                examples["step"] = {"input_ids": token, **dict(zip(past_names(len(outputs) // 2), outputs[1:], strict=True))}
            for phase in missing:
                self.export_graph(cell, spec, target, phase, cast_floats(torch, examples[phase], export_precision), export_precision, len(reference))
        graphs = {"first" if phase == first else phase: self.exports[(cell["model"], phase, export_precision)] for phase in phases}
        if self.backend == "onnxruntime" and cell["precision"] == "int8":
            graphs = {phase: self.ort_int8(path) for phase, path in graphs.items()}
        self.release()
        # numpy has no bfloat16: such a feed stays float32 (ONNX Runtime then refuses it by name).
        feeds = {k: v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy() for k, v in cast_floats(torch, inputs, export_precision).items()}
        return graphs, params, origin, reference, feeds

    def export_graph(self, cell, spec, model, phase, example, export_precision, output_count):
        torch = self.torch
        if self.export_dir is None:
            self.export_dir = tempfile.mkdtemp(prefix="stackbench-models-")
        key = (cell["model"], phase, export_precision)
        path = os.path.join(self.export_dir, "-".join(key) + ".onnx")
        wrapper = ExportWrapper(model, spec["task"], phase).eval()
        try:
            export_onnx(torch, wrapper, example, wrapper.output_names(output_count), path)
        except torch.onnx.errors.UnsupportedOperatorError as error:
            # Mixtral's expert routing (aten::histc) has no ONNX conversion: the model
            # cannot reach this backend through ONNX, which is a reasoned skip.
            self.release()
            raise Skip(f"{self.backend}: torch {torch.__version__}'s ONNX exporter cannot convert {cell['model']}: {error}") from None
        self.exports[key] = path

    def ort_int8(self, path):
        """ONNX Runtime's dynamic quantization of the fp32 graph: int8 weights, activations
        quantized per call (``onnxruntime.quantization.quantize_dynamic``)."""
        quantized = path.replace(".onnx", "-int8.onnx")
        if not os.path.exists(quantized):
            import logging

            from onnxruntime.quantization import QuantType, quantize_dynamic

            # It advises shape pre-processing on the root logger for every graph: noise in
            # the stderr tail the runner keeps.
            root = logging.getLogger()
            level = root.level
            root.setLevel(logging.ERROR)
            try:
                # Without VNNI, ONNX Runtime's int8 kernels multiply u8 by s8 in 16-bit pairs
                # that saturate (AVX2's vpmaddubsw); its documentation's remedy is 7-bit
                # weights (reduce_range), which keeps this CPU's result beside torch's.
                quantize_dynamic(
                    path, quantized, weight_type=QuantType.QInt8, reduce_range=not cpu_has_vnni()
                )
            finally:
                root.setLevel(level)
        return quantized

    def make_vllm(self, cell, spec):
        serve_reason(spec, cell)
        if spec["task"] != "decoder":
            raise Skip(f"the vllm backend of this worker serves decoder LMs; {spec['arch']} ({spec['task']}) {cell['phase']} is not offered")
        if cell["precision"] == "int8":
            raise Skip("int8 on vLLM needs a pre-quantized checkpoint (GPTQ, AWQ, W8A8); random weights from a config have none")
        return VllmServe(self, cell, spec) if cell["phase"] == "serve" else VllmCell(self, cell, spec)


def serve_reason(spec, cell):
    """A serve cell of a model that is not decoder-only is a reasoned skip (the Rust side
    refuses it first; a hand-written plan may still hold one)."""
    if cell["phase"] == "serve" and spec["task"] != "decoder":
        raise Skip(f"the serve loop drives decoder-only LMs; {cell['model']} is {spec['task']} (its generation is timed by its decode cell)")


def quantize_int8(torch, model, params):
    """torch's dynamic int8 quantization of every linear layer (weights int8, activations
    quantized per call). GPT-2 keeps its projections in ``Conv1D`` (a transposed linear),
    which quantize_dynamic does not know: they are turned into ``nn.Linear`` first."""
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if type(child).__name__ == "Conv1D" and child.weight.dim() == 2:
                nx, nf = child.weight.shape
                linear = torch.nn.Linear(nx, nf)
                with torch.no_grad():
                    linear.weight.copy_(child.weight.t())
                    linear.bias.copy_(child.bias)
                setattr(parent, child_name, linear)
    import warnings

    with warnings.catch_warnings():
        # Deprecated in favour of torchao (not in the stack) but still the CPU int8 path of
        # this torch; the warning would flood the stderr tail the runner keeps.
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    dynamic_linear = torch.ao.nn.quantized.dynamic.Linear
    int8_weights = sum(m.in_features * m.out_features for m in quantized.modules() if isinstance(m, dynamic_linear))
    if int8_weights == 0:
        raise Skip("int8: torch.ao.quantization.quantize_dynamic found no nn.Linear layer to quantize in this model")
    return quantized, {"int8_method": "torch.ao.quantization.quantize_dynamic (qint8 weights, nn.Linear)", "int8_weight_fraction": int8_weights / params}


def exported_precision_reason(component, precision):
    """Why ``precision`` cannot run on the ONNX Runtime or OpenVINO backend here, or None."""
    if component.backend == "openvino":
        if precision == "int8":
            return "int8 on OpenVINO needs NNCF weight compression of the graph, which this worker does not do"
        if precision in ("bf16", "fp16"):
            core = ov_core(component)
            capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
            wanted = {"bf16": "BF16", "fp16": "FP16"}[precision]
            if wanted not in capabilities:
                return f"{precision} is unsupported on this CPU by OpenVINO {component.extra['openvino'].get_version()}: its OPTIMIZATION_CAPABILITIES are {list(capabilities)} (no {wanted})"
        return None
    if precision == "int8" and component.device != "cpu":
        return f"int8 here is onnxruntime's dynamic quantization (MatMulInteger, DynamicQuantizeLinear), whose kernels are CPU ones, not {component.device}"
    return None


def ov_core(component):
    if getattr(component, "core", None) is None:
        component.core = component.extra["openvino"].Core()
    return component.core


def past_names(layers, prefix="past"):
    return [f"{prefix}.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]


class ExportWrapper:
    """The module exported for a task and phase: positional tensors in, tensors out. A
    decoder's ``prefill`` returns the last position's logits and every layer's keys and
    values; its ``step`` takes one token and those keys and values and returns the same."""

    def __new__(cls, model, task, phase):
        import torch
        import transformers

        def flat_cache(out):
            flat = [out.logits[:, -1:]]
            for layer in zoo.output_cache(out).layers:
                flat += [layer.keys, layer.values]
            return tuple(flat)

        class Wrapper(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model
                self.last_only = {"logits_to_keep": 1} if zoo.keeps_last_logits(model) else {}

            def forward(self, *args):
                if task == "decoder" and phase == "step":
                    pairs = [(args[1 + 2 * i], args[2 + 2 * i]) for i in range((len(args) - 1) // 2)]
                    cache = transformers.DynamicCache(ddp_cache_data=pairs, config=self.model.config)
                    kwargs = {zoo.cache_kwarg(self.model): cache}
                    return flat_cache(self.model(input_ids=args[0], use_cache=True, **kwargs, **self.last_only))
                if task == "decoder":
                    return flat_cache(self.model(input_ids=args[0], use_cache=True, **self.last_only))
                if task == "vision":
                    return (self.model(pixel_values=args[0]).last_hidden_state,)
                if task == "encoder":
                    return (self.model(input_ids=args[0]).last_hidden_state,)
                if task == "speech":
                    return (self.model.get_encoder()(input_features=args[0]).last_hidden_state,)
                return (self.model.get_encoder()(input_ids=args[0]).last_hidden_state,)

            def output_names(self, count):
                if task != "decoder":
                    return ["hidden"]
                return ["logits"] + past_names((count - 1) // 2, "present")

        return Wrapper()


def export_onnx(torch, wrapper, inputs, output_names, path):
    """TorchScript-based export (``dynamo=False``: the dynamo exporter needs onnxscript,
    which the stack does not install), batch and sequence axes dynamic."""
    import warnings

    axes = {}
    for name in inputs:
        if name.startswith("past"):
            axes[name] = {0: "batch", 2: "past"}
        elif name == "input_ids" and "past.0.key" not in inputs:
            axes[name] = {0: "batch", 1: "seq"}
        else:
            axes[name] = {0: "batch"}
    for name in output_names:
        axes[name] = {0: "batch", 2: "total"} if name.startswith("present") else {0: "batch", 1: "seq"} if name == "hidden" else {0: "batch"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            tuple(inputs.values()),
            path,
            dynamo=False,
            input_names=list(inputs),
            output_names=output_names,
            dynamic_axes=axes,
            opset_version=OPSET,
        )
    # The export restores the wrapper's training flag, which is True for a fresh module
    # and reaches the model inside: put it back in eval mode (dropout off).
    wrapper.eval()


def cast_floats(torch, inputs, precision):
    """Float inputs (pixels, mel frames) in the dtype a half-precision graph expects."""
    if precision not in ("fp16", "bf16"):
        return inputs
    dtype = getattr(torch, TORCH_DTYPES[precision])
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}


def relative_error(np, got, want):
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return None
    scale = float(np.abs(want).max()) or 1.0
    return float(np.abs(got - want).max()) / scale


class Cell(Benchmark):
    """What every backend's cell shares: the plan's facts, the memory and energy windows
    around the timed calls, and the metrics."""

    def __init__(self, component, cell, spec, params, origin):
        self.component = component
        self.torch = component.torch
        self.cell, self.spec = cell, spec
        self.batch, self.precision, self.phase = cell["batch"], cell["precision"], cell["phase"]
        self.task = spec["task"]
        self.new_tokens = component.new_tokens
        self.params, self.origin = params, origin
        self.unit = zoo.work_unit(self.task, self.phase)
        self.elements = zoo.elements_per_call(cell, self.task, self.new_tokens)
        self.window_calls = 0
        self.memory, self.memory_method = self.memory_probe()
        self.energy = EnergyMeter(component.device, self.torch)

    def memory_probe(self):
        return memory_sampler(self.component.device, self.torch)

    def effective_seq(self, config):
        """The sequence the model sees: the prompt, ViT's patches + [CLS], Whisper's
        encoder positions."""
        if self.task == "vision":
            return (config.image_size // config.patch_size) ** 2 + 1
        if self.task == "speech":
            return config.max_source_positions
        return self.cell["seq"]

    def facts(self):
        return {
            "model": self.cell["model"],
            "arch": self.spec["arch"],
            "task": self.task,
            "weights": self.origin,
            "params": self.params,
            "params_expected": self.spec.get("params_expected"),
            "new_tokens": self.new_tokens if self.phase == "decode" else None,
            "work_unit": self.unit,
        }

    def check_params(self):
        expected = self.spec.get("params_expected")
        if expected is not None and expected != self.params:
            raise Mismatch(
                f"{self.cell['model']}: the built model has {self.params} parameters, the plan's params_expected "
                f"(the catalogue's formula) is {expected}"
            )

    def begin_run(self, iters):
        self.window_calls += iters
        self.energy.start()
        self.memory.start()

    def end_run(self):
        self.memory.stop()
        self.energy.stop()

    def metrics(self, latencies_ns):
        metrics = call_latency_metrics(self.phase, latencies_ns)
        if latencies_ns:
            metrics[f"{self.unit}_per_s"] = self.elements * len(latencies_ns) / (sum(latencies_ns) / 1e9)
        peak, average = self.memory.summary()
        metrics.update(
            {
                "batch": self.batch,
                "seq": self.seq,
                "precision": self.precision,
                "phase": self.phase,
                "params": self.params,
                "flops_per_token": self.spec.get("flops_per_token"),
                "memory_peak_bytes": peak,
                "memory_avg_bytes": average,
                "memory_method": self.memory_method,
            }
        )
        if hasattr(self.memory, "peak_source"):
            metrics["memory_peak_source"] = self.memory.peak_source
        metrics.update(self.energy.metrics(self.window_calls * self.elements, self.unit[:-1]))
        return metrics


class DecodeTiming:
    """TTFT marked inside each timed decode call, TPOT from it and the call's E2E (vLLM's
    definitions); mixed into a cell whose ``decode(on_first_token)`` does the work."""

    # ``step`` marks its own start and its first token.
    marks_per_step = 2

    def step(self):
        marks = [self.clock.mark()]
        self.decode(on_first_token=lambda: marks.append(self.clock.mark()))
        self.sync()
        self.first_marks.append(marks)

    def sync(self):
        pass

    def metrics(self, latencies_ns):
        self.clock.synchronize()
        ttft = [self.clock.elapsed_ns(start, first) for start, first in getattr(self, "first_marks", [])]
        self.ttft_ns = (getattr(self, "ttft_ns", []) + ttft)[-20000:]
        self.first_marks = []
        metrics = super().metrics(latencies_ns)
        metrics.update(latency_metrics(self.ttft_ns, prefix="ttft"))
        metrics.update(tpot_metrics(latencies_ns, self.ttft_ns, self.new_tokens))
        metrics["new_tokens"] = self.new_tokens
        return metrics


class TorchCell(Cell):
    def __init__(self, component, cell, spec, model, params, origin, extra):
        super().__init__(component, cell, spec, params, origin)
        from torch_common import clock

        self.model, self.extra = model, extra
        self.config = model.config
        self.seq = self.effective_seq(self.config)
        self.clock = clock(self.torch, "cpu" if component.device == "mps" else component.device)
        device = component.torch_device()
        self.inputs = {k: v.to(device) for k, v in zoo.make_inputs(self.torch, self.config, self.task, self.batch, cell.get("seq")).items()}
        dtype = getattr(self.torch, TORCH_DTYPES[self.precision])
        for key in ("pixel_values", "input_features"):
            if key in self.inputs:
                self.inputs[key] = self.inputs[key].to(dtype)
        self.sync = (lambda: self.torch.mps.synchronize()) if component.device == "mps" else (lambda: None)

    def facts(self):
        facts = super().facts()
        facts.update(self.extra)
        facts["torch_dtype"] = TORCH_DTYPES[self.precision]
        return facts

    def trial(self):
        """One call before anything is timed: an operator missing for this dtype raises here."""
        self.call()

    def step(self):
        self.call()
        self.sync()


class TorchForward(TorchCell):
    """Prefill of a decoder (cache filled, last position's logits) or a forward pass."""

    def __init__(self, *args):
        super().__init__(*args)
        if self.task == "decoder":
            self.decoder = zoo.GreedyDecoder(self.torch, self.model, self.task, self.inputs, 1, 0)

    def call(self):
        with self.torch.inference_mode():
            if self.task == "decoder":
                return self.decoder.first()
            if self.task in ("encoder", "vision"):
                return self.model(**self.inputs).last_hidden_state
            return self.model.get_encoder()(**self.inputs).last_hidden_state

    def verify(self):
        self.check_params()
        out = self.call()
        if self.task == "decoder":
            logits, cache, _ = out
            want = (self.batch, self.config.vocab_size)
            check_tensor(self.torch, "prefill logits of the last position", logits, want)
            cached = cache.get_seq_length()
            if cached != self.seq:
                raise Mismatch(f"prefill left a KV cache of {cached} positions, expected {self.seq}")
        else:
            want = (self.batch, self.seq, self.config.hidden_size if hasattr(self.config, "hidden_size") else self.config.d_model)
            check_tensor(self.torch, f"{self.task} output", out, want)


class TorchDecode(DecodeTiming, TorchCell):
    """Prefill plus greedy cached steps to ``new_tokens``; TTFT marked inside each call."""

    def __init__(self, *args):
        super().__init__(*args)
        self.decoder = zoo.GreedyDecoder(self.torch, self.model, self.task, self.inputs, self.new_tokens, zoo.decoder_start(self.config))
        self.first_marks = []

    def call(self):
        return self.decoder.decode()

    def decode(self, on_first_token=None):
        return self.decoder.decode(on_first_token=on_first_token)

    def verify(self):
        self.check_params()
        tokens = self.call()
        if tuple(tokens.shape) != (self.batch, self.new_tokens):
            raise Mismatch(f"decode produced tokens of shape {tuple(tokens.shape)}, expected {(self.batch, self.new_tokens)}")
        vocab = self.config.vocab_size
        if int(tokens.min()) < 0 or int(tokens.max()) >= vocab:
            raise Mismatch(f"decode produced token ids outside the vocabulary of {vocab}")
        # Cached against uncached on a short prompt, so the recompute stays cheap.
        short = dict(self.inputs)
        if "input_ids" in short:
            short["input_ids"] = short["input_ids"][:, :CHECK_PROMPT]
        check = zoo.GreedyDecoder(self.torch, self.model, self.task, short, min(CHECK_TOKENS, self.new_tokens), zoo.decoder_start(self.config))
        cached = check.decode()
        problem = zoo.compare_greedy(self.torch, cached, check.uncached_logits(cached), NEAR_TIE[self.precision])
        if problem:
            raise Mismatch(f"KV-cached greedy decode differs from an uncached recompute: {problem}")


def call_latency_metrics(phase, latencies_ns):
    """A call's latency percentiles as ``latency_*`` and ``e2e_*``; a prefill call's also
    as ``ttft_*``: the prefill is the whole of a request's time to its first token (the
    forward over the prompt that yields the first token's logits), so an SLO on TTFT judges
    prefill cells too (``stackbench recommend --slo ttft_p99<=200ms`` found none before)."""
    metrics = latency_metrics(latencies_ns)
    metrics.update(latency_metrics(latencies_ns, prefix="e2e"))
    if phase == "prefill":
        metrics.update(latency_metrics(latencies_ns, prefix="ttft"))
        metrics["ttft_method"] = "the prefill call's latency (prompt forward to the first token's logits)"
    return metrics


def tpot_metrics(e2e_ns, ttft_ns, new_tokens):
    """TPOT = (E2E − TTFT)/(N − 1) per call, pairing the newest calls' E2E and TTFT."""
    pairs = min(len(e2e_ns), len(ttft_ns))
    if not pairs or new_tokens < 2:
        return {}
    recent = zip(e2e_ns[-pairs:], ttft_ns[-pairs:], strict=True)
    return latency_metrics([(e2e - first) / (new_tokens - 1) for e2e, first in recent], prefix="tpot")


def check_tensor(torch, what, tensor, shape):
    if tuple(tensor.shape) != tuple(shape):
        raise Mismatch(f"{what}: shape {tuple(tensor.shape)}, expected {tuple(shape)}")
    if not bool(torch.isfinite(tensor.float()).all()):
        raise Mismatch(f"{what}: non-finite values")


class OrtRunner:
    """One ONNX Runtime session on the plan's device; ``run`` returns host arrays (so on a
    GPU provider a call includes its copies and ends when the device is done)."""

    def __init__(self, component, path, precision):
        from stackbench_worker import captured_stderr

        ort = component.extra["onnxruntime"]
        options = ort.SessionOptions()
        threads = os.environ.get("STACKBENCH_TORCH_THREADS", "").strip()
        if threads:
            options.intra_op_num_threads = int(threads)
        wanted = [p for p in ORT_PROVIDERS[component.device] if p in ort.get_available_providers()]
        providers = wanted[:1] + (["CPUExecutionProvider"] if wanted[:1] != ["CPUExecutionProvider"] else [])
        try:
            with captured_stderr() as log:
                self.session = ort.InferenceSession(path, sess_options=options, providers=providers)
        except Exception as error:  # noqa: BLE001 -- classified below
            text = str(error)
            if "NOT_IMPLEMENTED" in text or "Could not find an implementation" in text:
                raise Skip(f"{precision} on onnxruntime {ort.__version__} {providers[0]}: {text.strip().splitlines()[0]}") from None
            raise
        # ORT falls back to the CPU when the requested provider cannot start, and only logs it.
        if self.session.get_providers()[:1] != providers[:1]:
            raise RuntimeError(f"onnxruntime did not start {providers[0]}: the session's providers are {self.session.get_providers()}; it logged: {log.text.strip()[-500:]}")
        self.label = f"onnxruntime {providers[0]}"
        self.facts = {"execution_provider": providers[0], "onnx_model": os.path.basename(path)}

    def run(self, feeds):
        return self.session.run(None, feeds)


class OvRunner:
    """One OpenVINO compiled model and infer request; ``infer`` is synchronous. Outputs
    are copied out of the request's buffers: a decode step feeds them back as inputs."""

    def __init__(self, component, path, precision):
        core = ov_core(component)
        hint = {"fp32": "f32", "bf16": "bf16", "fp16": "f16"}[precision]
        device = OPENVINO_DEVICES[component.device]
        started = time.perf_counter_ns()
        self.compiled = core.compile_model(core.read_model(path), device, {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": hint})
        compile_ns = time.perf_counter_ns() - started
        self.request = self.compiled.create_infer_request()
        self.outputs = len(self.compiled.outputs)
        precision_used = str(self.compiled.get_property("INFERENCE_PRECISION_HINT"))
        self.label = f"OpenVINO {device} ({precision_used})"
        self.facts = {"openvino_device": device, "compile_time_ns": compile_ns, "inference_precision": precision_used}

    def run(self, feeds):
        self.request.infer(feeds)
        return [self.request.get_output_tensor(i).data.copy() for i in range(self.outputs)]


class ExportedCell(Cell):
    """A cell on exported ONNX graphs (``runners`` by phase, ``first`` the prefill or
    forward one): its first graph's outputs are compared with torch's fp32 ones."""

    def __init__(self, component, cell, spec, runners, params, origin, reference, feeds):
        super().__init__(component, cell, spec, params, origin)
        self.np = component.extra["numpy"]
        self.runners, self.reference, self.feeds = runners, reference, feeds
        self.first = runners["first"]
        # The hidden states' sequence axis: the prompt, ViT's patches + [CLS], Whisper's
        # encoder positions.
        self.seq = cell["seq"] if self.task == "decoder" else reference[0].shape[1]

    def memory_probe(self):
        if self.component.device in ("cuda", "rocm"):
            return engine_memory_sampler(self.component.torch)
        return super().memory_probe()

    def facts(self):
        facts = super().facts()
        facts.update(self.first.facts)
        facts.update({"onnx_opset": OPSET, "tolerance": TOLERANCE[self.precision]})
        return facts

    def compare(self, outputs, label):
        self.check_params()
        if len(outputs) != len(self.reference):
            raise Mismatch(f"{label}: {len(outputs)} outputs, torch has {len(self.reference)}")
        for index, (got, want) in enumerate(zip(outputs, self.reference, strict=True)):
            got = self.np.asarray(got, dtype=self.np.float32)
            if not self.np.isfinite(got).all():
                raise Mismatch(f"{label}: output {index} has non-finite values")
            error = relative_error(self.np, got, want)
            if error is None:
                raise Mismatch(f"{label}: output {index} has shape {got.shape}, torch's {want.shape}")
            if error > TOLERANCE[self.precision]:
                raise Mismatch(f"{label}: output {index} differs from torch's by {error:.3g} (max relative), above {TOLERANCE[self.precision]}")


class ExportedForward(ExportedCell):
    def verify(self):
        self.compare(self.first.run(self.feeds), self.first.label)

    def step(self):
        self.first.run(self.feeds)


class ExportedDecode(DecodeTiming, ExportedCell):
    """Greedy decode on two graphs: prefill, then one step per new token with the keys and
    values passed back in. They travel through host arrays between steps, as in a plain
    ONNX Runtime or OpenVINO loop (no IO binding or stateful model)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.step_graph = self.runners["step"]
        self.layers = (len(self.reference) - 1) // 2
        self.first_marks = []

    def facts(self):
        facts = super().facts()
        facts["kv_cache"] = "host arrays between a prefill graph and a step graph"
        return facts

    def decode(self, on_first_token=None, feeds=None, new_tokens=None):
        np = self.np
        outputs = self.first.run(self.feeds if feeds is None else feeds)
        token = outputs[0][:, -1].argmax(-1)[:, None].astype(np.int64)
        if on_first_token is not None:
            on_first_token()
        tokens = [token]
        names = past_names(self.layers)
        for _ in range(1, self.new_tokens if new_tokens is None else new_tokens):
            outputs = self.step_graph.run({"input_ids": token, **dict(zip(names, outputs[1:], strict=True))})
            token = outputs[0][:, -1].argmax(-1)[:, None].astype(np.int64)
            tokens.append(token)
        return np.concatenate(tokens, axis=1)

    def verify(self):
        np = self.np
        self.compare(self.first.run(self.feeds), self.first.label)
        tokens = self.decode()
        vocab = self.reference[0].shape[-1]
        if tokens.shape != (self.batch, self.new_tokens) or tokens.min() < 0 or tokens.max() >= vocab:
            raise Mismatch(f"{self.first.label}: decode gave tokens of shape {tokens.shape} in [{tokens.min()}, {tokens.max()}], expected {(self.batch, self.new_tokens)} in [0, {vocab})")
        # Cached against uncached on this runtime: the step graph's greedy tokens against
        # the prefill graph run over the whole sequence for each new token.
        prompt = self.feeds["input_ids"][:, :CHECK_PROMPT]
        count = min(CHECK_TOKENS, self.new_tokens)
        cached = self.decode(feeds={"input_ids": prompt}, new_tokens=count)
        sequence = prompt
        for position in range(count):
            logits = self.first.run({"input_ids": sequence})[0][:, -1].astype(np.float64)
            want = logits.argmax(-1)
            scale = float(np.abs(logits).max()) or 1.0
            for row in np.nonzero(want != cached[:, position])[0]:
                margin = (logits[row, want[row]] - logits[row, cached[row, position]]) / scale
                if margin > NEAR_TIE[self.precision]:
                    raise Mismatch(
                        f"{self.first.label}: KV-cached decode chose token {cached[row, position]} at new token {position} of request {row}, "
                        f"an uncached recompute {want[row]} (logit margin {margin:.3g}, above the near-tie bound {NEAR_TIE[self.precision]})"
                    )
            # Teacher-forced with the cached tokens, so later positions stay comparable.
            sequence = np.concatenate([sequence, cached[:, position : position + 1]], axis=1)


def engine_memory_sampler(torch):
    """Device memory of a runtime outside torch's allocator (ONNX Runtime's CUDA provider,
    vLLM's engine core): NVML per process, else the drop in free device memory."""
    from engine_memory import FREE_METHOD, EngineMemory

    memory = EngineMemory(torch)
    sampler = Sampler(lambda: memory.sample()[0])
    sampler.start()
    sampler.stop()
    return sampler, ("cuda_free_memory_drop" if memory.method == FREE_METHOD else "nvml_process")


class VllmCell(Cell):
    """vLLM's engine on a config with dummy (random) weights, driven through its step loop
    as in scripts/components/vllm.py; prefill is a request of one output token."""

    def __init__(self, component, cell, spec):
        self.seq = cell["seq"]
        self.engine_key = (cell["model"], cell["precision"])
        params = zoo.count_params_meta(component.torch, component.transformers, spec)
        super().__init__(component, cell, spec, params, "vLLM load_format=dummy (random weights)")
        self.llm = vllm_engine(component, cell, spec)
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        out_len = 1 if self.phase == "prefill" else self.new_tokens
        self.out_len = out_len
        vocab = spec["config"].get("vocab_size") if spec.get("config") else self.llm.llm_engine.model_config.get_vocab_size()
        generator = self.torch.Generator().manual_seed(1)
        ids = self.torch.randint(0, vocab, (self.batch, self.seq), generator=generator).tolist()
        self.prompts = [{"prompt_token_ids": row} for row in ids]
        common = {"max_tokens": out_len, "min_tokens": out_len, "ignore_eos": True, "temperature": 0.0, "detokenize": False}
        self.params_final = SamplingParams(**common)
        self.params_stream = SamplingParams(**common, output_kind=RequestOutputKind.DELTA)
        self.requests = []
        self.next_request = 0
        self.short = 0

    def memory_probe(self):
        return engine_memory_sampler(self.component.torch)

    def verify(self):
        self.check_params()
        from request_times import check_repeatable_greedy

        first = self.llm.generate(self.prompts, self.params_final, use_tqdm=False)
        second = self.llm.generate(self.prompts, self.params_final, use_tqdm=False)
        check_repeatable_greedy(first, second, self.out_len)

    def step(self):
        from request_times import RequestTimes

        engine = self.llm.llm_engine
        times = RequestTimes(time.perf_counter_ns())
        for prompt in self.prompts:
            engine.add_request(f"stackbench-models-{self.next_request}", prompt, self.params_stream)
            self.next_request += 1
        while engine.has_unfinished_requests():
            times.observe(engine.step(), time.perf_counter_ns())
        rows = times.per_request()
        self.short += sum(1 for row in rows if row[3] != self.out_len)
        self.requests = (self.requests + rows)[-20000:]

    def metrics(self, latencies_ns):
        if self.short:
            raise Mismatch(f"{self.short} request(s) produced fewer than {self.out_len} tokens")
        metrics = super().metrics(latencies_ns)
        if self.phase == "decode":
            from request_times import request_metrics

            metrics.update({k: v for k, v in request_metrics(self.requests).items() if k.startswith(("ttft", "tpot"))})
            metrics["new_tokens"] = self.new_tokens
        return metrics


def vllm_engine(component, cell, spec):
    """One engine per model and precision: its config written to a folder, weights
    random (``load_format="dummy"``), no tokenizer (prompts are token ids)."""
    key = (cell["model"], cell["precision"])
    if key not in component.engines:
        for other in list(component.engines):
            del component.engines[other]
        component.release()
        from vllm import LLM

        folder = spec.get("local_dir")
        if not folder:
            if component.export_dir is None:
                component.export_dir = tempfile.mkdtemp(prefix="stackbench-models-")
            folder = os.path.join(component.export_dir, cell["model"])
            zoo.hf_config(component.transformers, spec).save_pretrained(folder)
        longest = max(c.get("seq") or 0 for c in component.plan["cells"] if c["model"] == cell["model"])
        utilisation = float(os.environ.get("STACKBENCH_VLLM_GPU_MEMORY_UTILIZATION", "0.85"))
        component.engines[key] = LLM(
            model=folder,
            load_format="dummy",
            skip_tokenizer_init=True,
            dtype={"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}[cell["precision"]],
            seed=zoo.SEED,
            max_model_len=longest + component.new_tokens + 16,
            gpu_memory_utilization=utilisation,
        )
    return component.engines[key]


class ServeLoad:
    """A serve cell's load runs and its replayed timed calls (the module docstring has the
    design); mixed in before a backend's cell class, whose ``serve_requests(arrivals_ns)``
    runs one load run and returns (requests, elapsed ns) from lib/serving.py."""

    scheduler = ""
    # A short load run in ``verify``: every request must get exactly N tokens.
    VERIFY_REQUESTS = 4

    def init_serve(self):
        self.rate = float(self.cell["rate"])
        self.serve = self.component.plan["serve"]
        self.slos = self.serve["slos"]
        self.clock = serving.ReplayClock()
        self.replay = []
        self.served = []
        self.serve_elapsed_ns = 0
        self.load_runs = 0

    def load_run(self, count):
        arrivals = serving.arrival_times_ns(self.rate, count, self.serve["seed"] + self.load_runs)
        self.load_runs += 1
        requests, elapsed = self.serve_requests(arrivals)
        short = [r for r in requests if r is None or r.tokens != self.new_tokens]
        if short:
            got = sorted({None if r is None else r.tokens for r in short}, key=str)
            raise Mismatch(f"{len(short)} of {count} requests did not get exactly {self.new_tokens} tokens (got {got})")
        return requests, elapsed

    def verify(self):
        self.check_outputs()
        # Cold: its figures are not kept (first calls of each round size, caches).
        self.load_run(min(self.VERIFY_REQUESTS, self.serve["requests"]))

    def step(self):
        if not self.replay:
            requests, elapsed = self.load_run(self.serve["requests"])
            self.served.extend(requests)
            self.serve_elapsed_ns += elapsed
            self.replay = [r.e2e_ns for r in reversed(requests)]
        self.clock.advance(self.replay.pop())

    def metrics(self, latencies_ns):
        metrics = Cell.metrics(self, latencies_ns)
        metrics.update(serving.load_summary(self.served, self.serve_elapsed_ns, self.rate, self.slos))
        metrics.update({"new_tokens": self.new_tokens, "max_concurrent": self.batch, "load_runs": self.load_runs, "requests_per_run": self.serve["requests"], "scheduler": self.scheduler})
        # A timed window holds whole load runs, not the replayed requests it is credited
        # with: an energy per token from it would be wrong.
        for key in [k for k in metrics if k.startswith("energy_j_per")]:
            del metrics[key]
        metrics["energy_unavailable"] = "serve cells: a timed window holds whole load runs, not the requests replayed in it"
        return metrics

    def facts(self):
        facts = super().facts()
        facts.update({"new_tokens": self.new_tokens, "offered_rps": self.rate, "serve_slos": ",".join(s["text"] for s in self.slos), "scheduler": self.scheduler})
        return facts


ROUNDS = "rounds: each admits the requests that have arrived, up to B, decoded together to N tokens; no mid-flight joins"


class TorchServe(ServeLoad, TorchCell):
    """torch served in scheduler rounds: a round of k requests is one greedy cached decode of
    a batch of k prompts (one GreedyDecoder per k, the inputs' first k rows)."""

    scheduler = ROUNDS

    def __init__(self, *args):
        super().__init__(*args)
        self.init_serve()
        self.decoders = {}
        gpu = self.component.device in ("cuda", "rocm")
        # A server copies the first token to the host before it streams it: TTFT waits
        # for the device there too.
        self.device_sync = self.torch.cuda.synchronize if gpu else self.sync

    def decoder(self, k):
        if k not in self.decoders:
            rows = {key: value[:k] for key, value in self.inputs.items()}
            self.decoders[k] = zoo.GreedyDecoder(self.torch, self.model, self.task, rows, self.new_tokens, zoo.decoder_start(self.config))
        return self.decoders[k]

    def run_batch(self, k, on_first_token):
        def first():
            self.device_sync()
            on_first_token()

        tokens = self.decoder(k).decode(on_first_token=first)
        self.device_sync()
        return int(tokens.shape[1])

    def serve_requests(self, arrivals_ns):
        return serving.serve_in_rounds(arrivals_ns, self.batch, self.run_batch)

    def check_outputs(self):
        self.check_params()

    def trial(self):
        self.run_batch(1, lambda: None)


class ExportedServe(ServeLoad, ExportedDecode):
    """ONNX Runtime served in scheduler rounds: a round of k requests is the prefill graph on
    the first k prompts, then the step graph to N tokens (the decode cell's loop)."""

    scheduler = ROUNDS

    def __init__(self, *args):
        super().__init__(*args)
        self.init_serve()

    def run_batch(self, k, on_first_token):
        tokens = self.decode(on_first_token=on_first_token, feeds={"input_ids": self.feeds["input_ids"][:k]})
        return int(tokens.shape[1])

    def serve_requests(self, arrivals_ns):
        return serving.serve_in_rounds(arrivals_ns, self.batch, self.run_batch)

    def check_outputs(self):
        self.compare(self.first.run(self.feeds), self.first.label)


class VllmServe(ServeLoad, VllmCell):
    """vLLM's engine under load: each request added at its arrival time (at most B in
    flight), the engine stepped until every request is done. Each load run has prompts of
    its own, so vLLM's prefix cache never serves a repeated prompt."""

    scheduler = "vLLM engine (continuous batching), requests added at their arrival, at most B in flight"

    def __init__(self, component, cell, spec):
        super().__init__(component, cell, spec)
        self.init_serve()
        self.vocab = spec["config"].get("vocab_size") if spec.get("config") else self.llm.llm_engine.model_config.get_vocab_size()

    def serve_requests(self, arrivals_ns):
        generator = self.torch.Generator().manual_seed(1000 + self.load_runs)
        ids = self.torch.randint(0, self.vocab, (len(arrivals_ns), self.seq), generator=generator).tolist()
        engine = VllmLoad(self.llm.llm_engine, [{"prompt_token_ids": row} for row in ids], self.params_stream, f"stackbench-serve-{self.load_runs}")
        return serving.serve_on_engine(arrivals_ns, self.batch, engine)

    def check_outputs(self):
        VllmCell.verify(self)


class VllmLoad:
    """vLLM's ``LLMEngine`` as lib/serving.py's engine: outputs are deltas, so each carries
    the tokens new since the last step."""

    def __init__(self, engine, prompts, params, tag):
        self.engine, self.prompts, self.params, self.tag = engine, prompts, params, tag

    def add(self, index):
        self.engine.add_request(f"{self.tag}-{index}", self.prompts[index], self.params)

    def busy(self):
        return self.engine.has_unfinished_requests()

    def step(self):
        advanced = []
        for output in self.engine.step():
            index = int(output.request_id.rsplit("-", 1)[1])
            new = len(output.outputs[0].token_ids) if output.outputs else 0
            advanced.append((index, new, output.finished))
        return advanced


def cleanup(component):
    if component.export_dir and os.path.isdir(component.export_dir):
        shutil.rmtree(component.export_dir, ignore_errors=True)


if __name__ == "__main__":
    import atexit

    component_holder = []

    def make_component():
        component = Models()
        component_holder.append(component)
        atexit.register(cleanup, component)
        return component

    sys.exit(main(make_component))
