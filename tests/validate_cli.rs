//! `stackbench validate`, `stackbench suite` and the published JSON Schemas, through the
//! real binaries: on recorded fixture runs (fast, every threshold outcome) and on one short
//! real CPU suite run (the suite really runs, and its verdict is the threshold's).

#[path = "cli_support/mod.rs"]
mod cli_support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn stackbench(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .args(args)
        .current_dir(cwd)
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_SUITE")
        .output()
        .expect("running stackbench")
}

fn analyzer(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("running analyze-trends")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts `doc` satisfies `schemas/<name>`, printing every violation.
fn assert_schema(name: &str, doc: &Value) {
    let text = std::fs::read_to_string(root().join("schemas").join(name)).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}");
}

/// A results directory holding `n` recordings of the Criterion 0.8 fixture.
fn recorded_fixture(dir: &Path, n: usize) -> PathBuf {
    let results = dir.join("results");
    let fixture = root().join("tests/fixtures/criterion-0.8");
    for _ in 0..n {
        record_tree(dir, &fixture, &results);
    }
    results
}

/// `stackbench validate --suite quick --run latest` on `results`, with `extra` arguments.
fn validate_latest(dir: &Path, results: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "validate",
        "--suite",
        "quick",
        "--run",
        "latest",
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    stackbench(&args, dir)
}

/// `stackbench validate --run latest --json` on `results` with `config`; (exit, verdict).
fn validate_run(dir: &Path, results: &Path, config: &str, extra: &[&str]) -> (i32, Value) {
    let config_path = dir.join("stackbench.toml");
    std::fs::write(&config_path, config).unwrap();
    let mut args = vec!["--json", "--config", config_path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = validate_latest(dir, results, &args);
    let verdict: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    assert_schema("validation.schema.json", &verdict);
    (out.status.code().unwrap_or(-1), verdict)
}

const F32_ID: &str = "gemm/cpu/f32/64x64x64";

fn check<'a>(verdict: &'a Value, name: &str, kind: &str) -> &'a Value {
    verdict["threshold_checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name && c["threshold_kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} check {name} in {verdict:#}"))
}

fn rule(expected: f64, warning_below: f64, failure_below: f64) -> String {
    format!(
        "[[thresholds]]\npattern = '^{F32_ID}$'\ndevice = \"cpu\"\nexpected = {expected}\nwarning_below = {warning_below}\nfailure_below = {failure_below}\n"
    )
}

#[test]
fn thresholds_on_a_recorded_run_pass_warn_and_fail_with_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let results = recorded_fixture(dir.path(), 1);

    let (code, verdict) = validate_run(dir.path(), &results, &rule(1e-6, 1.0, 0.9), &[]);
    assert_eq!(code, 0, "{verdict:#}");
    let met = check(&verdict, F32_ID, "config");
    assert_eq!(
        (met["status"].as_str(), met["passed"].as_bool()),
        (Some("passed"), Some(true))
    );
    assert_eq!(met["unit"], "GFLOP/s");
    let actual = met["actual"].as_f64().unwrap();
    assert!(actual > 0.0);
    assert!(check(&verdict, "installation/cpu loads", "installation")["passed"] == true);
    let result = verdict["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == F32_ID)
        .unwrap();
    assert!(
        result["latency_ns"]["p99"].as_f64().unwrap()
            >= result["latency_ns"]["p50"].as_f64().unwrap()
    );
    assert!((result["throughput"]["value"].as_f64().unwrap() - actual).abs() < 1e-9);

    // 5 % short of the expected figure, inside a 10 % warning band: a warning, exit 0.
    let (code, verdict) = validate_run(dir.path(), &results, &rule(actual / 0.95, 1.0, 0.9), &[]);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["status"], "warning");
    let warned = check(&verdict, F32_ID, "config");
    assert_eq!(warned["status"], "warning");
    assert!((warned["margin_percent"].as_f64().unwrap() + 5.0).abs() < 1e-6);

    // An expectation no CPU meets: failed, exit 1, and the verdict file says the same.
    let (code, verdict) = validate_run(dir.path(), &results, &rule(1e12, 1.0, 0.9), &[]);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["status"], "failed");
    assert_eq!(check(&verdict, F32_ID, "config")["passed"], false);
    let written = results.join("validation").join(format!(
        "{}-quick.json",
        verdict["run_id"].as_str().unwrap()
    ));
    let on_disk: Value = serde_json::from_slice(&std::fs::read(written).unwrap()).unwrap();
    assert_eq!(on_disk, verdict);
}

