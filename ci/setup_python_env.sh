#!/usr/bin/env bash
# Creates (or reuses) the virtualenv the component tier's tests and benches run in, and
# installs the CPU Python stack the component workers drive: torch, onnxruntime, onnx,
# openvino, numpy, and transformers (the model sweep builds its models from configs with
# random weights; nothing is downloaded). Idempotent: when every package already imports, it installs nothing
# and takes a few seconds, so CI can call it on every run.
#
# Usage: ci/setup_python_env.sh [VENV_DIR]   (default: .venv-components at the repo root)
# Env:   STACKBENCH_BOOTSTRAP_PYTHON  interpreter that creates the venv (default: python3)
#
# The PyPI torch wheel for Linux carries the CUDA libraries (about 5.5 GB); it runs on a
# CPU-only machine, and it is the wheel a user of a GPU machine would have, so the same
# environment serves both. --no-cache-dir: a second copy of those wheels in pip's cache
# would cost CI's disk another 3 GB for an install that happens once.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-components}"
bootstrap="${STACKBENCH_BOOTSTRAP_PYTHON:-python3}"
packages=(numpy torch onnx onnxruntime openvino transformers)
# Import names of the packages above, in the same order.
modules=(numpy torch onnx onnxruntime openvino transformers)

if [[ -x "$venv/bin/python" ]]; then
    echo "setup_python_env: reusing virtualenv $venv"
else
    echo "setup_python_env: creating virtualenv $venv with $($bootstrap --version 2>&1)"
    "$bootstrap" -m venv "$venv"
fi
python="$venv/bin/python"

missing=()
for i in "${!modules[@]}"; do
    if ! "$python" -c "import ${modules[$i]}" >/dev/null 2>&1; then
        missing+=("${packages[$i]}")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "setup_python_env: all packages already installed, nothing to do"
else
    echo "setup_python_env: installing ${missing[*]} (torch from PyPI takes minutes the first time)"
    "$python" -m pip install --disable-pip-version-check --no-cache-dir --quiet "${missing[@]}"
fi

# ptxas for the kernel check (scripts/gpu/check_kernels.sh): the nvcc wheel of the same
# release as the NVRTC that torch brought (a ptxas older than NVRTC rejects its PTX).
# --no-deps: it must not move the CUDA libraries torch was built against.
nvrtc_version="$("$python" -c 'import importlib.metadata as m; print(m.version("nvidia-cuda-nvrtc"))' 2>/dev/null || true)"
if [[ -n "$nvrtc_version" ]] && ! compgen -G "$venv/lib/python3*/site-packages/nvidia/cu*/bin/ptxas" >/dev/null; then
    release="$(echo "$nvrtc_version" | cut -d. -f1,2)"
    echo "setup_python_env: installing nvidia-cuda-nvcc $release.* (ptxas for the NVRTC kernel check)"
    "$python" -m pip install --disable-pip-version-check --no-cache-dir --quiet --no-deps "nvidia-cuda-nvcc==$release.*"
fi

"$python" - <<'PY'
import importlib, sys
print(f"setup_python_env: python {sys.version.split()[0]} at {sys.executable}")
for name in ("numpy", "torch", "onnx", "onnxruntime", "openvino", "transformers"):
    module = importlib.import_module(name)
    version = getattr(module, "__version__", None)
    if version is None and name == "openvino":
        version = module.get_version()
    print(f"setup_python_env:   {name} {version}")
PY
echo "setup_python_env: use it with STACKBENCH_PYTHON=$python"
