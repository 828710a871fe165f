//! `STACKBENCH_LOCK_CLOCKS` and `analyze-trends gate --lock-clocks`, through the real bench
//! targets and the real gate. What needs no GPU runs everywhere: a CPU-only run asked to
//! lock says once why it could not and records no clocks, saying so; a bad value is bad
//! input; the gate passes the request to both sides. Locking a real GPU and restoring it is
//! the `#[ignore]`d test at the end, run by `ci/gpu_tests.sh`.

mod schema_support;

#[path = "gate_support/repo.rs"]
mod repo;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The quick suite's in-cache CPU triad on this machine (its size follows the L2).
fn bandwidth_id() -> String {
    stackbench::family::memory_bandwidth::cpu_in_cache_triad_id().expect("the CPU backend opens")
}

/// One CPU benchmark of the memory_bandwidth target with `lock` as `STACKBENCH_LOCK_CLOCKS`,
/// timed (a few seconds: the run is recorded after) or in Criterion's `--test` mode.
fn bandwidth_once(criterion: &Path, lock: &str, timed: bool) -> Output {
    Command::new(env!("CARGO"))
        .args(["bench", "--quiet", "--bench", "memory_bandwidth", "--"])
        .args((!timed).then_some("--test"))
        .arg(format!("^{}$", bandwidth_id()))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CRITERION_HOME", criterion)
        .env("STACKBENCH_SUITE", "quick")
        .env("STACKBENCH_LOCK_CLOCKS", lock)
        .output()
        .expect("cargo bench runs")
}

fn on_a_gpu_machine() -> bool {
    Path::new("/dev/nvidiactl").exists() || Path::new("/dev/kfd").exists()
}

#[test]
fn a_cpu_only_run_asked_to_lock_says_why_once_and_records_no_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let out = bandwidth_once(dir.path(), "1", true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let report: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("stackbench/targets/memory_bandwidth.json")).unwrap(),
    )
    .unwrap();
    schema_support::assert_valid("target.schema.json", &report);
    assert_eq!(
        report["benchmarks"][bandwidth_id().as_str()]["outcome"],
        "measured",
        "{report:#}"
    );
    let clocks = &report["gpu_clocks"];
    assert_eq!(clocks["lock_requested"], true, "{clocks:#}");
    // A CPU benchmark: no GPU clocks, and the record says why, on any machine.
    assert!(clocks.get("devices").is_none(), "{clocks:#}");
    assert!(
        clocks["not_recorded"]
            .as_str()
            .unwrap()
            .contains("no GPU benchmark ran"),
        "{clocks:#}"
    );
    if !on_a_gpu_machine() {
        // Said once on stderr, with the reason (no driver here).
        assert_eq!(err.matches("clocks not locked").count(), 1, "{err}");
        assert!(err.contains("clocks not locked: no GPU:"), "{err}");
    }
    // The run record built from this output carries the note.
    let record = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .args(["record", "--criterion-dir"])
        .arg(dir.path())
        .arg("--results")
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    assert!(record.status.success(), "{record:?}");
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("results/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let run: Value = serde_json::from_slice(&std::fs::read(&runs[0]).unwrap()).unwrap();
    schema_support::assert_valid("run.schema.json", &run);
    let notes = run["notes"].to_string();
    assert!(notes.contains("no GPU benchmark ran"), "{notes}");
}

#[test]
fn a_lock_request_that_is_not_yes_or_no_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = bandwidth_once(dir.path(), "please", false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("STACKBENCH_LOCK_CLOCKS=please is not a yes/no value"),
        "{err}"
    );
}

/// A Criterion 0.8 crate whose bench fails unless `STACKBENCH_LOCK_CLOCKS=1` reaches it.
const BENCH: &str = r#"use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn benches(c: &mut Criterion) {
    // The gate's --lock-clocks must reach every bench process of both sides.
    assert_eq!(std::env::var("STACKBENCH_LOCK_CLOCKS").as_deref(), Ok("1"), "no lock request");
    c.bench_function("sum", |b| b.iter(|| (0..black_box(1000u64)).sum::<u64>()));
}

