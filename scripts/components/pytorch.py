"""stackbench worker: PyTorch operations on the device torch sees.

Benchmarks (ids ``components/pytorch/<benchmark>/<parameters>``):

* ``matmul/<dtype>_<M>x<N>x<K>``: ``torch.matmul``, the reference the native GEMM tier is
  compared with; throughput 2·M·N·K FLOP; checked against a float64 product.
* ``conv2d/<dtype>_n<N>_c<C>_h<H>_k<K>_r<R>_s<stride>``: ResNet-like convolutions;
  throughput 2·N·K·C·R²·Ho·Wo FLOP; checked against a float64 convolution.
* ``mlp_fwd_bwd/<dtype>_t<T>_d<D>``: forward and backward of a transformer MLP block
  (LayerNorm, D→4D, GELU, 4D→D, residual); throughput 48·T·D² FLOP; output and
  gradients checked against a float64 copy.
* ``transfer/<h2d|d2h>_<pinned|pageable>_<MiB>MiB``: host-device copies (GPU only);
  throughput in bytes; the copied bytes are compared.
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so `import onnxruntime` finds the real package,
# and import the shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


from stackbench_worker import Benchmark, Component, Mismatch, Skip, latency_metrics, main, suite

QUICK_CPU = {
    "matmul": [("f32", 256), ("f32", 1024), ("bf16", 1024)],
    "conv2d": [("f32", 4, 64, 56, 64, 3, 1), ("f32", 4, 256, 14, 256, 3, 1)],
    "mlp_fwd_bwd": [("f32", 256, 512)],
}
FULL_CPU = {
    "matmul": [(d, n) for d in ("f32", "bf16", "f16") for n in (128, 192, 256, 512, 1024, 2048)],
    "conv2d": [
        (d, n, c, h, k, r, s)
        for d in ("f32", "bf16")
        for n in (1, 8)
        for (c, h, k, r, s) in (
            (3, 224, 64, 7, 2),
            (64, 56, 64, 3, 1),
            (128, 28, 128, 3, 1),
            (256, 14, 256, 3, 1),
            (512, 7, 512, 3, 1),
            (256, 14, 1024, 1, 1),
        )
    ],
    "mlp_fwd_bwd": [(d, t, dm) for d in ("f32", "bf16") for (t, dm) in ((256, 512), (1024, 1024))],
}
QUICK_GPU = {
    "matmul": [("f32", 4096), ("bf16", 4096), ("f16", 4096), ("bf16", 1024)],
    "conv2d": [("bf16", 32, 64, 56, 64, 3, 1), ("bf16", 32, 256, 14, 256, 3, 1)],
    "mlp_fwd_bwd": [("bf16", 8192, 4096)],
    "transfer": [(d, m, 256) for d in ("h2d", "d2h") for m in ("pinned", "pageable")],
}
FULL_GPU = {
    "matmul": [(d, n) for d in ("f32", "bf16", "f16") for n in (1024, 2048, 4096, 8192)],
    "conv2d": FULL_CPU["conv2d"] + [("bf16", 64, c, h, k, r, s) for (_, _, c, h, k, r, s) in FULL_CPU["conv2d"][:6]],
    "mlp_fwd_bwd": [(d, t, dm) for d in ("f32", "bf16") for (t, dm) in ((2048, 2048), (8192, 4096))],
    "transfer": [(d, m, mib) for d in ("h2d", "d2h") for m in ("pinned", "pageable") for mib in (64, 512)],
}
# Relative error allowed against the float64 reference, per input precision.
TOLERANCE = {"f32": 1e-4, "f16": 5e-3, "bf16": 3e-2}


def extra_matmuls():
    """Square matmuls added by ``STACKBENCH_PYTORCH_EXTRA_MATMUL=f32:160,bf16:512``: the
    overhead check sizes one to ~100 µs on the machine at hand."""
    extra = []
    for item in os.environ.get("STACKBENCH_PYTORCH_EXTRA_MATMUL", "").split(","):
        if item.strip():
            dtype, size = item.strip().split(":")
            if dtype not in TOLERANCE:
                raise ValueError(f"STACKBENCH_PYTORCH_EXTRA_MATMUL: unknown dtype {dtype!r}")
            extra.append((dtype, int(size)))
    return extra


def matmul_id(dtype, n):
    return f"{dtype}_{n}x{n}x{n}"


def conv_id(dtype, n, c, h, k, r, s):
    return f"{dtype}_n{n}_c{c}_h{h}_k{k}_r{r}_s{s}"


def conv_flops(n, c, h, k, r, s):
    out = (h + 2 * (r // 2) - r) // s + 1
    return 2 * n * k * c * r * r * out * out


class PyTorch(Component):
    name = "pytorch"

    def __init__(self):
        from torch_common import device_kind, import_torch

        self.torch, self.missing = import_torch()
        self.kind = device_kind(self.torch) if self.torch else "cpu"

    def plan(self):
        gpu = self.kind != "cpu"
        if suite() == "full":
            return FULL_GPU if gpu else FULL_CPU
        return QUICK_GPU if gpu else QUICK_CPU

    def offered(self):
        plan = self.plan() if self.torch else QUICK_CPU
        specs = []
        for dtype, n in plan["matmul"] + extra_matmuls():
            specs.append(("matmul", matmul_id(dtype, n), {"elements": 2 * n**3}))
        for shape in plan["conv2d"]:
            specs.append(("conv2d", conv_id(*shape), {"elements": conv_flops(*shape[1:])}))
        for dtype, t, d in plan["mlp_fwd_bwd"]:
            specs.append(("mlp_fwd_bwd", f"{dtype}_t{t}_d{d}", {"elements": 48 * t * d * d}))
        transfers = plan.get("transfer") or [(d, m, 64) for d in ("h2d", "d2h") for m in ("pinned", "pageable")]
        for direction, memory, mib in transfers:
            specs.append(("transfer", f"{direction}_{memory}_{mib}MiB", {"bytes": mib << 20}))
        return specs

    def describe(self):
        from torch_common import no_gpu_reason, torch_facts

        benchmarks = []
        for benchmark, parameters, throughput in self.offered():
            skip = None
            if benchmark == "transfer" and self.torch and self.kind == "cpu":
                skip = no_gpu_reason(self.torch, "a host-device transfer")
            benchmarks.append(
                {"benchmark": benchmark, "parameters": parameters, "throughput": throughput, "skip": skip}
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
        known = {p for b, p, _ in self.offered() if b == benchmark}
        if parameters not in known:
            raise ValueError(f"pytorch does not offer {benchmark}/{parameters}")
        maker = {"matmul": Matmul, "conv2d": Conv2d, "mlp_fwd_bwd": MlpFwdBwd, "transfer": Transfer}[benchmark]
        return maker(self.torch, self.kind, parameters)


def parse_fields(parameters):
    """``bf16_n4_c64_h56`` → ('bf16', {'n': 4, 'c': 64, 'h': 56})."""
    dtype, *rest = parameters.split("_")
    fields = {}
    for part in rest:
        letters = part.rstrip("0123456789")
        fields[letters] = int(part[len(letters):])
    return dtype, fields


class TorchBenchmark(Benchmark):
    def __init__(self, torch, kind):
        from torch_common import clock, torch_device

        self.torch = torch
        self.kind = kind
        self.device = torch_device(kind)
        self.clock = clock(torch, kind)
        self.generator = torch.Generator(device="cpu").manual_seed(0)

    def randn(self, *shape, dtype):
        """Random normal data (never zeros: low-toggle data flatters a GPU's clocks)."""
        return self.torch.randn(*shape, generator=self.generator).to(device=self.device, dtype=dtype)


class Matmul(TorchBenchmark):
    def __init__(self, torch, kind, parameters):
        from torch_common import dtype_of

        super().__init__(torch, kind)
        self.dtype_name, dims = parameters.split("_")
        m, n, k = (int(x) for x in dims.split("x"))
        self.flops = 2 * m * n * k
        dtype = dtype_of(torch, self.dtype_name)
        self.a = self.randn(m, k, dtype=dtype)
        self.b = self.randn(k, n, dtype=dtype)

    def facts(self):
        return {
            "float32_matmul_precision": self.torch.get_float32_matmul_precision(),
            "flop_per_call": self.flops,
        }

    def verify(self):
        from torch_common import check_close

        got = self.torch.matmul(self.a, self.b)
        # float64 on the same device: fast on a GPU, and independent of the dtype's kernels.
        want = self.a.double() @ self.b.double()
        check_close("matmul", got, want, TOLERANCE[self.dtype_name])

    def step(self):
        self.torch.matmul(self.a, self.b)

    def metrics(self, latencies_ns):
        return flops_metrics(latencies_ns, self.flops)


def flops_metrics(latencies_ns, flops):
    metrics = latency_metrics(latencies_ns)
    p50 = metrics.get("latency_p50_ns")
    if p50:
        metrics["tflops_at_p50"] = flops / p50 / 1e3
    return metrics


class Conv2d(TorchBenchmark):
    def __init__(self, torch, kind, parameters):
        from torch_common import dtype_of

        super().__init__(torch, kind)
        self.dtype_name, f = parse_fields(parameters)
        dtype = dtype_of(torch, self.dtype_name)
        self.stride, self.padding = f["s"], f["r"] // 2
        self.flops = conv_flops(f["n"], f["c"], f["h"], f["k"], f["r"], f["s"])
        self.x = self.randn(f["n"], f["c"], f["h"], f["h"], dtype=dtype)
        self.w = self.randn(f["k"], f["c"], f["r"], f["r"], dtype=dtype) / (f["c"] * f["r"] ** 2) ** 0.5
        self.memory_format = "contiguous"
        if kind != "cpu" or self.dtype_name != "f32":
            # The layout cuDNN and oneDNN prefer for reduced precision; ResNet runs in it.
            self.memory_format = "channels_last"
            self.x = self.x.contiguous(memory_format=torch.channels_last)
            self.w = self.w.contiguous(memory_format=torch.channels_last)

    def conv(self, x, w):
        return self.torch.nn.functional.conv2d(x, w, stride=self.stride, padding=self.padding)

    def facts(self):
        return {"flop_per_call": self.flops, "memory_format": self.memory_format}

    def verify(self):
        from torch_common import check_close

        got = self.conv(self.x, self.w)
        want = self.conv(self.x.double(), self.w.double())
        check_close("conv2d", got, want, TOLERANCE[self.dtype_name])

    def step(self):
        self.conv(self.x, self.w)

    def metrics(self, latencies_ns):
        return flops_metrics(latencies_ns, self.flops)


class MlpFwdBwd(TorchBenchmark):
    """Forward and backward of the pre-norm MLP block (torch_common.mlp_block)."""

    def __init__(self, torch, kind, parameters):
        from torch_common import dtype_of, mlp_block

        super().__init__(torch, kind)
        self.dtype_name, f = parse_fields(parameters)
        t, d = f["t"], f["d"]
        self.flops = 48 * t * d * d
        torch.manual_seed(0)
        self.reference = mlp_block(torch, d).double().to(self.device)
        self.block = mlp_block(torch, d)
        self.block.load_state_dict(self.reference.state_dict())
        self.block.to(device=self.device, dtype=dtype_of(torch, self.dtype_name))
        self.x = self.randn(t, d, dtype=dtype_of(torch, self.dtype_name))

    def forward_backward(self, block, x):
        block.zero_grad(set_to_none=True)
        out = block(x)
        out.float().square().mean().backward()
        return out

    def verify(self):
        from torch_common import check_close

        tolerance = TOLERANCE[self.dtype_name]
        out = self.forward_backward(self.block, self.x)
        want = self.forward_backward(self.reference, self.x.double())
        check_close("mlp output", out, want, tolerance)
        for (name, got), (_, ref) in zip(self.block.named_parameters(), self.reference.named_parameters(), strict=True):
            # Gradients sum over T rows in reduced precision: allow the accumulated error.
            check_close(f"gradient of {name}", got.grad, ref.grad, tolerance * 10)

    def facts(self):
        return {"flop_per_call": self.flops}

    def step(self):
        self.forward_backward(self.block, self.x)

    def metrics(self, latencies_ns):
        return flops_metrics(latencies_ns, self.flops)


class Transfer(TorchBenchmark):
    def __init__(self, torch, kind, parameters):
        from torch_common import no_gpu_reason

        super().__init__(torch, kind)
        if kind == "cpu":
            raise Skip(no_gpu_reason(torch, "a host-device transfer"))
        direction, memory, size = parameters.split("_")
        self.bytes = int(size.removesuffix("MiB")) << 20
        pinned = memory == "pinned"
        host = torch.randint(0, 256, (self.bytes,), dtype=torch.uint8, generator=self.generator)
        host = host.pin_memory() if pinned else host
        device = torch.empty(self.bytes, dtype=torch.uint8, device="cuda")
        if direction == "h2d":
            self.src, self.dst = host, device
        else:
            device.copy_(host)
            self.src, self.dst = device, torch.empty_like(host).pin_memory() if pinned else torch.empty_like(host)
        # Only pinned memory can be copied asynchronously; pageable copies stage through a
        # driver buffer and block, which is exactly the difference this measures.
        self.non_blocking = pinned

    def verify(self):
        self.step()
        self.torch.cuda.synchronize()
        if not self.torch.equal(self.src.cpu(), self.dst.cpu()):
            raise Mismatch("transfer: destination bytes differ from the source")

    def step(self):
        self.dst.copy_(self.src, non_blocking=self.non_blocking)

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns)
        p50 = metrics.get("latency_p50_ns")
        if p50:
            metrics["gb_per_s_at_p50"] = self.bytes / p50
        return metrics


if __name__ == "__main__":
    sys.exit(main(PyTorch))
