//! The gate on the generated Criterion 0.3 crate (`criterion03.rs`), as
//! `tests/gate_criterion03.rs` (time mode) and `tests/gate_criterion03_counting.rs`
//! (counting mode) run it: each test binary creates and builds the crate once, and its
//! tests take turns on it. Two binaries, not one, because counting instructions is the same
//! beside other work and timing is not: the counting test runs in ci/test.sh's first phase,
//! the time test alone in the second.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

/// Every path under `repo` outside `target/` and `.git/`.
pub fn tree_outside_target(repo: &Path) -> Vec<PathBuf> {
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

/// The generated crate, created and built once for the tests of this file.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub repo: PathBuf,
    /// The crate's files outside `target/` right after it was created.
    pub tree: Vec<PathBuf>,
}

/// `None` when Criterion 0.3 is not in cargo's cache (the test skips, or fails under
/// `STACKBENCH_REQUIRE_TOOLS=1`).
pub fn fixture() -> Option<MutexGuard<'static, Fixture>> {
    static FIXTURE: OnceLock<Option<Mutex<Fixture>>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            if !super::criterion03::fetched() {
                return None;
            }
            let dir = super::repo::fixture_dir();
            let repo = dir.path().join("gen03");
            super::criterion03::create(&repo);
            super::criterion03::prebuild(&repo);
            let tree = tree_outside_target(&repo);
            Some(Mutex::new(Fixture {
                _dir: dir,
                repo,
                tree,
            }))
        })
        .as_ref()
        .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
}

/// `gate --base base --head docs` with `args`, its files in `out`.
pub fn gate(repo: &Path, out: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["gate", "--base", "base", "--head", "docs"])
        .args(args)
        .arg("--out")
        .arg(out)
        // Criterion 0.3 takes whole seconds on its command line: the crate sets its short
        // timing in code, and the gate is given only what overrides nothing of it.
        .args(["--", "--sample-size", "10"])
        .current_dir(repo)
        .env("CARGO_NET_OFFLINE", "true")
        .env("RUST_BACKTRACE", "0")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CRITERION_HOME")
        .env_remove("STACKBENCH_RESULTS_DIR")
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_MEASURE")
        .env_remove("STACKBENCH_GATE_ROUNDS")
        .env_remove("STACKBENCH_GATE_THRESHOLD_PERCENT")
        .output()
        .unwrap()
}

pub fn comparison(out: &Path) -> Value {
    let c: Value =
        serde_json::from_slice(&std::fs::read(out.join("comparison.json")).unwrap()).unwrap();
    super::schema_support::assert_valid("comparison.schema.json", &c);
    c
}

pub fn listed_ids(c: &Value) -> Vec<String> {
    let mut ids: Vec<String> = c["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

pub fn status_of<'a>(c: &'a Value, id: &str) -> &'a str {
    c["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .and_then(|r| r["status"].as_str())
        .unwrap_or("absent")
}
