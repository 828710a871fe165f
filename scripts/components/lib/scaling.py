"""Scaling rows of the ``collectives`` worker: a data-parallel training step of the tiny
transformer block (strong and weak scaling), one MLP block split across ranks
(tensor-parallel), and DeepSpeed ZeRO stages 0-3 (step time and memory per rank).

Each row runs on the first ``k`` ranks of the torchrun group (a sub-group; the others wait
at the barrier), so 1..N ranks are measured in one launch. Each is checked before it is
timed against a single-process computation of the same thing: the DDP gradients against
the gradients of the whole batch on one rank, the split MLP against the unsplit one.

The efficiency figures are computed by the worker from the per-step times of the rows it
timed in the same session: strong (and tensor-parallel) T1 / (k * Tk), weak T1 / Tk.
"""

from stackbench_worker import Mismatch, Skip

from transformer_block import D_MODEL, EPS, HEADS, weights

EFFICIENCY_TARGET = 0.8
SEQ = 64
DP_BATCH = 8  # strong: the global batch; weak: the batch per rank
TP_D, TP_TOKENS = 1024, 256
ZERO_D, ZERO_TOKENS, ZERO_LAYERS = 1024, 4096, 8


def torch_block(torch):
    """The pre-norm encoder block of transformer_block.py (same weights and math) as a
    torch module, so the ONNX runtimes and this row train/run one definition."""
    import numpy as np

    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.ParameterDict({k: nn.Parameter(torch.from_numpy(v.copy())) for k, v in weights(np).items()})

        def forward(self, x):
            p, b, s = self.p, x.shape[0], x.shape[1]
            qkv = F.layer_norm(x, (D_MODEL,), p["ln1_g"], p["ln1_b"], EPS) @ p["w_qkv"] + p["b_qkv"]
            q, k, v = (t.reshape(b, s, HEADS, D_MODEL // HEADS).transpose(1, 2) for t in qkv.split(D_MODEL, -1))
            context = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, D_MODEL)
            h = x + context @ p["w_o"] + p["b_o"]
            up = F.layer_norm(h, (D_MODEL,), p["ln2_g"], p["ln2_b"], EPS) @ p["w_up"] + p["b_up"]
            return h + F.gelu(up) @ p["w_down"] + p["b_down"]

    return Block()


def global_batch(torch, batch, device):
    generator = torch.Generator().manual_seed(7)
    return torch.randn(batch, SEQ, D_MODEL, generator=generator).to(device)


def relative_error(torch, got, want):
    got, want = got.detach().double().cpu(), want.detach().double().cpu()
    return float((got - want).abs().max()) / (float(want.abs().max()) or 1.0)


class DataParallelStep:
    """One DDP training step (forward, backward with the gradient all-reduce, SGD step)."""

    def __init__(self, ctx, k, batch, weak):
        torch = ctx.torch
        self.torch, self.ctx, self.k, self.weak = torch, ctx, k, weak
        self.global_size = batch * k if weak else batch
        if self.global_size % k:
            raise Skip(f"a global batch of {self.global_size} does not split over {k} ranks")
        self.share = self.global_size // k
        self.full = global_batch(torch, self.global_size, ctx.device)
        self.x = self.full[ctx.rank * self.share:(ctx.rank + 1) * self.share]
        self.model = torch_block(torch).to(ctx.device)
        self.ddp = torch.nn.parallel.DistributedDataParallel(self.model, process_group=ctx.group)
        self.optimizer = torch.optim.SGD(self.ddp.parameters(), lr=1e-3)

    def facts(self):
        return {"global_batch": self.global_size, "batch_per_rank": self.share, "seq": SEQ, "d_model": D_MODEL, "scaling": "weak" if self.weak else "strong"}

    def loss_and_backward(self):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.ddp(self.x).square().mean()
        loss.backward()
        return loss

    def verify(self):
        """The averaged DDP gradients equal the gradients of the whole batch on one rank."""
        torch = self.torch
        self.loss_and_backward()
        reference = torch_block(torch).to(self.ctx.device)
        reference(self.full).square().mean().backward()
        for name, param in self.model.p.items():
            error = relative_error(torch, param.grad, reference.p[name].grad)
            if error > 1e-4:
                raise Mismatch(f"DDP gradient of {name} on rank {self.ctx.rank} of {self.k}: relative error {error:.3g} against the single-process gradient")

    def step(self):
        self.loss_and_backward()
        self.optimizer.step()


class TensorParallelMlp:
    """Megatron-style MLP: the up projection split by columns, the down projection by rows,
    one all-reduce of the partial outputs."""

    def __init__(self, ctx, k):
        torch = ctx.torch
        self.torch, self.ctx, self.k = torch, ctx, k
        ffn = 4 * TP_D
        generator = torch.Generator().manual_seed(3)
        self.w_up = torch.randn(TP_D, ffn, generator=generator) / TP_D**0.5
        self.w_down = torch.randn(ffn, TP_D, generator=generator) / ffn**0.5
        self.x = torch.randn(TP_TOKENS, TP_D, generator=generator).to(ctx.device)
        part = slice(ctx.rank * ffn // k, (ctx.rank + 1) * ffn // k)
        self.up_part = self.w_up[:, part].contiguous().to(ctx.device)
        self.down_part = self.w_down[part, :].contiguous().to(ctx.device)
        self.out = None

    def facts(self):
        return {"d_model": TP_D, "ffn": 4 * TP_D, "tokens": TP_TOKENS, "ffn_per_rank": 4 * TP_D // self.k}

    def step(self):
        self.out = self.torch.nn.functional.gelu(self.x @ self.up_part) @ self.down_part
        self.ctx.dist.all_reduce(self.out, group=self.ctx.group)

    def verify(self):
        torch = self.torch
        self.step()
        x = self.x.double().cpu()
        want = torch.nn.functional.gelu(x @ self.w_up.double()) @ self.w_down.double()
        error = relative_error(torch, self.out, want)
        if error > 1e-4:
            raise Mismatch(f"tensor-parallel MLP on rank {self.ctx.rank} of {self.k}: relative error {error:.3g} against the unsplit float64 MLP")


def zero_model_state_bytes(stage, params, world):
    """Model-state bytes per rank that ZeRO promises for mixed-precision Adam (the ZeRO
    paper, section 5: 2 bytes of parameters, 2 of gradients, 12 of optimizer state per
    parameter; stage 1 shards the 12, stage 2 also the gradients, stage 3 everything)."""
    p = params
    return {0: 16 * p, 1: 4 * p + 12 * p / world, 2: 2 * p + 14 * p / world, 3: 16 * p / world}[stage]


class ZeroStep:
    """DeepSpeed ZeRO training step of ``ZERO_LAYERS`` MLP blocks on every rank of the group."""

    def __init__(self, ctx, stage):
        if ctx.deepspeed is None:
            raise Skip(ctx.deepspeed_reason)
        from torch_common import mlp_block

        torch = ctx.torch
        self.torch, self.ctx, self.stage = torch, ctx, stage
        torch.manual_seed(0)
        model = torch.nn.Sequential(*(mlp_block(torch, ZERO_D) for _ in range(ZERO_LAYERS)))
        self.params = sum(p.numel() for p in model.parameters())
        config = {
            "train_micro_batch_size_per_gpu": 1,
            "bf16": {"enabled": True},
            "zero_optimization": {"stage": stage},
            "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}},
            "steps_per_print": 1 << 30,
        }
        self.engine, _, _, _ = ctx.deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
        generator = torch.Generator().manual_seed(1 + ctx.rank)
        self.x = torch.randn(ZERO_TOKENS, ZERO_D, generator=generator).to(ctx.device, torch.bfloat16)
        torch.cuda.reset_peak_memory_stats()

    def facts(self):
        expected = zero_model_state_bytes(self.stage, self.params, self.ctx.world)
        return {"zero_stage": self.stage, "param_count": self.params, "zero_model_state_bytes_per_rank": expected}

    def step(self):
        loss = self.engine(self.x).float().square().mean()
        self.engine.backward(loss)
        self.engine.step()
        return loss

    def verify(self):
        losses = [float(self.step()) for _ in range(5)]
        if not all(abs(v) < float("inf") for v in losses) or not losses[-1] < losses[0]:
            raise Mismatch(f"ZeRO stage {self.stage} on rank {self.ctx.rank}: the loss did not fall over 5 steps on a fixed batch: {losses}")

    def rank_metrics(self):
        return {"peak_memory_bytes": self.torch.cuda.max_memory_allocated()}

    def teardown(self):
        destroy = getattr(self.engine, "destroy", None)
        if destroy is not None:
            destroy()
        self.engine = None
        self.torch.cuda.empty_cache()


def efficiency(kind, k, t1_ns, tk_ns):
    """Strong scaling (and tensor parallelism) T1 / (k Tk); weak scaling T1 / Tk."""
    if not t1_ns or not tk_ns:
        return None
    return t1_ns / tk_ns if kind == "weak" else t1_ns / (k * tk_ns)
