//! `results_dir` in stackbench.toml is where every tool looks when `--results` is not
//! given: `analyze-trends` subcommands read and write there, and `stackbench config --get
//! results_dir` (what run_benchmarks.sh asks) names it. Through the real binaries.

use std::path::Path;
use std::process::{Command, Output};

fn run(bin: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env_remove("STACKBENCH_CONFIG")
        .output()
        .expect("running a stackbench binary")
}

fn analyzer(args: &[&str], cwd: &Path) -> Output {
    run(env!("CARGO_BIN_EXE_analyze-trends"), args, cwd)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn analyze_trends_without_results_uses_the_configs_results_dir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("stackbench.toml"),
        "results_dir = \"nightly/results\"\n",
    )
    .unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.8");
    let out = analyzer(
        &[
            "record",
            "--criterion-dir",
            fixture.to_str().unwrap(),
            "--label",
            "cfg",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out));
    let results = dir.path().join("nightly/results");
    assert!(
        results.join("runs").is_dir(),
        "record wrote elsewhere: {}",
        text(&out)
    );
    assert!(!dir.path().join("benchmark_results").exists());

    let out = analyzer(&["runs", "--format", "json"], dir.path());
    assert!(out.status.success(), "{}", text(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["label"], "cfg");

    // An explicit --results still wins: the default directory has no runs.
    let out = analyzer(&["runs", "--results", "benchmark_results"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));

    let out = run(
        env!("CARGO_BIN_EXE_stackbench"),
        &["config", "--get", "results_dir"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "nightly/results"
    );
}

#[test]
fn without_a_config_the_default_stays_and_a_broken_config_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = analyzer(&["runs"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("benchmark_results"), "{}", text(&out));

    std::fs::write(dir.path().join("stackbench.toml"), "results_dir = [\n").unwrap();
    let out = analyzer(&["runs"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("stackbench.toml"), "{}", text(&out));
    let out = run(
        env!("CARGO_BIN_EXE_stackbench"),
        &["config", "--get", "results_dir"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("stackbench.toml"), "{}", text(&out));
}
