"""``torch_common.device_kind`` on fake torches: a GPU build that cannot use the GPU whose
driver node is present is a failure (a broken stack), not a CPU machine; a CPU build, a
machine without the node, or GPUs hidden on purpose are the CPU."""

import os
import tempfile
import types
import unittest
import warnings
from unittest import mock

import helpers  # noqa: F401 -- puts scripts/components/lib on the path

import torch_common


def fake_torch(available, cuda="13.2", hip=None, warning=None):
    def is_available():
        if warning:
            warnings.warn(warning)
        return available

    return types.SimpleNamespace(
        __version__="9.9.9+fake",
        cuda=types.SimpleNamespace(is_available=is_available),
        version=types.SimpleNamespace(cuda=cuda, hip=hip),
    )


class DeviceKind(unittest.TestCase):
    def setUp(self):
        self.node = tempfile.NamedTemporaryFile()
        self.nodes = {"cuda": self.node.name, "rocm": self.node.name}
        self.absent = {"cuda": "/nonexistent/nvidiactl", "rocm": "/nonexistent/kfd"}
        clean = {k: v for k, v in os.environ.items() if k not in torch_common.HIDING_VARIABLES}
        patcher = mock.patch.dict(os.environ, clean, clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.addCleanup(self.node.close)

    def test_a_usable_gpu(self):
        self.assertEqual(torch_common.device_kind(fake_torch(True), self.nodes), "cuda")
        self.assertEqual(torch_common.device_kind(fake_torch(True, cuda=None, hip="7.1"), self.nodes), "rocm")

    def test_a_gpu_build_that_cannot_use_the_present_gpu_fails_with_torchs_warning(self):
        torch = fake_torch(False, warning="CUDA initialization: The NVIDIA driver on your system is too old (found version 12020)")
        with self.assertRaises(RuntimeError) as caught:
            torch_common.device_kind(torch, self.nodes)
        self.assertIn("built for cuda 13.2", str(caught.exception))
        self.assertIn("driver on your system is too old", str(caught.exception))

    def test_no_gpu_node_a_cpu_build_or_hidden_gpus_are_the_cpu(self):
        self.assertEqual(torch_common.device_kind(fake_torch(False), self.absent), "cpu")
        self.assertEqual(torch_common.device_kind(fake_torch(False, cuda=None), self.nodes), "cpu")
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": ""}):
            self.assertEqual(torch_common.device_kind(fake_torch(False), self.nodes), "cpu")


class TorchFacts(unittest.TestCase):
    def test_the_build_versions_are_recorded_on_the_cpu_too(self):
        torch = fake_torch(False)
        torch.get_num_threads = lambda: 2
        facts = torch_common.torch_facts(torch, "cpu")
        self.assertEqual((facts["cuda_version"], facts["hip_version"]), ("13.2", None))
        cpu_only = fake_torch(False, cuda=None)
        cpu_only.get_num_threads = lambda: 2
        self.assertIsNone(torch_common.torch_facts(cpu_only, "cpu")["cuda_version"])


if __name__ == "__main__":
    unittest.main()
