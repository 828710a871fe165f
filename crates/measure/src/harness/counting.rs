//! Counting mode for `cargo bench`: `STACKBENCH_MEASURE=instructions cargo bench --bench <t>`
//! (and `run_benchmarks.sh` with the variable set) counts instructions instead of timing.
//!
//! The bench target runs in one of two roles. Started by `cargo bench`, it is the *driver*:
//! it walks its ids as a timed run would (suite, filter, backends), prepares nothing, and
//! then runs its own executable under [`InstructionCounter`] once per selected id, which
//! runs Criterion's `--test` mode (one iteration) with Callgrind toggled around `Bencher`.
//! That child is the *counted* role: it sees `--test` and `STACKBENCH_MEASURE=instructions`
//! (the counter sets it), runs its CPU work on the calling thread (the CPU pool inline and
//! GEMM without rayon: Callgrind counts one thread), opens no GPU backend, and writes no
//! system probe or live progress. The driver records each count, or why an id is not
//! countable, in the target report, and `analyze-trends record` carries them into the run.
//!
//! Counts are deterministic, so the ids are counted in parallel over the allowed cores.

use super::args::CriterionArgs;
use super::measure::instructions::{CountError, CriterionVersion, InstructionCounter};
use super::measure::{
    Countability, CountedBenchmark, CountedOutcome, Measure, SINGLE_THREADED_VARIANT,
    UnknownMeasure, measure_from_env, stackbench_countability,
};
use crate::workload::BenchId;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What this bench process does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Criterion times every selected id (the default).
    Timed,
    /// Counting mode's driver: lists the selected ids and counts each under Valgrind.
    CountingDriver,
    /// Run by the counter under Valgrind: one id, one iteration, single-threaded.
    Counted,
}

impl Role {
    /// The role `STACKBENCH_MEASURE` and Criterion's arguments give this process. `--list`
    /// lists as always; `--test` under counting mode is the counted child (a user running
    /// it by hand gets the same single-threaded test run).
    pub fn from_env(args: &CriterionArgs) -> Result<Role, UnknownMeasure> {
        Ok(Self::of(measure_from_env()?, args))
    }

    fn of(measure: Measure, args: &CriterionArgs) -> Role {
        match measure {
            Measure::Time => Role::Timed,
            Measure::Instructions if args.list => Role::Timed,
            Measure::Instructions if args.test => Role::Counted,
            Measure::Instructions => Role::CountingDriver,
        }
    }
}

/// stackbench's own `Cargo.lock`, compiled in: the counter needs the Criterion version the
/// bench executables link, and the library is built with exactly this lock (build.rs finds it:
/// the workspace's in a checkout, the package's own when packaged).
const OWN_CARGO_LOCK: &str = include_str!(concat!(env!("OUT_DIR"), "/Cargo.lock"));

/// One id's result: its counts or why it is not countable, or the error of a count that
/// should have worked (a failed benchmark).
pub type IdCount = Result<CountedOutcome, String>;

/// Counts every id of `ids` in the executable `exe` (this bench target), in parallel.
/// Ids that are not countable are not run. Results come back in the order of `ids`.
pub fn count_ids(exe: &Path, ids: &[BenchId]) -> Vec<IdCount> {
    let counter = CriterionVersion::from_cargo_lock_text(OWN_CARGO_LOCK)
        .map_err(|reason| format!("cannot read the Criterion version of stackbench: {reason}"))
        .and_then(|version| InstructionCounter::new(version).map_err(|e| e.to_string()));
    let counter = match counter {
        Ok(counter) => counter,
        Err(error) => return ids.iter().map(|_| Err(error.clone())).collect(),
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, ids.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<IdCount>>> = Mutex::new(vec![None; ids.len()]);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(id) = ids.get(i) else { break };
                    let full = id.full();
                    let outcome = count_one(&counter, exe, &full);
                    print_outcome(&full, &outcome);
                    results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(outcome);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("the counting worker stopped early".to_owned())))
        .collect()
}

fn count_one(counter: &InstructionCounter, exe: &Path, id: &str) -> IdCount {
    let countability = stackbench_countability(id);
    outcome_of(counter.count_if_countable(exe, id, &countability))
}

/// An id that cannot be counted (by its kind, or because its routine turned out to work on
/// other threads) is `not countable` with the reason; any other error fails the benchmark.
pub fn outcome_of(result: Result<CountedBenchmark, CountError>) -> IdCount {
    match result {
        Ok(result) => Ok(CountedOutcome::Counted {
            result,
            variant: Some(SINGLE_THREADED_VARIANT.to_owned()),
        }),
        Err(CountError::NotCountable { reason, .. }) => Ok(CountedOutcome::NotCountable { reason }),
        Err(CountError::OtherThreads { evidence, .. }) => Ok(CountedOutcome::NotCountable {
            reason: format!(
                "its routine hands work to other threads (Callgrind saw {evidence} while \
                 counting), and only the calling thread's instructions are counted"
            ),
        }),
        Err(error) => Err(error.to_string()),
    }
}

