//! Drives the real `analyze-trends` binary on the checked-in Criterion 0.5 and 0.8 trees and
//! on damaged copies of them: recording, the comparison contract, exit codes, bad input.

#[path = "cli_support/mod.rs"]
mod cli_support;
#[path = "fs_support/mod.rs"]
mod fs_support;
use fs_support::copy_tree;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

fn fixture(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/criterion-{version}"))
}

/// A copy of the Criterion `version` fixture (`tree` in a temporary directory), for a test
/// that changes it.
fn fixture_copy(version: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    copy_tree(&fixture(version), &tree);
    (tmp, tree)
}

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("CRITERION_HOME")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("the binary runs")
}

/// `record` of the Criterion tree `tree` into `results`, with `extra` arguments, in `cwd`.
fn record_tree(tree: &Path, results: &Path, extra: &[&str], cwd: &Path) -> Output {
    run(&cli_support::record_args(tree, results, extra), cwd)
}

/// `args` on the results directory `results`, in `cwd`.
fn run_on_results(args: &[&str], results: &Path, cwd: &Path) -> Output {
    let mut all = args.to_vec();
    all.extend(["--results", results.to_str().unwrap()]);
    run(&all, cwd)
}

/// `compare base new` of the Criterion tree `tree`, with `extra` arguments, in `cwd`.
fn compare_tree(tree: &Path, extra: &[&str], cwd: &Path) -> Output {
    run(&cli_support::compare_args("base", "new", tree, extra), cwd)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The baseline directory of the benchmark whose full id is `id`.
fn find_benchmark(root: &Path, baseline: &str, id: &str) -> PathBuf {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let bench = dir.join("benchmark.json");
        if bench.is_file() && dir.ends_with(baseline) {
            let v: Value = serde_json::from_slice(&std::fs::read(&bench).unwrap()).unwrap();
            if v["full_id"] == id {
                return dir;
            }
        }
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    panic!("{id} not found under {}", root.display());
}

const ODD_IDS: [&str; 6] = [
    "odd names: <T> spaces/a:b",
    "odd names: <T> spaces/a?b",
    "odd names: <T> spaces/ünïcödé ≈ ✓",
    "odd names: <T> spaces/Vec<u8>/n=10 / m=2",
    "odd names: <T> spaces/a very long benchmark function name that goes well past sixty-four bytes, variant one",
    "odd names: <T> spaces/a very long benchmark function name that goes well past sixty-four bytes, variant two",
];

fn only_run(results: &Path) -> Value {
    let runs: Vec<PathBuf> = std::fs::read_dir(results.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    serde_json::from_slice(&std::fs::read(&runs[0]).unwrap()).unwrap()
}

#[test]
fn records_criterion_0_5_and_0_8_with_names_from_benchmark_json() {
    for (version, count, kinds) in [
        ("0.5", 10, vec!["Bytes", "BytesDecimal", "Elements"]),
        (
            "0.8",
            12,
            vec![
                "Bytes",
                "BytesDecimal",
                "Elements",
                "Bits",
                "ElementsAndBytes",
            ],
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let results = tmp.path().join("results");
        let out = record_tree(
            &fixture(version),
            &results,
            &["--label", "fixture run"],
            tmp.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
        let run = only_run(&results);
        assert_eq!(run["schema"], "stackbench.run.v1");
        assert_eq!(run["label"], "fixture run");
        assert_eq!(run["source"]["baseline"], "new");
        let benches = run["benchmarks"].as_array().unwrap();
        assert_eq!(benches.len(), count, "criterion {version}");
        let ids: Vec<&str> = benches.iter().map(|b| b["id"].as_str().unwrap()).collect();
        for id in ODD_IDS
            .iter()
            .chain(&["plain function", "gemm/cpu/f32/64x64x64"])
        {
            assert!(
                ids.contains(id),
                "criterion {version}: {id} missing from {ids:?}"
            );
        }
        for kind in kinds {
            assert!(
                benches.iter().any(|b| b["throughput"].get(kind).is_some()),
                "criterion {version}: no {kind} throughput"
            );
        }
        for b in benches {
            let s = &b["samples"];
            assert_eq!(
                s["iters"].as_array().unwrap().len(),
                s["times"].as_array().unwrap().len()
            );
            assert!(s["times"].as_array().unwrap().len() >= 10);
            assert!(b["estimates"]["mean"]["point_estimate"].as_f64().unwrap() > 0.0);
        }
        let gemm = benches
            .iter()
            .find(|b| b["id"] == "gemm/cpu/f32/64x64x64")
            .unwrap();
        assert_eq!(
            (
                gemm["group"].as_str(),
                gemm["function"].as_str(),
                gemm["value"].as_str()
            ),
            (Some("gemm/cpu"), Some("f32"), Some("64x64x64"))
        );
        if version == "0.8" {
            assert_eq!(run["fingerprint"], "cpu=AMD EPYC x2;gpu=none");
            assert!(run["system"]["peaks"].is_array());
        } else {
            assert!(run["system"].is_null());
            assert!(
                run["notes"][0]
                    .as_str()
                    .unwrap()
                    .contains("no system probe"),
                "{}",
                run["notes"]
            );
        }
    }
}

fn compare_json(args: &[&str], cwd: &Path) -> (Option<i32>, Value, String) {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = run(&all, cwd);
    let (stdout, stderr) = text(&out);
    let value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code(), value, stderr)
}

#[test]
fn compare_json_contract_and_exit_code_agree() {
    let tmp = tempfile::tempdir().unwrap();
    for version in ["0.5", "0.8"] {
        let dir = fixture(version);
        let (code, json, stderr) = compare_json(
            &["base", "new", "--criterion-dir", dir.to_str().unwrap()],
            tmp.path(),
        );
        assert_eq!(json["schema"], "stackbench.comparison.v1", "{stderr}");
        assert_eq!(json["baseline"], "base");
        assert_eq!(json["candidate"], "new");
        assert_eq!(json["threshold_percent"], 5.0);
        let rows = json["comparisons"].as_array().unwrap();
        assert_eq!(rows.len(), if version == "0.5" { 10 } else { 12 });
        let statuses = ["improved", "degraded", "unchanged", "inconclusive"];
        for row in rows {
            assert!(statuses.contains(&row["status"].as_str().unwrap()), "{row}");
            for key in ["baseline_ns", "candidate_ns", "change_percent", "p_value"] {
                assert!(row[key].as_f64().is_some(), "{key} in {row}");
            }
            let ci = row["ci95_percent"].as_array().unwrap();
            assert!(ci[0].as_f64().unwrap() <= row["change_percent"].as_f64().unwrap() + 1e-9);
            assert!(ci[1].as_f64().unwrap() >= row["change_percent"].as_f64().unwrap() - 1e-9);
        }
        let s = &json["summary"];
        let degraded = s["total_degraded"].as_u64().unwrap();
        let sum: u64 = [
            "total_improved",
            "total_degraded",
            "total_unchanged",
            "total_inconclusive",
        ]
        .iter()
        .map(|k| s[k].as_u64().unwrap())
        .sum();
        assert_eq!(sum as usize, rows.len());
        assert!(
            ["healthy", "warning", "critical"].contains(&s["overall_status"].as_str().unwrap())
        );
        assert_eq!(
            code,
            Some(if degraded > 0 { 1 } else { 0 }),
            "criterion {version}: {s}"
        );
        assert!(
            json["added"].as_array().unwrap().is_empty()
                && json["removed"].as_array().unwrap().is_empty()
        );
        // Table and Markdown render the same rows.
        for format in ["table", "markdown"] {
            let out = compare_tree(&dir, &["--format", format], tmp.path());
            let (stdout, _) = text(&out);
            assert_eq!(out.status.code(), code);
            assert!(
                stdout.contains("ünïcödé ≈ ✓") && stdout.contains("Vec<u8>/n=10 / m=2"),
                "{stdout}"
            );
        }
    }
}

#[test]
fn throughput_rates_and_percent_of_peak_are_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixture("0.8");
    let (_, json, _) = compare_json(
        &[
            "base",
            "new",
            "--criterion-dir",
            dir.to_str().unwrap(),
            "--filter",
            "^gemm/",
        ],
        tmp.path(),
    );
    let rows = json["comparisons"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "the filter keeps only gemm/*");
    let unit = |id: &str| {
        let row = rows.iter().find(|r| r["id"] == id).unwrap();
        row["throughput"]["candidate"]["unit"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(unit("gemm/cpu/f32/64x64x64"), "GFLOP/s");
    assert_eq!(unit("gemm/cpu/triad/1MiB"), "GB/s");
    assert_eq!(unit("gemm/cpu/crc/4KiB"), "Gbit/s");
    assert_eq!(unit("gemm/cpu/axpy/1024"), "GB/s");
    let f32 = rows
        .iter()
        .find(|r| r["id"] == "gemm/cpu/f32/64x64x64")
        .unwrap();
    let rate = &f32["throughput"]["candidate"];
    // 2·64³ FLOP per iteration over the candidate's median time, against the f32 peak.
    let expected = 2.0 * 64f64.powi(3) / f32["candidate_ns"].as_f64().unwrap();
    assert!((rate["value"].as_f64().unwrap() - expected).abs() < 1e-6 * expected);
    // The fixture's f32 peak (166 GFLOP/s) is far below this figure: a wrong peak, shown
    // as suspect with its source, never as "1384 % of peak".
    assert!(rate["percent_of_peak"].is_null(), "{rate}");
    let suspect = &rate["suspect_peak"];
    assert!(
        (suspect["peak"].as_f64().unwrap() - 166.153472).abs() < 1e-9,
        "{rate}"
    );
    assert!(!suspect["source"].as_str().unwrap().is_empty(), "{rate}");
}

#[test]
fn unknown_baseline_missing_and_empty_directories_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixture("0.5");
    let out = run(
        &[
            "compare",
            "base",
            "nope",
            "--criterion-dir",
            dir.to_str().unwrap(),
        ],
        tmp.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("`nope`") && stderr.contains("base, main, new"),
        "{stderr}"
    );
    let out = record_tree(&dir, Path::new("r"), &["--baseline", "nope"], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("base, main, new"));

    let missing = tmp.path().join("missing");
    let out = compare_tree(&missing, &[], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("does not exist"), "{:?}", text(&out));

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for args in [
        vec!["compare", "base", "new", "--criterion-dir"],
        vec!["record", "--criterion-dir"],
    ] {
        let mut args = args.clone();
        args.push(empty.to_str().unwrap());
        let out = run(&args, tmp.path());
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out).1.contains("no Criterion benchmarks"),
            "{:?}",
            text(&out)
        );
    }
    let out = run(&["compare", "base"], tmp.path());
    assert_eq!(out.status.code(), Some(2), "usage error");
    let out = compare_tree(&dir, &["--filter", "("], tmp.path());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_damaged_benchmark_is_named_failed_and_counted() {
    let (tmp, tree) = fixture_copy("0.8");
    let damaged = [
        (
            "odd names: <T> spaces/a:b",
            "sample.json",
            "{\"sampling_mode\":\"Linear\",\"iters\":[1.0,2.0".to_string(),
            "invalid JSON",
        ),
        (
            "odd names: <T> spaces/a?b",
            "benchmark.json",
            "not json at all".to_string(),
            "invalid JSON",
        ),
        (
            "gemm/cpu/crc/4KiB",
            "sample.json",
            r#"{"iters":[1,2,3],"times":[1,"NaN",3]}"#.into(),
            "invalid JSON",
        ),
        (
            "gemm/cpu/copy/1MB",
            "sample.json",
            r#"{"iters":[1,2,3],"times":[1,0,3]}"#.into(),
            "not a positive",
        ),
        (
            "gemm/cpu/axpy/1024",
            "sample.json",
            r#"{"iters":[1,2,3],"times":[1,-2,3]}"#.into(),
            "not a positive",
        ),
        (
            "gemm/cpu/triad/1MiB",
            "sample.json",
            r#"{"iters":[1,2,3],"times":[1,2]}"#.into(),
            "3 iteration counts but 2 times",
        ),
    ];
    let paths: Vec<PathBuf> = damaged
        .iter()
        .map(|(id, file, _, _)| find_benchmark(&tree, "new", id).join(file))
        .collect();
    for ((_, _, content, _), path) in damaged.iter().zip(&paths) {
        std::fs::write(path, content).unwrap();
    }
    let (code, json, stderr) = compare_json(
        &["base", "new", "--criterion-dir", tree.to_str().unwrap()],
        tmp.path(),
    );
    // No usable samples is a failure of that benchmark, never a silent skip: exit 1.
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(json["summary"]["total_failed"], 6, "{}", json["summary"]);
    assert_eq!(json["summary"]["total_skipped"], 0, "{}", json["summary"]);
    assert_eq!(json["evidence"]["failed"], 6, "{}", json["evidence"]);
    assert_eq!(
        json["comparisons"].as_array().unwrap().len(),
        6,
        "the rest are compared"
    );
    assert_eq!(json["evidence"]["judged"], 6, "{}", json["evidence"]);
    let unmeasured = json["unmeasured"].as_array().unwrap();
    for ((id, _, _, reason), path) in damaged.iter().zip(&paths) {
        // The id when benchmark.json could be read; the file otherwise.
        let hit = unmeasured
            .iter()
            .filter(|u| u["status"] == "failed")
            .find(|u| u["id"] == *id || u["id"] == path.to_str().unwrap())
            .unwrap_or_else(|| panic!("{id} not listed as failed: {unmeasured:?}"));
        let error = hit["error"].as_str().unwrap();
        assert!(error.contains(reason), "{hit}");
        assert!(error.contains(path.to_str().unwrap()), "{hit}");
        assert!(
            stderr.contains(path.to_str().unwrap()),
            "stderr names {}",
            path.display()
        );
    }
}

#[test]
fn a_one_sample_benchmark_is_inconclusive() {
    let (tmp, tree) = fixture_copy("0.5");
    let dir = find_benchmark(&tree, "new", "plain function");
    std::fs::write(
        dir.join("sample.json"),
        r#"{"sampling_mode":"Flat","iters":[10.0],"times":[1234.0]}"#,
    )
    .unwrap();
    let (_, json, _) = compare_json(
        &["base", "new", "--criterion-dir", tree.to_str().unwrap()],
        tmp.path(),
    );
    let row = json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "plain function")
        .unwrap()
        .clone();
    assert_eq!(row["status"], "inconclusive");
    assert!(
        row["note"].as_str().unwrap().contains("too few samples"),
        "{row}"
    );
    assert_eq!(row["candidate_ns"], 123.4);
    assert!(row["p_value"].is_null() && row["ci95_percent"].is_null());
}

#[test]
fn runs_are_resolved_by_latest_previous_and_id() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let dir = fixture("0.8");
    for baseline in ["base", "new"] {
        let out = record_tree(
            &dir,
            &results,
            &[
                "--baseline",
                baseline,
                "--label",
                &format!("{baseline}-run"),
            ],
            tmp.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let (code_runs, from_runs, stderr) = compare_json(
        &[
            "previous",
            "latest",
            "--results",
            results.to_str().unwrap(),
            "--criterion-dir",
            tmp.path().join("none").to_str().unwrap(),
        ],
        tmp.path(),
    );
    // An explicit Criterion directory must exist; without it the runs are used.
    assert_eq!(code_runs, Some(2), "{stderr}");
    assert!(from_runs.is_null());
    let (code_runs, from_runs, stderr) = compare_json(
        &["previous", "latest", "--results", results.to_str().unwrap()],
        tmp.path(),
    );
    let (code_crit, from_crit, _) = compare_json(
        &["base", "new", "--criterion-dir", dir.to_str().unwrap()],
        tmp.path(),
    );
    assert_eq!(code_runs, code_crit, "{stderr}");
    assert_eq!(
        from_runs["comparisons"], from_crit["comparisons"],
        "a recorded run is judged like its baseline"
    );
    // By label: the same two runs.
    let (code_labels, from_labels, stderr) = compare_json(
        &[
            "label:base-run",
            "label:new-run",
            "--results",
            results.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(code_labels, code_runs, "{stderr}");
    assert_eq!(from_labels["comparisons"], from_runs["comparisons"]);
    let out = run_on_results(
        &["compare", "label:base-run", "label:nightly"],
        &results,
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{:?}", text(&out));
    let message = text(&out).1;
    assert!(
        message.contains("label:nightly") && message.contains("base-run, new-run"),
        "{message}"
    );
    let out = run_on_results(&["compare", "latest", "nope"], &results, tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("latest, previous"));
    // export: one row per benchmark per run
    let out = run_on_results(&["export"], &results, tmp.path());
    let (csv, _) = text(&out);
    assert_eq!(csv.lines().count(), 1 + 2 * 12, "{csv}");
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .starts_with("run_id,timestamp,label")
    );
    let out = run_on_results(&["export", "--format", "json"], &results, tmp.path());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 24);
    let out = run(
        &[
            "export",
            "--results",
            tmp.path().join("nothing").to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn different_hardware_is_refused_unless_allowed_and_then_flagged() {
    let (tmp, tree) = fixture_copy("0.8");
    let results = tmp.path().join("results");
    let record = |baseline: &str| {
        let out = record_tree(&tree, &results, &["--baseline", baseline], tmp.path());
        assert_eq!(out.status.code(), Some(0));
    };
    record("base");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let probe = tree.join("stackbench/system.json");
    let text_probe = std::fs::read_to_string(&probe)
        .unwrap()
        .replace("cpu=AMD EPYC x2;gpu=none", "cpu=Other x64;gpu=none");
    std::fs::write(&probe, text_probe).unwrap();
    record("new");
    let args = ["previous", "latest", "--results", results.to_str().unwrap()];
    let (code, _, stderr) = compare_json(&args, tmp.path());
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("different hardware") && stderr.contains("--allow-different-hardware"),
        "{stderr}"
    );
    let mut allowed = args.to_vec();
    allowed.push("--allow-different-hardware");
    let (code, json, _) = compare_json(&allowed, tmp.path());
    assert!(code == Some(0) || code == Some(1));
    assert_eq!(json["hardware"]["different"], true);
    assert!(
        json["summary"]["notes"][0]
            .as_str()
            .unwrap()
            .contains("DIFFERENT HARDWARE")
    );
    for format in ["table", "markdown"] {
        let mut a = vec!["compare"];
        a.extend_from_slice(&allowed);
        a.extend_from_slice(&["--format", format]);
        assert!(
            text(&run(&a, tmp.path())).0.contains("DIFFERENT HARDWARE"),
            "{format}"
        );
    }
}

#[test]
fn future_schema_and_unwritable_results_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let dir = fixture("0.5");
    let out = record_tree(&dir, &results, &[], tmp.path());
    assert_eq!(out.status.code(), Some(0));
    let mut run_json = only_run(&results);
    let recorded_id = run_json["run_id"].as_str().unwrap().to_string();
    run_json["schema"] = "stackbench.run.v2".into();
    run_json["run_id"] = "future".into();
    run_json["created_unix_ms"] = (u64::MAX / 2).into();
    std::fs::write(
        results.join("runs/future.json"),
        serde_json::to_vec(&run_json).unwrap(),
    )
    .unwrap();
    let out = run(
        // By id: a file the history database refused is not a run `latest` or `previous`
        // can name, but naming it gets its own error.
        &[
            "compare",
            &recorded_id,
            "future",
            "--results",
            results.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("stackbench.run.v2") && text(&out).1.contains("newer"),
        "{:?}",
        text(&out)
    );
    // The history report skips it with a warning instead of misreading it.
    let out = run(&[results.to_str().unwrap()], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert!(text(&out).1.contains("newer than this analyzer"));
    let report: Value =
        serde_json::from_slice(&std::fs::read(results.join("reports/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["problems"].as_array().unwrap().len(), 1);

    // A results directory that cannot be written: read-only for a normal user; root ignores
    // permissions, so there the directory is replaced by a file (the same write error path).
    let ro = tmp.path().join("readonly");
    std::fs::create_dir(&ro).unwrap();
    let is_root = unsafe { libc::geteuid() } == 0;
    let target = if is_root {
        std::fs::write(ro.join("results"), "a file, not a directory").unwrap();
        ro.join("results")
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        ro.clone()
    };
    let out = record_tree(&dir, &target, &[], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains(target.to_str().unwrap()),
        "{:?}",
        text(&out)
    );
}

#[test]
fn concurrent_records_both_land_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let dir = fixture("0.8");
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(BIN)
                .args([
                    "record",
                    "--criterion-dir",
                    dir.to_str().unwrap(),
                    "--results",
                    results.to_str().unwrap(),
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let files: Vec<_> = std::fs::read_dir(results.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 4, "{files:?}");
    for f in files {
        let v: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        assert_eq!(v["benchmarks"].as_array().unwrap().len(), 12);
    }
}

#[test]
fn missing_and_extra_fields_are_tolerated() {
    let (tmp, tree) = fixture_copy("0.8");
    let dir = find_benchmark(&tree, "new", "plain function");
    // Only the id survives, plus fields a future Criterion might add.
    std::fs::write(
        dir.join("benchmark.json"),
        r#"{"full_id":"plain function","future_field":{"a":1}}"#,
    )
    .unwrap();
    let sample: Value =
        serde_json::from_slice(&std::fs::read(dir.join("sample.json")).unwrap()).unwrap();
    let trimmed =
        serde_json::json!({"iters": sample["iters"], "times": sample["times"], "new_stat": [1, 2]});
    std::fs::write(dir.join("sample.json"), trimmed.to_string()).unwrap();
    std::fs::remove_file(dir.join("estimates.json")).unwrap();
    let tri = find_benchmark(&tree, "new", "gemm/cpu/triad/1MiB");
    let renamed = std::fs::read_to_string(tri.join("benchmark.json"))
        .unwrap()
        .replace(r#"{"Bytes":3145728}"#, r#"{"Frobs":7}"#);
    std::fs::write(tri.join("benchmark.json"), renamed).unwrap();

    let results = tmp.path().join("results");
    let out = record_tree(&tree, &results, &[], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let run_json = only_run(&results);
    let benches = run_json["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 12, "nothing skipped");
    let plain = benches
        .iter()
        .find(|b| b["id"] == "plain function")
        .unwrap();
    assert_eq!(plain["group"], "plain function");
    assert!(plain["function"].is_null() && plain["estimates"].is_null());
    assert!(plain["samples"]["sampling_mode"].is_null());
    assert!(
        plain["notes"][0]
            .as_str()
            .unwrap()
            .contains("estimates.json"),
        "{plain}"
    );
    let triad = benches
        .iter()
        .find(|b| b["id"] == "gemm/cpu/triad/1MiB")
        .unwrap();
    assert!(triad["throughput"].is_null());
    assert!(
        triad["notes"][0]
            .as_str()
            .unwrap()
            .contains("unknown throughput kind"),
        "{triad}"
    );
    let (_, json, _) = compare_json(
        &["base", "new", "--criterion-dir", tree.to_str().unwrap()],
        tmp.path(),
    );
    assert_eq!(json["comparisons"].as_array().unwrap().len(), 12);
}

/// Issue 30: every error line of both binaries starts `<binary> <command>: error: `, and
/// the command is the one that failed, so one pattern finds a failure in any log. Each
/// case is bad input (exit 2) that fails before any benchmark runs.
#[test]
fn every_failing_command_starts_its_error_line_with_binary_command_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    let stackbench = env!("CARGO_BIN_EXE_stackbench");
    let cases: &[(&str, &[&str], &str)] = &[
        (
            BIN,
            &["compare", "nosuch-a", "nosuch-b"],
            "analyze-trends compare",
        ),
        (
            BIN,
            &["history", "--results", missing, "gemm/cpu/f32/512x512x512"],
            "analyze-trends history",
        ),
        (BIN, &["import", missing], "analyze-trends import"),
        (
            BIN,
            &["runs", "--store", "bogus://x"],
            "analyze-trends runs",
        ),
        (stackbench, &["suite", "no-such-suite"], "stackbench suite"),
        (
            stackbench,
            &["show", "--results", missing],
            "stackbench show",
        ),
        (
            stackbench,
            &["config", "--config", missing, "--get", "results_dir"],
            "stackbench config",
        ),
        (
            stackbench,
            &["validate", "--config", missing],
            "stackbench validate",
        ),
        (
            stackbench,
            &["serve", "--bind", "999.1.1.1:0"],
            "stackbench serve",
        ),
        (
            stackbench,
            &["recommend", "--results", missing],
            "stackbench recommend",
        ),
    ];
    for (bin, args, command) in cases {
        let out = Command::new(bin)
            .args(*args)
            .current_dir(dir.path())
            .env_remove("STACKBENCH_CONFIG")
            .env_remove("STACKBENCH_STORE")
            .output()
            .expect("the binary runs");
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{command} {args:?}: {stderr}");
        let prefix = format!("{command}: error: ");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error:")).collect();
        assert!(
            !errors.is_empty(),
            "{command} {args:?} printed no error line: {stderr}"
        );
        for line in errors {
            assert!(
                line.starts_with(&prefix),
                "{command} {args:?}: {line:?} does not start with {prefix:?}"
            );
        }
    }
}
