#!/usr/bin/env python3
"""Runs gate.yml's job steps for real, in order, against a fake `analyze-trends`; and the
merge job's import-and-report step over downloaded artifacts.

The reusable workflow cannot run here (no GitHub, no GPU runner), so its steps are taken
from the YAML as they are and run by bash in a temporary git repository whose base branch
moved on after the PR branched off (so the merge base differs from the base tip). The
install step "installs" a fake analyze-trends that logs its arguments and writes what the
real `gate` writes. The cases check what the workflow passes to `analyze-trends gate` for
revision sides and environment sides, what it refuses, what lands in the artifact (runs,
comparison, meta.json) and the job summary, and the exit code the job ends with.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from workflow_harness import Runner, report, step_script

FAKE_ANALYZE_TRENDS = r"""#!/usr/bin/env bash
# Fake analyze-trends: logs argv as one JSON line; `gate` writes its three files and two runs.
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$FAKE_LOG"
[[ "$1" == --version ]] && { echo "analyze-trends 0.0.0-fake"; exit 0; }
if [[ "$1" == gate ]]; then
    out="" results=""
    while [[ $# -gt 0 ]]; do
        case "$1" in --out) out="$2" ;; --results) results="$2" ;; --) break ;; esac
        shift
    done
    mkdir -p "$out" "$results/runs"
    printf '<!-- stackbench-gate -->\n| table |\n' > "$out/comparison.md"
    echo '{"comparisons": []}' > "$out/comparison.json"
    echo '### fake summary' > "$out/summary.md"
    echo '{"run_id": "base"}' > "$results/runs/base.json"
    echo '{"run_id": "head"}' > "$results/runs/head.json"
    exit "${FAKE_GATE_EXIT:-0}"
fi
if [[ "$1" == hardware ]]; then echo "hardware report as $5"; fi
if [[ "$1" == import && " $* " == *" --store "* ]]; then
    echo "${STACKBENCH_STORE_TOKEN:-}" >> "$FAKE_LOG.token"
    exit "${FAKE_STORE_EXIT:-0}"
fi
"""

INSTALL = 'mkdir -p "$STACKBENCH_BIN/bin" && cp "$FAKE_TOOL" "$STACKBENCH_BIN/bin/analyze-trends"'
RUNNER_JSON = '[\n  "self-hosted",\n  "gpu-a"\n]'  # toJSON(matrix.runner) is pretty-printed
FAIL_STEP = "Fail on a regression, a failed benchmark or an unsure verdict"
STEPS = ["Resolve the revisions", "Find the merge base", "Install stackbench",
         "Set up the sides' environments", "Gate", "Job summary and the runs' JSON",
         FAIL_STEP]


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root):
    """main: c1 -> c3; pr: c1 -> c2. Returns (repo, merge base c1, main tip c3, pr tip c2)."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    for name, branch in (("c1", None), ("c2", "pr"), ("c3", "main")):
        if branch:
            git(repo, "checkout", "-q", "-B", branch, "HEAD" if name == "c2" else "pr~1")
        (repo / name).write_text(name)
        git(repo, "add", name)
        git(repo, "commit", "-q", "-m", name)
    return repo, git(repo, "rev-parse", "main~1"), git(repo, "rev-parse", "main"), git(repo, "rev-parse", "pr")


