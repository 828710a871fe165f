//! stackbench's own CPU benches in counting mode, through the real bench executables:
//! `STACKBENCH_MEASURE=instructions` makes a bench target count each selected id under
//! Valgrind (one child per id, single-threaded), record the counts in its target report,
//! and `analyze-trends record` keep them in the run. Before the CPU pool and the GEMM's rayon
//! ran on the calling thread in counting mode, the counter refused these ids ("work on other
//! threads"): the first test fails then.
//!
//! The bench executables are built in the bench profile (`cargo bench --no-run`, which
//! ci/test.sh runs before the tests, so here it only finds them). Needs `valgrind`: skipped
//! with a message without it, a failure under `STACKBENCH_REQUIRE_TOOLS=1`.

use stackbench::harness::measure::verdict::{
    AaOutcome, CountVerdict, CountingRule, JitterTolerance,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "tool_support/mod.rs"]
mod tool_support;

#[path = "schema_support/mod.rs"]
mod schema_support;

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::{bench_executable, output_text};

const ANALYZER: &str = env!("CARGO_BIN_EXE_analyze-trends");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The bench executable run as `cargo bench` runs it, in the quick suite, writing into
/// `criterion_home`, with the measure `measure`.
fn bench(exe: &Path, criterion_home: &Path, measure: &str, args: &[&str]) -> Output {
    Command::new(exe)
        .arg("--bench")
        .args(args)
        .current_dir(repo())
        .env("STACKBENCH_SUITE", "quick")
        .env("STACKBENCH_MEASURE", measure)
        .env("CRITERION_HOME", criterion_home)
        .env_remove("STACKBENCH_PROGRESS")
        .env_remove("STACKBENCH_CONFIG")
        .output()
        .expect("running the bench executable")
}

/// The first id `--list` prints that starts with `prefix` (the quick suite lists sizes
/// smallest first, so this is the cheapest to count).
fn first_listed(exe: &Path, scratch: &Path, prefix: &str) -> String {
    let listing = bench(exe, scratch, "instructions", &["--list"]);
    assert!(listing.status.success(), "{}", output_text(&listing));
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": benchmark"))
        .find(|id| id.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}… id listed:\n{}", output_text(&listing)))
        .to_owned()
}

fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn target_report(criterion_home: &Path, target: &str) -> serde_json::Value {
    read_json(&criterion_home.join(format!("stackbench/targets/{target}.json")))
}

