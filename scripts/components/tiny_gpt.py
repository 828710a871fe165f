"""stackbench worker: a basic inference test on a tiny GPT built here (no downloads).

The model: token and position embeddings, two pre-norm decoder blocks (causal
self-attention through ``scaled_dot_product_attention``, GELU MLP), a tied output head;
random weights from a fixed seed. Decoding is greedy with a KV cache.

Benchmarks (ids ``components/tiny_gpt/<benchmark>/<parameters>``):

* ``prefill/b<B>_s<S>``: one forward over B prompts of S tokens, filling the KV cache;
  throughput B·S tokens.
* ``generate/b<B>_s<S>_n<N>``: prefill then N−1 cached decode steps, N new tokens per
  prompt; throughput B·N tokens. Notes: ``ttft_p50_ns``/``ttft_p99_ns`` (prefill plus the
  first token), ``tpot_p50_ns``/``tpot_p99_ns`` ((E2E − TTFT)/(N − 1), vLLM's definition),
  ``tokens_per_s`` (B·N·calls / total time).

Checked before timing: prefill logits against a full forward without the cache, and the
cached greedy decode against a greedy decode that recomputes the whole sequence each step
(the tokens must be identical).
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so `import onnxruntime` finds the real package,
# and import the shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


from stackbench_worker import Benchmark, Component, Mismatch, latency_metrics, main, suite

VOCAB, D_MODEL, HEADS, LAYERS, MAX_SEQ = 2048, 256, 4, 2, 2048
QUICK = {"prefill": [(1, 128), (4, 128)], "generate": [(1, 128, 32), (4, 128, 32)]}
FULL = {
    "prefill": [(b, s) for b in (1, 4, 16) for s in (128, 512, 1024)],
    "generate": [(b, s, 64) for b in (1, 4, 16) for s in (128, 512)],
}


def build_model(torch):
    nn = torch.nn
    F = nn.functional

    def causal_mask(new, total, device):
        """Token i of ``new`` sees every cached position and the new ones up to itself."""
        if new == total:
            return {"is_causal": True}
        if new == 1:
            return {}
        visible = torch.ones(new, total, dtype=torch.bool).tril(diagonal=total - new)
        return {"attn_mask": visible.to(device)}

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(D_MODEL)
            self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
            self.proj = nn.Linear(D_MODEL, D_MODEL)
            self.norm2 = nn.LayerNorm(D_MODEL)
            self.up = nn.Linear(D_MODEL, 4 * D_MODEL)
            self.down = nn.Linear(4 * D_MODEL, D_MODEL)

        def forward(self, x, cache):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(D_MODEL, dim=-1)
            q, k, v = (z.view(b, t, HEADS, D_MODEL // HEADS).transpose(1, 2) for z in (q, k, v))
            if cache is not None:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            attn = F.scaled_dot_product_attention(q, k, v, **causal_mask(t, k.shape[2], x.device))
            x = x + self.proj(attn.transpose(1, 2).reshape(b, t, D_MODEL))
            x = x + self.down(F.gelu(self.up(self.norm2(x))))
            return x, (k, v)

    class TinyGpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, D_MODEL)
            self.pos = nn.Embedding(MAX_SEQ, D_MODEL)
            self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
            self.norm = nn.LayerNorm(D_MODEL)

        def forward(self, tokens, caches=None, start=0):
            positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)
            x = self.embed(tokens) + self.pos(positions)
            new_caches = []
            for i, block in enumerate(self.blocks):
                x, cache = block(x, None if caches is None else caches[i])
                new_caches.append(cache)
            return self.norm(x) @ self.embed.weight.T, new_caches

    torch.manual_seed(0)
    return TinyGpt().eval()


class TinyGptComponent(Component):
    name = "tiny_gpt"

    def __init__(self):
        from torch_common import device_kind, import_torch

        self.torch, self.missing = import_torch()
        self.kind = device_kind(self.torch) if self.torch else "cpu"
        self.model = None

    def offered(self):
        plan = FULL if suite() == "full" else QUICK
        specs = [("prefill", f"b{b}_s{s}", b * s) for b, s in plan["prefill"]]
        specs += [("generate", f"b{b}_s{s}_n{n}", b * n) for b, s, n in plan["generate"]]
        return specs

    def describe(self):
        from torch_common import torch_facts

        benchmarks = [
            {"benchmark": name, "parameters": params, "throughput": {"elements": tokens}}
            for name, params, tokens in self.offered()
        ]
        if self.torch is None:
            return {"component": self.name, "available": False, "reason": self.missing, "benchmarks": benchmarks}
        facts = torch_facts(self.torch, self.kind)
        facts.update({"model": f"tiny GPT d{D_MODEL} h{HEADS} l{LAYERS} vocab{VOCAB}, random weights seed 0"})
        return {"component": self.name, "available": True, "device": self.kind, "facts": facts, "benchmarks": benchmarks}

    def make(self, benchmark, parameters):
        from torch_common import torch_device

        if (benchmark, parameters) not in {(b, p) for b, p, _ in self.offered()}:
            raise ValueError(f"tiny_gpt does not offer {benchmark}/{parameters}")
        if self.model is None:
            self.model = build_model(self.torch).to(torch_device(self.kind))
        fields = {part[0]: int(part[1:]) for part in parameters.split("_")}
        kind = Prefill if benchmark == "prefill" else Generate
        return kind(self.torch, self.kind, self.model, fields)


class GptBenchmark(Benchmark):
    def __init__(self, torch, kind, model, fields):
        from torch_common import clock, torch_device

        self.torch, self.kind, self.model = torch, kind, model
        self.clock = clock(torch, kind)
        self.batch, self.seq = fields["b"], fields["s"]
        self.new_tokens = fields.get("n", 1)
        generator = torch.Generator(device="cpu").manual_seed(1)
        self.prompt = torch.randint(0, VOCAB, (self.batch, self.seq), generator=generator).to(torch_device(kind))

    def facts(self):
        return {"batch": self.batch, "prompt_tokens": self.seq, "new_tokens": self.new_tokens}

    def prefill(self):
        with self.torch.inference_mode():
            return self.model(self.prompt)

    def generate(self, on_first_token=None):
        """Greedy decode with the KV cache; returns the (B, N) new tokens."""
        with self.torch.inference_mode():
            logits, caches = self.model(self.prompt)
            token = logits[:, -1].argmax(-1, keepdim=True)
            if on_first_token is not None:
                on_first_token()
            out = [token]
            for i in range(1, self.new_tokens):
                logits, caches = self.model(token, caches, start=self.seq + i - 1)
                token = logits[:, -1].argmax(-1, keepdim=True)
                out.append(token)
            return self.torch.cat(out, dim=1)

    def generate_without_cache(self):
        """The reference: recompute the whole sequence for every new token."""
        with self.torch.inference_mode():
            sequence = self.prompt
            for _ in range(self.new_tokens):
                logits, _ = self.model(sequence)
                sequence = self.torch.cat([sequence, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            return sequence[:, self.seq:]


class Prefill(GptBenchmark):
    def verify(self):
        from torch_common import check_close

        logits, caches = self.prefill()
        # The reference: the same model with the prompt split in two, the second half
        # attending through the cache; agreeing proves the cache holds what attention needs.
        half = self.seq // 2
        with self.torch.inference_mode():
            first, cache = self.model(self.prompt[:, :half])
            second, _ = self.model(self.prompt[:, half:], cache, start=half)
        check_close("prefill logits (cache split)", logits, self.torch.cat([first, second], dim=1), 1e-3)
        if len(caches) != LAYERS or caches[0][0].shape[2] != self.seq:
            raise Mismatch(f"prefill left a cache of {caches[0][0].shape[2]} positions, expected {self.seq}")

    def step(self):
        self.prefill()

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns)
        if latencies_ns:
            metrics["prefill_tokens_per_s"] = self.batch * self.seq * len(latencies_ns) / (sum(latencies_ns) / 1e9)
        return metrics


class Generate(GptBenchmark):
    # ``step`` marks its own start and its first token.
    marks_per_step = 2

    def __init__(self, *args):
        super().__init__(*args)
        self.first_token_marks = []

    def verify(self):
        cached = self.generate()
        reference = self.generate_without_cache()
        if cached.shape != (self.batch, self.new_tokens):
            raise Mismatch(f"generated shape {tuple(cached.shape)}, expected {(self.batch, self.new_tokens)}")
        if not self.torch.equal(cached.cpu(), reference.cpu()):
            differing = int((cached.cpu() != reference.cpu()).sum())
            raise Mismatch(f"KV-cache greedy decode differs from full recompute in {differing} tokens")

    def step(self):
        start = self.clock.mark()
        marks = [start]
        self.generate(on_first_token=lambda: marks.append(self.clock.mark()))
        self.first_token_marks.append(marks)
        # Bounded like the latency reservoir: only the recent calls matter for percentiles.
        if len(self.first_token_marks) > 20000:
            del self.first_token_marks[:10000]

    def metrics(self, latencies_ns):
        self.clock.synchronize()
        ttft = [self.clock.elapsed_ns(start, first) for start, first in self.first_token_marks]
        self.first_token_marks = []
        self.ttft_history = (getattr(self, "ttft_history", []) + ttft)[-20000:]
        metrics = latency_metrics(latencies_ns, prefix="e2e")
        metrics.update(latency_metrics(self.ttft_history, prefix="ttft"))
        # Pair each call's E2E with its TTFT, newest first aligned (on a GPU, runs of more
        # than MAX_MARKED_CALLS keep no per-call E2E, so fewer pairs may exist).
        pairs = min(len(latencies_ns), len(self.ttft_history))
        if pairs and self.new_tokens > 1:
            recent = zip(latencies_ns[-pairs:], self.ttft_history[-pairs:], strict=True)
            tpot = [(e2e - first) / (self.new_tokens - 1) for e2e, first in recent]
            metrics.update(latency_metrics(tpot, prefix="tpot"))
        if latencies_ns:
            metrics["tokens_per_s"] = self.batch * self.new_tokens * len(latencies_ns) / (sum(latencies_ns) / 1e9)
        return metrics


if __name__ == "__main__":
    sys.exit(main(TinyGptComponent))
