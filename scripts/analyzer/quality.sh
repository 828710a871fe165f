#!/usr/bin/env bash
# The gate's quality bar on the simulator, over several seeds, with the two reference rules
# (Criterion-like, plain 5 % median threshold) on the same simulated data.
# Usage: scripts/analyzer/quality.sh [SEEDS] [extra simulate args, e.g. --drift 0.01]
set -euo pipefail
seeds=${1:-10}
shift || true
cd "$(dirname "$0")/../.."
cargo build --release --quiet --bin analyze-trends
bin=target/release/analyze-trends
for preset in clean noisy; do
  "$bin" simulate quality --preset "$preset" --repeats "$seeds" --seed 1 "$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = d["results"]
def stat(get):
    v = [get(x) for x in r]
    return "%.2f %% (worst %.2f %%)" % (100 * sum(v) / len(v), 100 * (max(v) if get.__name__ == "fa" else min(v)))
def fa(x): return x["false_alarm_rate"]
def det(x): return x["detection_rate"]
s = d["scenario"]
print("%s: %d samples, noise %.0f %%, outliers %.0f %%, drift %.1f %%, %d seeds x %d per population" % (
    sys.argv[1], s["samples"], 100 * s["noise"], 100 * s["outliers"], 100 * s["drift"], len(r), s["per_population"]))
print("  analyze-trends   false alarms %s  detected %s" % (stat(fa), stat(det)))
for name, key in [("criterion-like", "criterion_like"), ("median > 5 %", "median_threshold")]:
    f = sum(x[key]["false_alarm_rate"] for x in r) / len(r)
    t = sum(x[key]["detection_rate"] for x in r) / len(r)
    print("  %-16s false alarms %.2f %%  detected %.2f %%" % (name, 100 * f, 100 * t))
' "$preset"
done
