"""stackbench worker: attention kernels against a standard materialised attention.

Benchmarks (ids ``components/attention/<benchmark>/<parameters>``, parameters
``b<B>_h<H>_s<S>_d<D>_<dtype>[_causal]``):

* ``sdpa_math``, ``sdpa_efficient``, ``sdpa_flash``, ``sdpa_cudnn``:
  ``torch.nn.functional.scaled_dot_product_attention`` pinned to one backend with
  ``torch.nn.attention.sdpa_kernel``; a backend torch cannot run here is skipped with
  torch's own error message.
* ``sdpa_default``: whatever backend torch's dispatcher picks.
* ``flash_attn``: ``flash_attn.flash_attn_func`` from the flash-attn package (CUDA only).
* ``materialized``: softmax(Q·Kᵀ/√D)·V with the S×S score matrix in memory, the baseline
  whose memory the fused kernels save.

Throughput is 4·B·S²·H·D FLOP per call (halved when causal); every benchmark is checked
against a float64 materialised reference computed in chunks (lib/attention_reference.py); ``peak_memory_bytes`` is measured once per
benchmark in setup (see torch_common.peak_memory for the method on CPU and GPU).
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so `import onnxruntime` finds the real package,
# and import the shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


import warnings

from attention_reference import DEFAULT_BUDGET_BYTES, max_relative_error
from stackbench_worker import Benchmark, Component, Mismatch, Skip, import_module, latency_metrics, main, suite

SDPA_BACKENDS = {
    "sdpa_math": "MATH",
    "sdpa_efficient": "EFFICIENT_ATTENTION",
    "sdpa_flash": "FLASH_ATTENTION",
    "sdpa_cudnn": "CUDNN_ATTENTION",
}
BENCHMARKS = ["materialized", "sdpa_default", *SDPA_BACKENDS, "flash_attn"]
QUICK_CPU = [(2, 8, 512, 64, "f32", False)]
FULL_CPU = [(b, 8, s, 64, d, c) for b in (1, 4) for s in (512, 1024, 2048) for d in ("f32", "bf16") for c in (False, True)]
QUICK_GPU = [(4, 16, 2048, 64, "bf16", False), (4, 16, 4096, 128, "bf16", True)]
FULL_GPU = [(b, 16, s, d, "bf16", c) for b in (1, 8) for s in (1024, 4096, 8192) for d in (64, 128) for c in (False, True)]
TOLERANCE = {"f32": 1e-4, "bf16": 3e-2, "f16": 5e-3}
# What torch raises when no kernel of the pinned SDPA backend accepts the inputs here (the
# CUDA message, and the CPU one): "not supported here", a skip. Any other error from the
# probe (a CUDA error, an out-of-memory) is a failure.
NO_KERNEL_MESSAGES = ("No available kernel", "No viable backend")


def params_id(b, h, s, d, dtype, causal):
    return f"b{b}_h{h}_s{s}_d{d}_{dtype}" + ("_causal" if causal else "")


def parse_params(parameters):
    parts = parameters.split("_")
    causal = parts[-1] == "causal"
    b, h, s, d = (int(p[1:]) for p in parts[:4])
    return b, h, s, d, parts[4], causal


def attention_flops(b, h, s, d, causal):
    flops = 4 * b * s * s * h * d
    return flops // 2 if causal else flops


def materialized_attention(torch, q, k, v, causal):
    scores = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
    if causal:
        s = q.shape[-2]
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


class Attention(Component):
    name = "attention"

    def __init__(self):
        from torch_common import device_kind, import_torch

        self.torch, self.missing = import_torch()
        self.kind = device_kind(self.torch) if self.torch else "cpu"

    def shapes(self):
        gpu = self.kind != "cpu"
        if suite() == "full":
            return FULL_GPU if gpu else FULL_CPU
        return QUICK_GPU if gpu else QUICK_CPU

    def skip_reason(self, benchmark, shape):
        """Why ``benchmark`` cannot run on ``shape`` here, found by trying a tiny call.
        Raises when the probe itself fails (a broken flash-attn install, a CUDA error)."""
        if benchmark in ("materialized", "sdpa_default"):
            return None
        if benchmark == "flash_attn":
            return self.flash_attn_reason(shape)
        return self.sdpa_backend_reason(benchmark, shape)

    def flash_attn_reason(self, shape):
        from torch_common import no_gpu_reason

        _, missing = import_module("flash_attn")
        if missing:
            return missing
        if self.kind != "cuda":
            return no_gpu_reason(self.torch, "flash_attn").replace("CUDA or ROCm", "CUDA")
        if shape[4] == "f32":
            return "flash_attn runs only in f16 and bf16"
        return None

    def sdpa_backend_reason(self, benchmark, shape):
        from torch_common import dtype_of, torch_device

        torch = self.torch
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
        except ImportError as error:
            return f"torch {torch.__version__} has no torch.nn.attention.sdpa_kernel: {error}"
        backend = getattr(SDPBackend, SDPA_BACKENDS[benchmark], None)
        if backend is None:
            return f"torch {torch.__version__} has no SDPBackend.{SDPA_BACKENDS[benchmark]}"
        _, h, _, d, dtype, causal = shape
        q = torch.randn(1, h, 16, d, device=torch_device(self.kind), dtype=dtype_of(torch, dtype))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with sdpa_kernel(backend):
                    torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=causal)
            except RuntimeError as error:
                if not any(message in str(error) for message in NO_KERNEL_MESSAGES):
                    raise
                # torch explains each refusal in a warning; the error itself says only "none".
                why = [first_line(str(w.message)) for w in caught] or [first_line(str(error))]
                return f"SDPA backend {SDPA_BACKENDS[benchmark]} cannot run on {self.kind} for this shape: {'; '.join(why)}"
        return None

    def offered_skip(self, benchmark, shape):
        """The skip to offer for one benchmark in ``describe``. A probe that raised offers
        the benchmark: ``make`` probes again and the error becomes its failure, so one
        broken backend fails its own ids and not the whole component."""
        try:
            return self.skip_reason(benchmark, shape)
        except Exception:  # noqa: BLE001 -- reported by make() as this benchmark's failure
            return None

    def describe(self):
        from torch_common import torch_facts

        shapes = self.shapes() if self.torch else QUICK_CPU
        benchmarks = []
        for benchmark in BENCHMARKS:
            for shape in shapes:
                skip = self.offered_skip(benchmark, shape) if self.torch else None
                benchmarks.append(
                    {
                        "benchmark": benchmark,
                        "parameters": params_id(*shape),
                        "throughput": {"elements": attention_flops(shape[0], shape[1], shape[2], shape[3], shape[5])},
                        "skip": skip,
                    }
                )
        if self.torch is None:
            return {"component": self.name, "available": False, "reason": self.missing, "benchmarks": benchmarks}
        return {
            "component": self.name,
            "available": True,
            "device": self.kind,
            "facts": torch_facts(self.torch, self.kind),
            "benchmarks": benchmarks,
        }

    def make(self, benchmark, parameters):
        if benchmark not in BENCHMARKS:
            raise ValueError(f"attention does not offer {benchmark}")
        shape = parse_params(parameters)
        reason = self.skip_reason(benchmark, shape)
        if reason:
            raise Skip(reason)
        return AttentionBenchmark(self.torch, self.kind, benchmark, shape)


def first_line(text):
    text = text.strip()
    return text.splitlines()[0] if text else "no message"


class AttentionBenchmark(Benchmark):
    def __init__(self, torch, kind, benchmark, shape):
        from torch_common import clock, dtype_of, peak_memory, torch_device

        self.torch = torch
        self.kind = kind
        self.clock = clock(torch, kind)
        b, h, s, d, self.dtype_name, self.causal = shape
        self.flops = attention_flops(b, h, s, d, self.causal)
        generator = torch.Generator(device="cpu").manual_seed(0)
        dtype = dtype_of(torch, self.dtype_name)
        q, k, v = (torch.randn(b, h, s, d, generator=generator) for _ in range(3))
        self.q, self.k, self.v = (t.to(device=torch_device(kind), dtype=dtype) for t in (q, k, v))
        self.call = self.make_call(benchmark)
        self.peak_bytes, self.peak_method = peak_memory(torch, kind, self.call)

    def make_call(self, benchmark):
        torch = self.torch
        q, k, v, causal = self.q, self.k, self.v, self.causal
        sdpa = torch.nn.functional.scaled_dot_product_attention
        if benchmark == "materialized":
            return lambda: materialized_attention(torch, q, k, v, causal)
        if benchmark == "sdpa_default":
            return lambda: sdpa(q, k, v, is_causal=causal)
        if benchmark == "flash_attn":
            from flash_attn import flash_attn_func

            # flash_attn takes (B, S, H, D); the transposes are views made once, here.
            qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))
            return lambda: flash_attn_func(qt, kt, vt, causal=causal).transpose(1, 2)
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, SDPA_BACKENDS[benchmark])

        def call():
            with sdpa_kernel(backend):
                return sdpa(q, k, v, is_causal=causal)

        return call

    def facts(self):
        return {
            "flop_per_call": self.flops,
            "peak_memory_bytes": self.peak_bytes,
            "peak_memory_method": self.peak_method,
            "reference_check": (
                "float64 materialised attention over every element, in chunks of at most "
                f"{DEFAULT_BUDGET_BYTES >> 20} MiB of float64 score temporaries"
            ),
        }

    def verify(self):
        got = self.call()
        # float64 on the same device (a GPU's f64 units make this seconds, not minutes), in
        # chunks: the whole score matrix would not fit at the full suite's shapes.
        error, why = max_relative_error(self.torch, got, self.q, self.k, self.v, self.causal, DEFAULT_BUDGET_BYTES)
        if why:
            raise Mismatch(f"attention output: {why}")
        tolerance = TOLERANCE[self.dtype_name]
        if error > tolerance:
            raise Mismatch(f"attention output: max relative error {error:.3g} exceeds {tolerance:.3g}")

    def step(self):
        self.call()

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns)
        p50 = metrics.get("latency_p50_ns")
        if p50:
            metrics["tflops_at_p50"] = self.flops / p50 / 1e3
        return metrics


if __name__ == "__main__":
    sys.exit(main(Attention))
