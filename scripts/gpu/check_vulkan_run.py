#!/usr/bin/env python3
"""Checks the Vulkan ids of a `cargo bench -- --test` pass (ci/test.sh on lavapipe,
ci/gpu_tests.sh on a GPU's Vulkan driver): in the target reports under TARGETS_DIR
(`$CRITERION_HOME/stackbench/targets`), every `<family>/vulkan/...` id of gemm and
memory_bandwidth, tensor_ops and attention (both paths, causal and not; f32, f16 and
bf16) was measured (checked against its reference, then run), except the rows Vulkan
cannot run, which must be skips with their reason. No Vulkan device at all (the
`<family>/vulkan/all/all` skip) fails: the callers install or have one.

usage: check_vulkan_run.py TARGETS_DIR
"""
import json
import sys
from pathlib import Path

# Skips that are the backend's stated limits, by the id's function part, and a word their
# reason must contain.
ALLOWED_SKIPS = {
    "h2d_pageable": "pageable",
    "d2h_pageable": "pageable",
    "fp6e3m2": "matrix type",
    "fp4e2m1": "matrix type",
}


def rows(targets: Path, family: str) -> dict:
    path = targets / f"{family}.json"
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: {e}")
    found = {i: b for i, b in report.get("benchmarks", {}).items() if i.split("/")[1:2] == ["vulkan"]}
    if not found:
        sys.exit(f"{path}: no vulkan ids (was the target run with the vulkan filter?)")
    if f"{family}/vulkan/all/all" in found:
        sys.exit(f"{family}: no Vulkan device: {found[f'{family}/vulkan/all/all'].get('reason')}")
    return found


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    targets = Path(sys.argv[1])
    problems = []
    measured = 0
    for family in ("gemm", "memory_bandwidth", "tensor_ops", "attention"):
        for bench_id, row in rows(targets, family).items():
            function = bench_id.split("/")[2]
            outcome = row.get("outcome")
            reason = row.get("reason") or row.get("error") or ""
            if outcome == "measured":
                measured += 1
                continue
            word = ALLOWED_SKIPS.get(function)
            if outcome == "skipped" and word and word in reason:
                continue
            problems.append(f"{bench_id}: {outcome}: {reason}")
    if problems:
        sys.exit("vulkan ids not measured:\n" + "\n".join(problems))
    print(f"vulkan: {measured} ids measured and checked; the rest skipped with their reasons")


if __name__ == "__main__":
    main()
