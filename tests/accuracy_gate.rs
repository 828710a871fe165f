//! Accuracy beside speed through the real `analyze-trends` binary: a benchmark's accuracy
//! set travels from the target report's notes into the recorded run, and `compare` with an
//! `[accuracy]` rule fails a head that lost accuracy while its speed stayed the same, says
//! when a rule had nothing to judge, and only shows accuracy without a rule.

#[path = "fs_support/mod.rs"]
mod fs_support;
use fs_support::copy_tree;

use serde_json::{Value, json};
use stackbench::workload::DType;
use stackbench::workload::accuracy::{AccuracyMeter, epsilon};
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");
const JUDGED: &str = "gemm/cpu/f32/64x64x64";
const PLAIN: &str = "gemm/cpu/axpy/1024";

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("CRITERION_HOME")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("STACKBENCH_CONFIG")
        .output()
        .expect("the binary runs")
}

/// An f32 accuracy set whose worst entry is `eps_errors` epsilons off at scale 1.
fn accuracy(eps_errors: f64) -> Value {
    let mut meter = AccuracyMeter::new(DType::F32);
    meter
        .add(1.0 + eps_errors * epsilon(DType::F32), 1.0, 1.0, 1e-3)
        .unwrap();
    meter.add(2.0, 2.0, 2.0, 1e-3).unwrap();
    serde_json::to_value(meter.finish("all of C (64x64)", false)).unwrap()
}

/// The harness's target report: both benchmarks measured, `JUDGED` with `notes`.
fn write_report(criterion: &Path, notes: Value) {
    let entry = |function: &str, value: &str, notes: Value| {
        json!({"group": "gemm/cpu", "function": function, "value": value,
               "outcome": "measured", "notes": notes})
    };
    let report = json!({
        "schema": "stackbench.target.v1",
        "target": "gemm",
        "suite": "quick",
        "started_unix_s": 0,
        "benchmarks": {
            JUDGED: entry("f32", "64x64x64", notes),
            PLAIN: entry("axpy", "1024", json!({})),
        }
    });
    let path = criterion.join("stackbench/targets/gemm.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
}

fn record(criterion: &Path, results: &Path, cwd: &Path) {
    let out = run(
        &[
            "record",
            "--criterion-dir",
            criterion.to_str().unwrap(),
            "--baseline",
            "new",
            "--results",
            results.to_str().unwrap(),
        ],
        cwd,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Run ids sort by time: keep the two recordings apart.
    std::thread::sleep(std::time::Duration::from_millis(5));
}

/// Two recordings of the same Criterion samples: speed identical, accuracy as given.
fn two_runs(base: Value, head: Value) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let criterion = tmp.path().join("criterion");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.8"),
        &criterion,
    );
    let results = tmp.path().join("results");
    write_report(&criterion, base);
    record(&criterion, &results, tmp.path());
    write_report(&criterion, head);
    record(&criterion, &results, tmp.path());
    (tmp, results)
}

fn compare(tmp: &Path, results: &Path, config: Option<&str>) -> (Option<i32>, Value, String) {
    let mut args = vec![
        "compare",
        "previous",
        "latest",
        "--results",
        results.to_str().unwrap(),
        "--format",
        "json",
        // Both sides hold the very same samples, so the speed did not change; the fixture's
        // ten noisy samples give a wide interval, which a wide threshold keeps decided
        // (unchanged) so that exit 0 and 3 below speak of accuracy alone.
        "--threshold",
        "200",
    ];
    let path = tmp.join("stackbench.toml");
    if let Some(text) = config {
        std::fs::write(&path, text).unwrap();
        args.extend(["--config", path.to_str().unwrap()]);
    }
    let out = run(&args, tmp);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status.code(),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stdout + &stderr,
    )
}

fn verdict<'a>(json: &'a Value, id: &str) -> &'a Value {
    json["accuracy"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no accuracy verdict for {id}: {json}"))
}

