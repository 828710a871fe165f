//! `record` and `import` with a results server as the store (`--store http://…`): a run that
//! measured nothing is refused (exit 2, naming what is missing) before any upload, and is
//! never kept in the spool, where a later flush would deliver a run with no evidence.

use super::support::{ANALYZE_TRENDS, FIXTURE, record_fixture, run};
use serde_json::Value;

/// A localhost URL nothing answers on: an upload there would be spooled.
fn nobody_listening() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

#[test]
fn a_run_that_measured_nothing_is_neither_uploaded_nor_spooled() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, mut doc) = record_fixture(&tmp.path().join("source"));
    doc["benchmarks"] = Value::Array(Vec::new());
    doc["failed"] = Value::Array(Vec::new());
    let empty = tmp.path().join("empty-run.json");
    std::fs::write(&empty, doc.to_string()).unwrap();
    let results = tmp.path().join("results");
    let server = nobody_listening();
    let out = run(
        ANALYZE_TRENDS,
        &[
            "import",
            empty.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
            "--store",
            &server,
        ],
        tmp.path(),
    );
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("empty-run.json"), "{}", out.text());
    assert!(out.stderr.contains("measured nothing"), "{}", out.text());
    assert!(!out.stderr.contains("SPOOLED"), "{}", out.text());
    assert!(
        !results.join("spool").exists(),
        "a run with no evidence was spooled"
    );
}

#[test]
fn a_baseline_that_measured_nothing_is_refused_before_the_server_is_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    let new = tree.join("plain function/new");
    std::fs::create_dir_all(&new).unwrap();
    for file in ["benchmark.json", "estimates.json", "sample.json"] {
        let from = std::path::Path::new(FIXTURE)
            .join("plain function/new")
            .join(file);
        std::fs::copy(from, new.join(file)).unwrap();
    }
    // benchmark.json without a name: the reader cannot say which benchmark it is.
    std::fs::write(new.join("benchmark.json"), "{}").unwrap();
    let results = tmp.path().join("results");
    let out = run(
        ANALYZE_TRENDS,
        &[
            "record",
            "--criterion-dir",
            tree.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
            "--store",
            &nobody_listening(),
        ],
        tmp.path(),
    );
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("measured nothing"), "{}", out.text());
    assert!(!out.text().contains("upload"), "{}", out.text());
    assert!(!results.exists(), "bad input left a trace: {results:?}");
}
