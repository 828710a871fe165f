"""Per-request TTFT, TPOT and end-to-end times of an inference engine's batch, on the host
clock, with vLLM's definitions: TTFT from submission to the first output token, TPOT =
(E2E - TTFT)/(n_out - 1). Shared by the vLLM component (scripts/components/vllm.py) and
the model sweep's vLLM backend (scripts/components/models.py).

Imports only the worker helpers (standard library).
"""

from stackbench_worker import Mismatch, latency_metrics


class RequestTimes:
    """Per-request TTFT, E2E and TPOT from one batch, on the host clock, as the engine's
    steps deliver tokens: the times a client of the engine sees. vLLM's definitions:
    TTFT from submission to the first output token, TPOT = (E2E − TTFT)/(n_out − 1).
    Outputs are deltas (``RequestOutputKind.DELTA``, as a streaming server gets them):
    each carries only the tokens new since the last step."""

    def __init__(self, started_ns):
        self.started_ns = started_ns
        self.first_ns = {}
        self.produced = {}
        self.done = {}

    def observe(self, outputs, now_ns):
        """Notes the first step at which each request has a token, and when it finishes."""
        for output in outputs:
            new = len(output.outputs[0].token_ids) if output.outputs else 0
            produced = self.produced.get(output.request_id, 0) + new
            self.produced[output.request_id] = produced
            if produced and output.request_id not in self.first_ns:
                self.first_ns[output.request_id] = now_ns - self.started_ns
            if output.finished:
                self.done[output.request_id] = (now_ns - self.started_ns, produced)

    def per_request(self):
        """[(ttft_ns, e2e_ns, tpot_ns or None, n_out)] for the finished requests."""
        rows = []
        for request_id, (e2e, n_out) in self.done.items():
            ttft = self.first_ns.get(request_id, e2e)
            tpot = (e2e - ttft) / (n_out - 1) if n_out > 1 else None
            rows.append((ttft, e2e, tpot, n_out))
        return rows


def request_metrics(rows):
    """p50/p90/p99 of TTFT, TPOT and per-request E2E over ``rows`` from ``per_request``."""
    metrics = latency_metrics([r[0] for r in rows], prefix="ttft")
    metrics.update(latency_metrics([r[2] for r in rows if r[2] is not None], prefix="tpot"))
    metrics.update(latency_metrics([r[1] for r in rows], prefix="request_e2e"))
    return metrics


def check_repeatable_greedy(first, second, out_len):
    """Two greedy generations of the same prompts (``LLM.generate`` outputs) must give each
    request exactly ``out_len`` tokens, and the same tokens both times; else ``Mismatch``."""
    for a, b in zip(first, second, strict=True):
        tokens = list(a.outputs[0].token_ids)
        if len(tokens) != out_len:
            raise Mismatch(f"a request produced {len(tokens)} tokens, expected {out_len}")
        if tokens != list(b.outputs[0].token_ids):
            raise Mismatch("greedy decoding of the same prompts gave different tokens")
