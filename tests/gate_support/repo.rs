//! What the gate, bisect and counting tests share to build their Criterion crates in a
//! temporary git repository, offline: git, file writing, and the prebuild of Criterion into
//! both of the gate's side target directories.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// `git args` in `repo`, which must succeed; its trimmed stdout.
pub fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .expect("running git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Writes `text` to `path`, creating its directory.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("creating a directory");
    std::fs::write(path, text).expect("writing a fixture file");
}

/// Compiles Criterion once and copies it to the head side's target directory: only a
/// speed-up (the gate builds each side itself and would compile it twice otherwise).
pub fn prebuild(repo: &Path) {
    let gate = repo.join("target/stackbench-gate");
    let out = Command::new("cargo")
        .args(["bench", "--no-run", "--offline"])
        .current_dir(repo)
        .env("CARGO_TARGET_DIR", gate.join("target-base"))
        .output()
        .expect("running cargo");
    assert!(out.status.success(), "prebuild: {out:?}");
    let copy = Command::new("cp")
        .arg("-a")
        .arg(gate.join("target-base"))
        .arg(gate.join("target-head"))
        .status()
        .expect("running cp");
    assert!(copy.success());
}
