//! A family defined only here goes through everything a native one does: registered with
//! the harness the way a bench target registers its family (`stackbench_measure::run`), it
//! is listed by Criterion's `--list`, run (measured where its backend can, skipped with its
//! reason where not, its outcomes in the sidecar target report) and reported (recorded by
//! `analyze-trends record` into a run with its throughput). If this test needs anything
//! beyond the family below, adding a family costs more than docs/ARCHITECTURE.md ("Adding a family") says.
//!
//! `harness = false`: this executable is the family's bench target as well as the test.
//! Started with [`AS_BENCH`] set, `main` is exactly what a bench target's `main` is and
//! Criterion reads its argv; otherwise it runs the checks, which start this same executable
//! as that bench target.

use criterion::Throughput;
use stackbench::backend::{Backend, BackendError, BackendKind, Peer, TimedWorkload};
use stackbench::family::{BenchFamily, Case};
use stackbench::workload::family::{Family, Label, RunsOn, SizeAxis};
use stackbench::workload::ids::format_bytes_id;
use stackbench::workload::{BenchId, Suite};
use std::path::Path;
use std::process::{Command, ExitCode, Output};
use std::time::{Duration, Instant};

#[allow(dead_code)]
mod bench_support;

/// Set in the child: run as the family's bench target.
const AS_BENCH: &str = "STACKBENCH_TEST_FAMILY_AS_BENCH";

/// The family's descriptor, as the model's table would hold it.
static FILL_FAMILY: Family = Family {
    name: "fill_test",
    runs_on: RunsOn::Backend,
    size: SizeAxis::Bytes,
    label: Label::Fixed("fill"),
};

/// Fills a buffer with one byte value: bytes written per call, checked by reading it back.
struct Fill;

const SIZES: &[usize] = &[4 << 10, 64 << 10];

impl BenchFamily for Fill {
    fn family(&self) -> &'static Family {
        &FILL_FAMILY
    }

    fn cases<'b>(&self, backend: &'b dyn Backend, _suite: Suite) -> Vec<Case<'b>> {
        let id = |bytes| {
            BenchId::new(
                FILL_FAMILY.name,
                backend.kind().id(),
                "u8",
                format_bytes_id(bytes),
            )
        };
        // A short sampling: this test times a memset, not a machine.
        let sampling = stackbench::backend::SamplingProfile {
            sample_size: 10,
            warm_up: Duration::from_millis(20),
            measurement: Duration::from_millis(60),
        };
        let mut cases: Vec<Case<'b>> = SIZES
            .iter()
            .map(|&bytes| match backend.peer() {
                Peer::Cpu(_) => Case::measure(
                    id(bytes),
                    Throughput::Bytes(bytes as u64),
                    sampling,
                    move || Ok(Box::new(FillWorkload::new(bytes)) as Box<dyn TimedWorkload>),
                ),
                Peer::Gpu(_) => Case::skip(id(bytes), "fill_test runs on the CPU only"),
            })
            .collect();
        // An invalid combination, skipped with its reason on every backend.
        cases.push(Case::skip(
            BenchId::new(FILL_FAMILY.name, backend.kind().id(), "u4", "4KiB"),
            "no 4-bit fill",
        ));
        cases
    }
}

struct FillWorkload {
    buffer: Vec<u8>,
    value: u8,
}

impl FillWorkload {
    fn new(bytes: usize) -> FillWorkload {
        FillWorkload {
            buffer: vec![0; bytes],
            value: 0,
        }
    }
}

impl TimedWorkload for FillWorkload {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.value = 0x5a;
        self.buffer.fill(self.value);
        match self.buffer.iter().position(|&b| b != self.value) {
            None => Ok(()),
            Some(at) => Err(BackendError::Mismatch {
                benchmark: "fill_test".into(),
                detail: format!("byte {at} is {} after filling", self.buffer[at]),
            }),
        }
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        let start = Instant::now();
        for i in 0..iters {
            self.buffer.fill(i as u8);
            std::hint::black_box(&mut self.buffer);
        }
        Ok(start.elapsed())
    }
}

