//! The gate's calibration through the real `analyze-trends gate`, on a Criterion 0.8 crate
//! the test writes into a temporary git repository (built offline from cargo's cache) with
//! two benchmarks: `tiny`, a routine of about one cycle (`black_box(1u8)`, what issue 17's
//! `method/get` at 1.1 ns is), and `work`, a couple of microseconds of work. Both sides are
//! the current checkout (one build), so nothing differs but the machine.
//!
//! Checked: the calibration is in comparison.json (against the schema) and comparison.md,
//! `tiny` is `below floor` with the floor named and is never measured again, `work` is
//! judged as before, and a noise floor above the threshold is said before round 1.

mod schema_support;

#[path = "gate_support/repo.rs"]
mod repo;
use repo::{EMPTY_LIB, Fixture, prebuild_current, probe_repo, shared, stderr};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::sync::{Mutex, MutexGuard, OnceLock};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

const BENCH: &str = r#"use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn benches(c: &mut Criterion) {
    c.bench_function("tiny", |b| b.iter(|| black_box(1u8)));
    c.bench_function("work", |b| {
        b.iter(|| (0..black_box(2_000u64)).fold(0, |a, x| a ^ black_box(x)))
    });
}

criterion_group!(group, benches);
criterion_main!(group);
"#;

/// Short Criterion timing: the test checks statuses, not sensitivity.
const CRITERION: &[&str] = repo::QUICK_CRITERION;

fn create_repo() -> Fixture {
    let fixture = probe_repo("floor_probe", EMPTY_LIB, &[("work", BENCH)], "base");
    prebuild_current(&fixture.repo);
    fixture
}

/// The shared repository (its one build serves every gate here), one gate at a time.
fn fixture() -> MutexGuard<'static, Fixture> {
    static FIXTURE: OnceLock<Mutex<Fixture>> = OnceLock::new();
    shared(&FIXTURE, create_repo)
}

/// A gate of the current checkout against itself.
fn gate(repo: &Path, out: &Path, args: &[&str]) -> Output {
    repo::gate_command(BIN, repo, out)
        .args(args)
        .args(CRITERION)
        .output()
        .unwrap()
}

/// Not a regression or a failure. An A/A pair may still end unsure: exit 0, or 3 once the
/// gate gives `inconclusive` its own exit code (issue 17, the unsure slice).
fn assert_not_failed(out: &Output) {
    let code = out.status.code();
    assert!(
        matches!(code, Some(0) | Some(3)),
        "exit {code:?}\n{}",
        stderr(out)
    );
}

fn comparison(out: &Path) -> Value {
    let doc: Value =
        serde_json::from_slice(&std::fs::read(out.join("out/comparison.json")).unwrap()).unwrap();
    schema_support::assert_valid("comparison.schema.json", &doc);
    doc
}

fn row<'a>(c: &'a Value, id: &str) -> &'a Value {
    c["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {c:#}"))
}

#[test]
fn a_one_cycle_routine_is_below_floor_listed_with_the_floor_and_not_measured_again() {
    let f = fixture();
    let out = tempfile::tempdir().unwrap();
    let result = gate(
        &f.repo,
        out.path(),
        &["--rounds", "2", "--max-rounds", "4", "--threshold", "25"],
    );
    // `work`'s A/A verdict is not what this test checks; `tiny`'s status is.
    repo::assert_judged_without_failures(&result, &out.path().join("out/comparison.json"));
    let c = comparison(out.path());
    let calibration = &c["calibration"];
    let floor = calibration["floor_ns"].as_f64().unwrap();
    let multiple = calibration["floor_multiple"].as_f64().unwrap();
    assert!(floor > 0.0 && multiple > 1.0, "{calibration:#}");
    assert!(calibration["timer_resolution_ns"].as_f64().unwrap() > 0.0);
    assert!(calibration["blocks"].as_u64().unwrap() >= 10);

    let tiny = row(&c, "tiny");
    // Shown with --nocapture: what this machine measured, for a person reading the log.
    eprintln!(
        "floor {floor} ns; tiny {} / {} ns",
        tiny["baseline_ns"], tiny["candidate_ns"]
    );
    assert_eq!(tiny["status"], "below floor", "{c:#}");
    assert!(tiny["change_percent"].is_null(), "never judged: {tiny:#}");
    let note = tiny["note"].as_str().unwrap();
    assert!(note.contains("floor"), "{note}");
    // Never measured again, and no round figures to judge it by.
    let remeasured: Vec<&str> = c["gate"]["remeasured"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!remeasured.contains(&"tiny"), "{remeasured:?}");
    assert!(
        c["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["id"] != "tiny")
    );

    // The microsecond routine is judged by the round rule as before.
    let work = row(&c, "work");
    assert_ne!(work["status"], "below floor", "{c:#}");
    assert!(work["baseline_ns"].as_f64().unwrap() > floor * multiple);

    let md = std::fs::read_to_string(out.path().join("out/comparison.md")).unwrap();
    assert!(md.contains("#### Calibration"), "{md}");
    assert!(md.contains("Below floor:\n\n- `tiny`"), "{md}");
    assert!(md.contains("below floor"), "{md}");
    let log = stderr(&result);
    assert!(
        log.contains("analyze-trends gate: calibration: timer resolution"),
        "{log}"
    );
}

#[test]
fn noise_above_the_threshold_is_said_before_the_first_round_and_below_floor_never_fails() {
    let f = fixture();
    let out = tempfile::tempdir().unwrap();
    // A threshold of 0 %: any noise at all is above it. `tiny` alone is below the floor, so
    // even at 0 % it can be neither a regression nor a pass.
    let result = gate(
        &f.repo,
        out.path(),
        &[
            "--rounds",
            "2",
            "--max-rounds",
            "4",
            "--threshold",
            "0",
            "--filter",
            "^tiny$",
        ],
    );
    assert_not_failed(&result);
    let log = stderr(&result);
    let warning = log
        .find("warning: this machine's noise floor")
        .unwrap_or_else(|| panic!("no noise warning:\n{log}"));
    let first_round = log
        .find("round 1")
        .unwrap_or_else(|| panic!("no round line:\n{log}"));
    assert!(
        warning < first_round,
        "the warning came after round 1:\n{log}"
    );
    assert!(log.contains("--cpus"), "the fix is named:\n{log}");
    let c = comparison(out.path());
    assert_eq!(row(&c, "tiny")["status"], "below floor", "{c:#}");
    assert!(c["calibration"]["noise_percent"].as_f64().unwrap() > 0.0);
    let md = std::fs::read_to_string(out.path().join("out/comparison.md")).unwrap();
    assert!(md.contains("noise floor"), "the comment warns too:\n{md}");
}
