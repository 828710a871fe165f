"""Sweep overhead check (issue 19): the model sweep's figure for a cell against a bare
loop of the same calls, in the same Python environment and at the same thread count.

What is compared, per cell ``models/torch/<model>-fp32-<phase>/b<B>_s<S>``:

* the sweep: ``cargo bench --bench models`` with ``STACKBENCH_MODELS_PLAN`` naming the plan
  that ``stackbench sweep --print-plan`` writes for these axes, which drives the worker
  scripts/components/models.py through the plan (Criterion's median of the per-sample
  means, each sample one ``run`` round trip timed inside the worker);
* the bare loop: the same model built the same way (``model_zoo.build_model`` on the
  plan's config dict, fixed seed), the same inputs (``model_zoo.make_inputs``) and the
  same call (``GreedyDecoder.first()`` under ``torch.inference_mode`` for prefill,
  ``GreedyDecoder.decode()`` with the plan's new tokens for decode), timed by
  ``torch.utils.benchmark.Timer.blocked_autorange`` (and ``adaptive_autorange`` in the
  first round) with ``num_threads`` = ``--threads``.

Rounds alternate A B, B A, A B, ... (the order is reversed each round, which cancels a
linear drift of the machine's speed), and each side's figure is the median of its
per-round medians; the round-to-round spread ((max - min) / median of those) is printed
beside it: a difference smaller than the spread is noise, not harness overhead.

Exit codes: 0 every cell within ``--limit`` (default 3 %), 1 a cell over it, 2 bad input
(an unknown model, a phase other than prefill or decode, a failed plan or bench run).

Run it through models_overhead_check.sh, which picks the interpreter and the repository
root.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
# This folder holds workers named like the packages they drive (onnxruntime.py, vllm.py,
# triton.py): off the import path, so torch and transformers import the real ones.
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


def load_overhead_check():
    """The component tier's check (overhead_check.py): its Criterion-output reader and
    its median and spread, shared rather than copied."""
    spec = importlib.util.spec_from_file_location("overhead_check", os.path.join(_HERE, "overhead_check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BadInput(Exception):
    """An option or a step before measuring is wrong: exit 2."""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="stackbench repository root")
    parser.add_argument("--model", default="gpt2-small", help="a catalogue name or a directory with a config.json (decoder LMs)")
    parser.add_argument("--batch", default="1,4", help="batch sizes, comma-separated")
    parser.add_argument("--seq", default="128", help="prompt lengths, comma-separated")
    parser.add_argument("--phases", default="prefill,decode", help="prefill and/or decode, comma-separated")
    parser.add_argument("--new-tokens", type=int, default=16, help="new tokens of a decode call")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for both sides")
    parser.add_argument("--seconds", type=float, default=8.0, help="measurement time per cell and side")
    parser.add_argument("--warm-up", type=float, default=2.0, help="Criterion warm-up per cell (s)")
    parser.add_argument("--samples", type=int, default=10, help="Criterion sample size")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of both sides")
    parser.add_argument("--limit", type=float, default=0.03, help="largest |sweep - bare| / bare allowed")
    parser.add_argument("--pairs", type=int, default=20, help="paired in-process blocks per cell (0: skip that part)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    phases = [p for p in args.phases.split(",") if p]
    unknown = [p for p in phases if p not in ("prefill", "decode")]
    if unknown or not phases:
        parser.error(f"--phases: {','.join(unknown) or '(none)'}: each must be prefill or decode")
    if args.pairs < 0:
        parser.error("--pairs must not be negative")
    for name in ("threads", "rounds", "samples", "new_tokens"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.seconds <= 0 or args.warm_up < 0 or args.limit <= 0:
        parser.error("--seconds and --limit must be positive, --warm-up not negative")
    args.phases = phases
    return args


def stackbench_command(repo):
    """The stackbench binary of the bench profile when built, else ``cargo run``. Only
    the plan comes from it (``sweep --print-plan``); ``cargo bench`` rebuilds the sweep's
    own target when the sources changed, so rebuild the binary too after changing the
    catalogue (``cargo build --release``)."""
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(repo, "target")
    built = os.path.join(target, "release", "stackbench")
    if os.access(built, os.X_OK):
        return [built]
    return ["cargo", "run", "--quiet", "--profile", "bench", "--bin", "stackbench", "--"]


def write_plan(args, path):
    """The plan ``stackbench sweep`` would run for these axes: torch, fp32, CPU."""
    command = stackbench_command(args.repo) + [
        "sweep", "--print-plan", "--models", args.model, "--batch", args.batch, "--seq", args.seq,
        "--precision", "fp32", "--backend", "torch", "--device", "cpu", "--new-tokens", str(args.new_tokens),
    ]  # fmt: skip
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, cwd=args.repo, capture_output=True, text=True)
    if done.returncode != 0:
        raise BadInput(f"stackbench sweep --print-plan exited {done.returncode}: {done.stderr.strip()}")
    plan = json.loads(done.stdout)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(done.stdout)
    return plan


def planned_cells(plan, phases):
    """(benchmark id, cell, spec) of the plan's cells in ``phases``."""
    import model_zoo as zoo

    cells = []
    for cell in plan["cells"]:
        spec = plan["models"][cell["model"]]
        if spec["task"] != "decoder":
            raise BadInput(f"{cell['model']}'s task is {spec['task']}; this check times decoder prefill and decode")
        if cell["phase"] in phases:
            benchmark, parameters = zoo.cell_id(cell, spec)
            cells.append((f"models/torch/{benchmark}/{parameters}", cell, spec))
    if not cells:
        raise BadInput(f"the plan has no {'/'.join(phases)} cell")
    return cells


