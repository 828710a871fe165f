//! The loop every bench target runs, so the targets in `benches/` stay thin: read the
//! suite, mirror Criterion's filter, prepare and check each workload once, time it through
//! `iter_custom`, and record what was skipped or failed beside Criterion's output.
//!
//! One broken benchmark never takes down the rest: a failure is printed, recorded in the
//! sidecar and turned into a non-zero exit only after every other benchmark has run.

pub mod args;
pub mod sidecar;

use crate::backend::{BackendError, SamplingProfile, TimedWorkload};
use crate::workload::{BenchId, Suite};
use args::CriterionArgs;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use sidecar::{BenchmarkOutcome, TargetReport};
use std::cell::RefCell;
use std::process::ExitCode;
use std::time::Duration;

/// Benchmarks whose id matches this regex fail without running (for testing failure paths).
pub const FAIL_ID_ENV: &str = "STACKBENCH_FAIL_ID";

/// One bench target's run: its suite, Criterion's parsed flags, and what happened.
pub struct Harness {
    suite: Suite,
    /// Ids matching `STACKBENCH_FAIL_ID` fail on purpose: how the tests prove that one
    /// failing benchmark is reported while the rest of the run goes on.
    injected_failure: Option<regex::Regex>,
    args: CriterionArgs,
    report: TargetReport,
    criterion: Criterion,
    /// Whether any benchmark id of this target passed Criterion's filter: an `--exact` id
    /// that exists only in the other suite would otherwise run nothing, silently.
    matched_any: bool,
}

impl Harness {
    /// Starts a bench target. An unknown suite is a usage error: it prints why and exits 2
    /// before anything runs.
    pub fn start(target: &str) -> Harness {
        let suite = match Suite::from_env() {
            Ok(suite) => suite,
            Err(message) => {
                eprintln!("stackbench {target}: {message}");
                std::process::exit(2);
            }
        };
        let args = CriterionArgs::from_env();
        let report = TargetReport::new(target, suite);
        if !args.list {
            sidecar::write_system_probe();
        }
        let injected_failure = match std::env::var(FAIL_ID_ENV) {
            Ok(pattern) if !pattern.is_empty() => match regex::Regex::new(&pattern) {
                Ok(re) => Some(re),
                Err(error) => {
                    eprintln!("stackbench {target}: {FAIL_ID_ENV} is not a valid regex: {error}");
                    std::process::exit(2);
                }
            },
            _ => None,
        };
        let criterion = Criterion::default().configure_from_args();
        Harness {
            suite,
            injected_failure,
            args,
            report,
            criterion,
            matched_any: false,
        }
    }

    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// True when Criterion will run `id` (its filter, `--exact`, `--ignored`).
    pub fn selected(&mut self, id: &BenchId) -> bool {
        let selected = self.args.matches(&id.full());
        self.matched_any |= selected;
        selected
    }

    /// Opens every backend available here; each one that is not is recorded as skipped for
    /// this family (`<family>/<backend>/all/all`) with its reason, whatever the filter: a
    /// filtered run must still say why a whole backend did not run.
    pub fn open_backends(&mut self, family: &str) -> Vec<Box<dyn crate::backend::Backend>> {
        let (backends, unavailable) = crate::backend::open_available();
        for (kind, reason) in unavailable {
            let id = BenchId::new(family, kind.id(), "all", "all");
            eprintln!("skipped {}: {reason}", id.full());
            if !self.args.list {
                self.report
                    .record(&id, BenchmarkOutcome::Skipped { reason });
            }
        }
        backends
    }

    /// Records that `id` cannot run here and why; it is printed and kept in the run.
    pub fn skip(&mut self, id: &BenchId, reason: impl Into<String>) {
        let reason = reason.into();
        if !self.selected(id) {
            return;
        }
        // Listed on stderr in --list mode: stdout stays Criterion's own format, and a
        // caller can still see that the id exists and why it will not run.
        eprintln!("skipped {}: {reason}", id.full());
        if self.args.list {
            return;
        }
        self.report.record(id, BenchmarkOutcome::Skipped { reason });
    }

