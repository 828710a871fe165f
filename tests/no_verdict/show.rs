//! `stackbench show`: a benchmark with no usable samples is shown as failed with its reason,
//! never as a number, and `show` exits 1 naming it; a comparison with a run from other
//! hardware is refused as `compare` refuses it (exit 2, both fingerprints named).

use super::support::{ANALYZE_TRENDS, STACKBENCH, record_fixture, run};
use serde_json::Value;

#[test]
fn unusable_samples_are_shown_as_failed_not_as_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let (_, mut doc) = record_fixture(&results);
    // A run file copied into runs/ by hand (or stored by an older version) with samples
    // no statistic can use; the store reads it on the next query.
    let id = doc["benchmarks"][0]["id"].as_str().unwrap().to_string();
    for t in doc["benchmarks"][0]["samples"]["times"]
        .as_array_mut()
        .unwrap()
    {
        *t = Value::from(0.0);
    }
    doc["run_id"] = Value::from("zzzz-zero-run");
    doc["created_unix_ms"] = Value::from(doc["created_unix_ms"].as_u64().unwrap() + 1000);
    std::fs::write(results.join("runs/zzzz-zero-run.json"), doc.to_string()).unwrap();
    let out = run(
        STACKBENCH,
        &[
            "show",
            "--page",
            "all",
            "--run",
            "zzzz-zero-run",
            "--results",
            results.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(out.code, Some(1), "{}", out.text());
    assert!(
        out.stderr
            .contains(&format!("{id} failed: no usable samples")),
        "{}",
        out.text()
    );
    // The outcomes page lists it as failed, with the reason.
    assert!(out.stdout.contains("no usable samples"), "{}", out.stdout);
}

#[test]
fn a_comparison_across_hardware_is_refused_unless_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let (_, mut doc) = record_fixture(&results);
    let theirs = "cpu=elsewhere x64;gpu=none";
    doc["run_id"] = Value::from("other-machine");
    doc["fingerprint"] = Value::from(theirs);
    std::fs::write(results.join("runs/other-machine.json"), doc.to_string()).unwrap();
    let r = results.to_str().unwrap();
    let ours_run = {
        let out = run(
            ANALYZE_TRENDS,
            &["runs", "--format", "json", "--results", r],
            tmp.path(),
        );
        let runs: Value = serde_json::from_str(&out.stdout).unwrap();
        runs.as_array()
            .unwrap()
            .iter()
            .find(|run| run["run_id"] != "other-machine")
            .unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let show = |extra: &[&str]| {
        let mut args = vec![
            "show",
            "--page",
            "compare",
            "--run",
            ours_run.as_str(),
            "--compare",
            "other-machine",
            "--results",
            r,
        ];
        args.extend_from_slice(extra);
        run(STACKBENCH, &args, tmp.path())
    };
    let out = show(&[]);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("different hardware"), "{}", out.text());
    assert!(out.stderr.contains(theirs), "{}", out.text());
    assert!(
        out.stderr.contains("--allow-different-hardware"),
        "{}",
        out.text()
    );

    let out = show(&["--allow-different-hardware"]);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(out.stdout.contains("DIFFERENT HARDWARE"), "{}", out.stdout);
    assert!(out.stdout.contains(theirs), "{}", out.stdout);
}

#[test]
fn an_empty_store_is_no_runs_naming_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("nothing-here");
    let out = run(
        STACKBENCH,
        &["show", "--results", results.to_str().unwrap()],
        tmp.path(),
    );
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("nothing-here"), "{}", out.text());
}

#[test]
fn a_run_that_measured_nothing_is_not_a_clean_view() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let (file, mut doc) = record_fixture(&results);
    // Every benchmark failed in the harness: nothing measured, nothing to chart.
    let failed: Vec<Value> = doc["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| serde_json::json!({"id": b["id"], "error": "result mismatch"}))
        .collect();
    doc["benchmarks"] = Value::Array(Vec::new());
    doc["failed"] = Value::Array(failed);
    let run_id = doc["run_id"].as_str().unwrap().to_string();
    std::fs::remove_dir_all(&results).unwrap();
    std::fs::create_dir_all(results.join("runs")).unwrap();
    std::fs::write(
        results.join("runs").join(file.file_name().unwrap()),
        doc.to_string(),
    )
    .unwrap();
    let out = run(
        STACKBENCH,
        &["show", "--results", results.to_str().unwrap()],
        tmp.path(),
    );
    assert_eq!(out.code, Some(1), "{}", out.text());
    assert!(
        out.stderr
            .contains(&format!("run {run_id} measured nothing")),
        "{}",
        out.text()
    );
}
