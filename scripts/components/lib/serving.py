"""Throughput under load (issue 19, ``serve`` cells of the model sweep): requests arrive at
a set rate, a loop serves at most B of them at once, and goodput counts the requests per
second that met every per-request SLO (vLLM's ``benchmark_serving`` definition).

Pure Python (standard library and the worker helpers only), so the arrival schedule, the
schedulers and the goodput arithmetic are unit-tested without torch
(tests/python/test_serving.py). The model work is passed in:

* ``serve_in_rounds`` is the loop for torch and ONNX Runtime, which have no engine of
  their own. Its form, the simplest honest one: requests queue in arrival order; whenever
  the model is idle, one scheduler round admits every request that has arrived, up to B,
  runs their prefill as one batch and decodes them together to exactly N tokens (no stop on
  EOS). A request arriving during a round waits for the next one: there are no mid-flight
  joins (that would be continuous batching, which needs per-request caches of different
  lengths). Its queue wait is therefore part of its TTFT.
* ``serve_on_engine`` drives an engine that batches by itself (vLLM's ``LLMEngine``): each
  request is added at its arrival time, at most B in flight (the rest queue here, as at a
  server's door), and the engine is stepped until all are done.

Every time is on the host clock, in ns from the start of the load run. Per request:
queue wait (arrival to admission), TTFT (arrival to first token, queueing included), TPOT
= (E2E − TTFT)/(N − 1) and E2E (arrival to last token): vLLM's definitions, as in
request_times.py.
"""

import random
import time
from collections import deque
from dataclasses import dataclass

from stackbench_worker import HostClock, latency_metrics

# The per-request metrics an SLO may bound (the plan's ``serve.slos[].metric``).
SLO_METRICS = ("ttft", "tpot", "e2e")


def arrival_times_ns(rate_rps, count, seed):
    """``count`` arrival times (ns from the run's start) of a Poisson process at
    ``rate_rps``: exponential inter-arrival gaps of mean 1/rate from ``random.Random(seed)``.
    The first request, too, arrives one gap after the start: N requests then span N gaps,
    and a run's achieved rate (completed / elapsed) is not inflated by N/(N − 1), as it
    would be with a first arrival at 0."""
    if not rate_rps > 0:
        raise ValueError(f"rate must be a positive number of requests/s, got {rate_rps!r}")
    if count < 1:
        raise ValueError(f"a load run needs at least one request, got {count!r}")
    draw = random.Random(seed)
    times, now = [], 0.0
    for _ in range(count):
        now += draw.expovariate(rate_rps)
        times.append(round(now * 1e9))
    return times


@dataclass
class Request:
    """One request of a load run; every time in ns from the run's start."""

    arrival_ns: int
    admitted_ns: int
    first_token_ns: int
    done_ns: int
    tokens: int

    @property
    def queue_wait_ns(self):
        return self.admitted_ns - self.arrival_ns

    @property
    def ttft_ns(self):
        return self.first_token_ns - self.arrival_ns

    @property
    def e2e_ns(self):
        return self.done_ns - self.arrival_ns

    @property
    def tpot_ns(self):
        """None for a one-token request: it has no time per output token."""
        if self.tokens < 2:
            return None
        return (self.e2e_ns - self.ttft_ns) / (self.tokens - 1)

    def value(self, metric):
        return {"ttft": self.ttft_ns, "tpot": self.tpot_ns, "e2e": self.e2e_ns}[metric]


def meets(request, slos):
    """Whether ``request`` meets every SLO (``[{"metric", "bound_ns"}]``). A TPOT bound is
    not judged on a one-token request, which has no TPOT."""
    for slo in slos:
        value = request.value(slo["metric"])
        if value is not None and value > slo["bound_ns"]:
            return False
    return True


class WallClock:
    """The host clock the loops read, and the sleep until the next arrival."""

    def now_ns(self):
        return time.perf_counter_ns()

    def sleep_until_ns(self, deadline_ns):
        delay = deadline_ns - time.perf_counter_ns()
        if delay > 0:
            time.sleep(delay / 1e9)


def serve_in_rounds(arrivals_ns, max_concurrent, run_batch, clock=None):
    """Serves the requests arriving at ``arrivals_ns`` in scheduler rounds of at most
    ``max_concurrent`` (the module's docstring has the form). ``run_batch(k, on_first_token)``
    runs one round of ``k`` requests, calls ``on_first_token()`` once the batch's first
    tokens are chosen, and returns the tokens each request got. Returns (requests in arrival
    order, the run's elapsed ns: start to the last request's end)."""
    if max_concurrent < 1:
        raise ValueError(f"at most {max_concurrent} requests at once serves nothing")
    clock = clock or WallClock()
    start = clock.now_ns()
    waiting = deque(range(len(arrivals_ns)))
    served = [None] * len(arrivals_ns)
    while waiting:
        now = clock.now_ns() - start
        if arrivals_ns[waiting[0]] > now:
            clock.sleep_until_ns(start + arrivals_ns[waiting[0]])
            continue
        admitted = []
        while waiting and len(admitted) < max_concurrent and arrivals_ns[waiting[0]] <= now:
            admitted.append(waiting.popleft())
        first = []
        tokens = run_batch(len(admitted), lambda: first.append(clock.now_ns() - start))
        done = clock.now_ns() - start
        first_ns = first[0] if first else done
        for index in admitted:
            served[index] = Request(arrivals_ns[index], now, first_ns, done, tokens)
    end = max((r.done_ns for r in served), default=0)
    return served, end


