"""Unit checks of the worker helpers that need no GPU and no third-party package: the
import classification (absent is a skip, broken is a failure), the pre-created CUDA
events, the fd-2 capture, the engine-memory sampler and vLLM's per-request times."""

import os
import sys
import tempfile
import types
import unittest

import helpers  # noqa: F401 -- puts scripts/components/lib on the path

import stackbench_worker as sw
from engine_memory import FREE_METHOD, NVML_METHOD, EngineMemory


def write_package(root, name, body):
    os.makedirs(os.path.join(root, name))
    with open(os.path.join(root, name, "__init__.py"), "w", encoding="utf-8") as init:
        init.write(body)


class ImportClassification(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        sys.path.insert(0, self.dir)

    def tearDown(self):
        sys.path.remove(self.dir)

    def test_a_missing_package_is_absent(self):
        module, reason = sw.import_module("stackbench_no_such_package_xyz")
        self.assertIsNone(module)
        self.assertIn("stackbench_no_such_package_xyz is not installed in", reason)

    def test_a_missing_submodule_of_a_missing_package_is_absent(self):
        error = ModuleNotFoundError("No module named 'torch'", name="torch")
        self.assertTrue(sw.is_absent("torch.nn.attention", error))
        self.assertFalse(sw.is_absent("torchvision", error))

    def test_an_oserror_from_inside_the_package_is_a_failure(self):
        write_package(self.dir, "sb_fake_oserror", "raise OSError('libcudnn.so.9: cannot open shared object file')\n")
        with self.assertRaises(sw.ImportFailure) as caught:
            sw.import_module("sb_fake_oserror")
        self.assertIn("sb_fake_oserror is installed in", str(caught.exception))
        self.assertIn("OSError: libcudnn.so.9: cannot open shared object file", str(caught.exception))

    def test_a_missing_dependency_of_the_package_is_a_failure(self):
        write_package(self.dir, "sb_fake_dep", "import sb_fake_absent_dependency\n")
        with self.assertRaises(sw.ImportFailure) as caught:
            sw.import_modules("os", "sb_fake_dep")
        self.assertIn("No module named 'sb_fake_absent_dependency'", str(caught.exception))

    def test_the_first_absent_module_is_named(self):
        write_package(self.dir, "sb_fake_ok", "VALUE = 1\n")
        modules, reason = sw.import_modules("sb_fake_ok")
        self.assertEqual(modules[0].VALUE, 1)
        self.assertIsNone(reason)
        modules, reason = sw.import_modules("sb_fake_ok", "sb_fake_absent_two")
        self.assertIsNone(modules)
        self.assertIn("sb_fake_absent_two is not installed", reason)


class FakeEvent:
    created = 0

    def __init__(self, enable_timing):
        FakeEvent.created += 1
        self.recorded = 0

    def record(self):
        self.recorded += 1


def fake_torch():
    cuda = types.SimpleNamespace(Event=FakeEvent, synchronize=lambda: None)
    return types.SimpleNamespace(cuda=cuda)


class CountingBench(sw.Benchmark):
    """Notes how many events existed at each step: none may be created inside the loop."""

    def __init__(self, clock, marks_per_step=0):
        self.clock = clock
        self.marks_per_step = marks_per_step
        self.created_at_step = []

    def step(self):
        for _ in range(self.marks_per_step):
            self.clock.mark()
        self.created_at_step.append(FakeEvent.created)


class PreCreatedEvents(unittest.TestCase):
    def run_loop(self, iters, marks_per_step=0):
        clock = sw.CudaClock(fake_torch())
        clock.elapsed_ns = lambda start, end: 1
        bench = CountingBench(clock, marks_per_step)
        before = FakeEvent.created
        sw.timed_loop(bench, iters)
        return bench, clock, before

    def test_events_are_created_before_the_timed_loop(self):
        bench, clock, before = self.run_loop(50)
        self.assertEqual(FakeEvent.created - before, 51)
        self.assertEqual(set(bench.created_at_step), {FakeEvent.created})
        self.assertEqual(clock.created_in_loop, 0)

    def test_marks_taken_by_step_are_pre_created_too(self):
        bench, clock, before = self.run_loop(10, marks_per_step=2)
        self.assertEqual(FakeEvent.created - before, 11 + 20)
        self.assertEqual(clock.created_in_loop, 0)

    def test_long_runs_mark_only_the_ends(self):
        bench, clock, before = self.run_loop(sw.MAX_MARKED_CALLS + 1)
        self.assertEqual(FakeEvent.created - before, 2)
        self.assertEqual(clock.created_in_loop, 0)

    def test_undeclared_marks_are_counted(self):
        clock = sw.CudaClock(fake_torch())
        clock.prepare(1)
        clock.mark()
        clock.mark()
        self.assertEqual(clock.created_in_loop, 1)


class CapturedStderr(unittest.TestCase):
    def test_native_writes_to_fd2_are_captured_and_passed_on(self):
        with tempfile.TemporaryFile() as sink:
            saved = os.dup(2)
            os.dup2(sink.fileno(), 2)
            try:
                with sw.captured_stderr() as log:
                    os.write(2, b"provider failed to load\n")
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            sink.seek(0)
            self.assertEqual(log.text, "provider failed to load\n")
            self.assertIn(b"provider failed to load", sink.read())


class FakeNvml:
    def __init__(self, processes):
        self.processes = processes

    def nvmlDeviceGetComputeRunningProcesses(self, handle):  # noqa: N802 -- NVML's name
        return self.processes


def memory_torch(free_values):
    values = iter(free_values)
    props = types.SimpleNamespace(pci_domain_id=0, pci_bus_id=0x41, pci_device_id=0)
    cuda = types.SimpleNamespace(
        mem_get_info=lambda: (next(values), 80 << 30),
        get_device_properties=lambda index: props,
        current_device=lambda: 0,
    )
    return types.SimpleNamespace(cuda=cuda)


class EngineMemorySampling(unittest.TestCase):
    def test_nvml_counts_this_process_tree_only(self):
        child = 4242
        processes = [
            types.SimpleNamespace(pid=child, usedGpuMemory=30 << 30),
            types.SimpleNamespace(pid=os.getpid(), usedGpuMemory=1 << 30),
            types.SimpleNamespace(pid=999999, usedGpuMemory=50 << 30),
        ]
        nvml = FakeNvml(processes)
        nvml.nvmlDeviceGetHandleByPciBusId = lambda bus: "handle:" + bus
        memory = EngineMemory(memory_torch([70 << 30]), nvml=nvml, children=lambda pid: [child])
        self.assertEqual(memory.handle, "handle:00000000:41:00.0")
        self.assertEqual(memory.sample(), (31 << 30, NVML_METHOD))

    def test_without_a_matching_pid_the_free_memory_drop_is_used(self):
        nvml = FakeNvml([types.SimpleNamespace(pid=999999, usedGpuMemory=50 << 30)])
        nvml.nvmlDeviceGetHandleByPciBusId = lambda bus: "handle"
        memory = EngineMemory(memory_torch([70 << 30, 40 << 30, 45 << 30]), nvml=nvml, children=lambda pid: [])
        self.assertEqual(memory.sample(), (30 << 30, FREE_METHOD))
        # A later, smaller footprint does not lower the peak.
        self.assertEqual(memory.sample(), (30 << 30, FREE_METHOD))


def output(request_id, tokens, finished):
    return types.SimpleNamespace(
        request_id=request_id,
        finished=finished,
        outputs=[types.SimpleNamespace(token_ids=list(range(tokens)))],
    )


class VllmRequestTimes(unittest.TestCase):
    def test_ttft_and_tpot_follow_vllms_definitions(self):
        vllm = helpers.load_worker("vllm")
        times = vllm.RequestTimes(started_ns=1000)
        # Deltas: the tokens new at each step.
        times.observe([output("a", 0, False), output("b", 0, False)], 1500)  # prefill step, no token yet
        times.observe([output("a", 1, False), output("b", 1, False)], 3000)
        times.observe([output("a", 4, True), output("b", 2, False)], 7000)
        times.observe([output("b", 2, True)], 11000)
        rows = sorted(times.per_request())
        # a: TTFT 2000, E2E 6000, TPOT (6000-2000)/4; b: TTFT 2000, E2E 10000, TPOT 2000.
        self.assertEqual(rows, [(2000, 6000, 1000.0, 5), (2000, 10000, 2000.0, 5)])
        metrics = vllm.request_metrics(rows)
        self.assertEqual(metrics["ttft_p50_ns"], 2000)
        self.assertEqual(metrics["tpot_p50_ns"], 1500)
        self.assertEqual(metrics["tpot_p99_ns"], 1990)
        self.assertEqual(metrics["request_e2e_p90_ns"], 9600)
        self.assertEqual(metrics["ttft_calls_observed"], 2)

    def test_a_one_token_request_has_no_tpot(self):
        vllm = helpers.load_worker("vllm")
        times = vllm.RequestTimes(started_ns=0)
        times.observe([output("a", 1, True)], 500)
        self.assertEqual(times.per_request(), [(500, 500, None, 1)])
        self.assertNotIn("tpot_p50_ns", vllm.request_metrics(times.per_request()))


class OnnxRuntimeLabels(unittest.TestCase):
    def test_only_nvidia_providers_are_cuda(self):
        ort = helpers.load_worker("onnxruntime")
        self.assertEqual(ort.component_device(["cpu", "cuda", "tensorrt"]), "cuda")
        self.assertEqual(ort.component_device(["cpu", "rocm", "migraphx"]), "rocm")
        self.assertEqual(ort.component_device(["cpu", "openvino", "dml"]), "cpu")

    def test_a_fallback_names_what_was_asked_and_what_ran(self):
        ort = helpers.load_worker("onnxruntime")
        error = ort.fallback_error("ROCMExecutionProvider", ["CPUExecutionProvider"], "hipErrorNoDevice: no ROCm-capable device\n")
        self.assertIn("did not start ROCMExecutionProvider", str(error))
        self.assertIn("['CPUExecutionProvider']", str(error))
        self.assertIn("hipErrorNoDevice", str(error))


class DeviceCacheBetweenBenchmarks(unittest.TestCase):
    """A benchmark must not run in the blocks its predecessor left in torch's caching
    allocator (an H100 ran out of memory that way): teardown frees the old benchmark and
    empties the cache before the next setup."""

    def test_teardown_frees_the_old_benchmark_and_empties_the_cache(self):
        import weakref

        calls = []
        cuda = types.SimpleNamespace(
            is_available=lambda: True, is_initialized=lambda: True, empty_cache=lambda: calls.append("empty_cache")
        )
        fake_torch = types.SimpleNamespace(cuda=cuda)

        class Held(sw.Benchmark):
            def __init__(self):
                self.cycle = self  # freed only by the collector, as closures over tensors are

        class Component(sw.Component):
            def make(self, benchmark, parameters):
                return Held()

        server = sw._Server(Component())
        saved = sys.modules.get("torch")
        sys.modules["torch"] = fake_torch
        try:
            server.bench = Held()
            old = weakref.ref(server.bench)
            server.teardown()
            self.assertIsNone(old(), "the previous benchmark is still alive after teardown")
            self.assertEqual(calls, ["empty_cache"])
            cuda.is_initialized = lambda: False  # never start CUDA just to empty its cache
            server.bench = Held()
            server.teardown()
            self.assertEqual(calls, ["empty_cache"])
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved


class TeardownAtEndOfInput(unittest.TestCase):
    """A runner that closes the worker's stdin without ``teardown`` (a dropped session)
    still gets the last benchmark torn down: ONNX Runtime's optimised model under /tmp was
    left behind once per benchmark that way."""

    WORKER = """
import os, sys
sys.path.insert(0, {lib!r})
import stackbench_worker as sw

class Bench(sw.Benchmark):
    def __init__(self, marker):
        self.marker = marker
    def step(self):
        pass
    def teardown(self):
        with open(self.marker, "w") as f:
            f.write("torn down")

class Marked(sw.Component):
    def describe(self):
        return {{"component": "marked", "available": True, "benchmarks": []}}
    def make(self, benchmark, parameters):
        return Bench(parameters)

sw.main(Marked)
"""

    def run_worker(self, requests):
        import json
        import subprocess

        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "marked.py")
            with open(script, "w") as f:
                f.write(self.WORKER.format(lib=helpers.LIB))
            marker = os.path.join(tmp, "marker")
            lines = "".join(json.dumps(r).replace("MARKER", marker) + "\n" for r in requests)
            done = subprocess.run([sys.executable, script], input=lines, capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 0, done.stderr)
            answers = [json.loads(line) for line in done.stdout.splitlines()]
            self.assertTrue(all(a["ok"] for a in answers), answers)
            return os.path.exists(marker)

    def test_the_last_benchmark_is_torn_down_when_stdin_closes(self):
        setup = {"id": 1, "op": "setup", "benchmark": "b", "parameters": "MARKER"}
        self.assertTrue(self.run_worker([setup]), "no teardown at end of input")

    def test_without_a_benchmark_nothing_is_torn_down(self):
        self.assertFalse(self.run_worker([{"id": 1, "op": "describe"}]))


if __name__ == "__main__":
    unittest.main()
