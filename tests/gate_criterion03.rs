//! The gate on the oldest Criterion it supports: a generated Criterion 0.3 crate (about 60
//! benchmarks, some of about 1 ns; `tests/gate_support/criterion03.rs`) built offline, and
//! a commit that changes only doc comments gated in time mode. A docs-only change is never
//! a regression (exit 0, or the unsure exit 3; never 1), every benchmark is judged, and
//! the crate's tree gets nothing outside `target/`.

#[path = "gate_support/criterion03.rs"]
mod criterion03;
mod schema_support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

/// Every path under `repo` outside `target/` and `.git/`.
fn tree_outside_target(repo: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if rel == Path::new("target") || rel == Path::new(".git") {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            }
            out.push(rel);
        }
    }
    let mut out = Vec::new();
    walk(repo, repo, &mut out);
    out.sort();
    out
}

#[test]
fn a_docs_only_change_on_criterion_0_3_is_never_a_regression_and_leaves_no_litter() {
    if !criterion03::fetched() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("gen03");
    criterion03::create(&repo);
    criterion03::prebuild(&repo);
    let before = tree_outside_target(&repo);
    let out = dir.path().join("out");
    let result = Command::new(BIN)
        .args(["gate", "--base", "base", "--head", "docs"])
        .args(["--rounds", "2", "--max-rounds", "2"])
        .arg("--out")
        .arg(&out)
        // Criterion 0.3 takes whole seconds on its command line: the crate sets its short
        // timing in code, and the gate is given only what overrides nothing of it.
        .args(["--", "--sample-size", "10"])
        .current_dir(&repo)
        .env("CARGO_NET_OFFLINE", "true")
        .env("RUST_BACKTRACE", "0")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CRITERION_HOME")
        .env_remove("STACKBENCH_RESULTS_DIR")
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_GATE_ROUNDS")
        .env_remove("STACKBENCH_GATE_THRESHOLD_PERCENT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    let code = result.status.code();
    assert!(
        matches!(code, Some(0) | Some(3)),
        "a docs-only change: exit {code:?}\n{stderr}\n{}",
        String::from_utf8_lossy(&result.stdout)
    );
    let c: Value =
        serde_json::from_slice(&std::fs::read(out.join("comparison.json")).unwrap()).unwrap();
    schema_support::assert_valid("comparison.schema.json", &c);
    let mut judged: Vec<String> = c["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    judged.sort();
    let mut expected = criterion03::ids();
    expected.sort();
    assert_eq!(judged, expected, "every benchmark judged: {c:#}");
    assert!(c["unmeasured"].as_array().unwrap().is_empty(), "{c:#}");
    assert_eq!(tree_outside_target(&repo), before, "the gate left litter");
    let runs = std::fs::read_dir(repo.join("target/stackbench-gate/results/runs"))
        .unwrap()
        .count();
    assert_eq!(runs, 2, "both sides recorded under target/");
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