#[test]
fn the_recorded_run_carries_the_accuracy_set() {
    let (_tmp, results) = two_runs(json!({"accuracy": accuracy(0.5)}), json!({}));
    let runs: Vec<_> = std::fs::read_dir(results.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let with: Vec<Value> = runs
        .iter()
        .map(|p| serde_json::from_slice::<Value>(&std::fs::read(p).unwrap()).unwrap())
        .filter_map(|run| {
            run["benchmarks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["id"] == JUDGED)
                .and_then(|b| b.get("accuracy").cloned())
        })
        .collect();
    assert_eq!(
        with,
        vec![accuracy(0.5)],
        "exactly the first run carries it"
    );
}

#[test]
fn a_head_that_lost_two_bits_at_the_same_speed_is_a_regression_naming_the_accuracy() {
    let (tmp, results) = two_runs(
        json!({"accuracy": accuracy(0.5)}),
        json!({"accuracy": accuracy(2.0)}),
    );
    let rule = format!("[accuracy]\n\"{JUDGED}\" = {{ max_bits_lost = 1.0 }}\n");
    let (code, json, out) = compare(tmp.path(), &results, Some(&rule));
    assert_eq!(code, Some(1), "{out}");
    // Speed stayed the same: no row is degraded.
    assert_eq!(json["summary"]["total_degraded"], 0, "{out}");
    assert!(
        json["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "unchanged"),
        "{out}"
    );
    assert_eq!(json["summary"]["total_accuracy_lost"], 1, "{out}");
    let v = verdict(&json, JUDGED);
    assert_eq!(v["status"], "lost");
    assert!((v["bits_lost"].as_f64().unwrap() - 2.0).abs() < 1e-9, "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains(JUDGED)
            && message.contains("LOST ACCURACY")
            && message.contains("2.0 bits lost"),
        "{message}"
    );
    let notes = json["summary"]["notes"].to_string();
    assert!(
        notes.contains("1 benchmark(s) judged by [accuracy] rules (1 lost accuracy)"),
        "{notes}"
    );
    // The same change under a looser rule passes, and says it was judged.
    let loose = format!("[accuracy]\n\"{JUDGED}\" = {{ max_bits_lost = 3.0 }}\n");
    let (code, json, out) = compare(tmp.path(), &results, Some(&loose));
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(verdict(&json, JUDGED)["status"], "within");
    // The table names it too.
    let table = run(
        &[
            "compare",
            "previous",
            "latest",
            "--results",
            results.to_str().unwrap(),
            "--config",
            tmp.path().join("stackbench.toml").to_str().unwrap(),
        ],
        tmp.path(),
    );
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(JUDGED) && text.contains("2.0 bits lost"),
        "{text}"
    );
}

#[test]
fn a_rule_with_no_accuracy_on_a_side_is_unsure_and_no_rule_only_shows_it() {
    let (tmp, results) = two_runs(json!({}), json!({"accuracy": accuracy(2.0)}));
    let rule = "[accuracy]\n\"gemm/cpu/*/*\" = { max_bits_lost = 1.0 }\n";
    let (code, json, out) = compare(tmp.path(), &results, Some(rule));
    assert_eq!(
        code,
        Some(3),
        "unjudged accuracy is not 'accuracy fine': {out}"
    );
    let v = verdict(&json, JUDGED);
    assert_eq!(v["status"], "unjudged");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("no accuracy recorded in the baseline"),
        "{v}"
    );
    assert_eq!(verdict(&json, PLAIN)["status"], "unjudged");
    // Without a rule: shown beside the speed, judged by nothing, exit 0.
    let (code, json, out) = compare(tmp.path(), &results, Some(""));
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(verdict(&json, JUDGED)["status"], "not_gated");
    assert!(
        json["accuracy"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["id"] != PLAIN)
    );
}

/// A rule whose pattern matches none of the compared benchmarks judged nothing: the verdict
/// names it (a typo, or ids this machine does not run) instead of staying silent, and it
/// changes no exit code, since a shared config may hold rules for other machines.
#[test]
fn a_rule_that_matches_no_compared_benchmark_is_named_as_judging_nothing() {
    let (tmp, results) = two_runs(
        json!({"accuracy": accuracy(1.0)}),
        json!({"accuracy": accuracy(1.0)}),
    );
    let rules = "[accuracy]\n\"gemm/cpu/f32/*\" = { max_bits_lost = 1.0 }\n\"gemm/cuda/**\" = { max_bits_lost = 1.0 }\n";
    let (code, json, out) = compare(tmp.path(), &results, Some(rules));
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(verdict(&json, JUDGED)["status"], "within");
    let notes: Vec<&str> = json["summary"]["notes"]
        .as_array()
        .expect("summary notes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let unmatched: Vec<&&str> = notes
        .iter()
        .filter(|n| n.contains("matched no benchmark"))
        .collect();
    assert_eq!(
        unmatched,
        [
            &"accuracy: [accuracy] rule(s) \"gemm/cuda/**\" matched no benchmark compared here and judged nothing"
        ],
        "{notes:#?}"
    );
}
