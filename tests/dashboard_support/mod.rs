//! Fixture runs for the dashboard tests, made from the real Criterion fixture
//! (`tests/fixtures/criterion-0.8`): its system probe and its recorded samples, rescaled
//! so each benchmark of a full stackbench suite gets a plausible time while keeping the
//! real run-to-run noise shape. Timestamps are fixed so snapshots never change.
//!
//! Eighteen runs (the change-point test's Mann-Whitney reaches its 0.001 level with nine
//! runs on each side): one benchmark steps 25 % slower from run 10 (a change point), the last run
//! makes some benchmarks faster and some slower than the run before (the before/after
//! pair), and records skips and a failure with their reasons.

#![allow(dead_code)]

use stackbench::criterion_output::Throughput;
use stackbench::results::{RunRecord, RunStore, format_rfc3339_ms, run_from_criterion};
use stackbench::sidecar::{BenchmarkEntry, BenchmarkOutcome, TARGET_REPORT_SCHEMA, TargetReport};
use std::collections::BTreeMap;
use std::path::Path;

pub const RUNS: usize = 18;
/// 2026-11-01T00:00:00Z
const FIRST_MS: u64 = 1_793_491_200_000;

/// (id, throughput, time per iteration in ns in the first run)
fn suite() -> Vec<(String, Option<Throughput>, f64)> {
    let mut out = Vec::new();
    // STREAM kernels: bytes moved / time; host RAM about 40 GB/s, caches faster.
    for (kernel, arrays) in [("copy", 2u64), ("triad", 3), ("read", 1)] {
        for (size, label, gbs) in [
            (16u64 << 10, "16KiB", 180.0),
            (1 << 20, "1MiB", 90.0),
            (256 << 20, "256MiB", 38.0),
        ] {
            let bytes = arrays * size;
            out.push((
                format!("memory_bandwidth/cpu/{kernel}/{label}"),
                Some(Throughput::Bytes(bytes)),
                bytes as f64 / gbs,
            ));
        }
    }
    for (dtype, gflops) in [("f64", 45.0), ("f32", 95.0), ("f16", 30.0)] {
        for n in [256u64, 512, 1024, 2048] {
            let flops = 2 * n * n * n;
            let eff = gflops * (0.6 + 0.1 * (n as f64).log2() / 3.0);
            out.push((
                format!("gemm/cpu/{dtype}/{n}x{n}x{n}"),
                Some(Throughput::Elements(flops)),
                flops as f64 / eff,
            ));
        }
    }
    let flops = 2 * 2048u64 * 11008 * 4096;
    out.push((
        "gemm/cpu/f32/2048x11008x4096".into(),
        Some(Throughput::Elements(flops)),
        flops as f64 / 90.0,
    ));
    for (op, arrays, gbs) in [
        ("add_f32", 3u64, 30.0),
        ("softmax_f32", 2, 12.0),
        ("layer_norm_bf16", 2, 8.0),
    ] {
        let bytes = arrays * 256 * 4096 * 4;
        out.push((
            format!("tensor_ops/cpu/{op}/256x4096"),
            Some(Throughput::Bytes(bytes)),
            bytes as f64 / gbs,
        ));
    }
    for (kernel, gflops) in [("standard_causal_f32", 20.0), ("flash_causal_f32", 48.0)] {
        let flops = 4 * 4 * 1024u64 * 1024 * 64 / 2;
        out.push((
            format!("attention/cpu/{kernel}/b1_h4_s1024_d64"),
            Some(Throughput::Elements(flops)),
            flops as f64 / gflops,
        ));
    }
    out.extend(component_suite());
    out.push((
        "components/onnxruntime/mlp_all/b8_s128".into(),
        Some(Throughput::Elements(1024)),
        2.4e6,
    ));
    out.push((
        "components/onnxruntime/mlp_basic/b8_s128".into(),
        Some(Throughput::Elements(1024)),
        3.1e6,
    ));
    out
}

/// The component workers' ids as they record them (scripts/components): PyTorch matmul
/// sizes per dtype, the SDPA backends at one shape (two refused: see `outcomes`), vLLM
/// batches and DeepSpeed ZeRO stages.
fn component_suite() -> Vec<(String, Option<Throughput>, f64)> {
    let mut out = Vec::new();
    for (dtype, gflops) in [("f32", 95.0), ("bf16", 38.0)] {
        for n in [256u64, 512, 1024, 2048] {
            let flops = 2 * n * n * n;
            let eff = gflops * (0.55 + 0.15 * ((n / 256) as f64).log2() / 3.0);
            out.push((
                format!("components/pytorch/matmul/{dtype}_{n}x{n}x{n}"),
                Some(Throughput::Elements(flops)),
                flops as f64 / eff,
            ));
        }
    }
    let attention_flops = 4 * 2 * 512u64 * 512 * 8 * 64;
    for (backend, gflops) in [("math", 21.0), ("flash", 58.0), ("default", 57.0)] {
        out.push((
            format!("components/attention/sdpa_{backend}/{SDPA_SHAPE}"),
            Some(Throughput::Elements(attention_flops)),
            attention_flops as f64 / gflops,
        ));
    }
    for (batch, tokens_per_s) in VLLM_BATCHES {
        let tokens = batch * 128;
        out.push((
            format!("components/vllm/offline/b{batch}_in128_out128"),
            Some(Throughput::Elements(tokens)),
            tokens as f64 / tokens_per_s * 1e9,
        ));
    }
    for stage in 0..4 {
        out.push((
            format!("components/deepspeed/zero_step/stage{stage}_ranks1_d1024_t4096"),
            Some(Throughput::Elements(4096)),
            24e6 + 1.5e6 * stage as f64,
        ));
    }
    out
}

