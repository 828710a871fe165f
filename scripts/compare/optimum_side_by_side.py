"""stackbench's model sweep beside optimum-benchmark (PyPI) on the same decoder, batch,
prompt length and new tokens, on this machine, in interleaved rounds; prints a table.

The same model on both sides: the plan's config for ``--model`` (``stackbench sweep
--print-plan``) is built once by ``lib/model_zoo.py`` (random weights, fixed seed) and
saved with ``save_pretrained`` into a scratch directory; optimum-benchmark's pytorch
backend loads that directory (``no_weights`` would fetch ``config.json`` from the hub,
which a local directory cannot give it), and stackbench's sweep reads it through
``--models <dir>`` (``model_zoo`` loads a directory's weights when it has them). Nothing is
downloaded: ``HF_HUB_OFFLINE=1`` on both sides.

What each side reports, per batch B (prompt S, N new tokens, fp32, CPU):

* stackbench: the prefill cell's Criterion median (one forward over B×S that leaves the
  KV cache and the last position's logits); the decode cell's Criterion median (prefill +
  N greedy cached steps, the whole call) and the worker's per-call TTFT and
  TPOT = (E2E − TTFT)/(N − 1) medians (vLLM's definitions);
* optimum-benchmark (inference scenario, latency on): ``model.generate`` with
  ``min_new_tokens = max_new_tokens = N``, timed by a logits processor: ``prefill`` from
  the call's start to the first logits processor call, ``decode`` from there to the end,
  ``per_token`` between successive logits processor calls, ``generate`` the whole call;
  ``decode`` throughput = B·(N − 1) / mean decode latency.

Both sides run at ``--threads`` torch threads. Rounds alternate the order (optimum first,
then stackbench first, ...) so a drift of the machine's speed does not favour one side;
each figure is the median of its per-round figures, with the round-to-round spread.

Usage (the stackbench interpreter runs this script; optimum-benchmark lives in its own
environment, given by ``--optimum-python`` or ``STACKBENCH_OPTIMUM_PYTHON``):

    .venv-components/bin/python scripts/compare/optimum_side_by_side.py \\
        --optimum-python /work/venv-optimum/bin/python --model ci-gpt2 --batch 1,4 --seq 128

Exit codes: 0 the table was printed, 2 bad input or a side that did not run.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPONENTS = os.path.join(REPO, "scripts", "components")
MARKER = "STACKBENCH_OPTIMUM_REPORT "

# Runs in optimum-benchmark's interpreter: one benchmark per batch, in one process, with
# the inline launcher (no child process between the scenario and the model). Argument: a
# JSON object. Prints one MARKER line per batch.
OPTIMUM_DRIVER = r"""
import json, os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
args = json.loads(sys.argv[1])
from optimum_benchmark import Benchmark, BenchmarkConfig, InferenceConfig, InlineConfig, PyTorchConfig
for batch in args["batches"]:
    # optimum-benchmark 0.6.0's pytorch backend passes inter_op_num_threads to
    # torch.set_num_threads and intra_op_num_threads to torch.set_num_interop_threads (the
    # names are swapped), so the intra-op thread count is given as inter_op_num_threads;
    # the threads torch used are read back below.
    backend = PyTorchConfig(model=args["model_dir"], device="cpu", no_weights=False, torch_dtype="float32",
                            task="text-generation", library="transformers", inter_op_num_threads=args["threads"])
    scenario = InferenceConfig(latency=True, memory=False, energy=False,
                               input_shapes={"batch_size": batch, "sequence_length": args["seq"]},
                               generate_kwargs={"max_new_tokens": args["new_tokens"], "min_new_tokens": args["new_tokens"]},
                               duration=args["duration"], iterations=args["iterations"], warmup_runs=args["warmup_runs"])
    config = BenchmarkConfig(name=f"side-by-side-b{batch}", launcher=InlineConfig(), scenario=scenario,
                             backend=backend, print_report=False, log_report=False)
    report = Benchmark.launch(config).to_dict()
    import torch
    print(%r + json.dumps({"batch": batch, "report": report, "torch_threads": torch.get_num_threads()}), flush=True)
