"""stackbench worker: vLLM offline inference on a local model.

The model is the one ``STACKBENCH_VLLM_MODEL`` names (a local directory or a name already
in the local Hugging Face cache: nothing is downloaded by stackbench). Prompts are random
token ids (no tokenizer round trip), decoding is greedy with ``ignore_eos`` so every
request produces exactly the requested number of tokens.

Benchmarks (ids ``components/vllm/offline/b<B>_in<I>_out<O>``): one ``LLM.generate`` of B
requests per call; throughput B·O output tokens. Notes: ``tokens_per_s`` (output tokens /
duration), ``requests_per_s``, ``ttft_p50_ns``/``ttft_p99_ns`` (from vLLM's per-request
metrics when it reports them, else from timed ``max_tokens=1`` calls of the same batch),
``tpot_p50_ns``/``tpot_p99_ns`` ((E2E − TTFT)/(O − 1), vLLM's definition),
``load_time_ns`` (engine start: weights, CUDA graph capture, compilation) and
``peak_memory_bytes``. ``generate`` returns finished outputs, so the host clock is right.
"""

import os
import sys

# Workers share their names with the packages they measure (onnxruntime.py, triton.py):
# take this folder off the import path so the real package is imported, and import the
# shared helpers from lib/.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import importlib.util  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

from stackbench_worker import Benchmark, Component, Mismatch, Skip, import_reason, latency_metrics, main, percentile, suite  # noqa: E402

MODEL_ENV = "STACKBENCH_VLLM_MODEL"
QUICK = [(1, 128, 128), (8, 128, 128)]
FULL = [(b, 128, 128) for b in (1, 8, 32, 128)] + [(b, 1024, 128) for b in (1, 32)]


class Vllm(Component):
    name = "vllm"

    def __init__(self):
        from torch_common import device_kind, import_torch

        reasons = []
        if importlib.util.find_spec("vllm") is None:
            reasons.append(import_reason("vllm", "No module named 'vllm'"))
        self.torch, missing = import_torch()
        if missing:
            reasons.append(missing)
        elif device_kind(self.torch) == "cpu":
            reasons.append("vLLM needs a CUDA GPU; none visible (torch.cuda.is_available() is False)")
        self.model = os.environ.get(MODEL_ENV, "").strip()
        if not self.model:
            reasons.append(f"{MODEL_ENV} is not set (point it at a local model directory)")
        self.reason = "; ".join(reasons) or None
        self.llm = None

    def describe(self):
        plan = FULL if suite() == "full" else QUICK
        benchmarks = [
            {"benchmark": "offline", "parameters": f"b{b}_in{i}_out{o}", "throughput": {"elements": b * o}}
            for b, i, o in plan
        ]
        if self.reason:
            return {"component": self.name, "available": False, "reason": self.reason, "benchmarks": benchmarks}
        try:
            import vllm
        except Exception as error:
            return {"component": self.name, "available": False, "reason": import_reason("vllm", error), "benchmarks": benchmarks}
        from torch_common import torch_facts

        facts = torch_facts(self.torch, "cuda")
        facts.update({"vllm_version": vllm.__version__, "vllm_model": self.model})
        return {"component": self.name, "available": True, "device": "cuda", "facts": facts, "benchmarks": benchmarks}

    def engine(self, max_len):
        """One engine per worker: loading a model takes minutes; the longest shape decides
        ``max_model_len``."""
        if self.llm is None:
            from vllm import LLM

            utilisation = float(os.environ.get("STACKBENCH_VLLM_GPU_MEMORY_UTILIZATION", "0.85"))
            longest = max(i + o for _, i, o in (FULL if suite() == "full" else QUICK))
            started = time.perf_counter_ns()
            self.llm = LLM(model=self.model, seed=0, max_model_len=max(longest, max_len) + 16, gpu_memory_utilization=utilisation)
            self.load_ns = time.perf_counter_ns() - started
        return self.llm

    def make(self, benchmark, parameters):
        if self.reason:
            raise Skip(self.reason)
        if benchmark != "offline":
            raise ValueError(f"vllm does not offer {benchmark}")
        match = re.fullmatch(r"b(\d+)_in(\d+)_out(\d+)", parameters)
        if match is None:
            raise ValueError(f"vllm parameters {parameters!r} are not b<B>_in<I>_out<O>")
        batch, prompt_len, out_len = (int(g) for g in match.groups())
        llm = self.engine(prompt_len + out_len)
        return Offline(self.torch, llm, self.load_ns, batch, prompt_len, out_len)


