"""Unit checks of the model sweep's worker (scripts/components/models.py) and its helpers:
the plan reader names the file and the key of every error, ids and work units follow the
design, the memory sampler and the energy counters (a fake RAPL tree) cover only their
windows and never invent a number, the greedy check accepts only near-ties, and a tiny
GPT-2 built from a config counts, decodes and quantizes as the worker needs."""

import json
import os
import tempfile
import time
import unittest

import helpers  # noqa: F401 -- puts scripts/components/lib on the path

import model_metrics
import model_zoo as zoo

TINY_GPT2 = {"n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 256, "n_positions": 64, "bos_token_id": 0, "eos_token_id": 0}


def plan(**overrides):
    base = {
        "version": 1,
        "device": "cpu",
        "new_tokens": 4,
        "models": {
            "ci-gpt2": {"arch": "gpt2", "task": "decoder", "config": dict(TINY_GPT2), "local_dir": None, "params_expected": None, "flops_per_token": 10},
            "ci-vit": {"arch": "vit", "task": "vision", "config": {"image_size": 32}, "local_dir": None, "params_expected": None, "flops_per_token": None},
        },
        "cells": [
            {"model": "ci-gpt2", "precision": "fp32", "phase": "prefill", "batch": 2, "seq": 16},
            {"model": "ci-gpt2", "precision": "bf16", "phase": "decode", "batch": 1, "seq": 8},
            {"model": "ci-vit", "precision": "fp32", "phase": "forward", "batch": 4, "seq": None},
        ],
    }
    base.update(overrides)
    return base


def write_plan(content):
    handle, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(content if isinstance(content, str) else json.dumps(content))
    return path


class PlanReading(unittest.TestCase):
    def read(self, content):
        path = write_plan(content)
        self.addCleanup(os.remove, path)
        return path, zoo.read_plan({zoo.PLAN_ENV: path})

    def error(self, content):
        path = write_plan(content)
        self.addCleanup(os.remove, path)
        with self.assertRaises(zoo.PlanError) as caught:
            zoo.read_plan({zoo.PLAN_ENV: path})
        message = str(caught.exception)
        self.assertIn(path, message)
        return message

    def test_a_good_plan_reads_and_gives_the_designed_ids(self):
        _, checked = self.read(plan())
        ids = [zoo.cell_id(c, checked["models"][c["model"]]) for c in checked["cells"]]
        self.assertEqual(ids, [("ci-gpt2-fp32-prefill", "b2_s16"), ("ci-gpt2-bf16-decode", "b1_s8"), ("ci-vit-fp32-forward", "b4")])

    def test_the_work_of_a_call_follows_the_phase(self):
        checked = plan()
        models = checked["models"]
        got = [zoo.elements_per_call(c, models[c["model"]]["task"], 4) for c in checked["cells"]]
        # prefill B·S tokens, decode B·N new tokens, vision B samples
        self.assertEqual(got, [32, 4, 4])
        self.assertEqual(zoo.work_unit("vision", "forward"), "samples")
        self.assertEqual(zoo.work_unit("encoder_decoder", "forward"), "tokens")

    def test_an_unset_variable_names_it(self):
        with self.assertRaises(zoo.PlanError) as caught:
            zoo.read_plan({})
        self.assertIn(zoo.PLAN_ENV, str(caught.exception))

    def test_a_missing_file_and_bad_json_name_the_file(self):
        with self.assertRaises(zoo.PlanError) as caught:
            zoo.read_plan({zoo.PLAN_ENV: "/nonexistent/plan.json"})
        self.assertIn("/nonexistent/plan.json", str(caught.exception))
        self.assertIn("not JSON", self.error("{not json"))

    def test_each_bad_key_is_named(self):
        cases = [
            (plan(version=2), "version"),
            (plan(device="tpu"), "device: 'tpu' is not one of cpu, cuda, rocm, mps, qnn"),
            (plan(new_tokens=0), "new_tokens"),
            (plan(cells=[{"model": "gpt9", "precision": "fp32", "phase": "prefill", "batch": 1, "seq": 8}]), "cells[0].model"),
            (plan(cells=[{"model": "ci-gpt2", "precision": "fp8", "phase": "prefill", "batch": 1, "seq": 8}]), "cells[0].precision: 'fp8'"),
            (plan(cells=[{"model": "ci-gpt2", "precision": "fp32", "phase": "forward", "batch": 1, "seq": 8}]), "cells[0].phase: 'forward' is not one of prefill, decode"),
            (plan(cells=[{"model": "ci-gpt2", "precision": "fp32", "phase": "prefill", "batch": 0, "seq": 8}]), "cells[0].batch"),
            (plan(cells=[{"model": "ci-gpt2", "precision": "fp32", "phase": "prefill", "batch": 1}]), "cells[0].seq"),
        ]
        for content, key in cases:
            with self.subTest(key=key):
                self.assertIn(key, self.error(content))

    def test_a_model_entry_is_checked(self):
        bad = plan()
        bad["models"]["ci-gpt2"]["arch"] = "gpt5"
        self.assertIn("models.ci-gpt2.arch", self.error(bad))
        both = plan()
        both["models"]["ci-gpt2"]["local_dir"] = "/tmp"
        self.assertIn("exactly one of config", self.error(both))
        nowhere = plan()
        nowhere["models"]["ci-gpt2"].update({"config": None, "local_dir": "/nonexistent-model-dir"})
        self.assertIn("models.ci-gpt2.local_dir", self.error(nowhere))

    def test_a_duplicate_cell_is_refused(self):
        cell = {"model": "ci-gpt2", "precision": "fp32", "phase": "prefill", "batch": 1, "seq": 8}
        self.assertIn("cells[1]: the same benchmark ci-gpt2-fp32-prefill/b1_s8 as cells[0]", self.error(plan(cells=[cell, dict(cell)])))

    def test_a_serve_cell_has_a_rate_in_its_id_and_needs_the_serve_settings(self):
        serve = {"requests": 8, "seed": 0, "slos": [{"text": "ttft<=2s", "metric": "ttft", "bound_ns": 2e9}]}
        cells = [
            {"model": "ci-gpt2", "precision": "fp32", "phase": "serve", "batch": 4, "seq": 16, "rate": 8.0},
            {"model": "ci-gpt2", "precision": "fp32", "phase": "serve", "batch": 4, "seq": 16, "rate": 0.5},
        ]
        _, checked = self.read(plan(cells=cells, serve=serve))
        ids = [zoo.cell_id(c, checked["models"][c["model"]]) for c in checked["cells"]]
        # The Rust side's shortest float form: r8, not r8.0.
        self.assertEqual(ids, [("ci-gpt2-fp32-serve", "b4_s16_r8"), ("ci-gpt2-fp32-serve", "b4_s16_r0.5")])
        self.assertEqual(zoo.elements_per_call(cells[0], "decoder", 4), 4)
        cases = [
            (plan(cells=cells), "serve: serve cells need the serve settings"),
            (plan(cells=[dict(cells[0], rate=0)], serve=serve), "cells[0].rate: a serve cell needs a positive rate"),
            (plan(cells=[dict(cells[0], phase="decode")], serve=serve), "cells[0].rate: only a serve cell has a rate"),
            (plan(cells=cells, serve=dict(serve, requests=0)), "serve.requests"),
            (plan(cells=cells, serve=dict(serve, slos=[{"metric": "ttft_p99", "bound_ns": 1}])), "serve.slos[0].metric"),
        ]
        for content, key in cases:
            with self.subTest(key=key):
                self.assertIn(key, self.error(content))

    def test_the_backend_variable_is_checked(self):
        self.assertEqual(zoo.read_backend({zoo.BACKEND_ENV: "openvino"}), "openvino")
        with self.assertRaises(zoo.PlanError) as caught:
            zoo.read_backend({zoo.BACKEND_ENV: "tensorrt"})
        self.assertIn("torch, onnxruntime, openvino, vllm", str(caught.exception))


class Windows(unittest.TestCase):
    def test_the_sampler_reads_only_inside_its_windows(self):
        values = iter(range(1, 100000))
        sampler = model_metrics.Sampler(lambda: next(values) * 10, interval_s=0.001)
        self.assertEqual(sampler.summary(), (None, None))
        sampler.start()
        time.sleep(0.02)
        sampler.stop()
        count = sampler.count
        self.assertGreaterEqual(count, 3)  # both ends and the thread in between
        time.sleep(0.01)
        self.assertEqual(sampler.count, count, "sampled outside the window")
        peak, average = sampler.summary()
        self.assertEqual(peak, count * 10)
        self.assertEqual(average, round(sum(range(1, count + 1)) * 10 / count))

    def test_the_process_rss_is_read(self):
        self.assertGreater(model_metrics.read_rss_bytes(), 1 << 20)

    def test_the_rss_peak_sees_a_spike_between_samples(self):
        sampler = model_metrics.RssSampler(interval_s=10.0)  # only the two end samples
        sampler.start()
        spike = bytearray(64 << 20)  # zero-filled: every page touched
        del spike
        sampler.stop()
        peak, average = sampler.summary()
        self.assertEqual(sampler.peak_source, "VmHWM")
        self.assertGreaterEqual(peak - average, 60 << 20)

    def fake_rapl(self, zones):
        root = tempfile.mkdtemp()
        for zone, (name, energy) in zones.items():
            os.makedirs(os.path.join(root, zone))
            for field, value in (("name", name), ("energy_uj", energy), ("max_energy_range_uj", 1000)):
                with open(os.path.join(root, zone, field), "w", encoding="ascii") as out:
                    out.write(f"{value}\n")
        return root

    def test_rapl_sums_the_package_zones_across_a_wrap(self):
        root = self.fake_rapl({"intel-rapl:0": ("package-0", 900), "intel-rapl:1": ("package-1", 100), "intel-rapl:0:0": ("core", 5)})
        meter = model_metrics.EnergyMeter("cpu", rapl_root=root)
        meter.start()
        with open(os.path.join(root, "intel-rapl:0", "energy_uj"), "w", encoding="ascii") as out:
            out.write("100\n")  # wrapped: 900 -> 1000 -> 100 is 200 uJ
        with open(os.path.join(root, "intel-rapl:1", "energy_uj"), "w", encoding="ascii") as out:
            out.write("400\n")
        meter.stop()
        metrics = meter.metrics(work_units=5, unit="token")
        self.assertEqual(metrics["energy_method"], "rapl:package-0+package-1")
        self.assertAlmostEqual(metrics["energy_j_per_token"], 500e-6 / 5)

    def test_no_counter_gives_a_reason_never_a_number(self):
        meter = model_metrics.EnergyMeter("cpu", rapl_root="/nonexistent/powercap")
        meter.start()
        meter.stop()
        metrics = meter.metrics(work_units=5, unit="sample")
        self.assertEqual(list(metrics), ["energy_unavailable"])
        self.assertIn("/nonexistent/powercap does not exist", metrics["energy_unavailable"])

    def test_a_counter_that_did_not_move_is_not_zero_energy(self):
        root = self.fake_rapl({"intel-rapl:0": ("package-0", 10)})
        meter = model_metrics.EnergyMeter("cpu", rapl_root=root)
        meter.start()
        meter.stop()
        self.assertIn("did not advance", meter.metrics(work_units=5, unit="token")["energy_unavailable"])


class TinyGpt2(unittest.TestCase):
    """The real stack: torch and transformers from the CI environment."""

    @classmethod
    def setUpClass(cls):
        os.environ.update(zoo.OFFLINE_ENV)
        import torch
        import transformers

        cls.torch, cls.transformers = torch, transformers
        cls.spec = plan()["models"]["ci-gpt2"]
        cls.model, cls.origin = zoo.build_model(torch, transformers, cls.spec)

    def test_the_same_seed_builds_the_same_weights_and_count(self):
        again, _ = zoo.build_model(self.torch, self.transformers, self.spec)
        for (name, a), (_, b) in zip(self.model.named_parameters(), again.named_parameters(), strict=True):
            self.assertTrue(self.torch.equal(a, b), name)
        count = zoo.count_params(self.model)
        # GPT-2: wte, wpe, per layer 12·d² + 13·d, final LayerNorm; the LM head is tied.
        d, layers, vocab, positions = 32, 2, 256, 64
        self.assertEqual(count, vocab * d + positions * d + layers * (12 * d * d + 13 * d) + 2 * d)
        self.assertEqual(zoo.count_params_meta(self.torch, self.transformers, self.spec), count)
        self.assertIn("torch.manual_seed(0)", self.origin)

    def test_a_local_directory_is_used_as_is(self):
        folder = tempfile.mkdtemp()
        self.model.save_pretrained(folder)
        local = {"arch": "gpt2", "task": "decoder", "config": None, "local_dir": folder}
        built, origin = zoo.build_model(self.torch, self.transformers, local)
        self.assertEqual(origin, f"weights from {folder}")
        for (name, a), (_, b) in zip(built.state_dict().items(), self.model.state_dict().items(), strict=True):
            self.assertTrue(self.torch.equal(a, b), name)
        os.remove(os.path.join(folder, "model.safetensors"))
        _, origin = zoo.build_model(self.torch, self.transformers, local)
        self.assertEqual(origin, f"random weights, torch.manual_seed(0), config from {folder}")

    def test_cached_greedy_decode_equals_the_uncached_recompute(self):
        inputs = zoo.make_inputs(self.torch, self.model.config, "decoder", 2, 8)
        decoder = zoo.GreedyDecoder(self.torch, self.model, "decoder", inputs, 6, 0)
        marks = []
        tokens = decoder.decode(on_first_token=lambda: marks.append(1))
        self.assertEqual(tuple(tokens.shape), (2, 6))
        self.assertEqual(marks, [1])
        self.assertIsNone(zoo.compare_greedy(self.torch, tokens, decoder.uncached_logits(tokens), 1e-4))

    def test_a_wrong_token_is_found_and_a_near_tie_is_not(self):
        logits = self.torch.tensor([[[0.0, 1.0, 5.0], [2.0, 0.0, 1.9999]]])
        self.assertIsNone(zoo.compare_greedy(self.torch, self.torch.tensor([[2, 0]]), logits, 1e-4))
        self.assertIsNone(zoo.compare_greedy(self.torch, self.torch.tensor([[2, 2]]), logits, 1e-4))
        problem = zoo.compare_greedy(self.torch, self.torch.tensor([[1, 0]]), logits, 1e-4)
        self.assertIn("new token 0: cached decode chose 1, an uncached recompute 2", problem)

    def test_int8_quantizes_gpt2s_conv1d_projections(self):
        models = helpers.load_worker("models")
        built, _ = zoo.build_model(self.torch, self.transformers, self.spec)
        params = zoo.count_params(built)
        quantized, facts = models.quantize_int8(self.torch, built, params)
        dynamic = [m for m in quantized.modules() if isinstance(m, self.torch.ao.nn.quantized.dynamic.Linear)]
        # qkv, attention out, MLP up and down in each of 2 layers, and the LM head
        self.assertEqual(len(dynamic), 2 * 4 + 1)
        self.assertGreater(facts["int8_weight_fraction"], 0.5)
        inputs = zoo.make_inputs(self.torch, built.config, "decoder", 1, 8)
        with self.torch.inference_mode():
            self.assertTrue(bool(self.torch.isfinite(quantized(**inputs).logits).all()))

    def test_the_tpot_of_a_call_is_vllms(self):
        models = helpers.load_worker("models")
        metrics = models.tpot_metrics([1000, 2000], [100, 200], 4)
        self.assertEqual(metrics["tpot_p50_ns"], round(((1000 - 100) / 3 + (2000 - 200) / 3) / 2))
        self.assertEqual(models.tpot_metrics([1000], [100], 1), {})

    def test_a_prefill_call_is_its_time_to_first_token_and_only_a_prefill(self):
        models = helpers.load_worker("models")
        calls = [400, 100, 300, 200]
        prefill = models.call_latency_metrics("prefill", calls)
        for p in ("p50", "p90", "p99"):
            self.assertEqual(prefill[f"ttft_{p}_ns"], prefill[f"latency_{p}_ns"])
        self.assertEqual(prefill["ttft_p50_ns"], models.latency_metrics(calls)["latency_p50_ns"])
        self.assertIn("prefill", prefill["ttft_method"])
        # Decode measures its own TTFT inside the call; forward (vision) has no first token.
        for phase in ("decode", "forward"):
            self.assertFalse([k for k in models.call_latency_metrics(phase, calls) if k.startswith("ttft")], phase)


if __name__ == "__main__":
    unittest.main()


class RepeatableGreedyTest(unittest.TestCase):
    """vLLM's check before timing (both the component and the sweep's backend): each request
    makes exactly the asked-for tokens, and the same ones on a second generation."""

    @staticmethod
    def outputs(*token_lists):
        from types import SimpleNamespace

        return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=tokens)]) for tokens in token_lists]

    def test_same_tokens_of_the_right_count_pass_and_anything_else_is_a_mismatch(self):
        from request_times import check_repeatable_greedy
        from stackbench_worker import Mismatch

        check_repeatable_greedy(self.outputs([1, 2, 3], [4, 5, 6]), self.outputs([1, 2, 3], [4, 5, 6]), 3)
        with self.assertRaisesRegex(Mismatch, "produced 2 tokens, expected 3"):
            check_repeatable_greedy(self.outputs([1, 2]), self.outputs([1, 2]), 3)
        with self.assertRaisesRegex(Mismatch, "different tokens"):
            check_repeatable_greedy(self.outputs([1, 2, 3]), self.outputs([1, 2, 4]), 3)
        with self.assertRaises(ValueError):
            check_repeatable_greedy(self.outputs([1, 2, 3]), self.outputs(), 3)
