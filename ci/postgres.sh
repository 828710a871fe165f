#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests: `ci/postgres.sh start DIR` makes a cluster in
# DIR (Debian's postgresql 15, installed with apt-get when missing and run as root), starts it
# on 127.0.0.1 at a free port with its socket in DIR, and prints its URL; `stop DIR` stops it.
# Trust authentication on localhost only (pg_hba from initdb --auth=trust allows local and
# 127.0.0.1/::1 connections, and the server listens on 127.0.0.1 alone); durability is off
# (fsync, synchronous_commit) because the data dies with the test run, unless
# STACKBENCH_PG_DURABLE=1. Takes a few seconds.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
action=$1
dir=$(realpath -m "$2")

find_bin() {
    local candidate
    for candidate in /usr/lib/postgresql/*/bin; do
        [[ -x "$candidate/initdb" ]] && { echo "$candidate"; return 0; }
    done
    command -v initdb >/dev/null && { dirname "$(command -v initdb)"; return 0; }
    return 1
}

bin=$(find_bin || true)
if [[ -z "$bin" && $action == start ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "ci/postgres.sh: installing postgresql with apt-get" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
        bin=$(find_bin)
    else
        echo "ci/postgres.sh: PostgreSQL is not installed (apt-get install postgresql, as root)" >&2
        exit 1
    fi
fi

# PostgreSQL refuses to run as root: as root, run its tools as the `postgres` user.
as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        su postgres -s /bin/bash -c "$(printf '%q ' "$@")"
    else
        "$@"
    fi
}

case $action in
start)
    mkdir -p "$dir"
    if [[ $(id -u) -eq 0 ]]; then
        chown postgres: "$dir"
        # The postgres user has to reach DIR through its parents (temp dirs are 0700).
        parent=$(dirname "$dir")
        while [[ $parent != / ]]; do
            chmod o+x "$parent" 2>/dev/null || true
            parent=$(dirname "$parent")
        done
    fi
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bin/initdb" --no-sync --auth=trust --username=postgres --encoding=UTF8 \
        --locale=C -D "$dir/data" >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    # STACKBENCH_PG_DURABLE=1 keeps PostgreSQL's own durability (for measurements of writes).
    durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [[ ${STACKBENCH_PG_DURABLE:-0} == 1 ]] && durability=""
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 $durability -c max_connections=200" \
        >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    echo "$port" >"$dir/port"
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
stop)
    [[ -d "$dir/data" ]] || exit 0
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    ;;
*)
    usage
    ;;
esac
