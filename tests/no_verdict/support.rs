//! Shared by the cases: the real binaries, run to completion, with their exit code and output.
// Each area file uses a different part of this; an area not yet written leaves some unused.
#![allow(dead_code)]

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

pub fn run(bin: &str, args: &[&str], cwd: &std::path::Path) -> Ran {
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
pub fn only_run_file(results: &std::path::Path) -> (std::path::PathBuf, serde_json::Value) {
    let file = std::fs::read_dir(results.join("runs"))
        .unwrap_or_else(|e| panic!("{}/runs: {e}", results.display()))
        .next()
        .expect("a run file")
        .expect("a readable directory entry")
        .path();
    let doc = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    (file, doc)
}

/// The fixture recorded into `results` (exit 0 asserted): the run's file and JSON.
pub fn record_fixture(results: &std::path::Path) -> (std::path::PathBuf, serde_json::Value) {
    let out = run(
        ANALYZE_TRENDS,
        &[
            "record",
            "--criterion-dir",
            FIXTURE,
            "--results",
            results.to_str().unwrap(),
        ],
        results.parent().unwrap(),
    );
    assert_eq!(out.code, Some(0), "{}", out.text());
    only_run_file(results)
}
