//! `analyze-trends report` over runs of a crate that is not stackbench (the gate records
//! such runs): its run page shows that crate's benchmarks, not stackbench's family charts
//! announced as "not in this run" (tensor ops, vLLM, DeepSpeed…).

// report.html's page data (the JSON the page script draws from).
mod browser_support;

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[test]
fn a_foreign_crates_report_shows_its_benchmarks_and_no_stackbench_placeholders() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let r = results.to_str().unwrap();
    // Ids like `hist/b0000`: no stackbench family.
    let made = run(&[
        "simulate",
        "history",
        "--results",
        r,
        "--runs",
        "3",
        "--benchmarks",
        "4",
        "--seed",
        "1",
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let report = run(&["report", r]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let html = std::fs::read_to_string(results.join("reports/report.html")).unwrap();
    let data = browser_support::page_data(&html);
    let charts = data["latest_run"]["charts"].as_array().expect("a run page");
    let titles: Vec<&str> = charts
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    // (A before/after chart with nothing beyond 1 % still says so: that one is this run's.)
    for placeholder in [
        "Memory bandwidth",
        "GEMM",
        "Tensor ops",
        "Attention",
        "Components",
        "PyTorch",
        "vLLM",
        "DeepSpeed",
    ] {
        assert!(
            titles.iter().all(|t| !t.contains(placeholder)),
            "{placeholder}: {titles:?}"
        );
    }
    let own = charts
        .iter()
        .find(|c| c["id"] == "run:own")
        .expect("this run's benchmarks");
    for id in ["hist/b0000", "hist/b0003"] {
        assert!(
            own["y"]["categories"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c == id),
            "{id}: {own}"
        );
    }
}
