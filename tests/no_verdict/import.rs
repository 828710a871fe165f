//! `analyze-trends import`: a run whose samples cannot be used is imported with those
//! benchmarks failed and named (exit 1), never as numbers a later `compare` takes logs of;
//! a run that measured nothing, or a file that is not a run, is refused naming the file,
//! and leaves no store behind.

use super::support::{ANALYZE_TRENDS, empty_run_file, import_into, record_fixture, run};
use serde_json::Value;

#[test]
fn negative_sample_times_are_failed_by_id_and_compare_does_not_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, mut doc) = record_fixture(&tmp.path().join("source"));
    let original = tmp.path().join("original.json");
    std::fs::write(&original, doc.to_string()).unwrap();
    let id = doc["benchmarks"][0]["id"].as_str().unwrap().to_string();
    let times = doc["benchmarks"][0]["samples"]["times"]
        .as_array_mut()
        .unwrap();
    for t in times.iter_mut() {
        *t = Value::from(-t.as_f64().unwrap());
    }
    doc["run_id"] = Value::from("negative-run");
    let negative = tmp.path().join("negative.json");
    std::fs::write(&negative, doc.to_string()).unwrap();

    let results = tmp.path().join("results");
    let r = results.to_str().unwrap();
    let out = import_into(&negative, &results, &[]);
    assert_eq!(out.code, Some(1), "{}", out.text());
    assert!(out.stderr.contains(&id), "{}", out.text());
    assert!(out.stderr.contains("no usable samples"), "{}", out.text());
    assert!(out.stderr.contains("negative.json"), "{}", out.text());
    assert!(
        out.stdout.contains("1 failed (1 with no usable samples)"),
        "the summary states the evidence: {}",
        out.stdout
    );

    // The stored run holds the benchmark as a failure; compare judges the rest, no panic.
    for (base, cand) in [
        (original.to_str().unwrap(), "negative-run"),
        (original.to_str().unwrap(), negative.to_str().unwrap()),
    ] {
        let out = run(
            ANALYZE_TRENDS,
            &["compare", base, cand, "--results", r],
            tmp.path(),
        );
        assert_ne!(out.code, Some(101), "compare panicked: {}", out.text());
        assert!(out.code.is_some(), "killed: {}", out.text());
    }
}

#[test]
fn a_run_that_measured_nothing_is_refused_and_leaves_no_store() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = empty_run_file(tmp.path());
    let results = tmp.path().join("results");
    let out = import_into(&empty, &results, &[]);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("empty-run.json"), "{}", out.text());
    assert!(out.stderr.contains("measured nothing"), "{}", out.text());
    assert!(!results.exists(), "bad input left a trace: {results:?}");
}

#[test]
fn bad_input_leaves_no_store_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken.json");
    std::fs::write(&broken, "{\"schema\": \"stackbench.run.v1\"").unwrap();
    let results = tmp.path().join("results");
    for file in [broken.to_str().unwrap(), "/nonexistent/run.json"] {
        let out = import_into(std::path::Path::new(file), &results, &[]);
        assert_eq!(out.code, Some(2), "{}", out.text());
        assert!(out.stderr.contains(file), "{}", out.text());
        assert!(!results.exists(), "bad input {file} left a trace");
    }
}

#[test]
fn a_directory_without_run_files_is_nothing_to_import() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("no-runs-here");
    std::fs::create_dir(&empty).unwrap();
    let results = tmp.path().join("results");
    let out = import_into(&empty, &results, &[]);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("no-runs-here"), "{}", out.text());
    assert!(!results.exists(), "nothing to import left a trace");
}

#[test]
fn a_run_id_that_is_a_path_is_refused_naming_the_file_and_writes_nothing_outside_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, mut doc) = record_fixture(&tmp.path().join("source"));
    doc["run_id"] = Value::from("../../escaped");
    let hostile = tmp.path().join("hostile.json");
    std::fs::write(&hostile, doc.to_string()).unwrap();
    let results = tmp.path().join("results");
    let out = import_into(&hostile, &results, &[]);
    assert_ne!(out.code, Some(0), "{}", out.text());
    assert!(out.stderr.contains("hostile.json"), "{}", out.text());
    assert!(
        out.stderr.contains("not a plain file name"),
        "{}",
        out.text()
    );
    assert!(!tmp.path().join("escaped.json").exists());
    assert!(!results.join("escaped.json").exists());
}
