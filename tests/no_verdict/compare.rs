//! `analyze-trends compare`: samples that cannot be judged are a named failure (exit 1),
//! and a filter or inputs that leave nothing to compare are bad input (exit 2).

use super::support::{ANALYZE_TRENDS, Ran, run};
use std::path::Path;

/// Writes benchmark `id` (one path component per `/`) with `times` under baseline `name`.
pub(super) fn write_baseline(root: &Path, id: &str, name: &str, times: &[f64]) {
    let dir = root.join(id).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let (group, function) = id.split_once('/').unwrap_or((id, ""));
    let benchmark = serde_json::json!({
        "group_id": group, "function_id": function, "value_str": null, "throughput": null,
        "full_id": id, "directory_name": id, "title": id
    });
    std::fs::write(dir.join("benchmark.json"), benchmark.to_string()).unwrap();
    let iters: Vec<f64> = (1..=times.len()).map(|i| i as f64).collect();
    let times: Vec<f64> = times.iter().zip(&iters).map(|(t, n)| t * n).collect();
    let sample = serde_json::json!({"sampling_mode": "Linear", "iters": iters, "times": times});
    std::fs::write(dir.join("sample.json"), sample.to_string()).unwrap();
}

/// Two benchmarks measured fine in `base`; in `cand`, `work/zero`'s samples are all 0.
fn tree_with_a_zero_candidate(root: &Path) {
    let steady: Vec<f64> = (0..10).map(|i| 1000.0 + i as f64).collect();
    for name in ["base", "cand"] {
        write_baseline(root, "work/sum", name, &steady);
    }
    write_baseline(root, "work/zero", "base", &steady);
    write_baseline(root, "work/zero", "cand", &[0.0; 10]);
}

/// `analyze-trends compare base cand` of the Criterion tree `tree`, with `extra` arguments,
/// run in the folder that holds it.
pub fn compare_base_cand(tree: &Path, extra: &[&str]) -> Ran {
    let args = crate::cli_support::compare_args("base", "cand", tree, extra);
    run(ANALYZE_TRENDS, &args, tree.parent().unwrap())
}

#[test]
fn all_zero_samples_in_the_candidate_fail_the_comparison_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    tree_with_a_zero_candidate(&tree);
    let ran = compare_base_cand(&tree, &[]);
    assert_eq!(ran.code, Some(1), "{}", ran.text());
    let text = ran.text();
    assert!(text.contains("work/zero"), "{text}");
    assert!(text.contains("sample times are 0"), "{text}");
    assert!(
        text.contains("1 benchmark judged on 10+10 samples each (min)"),
        "the summary states the evidence: {text}"
    );
    assert!(text.contains("1 failed"), "{text}");

    let json = compare_base_cand(&tree, &["--format", "json"]);
    assert_eq!(json.code, Some(1), "{}", json.text());
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let evidence = &doc["evidence"];
    assert_eq!(evidence["judged"], 1, "{evidence}");
    assert_eq!(evidence["failed"], 1, "{evidence}");
    assert_eq!(evidence["unusable"][0]["id"], "work/zero", "{evidence}");
    assert_eq!(evidence["unusable"][0]["source"], "candidate", "{evidence}");
}

#[test]
fn a_filter_that_matches_nothing_is_bad_input_naming_the_filter() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    tree_with_a_zero_candidate(&tree);
    let ran = compare_base_cand(&tree, &["--filter", "^no/such/benchmark$"]);
    assert_eq!(ran.code, Some(2), "{}", ran.text());
    let text = ran.text();
    assert!(text.contains("^no/such/benchmark$"), "{text}");
    assert!(text.contains("`base`") && text.contains("`cand`"), "{text}");
    assert!(text.contains("nothing to judge"), "{text}");
}

#[test]
fn baselines_with_nothing_in_common_are_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    let steady: Vec<f64> = (0..10).map(|i| 1000.0 + i as f64).collect();
    write_baseline(&tree, "work/old", "base", &steady);
    write_baseline(&tree, "work/new", "cand", &steady);
    let ran = compare_base_cand(&tree, &[]);
    assert_eq!(ran.code, Some(2), "{}", ran.text());
    assert!(ran.text().contains("nothing to judge"), "{}", ran.text());
}
