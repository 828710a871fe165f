"""Shared by the Python unit tests: the repository's paths, and loading a worker script as
a module without running it (its ``__main__`` block starts the protocol loop)."""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKERS = os.path.join(ROOT, "scripts", "components")
LIB = os.path.join(WORKERS, "lib")
if LIB not in sys.path:
    sys.path.insert(0, LIB)


def load_worker(name):
    """``scripts/components/<name>.py`` as module ``<name>_worker``."""
    spec = importlib.util.spec_from_file_location(f"{name}_worker", os.path.join(WORKERS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