""" % MARKER

# Runs in optimum-benchmark's interpreter too, so both sides read files written by the
# transformers release that loads them: the plan's model, built by model_zoo, saved.
SAVE_MODEL = r"""
import json, os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, sys.argv[1])
import torch, transformers, model_zoo as zoo
spec, folder = json.loads(sys.argv[2]), sys.argv[3]
model, origin = zoo.build_model(torch, transformers, spec)
model.save_pretrained(folder)
print(json.dumps({"params": zoo.count_params(model), "origin": origin, "transformers": transformers.__version__, "torch": torch.__version__}))
"""


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--optimum-python", default=os.environ.get("STACKBENCH_OPTIMUM_PYTHON"), help="interpreter with optimum-benchmark installed")
    parser.add_argument("--stackbench-python", default=None, help="interpreter of stackbench's worker (default: the optimum one, so both run the same torch and transformers)")
    parser.add_argument("--model", default="ci-gpt2", help="a catalogue decoder (gpt2-small, ci-gpt2, ...)")
    parser.add_argument("--batch", default="1,4", help="batch sizes, comma-separated")
    parser.add_argument("--seq", type=int, default=128, help="prompt length")
    parser.add_argument("--new-tokens", type=int, default=16, help="new tokens per generate call (N)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on both sides")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--seconds", type=float, default=8.0, help="stackbench measurement time per cell and optimum's duration")
    parser.add_argument("--iterations", type=int, default=10, help="optimum's minimum tracked generate calls")
    parser.add_argument("--warmup-runs", type=int, default=10, help="optimum's warm-up generate calls (of 2 tokens)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    if not args.optimum_python or not os.access(args.optimum_python, os.X_OK):
        parser.error("--optimum-python (or STACKBENCH_OPTIMUM_PYTHON) must name an interpreter with optimum-benchmark installed")
    args.stackbench_python = args.stackbench_python or args.optimum_python
    args.batches = [int(b) for b in args.batch.split(",") if b]
    if not args.batches or min(args.batches) < 1 or args.seq < 1 or args.new_tokens < 2 or args.threads < 1 or args.rounds < 1:
        parser.error("batches, --seq, --threads and --rounds must be positive, --new-tokens at least 2")
    return args


def overhead_args(args, model):
    """The options models_overhead_check's plan and bench helpers read."""
    return argparse.Namespace(
        repo=REPO, model=model, batch=",".join(map(str, args.batches)), seq=str(args.seq), new_tokens=args.new_tokens,
        threads=args.threads, samples=10, warm_up=2.0, seconds=args.seconds,
    )  # fmt: skip