#[test]
fn history_adds_learned_thresholds_and_compare_to_adds_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let results = recorded_fixture(dir.path(), 4);
    let (_, verdict) = validate_run(dir.path(), &results, "", &[]);
    let kinds: Vec<&str> = verdict["threshold_checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["threshold_kind"].as_str())
        .collect();
    assert!(
        !kinds.contains(&"learned"),
        "3 earlier runs: not yet: {kinds:?}"
    );

    let results = recorded_fixture(dir.path(), 2);
    let (code, verdict) = validate_run(dir.path(), &results, "", &["--base", "previous"]);
    assert_eq!(code, 0, "{verdict:#}");
    let learned = check(&verdict, F32_ID, "learned");
    assert_eq!(learned["status"], "passed");
    assert!(
        learned["source"]
            .as_str()
            .unwrap()
            .contains("5 stored runs")
    );
    assert!(learned["failure_at"].as_f64().unwrap() < learned["expected"].as_f64().unwrap());
    // The same fixture recorded twice: nothing moved between them.
    assert_eq!(learned["delta_percent"].as_f64(), Some(0.0));
    assert!(verdict["compare_to"].is_string());
}

#[test]
fn bad_input_exits_2_and_names_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let results = recorded_fixture(dir.path(), 1);
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "results_dir = \"r\"\n\n[gate]\nrounds = 3\nthreshhold_percent = 5\n",
    )
    .unwrap();
    let out = stackbench(
        &[
            "validate",
            "--run",
            "latest",
            "--config",
            bad.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in ["bad.toml", "line 5", "column 1", "threshhold_percent"] {
        assert!(err.contains(needle), "{needle} missing: {err}");
    }

    let out = stackbench(
        &["validate", "--suite", "nightly", "--run", "latest"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown suite 'nightly'"),
        "{}",
        stderr(&out)
    );

    let out = stackbench(
        &[
            "validate",
            "--run",
            "no-such-run",
            "--results",
            results.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no-such-run"), "{}", stderr(&out));

    let out = stackbench(&["suite", "pre-installation", "--targets"], dir.path());
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "memory_bandwidth,gemm,components"
    );
}

#[test]
fn run_and_comparison_json_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let results = recorded_fixture(dir.path(), 1);
    for entry in std::fs::read_dir(results.join("runs")).unwrap() {
        let run: Value =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        assert_schema("run.schema.json", &run);
    }
    let fixture = root().join("tests/fixtures/criterion-0.8");
    let out = analyzer(
        &[
            "compare",
            "base",
            "new",
            "--criterion-dir",
            fixture.to_str().unwrap(),
            "--format",
            "json",
        ],
        dir.path(),
    );
    let comparison: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    assert_schema("comparison.schema.json", &comparison);
    // The schemas can fail: a status outside the contract is caught.
    let mut broken = comparison.clone();
    broken["comparisons"][0]["status"] = Value::from("slower");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/comparison.schema.json")).unwrap(),
    )
    .unwrap();
    assert!(
        !jsonschema::validator_for(&schema)
            .unwrap()
            .is_valid(&broken)
    );
    for snapshot in ["compare-0.5.json", "compare-0.8.json"] {
        let path = root().join("tests/fixtures/snapshots").join(snapshot);
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_schema("comparison.schema.json", &doc);
    }
}

/// The real thing, kept short: one cache-sized triad with Criterion's shortest sampling.
#[test]
fn a_real_cpu_suite_runs_and_an_unmeetable_threshold_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("stackbench.toml");
    // The in-cache triad this machine's quick suite runs (its size follows the L2).
    let id = stackbench::family::memory_bandwidth::cpu_in_cache_triad_id()
        .expect("the CPU backend opens");
    let size = id.rsplit('/').next().unwrap();
    std::fs::write(
        &config,
        format!("[suites.tiny]\ntargets = [\"memory_bandwidth\"]\ninclude = ['^{id}$']\nwarm_up_s = 0.05\nmeasurement_s = 0.1\nsample_size = 12\n\n[[thresholds]]\npattern = 'triad/{size}$'\ndevice = \"cpu\"\nexpected = 1e9\n"),
    )
    .unwrap();
    let results = dir.path().join("results");
    let out = stackbench(
        &[
            "validate",
            "--suite",
            "tiny",
            "--json",
            "--results",
            results.to_str().unwrap(),
        ],
        dir.path(),
    );
    let verdict: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    assert_schema("validation.schema.json", &verdict);
    assert_eq!(out.status.code(), Some(1), "{verdict:#}\n{}", stderr(&out));
    let failed = check(&verdict, &id, "config");
    assert_eq!(failed["unit"], "GB/s");
    assert!(failed["actual"].as_f64().unwrap() > 0.1, "{failed}");
    assert!(
        check(
            &verdict,
            "installation/memory_bandwidth/cpu runs",
            "installation"
        )["passed"]
            == true
    );
    // Only what the suite selects ran, and the run was kept for later learning.
    let measured: Vec<&str> = verdict["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "measured")
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(measured, vec![id]);
    let runs: Vec<_> = std::fs::read_dir(results.join("runs")).unwrap().collect();
    assert_eq!(runs.len(), 1);
    let run: Value =
        serde_json::from_slice(&std::fs::read(runs[0].as_ref().unwrap().path()).unwrap()).unwrap();
    assert_schema("run.schema.json", &run);
    assert_eq!(run["label"], "validate/tiny");
    // The suite's sampling reached Criterion (the CPU default is 10 samples).
    let iters = run["benchmarks"][0]["samples"]["iters"].as_array().unwrap();
    assert_eq!(iters.len(), 12);
}

/// The measuring path, not only a stored run: a suite that selects nothing runs its target,
/// which says so, and validate exits 2 naming the suite, keeping no run.
#[test]
fn a_real_suite_that_selects_nothing_is_bad_input_and_keeps_no_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("stackbench.toml"),
        "[suites.none]\ntargets = [\"memory_bandwidth\"]\ninclude = ['^no/such/benchmark$']\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    let out = stackbench(
        &[
            "validate",
            "--suite",
            "none",
            "--results",
            results.to_str().unwrap(),
        ],
        dir.path(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("suite 'none' selects no benchmark in this run"),
        "{err}"
    );
    // The bench target itself named the suite that selected nothing.
    assert!(
        err.contains(
            "stackbench memory_bandwidth: suite 'none' selects no benchmark of this target"
        ),
        "{err}"
    );
    assert!(!results.join("runs").exists(), "a run was kept");
}

