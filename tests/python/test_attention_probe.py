"""The attention worker's probes with the CPU torch: "no kernel for these inputs here" is
a skip; any other probe error (a CUDA error, a broken flash-attn) is not a skip in
``describe`` and fails the benchmark in ``make``. Needs torch."""

import os
import sys
import tempfile
import unittest
from unittest import mock

import helpers

try:
    import torch
except ModuleNotFoundError:
    torch = None

SHAPE = (2, 8, 512, 64, "f32", False)


@unittest.skipIf(torch is None, "torch is not installed in this interpreter")
class AttentionProbes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.worker = helpers.load_worker("attention")
        cls.component = cls.worker.Attention()

    def test_a_backend_without_a_kernel_here_is_a_skip(self):
        reason = self.component.skip_reason("sdpa_efficient", SHAPE)
        self.assertIn("SDPA backend EFFICIENT_ATTENTION cannot run on cpu", reason)

    def test_a_cuda_error_in_the_probe_is_not_a_skip(self):
        error = RuntimeError("CUDA error: an illegal memory access was encountered")
        with mock.patch.object(torch.nn.functional, "scaled_dot_product_attention", side_effect=error):
            with self.assertRaises(RuntimeError):
                self.component.skip_reason("sdpa_math", SHAPE)
            self.assertIsNone(self.component.offered_skip("sdpa_math", SHAPE))
            with self.assertRaises(RuntimeError) as caught:
                self.component.make("sdpa_math", self.worker.params_id(*SHAPE))
        self.assertIn("illegal memory access", str(caught.exception))

    def test_a_broken_flash_attn_fails_its_ids_only(self):
        root = tempfile.mkdtemp()
        os.makedirs(os.path.join(root, "flash_attn"))
        with open(os.path.join(root, "flash_attn", "__init__.py"), "w", encoding="utf-8") as init:
            init.write("raise ImportError('flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')\n")
        sys.path.insert(0, root)
        try:
            self.assertIsNone(self.component.offered_skip("flash_attn", SHAPE))
            with self.assertRaises(Exception) as caught:
                self.component.make("flash_attn", self.worker.params_id(*SHAPE))
            self.assertIn("flash_attn is installed in", str(caught.exception))
            self.assertIn("undefined symbol", str(caught.exception))
            # The component's other ids are untouched.
            self.assertIsNone(self.component.offered_skip("sdpa_math", SHAPE))
        finally:
            sys.path.remove(root)
            sys.modules.pop("flash_attn", None)


if __name__ == "__main__":
    unittest.main()