class BareLoop:
    """The worker's calls without the worker: one model per name, as the worker keeps it."""

    def __init__(self, torch, transformers, new_tokens, threads):
        import model_zoo as zoo

        self.torch, self.transformers, self.zoo = torch, transformers, zoo
        self.new_tokens, self.threads = new_tokens, threads
        self.models = {}
        self.calls = {}

    def call_for(self, cell, spec):
        """The zero-argument call the worker's ``step`` makes for ``cell``."""
        torch, zoo = self.torch, self.zoo
        key = (cell["model"], cell["phase"], cell["batch"], cell["seq"])
        if key in self.calls:
            return self.calls[key]
        if cell["model"] not in self.models:
            model, _ = zoo.build_model(torch, self.transformers, spec)
            self.models[cell["model"]] = model.to(torch.float32).to("cpu")
        model = self.models[cell["model"]]
        inputs = zoo.make_inputs(torch, model.config, spec["task"], cell["batch"], cell["seq"])
        if cell["phase"] == "prefill":
            decoder = zoo.GreedyDecoder(torch, model, spec["task"], inputs, 1, 0)

            def call():
                with torch.inference_mode():
                    return decoder.first()
        else:
            decoder = zoo.GreedyDecoder(torch, model, spec["task"], inputs, self.new_tokens, zoo.decoder_start(model.config))
            call = decoder.decode
        call()  # the worker's trial call: first-call allocations stay out of the timing
        self.calls[key] = call
        return call

    def figures(self, cell, spec, seconds, adaptive):
        from torch.utils import benchmark

        timer = benchmark.Timer(stmt="call()", globals={"call": self.call_for(cell, spec)}, num_threads=self.threads)
        blocked = timer.blocked_autorange(min_run_time=seconds)
        figures = {
            "blocked_median_ns": blocked.median * 1e9,
            "blocked_mean_ns": blocked.mean * 1e9,
            "blocked_iqr_ns": blocked.iqr * 1e9,
            "blocked_min_ns": min(blocked.times) * 1e9,
            "blocked_blocks": len(blocked.times),
            "blocked_calls_per_block": blocked.number_per_run,
        }
        if adaptive:
            figures["adaptive_median_ns"] = timer.adaptive_autorange(threshold=0.05, max_run_time=seconds).median * 1e9
        return figures