def serve_on_engine(arrivals_ns, max_concurrent, engine, clock=None):
    """Serves the requests on an engine that batches by itself. ``engine.add(index)``
    submits request ``index``; ``engine.step()`` runs one engine iteration and returns
    ``[(index, new_tokens, finished)]`` for the requests it advanced; ``engine.busy()``
    says whether any submitted request is unfinished. At most ``max_concurrent`` are in
    flight; the rest wait here in arrival order. Returns (requests, elapsed ns)."""
    if max_concurrent < 1:
        raise ValueError(f"at most {max_concurrent} requests at once serves nothing")
    clock = clock or WallClock()
    start = clock.now_ns()
    waiting = deque(range(len(arrivals_ns)))
    admitted, first, produced, done = {}, {}, {}, {}
    while waiting or engine.busy():
        now = clock.now_ns() - start
        in_flight = len(admitted) - len(done)
        while waiting and in_flight < max_concurrent and arrivals_ns[waiting[0]] <= now:
            index = waiting.popleft()
            engine.add(index)
            admitted[index] = now
            in_flight += 1
        if not engine.busy():
            if waiting:
                clock.sleep_until_ns(start + arrivals_ns[waiting[0]])
            continue
        outputs = engine.step()
        now = clock.now_ns() - start
        for index, new, finished in outputs:
            produced[index] = produced.get(index, 0) + new
            if produced[index] and index not in first:
                first[index] = now
            if finished:
                done[index] = now
    served = [
        Request(arrivals_ns[i], admitted[i], first.get(i, done[i]), done[i], produced.get(i, 0))
        for i in range(len(arrivals_ns))
    ]
    end = max((r.done_ns for r in served), default=0)
    return served, end


def load_summary(requests, elapsed_ns, offered_rps, slos):
    """The figures of one or more load runs (``requests`` pooled, ``elapsed_ns`` summed):
    offered, achieved (completed / elapsed) and goodput (requests meeting every SLO /
    elapsed) rates, SLO attainment, output tokens/s, and queue wait, TTFT, TPOT and E2E
    percentiles under load. No completed request or no elapsed time gives rates of 0,
    never a division error."""
    completed = [r for r in requests if r is not None]
    good = sum(1 for r in completed if meets(r, slos))
    seconds = elapsed_ns / 1e9
    metrics = {
        "offered_rps": offered_rps,
        "achieved_rps": len(completed) / seconds if seconds > 0 else 0.0,
        "goodput_rps": good / seconds if seconds > 0 else 0.0,
        "slo_attainment": good / len(completed) if completed else 0.0,
        "requests_completed": len(completed),
        "requests_good": good,
        "serve_elapsed_ns": int(elapsed_ns),
        "serve_slos": ",".join(s["text"] for s in slos),
        "tokens_per_s": sum(r.tokens for r in completed) / seconds if seconds > 0 else 0.0,
    }
    metrics.update(latency_metrics([r.queue_wait_ns for r in completed], prefix="queue_wait"))
    metrics.update(latency_metrics([r.ttft_ns for r in completed], prefix="ttft"))
    metrics.update(latency_metrics([r.tpot_ns for r in completed if r.tpot_ns is not None], prefix="tpot"))
    metrics.update(latency_metrics([r.e2e_ns for r in completed], prefix="request_e2e"))
    return metrics


class ReplayClock(HostClock):
    """The timed quantity of a serve cell: one request's E2E under load. The worker's timed
    loop reads ``mark()`` around each ``step()``; a serve cell's ``step`` takes the next
    request of its finished load runs and ``advance``s this clock by that request's E2E, so
    a timed call lasts exactly one request's arrival-to-last-token time as measured on the
    host clock during the load run, and Criterion's figure is the mean E2E under load. The
    load runs themselves happen inside ``step`` when no request is left to replay; their
    wall time is outside every mark."""

    name = "serve_request_e2e_replay"

    def __init__(self):
        self.now = 0

    def prepare(self, count):
        """Nothing to allocate."""

    def mark(self):
        return self.now

    def synchronize(self):
        pass

    def elapsed_ns(self, start, end):
        return end - start

    def advance(self, ns):
        self.now += int(ns)