def step_env(name, inputs, outputs):
    """Each step's `env:` as the runner would evaluate it from the inputs and outputs."""
    revs, base, gate = outputs.get("revs", {}), outputs.get("base", {}), outputs.get("gate", {})
    return {
        "Resolve the revisions": {"BASE_REF": inputs["base-ref"], "HEAD_REF": inputs["head-ref"]},
        "Find the merge base": {"BASE_REF": revs.get("base", ""), "HEAD_REF": revs.get("head", "")},
        "Install stackbench": {"INSTALL": INSTALL, "STACKBENCH_BIN": inputs["temp"] + "/stackbench-gate/tool",
                               "STACKBENCH_BASE_SHA": base.get("sha", ""), "STACKBENCH_HEAD_SHA": base.get("head", "")},
        "Set up the sides' environments": {"BASE_SETUP": inputs["base-setup"], "HEAD_SETUP": inputs["head-setup"],
                                           "STACKBENCH_BASE_SHA": base.get("sha", ""),
                                           "STACKBENCH_HEAD_SHA": base.get("head", "")},
        "Gate": {"SIDES": inputs["sides"], "BASE_SHA": base.get("sha", ""), "HEAD_SHA": base.get("head", ""),
                 "BENCHES": inputs["benches"], "FILTER": inputs["filter"], "THRESHOLD": inputs["threshold"],
                 "MEASURE": inputs["measure"], "LOCK_CLOCKS": inputs["lock-clocks"], "ROUNDS": "3",
                 "MAX_ROUNDS": "6", "CRITERION_ARGS": inputs["criterion-args"], "CPUS": inputs["cpus"], "PYTHON": "",
                 "LABELS": inputs["labels"]},
        "Job summary and the runs' JSON": {"RUNNER_JSON": RUNNER_JSON, "COMMENT_MODE": "on-change",
                                           "BASE_SHA": base.get("sha", ""), "HEAD_SHA": base.get("head", ""),
                                           "RESULTS_DIR": inputs["results-dir"], "STORE": inputs["store"],
                                           "STACKBENCH_STORE_TOKEN": inputs["store-token"]},
        FAIL_STEP: {"CODE": gate.get("code", ""), "UNSURE_FAILS": inputs["unsure-fails"],
                    "HEAD_SHA": base.get("head", "")},
    }[name]


def run_job(tmp, **overrides):
    """Runs the steps in order until one fails, as the runner does. Returns a dict with
    the failing step (or None), its exit code, the fake's calls and the runner."""
    root = Path(tmp)
    repo, merge_base, main_tip, pr_tip = make_repo(root)
    runner = Runner(root)
    inputs = {"base-ref": "main", "head-ref": "pr", "base-setup": "", "head-setup": "", "sides": "revisions",
              "benches": "", "filter": "", "criterion-args": "", "cpus": "", "results-dir": "",
              "labels": "[]", "unsure-fails": "true", "threshold": "5", "measure": "time",
              "lock-clocks": "false", "store": "", "store-token": "",
              "temp": str(runner.temp),
              **overrides}
    if inputs["labels"] == "HEAD_LABEL":
        inputs["labels"] = json.dumps(["run-benchmarks", f"stackbench-accept-unsure:{pr_tip[:7]}"])
    tool = root / "fake-analyze-trends"
    tool.write_text(FAKE_ANALYZE_TRENDS)
    tool.chmod(0o755)
    common = {"FAKE_TOOL": str(tool), "FAKE_LOG": str(root / "calls"), "FAKE_GATE_EXIT": overrides.get("exit", "0"),
              "FAKE_STORE_EXIT": overrides.get("store-exit", "0")}
    outputs, failed = {}, None
    for name in STEPS:
        result, out = runner.run(step_script("gate.yml", "gate", name), {**step_env(name, inputs, outputs), **common},
                                 cwd=repo)
        outputs[{"Resolve the revisions": "revs", "Find the merge base": "base", "Gate": "gate"}.get(name, name)] = out
        if result.returncode != 0:
            failed = (name, result.returncode, result.stdout + result.stderr)
            break
    calls = read_calls(root / "calls")
    gates = [c for c in calls if c[:1] == ["gate"]]
    token_log = root / "calls.token"
    return {"failed": failed, "gate": gates[0] if gates else None, "calls": calls, "runner": runner,
            "tokens": token_log.read_text().splitlines() if token_log.exists() else [],
            "shas": (merge_base, main_tip, pr_tip), "artifact": runner.temp / "stackbench-gate/artifact"}


