#!/usr/bin/env python3
"""Runs history.yml's suite step for real against a fake ./run_benchmarks.sh.

Checks what the step asks of run_benchmarks.sh (suite, label with the pushed SHA, the
persistent results directory from the input/variable or the default under $HOME), that
the report it wrote is staged for upload, and that a suite with a failing target (which
still writes the report, then exits 1) fails the step with the report staged, so the
upload step (`if: !cancelled()`) still has it.
"""

import sys
import tempfile
from pathlib import Path

from workflow_harness import Runner, report, step_script, write_program

FAKE_SUITE = r"""#!/usr/bin/env bash
# Fake run_benchmarks.sh: logs its argv, writes a report into --results, exits $FAKE_EXIT.
printf '%s\n' "$@" > "$FAKE_LOG"
while [[ $# -gt 0 ]]; do [[ "$1" == --results ]] && results="$2"; shift; done
mkdir -p "$results/reports" && echo "# report" > "$results/reports/report.md"
exit "${FAKE_EXIT:-0}"
"""
SHA = "89abcdef0123456789abcdef0123456789abcdef"


def run(tmp, results_dir, fake_exit="0"):
    root = Path(tmp)
    repo = root / "repo"
    write_program(repo, "run_benchmarks.sh", FAKE_SUITE)
    (root / "home").mkdir()
    runner = Runner(root)
    env = {"RESULTS_DIR": results_dir, "SUITE": "quick", "PYTHON": "", "SHA": SHA, "HOME": str(root / "home"),
           "FAKE_LOG": str(root / "argv"), "FAKE_EXIT": fake_exit}
    result, _ = runner.run(step_script("history.yml", "history", "Run the suite and record the run"), env, cwd=repo)
    argv = (root / "argv").read_text().split("\n")[:-1] if (root / "argv").exists() else []
    return result, argv, runner.temp / "history/reports/report.md", root


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        result, argv, staged, root = run(tmp, "")
        expected = ["--suite", "quick", "--label", f"main@{SHA[:12]}", "--results", str(root / "home/stackbench-results")]
        if result.returncode != 0 or argv != expected or not staged.exists():
            failures.append(f"default results directory: exit {result.returncode}, argv {argv}, staged {staged.exists()}")
    with tempfile.TemporaryDirectory() as tmp:
        result, argv, staged, _ = run(tmp, f"{tmp}/persist")
        if result.returncode != 0 or argv[-2:] != ["--results", f"{tmp}/persist"] or not staged.exists():
            failures.append(f"configured results directory: exit {result.returncode}, argv {argv}")
    with tempfile.TemporaryDirectory() as tmp:
        result, _, staged, _ = run(tmp, "", fake_exit="1")
        if result.returncode != 1 or not staged.exists():
            failures.append(f"failing target: exit {result.returncode} (expected 1), report staged {staged.exists()}")
    return report("test_history_workflow", 3, failures)


if __name__ == "__main__":
    sys.exit(main())
