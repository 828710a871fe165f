//! `analyze-trends history`: a benchmark whose stored points are all unusable is an error
//! naming it, never a table of zeros; a usable history states what it stands on.

use super::compare::write_baseline;
use super::support::{ANALYZE_TRENDS, record_into, run};
use std::path::Path;

/// A run with two benchmarks, `work/sum` measured fine and `work/zero` whose sample times
/// are all 0: recorded from a Criterion tree, then edited, and placed into a fresh
/// `<results>/runs/` (the store reads it from there; no import applies its checks).
fn results_with_a_zero_benchmark(tmp: &Path, results: &Path) {
    let tree = tmp.join("criterion");
    let steady: Vec<f64> = (0..10).map(|i| 1000.0 + f64::from(i)).collect();
    write_baseline(&tree, "work/sum", "new", &steady);
    write_baseline(&tree, "work/zero", "new", &steady);
    let recorded = tmp.join("recorded");
    let ran = record_into(&tree, &recorded, &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.text());
    let file = std::fs::read_dir(recorded.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    for b in doc["benchmarks"].as_array_mut().unwrap() {
        if b["id"] == "work/zero" {
            b["samples"]["times"] = serde_json::json!(vec![0.0; 10]);
        }
    }
    std::fs::create_dir_all(results.join("runs")).unwrap();
    let target = results.join("runs").join(file.file_name().unwrap());
    std::fs::write(target, doc.to_string()).unwrap();
}

#[test]
fn a_benchmark_with_no_usable_points_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    results_with_a_zero_benchmark(tmp.path(), &results);
    let dir = results.to_str().unwrap();
    let ran = run(
        ANALYZE_TRENDS,
        &["history", "work/zero", "--results", dir],
        tmp.path(),
    );
    assert_eq!(ran.code, Some(2), "{}", ran.text());
    let text = ran.text();
    assert!(text.contains("no usable samples of `work/zero`"), "{text}");
    // The reason is the sample rule's, kept in the run when the store failed the samples.
    assert!(text.contains("sample times are 0"), "{text}");

    let good = run(
        ANALYZE_TRENDS,
        &["history", "work/sum", "--results", dir],
        tmp.path(),
    );
    assert_eq!(good.code, Some(0), "{}", good.text());
    assert!(
        good.stderr
            .contains("`work/sum`: 1 run judged on 10 samples each (min)"),
        "the summary states the evidence: {}",
        good.text()
    );
}

/// `history --format json` carries the evidence as compare's JSON does: the runs judged
/// with their usable samples, and a run whose samples were unusable as `unusable`, failed.
#[test]
fn history_json_states_its_evidence_and_names_an_unusable_run() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    results_with_a_zero_benchmark(tmp.path(), &results);
    // A second run in which `work/zero` measured fine: one usable point, one unusable.
    let tree = tmp.path().join("criterion2");
    let steady: Vec<f64> = (0..10).map(|i| 1000.0 + f64::from(i)).collect();
    write_baseline(&tree, "work/zero", "new", &steady);
    let dir = results.to_str().unwrap();
    let recorded = record_into(&tree, &results, &[]);
    assert_eq!(recorded.code, Some(0), "{}", recorded.text());

    let ran = run(
        ANALYZE_TRENDS,
        &["history", "work/zero", "--results", dir, "--format", "json"],
        tmp.path(),
    );
    // The unusable run is a failure (exit 1), named on stderr; stdout stays JSON.
    assert_eq!(ran.code, Some(1), "{}", ran.text());
    assert!(ran.stderr.contains("sample times are 0"), "{}", ran.text());
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let evidence = &doc["evidence"];
    assert_eq!(evidence["judged"], 1, "{evidence}");
    assert_eq!(evidence["failed"], 1, "{evidence}");
    assert_eq!(
        evidence["min_samples"],
        serde_json::json!([10]),
        "{evidence}"
    );
    assert_eq!(evidence["unusable"][0]["id"], "work/zero", "{evidence}");
    assert_eq!(evidence["unusable"][0]["defect"]["kind"], "recorded");
}