def read_calls(log):
    """The fake analyze-trends' argv lists, in call order (none if it never ran)."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def pairs(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def check_revisions(job):
    merge_base, main_tip, pr_tip = job["shas"]
    argv = job["gate"] or []
    assert job["failed"] is None, f"a step failed: {job['failed']}"
    assert pairs(argv, "--base") == [merge_base], f"--base {pairs(argv, '--base')}, merge base {merge_base}, main {main_tip}"
    assert pairs(argv, "--head") == [pr_tip], f"--head {pairs(argv, '--head')}, expected {pr_tip}"
    assert pairs(argv, "--bench") == ["gemm", "attention"], argv
    assert pairs(argv, "--filter") == ["^gemm/cpu"], argv
    assert pairs(argv, "--base-env") == ["STACKBENCH_PYTHON=/venvs/base/bin/python", "LD_LIBRARY_PATH=/opt/a b"], argv
    assert argv[argv.index("--"):] == ["--", "--warm-up-time", "1"], argv
    assert pairs(argv, "--cpus") == ["2-3"], argv
    art = job["artifact"]
    meta = json.loads((art / "meta.json").read_text())
    assert meta["runner"] == ["self-hosted", "gpu-a"] and meta["base"] == merge_base and meta["head"] == pr_tip, meta
    assert sorted(p.name for p in (art / "runs").iterdir()) == ["base.json", "head.json"]
    assert (art / "comparison/exit-code").read_text().strip() == "0"
    assert "### fake summary" in job["runner"].summary.read_text()


def check_environments(job):
    argv = job["gate"] or []
    assert job["failed"] is None, f"a step failed: {job['failed']}"
    assert "--base" not in argv and "--head" not in argv, argv
    assert "--cpus" not in argv, argv
    assert pairs(argv, "--head-env") == ["STACKBENCH_PYTHON=/venvs/head/bin/python"], argv
    assert pairs(argv, "--base-env") == [], argv
    imports = [c for c in job["calls"] if c[:1] == ["import"]]
    assert len(imports) == 1 and imports[0][-2:] == ["--results", "/persist"], imports


def check_regression(job):
    assert job["failed"] and job["failed"][0] == FAIL_STEP, job["failed"]
    assert (job["artifact"] / "comparison/exit-code").read_text().strip() == "1"
    assert (job["artifact"] / "meta.json").exists(), "artifact not written before failing"


def check_unsure_fails(job):
    assert job["failed"] and job["failed"][:2] == (FAIL_STEP, 1), job["failed"]
    assert "unsure (exit 3)" in job["failed"][2] and "stackbench-accept-unsure:" in job["failed"][2], job["failed"]
    assert (job["artifact"] / "comparison/exit-code").read_text().strip() == "3"
    assert "--accept-unsure" not in (job["gate"] or []), job["gate"]


def check_unsure_allowed(job):
    assert job["failed"] is None, f"unsure-fails false still failed: {job['failed']}"
    assert (job["artifact"] / "comparison/exit-code").read_text().strip() == "3"


def check_accepted(job):
    _, _, pr_tip = job["shas"]
    argv = job["gate"] or []
    assert job["failed"] is None, f"a step failed: {job['failed']}"
    assert pairs(argv, "--accept-unsure") == [pr_tip], argv
    assert pairs(argv, "--accept-unsure-label") == [f"stackbench-accept-unsure:{pr_tip[:7]}"], argv


def check_label_of_another_head(job):
    argv = job["gate"] or []
    assert "--accept-unsure" not in argv, f"a label for another head was taken: {argv}"
    assert job["failed"] and job["failed"][0] == FAIL_STEP, job["failed"]


def check_counting(job):
    argv = job["gate"]
    assert job["failed"] is None, job["failed"]
    assert pairs(argv, "--measure") == ["instructions"], argv
    assert "--threshold" not in argv, f"an empty threshold leaves the measure's own default: {argv}"
    assert "--lock-clocks" in argv, argv


def check_time_default(job):
    argv = job["gate"]
    assert pairs(argv, "--measure") == ["time"] and pairs(argv, "--threshold") == ["5"], argv
    assert "--lock-clocks" not in argv, argv


def store_imports(job):
    return [c for c in job["calls"] if c[:1] == ["import"] and "--store" in c]


def check_store(job):
    assert job["failed"] is None, job["failed"]
    imports = store_imports(job)
    assert len(imports) == 1 and pairs(imports[0], "--store") == ["http://bench:8765"], job["calls"]
    assert imports[0][1] == str(job["artifact"] / "runs"), imports[0]
    assert job["tokens"] == ["t0ken"], job["tokens"]


def check_store_down(job):
    # The verdict stands: a store that is down warns, the runs stay in the artifact.
    assert job["failed"] is None, job["failed"]
    assert len(store_imports(job)) == 1, job["calls"]
    assert (job["artifact"] / "runs/head.json").exists()


def check_no_store(job):
    assert store_imports(job) == [] and job["tokens"] == [], job["calls"]


def refused_at(step, code=2):
    def check(job):
        assert job["failed"] and job["failed"][:2] == (step, code), job["failed"]
        assert job["gate"] is None, f"analyze-trends gate ran anyway: {job['gate']}"
    return check


CASES = {
    "store: the gate job imports both runs into it, token from the secret": (check_store, dict(
        store="http://bench:8765", store_token="t0ken")),
    "store down: the gate job warns and passes, the runs stay in the artifact": (check_store_down, dict(
        store="http://bench:8765", **{"store-exit": "1"})),
    "no store: nothing is imported anywhere": (check_no_store, dict()),
    "revision sides: merge base, benches, filter, base env, Criterion args, artifact": (check_revisions, dict(
        benches="gemm attention", filter="^gemm/cpu", criterion_args="--warm-up-time 1", cpus="2-3",
        base_setup='echo STACKBENCH_PYTHON=/venvs/base/bin/python >> "$STACKBENCH_SIDE_ENV"; '
                   'echo "LD_LIBRARY_PATH=/opt/a b" >> "$STACKBENCH_SIDE_ENV"')),
    "environment sides: no revisions, head env, import into results-dir": (check_environments, dict(
        sides="environments", results_dir="/persist",
        base_setup='[[ $STACKBENCH_BASE_SHA =~ ^[0-9a-f]{40}$ ]] && git cat-file -e "$STACKBENCH_BASE_SHA:c1"',
        head_setup='[[ $STACKBENCH_SIDE == head ]] && echo STACKBENCH_PYTHON=/venvs/head/bin/python >> "$STACKBENCH_SIDE_ENV"')),
    "a regression: artifact written, job fails at the end": (check_regression, dict(exit="1")),
    "unsure (exit 3): the job fails at the end, naming the acceptance label": (check_unsure_fails, dict(exit="3")),
    "unsure with unsure-fails false: the job passes": (check_unsure_allowed, dict(exit="3", unsure_fails="false")),
    "the acceptance label for the head: --accept-unsure with the head SHA and the label": (
        check_accepted, dict(labels="HEAD_LABEL")),
    "an acceptance label for another head: not passed, unsure still fails": (
        check_label_of_another_head, dict(exit="3", labels='["run-benchmarks", "stackbench-accept-unsure:0000000"]')),
    "counting mode with clocks locked and the measure's own threshold": (check_counting, dict(
        measure="instructions", threshold="", lock_clocks="true")),
    "time mode by default, the threshold passed on": (check_time_default, dict()),
    "a measure that is neither": (refused_at("Gate"), dict(measure="cycles")),
    "a threshold with shell in it": (refused_at("Gate"), dict(threshold="5;touch${IFS}/tmp/x")),
    "setup writing a line that is not KEY=VALUE": (refused_at("Set up the sides' environments"),
                                                   dict(base_setup='echo "oops" >> "$STACKBENCH_SIDE_ENV"')),
    "a bench target name with shell in it": (refused_at("Gate"), dict(benches="gemm;touch${IFS}/tmp/x")),
    "sides that are neither": (refused_at("Gate"), dict(sides="both")),
    "a cpus list with shell in it": (refused_at("Gate"), dict(cpus="1;touch${IFS}/tmp/x")),
    "a base revision that does not exist": (refused_at("Find the merge base", 2), dict(base_ref="no-such-branch")),
}


def run_hardware_job(tmp, runners, step="Import and report", env=None):
    """The merge job's import-and-report step (or `step`) over `runners` downloaded artifacts."""
    root = Path(tmp)
    runner = Runner(root)
    work = runner.temp / "stackbench-hardware"
    for index in range(runners):
        (work / f"in/stackbench-gate-{index}/runs").mkdir(parents=True)
        (work / f"in/stackbench-gate-{index}/runs/r{index}.json").write_text("{}")
    (work / "results").mkdir(parents=True)
    (work / "report").mkdir(parents=True)
    tool = work / "tool/bin/analyze-trends"
    tool.parent.mkdir(parents=True)
    tool.write_text(FAKE_ANALYZE_TRENDS)
    tool.chmod(0o755)
    result, _ = runner.run(step_script("gate.yml", "hardware", step), {"FAKE_LOG": str(root / "calls"), **(env or {})})
    calls = read_calls(root / "calls")
    return result, calls, work, runner