const TRIAD_ID: &str = "memory_bandwidth/cpu/triad/256MiB";
/// Bytes STREAM counts for one triad pass over 256 MiB arrays (3 arrays).
const TRIAD_BYTES: u64 = 3 * (256 << 20);
/// Each recorded pass takes 20 ms: 40.27 GB/s.
const TRIAD_NS: f64 = 20e6;
const TORCH_ID: &str = "components/tiny_gpt/prefill/b1_s128";

/// The probe's memory configuration for `channels` DDR5 channels at `mts`, one DIMM each,
/// built by the probe's own code from type-17 records.
fn dimms(channels: u8, mts: u32) -> Value {
    use stackbench::system::memory::{MemoryDevice, MemoryReading};
    let slots: Vec<MemoryDevice> = (0..channels)
        .map(|c| MemoryDevice {
            locator: Some(format!("DIMM_{}1", (b'A' + c) as char)),
            bank_locator: Some("P0".into()),
            size_bytes: Some(32 << 30),
            memory_type: Some("DDR5".into()),
            speed_mts: Some(mts),
            configured_mts: Some(mts),
            data_width_bits: Some(64),
            total_width_bits: Some(80),
        })
        .collect();
    serde_json::to_value(MemoryReading::from_slots(
        &slots,
        "/sys/firmware/dmi/entries/17-*/raw",
    ))
    .unwrap()
}

