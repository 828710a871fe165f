//! `stackbench recommend` through the real binary, on a results directory holding
//! recorded sweep runs of two machines (priced differently) and an older sweep of one of
//! them: the table and JSON output, the JSON schema, and the exit codes of bad input.

mod schema_support;
mod sweep_support;

use serde_json::Value;
use stackbench::results::RunStore;
use std::path::{Path, PathBuf};
use std::process::Output;
use sweep_support::sweep_run;

const PRICES: &str =
    "[prices]\nbasis = \"hour\"\n[prices.devices]\n\"GPU-A\" = 4.0\n\"GPU-B\" = 1.0\n";

const GPT2: &str = "models/torch/ci-gpt2-fp32-decode/b1_s128";
const VIT: &str = "models/torch/ci-vit-fp32-forward/b1";

/// A results directory with the sweeps of machines A and B, and the config with prices.
fn results(dir: &Path) -> (PathBuf, PathBuf) {
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

fn recommend(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .arg("recommend")
        .args(args)
        .current_dir(dir)
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_STORE")
        .output()
        .expect("running stackbench")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn with_paths<'a>(results: &'a Path, config: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--results",
        results.to_str().expect("a UTF-8 temp path"),
        "--config",
        config.to_str().expect("a UTF-8 temp path"),
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn the_table_names_the_fastest_cell_and_says_no_data_where_a_machine_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let (results, config) = results(dir.path());
    let out = recommend(
        dir.path(),
        &with_paths(&results, &config, &["--slo", "ttft_p99<=200ms"]),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("SLO: ttft_p99<=200ms"), "{stdout}");
    assert!(
        stdout.contains("best: torch fp32 b1 s128 on GPU-A: 2000.0000 tokens/s"),
        "{stdout}"
    );
    // The vision model has no TTFT, so it cannot meet a TTFT SLO; machine B has no data.
    assert!(stdout.contains("no cell reports ttft_p99"), "{stdout}");
    assert!(
        stdout.contains("[2] no data"),
        "the failed cell of B counted: {stdout}"
    );
    assert!(
        !stdout.contains("9000000000"),
        "the older run of A counted: {stdout}"
    );
}

#[test]
fn per_dollar_json_picks_the_cheaper_machine_and_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let (results, config) = results(dir.path());
    let args = with_paths(
        &results,
        &config,
        &["--rank", "per-dollar", "--format", "json"],
    );
    let out = recommend(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    schema_support::assert_valid("recommend.schema.json", &doc);
    assert_eq!(doc["schema"], "stackbench.recommend.v1");
    let gpt2 = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == "ci-gpt2")
        .expect("a ci-gpt2 row");
    assert_eq!(gpt2["pick"]["status"], "best");
    assert_eq!(gpt2["pick"]["cell"]["device"], "GPU-B", "{gpt2:#}");
    assert_eq!(gpt2["pick"]["score"], 900.0);
    let mut broken = doc.clone();
    broken.as_object_mut().unwrap().remove("rows");
    assert!(!schema_support::violations("recommend.schema.json", &broken).is_empty());
}

#[test]
fn per_watt_lists_a_cell_without_an_energy_figure() {
    let dir = tempfile::tempdir().unwrap();
    let (results, config) = results(dir.path());
    let args = with_paths(
        &results,
        &config,
        &["--rank", "per-watt", "--model", "ci-gpt2"],
    );
    let out = recommend(dir.path(), &args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("no energy figure"), "{stdout}");
    assert!(
        stdout.contains("best: torch fp32 b1 s128 on GPU-A: 2.0000 tokens per J"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("ci-vit"),
        "the model filter let ci-vit through: {stdout}"
    );

    let args = with_paths(&results, &config, &["--rank", "per-watt", "--format", "md"]);
    let out = recommend(dir.path(), &args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("| model | phase | GPU-A (fp-a) | GPU-B (fp-b) | best |"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| ci-vit | forward | no energy figure (1 cell(s) meet the SLOs) | no data |"
        ),
        "{stdout}"
    );
}

#[test]
fn an_slo_no_cell_meets_is_said_with_the_best_figure() {
    let dir = tempfile::tempdir().unwrap();
    let (results, config) = results(dir.path());
    let args = with_paths(
        &results,
        &config,
        &["--slo", "ttft_p99<=10ms", "--model", "ci-gpt2"],
    );
    let out = recommend(dir.path(), &args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("no measured cell meets ttft_p99<=10ms; best ttft_p99 was 50.0 ms"),
        "{stdout}"
    );
}

#[test]
fn bad_input_exits_2_naming_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let (results, config) = results(dir.path());
    let out = recommend(
        dir.path(),
        &with_paths(&results, &config, &["--model", "nope"]),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\"nope\"") && stderr.contains("ci-gpt2, ci-vit"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let out = recommend(
        dir.path(),
        &with_paths(&results, &config, &["--slo", "ttft<=1ms"]),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\"ttft<=1ms\"") && stderr.contains("valid forms"),
        "{stderr}"
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = recommend(dir.path(), &with_paths(&empty, &config, &[]));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no measured model sweep cell"), "{stderr}");
    assert!(out.stdout.is_empty());

    let missing = dir.path().join("missing");
    let out = recommend(dir.path(), &with_paths(&missing, &config, &[]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
