//! Counting mode's core on a real bench executable: a tiny Criterion crate that the test
//! writes into a temporary directory and builds offline from cargo's cache (the Criterion
//! version stackbench itself locks), then counts under Valgrind through
//! `stackbench::harness::measure`. Checks that a count does not move when both cores are
//! busy or when the executable lives at another path (two worktrees of one commit), that the
//! threshold catches 2 % more work and passes the same work, that a routine that never runs
//! through `Bencher` is an error, never a zero count, and that one working on another thread
//! is not countable.
//!
//! Needs `valgrind`: without it the tests are skipped with a message, unless
//! `STACKBENCH_REQUIRE_TOOLS=1` (ci/test.sh sets it, and installs valgrind), which makes a
//! missing valgrind a failure.

use stackbench::harness::measure::instructions::{
    CountError, CriterionVersion, InstructionCounter,
};
use stackbench::harness::measure::verdict::{CountVerdict, CountingRule, JitterTolerance};
use stackbench::harness::measure::{Countability, CountedBenchmark, stackbench_countability};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// `sum/20000` and `sum_again/20000` do the same work through different closures;
/// `sum/20400` does 2 % more. `alloc` allocates in its routine (the heap's layout shifts its
/// count when the executable's path length changes, unless the counter normalises it).
/// `lazy` never calls a `Bencher` method; `threads` does its work on another thread.
const BENCH: &str = r#"use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn sum(n: u64) -> u64 {
    (0..n).fold(0u64, |a, x| a.wrapping_add(black_box(x)))
}

fn benches(c: &mut Criterion) {
    c.bench_function("sum/20000", |b| b.iter(|| sum(black_box(20_000))));
    c.bench_function("sum_again/20000", |b| b.iter(|| black_box(sum(black_box(20_000)))));
    c.bench_function("sum/20400", |b| b.iter(|| sum(black_box(20_400))));
    c.bench_function("alloc", |b| {
        b.iter_batched(|| vec![3u64; 1000], |v| v.iter().sum::<u64>(), BatchSize::SmallInput)
    });
    c.bench_function("lazy", |_b| {});
    c.bench_function("threads", |b| {
        b.iter(|| std::thread::spawn(|| sum(black_box(20_000))).join().unwrap_or(0))
    });
}

criterion_group!(group, benches);
criterion_main!(group);
"#;

#[path = "tool_support/mod.rs"]
mod tool_support;

#[path = "gate_support/repo.rs"]
mod repo;

/// Whether valgrind runs (Debian package `valgrind`); see [`tool_support::tool_present`].
fn valgrind_present() -> bool {
    tool_support::tool_present("valgrind", "--version")
}

struct Fixture {
    _dir: tempfile::TempDir,
    exe: PathBuf,
    criterion: CriterionVersion,
}

/// Builds the probe crate once for all tests, in the target directory the gate tests'
/// fixtures share (cargo's per-test scratch space): Criterion is compiled once for all of
/// them, and a rerun compiles only the probe.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = repo::fixture_dir();
        let crate_dir = dir.path().join("probe");
        let manifest = repo::criterion_manifest("counting_probe", &["work"]);
        let files = [
            ("Cargo.toml", manifest.as_str()),
            ("src/lib.rs", repo::EMPTY_LIB),
            ("benches/work.rs", BENCH),
        ];
        repo::write_crate(&crate_dir, &files);
        let messages = repo::build_in_shared_target(&crate_dir, true);
        let criterion = CriterionVersion::from_cargo_lock(&crate_dir.join("Cargo.lock"))
            .expect("the probe's Criterion version");
        Fixture {
            exe: bench_executable(&messages),
            criterion,
            _dir: dir,
        }
    })
}

/// The `work` bench executable among cargo's JSON messages.
fn bench_executable(messages: &[u8]) -> PathBuf {
    String::from_utf8_lossy(messages)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["target"]["name"] == "work")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo names the work bench executable")
}

fn counter() -> InstructionCounter {
    InstructionCounter::new(fixture().criterion).expect("the locked Criterion is supported")
}

fn count(exe: &Path, id: &str) -> CountedBenchmark {
    counter()
        .count(exe, id)
        .unwrap_or_else(|e| panic!("counting {id}: {e}"))
}

