//! The documents stackbench writes have one Rust type each, and that type is the contract:
//! the schemas in schemas/ are generated from it (`stackbench::schemas`), and the files
//! older versions wrote still read through it.
//!
//! A committed schema that differs from the generated one fails here, naming the file;
//! regenerate them with `STACKBENCH_UPDATE_SCHEMAS=1 cargo test --test typed_documents`.

use stackbench::analysis::Comparison;
use stackbench::results::{RunRecord, load_run};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn each_committed_schema_is_the_one_its_type_generates() {
    let dir = root().join("schemas");
    let update = std::env::var("STACKBENCH_UPDATE_SCHEMAS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (file, generated) in stackbench::schemas::generated() {
        let path = dir.join(file);
        if update {
            std::fs::write(&path, &generated)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != generated {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "these committed schemas differ from the ones their types generate: {stale:#?}\n\
         regenerate them with `STACKBENCH_UPDATE_SCHEMAS=1 cargo test --test typed_documents`"
    );
}

/// Every run file under `dir` (`*.json` holding a `stackbench.run.v…` schema).
fn run_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn run_files_an_older_stackbench_recorded_load_through_the_typed_reader_and_round_trip() {
    let fixtures = root().join("tests/fixtures/hardware");
    let files: Vec<PathBuf> = ["runs", "recorded"]
        .iter()
        .flat_map(|d| run_files(&fixtures.join(d)))
        .collect();
    assert!(files.len() >= 4, "{files:?}");
    for path in files {
        let raw: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("a fixture")).expect("JSON");
        let run = load_run(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(Some(run.run_id.as_str()), raw["run_id"].as_str());
        let written = raw["benchmarks"].as_array().map_or(0, Vec::len);
        assert_eq!(
            run.benchmarks.len() + run.failed.len(),
            written,
            "{}: every benchmark read, as a measurement or a failure",
            path.display()
        );
        // What this version writes of it reads back as the same record.
        let text = serde_json::to_string(&run).expect("a run serialises");
        let back: RunRecord = serde_json::from_str(&text).expect("and reads back");
        assert_eq!(
            serde_json::to_value(&back).expect("serialises"),
            serde_json::to_value(&run).expect("serialises"),
            "{}",
            path.display()
        );
    }
}

#[test]
fn recorded_comparisons_read_back_as_the_typed_comparison_unchanged() {
    for snapshot in ["compare-0.5.json", "compare-0.8.json"] {
        let path = root().join("tests/fixtures/snapshots").join(snapshot);
        let text = std::fs::read_to_string(&path).expect("a fixture");
        let raw: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let typed: Comparison =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{snapshot}: {e}"));
        assert_eq!(
            serde_json::to_value(&typed).expect("serialises"),
            raw,
            "{snapshot}: every field kept, none added"
        );
    }
}