/// A recorded run of one CPU triad at 40.27 GB/s, on the recorded Zen 4 probe with
/// `memory_config` and `backends` patched in, and one component benchmark whose worker
/// reported `torch_facts`.
fn stream_run(
    dir: &Path,
    memory_config: Value,
    cuda: Option<Value>,
    torch_facts: Value,
) -> PathBuf {
    let criterion = dir.join("criterion");
    let bench = criterion.join("memory_bandwidth_cpu/triad/256MiB/new");
    std::fs::create_dir_all(&bench).unwrap();
    let template = root().join("tests/fixtures/criterion-0.8/gemm_cpu/triad/1MiB/new");
    for file in ["estimates.json", "tukey.json"] {
        std::fs::copy(template.join(file), bench.join(file)).unwrap();
    }
    let write = |path: PathBuf, doc: Value| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    };
    write(
        bench.join("benchmark.json"),
        serde_json::json!({"group_id": "memory_bandwidth/cpu", "function_id": "triad",
            "value_str": "256MiB", "throughput": {"Bytes": TRIAD_BYTES}, "full_id": TRIAD_ID,
            "directory_name": "memory_bandwidth_cpu/triad/256MiB", "title": TRIAD_ID}),
    );
    let iters: Vec<f64> = (1..=10).map(f64::from).collect();
    let times: Vec<f64> = iters.iter().map(|i| i * TRIAD_NS).collect();
    write(
        bench.join("sample.json"),
        serde_json::json!({"sampling_mode": "Linear", "iters": iters, "times": times}),
    );
    // The component the target report says it measured has samples too: a "measured"
    // benchmark with none would be failed.
    let torch = criterion.join("components_tiny_gpt/prefill/b1_s128/new");
    std::fs::create_dir_all(&torch).unwrap();
    for file in ["estimates.json", "tukey.json"] {
        std::fs::copy(template.join(file), torch.join(file)).unwrap();
    }
    write(
        torch.join("benchmark.json"),
        serde_json::json!({"group_id": "components/tiny_gpt", "function_id": "prefill",
            "value_str": "b1_s128", "throughput": null, "full_id": TORCH_ID,
            "directory_name": "components_tiny_gpt/prefill/b1_s128", "title": TORCH_ID}),
    );
    write(
        torch.join("sample.json"),
        serde_json::json!({"sampling_mode": "Flat", "iters": [1.0, 1.0, 1.0], "times": [3e6, 3.1e6, 2.9e6]}),
    );
    let recorded = root().join("tests/fixtures/criterion-0.8/stackbench/system.json");
    let mut probe: Value = serde_json::from_slice(&std::fs::read(recorded).unwrap()).unwrap();
    probe["memory_config"] = memory_config;
    if let Some(cuda) = cuda {
        probe["backends"]["cuda"] = cuda;
    }
    assert_schema("system.schema.json", &probe);
    write(criterion.join("stackbench/system.json"), probe);
    write(
        criterion.join("stackbench/targets/components.json"),
        serde_json::json!({"schema": "stackbench.target.v1", "target": "components",
            "suite": "quick", "started_unix_s": 0, "benchmarks": {TORCH_ID: {
                "group": "components/tiny_gpt", "function": "prefill", "value": "b1_s128",
                "outcome": "measured", "notes": torch_facts}}}),
    );
    // The target reports say what the run measured (the recorder drops anything else).
    write(
        criterion.join("stackbench/targets/memory_bandwidth.json"),
        serde_json::json!({"schema": "stackbench.target.v1", "target": "memory_bandwidth",
            "suite": "quick", "started_unix_s": 0, "benchmarks": {TRIAD_ID: {
                "group": "memory_bandwidth/cpu", "function": "triad", "value": "256MiB",
                "outcome": "measured"}}}),
    );
    let results = dir.join("results");
    record_tree(dir, &criterion, &results);
    results
}

