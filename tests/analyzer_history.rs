//! The history report through the real binary: a simulated history with one sustained step
//! (found at the right run) and one wild run (not a regression), every report file written,
//! and `--fail-on-regression` as a gate.

// report.html's page data (the JSON the page script draws from).
mod browser_support;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn history(results: &Path, step_at: usize) {
    let step = step_at.to_string();
    let out = run(&[
        "simulate",
        "history",
        "--results",
        results.to_str().unwrap(),
        "--runs",
        "30",
        "--benchmarks",
        "40",
        "--stepped",
        "5",
        "--step-at",
        &step,
        "--step-percent",
        "10",
        "--samples",
        "30",
        "--seed",
        "5",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn finds_the_step_at_the_right_run_and_ignores_one_wild_run() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    history(&results, 24);
    let out = run(&[results.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a report without --fail-on-regression is not a gate"
    );
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(terminal.contains("5 regressed"), "{terminal}");
    for file in ["report.md", "report.html", "report.json", "summary.csv"] {
        assert!(results.join("reports").join(file).is_file(), "{file}");
    }
    let report: Value =
        serde_json::from_slice(&std::fs::read(results.join("reports/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["overall_status"], "critical");
    let group = &report["groups"][0];
    assert_eq!(group["runs"].as_array().unwrap().len(), 30);
    for b in group["benchmarks"].as_array().unwrap() {
        let id = b["id"].as_str().unwrap();
        let index: usize = id.trim_start_matches("hist/b").parse().unwrap();
        let cps = b["change_points"].as_array().unwrap();
        if index < 5 {
            assert_eq!(b["status"], "regressed", "{id}");
            assert_eq!(cps.len(), 1, "{id}: {cps:?}");
            assert_eq!(cps[0]["run_index"], 24, "{id}: the step is at run 24");
            let change = cps[0]["change_percent"].as_f64().unwrap();
            assert!((7.0..13.0).contains(&change), "{id}: {change}");
        } else {
            assert!(cps.is_empty(), "{id}: no step, yet {cps:?}");
            assert_eq!(b["status"], "stable", "{id}");
        }
    }
    // Regressions come first in every human-readable format.
    let md = std::fs::read_to_string(results.join("reports/report.md")).unwrap();
    assert!(md.find("### Regressions").unwrap() < md.find("| stable |").unwrap());
    let html = std::fs::read_to_string(results.join("reports/report.html")).unwrap();
    assert!(!html.contains("<script src="), "self-contained");
    // Change points are markers on the history charts (`step +x % (before → after)`).
    let data = browser_support::page_data(&html);
    let histories = data["histories"].as_array().unwrap();
    assert!(
        histories
            .iter()
            .any(|h| h["chart"]["marks"].as_array().is_some_and(|m| m
                .iter()
                .any(|m| m["label"].as_str().unwrap().starts_with("step +")))),
        "no step markers"
    );
    let position = |id: &str| histories.iter().position(|h| h["bench_id"] == id).unwrap();
    assert!(position("hist/b0000") < position("hist/b0010"));
    let csv = std::fs::read_to_string(results.join("reports/summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 41);

    let gate = run(&[results.to_str().unwrap(), "--fail-on-regression"]);
    assert_eq!(gate.status.code(), Some(1));
    let also = run(&["report", results.to_str().unwrap(), "--fail-on-regression"]);
    assert_eq!(also.status.code(), Some(1));
}

#[test]
fn an_old_step_is_history_not_a_current_regression() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    history(&results, 8);
    let gate = run(&[results.to_str().unwrap(), "--fail-on-regression"]);
    assert_eq!(
        gate.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&gate.stdout)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(results.join("reports/report.json")).unwrap())
            .unwrap();
    let b0 = report["groups"][0]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "hist/b0000")
        .unwrap()
        .clone();
    assert_eq!(
        b0["change_points"][0]["run_index"], 8,
        "still marked in the history"
    );
}

#[test]
fn a_missing_or_empty_results_directory_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&[tmp.path().join("nothing").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no runs"));
}

/// The counts of each status in a `compare --format json` over `results`.
fn degraded_and_improved(results: &Path) -> (u64, u64, Value) {
    let out = run(&[
        "compare",
        "previous",
        "latest",
        "--results",
        results.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &json["summary"];
    (
        s["total_degraded"].as_u64().unwrap(),
        s["total_improved"].as_u64().unwrap(),
        json,
    )
}

#[test]
fn compare_uses_the_history_noise_floor_against_run_to_run_drift() {
    // Runs with 8 % run-to-run drift and 1 % within-run noise: two runs alone look
    // significantly different almost everywhere; the history shows that is normal here.
    let tmp = tempfile::tempdir().unwrap();
    let all = tmp.path().join("all");
    let out = run(&[
        "simulate",
        "history",
        "--results",
        all.to_str().unwrap(),
        "--runs",
        "20",
        "--benchmarks",
        "100",
        "--stepped",
        "0",
        "--step-at",
        "10",
        "--drift",
        "0.08",
        "--noise",
        "0.01",
        "--seed",
        "4",
    ]);
    assert!(out.status.success());
    let two = tmp.path().join("two");
    std::fs::create_dir_all(two.join("runs")).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(all.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in &files[files.len() - 2..] {
        std::fs::copy(f, two.join("runs").join(f.file_name().unwrap())).unwrap();
    }
    let (without_degraded, without_improved, _) = degraded_and_improved(&two);
    let (with_degraded, with_improved, json) = degraded_and_improved(&all);
    assert!(
        without_degraded + without_improved >= 40,
        "within-run only: {without_degraded} + {without_improved}"
    );
    assert!(
        with_degraded + with_improved <= 15,
        "with history: {with_degraded} + {with_improved}"
    );
    assert!(
        json["summary"]["notes"][0]
            .as_str()
            .unwrap()
            .contains("18 earlier run(s)")
    );
    let row = json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["note"].is_string())
        .unwrap();
    assert!(
        row["note"].as_str().unwrap().contains("run-to-run noise"),
        "{row}"
    );
    assert!(row["noise_floor_percent"].as_f64().unwrap() > 4.0);
}
