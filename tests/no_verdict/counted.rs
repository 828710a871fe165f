//! `record` after a counting-mode run (`STACKBENCH_MEASURE=instructions cargo bench`) whose
//! ids were all not countable: no count, no timing, so no run is recorded.

use super::support::{ANALYZE_TRENDS, run};

#[test]
fn record_of_a_counting_run_with_only_not_countable_ids_exits_2_naming_them() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let criterion = dir.path().join("criterion");
    let targets = criterion.join("stackbench/targets");
    std::fs::create_dir_all(&targets).expect("the sidecar folder");
    let report = serde_json::json!({
        "schema": "stackbench.target.v1",
        "target": "components",
        "suite": "quick",
        "started_unix_s": 1_763_900_000u64,
        "benchmarks": {},
        "measure": "instructions",
        "counted": {
            "components/pytorch/matmul/1024": {
                "status": "not_countable",
                "reason": "the components family runs its routine in a Python worker process"
            }
        }
    });
    std::fs::write(targets.join("components.json"), report.to_string()).expect("the report");
    let criterion = criterion.to_string_lossy().into_owned();
    let results = dir.path().join("results").to_string_lossy().into_owned();
    let ran = run(
        ANALYZE_TRENDS,
        &[
            "record",
            "--criterion-dir",
            &criterion,
            "--results",
            &results,
        ],
        dir.path(),
    );
    assert_eq!(ran.code, Some(2), "{}", ran.text());
    assert!(ran.stderr.contains("counted nothing"), "{}", ran.text());
    assert!(ran.stderr.contains("1 benchmarks"), "{}", ran.text());
    assert!(ran.stderr.contains("not countable"), "{}", ran.text());
    assert!(
        !dir.path().join("results/runs").exists(),
        "no run may be recorded"
    );
}
