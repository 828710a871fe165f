#!/usr/bin/env bash
# Sweep overhead check: times model-sweep cells (decoder prefill and decode) through
# `cargo bench --bench models` with a plan from `stackbench sweep --print-plan`, and the
# same calls in a bare loop under torch.utils.benchmark.Timer, in interleaved rounds;
# prints both and the difference (exit 1 when a cell is over the limit, default 3 %; 2 for
# bad input). See models_overhead_check.py.
#
# Usage: scripts/components/models_overhead_check.sh [--model gpt2-small] [--batch 1,4]
#        [--seq 128] [--phases prefill,decode] [--new-tokens 16] [--threads 1]
#        [--seconds 8] [--rounds 3] [--limit 0.03] [--json FILE]
# Python: $STACKBENCH_PYTHON, else .venv-components/bin/python (ci/setup_python_env.sh).
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${STACKBENCH_PYTHON:-$repo_root/.venv-components/bin/python}"
if [[ ! -x "$python" ]]; then
    echo "models_overhead_check: no Python at $python; run ci/setup_python_env.sh or set STACKBENCH_PYTHON" >&2
    exit 2
fi
exec "$python" -u "$repo_root/scripts/components/models_overhead_check.py" --repo "$repo_root" "$@"
