"""Per-call timing for the reference scripts, the way Criterion's median is taken: one
warm-up call (thread pool start, library primitive creation, page faults), then calls until
both ``min_calls`` calls and ``budget_s`` seconds are done."""
import time


def median_and_best(fn, budget_s=2.0, min_calls=5):
    """The median and the fastest per-call seconds of ``fn``."""
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_calls or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2], times[0]
