//! The model sweep's loop (`components::sweep`) against a fake worker
//! (`tests/fixtures/models/models.py`, which reads the real plan): ids, reasoned skips
//! before trying (predicted out of memory, too long, absent device), a crashed cell failing
//! alone with the next cell in a fresh worker, and MFU, through the same [`Recorder`] the
//! component tests use. Needs only a bare `python3`.

mod components_support;

use components_support::{Outcome, Recorder, bare_python, repo_root};
use stackbench::components::RunnerConfig;
use stackbench::components::sweep::{MemoryBudget, Sweep, run_sweep};
use stackbench::system::device_memory::absent_reason;
use stackbench::system::peak::{Peak, PeakMetric};
use stackbench::workload::models::SweepDevice;
use stackbench::workload::models::plan::{RawAxes, SweepAxes, SweepPlan};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A scripts folder with the fake `models.py` and the real protocol helper.
fn scripts(dir: &Path) -> PathBuf {
    let scripts = dir.join("scripts");
    std::fs::create_dir_all(scripts.join("lib")).unwrap();
    std::fs::copy(
        repo_root().join("tests/fixtures/models/models.py"),
        scripts.join("models.py"),
    )
    .unwrap();
    std::fs::copy(
        repo_root().join("scripts/components/lib/stackbench_worker.py"),
        scripts.join("lib/stackbench_worker.py"),
    )
    .unwrap();
    scripts
}

fn strings(items: &[&str]) -> Option<Vec<String>> {
    Some(items.iter().map(|s| s.to_string()).collect())
}

fn plan(raw: RawAxes) -> SweepPlan {
    SweepPlan::from_axes(&SweepAxes::resolve(&raw, SweepDevice::Cpu).unwrap())
}

/// A CPU f32 peak of 1 TFLOP/s: the fake's cells stay far below it.
fn peaks() -> Vec<Peak> {
    vec![Peak {
        backend: stackbench::backend::BackendKind::Cpu,
        device: "test CPU".into(),
        metric: PeakMetric::FlopsPerSecond,
        dtype: Some(stackbench::workload::DType::F32),
        theoretical: Some(1e12),
        measured: None,
        source: "test".into(),
    }]
}

struct Fixture {
    dir: tempfile::TempDir,
    plan_path: PathBuf,
    config: RunnerConfig,
}

