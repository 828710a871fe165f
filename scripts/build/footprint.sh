#!/usr/bin/env bash
# What one bench target costs to build: the distinct packages among the compiler artifacts
# of `cargo build --release --bench TARGET` (proc macros and build scripts included), the
# figure issue 27 set a goal for (at most half of the one-crate layout's 294).
# Usage: scripts/build/footprint.sh [TARGET]   (default gemm; builds it if needed)
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${1:-gemm}"
cargo build --release --bench "$target" --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
packages = set()
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("reason") == "compiler-artifact":
        packages.add(message["package_id"])
if not packages:
    sys.exit("no compiler artifacts: did the build fail?")
print(len(packages))
'
