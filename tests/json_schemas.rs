//! Every JSON document the binaries write, produced by the real `stackbench` and
//! `analyze-trends` on the recorded fixtures, validated against its schema in schemas/;
//! and for each schema a broken copy of that same document (a required field removed or
//! a wrong type) that must fail it, so a schema that accepts anything is caught.
//!
//! (The run, validation and comparison schemas are exercised in validate_cli.rs; the
//! bench targets' `targets/<target>.json` in run_benchmarks_script.rs, where a real bench
//! run writes one; the gate's comparison.json in gate_cli.rs.)

mod schema_support;

use schema_support::{assert_valid, violations};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `bin` in `cwd` with no config from the environment; stdout on success.
fn run_ok(bin: &str, args: &[&str], cwd: &Path) -> Vec<u8> {
    let out = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_SUITE")
        .output()
        .expect("running a stackbench binary");
    assert!(
        out.status.success(),
        "{bin} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn analyzer(args: &[&str], cwd: &Path) -> Vec<u8> {
    run_ok(env!("CARGO_BIN_EXE_analyze-trends"), args, cwd)
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

/// A named way to break a valid document.
type Breaker<'a> = (&'a str, &'a dyn Fn(&mut Value));

/// `doc` satisfies the schema, and each `break_it` applied to a copy makes it fail.
fn assert_schema(name: &str, doc: &Value, breakers: &[Breaker]) {
    assert_valid(name, doc);
    for (what, break_it) in breakers {
        let mut broken = doc.clone();
        break_it(&mut broken);
        assert_ne!(&broken, doc, "{name}: `{what}` changed nothing");
        assert!(
            !violations(name, &broken).is_empty(),
            "{name} accepted a document with {what}"
        );
    }
}

/// Removes `key` from the object at `pointer`.
fn remove(doc: &mut Value, pointer: &str, key: &str) {
    doc.pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .and_then(|o| o.remove(key))
        .unwrap_or_else(|| panic!("no {pointer}/{key}"));
}

/// Replaces the value at `pointer` (which must exist).
fn set(doc: &mut Value, pointer: &str, value: Value) {
    *doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer}")) = value;
}

/// Adds `key` to the object at `pointer`.
fn insert(doc: &mut Value, pointer: &str, key: &str, value: Value) {
    doc.pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {pointer}"))
        .insert(key.into(), value);
}

const F32_ID: &str = "gemm/cpu/f32/64x64x64";

/// A results directory with three recordings of the Criterion 0.8 fixture, the hardware
/// fixture's runs imported beside them, and one stored `compare` verdict.
fn results_with_history(dir: &Path) -> PathBuf {
    let results = dir.join("results");
    let r = results.to_str().unwrap();
    let fixture = root().join("tests/fixtures/criterion-0.8");
    for label in ["one", "two", "three"] {
        let criterion = fixture.to_str().unwrap();
        analyzer(
            &[
                "record",
                "--criterion-dir",
                criterion,
                "--results",
                r,
                "--label",
                label,
            ],
            dir,
        );
    }
    let imported = root().join("tests/fixtures/hardware/runs");
    let files: Vec<PathBuf> = std::fs::read_dir(&imported)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert!(!files.is_empty(), "no runs in {}", imported.display());
    let mut args = vec!["import", "--results", r];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    analyzer(&args, dir);
    // Only to keep a verdict in the store: clean (0) or unsure (3, some fixture benchmarks
    // are inconclusive) both keep one.
    let compare = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .args(["compare", "previous", "latest", "--results", r])
        .args(["--format", "json"])
        .current_dir(dir)
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_SUITE")
        .output()
        .expect("running analyze-trends");
    assert!(
        matches!(compare.status.code(), Some(0 | 3)),
        "compare: {compare:?}"
    );
    results
}

#[test]
fn the_system_probe_from_info_and_beside_criterion_output_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let probe = json(&run_ok(
        env!("CARGO_BIN_EXE_stackbench"),
        &["info", "--json"],
        dir.path(),
    ));
    let breakers: [Breaker; 4] = [
        ("no fingerprint", &|d| remove(d, "", "fingerprint")),
        ("a string core count", &|d| {
            set(d, "/cpu/logical_cpus", "many".into())
        }),
        ("an unknown backend", &|d| {
            insert(
                d,
                "/backends",
                "tpu",
                serde_json::json!({"status": "unavailable", "reason": "x"}),
            )
        }),
        ("an available backend without devices", &|d| {
            set(
                d,
                "/backends/cpu",
                serde_json::json!({"status": "available"}),
            )
        }),
    ];
    assert_schema("system.schema.json", &probe, &breakers);
    // The probe a real bench run wrote beside Criterion's output (recorded fixture).
    let recorded = root().join("tests/fixtures/criterion-0.8/stackbench/system.json");
    let recorded = json(&std::fs::read(recorded).unwrap());
    assert_schema("system.schema.json", &recorded, &breakers[..2]);
}

