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

/// Every path under `repo` outside `target/` and `.git/`: what a gate may not add to.
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
    // The environment the gate's own build gets (no variables of this test's package), so
    // that no build script's change tracking tells the gate to rebuild what this made.
    let out = stackbench_measure::system::cargo::command()
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

/// A temporary directory for a fixture that lives in a `static` (a `OnceLock`), removed when
/// the test process exits. Statics are never dropped, so a plain `TempDir` there stays in
/// /tmp after every run, with the gate's side target directories in it: about 5 GB per run
/// of the whole suite. The removal runs from `atexit`, which the test harness's exit (pass or
/// fail) reaches; a process killed by a signal still leaves its directories.
pub fn fixture_dir() -> tempfile::TempDir {
    static DIRS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    static REGISTER: std::sync::Once = std::sync::Once::new();
    extern "C" fn remove_fixture_dirs() {
        let dirs = std::mem::take(&mut *DIRS.lock().unwrap_or_else(|e| e.into_inner()));
        for dir in dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    REGISTER.call_once(|| {
        // SAFETY: registers a plain `extern "C" fn` with no arguments, as atexit(3) requires.
        let status = unsafe { libc::atexit(remove_fixture_dirs) };
        assert_eq!(status, 0, "atexit refused the fixture cleanup");
    });
    let dir = tempfile::tempdir().expect("a temporary directory");
    DIRS.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dir.path().to_path_buf());
    dir
}

/// A fixture crate's repository, removed with its temporary directory.
pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub repo: PathBuf,
}

/// Criterion's timing for gate tests that check a verdict or a name on a large change, not
/// sensitivity (after `--`, as the gate passes them on).
pub const QUICK_CRITERION: &[&str] = &[
    "--",
    "--warm-up-time",
    "0.1",
    "--measurement-time",
    "0.3",
    "--sample-size",
    "10",
];

/// The manifest of a fixture crate `name`: a library and the bench targets `benches`, with
/// Criterion 0.8 (the version cargo's cache holds for offline builds).
pub fn criterion_manifest(name: &str, benches: &[&str]) -> String {
    let targets: String = benches
        .iter()
        .map(|b| format!("\n[[bench]]\nname = \"{b}\"\nharness = false\n"))
        .collect();
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\n\
         bench = false\n\n[dev-dependencies]\ncriterion = {{ version = \"0.8\", \
         default-features = false, features = [\"cargo_bench_support\"] }}\n{targets}"
    )
}

/// The library of a fixture crate whose bench targets hold all their work.
pub const EMPTY_LIB: &str = "pub fn nothing() {}\n";

/// A crate at `crate_dir` holding `files` (path, text), its lock file generated offline.
pub fn write_crate(crate_dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        write(&crate_dir.join(path), text);
    }
    let lock = Command::new("cargo")
        .args(["generate-lockfile", "--offline"])
        .current_dir(crate_dir)
        .output()
        .expect("running cargo");
    assert!(lock.status.success(), "offline lockfile: {lock:?}");
}

