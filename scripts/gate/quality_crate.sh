# The crate both gate-quality scripts measure (sourced by scripts/gate/quality.sh and
# scripts/gate/noise_quality.sh): three benchmarks, `sum`, `xor`, `mul`, 20-100 us each, in a
# new git repository with tag `base`, tag `aa` (a comment only) and tag `slow8` (`sum` does
# 8 % more work), `base` checked out. Builds offline: cargo's cache must hold criterion 0.8.
#
#   make_quality_crate DIR
#   prepare_quality_crate CHECKOUT WORK HEAD   (all a gate-quality script does before its gates)
#   criterion08_manifest NAME   (the Cargo.toml of such a crate, with one bench target `work`)
#   commit_base_and_aa ANCHOR   (its repository, tags `base` and `aa`)

criterion08_manifest() {
    cat <<TOML
[package]
name = "$1"
version = "0.1.0"
edition = "2021"

[lib]
bench = false

[dev-dependencies]
criterion = { version = "0.8", default-features = false, features = ["cargo_bench_support"] }

[[bench]]
name = "work"
harness = false
TOML
}

# In the crate in the current directory: a new git repository, tag `base`, tag `aa` (a comment
# inserted before the line of benches/work.rs that starts with ANCHOR), `base` checked out.
commit_base_and_aa() { # commit_base_and_aa ANCHOR
    printf 'target\n' > .gitignore
    git init -q && git config user.email q@q && git config user.name quality
    cargo generate-lockfile --offline --quiet
    git add -A && git commit -qm base && git tag base
    sed -i "s|^$1|// A comment only.\n$1|" benches/work.rs
    git commit -qam aa && git tag aa
    git checkout -q base
}

make_quality_crate() {
    local repo=$1
    rm -rf "$repo" && mkdir -p "$repo/benches" "$repo/src"
    (
        cd "$repo"
        criterion08_manifest gate_quality > Cargo.toml
        echo 'pub fn nothing() {}' > src/lib.rs
        cat > benches/work.rs <<'RS'
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

/// Elements summed by `sum`; the slow commit adds 8 %.
const SUM_N: u64 = 50_000;

fn benches(c: &mut Criterion) {
    c.bench_function("sum", |b| {
        b.iter(|| (0..black_box(SUM_N)).fold(0u64, |a, x| a.wrapping_add(black_box(x))))
    });
    c.bench_function("xor", |b| {
        b.iter(|| (0..black_box(50_000u64)).fold(0u64, |a, x| a ^ black_box(x)))
    });
    c.bench_function("mul", |b| {
        b.iter(|| (1..black_box(50_000u64)).fold(1u64, |a, x| a.wrapping_mul(black_box(x) | 1)))
    });
}

criterion_group!(group, benches);
criterion_main!(group);
RS
        commit_base_and_aa 'const SUM_N'
        sed -i 's/const SUM_N: u64 = 50_000;/const SUM_N: u64 = 54_000;/' benches/work.rs
        git commit -qam slow8 && git tag slow8
        git checkout -q base
    )
}

# prepare_quality_crate CHECKOUT WORK HEAD: the checkout's debug analyze-trends built (its path
# in $bin), cargo kept offline, the crate made in WORK/crate (its path in $repo) and entered,
# and both sides of base..HEAD built once by a short gate, so that the gates that follow
# rebuild nothing but the bench crate.
prepare_quality_crate() {
    local checkout=$1 work=$2 head=$3
    cargo build --quiet --bin analyze-trends --manifest-path "$checkout/Cargo.toml"
    bin="$checkout/target/debug/analyze-trends"
    export CARGO_NET_OFFLINE=true RUST_BACKTRACE=0
    unset CARGO_TARGET_DIR CRITERION_HOME
    repo="$work/crate"
    make_quality_crate "$repo"
    cd "$repo"
    "$bin" gate --base base --head "$head" --rounds 2 --max-rounds 2 --out "$work/warm" \
        --results "$work/runs" -- --warm-up-time 0.1 --measurement-time 0.1 --sample-size 10 \
        > /dev/null 2>&1 || true
}