def vocab_size(llm):
    """The model's vocabulary: from the engine's model config where this vLLM version
    exposes it, else from the tokenizer."""
    try:
        return llm.llm_engine.model_config.get_vocab_size()
    except AttributeError:
        return len(llm.get_tokenizer())


class Offline(Benchmark):
    def __init__(self, torch, llm, load_ns, batch, prompt_len, out_len):
        from vllm import SamplingParams

        self.torch, self.llm, self.load_ns = torch, llm, load_ns
        self.batch, self.out_len = batch, out_len
        vocab = vocab_size(llm)
        generator = torch.Generator().manual_seed(0)
        ids = torch.randint(100, vocab - 100, (batch, prompt_len), generator=generator).tolist()
        self.prompts = [{"prompt_token_ids": row} for row in ids]
        self.params = SamplingParams(max_tokens=out_len, ignore_eos=True, temperature=0.0)
        self.first_token_params = SamplingParams(max_tokens=1, ignore_eos=True, temperature=0.0)
        self.ttft_ns = []
        self.outputs = None
        torch.cuda.reset_peak_memory_stats()

    def generate(self, params):
        return self.llm.generate(self.prompts, params, use_tqdm=False)

    def facts(self):
        return {"load_time_ns": self.load_ns, "batch": self.batch, "output_tokens_per_request": self.out_len}

    def verify(self):
        first = self.generate(self.params)
        second = self.generate(self.params)
        for a, b in zip(first, second, strict=True):
            tokens = list(a.outputs[0].token_ids)
            if len(tokens) != self.out_len:
                raise Mismatch(f"a request produced {len(tokens)} tokens, expected {self.out_len}")
            if tokens != list(b.outputs[0].token_ids):
                raise Mismatch("greedy decoding of the same prompts gave different tokens")
        # TTFT by calls that stop after the first token: prefill plus one sample.
        for _ in range(5):
            started = time.perf_counter_ns()
            self.generate(self.first_token_params)
            self.ttft_ns.append(time.perf_counter_ns() - started)

    def step(self):
        self.outputs = self.generate(self.params)

    def request_ttfts(self):
        """Per-request TTFT from vLLM's own metrics, where this version reports them."""
        ttfts = []
        for output in self.outputs or []:
            metrics = getattr(output, "metrics", None)
            first = getattr(metrics, "first_token_time", None)
            arrival = getattr(metrics, "arrival_time", None)
            if first and arrival:
                ttfts.append((first - arrival) * 1e9)
        return ttfts

    def metrics(self, latencies_ns):
        metrics = latency_metrics(latencies_ns, prefix="e2e")
        ttfts = self.request_ttfts() or self.ttft_ns
        metrics.update(latency_metrics(ttfts, prefix="ttft"))
        ttft = percentile(sorted(ttfts), 0.5) if ttfts else 0
        if self.out_len > 1:
            metrics.update(latency_metrics([(e2e - ttft) / (self.out_len - 1) for e2e in latencies_ns], prefix="tpot"))
        if latencies_ns:
            seconds = sum(latencies_ns) / 1e9
            metrics["tokens_per_s"] = self.batch * self.out_len * len(latencies_ns) / seconds
            metrics["requests_per_s"] = self.batch * len(latencies_ns) / seconds
        metrics["peak_memory_bytes"] = self.torch.cuda.max_memory_allocated()
        return metrics


if __name__ == "__main__":
    sys.exit(main(Vllm))
