"""Triton's compile time is taken on a cold cache: the installed Triton's in-process
variants can be dropped, each measurement gets a fresh cache folder, and a launch that
wrote nothing there (a cache hit) gives no number. Needs triton (it comes with the Linux
torch wheel); no GPU: the launch is a stub."""

import os
import tempfile
import unittest

import helpers

try:
    import triton_kernels
except ModuleNotFoundError:
    triton_kernels = None


@unittest.skipIf(triton_kernels is None, "triton is not installed in this interpreter")
class ColdCompile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.worker = helpers.load_worker("triton")

    def bench(self, writes_files):
        bench = self.worker.TritonBenchmark.__new__(self.worker.TritonBenchmark)
        bench.kernel = triton_kernels.vector_add_kernel
        self.caches = []

        def first_launch_cost():
            cache = os.environ["TRITON_CACHE_DIR"]
            self.caches.append(cache)
            if writes_files:
                with open(os.path.join(cache, "vector_add_kernel.cubin"), "wb") as out:
                    out.write(b"\0")
            return 123456

        bench.first_launch_cost = first_launch_cost
        return bench

    def test_the_installed_tritons_in_process_cache_can_be_dropped(self):
        kernel = triton_kernels.vector_add_kernel
        kernel.device_caches[0] = ("compiled variants",)  # what a launch on device 0 leaves
        self.assertTrue(triton_kernels.forget_compiled(kernel))
        self.assertEqual(len(kernel.device_caches), 0)

    def test_each_measurement_gets_a_fresh_cache(self):
        root = tempfile.mkdtemp()
        bench = self.bench(writes_files=True)
        first = bench.cold_compile_cost(triton_kernels, root)
        second = bench.cold_compile_cost(triton_kernels, root)
        self.assertEqual(first, (123456, None))
        self.assertEqual(second, (123456, None))
        self.assertNotEqual(self.caches[0], self.caches[1])
        self.assertTrue(all(cache.startswith(root) for cache in self.caches))

    def test_a_launch_that_compiled_nothing_gives_no_number(self):
        ns, note = self.bench(writes_files=False).cold_compile_cost(triton_kernels, tempfile.mkdtemp())
        self.assertIsNone(ns)
        self.assertIn("no compile happened", note)


if __name__ == "__main__":
    unittest.main()
