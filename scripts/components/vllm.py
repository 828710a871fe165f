"""stackbench worker: vLLM offline inference on a local model.

The model is the one ``STACKBENCH_VLLM_MODEL`` names (a local directory or a name already
in the local Hugging Face cache: nothing is downloaded by stackbench). Prompts are random
token ids (no tokenizer round trip), decoding is greedy with ``ignore_eos`` so every
request produces exactly the requested number of tokens.

Benchmarks (ids ``components/vllm/offline/b<B>_in<I>_out<O>``): one ``LLM.generate`` of B
requests per call, driven through the engine's own step loop (what ``LLM.generate`` does);
throughput B·O output tokens. Notes: ``tokens_per_s`` (output tokens / duration),
``requests_per_s``, ``ttft_p{50,90,99}_ns`` and ``tpot_p{50,90,99}_ns`` per request inside
the timed calls (host clock at each engine step: TTFT from submission to the first step
that returns a token, TPOT = (E2E − TTFT)/(O − 1), vLLM's definitions),
``request_e2e_p*_ns``, ``load_time_ns`` (engine start: weights, CUDA graph capture,
compilation) and ``peak_memory_bytes`` of the engine on the device, with
``peak_memory_method`` (lib/engine_memory.py: NVML's per-process memory of this process
and its children, where the V1 engine core runs, else the drop in the device's free
memory since before the engine started). The step loop returns finished outputs, so the
host clock is right.
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

from engine_memory import EngineMemory  # noqa: E402
from request_times import RequestTimes, check_repeatable_greedy, request_metrics  # noqa: E402,F401 -- tests reach them here too
from stackbench_worker import Benchmark, Component, Mismatch, Skip, import_module, import_reason, latency_metrics, main, suite  # noqa: E402

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
        # Found on the path but failing to import (a CUDA or torch version conflict) is a
        # broken install: ImportFailure, which fails the component.
        vllm, missing = import_module("vllm")
        if missing:
            return {"component": self.name, "available": False, "reason": missing, "benchmarks": benchmarks}
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
            # Before the engine starts: the free-memory baseline of the fallback method.
            self.memory = EngineMemory(self.torch)
            started = time.perf_counter_ns()
            self.llm = LLM(model=self.model, seed=0, max_model_len=max(longest, max_len) + 16, gpu_memory_utilization=utilisation)
            self.load_ns = time.perf_counter_ns() - started
            self.memory.sample()
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
        return Offline(self.torch, llm, self.load_ns, batch, prompt_len, out_len, self.memory)


def vocab_size(llm):
    """The model's vocabulary: from the engine's model config where this vLLM version
    exposes it, else from the tokenizer."""
    try:
        return llm.llm_engine.model_config.get_vocab_size()
    except AttributeError:
        return len(llm.get_tokenizer())


class Offline(Benchmark):
    def __init__(self, torch, llm, load_ns, batch, prompt_len, out_len, memory):
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        self.torch, self.llm, self.load_ns, self.memory = torch, llm, load_ns, memory
        self.batch, self.out_len = batch, out_len
        vocab = vocab_size(llm)
        generator = torch.Generator().manual_seed(0)
        ids = torch.randint(100, vocab - 100, (batch, prompt_len), generator=generator).tolist()
        self.prompts = [{"prompt_token_ids": row} for row in ids]
        self.params = SamplingParams(max_tokens=out_len, ignore_eos=True, temperature=0.0)
        # Separate parameters for the timed loop: ``LLM.generate`` sets the ones it is given
        # to FINAL_ONLY, which would deliver every token at the end (TTFT = E2E).
        self.stream_params = SamplingParams(
            max_tokens=out_len, ignore_eos=True, temperature=0.0, output_kind=RequestOutputKind.DELTA
        )
        self.requests = []
        self.next_request = 0
        self.short_requests = 0

    def generate(self, params):
        return self.llm.generate(self.prompts, params, use_tqdm=False)

    def facts(self):
        return {
            "load_time_ns": self.load_ns,
            "batch": self.batch,
            "output_tokens_per_request": self.out_len,
            "request_timing": "host clock per engine step: TTFT at the first step with a token, E2E at finish",
        }

    def verify(self):
        check_repeatable_greedy(self.generate(self.params), self.generate(self.params), self.out_len)

    def step(self):
        """One batch through the engine's own loop (what ``LLM.generate`` does), noting
        when each request's first token and its end arrive."""
        engine = self.llm.llm_engine
        times = RequestTimes(time.perf_counter_ns())
        for prompt in self.prompts:
            engine.add_request(f"stackbench-{self.next_request}", prompt, self.stream_params)
            self.next_request += 1
        while engine.has_unfinished_requests():
            outputs = engine.step()
            times.observe(outputs, time.perf_counter_ns())
        rows = times.per_request()
        self.short_requests += sum(1 for row in rows if row[3] != self.out_len)
        self.requests = (self.requests + rows)[-20000:]

    def metrics(self, latencies_ns):
        if self.short_requests:
            raise Mismatch(f"{self.short_requests} request(s) in the timed runs produced fewer than {self.out_len} tokens")
        metrics = latency_metrics(latencies_ns, prefix="e2e")
        metrics.update(request_metrics(self.requests))
        if latencies_ns:
            seconds = sum(latencies_ns) / 1e9
            metrics["tokens_per_s"] = self.batch * self.out_len * len(latencies_ns) / seconds
            metrics["requests_per_s"] = self.batch * len(latencies_ns) / seconds
        peak, method = self.memory.sample()
        metrics["peak_memory_bytes"] = peak
        metrics["peak_memory_method"] = method
        return metrics


if __name__ == "__main__":
    sys.exit(main(Vllm))