/// Counts `id` of `exe` once in counting mode and returns its `Ir`, checking what the
/// target report says about it.
fn count_once(exe: &Path, target: &str, id: &str, criterion_home: &Path) -> u64 {
    let filter = format!("^{}$", regex::escape(id));
    let run = bench(exe, criterion_home, "instructions", &[&filter]);
    assert!(run.status.success(), "{}", output_text(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains(id) && stdout.contains("Ir "),
        "{}",
        output_text(&run)
    );
    let report = target_report(criterion_home, target);
    schema_support::assert_valid("target.schema.json", &report);
    assert_eq!(report["measure"], "instructions", "{report:#}");
    let entry = &report["counted"][id];
    assert_eq!(entry["status"], "counted", "{id}: {report:#}");
    let variant = entry["variant"].as_str().unwrap_or_default();
    assert!(variant.starts_with("single-threaded"), "{entry:#}");
    assert_eq!(
        report["benchmarks"].get(id),
        None,
        "a counted id is not also a timed outcome: {report:#}"
    );
    entry["result"]["counts"]["ir"]
        .as_u64()
        .filter(|&ir| ir > 0)
        .unwrap_or_else(|| panic!("{id}: no instruction count in {entry:#}"))
}

/// The most two counts of the same id may differ by, as a fraction of the count: 1 in
/// 100 000. The memory_bandwidth copy has counted identically on every runner. The GEMM
/// (40 M instructions) has too on this project's machines, but differed once on CI, where
/// the log kept no numbers. What a clean-clone runner can still vary inside Criterion's
/// `iter` is a handful of instructions (a clock read that retries, an allocator path), which
/// is what the gate's perturbed A/A count measures per id; a real change in the routine (one
/// more k-step of the micro-kernel for one block) is far more than 400 instructions.
const SAME_CODE_SLACK: f64 = 1e-5;

/// Counts `prefix`'s cheapest id of `target` twice: the counts must agree within
/// [`SAME_CODE_SLACK`] (`exact` demands identical), printed either way so a runner's log
/// shows the figures. Returns the id and the second run's Criterion dir.
fn counted_twice(target: &str, prefix: &str, dir: &Path, exact: bool) -> (String, PathBuf) {
    let exe = bench_executable(target);
    let id = first_listed(&exe, &dir.join("list"), prefix);
    let first = count_once(&exe, target, &id, &dir.join("first"));
    let second_home = dir.join("second");
    let second = count_once(&exe, target, &id, &second_home);
    eprintln!("{id}: counted {first} then {second} instructions");
    let rule = CountingRule::default();
    let verdict = rule
        .judge(&id, first, second, JitterTolerance::NONE)
        .expect("a non-zero count");
    if verdict != CountVerdict::Identical {
        assert!(!exact, "{id}: {first} then {second} instructions");
        let apart = first.abs_diff(second) as f64 / first as f64;
        assert!(
            apart <= SAME_CODE_SLACK,
            "{id}: {first} then {second} instructions, {:.4} % apart (at most {:.4} %)",
            apart * 100.0,
            SAME_CODE_SLACK * 100.0
        );
        // What the gate's own A/A calibration makes of such a pair: still countable, with a
        // tolerance that covers it.
        let AaOutcome::Countable(tolerance) = rule.calibrate(first, second) else {
            panic!("{id}: {first} then {second}: the gate would time it instead");
        };
        assert!(matches!(
            rule.judge(&id, first, second, tolerance),
            Ok(CountVerdict::WithinJitter { .. })
        ));
    }
    (id, second_home)
}

#[test]
fn a_memory_bandwidth_id_is_counted_twice_alike_and_recorded_as_single_threaded() {
    if !tool_support::tool_present("valgrind", "--version") {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (id, criterion_home) = counted_twice(
        "memory_bandwidth",
        "memory_bandwidth/cpu/copy/",
        dir.path(),
        true,
    );

    // The counts reach the run record, which names the single-threaded variant.
    let results = dir.path().join("results");
    let record = Command::new(ANALYZER)
        .arg("record")
        .arg("--criterion-dir")
        .arg(&criterion_home)
        .arg("--results")
        .arg(&results)
        .current_dir(dir.path())
        .output()
        .expect("running analyze-trends");
    assert!(record.status.success(), "{}", output_text(&record));
    assert!(
        String::from_utf8_lossy(&record.stdout).contains("1 benchmarks counted"),
        "{}",
        output_text(&record)
    );
    let runs: Vec<PathBuf> = std::fs::read_dir(results.join("runs"))
        .expect("the runs directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = read_json(&runs[0]);
    schema_support::assert_valid("run.schema.json", &run);
    let counted = &run["counted"][id.as_str()];
    assert_eq!(counted["status"], "counted", "{run:#}");
    assert!(
        counted["variant"]
            .as_str()
            .is_some_and(|v| v.starts_with("single-threaded")),
        "{counted:#}"
    );
    assert!(counted["result"]["estimated_cycles"].as_u64() > Some(0));
}

#[test]
fn a_gemm_id_through_rayon_is_counted_twice_alike() {
    if !tool_support::tool_present("valgrind", "--version") {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    counted_twice("gemm", "gemm/cpu/f32/", dir.path(), false);
}

/// A fake `pytorch` worker (the fixtures' summing component under that name) in a scripts
/// folder of its own, with the real worker helpers beside it.
fn fake_pytorch_scripts(dir: &Path) -> PathBuf {
    let scripts = dir.join("scripts");
    std::fs::create_dir_all(&scripts).expect("a scripts folder");
    let fixtures = repo().join("tests/fixtures/components");
    std::fs::copy(
        fixtures.join("fake_common.py"),
        scripts.join("fake_common.py"),
    )
    .expect("copying the fake component");
    std::fs::write(
        scripts.join("pytorch.py"),
        "from stackbench_worker import main\nfrom fake_common import FakeComponent\n\n\n\
         class Fake(FakeComponent):\n    name = \"pytorch\"\n\n\n\
         if __name__ == \"__main__\":\n    main(Fake)\n",
    )
    .expect("writing the fake worker");
    std::os::unix::fs::symlink(repo().join("scripts/components/lib"), scripts.join("lib"))
        .expect("linking the worker helpers");
    scripts
}

#[test]
fn python_worker_ids_are_recorded_not_countable_and_never_counted() {
    if !tool_support::tool_present("python3", "--version") {
        return;
    }
    // STACKBENCH_PYTHON takes a path.
    let python = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("python3"))
        .find(|candidate| candidate.is_file())
        .expect("python3 runs, so it is on PATH");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let scripts = fake_pytorch_scripts(dir.path());
    let criterion_home = dir.path().join("criterion");
    let exe = bench_executable("components");
    // No valgrind needed: a Python-worker id is decided before anything runs under it.
    let run = Command::new(&exe)
        .arg("--bench")
        .current_dir(repo())
        .env("STACKBENCH_MEASURE", "instructions")
        .env("STACKBENCH_SUITE", "quick")
        .env("STACKBENCH_COMPONENTS", "pytorch")
        .env("STACKBENCH_COMPONENT_SCRIPTS", &scripts)
        .env("STACKBENCH_PYTHON", &python)
        .env("CRITERION_HOME", &criterion_home)
        .env_remove("STACKBENCH_PROGRESS")
        .env_remove("STACKBENCH_CONFIG")
        .output()
        .expect("running the components bench");
    assert!(run.status.success(), "{}", output_text(&run));
    let report = target_report(&criterion_home, "components");
    schema_support::assert_valid("target.schema.json", &report);
    let counted = report["counted"].as_object().expect("counted ids");
    assert!(!counted.is_empty(), "{report:#}");
    for (id, entry) in counted {
        assert!(id.starts_with("components/pytorch/"), "{id}");
        assert_eq!(entry["status"], "not_countable", "{id}: {entry:#}");
        let reason = entry["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("Python worker"), "{id}: {reason}");
    }
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("not countable"),
        "{}",
        output_text(&run)
    );
    // Nothing was timed either: Criterion wrote no samples for them.
    assert!(
        !criterion_home.join("components").exists(),
        "a not-countable id must not be timed in counting mode"
    );
}
