//! `stackbench validate`: a suite or filter that selects nothing is bad input (exit 2,
//! naming it), and a benchmark whose samples cannot be used is failed (exit 1, naming the
//! id and the reason), never a pass on the installation checks alone.

use super::support::{STACKBENCH, run};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const ID: &str = "gemm/cpu/f32/512x512x512";

/// A stored run (the store's run file) of one CPU GEMM with these samples, on a probe
/// whose CPU backend loads: what `validate --run FILE` judges.
fn run_file(dir: &Path, iters: Value, times: Value) -> PathBuf {
    let run = json!({
        "schema": "stackbench.run.v1", "run_id": "r1", "created_unix_ms": 0,
        "timestamp": "2026-11-25T00:00:00Z",
        "source": {"criterion_dir": "c", "baseline": "new", "analyzer_version": "0"},
        "fingerprint": "cpu=test",
        "system": {"gpus": [], "peaks": [], "backends": {"cpu": {"status": "available",
            "devices": [{"name": "Test CPU"}]}}},
        "benchmarks": [{"id": ID, "group": "gemm/cpu", "function": "f32", "value": "512x512x512",
            "throughput": {"Elements": 2u64 * 512 * 512 * 512},
            "samples": {"sampling_mode": "Flat", "iters": iters, "times": times}}]
    });
    let path = dir.join("run.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&run).unwrap()).unwrap();
    path
}

/// `stackbench validate --run FILE --results DIR` plus `extra`, with `config` as the config.
fn validate(dir: &Path, run: &Path, config: &str, extra: &[&str]) -> super::support::Ran {
    let config_path = dir.join("stackbench.toml");
    std::fs::write(&config_path, config).unwrap();
    let results = dir.join("results");
    let mut args = vec![
        "validate",
        "--run",
        run.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
        "--config",
        config_path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run_stackbench(&args, dir)
}

fn run_stackbench(args: &[&str], dir: &Path) -> super::support::Ran {
    run(STACKBENCH, args, dir)
}

fn good_samples() -> (Value, Value) {
    (json!([1.0, 1.0, 1.0]), json!([2e6, 2.1e6, 1.9e6]))
}

#[test]
fn validate_a_suite_that_selects_nothing_is_bad_input_naming_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let (iters, times) = good_samples();
    let run_path = run_file(dir.path(), iters, times);
    let config = "[suites.none]\ninclude = ['^no/such/benchmark$']\n";
    let ran = validate(dir.path(), &run_path, config, &["--suite", "none"]);
    assert_eq!(ran.code, Some(2), "{}", ran.text());
    assert!(
        ran.stderr.contains("suite 'none' selects no benchmark"),
        "{}",
        ran.text()
    );
    assert!(!ran.text().contains("passed —"), "{}", ran.text());
}

#[test]
fn validate_a_filter_that_matches_nothing_is_bad_input_naming_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let (iters, times) = good_samples();
    let run_path = run_file(dir.path(), iters, times);
    let ran = validate(
        dir.path(),
        &run_path,
        "",
        &["--suite", "quick", "--filter", "^no/such/benchmark$"],
    );
    assert_eq!(ran.code, Some(2), "{}", ran.text());
    assert!(
        ran.stderr
            .contains("the filter '^no/such/benchmark$' selects no benchmark of suite 'quick'"),
        "{}",
        ran.text()
    );
    // The same run with a filter that matches is judged (the case above is not a broken run).
    let ran = validate(
        dir.path(),
        &run_path,
        "",
        &["--suite", "quick", "--filter", "gemm/cpu"],
    );
    assert_ne!(ran.code, Some(2), "{}", ran.text());
}

#[test]
fn validate_fails_a_benchmark_without_usable_samples_naming_it_and_why() {
    for (iters, times, why) in [
        (json!([]), json!([]), "no samples"),
        (
            json!([1.0, 1.0, 1.0]),
            json!([0.0, 0.0, 0.0]),
            "all 3 sample times are 0",
        ),
        (
            json!([1.0, 1.0]),
            json!([-5.0, -6.0]),
            "time -5 ns is not a positive",
        ),
        // Finite parts, a per-iteration time that is not (1e300 ns over 1e-300 iterations).
        (json!([1e-300, 1.0]), json!([1e300, 2.0]), "not finite"),
        (
            json!([1.0, 2.0]),
            json!([3.0]),
            "2 iteration counts but 1 times",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let run_path = run_file(dir.path(), iters, times);
        let ran = validate(dir.path(), &run_path, "", &["--suite", "quick", "--json"]);
        assert_eq!(ran.code, Some(1), "{why}: {}", ran.text());
        let verdict: Value = serde_json::from_str(&ran.stdout)
            .unwrap_or_else(|e| panic!("{why}: {e}: {}", ran.text()));
        assert_eq!(verdict["status"], "failed", "{why}");
        let result = verdict["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == ID)
            .unwrap_or_else(|| panic!("{why}: no result for {ID}: {verdict:#}"));
        assert_eq!(result["outcome"], "failed", "{why}: {result}");
        let reason = result["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("no usable samples") && reason.contains(why),
            "{why}: {reason}"
        );
        // The installation check of the group names the id, and nothing counts it measured.
        let runs = verdict["threshold_checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "installation/gemm/cpu runs")
            .unwrap_or_else(|| panic!("{why}: {verdict:#}"));
        assert_eq!(runs["status"], "failed");
        assert!(runs["actual"].as_str().unwrap().contains(ID), "{runs}");
        assert_eq!(verdict["evidence"]["samples"], 0, "{why}");
        assert_eq!(verdict["evidence"]["benchmarks"], 0, "{why}");
    }
}

/// The harness said it measured a benchmark whose samples never reached the run (an
/// unreadable sample file is dropped by the reader): failed, not counted as measured.
#[test]
fn validate_fails_a_benchmark_called_measured_whose_samples_never_reached_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (iters, times) = good_samples();
    let path = run_file(dir.path(), iters, times);
    let mut run: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let lost = "gemm/cpu/f64/512x512x512";
    run["targets"] = json!([{"schema": "stackbench.target.v1", "target": "gemm", "suite": "quick",
        "started_unix_s": 0, "benchmarks": {lost: {"group": "gemm/cpu", "function": "f64",
            "value": "512x512x512", "outcome": "measured"}}}]);
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    let ran = validate(dir.path(), &path, "", &["--suite", "quick"]);
    assert_eq!(ran.code, Some(1), "{}", ran.text());
    assert!(
        ran.stdout.contains(&format!(
            "FAILED {lost}: no usable samples: the run holds no samples"
        )),
        "{}",
        ran.text()
    );
}

/// A run file that is not JSON the store can read (NaN is not JSON) is bad input, named.
#[test]
fn validate_an_unreadable_run_file_is_bad_input_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.json");
    std::fs::write(
        &path,
        "{\"schema\": \"stackbench.run.v1\", \"times\": [NaN]",
    )
    .unwrap();
    let ran = validate(dir.path(), &path, "", &["--suite", "quick"]);
    assert_eq!(ran.code, Some(2), "{}", ran.text());
    assert!(ran.stderr.contains("broken.json"), "{}", ran.text());
}
