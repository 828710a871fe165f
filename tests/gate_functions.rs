//! The function that got slower, named by the real `analyze-trends gate`: a tiny Criterion
//! 0.8 crate written into a temporary git repository (built offline from cargo's cache)
//! whose `encode` calls `checksum` and `scramble` and whose `decode` calls `scramble` only.
//! The `slow` commit makes `checksum` do eight passes instead of one and changes nothing
//! else, so the function the gate names first for `encode` must be `checksum`, and `decode`
//! must name none:
//! - in counting mode, from Callgrind's inclusive instructions per call on both sides;
//! - in time mode with `--profile perf`, from the two profiles' sampled shares.
//!
//! Needs `valgrind` (counting) and `perf` that may record (time): skipped with a message
//! without them, a failure under `STACKBENCH_REQUIRE_TOOLS=1` (ci/test.sh sets it), as in
//! tests/gate_counting.rs and tests/profile_perf.rs. The gates share one repository and take
//! turns through a mutex.

mod schema_support;

#[path = "tool_support/mod.rs"]
mod tool_support;

// Only `perf_can_record` is needed here.
#[allow(dead_code)]
#[path = "profile_support/mod.rs"]
mod profile_support;

#[path = "gate_support/repo.rs"]
mod repo;
use repo::{
    Fixture, QUICK_CRITERION, commit_tagged, gate_command, git, prebuild, probe_repo, read_json,
    shared, stderr,
};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::sync::{Mutex, MutexGuard, OnceLock};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

/// Three functions of a few hundred instructions each on 64 bytes, kept out of line so both
/// Callgrind and perf see them by name.
const LIB: &str = r#"/// Passes `checksum` makes over its input.
pub const PASSES: u64 = 1;

#[inline(never)]
pub fn checksum(data: &[u8]) -> u64 {
    let mut h = 0u64;
    for _ in 0..std::hint::black_box(PASSES) {
        for &b in data {
            h = h.wrapping_mul(31).wrapping_add(b as u64);
        }
    }
    h
}

#[inline(never)]
pub fn scramble(data: &[u8]) -> u64 {
    data.iter().fold(7u64, |a, &b| a.rotate_left(5) ^ b as u64)
}

#[inline(never)]
pub fn encode(data: &[u8]) -> u64 {
    checksum(data) ^ scramble(data)
}

#[inline(never)]
pub fn decode(data: &[u8]) -> u64 {
    scramble(data).wrapping_add(1)
}
"#;

const BENCH: &str = r#"use criterion::{Criterion, criterion_group, criterion_main};
use named_fn_probe::{decode, encode};
use std::hint::black_box;

fn benches(c: &mut Criterion) {
    let data: Vec<u8> = (0u8..64).collect();
    c.bench_function("encode", |b| b.iter(|| encode(black_box(&data))));
    c.bench_function("decode", |b| b.iter(|| decode(black_box(&data))));
}

criterion_group!(group, benches);
criterion_main!(group);
"#;

fn create_repo() -> Fixture {
    let fixture = probe_repo("named_fn_probe", LIB, &[("codec", BENCH)], "base");
    let repo = &fixture.repo;
    let lib = repo.join("src/lib.rs");
    let slow = LIB.replace("PASSES: u64 = 1", "PASSES: u64 = 8");
    assert_ne!(slow, LIB);
    std::fs::write(&lib, slow).expect("writing the slow lib");
    commit_tagged(repo, "slow");
    git(repo, &["checkout", "-q", "base"]);
    prebuild(repo);
    fixture
}

fn fixture() -> MutexGuard<'static, Fixture> {
    static FIXTURE: OnceLock<Mutex<Fixture>> = OnceLock::new();
    shared(&FIXTURE, create_repo)
}

fn gate(repo: &Path, out: &Path, args: &[&str]) -> Output {
    gate_command(BIN, repo, out)
        .args(["--base", "base", "--head", "slow"])
        .args(args)
        .args(QUICK_CRITERION)
        .output()
        .expect("running analyze-trends")
}

fn comparison(out: &Path) -> Value {
    let doc = read_json(&out.join("out/comparison.json"));
    schema_support::assert_valid("comparison.schema.json", &doc);
    doc
}

fn counted_row<'a>(c: &'a Value, id: &str) -> &'a Value {
    c["counting"]["benchmarks"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == id))
        .unwrap_or_else(|| panic!("{id} was not counted: {c:#}"))
}

