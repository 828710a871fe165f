"""Prints the median and the best time (ns per iteration) and the throughput at each of
Criterion benchmarks whose full id matches a regex, reading benchmark.json for names
(directory names are sanitised), <baseline>/estimates.json for the median and
<baseline>/sample.json for the fastest sample (BabelStream's peak statistic). Usage:
    criterion_median.py CRITERION_DIR REGEX [BASELINE]"""
import json
import os
import re
import sys


def main(root, pattern, baseline="new"):
    regex = re.compile(pattern)
    found = 0
    for dirpath, _dirs, files in os.walk(root):
        if "benchmark.json" not in files or os.path.basename(dirpath) != baseline:
            continue
        with open(os.path.join(dirpath, "benchmark.json")) as f:
            bench = json.load(f)
        full_id = bench.get("full_id") or bench.get("title")
        if not full_id or not regex.search(full_id):
            continue
        with open(os.path.join(dirpath, "estimates.json")) as f:
            median_ns = json.load(f)["median"]["point_estimate"]
        with open(os.path.join(dirpath, "sample.json")) as f:
            sample = json.load(f)
        best_ns = min(t / n for t, n in zip(sample["times"], sample["iters"]) if n > 0)
        throughput = bench.get("throughput") or {}
        per_s = ""
        if "Elements" in throughput:
            per_s = f" gflops {throughput['Elements'] / median_ns:.2f} best_gflops {throughput['Elements'] / best_ns:.2f}"
        elif "Bytes" in throughput:
            per_s = f" gbps {throughput['Bytes'] / median_ns:.3f} best_gbps {throughput['Bytes'] / best_ns:.3f}"
        print(f"{full_id} median_ns {median_ns:.1f} best_ns {best_ns:.1f}{per_s}")
        found += 1
    if found == 0:
        sys.exit(f"no benchmark under {root} matches {pattern!r} in baseline {baseline!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
