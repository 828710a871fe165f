//! An installed stackbench runs from any directory without its checkout (issue 30): the two
//! binaries installed into a temporary prefix by `cargo install --path . --root DIR --debug`,
//! run from a directory outside any checkout with `STACKBENCH_CHECKOUT` set empty (the
//! checkout is gone) and a temporary installation cache.
//!
//! Checks, in order: before `stackbench setup`, a command that runs benchmarks refuses with
//! the command that installs them, and `stackbench info` says the bench executables are
//! missing; `stackbench setup --from <checkout>` builds the bench executables there (`cargo
//! bench --no-run`, which ci/test.sh has run already) and fills the cache; then `info` names
//! the cache, `suite quick` prints the quick suite, `validate --level 1` measures one GEMM
//! through the cached executable and keeps the run, and `analyze-trends` records nothing new
//! but compares and reports that stored run, all from the unrelated directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

struct Installed {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    cache: PathBuf,
    elsewhere: PathBuf,
}

fn install() -> Installed {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    // In the dev profile, whose binaries the build of this very test made, so the install
    // compiles nothing. README's install step names the bench profile, whose build
    // `./run_benchmarks.sh` leaves; ci/test.sh builds only the benches in it, and the same
    // sources installed from another profile run from anywhere just the same.
    // Without this test's package variables, as from a shell: with them, build scripts that
    // track them (ring's) would make the install recompile what ci/test.sh built.
    let installed = stackbench_measure::system::cargo::command()
        .args(["install", "--path"])
        .arg(repo())
        .arg("--root")
        .arg(&prefix)
        .args(["--debug", "--locked", "--offline"])
        .output()
        .expect("running cargo install");
    assert!(
        installed.status.success(),
        "cargo install --path . --root {}: {}",
        prefix.display(),
        text(&installed)
    );
    let bin = prefix.join("bin");
    for name in ["stackbench", "analyze-trends"] {
        assert!(
            bin.join(name).is_file(),
            "cargo install put no {name} in {}",
            bin.display()
        );
    }
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    Installed {
        cache: dir.path().join("cache"),
        bin,
        elsewhere,
        _dir: dir,
    }
}

impl Installed {
    fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new(self.bin.join(program))
            .args(args)
            .current_dir(&self.elsewhere)
            .env("STACKBENCH_CHECKOUT", "")
            .env("STACKBENCH_CACHE_DIR", &self.cache)
            .env("HOME", &self.elsewhere)
            .env_remove("STACKBENCH_BENCH_DIR")
            .env_remove("STACKBENCH_CONFIG")
            .env_remove("STACKBENCH_RESULTS_DIR")
            .env_remove("STACKBENCH_STORE")
            .env_remove("STACKBENCH_SUITE")
            .env_remove("STACKBENCH_VALIDATE_BUDGET_S")
            .env_remove("CRITERION_HOME")
            .output()
            .unwrap()
    }
}

#[path = "bench_support/mod.rs"]
#[allow(dead_code)] // its bench-executable lookup: the cache holds these
mod bench_support;
use bench_support::output_text as text;

const GEMM: &str = "gemm/cpu/f32/512x512x512";

#[test]
fn an_installed_stackbench_runs_from_anywhere_after_setup_without_its_checkout() {
    let installed = install();
    let validate = [
        "validate",
        "--level",
        "1",
        "--filter",
        "^gemm/cpu/f32/512x512x512$",
        "--format",
        "json",
    ];

    // Nothing installed yet: refused, naming the way out; info says what is missing.
    let refused = installed.run("stackbench", &validate);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("stackbench setup"),
        "{}",
        text(&refused)
    );
    let info = installed.run("stackbench", &["info", "--no-measure"]);
    assert!(info.status.success(), "{}", text(&info));
    assert!(
        text(&info).contains("bench executables: missing"),
        "{}",
        text(&info)
    );

    // Setup from the checkout, then everything from the unrelated directory.
    let setup = installed.run("stackbench", &["setup", "--from", repo().to_str().unwrap()]);
    assert!(setup.status.success(), "{}", text(&setup));
    assert!(installed.cache.join("bench/gemm").is_file());
    assert!(installed.cache.join("scripts/components").is_dir());
    let info = installed.run("stackbench", &["info", "--no-measure"]);
    assert!(
        text(&info).contains(&format!(
            "bench executables: installed in {}",
            installed.cache.display()
        )),
        "{}",
        text(&info)
    );
    let suite = installed.run("stackbench", &["suite", "quick"]);
    assert!(suite.status.success(), "{}", text(&suite));
    assert!(text(&suite).contains("gemm"), "{}", text(&suite));

    let measured = installed.run("stackbench", &validate);
    // 0 passed or 1 a check failed on this machine: either way the GEMM was measured.
    assert!(
        matches!(measured.status.code(), Some(0 | 1)),
        "{}",
        text(&measured)
    );
    let verdict: serde_json::Value = serde_json::from_slice(&measured.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&measured)));
    let gemm = verdict["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == GEMM)
        .unwrap_or_else(|| panic!("{GEMM} not in {verdict:#}"));
    assert_eq!(gemm["outcome"], "measured", "{gemm:#}");

    // The kept run, through the installed analyzer.
    let results = installed.elsewhere.join("benchmark_results");
    assert!(results.join("runs").is_dir(), "validate kept no run");
    // A run against itself: unchanged, or unsure where its 10 samples give a wide
    // interval (exit 3); never a regression nor bad input.
    let compare = installed.run(
        "analyze-trends",
        &["compare", "latest", "latest", "--format", "json"],
    );
    assert!(
        matches!(compare.status.code(), Some(0 | 3)),
        "{}",
        text(&compare)
    );
    let comparison: serde_json::Value = serde_json::from_slice(&compare.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&compare)));
    assert!(
        comparison["comparisons"]
            .as_array()
            .is_some_and(|rows| rows.iter().any(|r| r["id"] == GEMM)),
        "{comparison:#}"
    );
    let report = installed.run("analyze-trends", &["benchmark_results"]);
    assert!(report.status.success(), "{}", text(&report));
    assert!(results.join("reports").is_dir(), "{}", text(&report));
}

