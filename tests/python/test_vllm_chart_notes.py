"""The vLLM chart (tokens/s against batch with a p99..p50 bar) reads ``tokens_per_s``,
``e2e_p50_ns`` and ``e2e_p99_ns`` from the worker's notes (crates/dashboard/src/view/component_model.rs):
the worker's metrics must carry exactly those keys, with the p50 and p99 of the timed
calls and tokens/s over their total time. vLLM itself is not needed: the metrics are
computed from the call latencies and the per-request rows the step loop collected."""

import unittest

import helpers

vllm_worker = helpers.load_worker("vllm")


class FakeMemory:
    def sample(self):
        return 123, "fake"


class VllmChartNotes(unittest.TestCase):
    def test_the_chart_keys_are_written_per_batch(self):
        offline = vllm_worker.Offline.__new__(vllm_worker.Offline)
        offline.batch, offline.out_len = 8, 128
        offline.short_requests = 0
        offline.requests = [(2_000_000, 900_000_000, 7_000_000.0, 128)] * 8
        offline.memory = FakeMemory()
        latencies = [1_000_000_000 + 10_000_000 * i for i in range(100)]
        metrics = offline.metrics(latencies)
        self.assertEqual(metrics["e2e_p50_ns"], vllm_worker.latency_metrics(latencies, "e2e")["e2e_p50_ns"])
        self.assertGreater(metrics["e2e_p99_ns"], metrics["e2e_p50_ns"])
        seconds = sum(latencies) / 1e9
        self.assertAlmostEqual(metrics["tokens_per_s"], 8 * 128 * 100 / seconds)
        # The chart's bar: tokens/s of a p99 call below the overall rate, of a p50 call above.
        at = lambda ns: 8 * 128 * 1e9 / ns  # noqa: E731
        self.assertLess(at(metrics["e2e_p99_ns"]), metrics["tokens_per_s"])
        self.assertGreater(at(metrics["e2e_p50_ns"]), at(metrics["e2e_p99_ns"]))
        self.assertEqual(metrics["peak_memory_bytes"], 123)


if __name__ == "__main__":
    unittest.main()
