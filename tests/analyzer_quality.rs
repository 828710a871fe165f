//! The gate's quality bar, asserted at fixed seeds through the real binary: simulated
//! Criterion trees with known injected changes (distributions in `analysis::simulate` and
//! BENCHMARKS.md, "The regression gate"), judged by `analyze-trends compare`.
//!
//! - 100 samples, 3 % noise: ≥ 97 % of slowdowns of 7.5 % .. 15 % flagged, ≤ 0.5 % of
//!   benchmarks with a true change within ±2 % flagged;
//! - 20 samples, 10 % noise, 10 % outliers: ≤ 3 % false alarms, ≥ 60 % detected.

use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

fn simulate(root: &Path, preset: &str, seed: u64, extra: &[&str]) {
    let seed = seed.to_string();
    let mut args = vec![
        "simulate",
        "tree",
        "--out",
        root.to_str().unwrap(),
        "--preset",
        preset,
        "--seed",
        &seed,
    ];
    args.extend_from_slice(extra);
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn compare(root: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec![
        "compare",
        "base",
        "new",
        "--criterion-dir",
        root.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = Command::new(BIN).args(&args).output().unwrap();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), json)
}

/// (false-alarm rate, detection rate) from the comparison and the simulator's truths.
fn rates(root: &Path, json: &Value) -> (f64, f64) {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(root.join("simulation.json")).unwrap()).unwrap();
    let status: HashMap<&str, &str> = json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    let rate = |population: &str| {
        let members: Vec<&Value> = manifest["truths"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["population"] == population)
            .collect();
        assert_eq!(members.len(), 1000);
        let flagged = members
            .iter()
            .filter(|t| status[t["id"].as_str().unwrap()] == "degraded")
            .count();
        flagged as f64 / members.len() as f64
    };
    (rate("null"), rate("slow"))
}

#[test]
fn quality_bar_100_samples_3_percent_noise() {
    for seed in [11, 12] {
        let tmp = tempfile::tempdir().unwrap();
        simulate(tmp.path(), "clean", seed, &[]);
        let (code, json) = compare(tmp.path(), &[]);
        let (false_alarms, detected) = rates(tmp.path(), &json);
        assert!(
            false_alarms <= 0.005,
            "seed {seed}: false alarms {false_alarms}"
        );
        assert!(detected >= 0.97, "seed {seed}: detected {detected}");
        assert_eq!(code, 1, "slowdowns were injected: the gate fails");
        assert!(json["summary"]["systemic_shift"].is_null());
    }
}

#[test]
fn quality_bar_20_samples_10_percent_noise_and_outliers() {
    for seed in [21, 22] {
        let tmp = tempfile::tempdir().unwrap();
        simulate(tmp.path(), "noisy", seed, &[]);
        let (_, json) = compare(tmp.path(), &[]);
        let (false_alarms, detected) = rates(tmp.path(), &json);
        assert!(
            false_alarms <= 0.03,
            "seed {seed}: false alarms {false_alarms}"
        );
        assert!(detected >= 0.60, "seed {seed}: detected {detected}");
    }
}

#[test]
fn a_whole_candidate_moving_together_is_one_systemic_finding() {
    let tmp = tempfile::tempdir().unwrap();
    simulate(
        tmp.path(),
        "clean",
        31,
        &["--per-population", "200", "--common-shift", "0.2"],
    );
    let (code, json) = compare(tmp.path(), &["--filter", "^sim/null/"]);
    let shift = &json["summary"]["systemic_shift"];
    let median = shift["median_change_percent"].as_f64().unwrap();
    assert!((18.0..22.0).contains(&median), "{shift}");
    assert_eq!(code, 1, "a systemic slowdown still fails the gate, once");
    assert_eq!(json["summary"]["overall_status"], "critical");
    let degraded = json["summary"]["total_degraded"].as_u64().unwrap();
    assert!(
        degraded <= 2,
        "not every benchmark blamed one by one: {degraded}"
    );
    let row = &json["comparisons"][0];
    assert!(
        row["relative_change_percent"].as_f64().unwrap().abs() < 6.0,
        "{row}"
    );
    // Without the common shift nothing is systemic and nothing regressed.
    let tmp = tempfile::tempdir().unwrap();
    simulate(tmp.path(), "clean", 31, &["--per-population", "200"]);
    let (code, json) = compare(tmp.path(), &["--filter", "^sim/null/"]);
    assert_eq!(code, 0, "{}", json["summary"]);
    assert!(json["summary"]["systemic_shift"].is_null());
}