/// Whether an id of this kind is counted at all (GPU and Python-worker ids are not).
pub fn countable(id: &BenchId) -> bool {
    stackbench_countability(&id.full()) == Countability::Countable
}

/// One line per id on stdout, like Criterion's own: the count, or what became of the id.
fn print_outcome(id: &str, outcome: &IdCount) {
    match outcome {
        Ok(CountedOutcome::Counted { result, .. }) => {
            let c = &result.counts;
            println!(
                "{id}\n                        Ir {} instructions, estimated {} cycles \
                 (~{:.0} ns at {:.1} GHz), L1 misses {}, LL misses {} (single-threaded)",
                c.ir,
                result.estimated_cycles,
                result.estimated_time_ns,
                result.cost_model.nominal_clock_hz / 1e9,
                c.l1_misses(),
                c.ll_misses()
            );
        }
        Ok(CountedOutcome::NotCountable { reason }) => println!("{id}: not countable: {reason}"),
        Err(error) => eprintln!("FAILED {id}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::measure::{CallgrindCounts, CostModel};

    #[test]
    fn the_role_follows_the_measure_and_criterions_mode() {
        let time = Measure::Time;
        let count = Measure::Instructions;
        assert_eq!(
            Role::of(time, &CriterionArgs::of(&["--bench"])),
            Role::Timed
        );
        assert_eq!(
            Role::of(time, &CriterionArgs::of(&["--bench", "--test"])),
            Role::Timed
        );
        assert_eq!(
            Role::of(count, &CriterionArgs::of(&["--bench", "triad"])),
            Role::CountingDriver
        );
        // The counter runs `<exe> --bench --test ^id$`.
        assert_eq!(
            Role::of(count, &CriterionArgs::of(&["--bench", "--test", "^a/b$"])),
            Role::Counted
        );
        assert_eq!(
            Role::of(count, &CriterionArgs::of(&["--bench", "--list"])),
            Role::Timed
        );
    }

    #[test]
    fn the_compiled_in_lock_names_a_criterion_the_counter_supports() {
        let version = CriterionVersion::from_cargo_lock_text(OWN_CARGO_LOCK).unwrap();
        assert!(InstructionCounter::new(version).is_ok(), "{version}");
    }

    #[test]
    fn gpu_and_python_ids_are_not_countable_and_never_run() {
        let ids = [
            BenchId::new("gemm", "cuda", "f16", "4096x4096x4096"),
            BenchId::new("memory_bandwidth", "rocm", "triad", "256MiB"),
            BenchId::new("components", "pytorch", "matmul", "1024"),
        ];
        // A path that does not exist: a not-countable id must be decided before any run.
        let outcomes = count_ids(Path::new("/nonexistent/bench"), &ids);
        for (id, outcome) in ids.iter().zip(&outcomes) {
            assert!(!countable(id));
            match outcome {
                Ok(CountedOutcome::NotCountable { reason }) => {
                    assert!(
                        reason.contains("GPU") || reason.contains("Python"),
                        "{reason}"
                    )
                }
                other => panic!("{}: {other:?}", id.full()),
            }
        }
        assert!(countable(&BenchId::new("gemm", "cpu", "f32", "64x64x64")));
    }

    #[test]
    fn the_recorded_status_is_the_one_the_run_record_reads() {
        let not = serde_json::to_value(CountedOutcome::NotCountable {
            reason: "GPU".into(),
        })
        .unwrap();
        assert_eq!(not["status"], crate::sidecar::NOT_COUNTABLE_STATUS);
        let counted = serde_json::to_value(CountedOutcome::Counted {
            result: CountedBenchmark::new("x", CallgrindCounts::default(), CostModel::GUNGRAUN),
            variant: None,
        })
        .unwrap();
        assert_eq!(counted["status"], crate::sidecar::COUNTED_STATUS);
    }

    #[test]
    fn work_on_other_threads_is_not_countable_and_other_errors_fail() {
        let threads = outcome_of(Err(CountError::OtherThreads {
            id: "x".into(),
            evidence: "clone3".into(),
        }));
        assert!(
            matches!(threads, Ok(CountedOutcome::NotCountable { reason }) if reason.contains("clone3"))
        );
        let missing = outcome_of(Err(CountError::BenchExeMissing {
            path: "/b/x".into(),
        }));
        assert!(missing.unwrap_err().contains("/b/x"));
        let counted = outcome_of(Ok(CountedBenchmark::new(
            "x",
            CallgrindCounts {
                ir: 10,
                ..CallgrindCounts::default()
            },
            CostModel::GUNGRAUN,
        )));
        match counted {
            Ok(CountedOutcome::Counted { variant, .. }) => {
                assert!(variant.unwrap().starts_with("single-threaded"))
            }
            other => panic!("{other:?}"),
        }
    }
}