/// A git repository at `repo` holding `files` (path, text) and a `.gitignore` of `target`,
/// its lock file generated offline, committed and tagged `tag`.
pub fn init_repo(repo: &Path, files: &[(&str, &str)], tag: &str) {
    write_crate(repo, files);
    write(&repo.join(".gitignore"), "target\n");
    git(repo, &["init", "-q"]);
    for (k, v) in [("user.email", "gate@test"), ("user.name", "gate test")] {
        git(repo, &["config", k, v]);
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", tag]);
    git(repo, &["tag", tag]);
}

/// A fixture crate `name` in a new git repository (`probe` in a [`fixture_dir`]): the library
/// `lib` and one Criterion 0.8 bench target per `benches` entry (target name, source),
/// committed and tagged `tag`.
pub fn probe_repo(name: &str, lib: &str, benches: &[(&str, &str)], tag: &str) -> Fixture {
    let dir = fixture_dir();
    let repo = dir.path().join("probe");
    let targets: Vec<&str> = benches.iter().map(|(target, _)| *target).collect();
    let manifest = criterion_manifest(name, &targets);
    let sources: Vec<(String, &str)> = benches
        .iter()
        .map(|(target, source)| (format!("benches/{target}.rs"), *source))
        .collect();
    let mut files = vec![("Cargo.toml", manifest.as_str()), ("src/lib.rs", lib)];
    files.extend(
        sources
            .iter()
            .map(|(path, source)| (path.as_str(), *source)),
    );
    init_repo(&repo, &files, tag);
    Fixture { _dir: dir, repo }
}

/// The bench the gate and bisect tests change: `sum` (its work times `SUM_REPEATS`) and
/// `xor` (`XOR_N` steps), each some tens of microseconds.
pub const SUM_XOR_BENCH: &str = r#"use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

const SUM_REPEATS: u64 = 1;
const XOR_N: u64 = 20_000;

fn sum(n: u64) -> u64 {
    (0..n).fold(0u64, |a, x| a.wrapping_add(black_box(x)))
}

fn benches(c: &mut Criterion) {
    c.bench_function("sum", |b| {
        b.iter(|| (0..SUM_REPEATS).fold(0, |t, _| t ^ sum(black_box(20_000))))
    });
    c.bench_function("xor", |b| {
        b.iter(|| (0..black_box(XOR_N)).fold(0, |a, x| a ^ black_box(x)))
    });
}

criterion_group!(group, benches);
criterion_main!(group);
"#;

/// Replaces `from` with `to` in `file` under `repo`; `from` must be there.
pub fn edit(repo: &Path, file: &str, from: &str, to: &str) {
    let path = repo.join(file);
    let text = std::fs::read_to_string(&path).expect("reading a fixture file");
    assert!(text.contains(from), "{from}");
    std::fs::write(path, text.replace(from, to)).expect("writing a fixture file");
}

/// A commit tagged `tag` whose parent is `base`: `change` edits the checkout of `base`, and
/// everything it leaves is committed (new files too).
pub fn commit_on_base(repo: &Path, tag: &str, change: impl FnOnce(&Path)) {
    git(repo, &["checkout", "-q", "base"]);
    change(repo);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", tag]);
    git(repo, &["tag", tag]);
}

/// Commits every tracked change in `repo` as `tag` and tags it so.
pub fn commit_tagged(repo: &Path, tag: &str) {
    git(repo, &["commit", "-qam", tag]);
    git(repo, &["tag", tag]);
}

/// The fixture behind `cell`, made by `make` on first use; one test at a time holds it (a
/// test that panicked while holding it leaves it usable).
pub fn shared<T>(
    cell: &'static std::sync::OnceLock<std::sync::Mutex<T>>,
    make: fn() -> T,
) -> std::sync::MutexGuard<'static, T> {
    cell.get_or_init(|| std::sync::Mutex::new(make()))
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The JSON document at `path`.
pub fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `bin subcommand` (analyze-trends) in `repo`, offline, with none of the user's settings
/// that would change it (target and Criterion directories, measure, rounds, threshold,
/// results directory, config file).
pub fn offline_command(bin: &str, subcommand: &str, repo: &Path) -> Command {
    let mut command = Command::new(bin);
    command
        .arg(subcommand)
        .current_dir(repo)
        .env("CARGO_NET_OFFLINE", "true")
        .env("RUST_BACKTRACE", "0")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CRITERION_HOME")
        .env_remove("STACKBENCH_MEASURE")
        .env_remove("STACKBENCH_GATE_ROUNDS")
        .env_remove("STACKBENCH_GATE_THRESHOLD_PERCENT")
        .env_remove("STACKBENCH_RESULTS_DIR")
        .env_remove("STACKBENCH_CONFIG");
    command
}

/// `bin gate` (analyze-trends) in `repo` as [`offline_command`], writing into `<out>/out`
/// and `<out>/results`.
pub fn gate_command(bin: &str, repo: &Path, out: &Path) -> Command {
    let mut command = offline_command(bin, "gate", repo);
    command
        .arg("--out")
        .arg(out.join("out"))
        .arg("--results")
        .arg(out.join("results"));
    command
}

/// What a command run said on stderr.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that a gate of the same code on both sides (A/A), in a test whose subject is not
/// the verdict (where the runs go, what a report leaves out, what a run records), finished
/// and judged every benchmark it measured: exit 0, 3 (unsure) or 1, with a comparison in
/// `comparison_json` that has no failed benchmark.
///
/// Exit 1 is accepted because an A/A gate of two rounds can read a change, and read it
/// correctly from what it measured: on this project's 2-vCPU CI machine a process of one
/// fixture bench executable runs it in about 15 µs or about 26 µs for its whole life (61
/// processes measured; neither the environment's size nor address randomisation decided
/// which). Two rounds whose head processes both drew the slow state agree on a change,
/// and two rounds cannot tell that from the code; stop 38's CI met it twice. Tests whose
/// subject is an A/A verdict run the rounds it needs (`gate_unsure`: five).
pub fn assert_judged_without_failures(output: &std::process::Output, comparison_json: &Path) {
    let code = output.status.code();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(code, Some(0) | Some(1) | Some(3)),
        "the gate gave no verdict: exit {code:?}\n{log}"
    );
    let comparison = read_json(comparison_json);
    let failed = &comparison["summary"]["total_failed"];
    assert_eq!(
        failed.as_u64(),
        Some(0),
        "an A/A gate with a failed benchmark: exit {code:?}\n{log}\n{comparison:#}"
    );
}
