"""Harness overhead check: one ~100 µs torch operation timed two ways in the same
environment, by ``cargo bench --bench components`` (Criterion driving the pytorch worker
through ``iter_custom``) and by ``torch.utils.benchmark.Timer``, and the difference.

Steps:
1. Calibrate: with ``torch.set_num_threads(THREADS)``, pick the square f32 matmul size whose
   ``Timer`` median is closest to the target (default 100 µs).
2. Alternate, for ``--rounds`` rounds: ``Timer.blocked_autorange`` (and once
   ``adaptive_autorange``), then the same size through
   ``cargo bench --bench components -- --exact <id>``, the pytorch worker offering it
   through ``STACKBENCH_PYTORCH_EXTRA_MATMUL``. Alternating keeps a machine whose speed
   drifts (other work, frequency changes) from biasing one side.
3. Print every figure, and the difference of the median of Criterion's per-round medians
   from the median of Timer's per-round medians, beside the round-to-round spread of each
   (a difference smaller than that spread is noise, not harness overhead); and the
   difference of the fastest Criterion sample from the fastest Timer block, the figure
   least disturbed by other work on a shared machine. The exit code follows the medians.

Run it through overhead_check.sh, which picks the interpreter and the repository root.
"""

import argparse
import json
import os
import subprocess
import sys


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="stackbench repository root")
    parser.add_argument("--target-us", type=float, default=100.0, help="operation time to aim for (µs)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for both harnesses")
    parser.add_argument("--seconds", type=float, default=10.0, help="measurement time per harness")
    parser.add_argument("--samples", type=int, default=50, help="Criterion sample size")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of both harnesses")
    return parser.parse_args()


def timer_for(torch, n, threads):
    from torch.utils import benchmark

    generator = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=generator)
    b = torch.randn(n, n, generator=generator)
    return benchmark.Timer(stmt="torch.matmul(a, b)", globals={"torch": torch, "a": a, "b": b}, num_threads=threads)


def calibrate(torch, target_ns, threads):
    best = None
    for n in range(64, 513, 16):
        median = timer_for(torch, n, threads).blocked_autorange(min_run_time=0.3).median * 1e9
        if best is None or abs(median - target_ns) < abs(best[1] - target_ns):
            best = (n, median)
        if median > 2 * target_ns:
            break
    return best[0]


def timer_figures(torch, n, threads, seconds, adaptive):
    timer = timer_for(torch, n, threads)
    blocked = timer.blocked_autorange(min_run_time=seconds)
    figures = {
        # Fastest block: the least disturbed by other work on a shared machine.
        "blocked_min_ns": min(blocked.times) * 1e9,
        "blocked_median_ns": blocked.median * 1e9,
        "blocked_mean_ns": blocked.mean * 1e9,
        "blocked_iqr_ns": blocked.iqr * 1e9,
    }
    if adaptive:
        figures["adaptive_median_ns"] = timer.adaptive_autorange(threshold=0.05, max_run_time=seconds).median * 1e9
    return figures


def find_outputs(criterion_dir, full_id):
    """(estimates, samples) of one benchmark. Criterion sanitises folder names, so the
    benchmark is found by the id in its benchmark.json."""
    for root, _, files in os.walk(criterion_dir):
        if "benchmark.json" in files and os.path.basename(root) == "new":
            with open(os.path.join(root, "benchmark.json"), encoding="utf-8") as handle:
                if json.load(handle).get("full_id") == full_id:
                    with open(os.path.join(root, "estimates.json"), encoding="utf-8") as handle:
                        estimates = json.load(handle)
                    with open(os.path.join(root, "sample.json"), encoding="utf-8") as handle:
                        return estimates, json.load(handle)
    raise FileNotFoundError(f"no Criterion estimates for {full_id} under {criterion_dir}")