fn record_tree(dir: &Path, criterion: &Path, results: &Path) {
    let out = analyzer(&cli_support::record_args(criterion, results, &[]), dir);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn cpu_torch() -> Value {
    serde_json::json!({"torch_version": "2.9.0+cpu", "cuda_version": null, "hip_version": null})
}

/// The STREAM expectation is 70 % x 3/4 of the DIMMs' bandwidth, failing below half of it.
#[test]
fn cpu_triad_is_judged_against_the_stream_expectation_for_its_dimms() {
    let verdict_for = |memory_config: Value, extra: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let results = stream_run(dir.path(), memory_config, None, cpu_torch());
        validate_run(dir.path(), &results, "", extra)
    };
    // 2 x 3200 x 8 = 51.2 GB/s: expected 26.88, met.
    let (code, verdict) = verdict_for(dimms(2, 3200), &[]);
    assert_eq!(code, 0, "{verdict:#}");
    let met = check(&verdict, TRIAD_ID, "stream_expectation");
    assert_eq!(met["status"], "passed");
    assert!((met["actual"].as_f64().unwrap() - TRIAD_BYTES as f64 / TRIAD_NS).abs() < 1e-6);
    assert!(
        (met["expected"].as_f64().unwrap() - 51.2 * 0.7 * 0.75).abs() < 1e-6,
        "{met}"
    );
    let source = met["source"].as_str().unwrap();
    assert!(
        source.contains("2 channel(s) x 3200 MT/s x 8 bytes = 51.2 GB/s"),
        "{source}"
    );
    assert!(source.contains("channels from slot names"), "{source}");
    // 4 x 3200 x 8 = 102.4 GB/s: expected 53.76, failing below 26.88: a warning, exit 0.
    let (code, verdict) = verdict_for(dimms(4, 3200), &[]);
    assert_eq!(
        (code, verdict["status"].as_str()),
        (0, Some("warning")),
        "{verdict:#}"
    );
    let warned = check(&verdict, TRIAD_ID, "stream_expectation");
    assert_eq!(
        (warned["status"].as_str(), warned["passed"].as_bool()),
        (Some("warning"), Some(true))
    );
    // 12 x 6400 x 8 = 614.4 GB/s: expected 322.6, failing below 161.3: failed, exit 1.
    let (code, verdict) = verdict_for(dimms(12, 6400), &[]);
    assert_eq!(
        (code, verdict["status"].as_str()),
        (1, Some("failed")),
        "{verdict:#}"
    );
    assert_eq!(
        check(&verdict, TRIAD_ID, "stream_expectation")["passed"],
        false
    );
    // CPU-only torch: noted, not judged.
    let notes = verdict["notes"].to_string();
    assert!(
        notes.contains("torch 2.9.0+cpu is a CPU-only build"),
        "{notes}"
    );
}

/// Without DMI (this VM, most containers) the check is not silently dropped: the output
/// says which benchmark has no STREAM expectation and why.
#[test]
fn an_unreadable_memory_configuration_is_said_beside_the_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let reason = "/sys/firmware/dmi/entries is absent (no SMBIOS tables exposed), and dmidecode is not installed";
    let unavailable = serde_json::json!({"status": "unavailable", "reason": reason});
    let results = stream_run(dir.path(), unavailable, None, cpu_torch());
    let (code, verdict) = validate_run(dir.path(), &results, "", &[]);
    assert_eq!(code, 0, "{verdict:#}");
    assert!(
        !verdict["threshold_checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == TRIAD_ID),
        "{verdict:#}"
    );
    let note = verdict["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with(TRIAD_ID))
        .unwrap_or_else(|| panic!("no note for {TRIAD_ID}: {verdict:#}"));
    assert!(
        note.contains("no STREAM expectation") && note.contains(reason),
        "{note}"
    );
    // The terminal table says the same.
    let out = validate_latest(dir.path(), &results, &[]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&format!("note: {TRIAD_ID}: no STREAM expectation")),
        "{table}"
    );
    // Five more recordings: the machine's own history (five earlier runs) now judges the
    // triad, and the missing hardware expectation is still said.
    for _ in 0..5 {
        record_tree(dir.path(), &dir.path().join("criterion"), &results);
    }
    let (_, verdict) = validate_run(dir.path(), &results, "", &[]);
    assert_eq!(check(&verdict, TRIAD_ID, "learned")["status"], "passed");
    let notes = verdict["notes"].to_string();
    assert!(
        notes.contains(&format!("{TRIAD_ID}: no STREAM expectation")),
        "{notes}"
    );
}

/// torch's CUDA build against the driver's CUDA version, from the worker's facts and the
/// probe's `driver_cuda_version` (GPU behaviour unconfirmed: recorded values, no GPU here).
#[test]
fn torch_built_for_a_newer_cuda_than_the_driver_warns_or_fails() {
    let cuda = serde_json::json!({"status": "available", "devices": [
        {"name": "NVIDIA H100 80GB HBM3", "properties": {"driver_cuda_version": "12.4"}}]});
    let verdict_for = |torch_cuda: &str| {
        let dir = tempfile::tempdir().unwrap();
        let facts = serde_json::json!({"torch_version": "2.9.0", "cuda_version": torch_cuda, "hip_version": null});
        let results = stream_run(dir.path(), dimms(2, 3200), Some(cuda.clone()), facts);
        validate_run(dir.path(), &results, "", &[])
    };
    let name = "installation/torch 2.9.0 cuda runtime vs driver";
    let (code, verdict) = verdict_for("12.1");
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(check(&verdict, name, "installation")["status"], "passed");
    let (code, verdict) = verdict_for("12.8");
    assert_eq!(
        (code, verdict["status"].as_str()),
        (0, Some("warning")),
        "{verdict:#}"
    );
    let warned = check(&verdict, name, "installation");
    assert!(
        warned["actual"]
            .as_str()
            .unwrap()
            .contains("minor-version compatibility")
    );
    let (code, verdict) = verdict_for("13.0");
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(check(&verdict, name, "installation")["status"], "failed");
}