    /// Prepares, checks and times one benchmark. `prepare` runs only when Criterion would
    /// run the id, so a filter never pays for allocating what it excludes.
    pub fn bench<'w>(
        &mut self,
        id: &BenchId,
        throughput: Throughput,
        sampling: SamplingProfile,
        prepare: impl FnOnce() -> Result<Box<dyn TimedWorkload + 'w>, BackendError>,
    ) {
        if self.args.list {
            // Criterion prints the id; nothing is prepared or run.
            let mut group = self.criterion.benchmark_group(&id.group);
            group.bench_function(BenchmarkId::new(&id.function, &id.value), |b| b.iter(|| ()));
            group.finish();
            return;
        }
        if !self.selected(id) {
            return;
        }
        if self
            .injected_failure
            .as_ref()
            .is_some_and(|re| re.is_match(&id.full()))
        {
            let error = BackendError::Mismatch {
                benchmark: id.full(),
                detail: format!("failure injected through {FAIL_ID_ENV}"),
            };
            return self.record_error(id, error);
        }
        let mut workload = match prepare().and_then(|mut w| w.verify().map(|()| w)) {
            Ok(workload) => workload,
            Err(error) => return self.record_error(id, error),
        };
        // One timed call sizes the window: long calls (a 4096³ f64 GEMM takes seconds)
        // get room for every requested sample instead of Criterion's "unable to complete"
        // warning and a silently shorter run.
        let one_call = match workload.run(1) {
            Ok(duration) => duration,
            Err(error) => return self.record_error(id, error),
        };
        let measurement = sampling
            .measurement
            .max(one_call.mul_f64(sampling.sample_size as f64 * 1.2));
        // A call that fails partway reports the host time it took, never a placeholder: a
        // 1 ns sample would read as a huge improvement. The sidecar marks the id failed, and
        // `record` keeps no samples of a failed benchmark.
        let failure: RefCell<Option<(BackendError, Duration)>> = RefCell::new(None);
        {
            let mut group = self.criterion.benchmark_group(&id.group);
            group
                .throughput(throughput)
                .sample_size(sampling.sample_size)
                .warm_up_time(sampling.warm_up)
                .measurement_time(measurement)
                // Flat sampling: every sample runs the same iteration count, which suits
                // long GPU and GEMM calls (linear sampling would run 55x the sample size).
                .sampling_mode(SamplingMode::Flat);
            group.bench_function(BenchmarkId::new(&id.function, &id.value), |b| {
                b.iter_custom(|iters| {
                    if let Some((_, took)) = failure.borrow().as_ref() {
                        return *took;
                    }
                    let started = std::time::Instant::now();
                    workload.run(iters).unwrap_or_else(|error| {
                        let took = started.elapsed().max(Duration::from_nanos(1));
                        *failure.borrow_mut() = Some((error, took));
                        took
                    })
                })
            });
            group.finish();
        }
        match failure.into_inner() {
            // The samples Criterion kept for this id are meaningless: the record says so.
            Some((error, _)) => self.record_error(id, error),
            None => {
                let notes = workload.notes();
                self.report.record(id, BenchmarkOutcome::Measured { notes });
            }
        }
    }

    fn record_error(&mut self, id: &BenchId, error: BackendError) {
        let outcome = if error.is_skip() {
            eprintln!("skipped {}: {error}", id.full());
            BenchmarkOutcome::Skipped {
                reason: error.to_string(),
            }
        } else {
            eprintln!("FAILED {}: {error}", id.full());
            BenchmarkOutcome::Failed {
                error: error.to_string(),
            }
        };
        self.report.record(id, outcome);
    }

    /// Writes the target's record and Criterion's summaries; exits non-zero if any
    /// benchmark failed, after every other one has run.
    pub fn finish(self) -> ExitCode {
        self.criterion.final_summary();
        if self.args.list {
            return ExitCode::SUCCESS;
        }
        if let (false, true, Some(id)) = (self.matched_any, self.args.exact, &self.args.filter) {
            eprintln!(
                "stackbench {}: --exact `{id}` matches no benchmark of the {} suite; it may exist only in another suite (STACKBENCH_SUITE=full runs every id)",
                self.report.target, self.suite
            );
        }
        let (skipped, failed) = self.report.counts();
        if let Err(error) = self.report.save() {
            eprintln!(
                "stackbench {}: could not save its record: {error}",
                self.report.target
            );
            return ExitCode::FAILURE;
        }
        if skipped + failed > 0 {
            eprintln!(
                "stackbench {}: {skipped} skipped, {failed} failed (details above and in {})",
                self.report.target,
                sidecar::target_report_path(&self.report.target).display()
            );
        }
        if failed > 0 {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }
}
