//! A compile-time regression is judged like any other benchmark: the real `analyze-trends`
//! binary compares two Criterion baselines holding `compile/...` ids, flags the slower
//! compile as degraded (exit 1), leaves the unchanged one alone, and gives compiles a rate
//! in calls per second, never FLOP/s.

use serde_json::Value;
use stackbench::criterion_output::writer::{WrittenBenchmark, write_benchmark};
use stackbench::criterion_output::{SampleFile, SamplingMode, Throughput};
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

/// Ten one-call samples around `seconds` (a compile per sample, as the bench takes them),
/// with a small deterministic spread.
fn samples(seconds: f64) -> SampleFile {
    let times = (0..10)
        .map(|i| seconds * 1e9 * (1.0 + 0.004 * ((i * 7 % 10) as f64 - 4.5) / 4.5))
        .collect();
    SampleFile {
        sampling_mode: Some(SamplingMode::Flat),
        iters: vec![1.0; 10],
        times,
    }
}

fn write(root: &Path, baseline: &str, id: &str, seconds: f64) {
    let parts: Vec<&str> = id.splitn(4, '/').collect();
    let group = format!("{}/{}", parts[0], parts[1]);
    let samples = samples(seconds);
    let bench = WrittenBenchmark {
        group: &group,
        function: Some(parts[2]),
        value: Some(parts[3]),
        throughput: Some(Throughput::Elements(1)),
        samples: &samples,
    };
    write_benchmark(root, baseline, &bench).unwrap();
}

#[test]
fn a_slower_compile_is_a_regression_the_gate_sees() {
    let tmp = tempfile::tempdir().unwrap();
    let criterion = tmp.path().join("criterion");
    let nvrtc = "compile/nvrtc/gpu_kernels/sm_90";
    let triton = "compile/triton/softmax/4096x1024_sm90";
    write(&criterion, "base", nvrtc, 2.0);
    write(&criterion, "new", nvrtc, 2.6);
    write(&criterion, "base", triton, 0.22);
    write(&criterion, "new", triton, 0.22);
    // Recorded by stackbench: its system probe sits beside the benchmarks.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/criterion-0.8/stackbench/system.json");
    std::fs::create_dir_all(criterion.join("stackbench")).unwrap();
    std::fs::copy(fixture, criterion.join("stackbench/system.json")).unwrap();
    let out = Command::new(BIN)
        .args(["compare", "base", "new", "--criterion-dir"])
        .arg(&criterion)
        .args(["--format", "json"])
        .current_dir(tmp.path())
        .env_remove("CRITERION_HOME")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("analyze-trends runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(
        out.status.code(),
        Some(1),
        "a regression exits 1: {json}\n{stderr}"
    );
    let row = |id: &str| {
        json["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id} not compared: {json}"))
            .clone()
    };
    let slower = row(nvrtc);
    assert_eq!(slower["status"], "degraded", "{slower}");
    let change = slower["change_percent"].as_f64().unwrap();
    assert!((change - 30.0).abs() < 2.0, "{slower}");
    assert_eq!(
        slower["throughput"]["candidate"]["unit"], "calls/s",
        "{slower}"
    );
    assert_eq!(row(triton)["status"], "unchanged");
}
