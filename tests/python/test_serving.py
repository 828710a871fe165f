"""Unit checks of lib/serving.py, the serve cells' load runs: the seeded Poisson arrivals,
the two schedulers on a fake clock (no model, no sleeping), goodput counting only requests
that meet every SLO, and zero completed requests giving rates of 0."""

import unittest

import helpers  # noqa: F401 -- puts scripts/components/lib on the path

import serving
from serving import Request, arrival_times_ns, load_summary, meets, serve_in_rounds, serve_on_engine

MS = 1_000_000
TTFT_1S = {"text": "ttft<=1s", "metric": "ttft", "bound_ns": 1e9}
TPOT_100MS = {"text": "tpot<=100ms", "metric": "tpot", "bound_ns": 1e8}


class FakeClock:
    """Time moves only when a round runs or the loop sleeps."""

    def __init__(self):
        self.now = 5_000  # not 0: the loops must measure from their own start
        self.sleeps = 0

    def now_ns(self):
        return self.now

    def sleep_until_ns(self, deadline):
        self.sleeps += 1
        self.now = max(self.now, deadline)


class Arrivals(unittest.TestCase):
    def test_mean_gap_is_one_over_the_rate_and_the_seed_repeats(self):
        times = arrival_times_ns(4.0, 4000, seed=7)
        gaps = [b - a for a, b in zip([0, *times], times, strict=False)]
        self.assertEqual(len(gaps), 4000)
        self.assertGreater(times[0], 0)
        self.assertTrue(all(g >= 0 for g in gaps))
        mean_s = sum(gaps) / len(gaps) / 1e9
        # 4000 exponential gaps: the mean's standard error is 1/(4·√4000) ≈ 0.4 %.
        self.assertAlmostEqual(mean_s, 0.25, delta=0.25 * 0.05)
        # Poisson: the gaps' standard deviation equals their mean.
        var = sum((g / 1e9 - mean_s) ** 2 for g in gaps) / len(gaps)
        self.assertAlmostEqual(var**0.5 / mean_s, 1.0, delta=0.1)
        self.assertEqual(times, arrival_times_ns(4.0, 4000, seed=7))
        self.assertNotEqual(times, arrival_times_ns(4.0, 4000, seed=8))

    def test_bad_rates_and_counts_are_refused(self):
        for rate in (0, -1, float("nan")):
            with self.assertRaises(ValueError):
                arrival_times_ns(rate, 3, 0)
        with self.assertRaises(ValueError):
            arrival_times_ns(1.0, 0, 0)


class Goodput(unittest.TestCase):
    def request(self, ttft_ms, e2e_ms, tokens=11):
        return Request(arrival_ns=0, admitted_ns=0, first_token_ns=ttft_ms * MS, done_ns=e2e_ms * MS, tokens=tokens)

    def test_a_request_missing_one_slo_is_not_good(self):
        slos = [TTFT_1S, TPOT_100MS]
        fine = self.request(500, 1500)  # tpot 100 ms: on the bound is met
        slow_first = self.request(1200, 1700)  # tpot 50 ms, ttft over
        slow_tokens = self.request(100, 2100)  # ttft fine, tpot 200 ms
        self.assertEqual(fine.tpot_ns, 100 * MS)
        self.assertTrue(meets(fine, slos))
        self.assertFalse(meets(slow_first, slos))
        self.assertFalse(meets(slow_tokens, slos))
        summary = load_summary([fine, slow_first, slow_tokens], 2 * 10**9, 2.0, slos)
        self.assertEqual(summary["requests_good"], 1)
        self.assertEqual(summary["goodput_rps"], 0.5)
        self.assertEqual(summary["achieved_rps"], 1.5)
        self.assertAlmostEqual(summary["slo_attainment"], 1 / 3)
        self.assertEqual(summary["tokens_per_s"], 33 / 2)
        self.assertEqual(summary["serve_slos"], "ttft<=1s,tpot<=100ms")
        self.assertLessEqual(summary["ttft_p50_ns"], summary["ttft_p90_ns"])
        self.assertLessEqual(summary["ttft_p90_ns"], summary["ttft_p99_ns"])

    def test_a_one_token_request_is_not_judged_on_tpot(self):
        one = self.request(100, 100, tokens=1)
        self.assertIsNone(one.tpot_ns)
        self.assertTrue(meets(one, [TTFT_1S, TPOT_100MS]))

    def test_nothing_completed_is_zero_not_a_division_error(self):
        summary = load_summary([None, None], 0, 8.0, [TTFT_1S])
        self.assertEqual((summary["goodput_rps"], summary["achieved_rps"], summary["slo_attainment"]), (0.0, 0.0, 0.0))
        self.assertEqual(summary["requests_completed"], 0)
        self.assertNotIn("ttft_p99_ns", summary)
        self.assertEqual(load_summary([], 10**9, 8.0, [])["goodput_rps"], 0.0)


