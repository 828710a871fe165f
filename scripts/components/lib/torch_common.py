"""What the torch-based workers share: importing torch (a skip with a precise reason when
it is missing, a failure when it is broken), picking the device, facts for the record,
result checks and peak memory.

Imported only after ``stackbench_worker.protect_stdout()``, like everything heavy.
"""

import os
import platform
import warnings

from stackbench_worker import Mismatch, clock_for, import_module

DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64"}


def import_torch():
    """(torch, None), or (None, reason) when torch is not installed. A torch that is there
    but fails to import (``OSError: libcudnn.so.9: cannot open shared object file``, a
    version conflict) raises ``ImportFailure``: a broken install is a failure."""
    torch, reason = import_module("torch")
    if torch is None:
        return None, reason
    threads = os.environ.get("STACKBENCH_TORCH_THREADS", "").strip()
    if threads:
        torch.set_num_threads(int(threads))
    return torch, None


# The device node each GPU build of torch needs: present means the machine has that GPU
# and its kernel driver.
DRIVER_NODES = {"cuda": "/dev/nvidiactl", "rocm": "/dev/kfd"}
# Set to "" or "-1", these hide every GPU on purpose.
HIDING_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def device_kind(torch, driver_nodes=DRIVER_NODES):
    """``cuda``, ``rocm`` (a HIP build reports itself as cuda) or ``cpu``. Raises
    ``RuntimeError`` when torch was built for the GPU this machine has (its driver's device
    node is there) and none was hidden on purpose, yet torch cannot use it (a driver too
    old for the wheel, a broken runtime): that is a broken stack, not a CPU machine."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
    hip = getattr(torch.version, "hip", None)
    if available:
        return "rocm" if hip else "cuda"
    build = "rocm" if hip else ("cuda" if getattr(torch.version, "cuda", None) else None)
    hidden = any(os.environ.get(name, "unset").strip() in ("", "-1") for name in HIDING_VARIABLES)
    node = driver_nodes.get(build)
    if node and os.path.exists(node) and not hidden:
        why = "; ".join(str(w.message).strip().splitlines()[0] for w in caught if str(w.message).strip())
        # crates/validate/src/validate/torch_cuda.rs reads torch's CUDA build from this message's
        # "torch X (built for cuda M.m)" when no benchmark could record it: keep the shape.
        raise RuntimeError(
            f"torch {torch.__version__} (built for {build} {hip or torch.version.cuda}) cannot use this "
            f"machine's GPU although {node} exists: {why or 'torch.cuda.is_available() is False'}"
        )
    return "cpu"


def torch_device(kind):
    return "cpu" if kind == "cpu" else "cuda"


def no_gpu_reason(torch, what):
    return (
        f"{what} needs a CUDA or ROCm GPU; torch {torch.__version__} sees none "
        "(torch.cuda.is_available() is False)"
    )


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def torch_facts(torch, kind):
    # The build's CUDA and HIP versions (None for a CPU-only build) on every device kind:
    # `stackbench validate` compares the CUDA one with the driver's (crates/validate/src/validate/torch_cuda.rs),
    # and on a machine without the driver says why that does not apply.
    facts = {
        "torch_version": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda_version": getattr(torch.version, "cuda", None),
        "hip_version": getattr(torch.version, "hip", None),
    }
    if kind == "cpu":
        facts["device_name"] = cpu_model()
    else:
        facts["device_name"] = torch.cuda.get_device_name(0)
        facts["cudnn_version"] = torch.backends.cudnn.version()
    return facts


def dtype_of(torch, name):
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {sorted(DTYPES)}")
    return getattr(torch, DTYPES[name])


def clock(torch, kind):
    return clock_for(kind, torch)


def synchronize(torch, kind):
    if kind != "cpu":
        torch.cuda.synchronize()


def check_close(what, got, want, tolerance):
    """Raises ``Mismatch`` unless max|got - want| <= tolerance * max|want|. Both are
    compared in float64 on the CPU, so the check does not share the code under test."""
    got = got.detach().double().cpu()
    want = want.detach().double().cpu()
    if got.shape != want.shape:
        raise Mismatch(f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}")
    if not bool(got.isfinite().all()):
        raise Mismatch(f"{what}: output has non-finite values")
    scale = float(want.abs().max()) or 1.0
    error = float((got - want).abs().max()) / scale
    if error > tolerance:
        raise Mismatch(f"{what}: max relative error {error:.3g} exceeds {tolerance:.3g}")
    return error


def _read_status_kib(field):
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"{field} missing from /proc/self/status")


def peak_memory(torch, kind, fn):
    """Runs ``fn`` once and returns (bytes it needed at peak beyond what was allocated
    before, method). On a GPU: the caching allocator's high-water mark. On CPU: the rise of
    the process's peak resident set (VmHWM, reset through /proc/self/clear_refs), which
    counts large temporaries returned to the OS when freed; (None, reason) where Linux does
    not allow the reset."""
    if kind != "cpu":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before, "torch.cuda.max_memory_allocated"
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
        before = _read_status_kib("VmRSS")
        fn()
        return max(0, _read_status_kib("VmHWM") - before), "linux VmHWM rise"
    except OSError as error:
        fn()
        return None, f"unavailable: {error}"


def mlp_block(torch, d):
    """Pre-norm transformer MLP with a residual (LayerNorm, d -> 4d, GELU, 4d -> d), as in
    GPT-style blocks: the model the PyTorch MLP and DeepSpeed benchmarks train."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.up = nn.Linear(d, 4 * d)
            self.down = nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.down(nn.functional.gelu(self.up(self.norm(x))))

    return Block()
