#!/usr/bin/env python3
"""Checks stackbench's GitHub Actions workflows for what zizmor does not check.

zizmor (run beside this by ci/lint_workflows.sh) finds security smells; this script holds
the project's own rules, which a workflow that no machine here can run must keep:
  - every file parses as YAML and every `run:` block parses as bash (`bash -n`);
  - every third-party `uses:` is pinned to a 40-hex commit SHA with a `# vX` comment;
  - no `pull_request_target`; no `${{ }}` inside `run:` (inputs go through `env:`);
  - every workflow sets top-level `permissions:`, every job a `timeout-minutes`
    (jobs that call a reusable workflow cannot: its jobs set it);
  - a `concurrency` never cancels a measurement in progress;
  - checkouts do not persist credentials, and a `workflow_run` workflow checks out nothing;
  - a reusable workflow's `unsure-fails` input is a boolean defaulting to true;
  - a reusable workflow reads only inputs it declares, its callers pass only declared
    inputs and every required one, and `workflow_run` names an existing workflow.
`--self-test` feeds it broken workflows and fails unless each one is caught.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

SHA_PIN = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")
USES_LINE = re.compile(r"^\s*(?:-\s*)?uses:\s*(\S+)(.*)$")
VERSION_COMMENT = re.compile(r"#\s*v\d+(\.\d+)*")
INPUT_REF = re.compile(r"\binputs\.([A-Za-z_][A-Za-z0-9_-]*)")
EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.S)


def triggers(doc):
    # YAML 1.1 reads the bare key `on` as the boolean True.
    on = doc.get("on", doc.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return {t: None for t in on}
    return on or {}


def steps_of(job):
    return job.get("steps") or []


def check_uses_lines(path, text, errors):
    for number, line in enumerate(text.splitlines(), 1):
        m = USES_LINE.match(line)
        if not m:
            continue
        target, rest = m.group(1).strip("'\""), m.group(2)
        if target.startswith("./") or target.startswith("docker://"):
            continue
        if not SHA_PIN.match(target):
            errors.append(f"{path}:{number}: `{target}` is not pinned to a 40-hex commit SHA")
        elif not VERSION_COMMENT.search(rest):
            errors.append(f"{path}:{number}: `{target}` has no `# vX.Y.Z` comment naming the version")


def check_run_blocks(path, name, job, errors):
    for index, step in enumerate(steps_of(job)):
        script = step.get("run")
        where = f"{path}: job `{name}` step {index + 1} ({step.get('name', 'unnamed')})"
        if script is None:
            continue
        if "${{" in script:
            errors.append(f"{where}: `${{{{ }}}}` inside `run:` (pass it through `env:`)")
        shell = EXPRESSION.sub("EXPR", script)
        result = subprocess.run(["bash", "-n"], input=shell, text=True, capture_output=True)
        if result.returncode != 0:
            errors.append(f"{where}: bash -n: {result.stderr.strip()}")


def check_job(path, name, job, is_workflow_run, errors):
    if "uses" not in job and "timeout-minutes" not in job:
        errors.append(f"{path}: job `{name}` has no timeout-minutes")
    concurrency = job.get("concurrency")
    if isinstance(concurrency, dict) and concurrency.get("cancel-in-progress") not in (False, None):
        errors.append(f"{path}: job `{name}` may cancel a run in progress")
    for step in steps_of(job):
        uses = str(step.get("uses", ""))
        if uses.startswith("actions/checkout@"):
            if is_workflow_run:
                errors.append(f"{path}: job `{name}` checks out code in a workflow_run workflow")
            if (step.get("with") or {}).get("persist-credentials") is not False:
                errors.append(f"{path}: job `{name}` checks out without persist-credentials: false")
    check_run_blocks(path, name, job, errors)


def check_workflow(path, text, doc, errors):
    on = triggers(doc)
    if "pull_request_target" in on:
        errors.append(f"{path}: uses pull_request_target")
    if "permissions" not in doc:
        errors.append(f"{path}: no top-level permissions:")
    concurrency = doc.get("concurrency")
    if isinstance(concurrency, dict) and concurrency.get("cancel-in-progress") not in (False, None):
        errors.append(f"{path}: workflow concurrency may cancel a run in progress")
    check_uses_lines(path, text, errors)
    for name, job in (doc.get("jobs") or {}).items():
        check_job(path, name, job, "workflow_run" in on, errors)
    call = on.get("workflow_call") if isinstance(on, dict) else None
    if call is not None:
        declared = set(((call or {}).get("inputs") or {}).keys())
        for ref in sorted(set(INPUT_REF.findall(text)) - declared):
            errors.append(f"{path}: reads inputs.{ref}, which workflow_call does not declare")
        unsure = ((call or {}).get("inputs") or {}).get("unsure-fails")
        if unsure is not None and ((unsure or {}).get("type") != "boolean" or (unsure or {}).get("default") is not True):
            errors.append(f"{path}: input unsure-fails must be a boolean that defaults to true "
                          "(an unsure verdict never passes silently)")


def check_cross(workflows, errors):
    names = {doc.get("name") for _, doc in workflows.values()}
    for path, (_, doc) in workflows.items():
        on = triggers(doc)
        run = on.get("workflow_run") if isinstance(on, dict) else None
        for wanted in (run or {}).get("workflows", []):
            if wanted not in names:
                errors.append(f"{path}: workflow_run names `{wanted}`, which no workflow is called")
        for name, job in (doc.get("jobs") or {}).items():
            uses = job.get("uses", "")
            if not uses.startswith("./"):
                continue
            callee = workflows.get(Path(uses[2:]).resolve())
            if callee is None:
                errors.append(f"{path}: job `{name}` calls {uses}, which does not exist")
                continue
            inputs = (triggers(callee[1]).get("workflow_call") or {}).get("inputs") or {}
            given = set((job.get("with") or {}).keys())
            for key in sorted(given - set(inputs)):
                errors.append(f"{path}: job `{name}` passes `{key}`, which {uses} does not declare")
            for key, spec in inputs.items():
                if (spec or {}).get("required") and key not in given:
                    errors.append(f"{path}: job `{name}` omits required input `{key}` of {uses}")


def check_tree(root):
    errors, workflows = [], {}
    files = sorted(list(root.glob(".github/workflows/*.yml")) + list(root.glob(".github/workflows/*.yaml")))
    if not files:
        errors.append(f"{root}: no workflows under .github/workflows")
    for path in files:
        text = path.read_text()
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            errors.append(f"{path}: not valid YAML: {e}")
            continue
        if not isinstance(doc, dict) or "jobs" not in doc:
            errors.append(f"{path}: not a workflow (no jobs:)")
            continue
        workflows[path.resolve()] = (text, doc)
        check_workflow(path, text, doc, errors)
    check_cross(workflows, errors)
    return errors, len(files)


GOOD_STEP = (
    "      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1\n"
    "        with:\n          persist-credentials: false\n"
)
UNPINNED = "      - uses: actions/checkout@v4\n"
NO_COMMENT = "      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1\n"
PERSISTED = "      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1\n"
CANCELS = "    timeout-minutes: 5\n    concurrency:\n      group: g\n      cancel-in-progress: true\n"
WORKFLOW_RUN = "{workflow_run: {workflows: [t], types: [completed]}}"
CALL = "{workflow_call: {inputs: {a: {type: string}}}}"
UNDECLARED = "      - run: echo hi\n        env:\n          B: ${{ inputs.b }}\n"


def workflow_text(trigger, steps, job_extra="    timeout-minutes: 5\n", top="permissions: {}\n"):
    return f"name: t\non: {trigger}\n{top}jobs:\n  j:\n    runs-on: ubuntu-latest\n{job_extra}    steps:\n{steps}"


# Each broken workflow, and the words its error must contain (so a case caught by the
# wrong rule does not count).
SELF_TEST_CASES = {
    "unpinned action": (workflow_text("push", UNPINNED), "not pinned"),
    "SHA without version comment": (workflow_text("push", NO_COMMENT), "no `# vX.Y.Z` comment"),
    "expression in run": (workflow_text("push", "      - run: echo ${{ github.ref }}\n"), "inside `run:`"),
    "bash syntax error": (workflow_text("push", "      - run: |\n          if true; then echo\n"), "bash -n"),
    "credentials persisted": (workflow_text("push", PERSISTED), "persist-credentials"),
    "pull_request_target": (workflow_text("pull_request_target", GOOD_STEP), "pull_request_target"),
    "no permissions": (workflow_text("push", GOOD_STEP, top=""), "no top-level permissions"),
    "no timeout": (workflow_text("push", GOOD_STEP, job_extra=""), "no timeout-minutes"),
    "cancels in progress": (workflow_text("push", GOOD_STEP, job_extra=CANCELS), "may cancel"),
    "checkout in workflow_run": (workflow_text(WORKFLOW_RUN, GOOD_STEP), "checks out code in a workflow_run"),
    "workflow_run of no workflow": (workflow_text(WORKFLOW_RUN.replace("[t]", "[gone]"), GOOD_STEP.replace("checkout", "cache")), "no workflow is called"),
    "undeclared input": (workflow_text(CALL, UNDECLARED), "does not declare"),
    "unsure passes by default": (workflow_text("{workflow_call: {inputs: {unsure-fails: {type: boolean, default: false}}}}", GOOD_STEP), "unsure-fails must be a boolean that defaults to true"),
    "not YAML": ("name: [unclosed\n", "not valid YAML"),
}


def tree_with(tmp, name, text):
    root = Path(tmp) / re.sub(r"\W", "_", name)
    (root / ".github/workflows").mkdir(parents=True)
    (root / ".github/workflows/w.yml").write_text(text)
    return root


def self_test():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        errors, _ = check_tree(tree_with(tmp, "clean", workflow_text("push", GOOD_STEP)))
        if errors:
            failures.append(f"a clean workflow was rejected: {errors}")
        for name, (text, expected) in SELF_TEST_CASES.items():
            errors, _ = check_tree(tree_with(tmp, name, text))
            if not any(expected in e for e in errors):
                failures.append(f"not caught: {name} (errors: {errors})")
    for f in failures:
        print(f"check_workflows self-test: {f}", file=sys.stderr)
    total = len(SELF_TEST_CASES)
    print(f"check_workflows self-test: {total - len([f for f in failures if f.startswith('not')])}/{total} broken workflows caught")
    return 1 if failures else 0


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    errors, count = check_tree(root)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check_workflows: {len(errors)} problem(s) in {count} workflow(s)", file=sys.stderr)
        return 1
    print(f"check_workflows: {count} workflows OK (pinned, parsed, bash -n, permissions, timeouts)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