class Rounds(unittest.TestCase):
    def test_rounds_admit_what_has_arrived_up_to_b_and_later_arrivals_wait(self):
        clock = FakeClock()
        sizes = []

        def run_batch(k, on_first_token):
            sizes.append(k)
            clock.now += 10 * MS  # prefill
            on_first_token()
            clock.now += 90 * MS  # nine more tokens
            return 10

        # Three at once, then one during the first round, then one long after.
        arrivals = [0, 0, 0, 50 * MS, 1000 * MS]
        served, elapsed = serve_in_rounds(arrivals, 2, run_batch, clock)
        self.assertEqual(sizes, [2, 2, 1])
        first, second, third, fourth, fifth = served
        self.assertEqual((first.ttft_ns, first.e2e_ns, first.queue_wait_ns), (10 * MS, 100 * MS, 0))
        # The third did not fit the first round: it waits 100 ms for the second.
        self.assertEqual((third.queue_wait_ns, third.ttft_ns, third.e2e_ns), (100 * MS, 110 * MS, 200 * MS))
        # The fourth arrived during the first round: no mid-flight join, it waits for the
        # second round with the third.
        self.assertEqual((fourth.admitted_ns, fourth.queue_wait_ns), (100 * MS, 50 * MS))
        self.assertEqual(fourth.ttft_ns, 60 * MS)
        self.assertEqual((fifth.queue_wait_ns, fifth.e2e_ns), (0, 100 * MS))
        self.assertEqual(elapsed, 1100 * MS)
        self.assertTrue(all(r.tokens == 10 for r in served))
        self.assertAlmostEqual(second.tpot_ns, 10 * MS)
        self.assertGreaterEqual(clock.sleeps, 1)

    def test_b_below_one_is_refused(self):
        with self.assertRaises(ValueError):
            serve_in_rounds([0], 0, lambda k, f: 1, FakeClock())


class FakeEngine:
    """An engine that batches by itself: every step gives each in-flight request one token
    and costs 10 ms; a request is done at its fourth token."""

    def __init__(self, clock):
        self.clock, self.live, self.peak = clock, {}, 0

    def add(self, index):
        self.live[index] = 0
        self.peak = max(self.peak, len(self.live))

    def busy(self):
        return bool(self.live)

    def step(self):
        self.clock.now += 10 * MS
        out = []
        for index in list(self.live):
            self.live[index] += 1
            finished = self.live[index] == 4
            out.append((index, 1, finished))
            if finished:
                del self.live[index]
        return out


class Engine(unittest.TestCase):
    def test_the_engine_gets_each_request_at_its_arrival_and_at_most_b_at_once(self):
        clock = FakeClock()
        engine = FakeEngine(clock)
        arrivals = [0, 0, 0, 500 * MS]
        served, elapsed = serve_on_engine(arrivals, 2, engine, clock)
        self.assertEqual(engine.peak, 2)
        self.assertEqual([r.tokens for r in served], [4, 4, 4, 4])
        self.assertEqual((served[0].ttft_ns, served[0].e2e_ns), (10 * MS, 40 * MS))
        # The third joins as soon as one of the first two is done (continuous batching).
        self.assertEqual(served[2].queue_wait_ns, 40 * MS)
        self.assertEqual(served[2].e2e_ns, 80 * MS)
        self.assertEqual((served[3].queue_wait_ns, served[3].e2e_ns), (0, 40 * MS))
        self.assertEqual(elapsed, 540 * MS)


class Replay(unittest.TestCase):
    def test_the_replay_clock_times_a_call_as_the_request_it_advances_by(self):
        clock = serving.ReplayClock()
        start = clock.mark()
        clock.advance(123)
        self.assertEqual(clock.elapsed_ns(start, clock.mark()), 123)


if __name__ == "__main__":
    unittest.main()