def save_model(args, spec, folder):
    done = subprocess.run(
        [args.optimum_python, "-c", SAVE_MODEL, os.path.join(COMPONENTS, "lib"), json.dumps(spec), folder],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"building {spec.get('arch')} for both sides failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def optimum_round(args, model_dir):
    payload = {
        "model_dir": model_dir, "batches": args.batches, "seq": args.seq, "new_tokens": args.new_tokens, "threads": args.threads,
        "duration": max(1, round(args.seconds)), "iterations": args.iterations, "warmup_runs": args.warmup_runs,
    }  # fmt: skip
    print(f"+ {args.optimum_python} -c <optimum-benchmark driver> {json.dumps(payload)}", file=sys.stderr, flush=True)
    done = subprocess.run([args.optimum_python, "-c", OPTIMUM_DRIVER, json.dumps(payload)], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"optimum-benchmark exited {done.returncode} (its log is above)")
    reports = {}
    for line in done.stdout.splitlines():
        if line.startswith(MARKER):
            found = json.loads(line[len(MARKER) :])
            if found["torch_threads"] != args.threads:
                raise RuntimeError(f"optimum-benchmark ran with {found['torch_threads']} torch threads, not {args.threads}")
            reports[found["batch"]] = found["report"]
    figures = {}
    for batch in args.batches:
        report = reports[batch]
        figures[batch] = {
            "prefill_p50_s": report["prefill"]["latency"]["p50"],
            "prefill_mean_s": report["prefill"]["latency"]["mean"],
            "generate_p50_s": report["generate"]["latency"]["p50"],
            "decode_mean_s": report["decode"]["latency"]["mean"],
            "decode_p50_s": report["decode"]["latency"]["p50"],
            "per_token_p50_s": report["per_token"]["latency"]["p50"],
            "per_token_mean_s": report["per_token"]["latency"]["mean"],
            "decode_tokens_per_s": report["decode"]["throughput"]["value"],
            "generate_calls": report["generate"]["latency"]["count"],
        }
    return figures


def target_notes(criterion_dir, full_id):
    """The worker's notes of one benchmark, from the models target's record."""
    path = os.path.join(criterion_dir, "stackbench", "targets", "models.json")
    with open(path, encoding="utf-8") as handle:
        entry = json.load(handle)["benchmarks"][full_id]
    if entry.get("outcome") != "measured":
        raise RuntimeError(f"{full_id} was not measured: {entry.get('reason') or entry.get('error')}")
    return entry.get("notes", {})


def stackbench_round(args, check, overhead, plan_path, cells, criterion_dir):
    figures = overhead.sweep_figures(overhead_args(args, None), plan_path, criterion_dir, cells, check, python=args.stackbench_python)
    by_batch = {}
    for full_id, cell, _ in cells:
        notes = target_notes(criterion_dir, full_id)
        row = by_batch.setdefault(cell["batch"], {})
        row[f"{cell['phase']}_median_s"] = figures[full_id]["criterion_median_ns"] / 1e9
        if cell["phase"] == "decode":
            row["ttft_p50_s"] = notes["ttft_p50_ns"] / 1e9
            row["tpot_p50_s"] = notes["tpot_p50_ns"] / 1e9
            row["decode_e2e_p50_s"] = notes["e2e_p50_ns"] / 1e9
            row["decode_part_p50_s"] = (notes["e2e_p50_ns"] - notes["ttft_p50_ns"]) / 1e9
        else:
            row["prefill_p50_s"] = notes["latency_p50_ns"] / 1e9
    return by_batch


def table(args, optimum_rounds, stackbench_rounds, check):
    lines = [
        "| batch | figure | stackbench | spread | optimum-benchmark | spread | optimum vs stackbench |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    summary = []
    n = args.new_tokens
    for batch in args.batches:
        def both(sb_key, ob_key, scale=1.0):
            sb = [r[batch][sb_key] * scale for r in stackbench_rounds]
            ob = [r[batch][ob_key] * scale for r in optimum_rounds]
            return (check.median(sb), check.spread(sb)), (check.median(ob), check.spread(ob))

        rows = [
            ("prefill latency, ms (sb: Criterion median; ob: p50)", "prefill_median_s", "prefill_p50_s", 1e3),
            ("prefill latency p50, ms (sb: worker TTFT p50 in decode)", "ttft_p50_s", "prefill_p50_s", 1e3),
            (f"whole call, {n} tokens, ms (sb: decode median; ob: generate p50)", "decode_median_s", "generate_p50_s", 1e3),
            (f"decode part ({n} − 1 steps), ms (sb: E2E p50 − TTFT p50; ob: decode p50)", "decode_part_p50_s", "decode_p50_s", 1e3),
            ("per-token decode, ms (sb: TPOT p50; ob: per_token p50)", "tpot_p50_s", "per_token_p50_s", 1e3),
        ]
        for label, sb_key, ob_key, scale in rows:
            (sb, sb_spread), (ob, ob_spread) = both(sb_key, ob_key, scale)
            lines.append(f"| {batch} | {label} | {sb:.2f} | {sb_spread * 100:.1f} % | {ob:.2f} | {ob_spread * 100:.1f} % | {(ob - sb) / sb * 100:+.1f} % |")
            summary.append({"batch": batch, "figure": label, "stackbench": sb, "stackbench_spread": sb_spread, "optimum": ob, "optimum_spread": ob_spread})
        # Decode throughput: B·(N − 1) tokens over the decode part, both sides' definition.
        sb_tps = [batch / r[batch]["tpot_p50_s"] for r in stackbench_rounds]
        ob_tps = [r[batch]["decode_tokens_per_s"] for r in optimum_rounds]
        sb, ob = check.median(sb_tps), check.median(ob_tps)
        lines.append(
            f"| {batch} | decode throughput, tokens/s (sb: B / TPOT p50; ob: B·(N−1) / mean decode) | {sb:.1f} | {check.spread(sb_tps) * 100:.1f} % "
            f"| {ob:.1f} | {check.spread(ob_tps) * 100:.1f} % | {(ob - sb) / sb * 100:+.1f} % |"
        )
        summary.append({"batch": batch, "figure": "decode tokens/s", "stackbench": sb, "optimum": ob})
    return "\n".join(lines), summary


def main():
    args = parse_args()
    check = load_module("overhead_check", os.path.join(COMPONENTS, "overhead_check.py"))
    overhead = load_module("models_overhead_check", os.path.join(COMPONENTS, "models_overhead_check.py"))
    optimum_rounds, stackbench_rounds = [], []
    with tempfile.TemporaryDirectory(prefix="stackbench-optimum-") as scratch:
        try:
            catalogue_plan = overhead.write_plan(overhead_args(args, args.model), os.path.join(scratch, "catalogue-plan.json"))
            spec = catalogue_plan["models"][args.model]
            model_dir = os.path.join(scratch, args.model)
            built = save_model(args, spec, model_dir)
            print(f"model: {args.model} -> {model_dir}: {built}", file=sys.stderr, flush=True)
            plan_path = os.path.join(scratch, "plan.json")
            plan = overhead.write_plan(overhead_args(args, model_dir), plan_path)
            cells = overhead.planned_cells(plan, ["prefill", "decode"])
            for round_index in range(args.rounds):
                criterion_dir = os.path.join(scratch, f"criterion-{round_index}")
                sides = [
                    lambda: optimum_rounds.append(optimum_round(args, model_dir)),
                    lambda d=criterion_dir: stackbench_rounds.append(stackbench_round(args, check, overhead, plan_path, cells, d)),
                ]
                for side in sides if round_index % 2 == 0 else reversed(sides):
                    side()
                print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        except (overhead.BadInput, RuntimeError, KeyError) as error:
            print(f"optimum_side_by_side: {type(error).__name__}: {error}", file=sys.stderr)
            return 2
    text, summary = table(args, optimum_rounds, stackbench_rounds, check)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"args": {k: v for k, v in vars(args).items()}, "model": built, "optimum_rounds": optimum_rounds,
                       "stackbench_rounds": stackbench_rounds, "summary": summary}, handle, indent=2, default=str)  # fmt: skip
    print(f"\n{args.model} (params {built['params']}), S={args.seq}, N={args.new_tokens}, fp32, CPU, {args.threads} torch thread(s), "
          f"torch {built['torch']}, transformers {built['transformers']}; {args.rounds} interleaved rounds, medians of per-round figures")  # fmt: skip
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