/// This executable as the family's bench target, with Criterion's `args`.
fn bench(criterion: &Path, args: &[&str]) -> Output {
    Command::new(std::env::current_exe().expect("this test's executable"))
        .args(args)
        .env(AS_BENCH, "1")
        .env("CRITERION_HOME", criterion)
        .env_remove("STACKBENCH_SUITE")
        .env_remove("STACKBENCH_FAIL_ID")
        .env_remove("STACKBENCH_MEASURE")
        .env_remove("STACKBENCH_PROFILE")
        .output()
        .expect("starting this executable as the bench target")
}

fn listed_run_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let criterion = dir.path().join("criterion");
    let cpu_ids = ["fill_test/cpu/u8/4KiB", "fill_test/cpu/u8/64KiB"];

    // Listed: Criterion prints each id it would run; the skip is named on stderr.
    let list = bench(&criterion, &["--bench", "--list"]);
    let text = bench_support::output_text(&list);
    assert!(list.status.success(), "{text}");
    let stdout = String::from_utf8_lossy(&list.stdout);
    for id in cpu_ids {
        assert!(stdout.contains(&format!("{id}: benchmark")), "{text}");
    }
    assert!(
        text.contains("skipped fill_test/cpu/u4/4KiB: no 4-bit fill"),
        "{text}"
    );

    // Run: measured on the CPU, the invalid combination skipped, each backend this machine
    // lacks skipped with its reason; all in the target's record.
    let ran = bench(&criterion, &["--bench"]);
    let text = bench_support::output_text(&ran);
    assert!(ran.status.success(), "{text}");
    let report_path = criterion.join("stackbench/targets/fill_test.json");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).expect("the target report"))
            .unwrap_or_else(|e| panic!("{}: {e}", report_path.display()));
    assert_eq!(report["target"], "fill_test");
    let benchmarks = &report["benchmarks"];
    for id in cpu_ids {
        assert_eq!(benchmarks[id]["outcome"], "measured", "{id}: {report:#}");
    }
    assert_eq!(
        benchmarks["fill_test/cpu/u4/4KiB"]["outcome"], "skipped",
        "{report:#}"
    );
    let (backends, _) = stackbench::backend::open_available();
    for kind in [BackendKind::Cuda, BackendKind::Rocm] {
        if !backends.iter().any(|b| b.kind() == kind) {
            let whole = format!("fill_test/{kind}/all/all");
            assert_eq!(benchmarks[&whole]["outcome"], "skipped", "{report:#}");
        }
    }

    // Reported: `record` turns the target's output into a run holding the measured ids with
    // their throughput, and the harness's outcomes with the skips' reasons.
    let results = dir.path().join("results");
    let recorded = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .args(["record", "--criterion-dir"])
        .arg(&criterion)
        .arg("--results")
        .arg(&results)
        .env_remove("CRITERION_HOME")
        .current_dir(dir.path())
        .output()
        .expect("running analyze-trends record");
    let text = bench_support::output_text(&recorded);
    assert_eq!(recorded.status.code(), Some(0), "{text}");
    let runs: Vec<_> = std::fs::read_dir(results.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&runs[0]).unwrap()).unwrap();
    let recorded_ids: Vec<&str> = run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["id"].as_str())
        .collect();
    for id in cpu_ids {
        assert!(recorded_ids.contains(&id), "{id} not in {recorded_ids:?}");
    }
    let small = run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == cpu_ids[0])
        .unwrap();
    assert_eq!(small["throughput"]["Bytes"], 4096, "{small:#}");
    // The harness outcomes travel with the run (the target's report), so every view can
    // say what was skipped and why.
    let target = run["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["target"] == "fill_test")
        .unwrap_or_else(|| panic!("no fill_test target in the run: {:#}", run["targets"]));
    let skip = &target["benchmarks"]["fill_test/cpu/u4/4KiB"];
    assert_eq!(skip["outcome"], "skipped", "{target:#}");
    assert_eq!(skip["reason"], "no 4-bit fill", "{target:#}");
}

fn main() -> ExitCode {
    if std::env::var_os(AS_BENCH).is_some() {
        // What a bench target's whole `main` is.
        return stackbench_measure::run(&Fill);
    }
    eprintln!("a family defined in a test is listed, run and reported ...");
    listed_run_and_reported();
    eprintln!("ok");
    ExitCode::SUCCESS
}