def check_hardware(tmp):
    result, calls, work, runner = run_hardware_job(tmp, 2)
    assert result.returncode == 0, result.stderr
    imported = sorted(Path(p).parent.name for p in calls[0][1:-2])
    assert calls[0][0] == "import" and imported == ["stackbench-gate-0", "stackbench-gate-1"], calls[0]
    assert [c[-1] for c in calls[1:]] == ["markdown", "html", "json"], calls
    for name in ("hardware.md", "hardware.html", "hardware.json"):
        assert (work / "report" / name).exists(), name
    assert "hardware report as markdown" in runner.summary.read_text()


def check_hardware_without_runs(tmp):
    result, calls, _, _ = run_hardware_job(tmp, 0)
    assert result.returncode == 1 and "no runner uploaded runs" in result.stdout, (result.returncode, result.stdout)
    assert calls == [], calls


DELIVER = "Deliver every runner's runs to the shared store"


def check_hardware_store(tmp):
    env = {"STORE": "http://bench:8765", "STACKBENCH_STORE_TOKEN": "t0ken"}
    result, calls, work, _ = run_hardware_job(tmp, 2, DELIVER, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(calls) == 1 and calls[0][0] == "import" and pairs(calls[0], "--store") == [env["STORE"]], calls
    imported = sorted(Path(p).parent.name for p in calls[0][1:] if p.endswith("/runs"))
    assert imported == ["stackbench-gate-0", "stackbench-gate-1"], calls[0]


def check_hardware_store_down(tmp):
    env = {"STORE": "http://bench:8765", "FAKE_STORE_EXIT": "1"}
    result, _, _, _ = run_hardware_job(tmp, 1, DELIVER, env)
    assert result.returncode == 1 and "could not all be delivered" in result.stdout, (result.returncode, result.stdout)


HARDWARE_CASES = {
    "merge job with a store: delivers every runner's runs to it": check_hardware_store,
    "merge job with the store down: fails saying the runs are in the artifacts": check_hardware_store_down,
    "merge job: imports every runner's runs, writes three report formats": check_hardware,
    "merge job with no runs: fails saying so": check_hardware_without_runs,
}


def main():
    failures = []
    for name, check in HARDWARE_CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            try:
                check(tmp)
            except AssertionError as e:
                failures.append(f"{name}: {e}")
    for name, (check, overrides) in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            try:
                check(run_job(tmp, **{k.replace("_", "-") if k != "exit" else k: v for k, v in overrides.items()}))
            except AssertionError as e:
                failures.append(f"{name}: {e}")
    return report("test_gate_workflow", len(CASES) + len(HARDWARE_CASES), failures)


if __name__ == "__main__":
    sys.exit(main())
