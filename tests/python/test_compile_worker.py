"""The compile worker (scripts/components/compile.py) times compiles, never cache hits: a
Triton sample must start from an empty cache folder and fill it, a cold torch.compile
sample must miss Inductor's FX graph cache, and a sample that does not is refused. Needs
triton and torch (the component virtualenv); no GPU: Triton compiles for a named target."""

import os
import tempfile
import unittest

import helpers
from stackbench_worker import Mismatch

try:
    import triton
except ModuleNotFoundError:
    triton = None
try:
    import torch
except ModuleNotFoundError:
    torch = None


class Cases(unittest.TestCase):
    def test_bad_cases_are_refused_with_the_variable_named(self):
        worker = helpers.load_worker("compile")
        os.environ[worker.CASES_ENV] = "[{]"
        try:
            with self.assertRaisesRegex(ValueError, worker.CASES_ENV):
                worker.read_cases()
            os.environ[worker.CASES_ENV] = '[{"benchmark": "softmax"}]'
            with self.assertRaisesRegex(ValueError, "parameters"):
                worker.read_cases()
        finally:
            del os.environ[worker.CASES_ENV]


@unittest.skipIf(triton is None, "triton is not installed in this interpreter")
class TritonSamples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.worker = helpers.load_worker("compile")

    def bench(self):
        bench = self.worker.TritonCompile(triton, "vector_add", "16777216_sm90")
        self.addCleanup(bench.teardown)
        return bench

    def test_each_sample_compiles_into_its_own_empty_folder(self):
        bench = self.bench()
        folders = []
        prepare = bench.prepare_sample

        def recorded():
            state = prepare()
            folders.append(state[0])
            return state

        bench.prepare_sample = recorded
        total, per_call = bench.timed_run(2)
        self.assertEqual(bench.proven, 2)
        self.assertEqual(total, sum(per_call))
        self.assertEqual(len(set(folders)), 2)
        for folder in folders:
            self.assertTrue(any(name.endswith(".cubin") for name in self.worker.files_under(folder)))

    def test_a_sample_that_starts_from_a_filled_cache_is_refused(self):
        bench = self.bench()
        bench.verify()
        filled = os.environ["TRITON_CACHE_DIR"]
        bench.prepare_sample = lambda: (filled, self.worker.files_under(filled))
        with self.assertRaisesRegex(Mismatch, "before the compile"):
            bench.one_sample()
        self.assertEqual(bench.proven, 1)

    def test_a_compile_served_from_another_cache_is_refused(self):
        bench = self.bench()
        bench.verify()
        filled = os.environ["TRITON_CACHE_DIR"]
        empty = tempfile.mkdtemp()

        def hit_elsewhere():
            os.environ["TRITON_CACHE_DIR"] = filled  # the compile is a hit there
            return empty, {}

        bench.prepare_sample = hit_elsewhere
        with self.assertRaisesRegex(Mismatch, "no compile happened"):
            bench.one_sample()
        os.rmdir(empty)

    def test_verify_shows_that_a_hit_writes_nothing_and_is_fast(self):
        bench = self.bench()
        bench.verify()
        self.assertGreater(bench.binary_bytes, 0)
        self.assertIsNotNone(bench.hit_ns)


@unittest.skipIf(torch is None, "torch is not installed in this interpreter")
class TorchColdSamples(unittest.TestCase):
    def test_a_cold_sample_served_by_a_populated_cache_is_refused(self):
        worker = helpers.load_worker("compile")
        bench = worker.TorchCompile(torch, "mlp", "cold")
        self.addCleanup(bench.teardown)
        bench.verify()
        populated = os.environ["TORCHINDUCTOR_CACHE_DIR"]

        def reuse():
            bench.point_caches_at(populated)
            bench.reset()
            bench.clear()
            return populated, {}, bench.counts()

        bench.prepare_sample = reuse
        with self.assertRaisesRegex(Mismatch, "not a cold compile"):
            bench.one_sample()
        self.assertEqual(bench.proven, 1)


if __name__ == "__main__":
    unittest.main()
