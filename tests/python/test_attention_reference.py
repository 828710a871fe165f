"""The chunked float64 attention reference against the whole materialised one, on the CPU
at small sizes, with budgets that force each way of chunking; and the check built on it
must fail a wrong output (zeros, swapped query rows, a small scaling error, NaN, a wrong
shape). Needs torch (the CPU stack's virtualenv)."""

import unittest

import helpers  # noqa: F401 -- puts scripts/components/lib on the path

try:
    import torch
except ModuleNotFoundError:  # the runner uses the venv; a bare interpreter says so
    torch = None

import attention_reference as ref

F32_TOLERANCE = 1e-4  # attention.py's TOLERANCE["f32"]


def full_reference(q, k, v, causal):
    q, k, v = q.double(), k.double(), v.double()
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    if causal:
        s = q.shape[-2]
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def inputs(b, h, s, d, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, s, d, generator=generator) for _ in range(3)]


def score_bytes(rows, seq):
    return ref.TEMPORARIES_PER_SCORE * ref.FLOAT64_BYTES * rows * seq


@unittest.skipIf(torch is None, "torch is not installed in this interpreter")
class ChunkedReference(unittest.TestCase):
    # (budget, expected plan) at b2_h3_s40: several heads per chunk, one head, row blocks.
    BUDGETS = [
        (score_bytes(40, 40) * 4, (4, 40)),
        (score_bytes(40, 40), (1, 40)),
        (score_bytes(7, 40), (1, 7)),
        (score_bytes(1, 40), (1, 1)),
    ]

    def test_every_way_of_chunking_equals_the_whole_reference(self):
        q, k, v = inputs(2, 3, 40, 8)
        for causal in (False, True):
            want = full_reference(q, k, v, causal).reshape(6, 40, 8)
            for budget, plan in self.BUDGETS:
                self.assertEqual(ref.chunk_plan(6, 40, budget), plan)
                covered = torch.zeros(6, 40, dtype=torch.int64)
                for (heads, rows), chunk in ref.reference_chunks(torch, q, k, v, causal, budget):
                    self.assertEqual(chunk.dtype, torch.float64)
                    torch.testing.assert_close(chunk, want[heads, rows], rtol=0, atol=1e-12)
                    covered[heads, rows] += 1
                self.assertTrue(bool((covered == 1).all()), f"budget {budget}, causal {causal}")

    def test_the_exact_output_passes_and_a_float32_one_is_within_tolerance(self):
        q, k, v = inputs(2, 3, 40, 8, seed=1)
        for causal in (False, True):
            exact = full_reference(q, k, v, causal)
            error, why = ref.max_relative_error(torch, exact, q, k, v, causal, score_bytes(7, 40))
            self.assertIsNone(why)
            self.assertLess(error, 1e-12)
            sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            error, _ = ref.max_relative_error(torch, sdpa, q, k, v, causal, score_bytes(7, 40))
            self.assertLess(error, F32_TOLERANCE)

    def test_wrong_outputs_fail(self):
        q, k, v = inputs(1, 2, 32, 8, seed=2)
        good = full_reference(q, k, v, causal=True).float()
        budget = score_bytes(5, 32)
        wrong = {
            "zeros": torch.zeros_like(good),
            "query rows swapped": good.flip(-2),
            "heads swapped": good.flip(1),
            "not causal": full_reference(q, k, v, causal=False).float(),
            "0.1% too large": good * 1.001,
        }
        for name, output in wrong.items():
            error, why = ref.max_relative_error(torch, output, q, k, v, True, budget)
            self.assertIsNone(why, name)
            self.assertGreater(error, F32_TOLERANCE, name)
        bad = good.clone()
        bad[0, 1, 17, 3] = float("nan")
        self.assertEqual(ref.max_relative_error(torch, bad, q, k, v, True, budget), (None, "output has non-finite values"))
        error, why = ref.max_relative_error(torch, good[:, :, :-1], q, k, v, True, budget)
        self.assertIsNone(error)
        self.assertIn("shape", why)

    def test_a_row_over_the_budget_is_refused(self):
        with self.assertRaises(ValueError):
            ref.chunk_plan(16, 8192, score_bytes(1, 8192) - 1)

    def test_the_full_suite_shape_fits_the_default_budget(self):
        # b8_h16_s8192: 68.7 GB of float64 scores whole; one head's rows per chunk here.
        heads, rows = ref.chunk_plan(8 * 16, 8192)
        self.assertEqual(heads, 1)
        self.assertLessEqual(score_bytes(rows, 8192), ref.DEFAULT_BUDGET_BYTES)
        self.assertGreater(8 * 16 * 8192 * 8192 * 8, 68e9)


if __name__ == "__main__":
    unittest.main()
