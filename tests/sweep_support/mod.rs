//! Recorded model-sweep runs for the tests of `recommend`, `sweep-report`, the served
//! sweep page and the dashboard's models page: a run of one machine (fingerprint and GPU
//! name) holding measured `models/` cells with the notes a sweep's worker reports, built on
//! the Criterion fixture so every cell has real samples, without running a sweep; and a
//! results directory holding the sweeps of two priced machines.

#![allow(dead_code)]

use serde_json::json;
use stackbench::results::{RunRecord, RunStore, run_from_criterion};
use stackbench::sidecar::{BenchmarkEntry, BenchmarkOutcome, TARGET_REPORT_SCHEMA, TargetReport};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const PRICES: &str =
    "[prices]\nbasis = \"hour\"\n[prices.devices]\n\"GPU-A\" = 4.0\n\"GPU-B\" = 1.0\n";

/// One measured cell: (id, notes).
pub type Cell<'a> = (&'a str, &'a [(&'a str, f64)]);

/// A sweep run of machine `fingerprint` whose GPU is `gpu`, created at `ms`.
pub fn sweep_run(fingerprint: &str, gpu: &str, ms: u64, cells: &[Cell]) -> RunRecord {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.8");
    let mut run = run_from_criterion(&fixture, "new", None).expect("the criterion fixture reads");
    let template = run.benchmarks[0].clone();
    run.run_id = format!("run-{fingerprint}-{ms}");
    run.created_unix_ms = ms;
    run.fingerprint = Some(fingerprint.into());
    run.system = Some(json!({
        "fingerprint": fingerprint,
        "cpu": {"model": "Some CPU"},
        "backends": {"cuda": {"status": "available", "devices": [{"name": gpu}]}},
    }));
    let mut benchmarks = BTreeMap::new();
    run.benchmarks = cells
        .iter()
        .map(|(id, notes)| {
            let parts: Vec<&str> = id.splitn(4, '/').collect();
            let outcome = BenchmarkOutcome::Measured {
                notes: notes
                    .iter()
                    .map(|(k, v)| (k.to_string(), json!(v)))
                    .collect(),
            };
            let entry = BenchmarkEntry {
                group: format!("{}/{}", parts[0], parts[1]),
                function: parts[2].into(),
                value: parts[3].into(),
                outcome,
            };
            benchmarks.insert(id.to_string(), entry);
            let mut bench = template.clone();
            bench.id = id.to_string();
            bench.group = format!("{}/{}", parts[0], parts[1]);
            bench.function = Some(parts[2].into());
            bench.value = Some(parts[3].into());
            bench
        })
        .collect();
    let report = TargetReport {
        schema: TARGET_REPORT_SCHEMA.into(),
        target: "models".into(),
        suite: "sweep".into(),
        started_unix_s: 0,
        benchmarks,
        gpu_clocks: None,
        measure: None,
        counted: Default::default(),
        profiles: Default::default(),
    };
    run.targets = vec![serde_json::to_value(report).expect("a target report serialises")];
    run
}

/// Adds a cell `run`'s sweep skipped with `reason` (what a predicted out-of-memory or an
/// unsupported dtype records): in the compatibility map, never a candidate.
pub fn skip_cell(run: &mut RunRecord, id: &str, reason: &str) {
    let parts: Vec<&str> = id.splitn(4, '/').collect();
    let entry = BenchmarkEntry {
        group: format!("{}/{}", parts[0], parts[1]),
        function: parts[2].into(),
        value: parts[3].into(),
        outcome: BenchmarkOutcome::Skipped {
            reason: reason.into(),
        },
    };
    let mut report: TargetReport =
        serde_json::from_value(run.targets[0].clone()).expect("the sweep's target report");
    report.benchmarks.insert(id.to_string(), entry);
    run.targets[0] = serde_json::to_value(report).expect("a target report serialises");
}

pub const GPT2: &str = "models/torch/ci-gpt2-fp32-decode/b1_s128";
pub const VIT: &str = "models/torch/ci-vit-fp32-forward/b1";

/// A results directory with the sweeps of machines A and B, and the config with prices.
pub fn results(dir: &Path) -> (PathBuf, PathBuf) {
    let results = dir.join("results");
    let store = RunStore::new(&results);
    let runs = [
        // Older sweep of A, much faster: it must not count (the newest run of A does).
        sweep_run(
            "fp-a",
            "GPU-A",
            1_000,
            &[(GPT2, &[("tokens_per_s", 9e9), ("ttft_p99_ns", 1e6)])],
        ),
        sweep_run(
            "fp-a",
            "GPU-A",
            2_000,
            &[
                (
                    GPT2,
                    &[
                        ("tokens_per_s", 2000.0),
                        ("ttft_p99_ns", 50e6),
                        ("energy_j_per_token", 0.5),
                    ],
                ),
                (VIT, &[("samples_per_s", 300.0), ("latency_p99_ns", 4e6)]),
            ],
        ),
        {
            // B's ci-vit cell failed after its worker reported figures: never a candidate.
            let mut run = sweep_run(
                "fp-b",
                "GPU-B",
                1_500,
                &[
                    (GPT2, &[("tokens_per_s", 900.0), ("ttft_p99_ns", 120e6)]),
                    (VIT, &[("samples_per_s", 5000.0)]),
                ],
            );
            run.failed.push(stackbench::results::FailedBenchmark {
                id: VIT.into(),
                error: "result mismatch".into(),
            });
            run
        },
    ];
    for run in runs {
        store.save(&run).expect("saving a sweep run");
    }
    let config = dir.join("stackbench.toml");
    std::fs::write(&config, PRICES).expect("writing the config");
    (results, config)
}