def criterion_figures(args, n, criterion_dir):
    full_id = f"components/pytorch/matmul/f32_{n}x{n}x{n}"
    env = dict(
        os.environ,
        STACKBENCH_PYTHON=sys.executable,
        STACKBENCH_COMPONENTS="pytorch",
        STACKBENCH_TORCH_THREADS=str(args.threads),
        STACKBENCH_PYTORCH_EXTRA_MATMUL=f"f32:{n}",
        STACKBENCH_COMPONENT_SAMPLE_SIZE=str(args.samples),
        STACKBENCH_COMPONENT_WARM_UP_S="2",
        STACKBENCH_COMPONENT_MEASUREMENT_S=str(args.seconds),
        CRITERION_HOME=criterion_dir,
    )
    command = ["cargo", "bench", "--bench", "components", "--", "--exact", full_id, "--noplot"]
    print("+", " ".join(command), flush=True)
    # Criterion's report goes to stderr here: stdout carries only this script's figures.
    subprocess.run(command, cwd=args.repo, env=env, check=True, stdout=sys.stderr)
    estimates, samples = find_outputs(criterion_dir, full_id)
    return {
        "criterion_min_ns": min(t / i for t, i in zip(samples["times"], samples["iters"], strict=True)),
        "criterion_median_ns": estimates["median"]["point_estimate"],
        "criterion_mean_ns": estimates["mean"]["point_estimate"],
        "criterion_median_ci_ns": [
            estimates["median"]["confidence_interval"]["lower_bound"],
            estimates["median"]["confidence_interval"]["upper_bound"],
        ],
    }


def spread(values):
    """(max - min) / median of a list of per-round medians."""
    ordered = sorted(values)
    return (ordered[-1] - ordered[0]) / ordered[len(ordered) // 2]


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main():
    args = parse_args()
    import tempfile

    import torch

    torch.set_num_threads(args.threads)
    n = calibrate(torch, args.target_us * 1e3, args.threads)
    print(f"operation: torch.matmul f32 {n}x{n}x{n}, {args.threads} thread(s), torch {torch.__version__}", flush=True)
    timer_rounds, criterion_rounds = [], []
    with tempfile.TemporaryDirectory(prefix="stackbench-overhead-") as criterion_dir:
        for round_index in range(args.rounds):
            timer_rounds.append(timer_figures(torch, n, args.threads, args.seconds, adaptive=round_index == 0))
            criterion_rounds.append(criterion_figures(args, n, criterion_dir))
    timer_medians = [r["blocked_median_ns"] for r in timer_rounds]
    criterion_medians = [r["criterion_median_ns"] for r in criterion_rounds]
    timer_median, criterion_median = median(timer_medians), median(criterion_medians)
    difference = (criterion_median - timer_median) / timer_median
    timer_best = min(r["blocked_min_ns"] for r in timer_rounds)
    criterion_best = min(r["criterion_min_ns"] for r in criterion_rounds)
    best_difference = (criterion_best - timer_best) / timer_best
    report = {
        "operation": f"torch.matmul f32 {n}x{n}x{n}",
        "threads": args.threads,
        "torch_version": torch.__version__,
        "timer_rounds": timer_rounds,
        "criterion_rounds": criterion_rounds,
        "timer_median_of_rounds_ns": timer_median,
        "criterion_median_of_rounds_ns": criterion_median,
        "timer_round_spread": spread(timer_medians),
        "criterion_round_spread": spread(criterion_medians),
        "criterion_vs_timer": difference,
        "timer_best_block_ns": timer_best,
        "criterion_best_sample_ns": criterion_best,
        "criterion_vs_timer_best": best_difference,
    }
    print(json.dumps(report, indent=2))
    print(
        f"Timer (blocked_autorange) median {timer_median / 1e3:.2f} µs "
        f"(round spread {spread(timer_medians) * 100:.1f} %); "
        f"Criterion median {criterion_median / 1e3:.2f} µs "
        f"(round spread {spread(criterion_medians) * 100:.1f} %); "
        f"difference {difference * 100:+.2f} %"
    )
    print(
        f"Fastest Timer block {timer_best / 1e3:.2f} µs; fastest Criterion sample "
        f"{criterion_best / 1e3:.2f} µs; difference {best_difference * 100:+.2f} %"
    )
    return 0 if abs(difference) <= 0.02 else 1


if __name__ == "__main__":
    sys.exit(main())
