//! Builds one side with `cargo bench --no-run` into that side's own target directory and
//! learns each bench target's executable from cargo's JSON messages, so the rounds run the
//! executables directly (no cargo lock, no rebuild check between rounds) and the two
//! sides' binaries never mix.

use super::GateError;
use super::process::{run_logged, tail};
use crate::harness::cargo_messages::bench_artifact;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bench target name → its executable.
pub type BenchExecutables = BTreeMap<String, PathBuf>;

/// What one side needs to be built.
pub struct BuildSpec<'a> {
    pub side: &'a str,
    pub rev: &'a str,
    pub crate_dir: &'a Path,
    pub target_dir: &'a Path,
    pub env: &'a [(String, String)],
    pub log: &'a Path,
}

/// Builds every bench target of the crate; a failed build is `Build` with cargo's error tail.
pub fn build_benches(spec: &BuildSpec<'_>) -> Result<BenchExecutables, GateError> {
    let mut command = stackbench_measure::system::cargo::command();
    command
        .args([
            "bench",
            "--no-run",
            "--benches",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(spec.crate_dir)
        .env("CARGO_TARGET_DIR", spec.target_dir)
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    let mut executables = BenchExecutables::new();
    let status = run_logged(command, spec.log, &mut |line| {
        if let Some((name, exe)) = bench_artifact(line) {
            executables.insert(name, exe);
        }
    })?;
    if !status.success() {
        return Err(GateError::Build {
            side: spec.side.into(),
            rev: spec.rev.into(),
            tail: tail(spec.log),
        });
    }
    Ok(executables)
}