#[test]
fn counting_mode_names_the_function_the_change_made_slower() {
    if !tool_support::tool_present("valgrind", "--version") {
        return;
    }
    let f = fixture();
    let out = tempfile::tempdir().expect("a temporary directory");
    let args = [
        "--measure",
        "instructions",
        "--rounds",
        "2",
        "--max-rounds",
        "2",
    ];
    let result = gate(&f.repo, out.path(), &args);
    assert_eq!(result.status.code(), Some(1), "{}", stderr(&result));
    let c = comparison(out.path());
    let encode = counted_row(&c, "encode");
    assert_eq!(encode["verdict"]["verdict"], "regressed", "{encode:#}");
    let functions = encode["functions"]
        .as_array()
        .expect("encode names functions");
    assert!(!functions.is_empty() && functions.len() <= 5, "{encode:#}");
    let top = &functions[0];
    assert_eq!(top["function"], "named_fn_probe::checksum", "{encode:#}");
    // Own by the crate's name: cargo's bench profile has no debug info, so Callgrind's
    // `fl=` for the crate's code is `???`.
    assert_eq!(top["own"], true, "{top:#}");
    let (base, head) = (
        top["base_instructions"].as_i64().unwrap_or_default(),
        top["head_instructions"].as_i64().unwrap_or_default(),
    );
    // Eight passes over 64 bytes instead of one: several times the instructions, and the
    // change is the whole of encode's (nothing else changed).
    assert!(base > 64 && head > 4 * base, "{top:#}");
    assert_eq!(top["change_instructions"].as_i64(), Some(head - base));
    let encode_change = encode["head"]["ir"].as_i64().unwrap_or_default()
        - encode["base"]["ir"].as_i64().unwrap_or_default();
    assert_eq!(encode_change, head - base, "{encode:#}");
    // The harness's own Bencher, whose inclusive count is the total, is never listed.
    assert!(
        functions.iter().all(|f| !f["function"]
            .as_str()
            .unwrap_or_default()
            .contains("Bencher")),
        "{encode:#}"
    );
    let decode = counted_row(&c, "decode");
    assert_eq!(decode["verdict"]["verdict"], "identical", "{decode:#}");
    assert!(decode.get("functions").is_none(), "{decode:#}");

    let md = std::fs::read_to_string(out.path().join("out/comparison.md")).expect("the md");
    assert!(
        md.contains("Functions that changed most (Callgrind, counted)"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "| `named_fn_probe::checksum` (own) | {base} | {head} |"
        )),
        "{md}"
    );
    let table = String::from_utf8_lossy(&result.stdout);
    assert!(
        table.contains(&format!("named_fn_probe::checksum [own]: {base} → {head}")),
        "{table}"
    );
}

#[test]
fn time_mode_with_perf_names_the_function_from_the_two_profiles() {
    if !tool_support::tool_present("perf", "--version") {
        return;
    }
    let scratch = tempfile::tempdir().expect("a temporary directory");
    if !profile_support::perf_can_record(scratch.path()) {
        return;
    }
    let f = fixture();
    let out = tempfile::tempdir().expect("a temporary directory");
    let args = [
        "--filter",
        "^encode$",
        "--threshold",
        "5",
        "--rounds",
        "2",
        "--max-rounds",
        "2",
        "--profile",
        "perf",
        "--profile-time",
        "1",
    ];
    let result = gate(&f.repo, out.path(), &args);
    // Profiled when degraded (1) or left unsure (3); both have a profile on each side.
    assert!(
        matches!(result.status.code(), Some(1 | 3)),
        "{}",
        stderr(&result)
    );
    let c = comparison(out.path());
    let lists = c["sampled_functions"].as_array().expect("sampled lists");
    assert_eq!(lists.len(), 1, "{c:#}");
    let list = &lists[0];
    assert_eq!(list["id"], "encode");
    assert_eq!(list["source"], "perf-samples");
    assert!(list.get("unavailable").is_none(), "{list:#}");
    let top = &list["functions"][0];
    assert_eq!(top["function"], "named_fn_probe::checksum", "{list:#}");
    assert_eq!(top["own"], true);
    assert!(
        top["head_children_percent"].as_f64() > top["base_children_percent"].as_f64(),
        "{top:#}"
    );
    let md = std::fs::read_to_string(out.path().join("out/comparison.md")).expect("the md");
    assert!(
        md.contains("Functions that changed most (perf, sampled)"),
        "{md}"
    );
    assert!(md.contains("`named_fn_probe::checksum` (own)"), "{md}");
}