const SDPA_SHAPE: &str = "b2_h8_s512_d64_f32";
/// (batch, output tokens/s) of the fixture's vLLM runs.
const VLLM_BATCHES: [(u64, f64); 4] = [(1, 90.0), (8, 650.0), (32, 2200.0), (128, 6000.0)];
/// (stage, MiB at rest, after backward, at the peak) of the fixture's DeepSpeed runs.
const ZERO_MEMORY_MIB: [(u64, f64, f64, f64); 4] = [
    (0, 1030.0, 1290.0, 1710.0),
    (1, 1030.0, 1290.0, 1702.0),
    (2, 1030.0, 1160.0, 1600.0),
    (3, 1100.0, 1230.0, 1680.0),
];

/// The notes the vLLM and DeepSpeed workers write, for the last run's target report.
fn component_notes() -> Vec<(String, Vec<(&'static str, f64)>)> {
    let mut out = Vec::new();
    for (batch, tokens_per_s) in VLLM_BATCHES {
        let call_ns = (batch * 128) as f64 / tokens_per_s * 1e9;
        out.push((
            format!("components/vllm/offline/b{batch}_in128_out128"),
            vec![
                ("tokens_per_s", tokens_per_s),
                ("requests_per_s", tokens_per_s / 128.0),
                ("e2e_p50_ns", 0.96 * call_ns),
                ("e2e_p90_ns", 1.05 * call_ns),
                ("e2e_p99_ns", 1.3 * call_ns),
                ("ttft_p50_ns", 2e7 * batch as f64),
                ("ttft_p99_ns", 3e7 * batch as f64),
            ],
        ));
    }
    let mib = 1_048_576.0;
    for (stage, rest, backward, peak) in ZERO_MEMORY_MIB {
        out.push((
            format!("components/deepspeed/zero_step/stage{stage}_ranks1_d1024_t4096"),
            vec![
                ("zero_stage", stage as f64),
                ("memory_at_rest_bytes", rest * mib),
                ("memory_after_backward_bytes", backward * mib),
                ("peak_memory_bytes", peak * mib),
            ],
        ));
    }
    out
}

/// How run `r` (0-based) moves benchmark `id`: a step for one, the last run's changes.
fn factor(id: &str, r: usize) -> f64 {
    let mut f = 1.0;
    if id == "gemm/cpu/f32/1024x1024x1024" && r >= 9 {
        f *= 1.25;
    }
    if r == RUNS - 1 {
        if id.starts_with("memory_bandwidth/cpu/triad") {
            f *= 0.88;
        }
        if id.starts_with("tensor_ops/cpu/softmax") {
            f *= 1.2;
        }
    }
    // Run-to-run noise of 0.4 % sd, seeded by the id and the run so the fixture is fixed:
    // random, as real runs differ, not periodic (a periodic wobble has steps of its own).
    let seed = id.bytes().fold(r as u64 + 1, |h, b| {
        h.wrapping_mul(31).wrapping_add(b as u64)
    });
    let mut z = [0.0];
    stackbench::workload::random::SeededRng::new(seed).fill_normal(&mut z);
    f * (1.0 + 0.004 * z[0])
}

/// The fixture's real sample sets (per-iteration ns), in a fixed order.
fn real_samples(base: &RunRecord) -> Vec<(Vec<f64>, Vec<f64>)> {
    base.benchmarks
        .iter()
        .filter(|b| b.samples.iters.len() >= 10)
        .map(|b| (b.samples.iters.clone(), b.samples.times.clone()))
        .collect()
}

fn outcomes() -> TargetReport {
    let mut benchmarks = BTreeMap::new();
    let mut add = |id: &str, outcome: BenchmarkOutcome| {
        let parts: Vec<&str> = id.splitn(4, '/').collect();
        benchmarks.insert(
            id.to_string(),
            BenchmarkEntry {
                group: format!("{}/{}", parts[0], parts[1]),
                function: parts[2].into(),
                value: parts[3].into(),
                outcome,
            },
        );
    };
    let notes = |pairs: &[(&str, f64)]| BenchmarkOutcome::Measured {
        notes: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
            .collect(),
    };
    add(
        "components/onnxruntime/mlp_all/b8_s128",
        notes(&[
            ("latency_p50_ns", 2.4e6),
            ("latency_p90_ns", 2.6e6),
            ("latency_p99_ns", 3.3e6),
            ("tokens_per_s", 426_000.0),
        ]),
    );
    add(
        "components/onnxruntime/mlp_basic/b8_s128",
        notes(&[
            ("latency_p50_ns", 3.1e6),
            ("latency_p90_ns", 3.3e6),
            ("latency_p99_ns", 4.0e6),
            ("tokens_per_s", 330_000.0),
        ]),
    );
    add(
        "attention/cpu/flash_causal_f32/b1_h4_s1024_d64",
        notes(&[("peak_memory_bytes", 3.0 * 1048576.0)]),
    );
    add(
        "attention/cpu/standard_causal_f32/b1_h4_s1024_d64",
        notes(&[("peak_memory_bytes", 19.0 * 1048576.0)]),
    );
    add(
        "gemm/cuda/all/all",
        BenchmarkOutcome::Skipped {
            reason: "no CUDA driver (libcuda.so.1 not found)".into(),
        },
    );
    add(
        "gemm/cpu/bf16/512x512x512",
        BenchmarkOutcome::Skipped {
            reason: "bf16 GEMM is not supported by the CPU backend".into(),
        },
    );
    add(
        "components/triton/all/all",
        BenchmarkOutcome::Skipped {
            reason: "triton is not installed in the interpreter".into(),
        },
    );
    // What torch says when no kernel of a pinned SDPA backend takes the inputs (CPU).
    for backend in ["efficient", "cudnn"] {
        add(
            &format!("components/attention/sdpa_{backend}/{SDPA_SHAPE}"),
            BenchmarkOutcome::Skipped {
                reason: "No available kernel. Aborting execution.".into(),
            },
        );
    }
    for (id, pairs) in component_notes() {
        add(&id, notes(&pairs));
    }
    add(
        "tensor_ops/cpu/gelu_f16/256x4096",
        BenchmarkOutcome::Failed {
            error: "result mismatch at index 17: 0.412 vs 0.398 (tolerance 0.002)".into(),
        },
    );
    TargetReport {
        schema: TARGET_REPORT_SCHEMA.into(),
        target: "fixture".into(),
        suite: "quick".into(),
        started_unix_s: 0,
        benchmarks,
        gpu_clocks: None,
        measure: None,
        counted: Default::default(),
        profiles: Default::default(),
    }
}

/// The fixture runs, oldest first.
pub fn fixture_runs() -> Vec<RunRecord> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.8");
    let base = run_from_criterion(&dir, "new", None).expect("the criterion-0.8 fixture reads");
    let samples = real_samples(&base);
    assert!(!samples.is_empty(), "the fixture has sample sets");
    let template = base.benchmarks[0].clone();
    (0..RUNS)
        .map(|r| {
            let mut run = base.clone();
            let ms = FIRST_MS + r as u64 * 86_400_000;
            run.run_id = format!("20261101T000000000Z-fixture-{r}");
            run.created_unix_ms = ms;
            run.timestamp = format_rfc3339_ms(ms);
            run.label = Some(format!("nightly-{}", r + 1));
            run.git_revision = Some(format!("{:040x}", r + 1));
            run.git_dirty = Some(false);
            run.notes.clear();
            run.targets = if r == RUNS - 1 {
                vec![serde_json::to_value(outcomes()).unwrap()]
            } else {
                Vec::new()
            };
            run.benchmarks = suite()
                .into_iter()
                .enumerate()
                .map(|(i, (id, throughput, ns))| {
                    let (iters, times) = &samples[i % samples.len()];
                    let per_iter: Vec<f64> = times.iter().zip(iters).map(|(t, n)| t / n).collect();
                    let scale = ns * factor(&id, r) / stackbench::stats::median(&per_iter);
                    let mut b = template.clone();
                    let parts: Vec<&str> = id.splitn(4, '/').collect();
                    b.group = format!("{}/{}", parts[0], parts[1]);
                    b.function = Some(parts[2].into());
                    b.value = Some(parts[3].into());
                    b.id = id;
                    b.throughput = throughput;
                    b.estimates = None;
                    b.samples.iters = iters.clone();
                    b.samples.times = times.iter().map(|t| t * scale).collect();
                    b
                })
                .collect();
            run.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
            run
        })
        .collect()
}

/// Saves the fixture runs into `dir` through the store, as a recorded history.
pub fn write_fixture_store(dir: &Path) -> RunStore {
    let store = RunStore::new(dir);
    for run in fixture_runs() {
        store.save(&run).expect("saving a fixture run");
    }
    store
}

/// Copies the cross-hardware fixture's run files (tests/fixtures/hardware/runs: three
/// machines) into `dir`/runs, so the store builds its own database there and the
/// checked-in fixture is never written to. Returns the fixture's prices file.
pub fn copy_hardware_runs(dir: &Path) -> std::path::PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hardware");
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).expect("creating runs/");
    for entry in std::fs::read_dir(fixture.join("runs")).expect("the hardware fixture") {
        let path = entry.expect("a fixture entry").path();
        std::fs::copy(&path, runs.join(path.file_name().expect("a file name")))
            .expect("copying a fixture run");
    }
    fixture.join("stackbench.toml")
}

#[path = "../tool_support/mod.rs"]
mod tool_support;
#[allow(unused_imports)] // dashboard_pages draws without a terminal or browser
pub use tool_support::tool_present;