fn fixture(plan: &SweepPlan, env: &[(&str, String)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let scripts_dir = scripts(dir.path());
    let plan_path = dir.path().join("plan.json");
    plan.write(&plan_path).unwrap();
    let config = RunnerConfig {
        helpers_dir: scripts_dir.join("lib"),
        scripts_dir,
        setup_timeout: Duration::from_secs(60),
        call_timeout: Duration::from_secs(60),
        ..RunnerConfig::default()
    };
    // The fake reads its knobs from its own environment: the runner passes `env` on.
    let mut config = config;
    config.env = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    Fixture {
        dir,
        plan_path,
        config,
    }
}

fn sweep<'a>(plan: &'a SweepPlan, fixture: &'a Fixture, budget_gib: f64) -> Sweep<'a> {
    Sweep {
        plan,
        plan_path: &fixture.plan_path,
        config: fixture.config.clone(),
        budget: Ok(MemoryBudget {
            bytes: (budget_gib * (1u64 << 30) as f64) as u64,
            source: "test budget".into(),
        }),
        absent: absent_reason(plan.device, Path::new("/")),
        peaks: peaks(),
    }
}

#[test]
fn a_crashed_cell_fails_alone_and_the_next_runs_in_a_fresh_worker() {
    let Some(python) = bare_python() else { return };
    let plan = plan(RawAxes {
        models: strings(&["ci-gpt2", "ci-vit", "gpt2-small"]),
        batch: strings(&["1", "2"]),
        seq: strings(&["16", "2048"]),
        backend: strings(&["torch", "vllm"]),
        ..RawAxes::default()
    });
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("workers.log");
    let fixture = fixture(
        &plan,
        &[
            ("FAKE_MODELS_CRASH", "ci-gpt2-fp32-decode/b1_s16".into()),
            ("FAKE_MODELS_ABSURD", "ci-vit-fp32-forward/b2".into()),
            ("FAKE_MODELS_MISSING", "vllm".into()),
            ("FAKE_MODELS_LOG", log.display().to_string()),
        ],
    );
    let mut recorder = Recorder::new();
    // 0.2 GiB: every ci- cell fits, gpt2-small's 0.46 GiB of float32 weights do not.
    run_sweep(&mut recorder, &Ok(python), &sweep(&plan, &fixture, 0.2));

    let crashed = recorder.failed("models/torch/ci-gpt2-fp32-decode/b1_s16");
    assert!(crashed.contains("exit status: 3"), "{crashed}");
    // The very next cell ran, in a second torch worker.
    let next = recorder.notes("models/torch/ci-gpt2-fp32-decode/b2_s16");
    assert_eq!(next["new_tokens"], 16);
    let workers = std::fs::read_to_string(&log).unwrap();
    let torch_workers = workers.lines().filter(|l| l.ends_with(" torch")).count();
    assert_eq!(torch_workers, 2, "{workers}");

    let prefill = recorder.notes("models/torch/ci-gpt2-fp32-prefill/b1_s16");
    let mfu = prefill["mfu"].as_f64().unwrap();
    assert!(mfu > 0.0 && mfu < 1.0, "{prefill:?}");
    assert_eq!(prefill["size_class"], "tiny");
    assert!(prefill.get("check_after_timing").is_none());
    // An impossible rate is kept as a note that the harness turns into a failure.
    let absurd = recorder.notes("models/torch/ci-vit-fp32-forward/b2");
    assert!(
        absurd["check_after_timing"]
            .as_str()
            .unwrap()
            .contains("exceeds 100 %"),
        "{absurd:?}"
    );

    let oom = recorder.skipped("models/torch/gpt2-small-fp32-prefill/b1_s16");
    assert!(
        oom.starts_with("out of memory (predicted 0.")
            && oom.contains("GiB of 0.2 GiB free on cpu"),
        "{oom}"
    );
    let long = recorder.skipped("models/torch/ci-gpt2-fp32-prefill/b1_s2048");
    assert!(long.contains("exceed ci-gpt2's 1024 positions"), "{long}");
    let missing = recorder.skipped("models/vllm/ci-vit-fp32-forward/b1");
    assert_eq!(missing, "vllm is not installed (fake)");

    // Every cell of every backend has an outcome: 2 backends x the plan's cells.
    assert_eq!(recorder.outcomes.len(), 2 * plan.cells.len());
    let failed = recorder.count(|o| matches!(o, Outcome::Failed(_)));
    assert_eq!(failed, 1, "{:?}", recorder.outcomes);
}

#[test]
fn mps_and_qnn_are_columns_skipped_with_their_reason_here() {
    let Some(python) = bare_python() else { return };
    for device in ["mps", "qnn"] {
        if device == "mps" && cfg!(target_os = "macos") {
            continue;
        }
        let plan = plan(RawAxes {
            models: strings(&["ci-bert"]),
            device: Some(device.into()),
            backend: strings(&["torch", "onnxruntime"]),
            ..RawAxes::default()
        });
        let fixture = fixture(&plan, &[]);
        let mut recorder = Recorder::new();
        run_sweep(
            &mut recorder,
            &Ok(python.clone()),
            &sweep(&plan, &fixture, 1.0),
        );
        assert_eq!(recorder.outcomes.len(), 2);
        for backend in ["torch", "onnxruntime"] {
            let reason =
                recorder.skipped(&format!("models/{backend}/ci-bert-fp32-forward/b1_s128"));
            let name = device.to_uppercase();
            assert!(
                reason.starts_with(&format!("{name} is not present on this machine")),
                "{reason}"
            );
        }
        drop(fixture.dir);
    }
}