def sweep_figures(args, plan_path, criterion_dir, cells, check, python=None):
    """One ``cargo bench --bench models`` over the plan's cells, the worker run by
    ``python`` (default: this interpreter); Criterion's figures by id."""
    env = dict(
        os.environ,
        STACKBENCH_PYTHON=python or sys.executable,
        STACKBENCH_MODELS_PLAN=plan_path,
        STACKBENCH_TORCH_THREADS=str(args.threads),
        STACKBENCH_COMPONENT_SAMPLE_SIZE=str(args.samples),
        STACKBENCH_COMPONENT_WARM_UP_S=str(args.warm_up),
        STACKBENCH_COMPONENT_MEASUREMENT_S=str(args.seconds),
        CRITERION_HOME=criterion_dir,
    )
    command = ["cargo", "bench", "--bench", "models", "--", "--noplot"]
    print("+", " ".join(command), flush=True)
    # Criterion's report goes to stderr: stdout carries only this script's figures.
    done = subprocess.run(command, cwd=args.repo, env=env, stdout=sys.stderr)
    if done.returncode != 0:
        raise BadInput(f"cargo bench --bench models exited {done.returncode} (its output is above)")
    figures = {}
    for full_id, _, _ in cells:
        try:
            estimates, samples = check.find_outputs(criterion_dir, full_id)
        except FileNotFoundError:
            # Skipped or failed in the bench run: nothing to compare, so no verdict either way.
            raise BadInput(f"{full_id} was not measured by cargo bench (skipped or failed: see its output above)") from None
        figures[full_id] = {
            "criterion_median_ns": estimates["median"]["point_estimate"],
            "criterion_mean_ns": estimates["mean"]["point_estimate"],
            "criterion_min_ns": min(t / i for t, i in zip(samples["times"], samples["iters"], strict=True)),
            "criterion_samples": len(samples["iters"]),
            "criterion_calls_per_sample": samples["iters"][0],
        }
    return figures


def worker_server(plan_path, threads):
    """The models worker's component and request handler, in this process: the code a
    ``run`` request executes (``timed_loop`` with the cell's ``begin_run``/``end_run``, its
    memory sampler thread and its per-call marks), without the pipe."""
    os.environ.update({"STACKBENCH_MODELS_PLAN": plan_path, "STACKBENCH_MODELS_BACKEND": "torch", "STACKBENCH_TORCH_THREADS": str(threads)})
    import stackbench_worker

    spec = importlib.util.spec_from_file_location("stackbench_models_worker", os.path.join(_HERE, "models.py"))
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    # models.py takes its own folder off the import path, as this script does.
    component = models.Models()
    description = component.describe()
    if not description.get("available"):
        raise BadInput(f"the models worker is not available here: {description.get('reason')}")
    return component, stackbench_worker._Server(component)