#[test]
fn the_history_report_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let results = results_with_history(dir.path());
    analyzer(&["report", results.to_str().unwrap()], dir.path());
    let report = json(&std::fs::read(results.join("reports/report.json")).unwrap());
    let benchmarks = report["groups"][0]["benchmarks"].as_array().unwrap();
    assert!(benchmarks.iter().any(|b| b["id"] == F32_ID), "{report:#}");
    assert_schema(
        "history-report.schema.json",
        &report,
        &[
            ("no groups", &|d| remove(d, "", "groups")),
            ("an unknown trend status", &|d| {
                set(d, "/groups/0/benchmarks/0/status", "worse".into())
            }),
            ("a run without its id", &|d| {
                remove(d, "/groups/0/runs/0", "run_id")
            }),
        ],
    );
}

#[test]
fn runs_history_comparisons_and_export_json_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let results = results_with_history(dir.path());
    let r = results.to_str().unwrap();
    let list = |command: &str| {
        json(&analyzer(
            &[command, "--results", r, "--format", "json"],
            dir.path(),
        ))
    };

    let runs = list("runs");
    assert!(runs.as_array().unwrap().len() >= 4, "{runs:#}");
    assert_schema(
        "runs.schema.json",
        &runs,
        &[
            ("no run id", &|d| remove(d, "/0", "run_id")),
            ("a negative benchmark count", &|d| {
                set(d, "/0/benchmarks", (-1).into())
            }),
        ],
    );

    let comparisons = list("comparisons");
    assert_eq!(comparisons.as_array().unwrap().len(), 1, "{comparisons:#}");
    assert_schema(
        "comparisons.schema.json",
        &comparisons,
        &[
            ("no verdict", &|d| remove(d, "/0", "verdict")),
            ("an unknown verdict", &|d| {
                set(d, "/0/verdict", "fine".into())
            }),
        ],
    );

    let history = json(&analyzer(
        &["history", F32_ID, "--results", r, "--format", "json"],
        dir.path(),
    ));
    assert_eq!(history["groups"][0]["runs"].as_array().unwrap().len(), 3);
    // The same evidence as compare's: each run judged with its usable samples.
    assert_eq!(history["evidence"]["judged"], 3, "{history:#}");
    assert_schema(
        "history.schema.json",
        &history,
        &[
            ("no trend", &|d| remove(d, "/groups/0", "trend")),
            ("no evidence", &|d| remove(d, "", "evidence")),
            ("evidence of nothing judged", &|d| {
                set(d, "/evidence/judged", 0.into())
            }),
            ("a string median", &|d| {
                set(d, "/groups/0/runs/0/median_ns", "fast".into())
            }),
        ],
    );

    let export = json(&analyzer(
        &["export", "--results", r, "--format", "json"],
        dir.path(),
    ));
    assert!(
        export
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["id"] == F32_ID),
        "{export:#}"
    );
    assert_schema(
        "export.schema.json",
        &export,
        &[
            ("no median", &|d| remove(d, "/0", "median_ns")),
            ("a null label", &|d| set(d, "/0/label", Value::Null)),
        ],
    );
}

#[test]
fn the_cross_hardware_report_matches_its_schema() {
    let fixture = root().join("tests/fixtures/hardware");
    let fixture_str = fixture.to_str().unwrap();
    let prices = fixture.join("stackbench.toml");
    let report = json(&analyzer(
        &[
            "hardware",
            "--results",
            fixture_str,
            "--prices",
            prices.to_str().unwrap(),
            "--format",
            "json",
        ],
        &fixture,
    ));
    assert!(
        report["devices"].as_array().unwrap().len() >= 2,
        "{report:#}"
    );
    assert_schema(
        "hardware.schema.json",
        &report,
        &[
            ("no recommendations", &|d| remove(d, "", "recommendations")),
            ("a string figure", &|d| {
                set(d, "/rows/0/cells/0/figure", "big".into())
            }),
            ("a pick with no device", &|d| {
                set(
                    d,
                    "/recommendations/0/fastest",
                    serde_json::json!({"status": "best", "score": 1.0}),
                )
            }),
        ],
    );
}

#[test]
fn a_bench_target_record_with_each_outcome_matches_its_schema_and_broken_ones_do_not() {
    // The real bench run that writes these is in run_benchmarks_script.rs; here the schema
    // itself must tell the three outcomes apart.
    let doc = serde_json::json!({
        "schema": "stackbench.target.v1",
        "target": "gemm",
        "suite": "quick",
        "started_unix_s": 1_763_900_000u64,
        "benchmarks": {
            "gemm/cpu/f32/64": {"group": "gemm", "function": "cpu/f32", "value": "64", "outcome": "measured", "notes": {"peak_rss_bytes": 1}},
            "gemm/cpu/f16/64": {"group": "gemm", "function": "cpu/f16", "value": "64", "outcome": "skipped", "reason": "no f16 here"},
            "gemm/cpu/f64/64": {"group": "gemm", "function": "cpu/f64", "value": "64", "outcome": "failed", "error": "boom"}
        }
    });
    assert_schema(
        "target.schema.json",
        &doc,
        &[
            ("a skip with no reason", &|d| {
                remove(d, "/benchmarks/gemm~1cpu~1f16~164", "reason")
            }),
            ("a failure with no error", &|d| {
                remove(d, "/benchmarks/gemm~1cpu~1f64~164", "error")
            }),
            ("an unknown outcome", &|d| {
                set(d, "/benchmarks/gemm~1cpu~1f32~164/outcome", "maybe".into())
            }),
            ("no suite", &|d| remove(d, "", "suite")),
        ],
    );
}
