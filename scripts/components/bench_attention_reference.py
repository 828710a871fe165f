"""Times the chunked float64 attention reference (lib/attention_reference.py) against the
whole materialised one on the CPU, and reports each one's peak resident-memory rise, so
BENCHMARKS.md can say what chunking costs. Needs torch.

Usage: python scripts/components/bench_attention_reference.py [b h s d] (default 4 8 2048 64,
the full CPU suite's largest attention shape)
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import torch  # noqa: E402

import attention_reference as ref  # noqa: E402
from torch_common import peak_memory  # noqa: E402


def whole(q, k, v):
    scores = (q.double() @ k.double().transpose(-2, -1)) * q.shape[-1] ** -0.5
    return torch.softmax(scores, dim=-1) @ v.double()


def timed(label, fn):
    started = time.perf_counter_ns()
    peak, method = peak_memory(torch, "cpu", fn)
    seconds = (time.perf_counter_ns() - started) / 1e9
    print(f"{label}: {seconds:.2f} s, peak rise {peak / 2**20:.0f} MiB ({method})")


def main(b, h, s, d):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, generator=generator) for _ in range(3))
    got = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    print(f"b{b}_h{h}_s{s}_d{d} f32, torch {torch.__version__}, {torch.get_num_threads()} threads")
    timed("whole float64 reference", lambda: whole(q, k, v))
    for budget in (ref.DEFAULT_BUDGET_BYTES, 64 << 20):
        plan = ref.chunk_plan(b * h, s, budget)
        timed(
            f"chunked, budget {budget >> 20} MiB (heads x rows per chunk {plan})",
            lambda budget=budget: ref.max_relative_error(torch, got, q, k, v, False, budget),
        )


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:5]) if len(sys.argv) == 5 else (4, 8, 2048, 64))
