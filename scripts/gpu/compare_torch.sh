#!/usr/bin/env bash
# Runs stackbench's CUDA benchmarks and their PyTorch equivalents in one run on this GPU and
# prints the ratios the GPU issue's acceptance checks use (see compare_torch.py).
# Usage: scripts/gpu/compare_torch.sh [--json out.json] [--samples N]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${PYTHON:-python3}"
if ! "$python" -c 'import torch' 2>/dev/null; then
    echo "compare_torch: PyTorch is not importable by $python (set PYTHON or pip install torch)" >&2
    exit 2
fi
# pip-installed CUDA libraries (nvidia-*-cu12/cu13 wheels) are found by stackbench itself;
# this also lets any child process find them.
nvidia_dirs="$("$python" - <<'PY'
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
print(":".join(d for r in roots for d in glob.glob(os.path.join(r, "nvidia", "*", "lib"))))
PY
)"
export LD_LIBRARY_PATH="${nvidia_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$python" "$repo/scripts/gpu/compare_torch.py" --repo "$repo" "$@"
