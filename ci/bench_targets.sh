# Sourced by run_benchmarks.sh and ci/slurm/submit.sh: the bench targets are the
# `[[bench]]` names in crates/benches/Cargo.toml (the workspace member that holds every
# `cargo bench` target), in its order, so a target added there is known to every script
# that runs or validates targets (a list copied into each script fell behind).
# bench_targets REPO: prints one name per line; fails when that manifest declares none.
bench_targets() {
    local manifest="$1/crates/benches/Cargo.toml" names
    [[ -f "$manifest" ]] || { echo "no bench manifest at '$manifest'" >&2; return 1; }
    names=$(sed -n '/^\[\[bench\]\]/,/^name *=/ s/^name *= *"\([^"]*\)".*/\1/p' "$manifest") || return 1
    [[ -n "$names" ]] || { echo "no [[bench]] targets in '$manifest'" >&2; return 1; }
    printf '%s\n' "$names"
}
