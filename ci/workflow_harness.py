"""Runs steps of stackbench's GitHub Actions workflows here, for real, with bash.

No GitHub runner exists on this machine, so the tests take a step's `run:` script out of
the workflow file exactly as it is and run it with the environment the runner would give
it (RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and the step's `env:` values, which
the test supplies already evaluated), with fake `gh` / `analyze-trends` programs where the
real ones would need GitHub or a benchmark run.
"""

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def step_script(workflow, job, step_name):
    doc = yaml.safe_load((ROOT / ".github/workflows" / workflow).read_text())
    for step in doc["jobs"][job]["steps"]:
        if step.get("name") == step_name:
            return step["run"]
    raise SystemExit(f"{workflow}: job {job} has no step named {step_name!r}")


def write_program(directory, name, text):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)
    return path


class Runner:
    """One job's worth of runner state: its temp dir, its files and PATH additions."""

    def __init__(self, tmp, fake_bin=None):
        self.tmp = Path(tmp)
        self.temp = self.tmp / "runner-temp"
        self.temp.mkdir(parents=True, exist_ok=True)
        self.summary = self.tmp / "step-summary.md"
        self.summary.touch()
        self.fake_bin = fake_bin

    def run(self, script, env, cwd=None):
        """Runs `script` as the runner's default bash shell does (`bash -e`); returns the
        completed process and the step's outputs (GITHUB_OUTPUT's key=value lines)."""
        output = self.tmp / "github-output"
        output.write_text("")
        path = os.environ["PATH"] if self.fake_bin is None else f"{self.fake_bin}:{os.environ['PATH']}"
        full_env = dict(os.environ, PATH=path, RUNNER_TEMP=str(self.temp), GITHUB_OUTPUT=str(output),
                        GITHUB_STEP_SUMMARY=str(self.summary), **env)
        result = subprocess.run(["bash", "-e", "-c", script], env=full_env, cwd=cwd or self.tmp,
                                capture_output=True, text=True)
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return result, outputs


def report(test, total, failures):
    """Prints each failure and the tally the way every workflow test does; the exit code."""
    for failure in failures:
        print(f"{test}: FAILED {failure}", file=sys.stderr)
    print(f"{test}: {total - len(failures)}/{total} cases passed")
    return 1 if failures else 0
