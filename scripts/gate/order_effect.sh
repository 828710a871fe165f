#!/usr/bin/env bash
# The rounds' order on this machine, a benchmark rather than a timed test
# (docs/measurements/cpu-vm-tooling.md, "The rounds' order in the effect"). Gates the A/A pair
# of the gate-quality crate (scripts/gate/quality_crate.sh: `sum`, `xor`, `mul`, 20-100 us;
# head `aa` changes a comment only) REPEATS times in ROUNDS rounds, and reads back from each
# comparison.json every benchmark's per-round changes and their orders. Per benchmark and gate
# it prints, in percent:
# - the order term: half the difference between the mean log shift of the base-first rounds
#   and that of the head-first rounds, i.e. what the side that runs second pays per round;
# - the plain mean of the rounds' shifts, the gate's estimate before it weighed the two orders
#   half each;
# - the gate's change as reported (the two orders' means averaged).
# An A/A pair has no true change: what the plain mean shows beyond the reported change, with an
# odd ROUNDS, is the order term it kept (a third of it with three rounds).
#
#   scripts/gate/order_effect.sh [REPEATS (default 5)] [ROUNDS (default 3)] [WORKDIR]
#
# Needs cargo's cache to hold criterion 0.8 (it builds offline): run from the stackbench
# checkout after `cargo build`.
set -euo pipefail

repeats=${1:-5}
rounds=${2:-3}
work=${3:-$(mktemp -d)}
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "order_effect.sh: REPEATS must be a positive whole number, not '$repeats'" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ && $rounds -ge 2 ]] || { echo "order_effect.sh: ROUNDS must be a whole number of at least 2, not '$rounds'" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/gate/quality_crate.sh
source "$here/scripts/gate/quality_crate.sh"
prepare_quality_crate "$here" "$work" aa

outs=()
for rep in $(seq 1 "$repeats"); do
    out="$work/gate-aa-$rep"
    rc=0
    "$bin" gate --base base --head aa --rounds "$rounds" --max-rounds "$rounds" --out "$out" \
        --results "$work/runs" > /dev/null 2> "$out.log" || rc=$?
    # 0 pass, 1 regression, 3 unsure: each is a verdict, and each has its rounds.
    if [[ ! -f $out/comparison.json ]]; then
        echo "order_effect.sh: gate $rep (exit $rc) wrote no comparison.json; its log: $out.log" >&2
        continue
    fi
    outs+=("$out/comparison.json")
done
[[ ${#outs[@]} -gt 0 ]] || { echo "order_effect.sh: no gate finished" >&2; exit 1; }

python3 - "${outs[@]}" <<'PY'
import json, math, sys
from statistics import mean

def pct(log_shift):
    return math.expm1(log_shift) * 100.0

rows = []
for path in sys.argv[1:]:
    comparison = json.load(open(path))
    reported = {r["id"]: r.get("change_percent") for r in comparison["comparisons"]}
    for bench in comparison.get("rounds", []):
        shifts = [(f["order"], math.log1p(f["change_percent"] / 100.0)) for f in bench["rounds"]]
        first = [d for order, d in shifts if order == "base first"]
        second = [d for order, d in shifts if order == "head first"]
        if not first or not second:
            print(f"{path}: {bench['id']}: rounds of one order only, no order term", file=sys.stderr)
            continue
        row = {
            "comparison": path,
            "id": bench["id"],
            "rounds": len(shifts),
            "order_term_percent": pct((mean(first) - mean(second)) / 2.0),
            "plain_mean_percent": pct(mean(d for _, d in shifts)),
            "balanced_percent": pct((mean(first) + mean(second)) / 2.0),
            "reported_percent": reported.get(bench["id"]),
        }
        rows.append(row)
        print(json.dumps(row))
if not rows:
    sys.exit("order_effect.sh: no benchmark had rounds of both orders")
for bench in sorted({r["id"] for r in rows}):
    mine = [r for r in rows if r["id"] == bench]
    terms = [r["order_term_percent"] for r in mine]
    plain = [abs(r["plain_mean_percent"]) for r in mine]
    balanced = [abs(r["balanced_percent"]) for r in mine]
    print(f"{bench}: {len(mine)} A/A gates of {mine[0]['rounds']} rounds; order term mean "
          f"{mean(terms):+.2f} % (min {min(terms):+.2f}, max {max(terms):+.2f}); |change| "
          f"plain mean {mean(plain):.2f} %, order-balanced {mean(balanced):.2f} %")
PY
echo "gates' files: $work"
