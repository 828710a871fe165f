//! What the gate, bisect and counting tests share to build their Criterion crates in a
//! temporary git repository, offline: git, file writing, and the prebuild that fills the
//! gate's side target directories from one shared build of Criterion.
//!
//! Criterion and its dependencies take about a minute of CPU to compile in the bench
//! profile, and every fixture crate of these tests locks the same versions. So they are
//! compiled once per build of the test suite, into a target directory in cargo's scratch
//! space for integration tests (`CARGO_TARGET_TMPDIR`, shared by every test binary), and
//! each fixture copies that tree into the target directories the gate will use: cargo finds
//! the dependencies fresh there (their fingerprints do not depend on the target directory's
//! path) and compiles only the fixture crate. What the gate builds, and how, is unchanged.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
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

/// The Criterion version `crate_dir`'s Cargo.lock pins, as `criterion-X.Y.Z`.
fn locked_criterion(crate_dir: &Path) -> String {
    let lock = std::fs::read_to_string(crate_dir.join("Cargo.lock")).expect("the fixture's lock");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"criterion\"" {
            let version = lines
                .next()
                .and_then(|l| l.strip_prefix("version = \""))
                .and_then(|v| v.strip_suffix('"'))
                .expect("a version line after criterion's name");
            return format!("criterion-{version}");
        }
    }
    panic!("{} locks no criterion", crate_dir.display())
}

/// The target directory shared by every fixture crate locked to the same Criterion as
/// `crate_dir` (keyed by that version, so the 0.3 and 0.8 fixtures never evict each other).
pub fn shared_target_dir(crate_dir: &Path) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("gate-fixture-deps")
        .join(locked_criterion(crate_dir))
}

/// `cargo bench --no-run --offline` of the crate checked out in `crate_dir`, into the
/// shared target directory: compiles Criterion the first time in this build of the tests,
/// then only the fixture crate. Cargo's lock on a target directory makes a concurrent test
/// binary wait for the first build instead of compiling the same dependencies again.
/// Returns cargo's stdout (`--message-format=json` messages with `json`).
pub fn build_in_shared_target(crate_dir: &Path, json: bool) -> Vec<u8> {
    let out = Command::new("cargo")
        .args(["bench", "--no-run", "--offline"])
        .args(json.then_some("--message-format=json"))
        .current_dir(crate_dir)
        .env("CARGO_TARGET_DIR", shared_target_dir(crate_dir))
        .output()
        .expect("running cargo");
    assert!(out.status.success(), "prebuild: {out:?}");
    out.stdout
}

/// Fills the gate's base and head target directories in `repo` with a build of the checked
/// out crate and its dependencies: only a speed-up (the gate builds each side itself and
/// would compile Criterion on both otherwise).
pub fn prebuild(repo: &Path) {
    prebuild_sides(repo, &["target-base", "target-head"]);
}

/// The same for a gate whose two sides are both the current checkout (no `--base` nor
/// `--head`): it builds once, into `target-current`.
pub fn prebuild_current(repo: &Path) {
    prebuild_sides(repo, &["target-current"]);
}

fn prebuild_sides(repo: &Path, sides: &[&str]) {
    build_in_shared_target(repo, false);
    let shared = shared_target_dir(repo);
    let gate = repo.join("target/stackbench-gate");
    for side in sides {
        let target = gate.join(side);
        std::fs::create_dir_all(&target).expect("creating a side's target directory");
        // `cp -a` keeps the modification times cargo's fingerprints compare.
        let copy = Command::new("cp")
            .arg("-a")
            .arg(shared.join("."))
            .arg(&target)
            .status()
            .expect("running cp");
        assert!(
            copy.success(),
            "copying {} to {}",
            shared.display(),
            target.display()
        );
    }
}
