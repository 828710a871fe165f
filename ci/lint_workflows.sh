#!/usr/bin/env bash
# Lints the GitHub Actions workflows, which no machine here can run: zizmor (security
# audits; fails on findings of medium severity or higher) and ci/check_workflows.py (the
# project's rules: SHA pins with version comments, YAML and bash parse, permissions,
# timeouts, never cancelling a measurement, inputs that exist); then the workflows' own
# scripts run here: gate.yml's steps against a fake analyze-trends in a scratch git repo
# (ci/test_gate_workflow.py), history.yml's suite step against a fake run_benchmarks.sh
# (ci/test_history_workflow.py) and comment.yml's sticky-comment script against a fake `gh`
# (ci/test_comment_workflow.py, needs jq).
# zizmor and PyYAML come from PyPI into a small virtualenv of their own, .venv-lint
# (gitignored), made on first use; jq from Debian when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

ZIZMOR_VERSION=1.32.0
venv="${STACKBENCH_LINT_VENV:-$PWD/.venv-lint}"
if ! "$venv/bin/zizmor" --version 2>/dev/null | grep -qF "$ZIZMOR_VERSION" ||
    ! "$venv/bin/python" -c 'import yaml' 2>/dev/null; then
    echo "lint_workflows: installing zizmor $ZIZMOR_VERSION and PyYAML into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "zizmor==$ZIZMOR_VERSION" PyYAML
fi

"$venv/bin/zizmor" --offline --min-severity medium .github
"$venv/bin/python" ci/check_workflows.py --self-test
"$venv/bin/python" ci/check_workflows.py

if ! command -v jq >/dev/null && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq jq >/dev/null
fi
"$venv/bin/python" ci/test_gate_workflow.py
"$venv/bin/python" ci/test_history_workflow.py
"$venv/bin/python" ci/test_comment_workflow.py