criterion_group!(group, benches);
criterion_main!(group);
"#;

#[test]
fn the_gates_lock_clocks_reaches_both_sides_and_their_runs_say_so() {
    let fixture = repo::probe_repo("lock_probe", repo::EMPTY_LIB, &[("work", BENCH)], "base");
    let repo = &fixture.repo;
    let dir = tempfile::tempdir().unwrap();
    repo::prebuild_current(repo);
    let gate = |lock_clocks: bool| {
        repo::gate_command(env!("CARGO_BIN_EXE_analyze-trends"), repo, dir.path())
            // Both sides on the current checkout: one build of Criterion, shared by both
            // sides and by the second gate.
            .args(["--rounds", "2", "--max-rounds", "2"])
            .args(lock_clocks.then_some("--lock-clocks"))
            .args(["--", "--warm-up-time", "0.1", "--measurement-time", "0.2"])
            .args(["--sample-size", "10"])
            .env_remove("STACKBENCH_LOCK_CLOCKS")
            .output()
            .unwrap()
    };
    // Without the flag the bench's assertion fails on both sides: the probe can tell.
    let unlocked = gate(false);
    assert_ne!(unlocked.status.code(), Some(0), "{unlocked:?}");
    let out = gate(true);
    let err = String::from_utf8_lossy(&out.stderr);
    // With the request the bench's assertion holds on both sides: no failed benchmark.
    repo::assert_judged_without_failures(&out, &dir.path().join("out/comparison.json"));
    if !on_a_gpu_machine() {
        // The gate says it once, at its start; each bench run's own line is in its log.
        assert_eq!(err.matches("clocks not locked").count(), 1, "{err}");
    }
    let runs: Vec<Value> = std::fs::read_dir(dir.path().join("results/runs"))
        .unwrap()
        .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    assert!(runs.len() >= 2, "both sides recorded: {}", runs.len());
    for run in &runs {
        assert_eq!(
            run["environment"]["STACKBENCH_LOCK_CLOCKS"], "1",
            "{:#}",
            run["environment"]
        );
    }
}

/// On a GPU machine (ci/gpu_tests.sh): the device this process's CUDA benchmarks use is
/// locked and restored, or the lock is refused with a reason; never a crash, never a lock
/// left behind. The clocks read back after the restore are the driver's again.
#[test]
#[ignore = "needs an NVIDIA GPU (ci/gpu_tests.sh)"]
fn an_nvidia_gpu_is_locked_and_restored_or_says_why_not() {
    use stackbench::system::clocks::{ClockController, ClockGuard, LockState, nvml::NvmlClocks};
    let nvidia = match NvmlClocks::open_cuda_device() {
        Ok(n) => n,
        Err(why) => {
            assert!(
                !Path::new("/dev/nvidiactl").exists(),
                "a driver, yet: {why}"
            );
            eprintln!("skipped: {why}");
            return;
        }
    };
    let before = nvidia.read().expect("NVML reads the clocks");
    assert!(before.sm_mhz.is_some_and(|m| m > 0), "{before:?}");
    let guard = ClockGuard::start(vec![Box::new(nvidia)], true, "");
    let record = guard.finish(None, true);
    let device = &record.devices[0];
    eprintln!(
        "{}: {:?}, before {:?}, after {:?}",
        device.device, device.lock, device.before, device.after
    );
    match &device.lock {
        LockState::Locked {
            restored,
            restore_error,
            clocks,
        } => {
            assert!(*restored, "not restored: {restore_error:?}");
            assert!(clocks.sm_mhz > 0);
        }
        LockState::NotLocked { reason } => assert!(!reason.is_empty()),
        LockState::NotRequested => panic!("the lock was requested"),
    }
}