/// `cargo install stackbench` once published needs `cargo package` to succeed for the root
/// and the member crates it depends on (issue 30). Packed without the verifying build (a
/// second full build of every crate); the members resolve against each other's packages.
#[test]
fn every_workspace_crate_packages_for_a_registry() {
    let dir = tempfile::tempdir().unwrap();
    let packaged = stackbench_measure::system::cargo::command()
        .args([
            "package",
            "--workspace",
            "--no-verify",
            "--offline",
            "--allow-dirty",
        ])
        .arg("--target-dir")
        .arg(dir.path())
        .current_dir(repo())
        .output()
        .expect("running cargo package");
    assert!(packaged.status.success(), "{}", text(&packaged));
    let mut included = std::collections::BTreeMap::new();
    for (name, folder) in [
        ("stackbench", "."),
        ("stackbench-model", "crates/model"),
        ("stackbench-measure", "crates/measure"),
        ("stackbench-benches", "crates/benches"),
        ("stackbench-store", "crates/store"),
        ("stackbench-analysis", "crates/analysis"),
        ("stackbench-dashboard", "crates/dashboard"),
        ("stackbench-report", "crates/report"),
        ("stackbench-gate", "crates/gate"),
        ("stackbench-validate", "crates/validate"),
        ("stackbench-serve", "crates/serve"),
    ] {
        let archive = dir.path().join(format!("package/{name}-0.1.0.crate"));
        assert!(
            archive.is_file(),
            "no {}: {}",
            archive.display(),
            text(&packaged)
        );
        // Every file the crate's library compiles in must travel in its package, or the
        // crate builds here and fails for whoever installs it from a registry.
        let listed = Command::new("tar")
            .arg("-tzf")
            .arg(&archive)
            .output()
            .expect("tar runs");
        assert!(listed.status.success(), "tar -tzf {}", archive.display());
        let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
        let crate_dir = repo().join(folder).canonicalize().unwrap();
        for file in compiled_in(&crate_dir.join("src")) {
            let inside = file.strip_prefix(&crate_dir).unwrap_or_else(|_| {
                panic!(
                    "{name} compiles in {}, outside its folder {}: its package cannot carry it",
                    file.display(),
                    crate_dir.display()
                )
            });
            let entry = format!("{name}-0.1.0/{}", inside.display());
            assert!(
                listed.lines().any(|l| l == entry),
                "{name}'s package lacks {entry}, which its library compiles in"
            );
            *included.entry(name).or_insert(0) += 1;
        }
    }
    // The report crate's five page assets, the emulator's runtime header and the store's two
    // migrations, at least, each in its own crate: a walk that missed one crate's includes
    // would pass on the others'.
    for (name, least) in [
        ("stackbench-report", 5),
        ("stackbench-measure", 1),
        ("stackbench-store", 2),
    ] {
        let found = included.get(name).copied().unwrap_or(0);
        assert!(
            found >= least,
            "{name}: only {found} compiled-in files found, {least} expected: {included:?}"
        );
    }
}

/// The files the library code under `src` compiles in with `include_str!` or
/// `include_bytes!` of a literal path (test modules, which follow `#[cfg(test)]` at the end
/// of a file, are not built for whoever depends on the crate, and are left out).
fn compiled_in(src: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    // A crate of bench targets only has no library.
    let mut dirs: Vec<PathBuf> = src
        .is_dir()
        .then(|| src.to_path_buf())
        .into_iter()
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            let library = source.split("#[cfg(test)]").next().unwrap_or_default();
            for macro_call in ["include_str!(\"", "include_bytes!(\""] {
                for (at, _) in library.match_indices(macro_call) {
                    let rest = &library[at + macro_call.len()..];
                    let literal = &rest[..rest.find('"').expect("a closed literal")];
                    let file = path.parent().unwrap().join(literal);
                    found.push(
                        file.canonicalize().unwrap_or_else(|e| {
                            panic!("{} includes {literal}: {e}", path.display())
                        }),
                    );
                }
            }
        }
    }
    found
}
