#!/usr/bin/env bash
# Every script the repository keeps must at least parse: `bash -n` for each shell script
# (*.sh, *.sbatch, and any tracked file whose first line names bash or sh) and a byte
# compile for each Python file. Nothing else in CI runs most of scripts/, so a script
# broken by an edit (a leftover half-copy of another one) stayed broken until a user ran it.
# shellcheck is not run: its findings over the existing scripts are a review, not a gate.
#
# Usage: ci/check_scripts.sh [ROOT]   (default: this repository; ROOT need not be a git
#        checkout, then every file under it is considered)
# Exit status: 0 when every script parses, 1 naming each one that does not.
set -uo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
cd "$root" || { echo "check_scripts: no such directory: $root" >&2; exit 2; }

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else
    mapfile -t files < <(find . -type f -not -path './.git/*' -not -path './target/*' \
        -not -path './.venv*' | sed 's|^\./||' | sort)
fi

shell=() python=()
for f in "${files[@]}"; do
    [[ -f "$f" ]] || continue
    case "$f" in
        *.py) python+=("$f"); continue ;;
        *.sh | *.sbatch) shell+=("$f"); continue ;;
    esac
    first=""
    IFS= read -r -n 128 first <"$f" 2>/dev/null
    if [[ "$first" =~ ^#!.*(/|env\ )(bash|sh)([[:space:]]|$) ]]; then
        shell+=("$f")
    fi
done

failed=()
for f in "${shell[@]}"; do
    if ! out=$(bash -n "$f" 2>&1); then
        echo "check_scripts: $f does not parse:" >&2
        echo "$out" | sed 's/^/  /' >&2
        failed+=("$f")
    fi
done
# One interpreter for all of them: a process each costs more than the compiling.
if [[ ${#python[@]} -gt 0 ]]; then
    mapfile -t broken_py < <(python3 - "${python[@]}" <<'PY'
import os, py_compile, sys, tempfile
with tempfile.TemporaryDirectory() as cache:
    for i, path in enumerate(sys.argv[1:]):
        try:
            py_compile.compile(path, cfile=os.path.join(cache, f"{i}.pyc"), doraise=True)
        except py_compile.PyCompileError as e:
            print(f"check_scripts: {path} does not compile:", file=sys.stderr)
            print("  " + str(e.msg).strip().replace("\n", "\n  "), file=sys.stderr)
            print(path)
PY
    )
    failed+=("${broken_py[@]}")
fi
echo "check_scripts: ${#shell[@]} shell scripts, ${#python[@]} Python files; ${#failed[@]} broken"
[[ ${#failed[@]} -eq 0 ]] || exit 1
