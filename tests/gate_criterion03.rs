//! The gate on the oldest Criterion it supports, in time mode: a generated Criterion 0.3
//! crate (about 60 benchmarks, some of about 1 ns; `tests/gate_support/criterion03.rs`)
//! built offline, and a commit that changes only doc comments. A docs-only change is never
//! a regression (exit 0, or the unsure exit 3; never 1), every benchmark is listed, the
//! ~1 ns routines are `below floor`, and the crate's tree gets nothing outside `target/`.
//! A Criterion older than 0.3.3 is refused by name before anything is built.
//!
//! Counting mode on the same crate is `tests/gate_criterion03_counting.rs`: it counts
//! instructions, which other work beside it does not change, so it runs in ci/test.sh's
//! first phase and this file, which times, alone in the second.

#[path = "gate_support/criterion03.rs"]
mod criterion03;
#[path = "gate_support/criterion03_gate.rs"]
mod criterion03_gate;
#[path = "gate_support/repo.rs"]
mod repo;
mod schema_support;

use criterion03_gate::{comparison, fixture, gate, listed_ids, status_of, tree_outside_target};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

#[test]
fn a_docs_only_change_on_criterion_0_3_is_never_a_regression_and_leaves_no_litter() {
    let Some(f) = fixture() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let runs_dir = f.repo.join("target/stackbench-gate/results/runs");
    let runs_before = std::fs::read_dir(&runs_dir).map_or(0, |d| d.count());
    let result = gate(&f.repo, &out, &["--rounds", "2", "--max-rounds", "2"]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    let code = result.status.code();
    assert!(
        matches!(code, Some(0) | Some(3)),
        "a docs-only change: exit {code:?}\n{stderr}\n{}",
        String::from_utf8_lossy(&result.stdout)
    );
    let c = comparison(&out);
    let mut expected = criterion03::ids();
    expected.sort();
    assert_eq!(listed_ids(&c), expected, "every benchmark listed: {c:#}");
    assert!(c["unmeasured"].as_array().unwrap().is_empty(), "{c:#}");
    // The ~1 ns routines sit at the timer's floor: listed with it, never judged.
    let floor = c["calibration"]["floor_ns"]
        .as_f64()
        .expect("a calibration");
    for (id, _) in criterion03::TINY {
        assert_eq!(
            status_of(&c, id),
            "below floor",
            "{id} (floor {floor} ns): {c:#}"
        );
    }
    assert_eq!(tree_outside_target(&f.repo), f.tree, "the gate left litter");
    let runs = std::fs::read_dir(&runs_dir).unwrap().count();
    assert_eq!(runs - runs_before, 2, "both sides recorded under target/");
}

#[test]
fn a_criterion_older_than_0_3_3_is_refused_by_name_before_any_build() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("old");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        repo.join("Cargo.toml"),
        "[package]\nname = \"old\"\nversion = \"0.1.0\"\nedition = \"2018\"\n\n\
         [dev-dependencies]\ncriterion = \"=0.2.11\"\n",
    )
    .unwrap();
    std::fs::write(repo.join("src/lib.rs"), "").unwrap();
    // The lock as cargo would write it; nothing is fetched or built: the gate reads it first.
    std::fs::write(
        repo.join("Cargo.lock"),
        "version = 3\n\n[[package]]\nname = \"criterion\"\nversion = \"0.2.11\"\n\n\
         [[package]]\nname = \"old\"\nversion = \"0.1.0\"\ndependencies = [\"criterion\"]\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(["-c", "user.email=g@t", "-c", "user.name=g"])
            .args(args)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "old"]);
    std::fs::write(repo.join("src/lib.rs"), "// a second commit\n").unwrap();
    git(&["commit", "-qam", "two"]);
    let result = Command::new(BIN)
        .args(["gate", "--base", "HEAD~1", "--head", "HEAD", "--out"])
        .arg(dir.path().join("out"))
        .current_dir(&repo)
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("Criterion 0.2.11 is not supported"),
        "{stderr}"
    );
    assert!(stderr.contains("0.3.3 to 0.8.x"), "{stderr}");
    assert!(
        !repo.join("target/stackbench-gate/target-base").exists(),
        "nothing was built"
    );
}
