#!/usr/bin/env bash
# The jitter that remains in counting mode: counts one Criterion id of a bench executable
# under callgrind (the command crates/measure/src/harness/measure/instructions.rs runs) 5 times quiet, 5 times
# with a busy loop on every core, with environments of 0 to 4096 extra bytes, and from copies
# of the executable at paths of 8 lengths, each with the counter's normalisation (a link of
# fixed length, CRITERION_HOME set) and without it. Prints one line per run: condition and
# callgrind's totals (Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw).
#
# usage: scripts/counting_jitter.sh BENCH_EXE ID
set -euo pipefail
exe=$(realpath "$1")
id=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

count() { # count NORMALISE EXE -> totals
    local dir run_as
    dir=$(mktemp -d "$scratch/c.XXXXXX")
    run_as=$2
    if [[ $1 == yes ]]; then
        ln -s "$2" "$dir/bench"
        run_as=$dir/bench
        export CRITERION_HOME=$dir/criterion
    else
        unset CRITERION_HOME
    fi
    local toggles=() method
    for method in iter iter_custom iter_batched iter_batched_ref; do
        toggles+=("--toggle-collect=criterion::bencher::Bencher<M>::$method")
    done
    for method in iter iter_custom iter_batched iter_batched_ref; do
        toggles+=("--toggle-collect=<criterion::bencher::Bencher>::$method::<*")
    done
    valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 \
        --collect-atstart=no "${toggles[@]}" --callgrind-out-file="$dir/callgrind.out" \
        "$run_as" --bench --test "^${id}\$" >/dev/null 2>&1
    grep '^totals:' "$dir/callgrind.out" | cut -d' ' -f2-
}

for i in 1 2 3 4 5; do echo "quiet $i: $(count yes "$exe")"; done

hogs=()
for _ in $(seq "$(nproc)"); do (while :; do :; done) & hogs+=($!); done
for i in 1 2 3 4 5; do echo "hog $i: $(count yes "$exe")"; done
kill "${hogs[@]}"

for n in 0 1 7 8 15 16 17 100 1000 4096; do
    echo "env +$n bytes: $(PAD=$(head -c "$n" /dev/zero | tr '\0' x) count yes "$exe")"
done

for len in 1 9 17 25 33 49 65 97; do
    dir=$scratch/$(head -c "$len" /dev/zero | tr '\0' w)
    mkdir -p "$dir"
    cp "$exe" "$dir/work"
    echo "path +$len normalised: $(count yes "$dir/work")"
    echo "path +$len as is:      $(CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target} count no "$dir/work")"
done
