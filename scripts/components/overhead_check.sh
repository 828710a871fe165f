#!/usr/bin/env bash
# Harness overhead check: times one ~100 µs torch op through `cargo bench --bench
# components` and through torch.utils.benchmark.Timer in the same Python environment, and
# prints both and the difference (exit 1 when it exceeds 2 %). See overhead_check.py.
#
# Usage: scripts/components/overhead_check.sh [--target-us 100] [--threads 1] [--seconds 10]
# Python: $STACKBENCH_PYTHON, else .venv-components/bin/python (ci/setup_python_env.sh).
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${STACKBENCH_PYTHON:-$repo_root/.venv-components/bin/python}"
if [[ ! -x "$python" ]]; then
    echo "overhead_check: no Python at $python; run ci/setup_python_env.sh or set STACKBENCH_PYTHON" >&2
    exit 2
fi
exec "$python" -u "$repo_root/scripts/components/overhead_check.py" --repo "$repo_root" "$@"
