"""The GPU-sweep checker must fail each defect it exists for: memory from the host's
resident set or reading 0 (the wrong device index), a cell on the CPU, energy from
nowhere or both a figure and a reason, MFU over 1, TTFT above the end-to-end latency, a
failure, a skip without a reason, and a record that measured nothing; and pass a record
with none of them."""

import copy
import unittest

import helpers

check = helpers.load_worker("check_gpu_sweep")

DECODE = "models/torch/gpt2-small-bf16-decode/b8_s512"
FORWARD = "models/onnxruntime/bert-base-fp16-forward/b8_s512"


def cell(phase, **extra):
    notes = {
        "device": "cuda",
        "phase": phase,
        "memory_method": "cuda_max_memory_allocated",
        "memory_peak_bytes": 1.2e9,
        "memory_avg_bytes": 1.1e9,
        "energy_j_per_token": 0.3,
        "energy_method": "nvml_total_energy",
        "mfu": 0.41,
        "e2e_p50_ns": 2e8,
        "e2e_p90_ns": 2.1e8,
        "e2e_p99_ns": 2.2e8,
    }
    if phase == "decode":
        notes.update(new_tokens=16, ttft_p50_ns=2e7, ttft_p90_ns=2.1e7, ttft_p99_ns=2.3e7)
    notes.update(extra)
    return {"outcome": "measured", "notes": notes}


GOOD = {
    "benchmarks": {
        DECODE: cell("decode"),
        FORWARD: cell("forward", energy_j_per_token=None, energy_method=None),
        "models/vllm/t5-small-fp32-forward/b1_s128": {"outcome": "skipped", "reason": "the vllm backend serves decoder LMs"},
    }
}
# A cell with no energy counter says why instead.
del GOOD["benchmarks"][FORWARD]["notes"]["energy_j_per_token"]
del GOOD["benchmarks"][FORWARD]["notes"]["energy_method"]
GOOD["benchmarks"][FORWARD]["notes"]["energy_unavailable"] = "NVML: not supported"


def broken(bench_id, **changes):
    report = copy.deepcopy(GOOD)
    notes = report["benchmarks"][bench_id]["notes"]
    for key, value in changes.items():
        if value is None:
            notes.pop(key, None)
        else:
            notes[key] = value
    return report


class GpuSweepChecker(unittest.TestCase):
    def test_a_good_record_passes(self):
        problems, measured = check.problems_in(GOOD, "cuda")
        self.assertEqual(problems, [])
        self.assertEqual(measured, 2)

    def test_each_defect_fails(self):
        failed = copy.deepcopy(GOOD)
        failed["benchmarks"][DECODE] = {"outcome": "failed", "error": "CUDA out of memory"}
        unreasoned = copy.deepcopy(GOOD)
        unreasoned["benchmarks"]["models/vllm/t5-small-fp32-forward/b1_s128"]["reason"] = ""
        nothing = {"benchmarks": {"models/vllm/x-fp16-decode/b1_s128": {"outcome": "skipped", "reason": "not installed"}}}
        cases = {
            "host memory": broken(DECODE, memory_method="cpu_rss_sampled"),
            "memory reads 0": broken(DECODE, memory_peak_bytes=0),
            "average above peak": broken(DECODE, memory_avg_bytes=2e9),
            "ran on the cpu": broken(DECODE, device="cpu"),
            "energy from nowhere": broken(DECODE, energy_j_per_token=None, energy_method=None),
            "energy figure and reason": broken(DECODE, energy_unavailable="why"),
            "energy not from nvml": broken(DECODE, energy_method="rapl:package-0"),
            "mfu over 1": broken(DECODE, mfu=1.7),
            "ttft above e2e": broken(DECODE, ttft_p99_ns=3e8),
            "decode without new_tokens": broken(DECODE, new_tokens=None),
            "a failure": failed,
            "a skip without a reason": unreasoned,
            "nothing measured": nothing,
        }
        for name, report in cases.items():
            with self.subTest(name):
                problems, _ = check.problems_in(report, "cuda")
                self.assertTrue(problems, f"{name} passed the checker")

    def test_rocm_memory_is_its_own_counter(self):
        problems, _ = check.problems_in(GOOD, "rocm")
        self.assertTrue(any("not rocm" in p for p in problems), problems)
        self.assertTrue(any("memory from" in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main()
