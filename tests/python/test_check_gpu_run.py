"""The GPU-run checker must fail each defect it exists for: a Triton compile read from a
warm cache (0), an ORT GPU id that ran on the CPU, vLLM without per-request times or
engine memory, DeepSpeed without its memory phases, torch on the CPU, a failure; and pass
a record with none of them."""

import copy
import unittest

import helpers

check = helpers.load_worker("check_gpu_run")


def entry(outcome, **notes):
    if outcome == "failed":
        return {"outcome": "failed", "error": "boom"}
    return {"outcome": outcome, "notes": notes}


GOOD = {
    "benchmarks": {
        "components/pytorch/matmul/bf16_4096x4096x4096": entry("measured", device="cuda"),
        "components/attention/sdpa_flash/b4_h16_s2048_d64_bf16": entry("measured", device="cuda"),
        "components/triton/vector_add/triton_16777216": entry("measured", implementation="triton", compile_time_ns=812345678),
        "components/triton/vector_add/torch_16777216": entry("measured", implementation="torch", compile_time_ns=None),
        "components/onnxruntime/transformer_block/cuda_all_b1_s128": entry(
            "measured", session_providers=["CUDAExecutionProvider", "CPUExecutionProvider"]
        ),
        "components/vllm/offline/b8_in128_out128": entry(
            "measured", ttft_p50_ns=9e6, ttft_p99_ns=1e7, tpot_p50_ns=8e6, tpot_p99_ns=9e6,
            peak_memory_bytes=7e10, peak_memory_method="nvml",
        ),
        "components/deepspeed/zero_step/stage3_ranks1_d1024_t4096": entry(
            "measured", world_size=1, partitioning="none: one rank holds every shard",
            memory_at_rest_bytes=1.1e9, memory_after_backward_bytes=1.3e9, peak_memory_bytes=1.7e9,
        ),
        "components/migraphx/transformer_block/gpu_b1_s128": entry("skipped"),
    }
}


def broken(bench_id, **changes):
    report = copy.deepcopy(GOOD)
    target = report["benchmarks"][bench_id]
    if changes.pop("fail", False):
        report["benchmarks"][bench_id] = entry("failed")
    else:
        target["notes"].update(changes)
    return report


class GpuRunChecker(unittest.TestCase):
    def test_a_good_record_passes(self):
        self.assertEqual(check.problems_in(GOOD), [])

    def test_each_defect_fails(self):
        cases = {
            "warm triton compile": broken("components/triton/vector_add/triton_16777216", compile_time_ns=0),
            "uncertain triton compile": broken("components/triton/vector_add/triton_16777216", compile_time_ns=None),
            "ort cpu fallback": broken(
                "components/onnxruntime/transformer_block/cuda_all_b1_s128", session_providers=["CPUExecutionProvider"]
            ),
            "vllm without ttft": broken("components/vllm/offline/b8_in128_out128", ttft_p50_ns=None),
            "vllm without memory": broken("components/vllm/offline/b8_in128_out128", peak_memory_bytes=0),
            "torch on cpu": broken("components/pytorch/matmul/bf16_4096x4096x4096", device="cpu"),
            "unlabelled one rank": broken("components/deepspeed/zero_step/stage3_ranks1_d1024_t4096", partitioning=None),
            "deepspeed without phases": broken(
                "components/deepspeed/zero_step/stage3_ranks1_d1024_t4096", memory_after_backward_bytes=None
            ),
            "deepspeed phase above peak": broken(
                "components/deepspeed/zero_step/stage3_ranks1_d1024_t4096", memory_at_rest_bytes=2e9
            ),
            "a failure": broken("components/migraphx/transformer_block/gpu_b1_s128", fail=True),
        }
        for name, report in cases.items():
            self.assertNotEqual(check.problems_in(report), [], name)


if __name__ == "__main__":
    unittest.main()
