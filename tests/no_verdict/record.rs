//! `analyze-trends record`: a benchmark whose samples are unusable is recorded as failed,
//! by id and reason (exit 1), never dropped or counted as measured; a baseline that
//! measured nothing is refused (exit 2) and leaves no store behind.

use super::support::{copy_plain_function, only_run_file, record_into};
use serde_json::Value;
use std::path::Path;

/// A copy of the fixture's `plain function` benchmark under `root`, its `new` samples'
/// times replaced by `times`.
fn tree_with_times(root: &Path, times: Option<&[f64]>) {
    let to = copy_plain_function(root);
    if let Some(times) = times {
        let path = to.join("sample.json");
        let mut samples: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let n = samples["iters"].as_array().unwrap().len();
        let times: Vec<f64> = (0..n).map(|i| times[i % times.len()]).collect();
        samples["times"] = Value::from(times);
        std::fs::write(&path, samples.to_string()).unwrap();
    }
}

#[test]
fn unusable_samples_are_recorded_as_failed_by_id() {
    for (what, times) in [
        ("all zero", vec![0.0]),
        ("negative", vec![-5.0, 10.0]),
        ("not finite", vec![1.0, f64::INFINITY]),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("criterion");
        tree_with_times(&tree, Some(&times));
        // JSON has no infinity: write a number too large for f64, which parses as inf.
        if what == "not finite" {
            let path = tree.join("plain function/new/sample.json");
            let text = std::fs::read_to_string(&path)
                .unwrap()
                .replace("null", "1e999");
            std::fs::write(&path, text).unwrap();
        }
        let results = tmp.path().join("results");
        let out = record_into(&tree, &results, &[]);
        assert_eq!(out.code, Some(1), "{what}: {}", out.text());
        assert!(
            out.stderr
                .contains("FAILED plain function: no usable samples"),
            "{what}: {}",
            out.text()
        );
        assert!(out.stderr.contains("sample.json"), "{what}: {}", out.text());
        assert!(
            out.stdout
                .contains("0 benchmarks measured, 1 failed (1 with no usable samples)"),
            "{what}: {}",
            out.stdout
        );
        let (_, doc) = only_run_file(&results);
        assert_eq!(doc["benchmarks"], Value::Array(Vec::new()), "{what}");
        assert_eq!(doc["failed"][0]["id"], "plain function", "{what}");
    }
}

#[test]
fn a_baseline_that_measured_nothing_is_refused_and_leaves_no_store() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    tree_with_times(&tree, None);
    // benchmark.json without a name: the reader cannot say which benchmark it is.
    std::fs::write(tree.join("plain function/new/benchmark.json"), "{}").unwrap();
    let results = tmp.path().join("results");
    let out = record_into(&tree, &results, &[]);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("measured nothing"), "{}", out.text());
    assert!(out.stderr.contains("benchmark.json"), "{}", out.text());
    assert!(!results.exists(), "nothing measured left a trace");
}

#[test]
fn the_summary_states_benchmarks_and_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    tree_with_times(&tree, None);
    let out = record_into(&tree, &tmp.path().join("results"), &[]);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(
        out.stdout
            .contains("1 benchmarks measured (10 samples each, 10 in all), 0 failed, 0 skipped"),
        "{}",
        out.stdout
    );
}
