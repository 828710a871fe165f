//! `analyze-trends compare`: a benchmark the samples cannot decide (`inconclusive`) makes
//! the verdict unsure, exit 3, never a pass; the output names it, says why and how to fix
//! it, the history keeps the verdict as `unsure`, and a regression still outranks it.

use super::compare::{compare_base_cand, write_baseline};
use super::support::{ANALYZE_TRENDS, run};
use std::path::Path;

/// `work/steady` the same on both sides; `work/flaky` steady in `base` and spread from
/// 0.4× to 1.6× in `cand`, so its interval spans far beyond ±10 % around no change.
fn tree_with_a_flaky_candidate(root: &Path) {
    let steady: Vec<f64> = (0..10).map(|i| 1000.0 + i as f64).collect();
    let spread = [
        400.0, 1600.0, 500.0, 1500.0, 600.0, 1400.0, 700.0, 1300.0, 800.0, 1200.0,
    ];
    for name in ["base", "cand"] {
        write_baseline(root, "work/steady", name, &steady);
    }
    write_baseline(root, "work/flaky", "base", &steady);
    write_baseline(root, "work/flaky", "cand", &spread);
}

#[test]
fn an_inconclusive_benchmark_makes_compare_unsure_exit_3_naming_it_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    tree_with_a_flaky_candidate(&tree);
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let args = |format: &'static str| {
        vec![
            "compare".to_string(),
            "base".into(),
            "cand".into(),
            "--criterion-dir".into(),
            tree.to_str().unwrap().into(),
            "--results".into(),
            results.to_str().unwrap().into(),
            "--format".into(),
            format.into(),
        ]
    };
    for format in ["table", "markdown", "json"] {
        let argv = args(format);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let ran = run(ANALYZE_TRENDS, &argv, tmp.path());
        assert_eq!(ran.code, Some(3), "{format}: {}", ran.text());
        if format == "json" {
            let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
            let unsure: Vec<&str> = doc["comparisons"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["status"] == "inconclusive")
                .map(|r| r["id"].as_str().unwrap())
                .collect();
            assert_eq!(unsure, ["work/flaky"], "{doc:#}");
            assert!(doc.get("accepted_unsure").is_none(), "{doc:#}");
            continue;
        }
        let text = &ran.stdout;
        assert!(text.contains("UNSURE"), "{format}: {text}");
        assert!(
            text.contains("Unsure (exit 3, not a pass)"),
            "{format}: {text}"
        );
        assert!(
            text.contains("work/flaky") && text.contains("95 % CI"),
            "{text}"
        );
        assert!(
            text.contains("--cpus") && text.contains("--measure instructions"),
            "{format}: the fix is named: {text}"
        );
        let listed = text
            .lines()
            .filter(|l| l.contains("unsure work/") || l.contains("- 🟡 `work/"))
            .collect::<Vec<_>>();
        assert_eq!(listed.len(), 1, "only work/flaky is unsure: {listed:?}");
    }
    let ran = run(
        ANALYZE_TRENDS,
        &[
            "comparisons",
            "--results",
            results.to_str().unwrap(),
            "--format",
            "json",
        ],
        tmp.path(),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.text());
    let kept: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let verdicts: Vec<&str> = kept
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["unsure"; 3], "{kept:#}");
}

#[test]
fn a_regression_outranks_an_unsure_benchmark() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    tree_with_a_flaky_candidate(&tree);
    let slow: Vec<f64> = (0..10).map(|i| 3000.0 + i as f64).collect();
    let steady: Vec<f64> = (0..10).map(|i| 1000.0 + i as f64).collect();
    write_baseline(&tree, "work/slow", "base", &steady);
    write_baseline(&tree, "work/slow", "cand", &slow);
    let ran = compare_base_cand(&tree, &[]);
    assert_eq!(ran.code, Some(1), "{}", ran.text());
    assert!(ran.stdout.contains("work/flaky"), "{}", ran.stdout);
}