def paired_figures(args, plan_path, cells, bare, check):
    """Harness against bare loop in one process, in adjacent blocks of ~0.3 s (order
    alternating): the machine's speed is nearly the same within a pair, so the median of
    the paired differences shows the worker's in-window cost even when other work makes
    the round-to-round spread larger than that cost."""
    import time

    component, server = worker_server(plan_path, args.threads)
    rows = []
    for full_id, cell, spec in cells:
        benchmark, parameters = full_id.split("/")[2:]
        server.handle({"op": "setup", "benchmark": benchmark, "parameters": parameters})
        call = bare.call_for(cell, spec)
        started = time.perf_counter()
        call()
        iters = max(1, round(0.3 / max(time.perf_counter() - started, 1e-6)))

        def bare_block():
            begin = time.perf_counter_ns()
            for _ in range(iters):
                call()
            return (time.perf_counter_ns() - begin) / iters

        def harness_block():
            return server.handle({"op": "run", "iters": iters})["elapsed_ns"] / iters

        harness_block()
        bare_block()
        differences, bare_ns, harness_ns = [], [], []
        for index in range(args.pairs):
            if index % 2 == 0:
                b, h = bare_block(), harness_block()
            else:
                h, b = harness_block(), bare_block()
            bare_ns.append(b)
            harness_ns.append(h)
            differences.append((h - b) / b)
        server.handle({"op": "teardown"})
        ordered = sorted(differences)
        rows.append(
            {
                "id": full_id,
                "iters_per_block": iters,
                "bare_median_ns": check.median(bare_ns),
                "harness_median_ns": check.median(harness_ns),
                "paired_difference_median": check.median(differences),
                "paired_difference_q1": ordered[len(ordered) // 4],
                "paired_difference_q3": ordered[(3 * len(ordered)) // 4],
            }
        )
    component.release()
    return rows


def print_paired(rows, args):
    print(f"\nin one process, {args.pairs} adjacent pairs of blocks per cell (worker's run request vs bare loop)")
    print("| cell | calls per block | bare ms | worker ms | paired difference, median | IQR of the differences |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['id']} | {row['iters_per_block']} | {row['bare_median_ns'] / 1e6:.2f} | {row['harness_median_ns'] / 1e6:.2f} "
            f"| {row['paired_difference_median'] * 100:+.2f} % | {row['paired_difference_q1'] * 100:+.2f} … {row['paired_difference_q3'] * 100:+.2f} % |"
        )


def summarise(cells, bare_rounds, sweep_rounds, check):
    rows = []
    for full_id, _, _ in cells:
        bare = [r[full_id]["blocked_median_ns"] for r in bare_rounds]
        swept = [r[full_id]["criterion_median_ns"] for r in sweep_rounds]
        bare_median, sweep_median = check.median(bare), check.median(swept)
        rows.append(
            {
                "id": full_id,
                "bare_median_ns": bare_median,
                "bare_round_spread": check.spread(bare),
                "sweep_median_ns": sweep_median,
                "sweep_round_spread": check.spread(swept),
                "sweep_vs_bare": (sweep_median - bare_median) / bare_median,
                "sweep_vs_bare_fastest": (
                    min(r[full_id]["criterion_min_ns"] for r in sweep_rounds) - min(r[full_id]["blocked_min_ns"] for r in bare_rounds)
                )
                / min(r[full_id]["blocked_min_ns"] for r in bare_rounds),
            }
        )
    return rows


def print_table(rows, args, torch):
    print(f"\n{args.rounds} interleaved rounds, {args.threads} torch thread(s), torch {torch.__version__}; medians of per-round medians")
    print("| cell | bare loop (Timer) ms | spread | sweep (Criterion) ms | spread | sweep vs bare | fastest vs fastest |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['id']} | {row['bare_median_ns'] / 1e6:.2f} | {row['bare_round_spread'] * 100:.1f} % "
            f"| {row['sweep_median_ns'] / 1e6:.2f} | {row['sweep_round_spread'] * 100:.1f} % "
            f"| {row['sweep_vs_bare'] * 100:+.2f} % | {row['sweep_vs_bare_fastest'] * 100:+.2f} % |"
        )


def main():
    args = parse_args()
    check = load_overhead_check()
    import model_zoo as zoo

    os.environ.update(zoo.OFFLINE_ENV)
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    bare = BareLoop(torch, transformers, args.new_tokens, args.threads)
    bare_rounds, sweep_rounds = [], []
    with tempfile.TemporaryDirectory(prefix="stackbench-models-overhead-") as scratch:
        plan_path = os.path.join(scratch, "plan.json")
        try:
            plan = write_plan(args, plan_path)
            cells = planned_cells(plan, args.phases)
        except BadInput as error:
            print(f"models_overhead_check: {error}", file=sys.stderr)
            return 2
        for round_index in range(args.rounds):
            criterion_dir = os.path.join(scratch, f"criterion-{round_index}")

            def bare_side(round_index=round_index):
                first = round_index == 0
                bare_rounds.append({i: bare.figures(c, s, args.seconds, first) for i, c, s in cells})

            def sweep_side(criterion_dir=criterion_dir):
                sweep_rounds.append(sweep_figures(args, plan_path, criterion_dir, cells, check))

            sides = [bare_side, sweep_side] if round_index % 2 == 0 else [sweep_side, bare_side]
            try:
                for side in sides:
                    side()
            except BadInput as error:
                print(f"models_overhead_check: {error}", file=sys.stderr)
                return 2
            print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        try:
            paired = paired_figures(args, plan_path, cells, bare, check) if args.pairs else []
        except BadInput as error:
            print(f"models_overhead_check: {error}", file=sys.stderr)
            return 2
    rows = summarise(cells, bare_rounds, sweep_rounds, check)
    report = {
        "model": args.model,
        "threads": args.threads,
        "new_tokens": args.new_tokens,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "bare_rounds": bare_rounds,
        "sweep_rounds": sweep_rounds,
        "cells": rows,
        "paired": paired,
    }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    print(json.dumps(rows, indent=2))
    print_table(rows, args, torch)
    if paired:
        print_paired(paired, args)
    over = [row["id"] for row in rows if abs(row["sweep_vs_bare"]) > args.limit]
    if over:
        print(f"over the {args.limit * 100:g} % limit: {', '.join(over)}")
        return 1
    print(f"every cell within {args.limit * 100:g} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
