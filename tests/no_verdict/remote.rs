//! `record` and `import` with a results server as the store (`--store http://…`): a run that
//! measured nothing is refused (exit 2, naming what is missing) before any upload, and is
//! never kept in the spool, where a later flush would deliver a run with no evidence.

use super::support::{copy_plain_function, empty_run_file, import_into, record_into};

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
    let empty = empty_run_file(tmp.path());
    let results = tmp.path().join("results");
    let out = import_into(&empty, &results, &["--store", &nobody_listening()]);
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
    let new = copy_plain_function(&tree);
    // benchmark.json without a name: the reader cannot say which benchmark it is.
    std::fs::write(new.join("benchmark.json"), "{}").unwrap();
    let results = tmp.path().join("results");
    let out = record_into(&tree, &results, &["--store", &nobody_listening()]);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("measured nothing"), "{}", out.text());
    assert!(!out.text().contains("upload"), "{}", out.text());
    assert!(!results.exists(), "bad input left a trace: {results:?}");
}