/// Spins a thread per core until dropped.
struct CpuHog {
    stop: &'static AtomicBool,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuHog {
    fn start() -> Self {
        let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cores)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                })
            })
            .collect();
        CpuHog { stop, threads }
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_count_is_the_same_on_a_quiet_and_on_a_busy_machine() {
    if !valgrind_present() {
        return;
    }
    let exe = &fixture().exe;
    let quiet = count(exe, "sum/20000");
    let busy = {
        let _hog = CpuHog::start();
        count(exe, "sum/20000")
    };
    assert!(quiet.counts.ir > 100_000, "{quiet:?}");
    assert_eq!(quiet.counts.ir, busy.counts.ir, "{quiet:?}\n{busy:?}");
    let verdict = CountingRule::default()
        .judge(
            "sum/20000",
            quiet.counts.ir,
            busy.counts.ir,
            JitterTolerance::NONE,
        )
        .expect("a non-zero baseline");
    assert_eq!(verdict, CountVerdict::Identical);
    assert!(quiet.estimated_cycles >= quiet.counts.ir, "{quiet:?}");
    assert!(quiet.estimated_time_ns > 0.0, "{quiet:?}");
}

#[test]
fn an_executable_at_another_path_counts_the_same() {
    if !valgrind_present() {
        return;
    }
    // Unnormalised, these path lengths moved `alloc` by up to 204 instructions (the heap's
    // layout follows argv[0]'s length): the counter runs every executable under one path.
    let elsewhere = tempfile::tempdir().expect("a temporary directory");
    let counts: Vec<(usize, u64)> = [1, 9, 17, 49]
        .into_iter()
        .map(|len| {
            let copy = elsewhere.path().join("w".repeat(len)).join("work");
            std::fs::create_dir_all(copy.parent().expect("a parent")).expect("a directory");
            std::fs::copy(&fixture().exe, &copy).expect("copying the bench executable");
            (len, count(&copy, "alloc").counts.ir)
        })
        .collect();
    assert!(
        counts.iter().all(|&(_, ir)| ir == counts[0].1),
        "{counts:?}"
    );
}

#[test]
fn two_percent_more_work_is_caught_and_the_same_work_is_not() {
    if !valgrind_present() {
        return;
    }
    let exe = &fixture().exe;
    let base = count(exe, "sum/20000").counts.ir;
    let same = count(exe, "sum_again/20000").counts.ir;
    let more = count(exe, "sum/20400").counts.ir;
    let rule = CountingRule::default();
    let verdict_same = rule
        .judge("sum", base, same, JitterTolerance::NONE)
        .expect("a non-zero baseline");
    assert!(!verdict_same.fails(), "{verdict_same:?}: {base} -> {same}");
    assert!(verdict_same.change().abs() < 0.001, "{verdict_same:?}");
    let verdict_more = rule
        .judge("sum", base, more, JitterTolerance::NONE)
        .expect("a non-zero baseline");
    assert!(
        matches!(verdict_more, CountVerdict::Regressed { change } if change > 0.015),
        "{verdict_more:?}: {base} -> {more}"
    );
}

#[test]
fn a_routine_that_never_calls_the_bencher_is_an_error_not_zero() {
    if !valgrind_present() {
        return;
    }
    let error = counter()
        .count(&fixture().exe, "lazy")
        .expect_err("nothing can be counted");
    assert!(
        matches!(&error, CountError::NothingCounted { id, .. } if id == "lazy"),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains(
            "nothing was counted for lazy: the routine did not run through Criterion's Bencher"
        ),
        "{message}"
    );
}

#[test]
fn a_routine_that_works_on_another_thread_is_not_countable() {
    if !valgrind_present() {
        return;
    }
    // Callgrind counts only the calling thread: this routine would count as its thread's
    // start and join (about 6 300 instructions), whatever work the thread does.
    let error = counter()
        .count(&fixture().exe, "threads")
        .expect_err("other threads' work cannot be counted");
    assert!(
        matches!(&error, CountError::OtherThreads { id, .. } if id == "threads"),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("threads is not countable"),
        "{error}"
    );
}

#[test]
fn an_id_the_executable_lacks_is_named() {
    if !valgrind_present() {
        return;
    }
    let error = counter()
        .count(&fixture().exe, "sum/2")
        .expect_err("no such benchmark")
        .to_string();
    assert!(error.contains("no benchmark with the id sum/2"), "{error}");
}

#[test]
fn gpu_and_python_worker_ids_are_not_countable_and_never_run() {
    // No valgrind and no executable needed: a not-countable id is refused before anything runs.
    let counter =
        InstructionCounter::new("0.8.2".parse().expect("a version")).expect("0.8 is supported");
    for id in ["gemm/cuda/f16/4096", "components/pytorch/matmul/1024"] {
        let countability = stackbench_countability(id);
        assert!(
            matches!(countability, Countability::NotCountable { .. }),
            "{id}"
        );
        let error = counter
            .count_if_countable(Path::new("/nonexistent/bench"), id, &countability)
            .expect_err("not countable")
            .to_string();
        assert!(error.contains(&format!("{id} is not countable")), "{error}");
    }
}
