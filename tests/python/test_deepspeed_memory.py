"""DeepSpeed's memory phases (the dashboard's stacked bars) read on a fake torch allocator
and a fake engine: at rest before the forward, after backward with the gradients, and the
peak over the step, each what the allocator held at that point; and the worker's metrics
carry them. No GPU or DeepSpeed here: on a GPU, ci/gpu_tests.sh checks the real notes
(scripts/components/check_gpu_run.py)."""

import types
import unittest

import helpers

deepspeed_worker = helpers.load_worker("deepspeed")

PARAMS_AND_STATE = 1000
ACTIVATIONS = 300
GRADIENTS = 200


class FakeCuda:
    """torch.cuda's allocator counters over a running total."""

    def __init__(self):
        self.allocated = PARAMS_AND_STATE
        self.peak = self.allocated

    def add(self, n):
        self.allocated += n
        self.peak = max(self.peak, self.allocated)

    def memory_allocated(self):
        return self.allocated

    def max_memory_allocated(self):
        return self.peak


class FakeOutput:
    """engine(x): ``.float().square().mean()`` is the loss, as the worker writes it."""

    def float(self):
        return self

    def square(self):
        return self

    def mean(self):
        return self


class FakeEngine:
    """Forward holds activations; backward frees them and makes gradients; step frees the
    gradients (as ``zero_grad`` at the end of a DeepSpeed step does)."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.calls = []

    def __call__(self, x):
        self.calls.append("forward")
        self.cuda.add(ACTIVATIONS)
        return FakeOutput()

    def backward(self, loss):
        self.calls.append("backward")
        self.cuda.add(GRADIENTS + 50)
        self.cuda.add(-ACTIVATIONS - 50)

    def step(self):
        self.calls.append("step")
        self.cuda.add(-GRADIENTS)


class MemoryPhases(unittest.TestCase):
    def setUp(self):
        self.cuda = FakeCuda()
        self.torch = types.SimpleNamespace(cuda=self.cuda)
        self.engine = FakeEngine(self.cuda)

    def test_each_phase_reads_what_the_allocator_held_then(self):
        phases = deepspeed_worker.memory_phases(self.torch, self.engine, x=None)
        self.assertEqual(self.engine.calls, ["forward", "backward", "step"])
        self.assertEqual(phases["memory_at_rest_bytes"], PARAMS_AND_STATE)
        self.assertEqual(phases["memory_after_backward_bytes"], PARAMS_AND_STATE + GRADIENTS)
        # The step's high-water mark: activations and the backward's temporaries on top.
        self.assertEqual(self.cuda.peak, PARAMS_AND_STATE + ACTIVATIONS + GRADIENTS + 50)
        self.assertIn("memory_allocated", phases["memory_phases"])

    def test_the_metrics_carry_the_phases_beside_the_peak(self):
        step = deepspeed_worker.ZeroStep.__new__(deepspeed_worker.ZeroStep)
        step.torch = self.torch
        step.phases = deepspeed_worker.memory_phases(self.torch, self.engine, x=None)
        metrics = step.metrics([1000, 1200, 1100])
        self.assertEqual(metrics["peak_memory_bytes"], self.cuda.peak)
        self.assertEqual(metrics["memory_at_rest_bytes"], PARAMS_AND_STATE)
        self.assertEqual(metrics["memory_after_backward_bytes"], PARAMS_AND_STATE + GRADIENTS)
        self.assertGreaterEqual(metrics["peak_memory_bytes"], metrics["memory_after_backward_bytes"])


if __name__ == "__main__":
    unittest.main()
