//! Shared by the cases: the real binaries, run to completion, with their exit code and output.
// Each area file uses a different part of this; an area not yet written leaves some unused.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub const ANALYZE_TRENDS: &str = env!("CARGO_BIN_EXE_analyze-trends");
pub const STACKBENCH: &str = env!("CARGO_BIN_EXE_stackbench");

/// What one run of a binary left: exit code (None when killed by a signal), stdout, stderr.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Both streams, for messages that may go to either.
    pub fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

pub fn run(bin: &str, args: &[&str], cwd: &Path) -> Ran {
    let output = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("could not start {bin}: {e}"));
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The Criterion 0.8 fixture tree every area records from.
pub const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/criterion-0.8");

/// The one run file under `<results>/runs/`: its path and JSON.
pub fn only_run_file(results: &Path) -> (PathBuf, serde_json::Value) {
    let file = std::fs::read_dir(results.join("runs"))
        .unwrap_or_else(|e| panic!("{}/runs: {e}", results.display()))
        .next()
        .expect("a run file")
        .expect("a readable directory entry")
        .path();
    let doc = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    (file, doc)
}

/// `analyze-trends record` of the Criterion tree `tree` into `results` with `extra`
/// arguments, run in the folder that holds `results`.
pub fn record_into(tree: &Path, results: &Path, extra: &[&str]) -> Ran {
    let args = crate::cli_support::record_args(tree, results, extra);
    run(ANALYZE_TRENDS, &args, results.parent().unwrap())
}

/// `analyze-trends import` of `file` into `results` with `extra` arguments, run in the
/// folder that holds `results`.
pub fn import_into(file: &Path, results: &Path, extra: &[&str]) -> Ran {
    let mut args = vec![
        "import",
        file.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend(extra);
    run(ANALYZE_TRENDS, &args, results.parent().unwrap())
}

/// The fixture recorded into `results` (exit 0 asserted): the run's file and JSON.
pub fn record_fixture(results: &Path) -> (PathBuf, serde_json::Value) {
    let out = record_into(Path::new(FIXTURE), results, &[]);
    assert_eq!(out.code, Some(0), "{}", out.text());
    only_run_file(results)
}

/// `<dir>/empty-run.json`: the fixture's run (recorded into `<dir>/source`) with every
/// benchmark and failure taken out, a run that measured nothing.
pub fn empty_run_file(dir: &Path) -> PathBuf {
    let (_, mut doc) = record_fixture(&dir.join("source"));
    doc["benchmarks"] = serde_json::Value::Array(Vec::new());
    doc["failed"] = serde_json::Value::Array(Vec::new());
    let empty = dir.join("empty-run.json");
    std::fs::write(&empty, doc.to_string()).unwrap();
    empty
}

/// A copy of the fixture's `plain function` benchmark (its `new` folder) under `root`: the
/// copy's `new` folder.
pub fn copy_plain_function(root: &Path) -> PathBuf {
    let from = Path::new(FIXTURE).join("plain function/new");
    let to = root.join("plain function/new");
    std::fs::create_dir_all(&to).unwrap();
    for file in ["benchmark.json", "estimates.json", "sample.json"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    to
}
