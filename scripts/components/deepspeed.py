"""stackbench worker: DeepSpeed ZeRO stages 0 to 3 on a small built-in model.

The model: an MLP of ``LAYERS`` residual blocks of width D (LayerNorm, D→4D, GELU, 4D→D),
seeded random weights, trained in bf16 with AdamW (torch's implementation, so no CUDA
extension build is needed) in a single-process ``torch.distributed`` group.

Benchmarks (ids ``components/deepspeed/zero_step/stage<0-3>_ranks<W>_d<D>_t<T>``): one
training step (forward, ``engine.backward``, ``engine.step``) on T tokens; throughput T
tokens. W is the world size, 1 here: one rank holds every shard, so ZeRO partitions
nothing and the stage comparison measures its bookkeeping only (the notes say so in
``partitioning``); multi-rank rows need several GPUs. Notes: step latency p50/p90/p99,
``peak_memory_bytes`` (``torch.cuda.max_memory_allocated`` over the timed steps, reset
after the reference copy of the model is dropped), ``param_count``, ``zero_stage``,
``world_size``, and the memory by phase of one step taken after verification (see
``memory_phases``): ``memory_at_rest_bytes`` (``torch.cuda.memory_allocated`` before the
forward: parameters and optimizer state partitions, with whatever gradient buffers ZeRO
keeps between steps) and ``memory_after_backward_bytes`` (after ``engine.backward``: the
gradients added, activations freed); the peak less that is the activations and
temporaries. Taken after the verification steps, not right after ``deepspeed.initialize``:
AdamW creates its state at the first step, so an after-init snapshot misses it. Checked
before timing: the engine's first forward matches the plain model, and the loss falls
over a few steps on a fixed batch. Timed with CUDA events.
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so the real package is imported, and import the
# shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import gc  # noqa: E402
import re  # noqa: E402
import socket  # noqa: E402

from stackbench_worker import Benchmark, Component, Mismatch, Skip, import_module, latency_metrics, main, suite  # noqa: E402

LAYERS = 8
# This worker is one process with one rank: ZeRO has nobody to partition with.
WORLD_SIZE = 1
ONE_RANK = "none: one rank holds every shard, so this measures ZeRO's bookkeeping, not its memory saving"
QUICK = [(s, 1024, 4096) for s in range(4)]
FULL = [(s, d, 8192) for s in range(4) for d in (1024, 2048)]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DeepSpeed(Component):
    name = "deepspeed"

    def __init__(self):
        from torch_common import device_kind, import_torch

        self.reason = None
        self.torch, missing = import_torch()
        deepspeed, self.reason = import_module("deepspeed")
        if deepspeed is None:
            return
        self.deepspeed = deepspeed
        if missing:
            self.reason = missing
        elif device_kind(self.torch) == "cpu":
            self.reason = f"DeepSpeed {deepspeed.__version__} ZeRO needs a CUDA GPU; none visible (torch.cuda.is_available() is False)"
        self.distributed = False

    def describe(self):
        plan = FULL if suite() == "full" else QUICK
        benchmarks = [
            {"benchmark": "zero_step", "parameters": f"stage{s}_ranks{WORLD_SIZE}_d{d}_t{t}", "throughput": {"elements": t}}
            for s, d, t in plan
        ]
        if self.reason:
            return {"component": self.name, "available": False, "reason": self.reason, "benchmarks": benchmarks}
        from torch_common import device_kind, torch_facts

        facts = torch_facts(self.torch, device_kind(self.torch))
        facts["deepspeed_version"] = self.deepspeed.__version__
        return {"component": self.name, "available": True, "device": device_kind(self.torch), "facts": facts, "benchmarks": benchmarks}

    def init_distributed(self):
        """ZeRO runs inside a process group; a single local rank is enough to measure it."""
        if not self.distributed:
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(free_port()))
            for name, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", str(WORLD_SIZE))):
                os.environ.setdefault(name, value)
            self.deepspeed.init_distributed(dist_backend="nccl")
            self.distributed = True

    def make(self, benchmark, parameters):
        if self.reason:
            raise Skip(self.reason)
        if benchmark != "zero_step":
            raise ValueError(f"deepspeed does not offer {benchmark}")
        match = re.fullmatch(r"stage(\d)_ranks(\d+)_d(\d+)_t(\d+)", parameters)
        if match is None:
            raise ValueError(f"deepspeed parameters {parameters!r} are not stage<S>_ranks<W>_d<D>_t<T>")
        stage, ranks, d, t = (int(g) for g in match.groups())
        if ranks != WORLD_SIZE:
            raise ValueError(f"this worker runs {WORLD_SIZE} rank(s), not {ranks}")
        self.init_distributed()
        return ZeroStep(self.torch, self.deepspeed, stage, d, t)


MEMORY_PHASES = (
    "torch.cuda.memory_allocated around one training step after verification: at rest before "
    "the forward, then after engine.backward; the peak is max_memory_allocated over the timed steps"
)


def memory_phases(torch, engine, x):
    """One training step with the allocator's count read between its phases: at rest (what
    the engine keeps between steps) and after backward (with the gradients). The caching
    allocator counts an allocation when it is made on the host, so no synchronize is
    needed for the count to be current."""
    at_rest = torch.cuda.memory_allocated()
    loss = engine(x).float().square().mean()
    engine.backward(loss)
    after_backward = torch.cuda.memory_allocated()
    engine.step()
    return {
        "memory_at_rest_bytes": at_rest,
        "memory_after_backward_bytes": after_backward,
        "memory_phases": MEMORY_PHASES,
    }


def build_model(torch, d):
    from torch_common import mlp_block

    torch.manual_seed(0)
    return torch.nn.Sequential(*(mlp_block(torch, d) for _ in range(LAYERS)))


class ZeroStep(Benchmark):
    def __init__(self, torch, deepspeed, stage, d, tokens):
        from torch_common import clock

        self.torch, self.stage, self.clock = torch, stage, clock(torch, "cuda")
        model = build_model(torch, d)
        self.param_count = sum(p.numel() for p in model.parameters())
        self.plain = build_model(torch, d).cuda().to(torch.bfloat16).eval()
        config = {
            "train_micro_batch_size_per_gpu": 1,
            "gradient_accumulation_steps": 1,
            "bf16": {"enabled": True},
            "zero_optimization": {"stage": stage},
            "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}},
            "steps_per_print": 1 << 30,
        }
        self.engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
        generator = torch.Generator().manual_seed(1)
        self.x = torch.randn(tokens, d, generator=generator).cuda().to(torch.bfloat16)
        self.phases = {}

    def facts(self):
        return {
            "zero_stage": self.stage,
            "param_count": self.param_count,
            "layers": LAYERS,
            "world_size": WORLD_SIZE,
            "partitioning": ONE_RANK if WORLD_SIZE == 1 else f"across {WORLD_SIZE} ranks",
        }

    def train_step(self):
        # The same loss as memory_phases, so the phases are of this step.
        loss = self.engine(self.x).float().square().mean()
        self.engine.backward(loss)
        self.engine.step()
        return loss

    def verify(self):
        from torch_common import check_close

        with self.torch.no_grad():
            check_close("engine forward vs plain model", self.engine(self.x), self.plain(self.x), 3e-2)
        self.plain = None
        losses = [float(self.train_step()) for _ in range(5)]
        if not all(l == l and abs(l) != float("inf") for l in losses):
            raise Mismatch(f"ZeRO stage {self.stage}: non-finite loss {losses}")
        if not losses[-1] < losses[0]:
            raise Mismatch(f"ZeRO stage {self.stage}: loss did not fall over 5 steps on a fixed batch: {losses}")
        # The peak must be the training's: the reference copy of the model is gone now, and
        # its memory is handed back before the phases are read and the high-water mark
        # starts again.
        gc.collect()
        self.torch.cuda.empty_cache()
        self.phases = memory_phases(self.torch, self.engine, self.x)
        self.torch.cuda.reset_peak_memory_stats()

    def step(self):
        self.train_step()

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns)
        metrics["peak_memory_bytes"] = self.torch.cuda.max_memory_allocated()
        metrics.update(self.phases)
        return metrics

    def teardown(self):
        destroy = getattr(self.engine, "destroy", None)
        if destroy is not None:
            destroy()
        self.engine = None
        gc.collect()
        self.torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main(DeepSpeed))
