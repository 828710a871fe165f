#!/usr/bin/env bash
# rustc for this workspace's own crates, with clippy's lints and warnings denied; plain rustc
# for everything else. ci/test.sh sets it as RUSTC_WORKSPACE_WRAPPER so that the release and
# test builds it needs anyway also lint every target, in place of a third compilation by
# `cargo clippy --all-targets` (about 4 minutes of CI on 2 cores).
#
# Cargo calls a workspace wrapper as `wrapper RUSTC ARGS...` for the members of whatever
# workspace it builds, and the variable reaches the cargo runs the tests start too: the
# gate's fixture crates are workspaces of their own, so only the crates whose manifest lies
# in this checkout (its root and crates/*) are linted. Everything else runs as cargo asked.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "${CARGO_MANIFEST_DIR:-}" in
    "$root" | "$root"/crates/*)
        # clippy-driver takes the wrapper's arguments as they come (RUSTC first).
        exec clippy-driver "$@" -D warnings
        ;;
esac
exec "$@"