/// The verdict says what it stands on: every check that ran, its tier and the usable
/// samples it read, in the JSON (`evidence`) and in the table and its summary line.
#[test]
fn the_verdict_states_its_evidence_in_json_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let results = recorded_fixture(dir.path(), 1);
    let (code, verdict) = validate_run(dir.path(), &results, &rule(1e-6, 1.0, 0.9), &[]);
    assert_eq!(code, 0, "{verdict:#}");
    let evidence = &verdict["evidence"];
    let checks = verdict["threshold_checks"].as_array().unwrap();
    let ran = evidence["ran"].as_array().unwrap();
    assert_eq!(evidence["checks"].as_u64(), Some(checks.len() as u64));
    let names: Vec<&Value> = checks.iter().map(|c| &c["name"]).collect();
    let ids: Vec<&Value> = ran.iter().map(|c| &c["id"]).collect();
    assert_eq!(names, ids);
    let f32 = ran.iter().find(|c| c["id"] == F32_ID).unwrap();
    assert_eq!(f32["tier"], "gemm");
    let samples = f32["samples"].as_u64().unwrap();
    assert!(samples > 0, "{f32}");
    let loads = ran
        .iter()
        .find(|c| c["id"] == "installation/cpu loads")
        .unwrap();
    assert_eq!(
        (&loads["tier"], &loads["samples"]),
        (&"installation".into(), &0.into())
    );
    let tiers = evidence["tiers"].as_u64().unwrap();
    assert!(tiers >= 2, "{evidence:#}");
    assert!(
        evidence["benchmarks"].as_u64().unwrap() >= 1,
        "{evidence:#}"
    );
    // The schema holds CI to it: a verdict without its evidence is not valid.
    let mut bare = verdict.clone();
    bare.as_object_mut().unwrap().remove("evidence");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/validation.schema.json")).unwrap(),
    )
    .unwrap();
    assert!(!jsonschema::validator_for(&schema).unwrap().is_valid(&bare));

    let config = dir.path().join("stackbench.toml");
    let out = validate_latest(
        dir.path(),
        &results,
        &["--config", config.to_str().unwrap()],
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let summary = format!(
        "passed — {} checks on {tiers} tiers, {} passed, ",
        checks.len(),
        evidence["passed"]
    );
    assert!(table.contains(&summary), "{summary} missing:\n{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with(F32_ID) && l.contains("config"))
        .unwrap_or_else(|| panic!("no row for {F32_ID}:\n{table}"));
    assert!(row.trim_end().ends_with(&samples.to_string()), "{row}");
}

/// ci/gpu_tests.sh skips the multi-GPU test on fewer than two GPUs; the count comes from
/// ci/gpu_count.sh, here over fake `nvidia-smi` listings.
#[test]
fn gpu_count_reads_nvidia_smi_and_is_zero_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let count_with = |listing: Option<&str>| {
        let bin = dir.path().join("bin");
        let _ = std::fs::remove_dir_all(&bin);
        std::fs::create_dir_all(&bin).unwrap();
        if let Some(listing) = listing {
            let script = bin.join("nvidia-smi");
            std::fs::write(&script, format!("#!/bin/sh\nprintf '{listing}'\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let out = Command::new("bash")
            .arg(root().join("ci/gpu_count.sh"))
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let one = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\\n";
    let two = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\\n";
    assert_eq!(count_with(Some(one)), "1");
    assert_eq!(count_with(Some(two)), "2");
    assert_eq!(count_with(None), "0");
    let script = std::fs::read_to_string(root().join("ci/gpu_tests.sh")).unwrap();
    assert!(
        script.contains("ci/gpu_count.sh") && script.contains("--skip \"$name\""),
        "gpu_tests.sh no longer skips by the device count"
    );
}
