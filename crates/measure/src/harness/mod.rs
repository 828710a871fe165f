//! The loop every bench target runs, so the targets in `benches/` stay thin: read the
//! suite, mirror Criterion's filter, prepare and check each workload once, time it through
//! `iter_custom`, and record what was skipped or failed beside Criterion's output.
//!
//! One broken benchmark never takes down the rest: a failure is printed, recorded in the
//! sidecar and turned into a non-zero exit only after every other benchmark has run.

pub mod args;
pub mod cargo_messages;
pub mod counting;
pub mod measure;
pub mod profile;

use crate::sidecar::progress as live;

use crate::backend::{BackendError, SamplingProfile, TimedWorkload};
use crate::config::{Config, ResolvedSuite};
use crate::family::{BenchFamily, Plan};
use crate::sidecar::{self, BenchmarkOutcome, TELEMETRY_NOTE, TargetReport};
use crate::system::clocks::{self, ClockGuard, LOCK_CLOCKS_ENV, lock_requested};
use crate::system::telemetry::sampler::{Sampler, Target};
use crate::workload::{BenchId, Suite};
use args::CriterionArgs;
use counting::Role;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use std::cell::RefCell;
use std::process::ExitCode;
use std::time::Duration;

/// Which telemetry source a benchmark's device has: the id's backend, or for components
/// the device their worker reported.
fn telemetry_target(id: &BenchId, workload: &dyn TimedWorkload) -> Target {
    let backend = id.group.split('/').nth(1).unwrap_or("cpu");
    let device = match backend {
        "cpu" | "cuda" | "rocm" => backend.to_owned(),
        _ => workload
            .notes()
            .get("device")
            .and_then(|d| d.as_str())
            .unwrap_or("cpu")
            .to_owned(),
    };
    match device.as_str() {
        "cuda" => Target::NvidiaGpu,
        "rocm" => Target::AmdGpu,
        _ => Target::Cpu,
    }
}

/// The note a workload leaves when it re-checks its answer after timing: `passed`, or what
/// was wrong. Anything but `passed` fails the benchmark: its samples timed a wrong answer.
pub const CHECK_AFTER_TIMING_NOTE: &str = "check_after_timing";

/// Why the correctness check after timing failed, from a measured workload's notes; `None`
/// when it passed or the workload keeps no such check.
pub fn failed_check_after_timing(
    notes: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Option<String> {
    match notes.get(CHECK_AFTER_TIMING_NOTE)? {
        serde_json::Value::String(s) if s == "passed" => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(format!("unreadable check result {other}")),
    }
}

/// Benchmarks whose id matches this regex fail without running (for testing failure paths).
pub const FAIL_ID_ENV: &str = "STACKBENCH_FAIL_ID";

/// One bench target's run: its suite, Criterion's parsed flags, and what happened.
pub struct Harness {
    suite: Suite,
    /// The named suite `STACKBENCH_SUITE` picked (built-in or from `stackbench.toml`):
    /// which ids it keeps and the sampling it imposes.
    plan: ResolvedSuite,
    config: Config,
    /// Ids matching `STACKBENCH_FAIL_ID` fail on purpose: how the tests prove that one
    /// failing benchmark is reported while the rest of the run goes on.
    injected_failure: Option<regex::Regex>,
    args: CriterionArgs,
    report: TargetReport,
    criterion: Criterion,
    /// Whether any benchmark id of this target passed Criterion's filter: an `--exact` id
    /// that exists only in the other suite would otherwise run nothing, silently.
    matched_any: bool,
    /// The GPU clocks of this process: read at start, locked when `STACKBENCH_LOCK_CLOCKS`
    /// asks, restored at finish (or on a panic or Ctrl-C). `None` in `--list` mode.
    clocks: Option<ClockGuard>,
    /// Whether a GPU benchmark was measured: a CPU-only target records no clocks.
    gpu_ran: bool,
    /// Timed, counting mode's driver, or the child it counts (see [`counting`]).
    role: Role,
    /// The counting driver's selected ids, counted in [`Harness::finish`].
    to_count: Vec<BenchId>,
    /// What `STACKBENCH_PROFILE` asks to profile after the measurement ([`profile`]).
    profile: Option<profile::ProfilePlan>,
}

/// The GPU clocks of the devices this process's GPU benchmarks use, locked when asked; a
/// bad `STACKBENCH_LOCK_CLOCKS` is a usage error (exit 2) before anything runs.
fn start_clocks(target: &str) -> ClockGuard {
    let requested = match lock_requested(std::env::var(LOCK_CLOCKS_ENV).ok().as_deref()) {
        Ok(requested) => requested,
        Err(message) => {
            eprintln!("stackbench {target}: {message}");
            std::process::exit(2);
        }
    };
    let (controllers, why_none) = clocks::open_controllers();
    ClockGuard::start(controllers, requested, &why_none)
}

/// The lowest busy SM clock among a target's measured benchmarks' notes: the CUDA timer's
/// `sm_clock_busy_min_mhz`, or the telemetry sampler's clock minimum (NVML or amdgpu).
pub fn min_busy_sm_mhz<'a>(
    notes: impl IntoIterator<Item = &'a std::collections::BTreeMap<String, serde_json::Value>>,
) -> Option<u32> {
    notes
        .into_iter()
        .flat_map(|n| {
            let timer = n.get("sm_clock_busy_min_mhz").and_then(|v| v.as_u64());
            let sampled = n
                .get(crate::sidecar::TELEMETRY_NOTE)
                .and_then(|t| t.get("clock_mhz"))
                .and_then(|c| c.get("min"))
                .and_then(|m| m.as_f64())
                .filter(|m| m.is_finite() && *m > 0.0)
                .map(|m| m.round() as u64);
            [timer, sampled]
        })
        .flatten()
        .min()
        .and_then(|m| u32::try_from(m).ok())
}

/// Time in cycle space for a GPU benchmark: the median time per iteration of the timed
/// samples x the SM clock it ran at, the CUDA timer's median busy clock, else the mean clock
/// the telemetry sampler read (NVML or amdgpu); neither read: no cycles, never a guess.
fn add_cycles(
    notes: &mut std::collections::BTreeMap<String, serde_json::Value>,
    per_iter_ns: &[f64],
) {
    let timer = notes
        .get("sm_clock_busy_median_mhz")
        .and_then(|v| v.as_u64())
        .map(|m| (m as f64, "median busy SM clock (timer samples)"));
    let sampled = notes
        .get(crate::sidecar::TELEMETRY_NOTE)
        .and_then(|t| t.get("clock_mhz")?.get("mean")?.as_f64())
        .map(|m| (m, "mean SM clock (telemetry samples)"));
    let Some((mhz, which)) = timer.or(sampled) else {
        return;
    };
    if per_iter_ns.is_empty() || !(mhz.is_finite() && mhz >= 1.0 && mhz < u32::MAX as f64) {
        return;
    }
    if let Some(cycles) =
        clocks::cycles_per_iteration(crate::stats::median(per_iter_ns), mhz.round() as u32)
    {
        notes.insert(clocks::CYCLES_NOTE.into(), cycles.round().into());
        notes.insert("sm_cycles_clock".into(), which.into());
    }
}

impl Harness {
    /// Starts a bench target. An unknown suite or a bad `stackbench.toml` is a usage
    /// error: it prints why and exits 2 before anything runs.
    pub fn start(target: &str) -> Harness {
        let (config, plan) = match Config::discover(None)
            .and_then(|config| ResolvedSuite::from_env_with(&config).map(|plan| (config, plan)))
        {
            Ok(found) => found,
            Err(message) => {
                eprintln!("stackbench {target}: {message}");
                std::process::exit(2);
            }
        };
        let suite = plan.base;
        let args = CriterionArgs::from_env();
        let role = match Role::from_env(&args) {
            Ok(role) => role,
            Err(error) => {
                eprintln!("stackbench {target}: {}: {error}", measure::MEASURE_ENV);
                std::process::exit(2);
            }
        };
        let mut report = TargetReport::new(target, suite);
        // The named suite, not only its axis set: a run of `pre-installation` says so.
        report.suite = plan.name.clone();
        if role == Role::CountingDriver {
            report.measure = Some(measure::Measure::Instructions.name().to_owned());
        }
        // The counted child runs under Valgrind into a scratch Criterion directory: a
        // probe there is slow and read by nobody; its driver writes the run's own. The same
        // for the profiler's re-run (`--profile-time`), whose profile would show the probe.
        let quiet = args.list || role == Role::Counted || args.profile;
        if !quiet {
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
        let profile = match profile::ProfilePlan::from_env() {
            Ok(plan) => plan.filter(|_| role == Role::Timed && !args.list),
            Err(message) => {
                eprintln!("stackbench {target}: {message}");
                std::process::exit(2);
            }
        };
        let criterion = Criterion::default().configure_from_args();
        let clocks = (!quiet).then(|| start_clocks(target));
        if !quiet {
            live::append_event(&live::ProgressEvent::Target {
                target: target.into(),
                unix_ms: crate::time::now_unix_ms(),
            });
        }
        Harness {
            suite,
            plan,
            config,
            injected_failure,
            args,
            report,
            criterion,
            matched_any: false,
            clocks,
            gpu_ran: false,
            role,
            to_count: Vec::new(),
            profile,
        }
    }

    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// The named suite this run belongs to.
    pub fn plan(&self) -> &ResolvedSuite {
        &self.plan
    }

    /// The config this run reads (`stackbench.toml`, or the defaults).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// True when the suite keeps `id` and Criterion will run it (its filter, `--exact`,
    /// `--ignored`).
    pub fn selected(&mut self, id: &BenchId) -> bool {
        let selected = self.wanted(id);
        self.matched_any |= selected;
        selected
    }

    /// Whether the suite and Criterion's filter would run `id`, without counting it as
    /// matched: for targets that decide whether to start an expensive worker at all.
    pub fn would_select(&self, id: &BenchId) -> bool {
        self.wanted(id)
    }

    /// [`Self::selected`] without counting the id as matched.
    fn wanted(&self, id: &BenchId) -> bool {
        let full = id.full();
        self.plan.selects(&full) && self.args.matches(&full)
    }

    /// Opens every backend available here; each one that is not is recorded for this
    /// family (`<family>/<backend>/all/all`) with its reason: skipped where the machine has
    /// no such device, whatever the filter (a filtered run must still say why a whole
    /// backend did not run); failed where the probe found one that did not open.
    pub fn open_backends(&mut self, family: &str) -> Vec<Box<dyn crate::backend::Backend>> {
        if self.role == Role::Counted {
            return self.open_countable_backends();
        }
        let (mut backends, unavailable) = crate::backend::open_available();
        if self.plan.gpu_first {
            // Stable: the GPUs keep their order, the CPU moves behind them.
            backends.sort_by_key(|b| b.kind() == crate::backend::BackendKind::Cpu);
        }
        let present = |kind| crate::backend::probe(kind).is_available();
        for (kind, outcome) in crate::backend::classify_unopened(unavailable, present) {
            let id = BenchId::new(family, kind.id(), "all", "all");
            match outcome {
                Ok(reason) => {
                    // Listed (and counted by run_benchmarks.sh, and shown live) only where the
                    // filter selects it; kept in the record whatever the filter.
                    let wanted = self.wanted(&id);
                    if wanted {
                        eprintln!("skipped {}: {reason}", id.full());
                    }
                    if !self.args.list {
                        if wanted {
                            self.landed(&id, "skipped", Some(reason.clone()), None, None);
                        }
                        self.report
                            .record(&id, BenchmarkOutcome::Skipped { reason });
                    }
                }
                Err(error) if self.selected(&id) && !self.args.list => {
                    self.record_error(&id, error)
                }
                Err(_) => {}
            }
        }
        backends
    }

    /// Runs every case of `family` on every backend available here, each unavailable
    /// backend recorded as [`Self::open_backends`] does: the whole loop of a native family's
    /// bench target.
    pub fn run_family(&mut self, family: &dyn BenchFamily) {
        let suite = self.suite;
        let backends = self.open_backends(family.family().name);
        for backend in &backends {
            let cases = family.cases(backend.as_ref(), suite);
            if backend.kind() == crate::backend::BackendKind::Vulkan
                && self.role == Role::Timed
                && !self.args.list
                && !self.args.test
                && !self.args.profile
                && cases.iter().any(|c| self.would_select(&c.id))
            {
                // Vulkan reports no clocks or unit counts: its peaks are measured, before
                // the first id this target times on it (`sidecar::add_device_peaks`).
                sidecar::add_device_peaks();
            }
            for case in cases {
                match case.plan {
                    Plan::Measure {
                        throughput,
                        sampling,
                        open,
                    } => self.bench(&case.id, throughput, sampling, open),
                    Plan::Skip { reason } => self.skip(&case.id, reason),
                }
            }
        }
    }

    /// The counted child's backends: the CPU only, single-threaded (Callgrind counts one
    /// thread). Its one id is countable, so it runs on the CPU; a GPU driver loaded under
    /// Valgrind would only cost minutes.
    fn open_countable_backends(&self) -> Vec<Box<dyn crate::backend::Backend>> {
        vec![Box::new(
            crate::backend::cpu::CpuBackend::open_single_threaded(),
        )]
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
        self.landed(id, "skipped", Some(reason.clone()), None, None);
        self.report.record(id, BenchmarkOutcome::Skipped { reason });
    }

    /// Tells a live dashboard (through the progress file, when one is named) that `id`
    /// landed, with its samples when it was measured.
    fn landed(
        &self,
        id: &BenchId,
        outcome: &str,
        reason: Option<String>,
        throughput: Option<&Throughput>,
        samples: Option<crate::criterion_output::SampleFile>,
    ) {
        if self.role == Role::Counted {
            return;
        }
        live::append_event(&live::ProgressEvent::Benchmark(live::Landed {
            target: self.report.target.clone(),
            id: id.full(),
            outcome: outcome.into(),
            reason,
            throughput: throughput.map(live_throughput),
            samples,
            unix_ms: crate::time::now_unix_ms(),
        }));
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
            if !self.plan.selects(&id.full()) {
                return;
            }
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
        if self.role == Role::CountingDriver {
            // Counted in `finish`, each in a child under Valgrind: nothing is prepared here.
            self.to_count.push(id.clone());
            return;
        }
        let mut workload = match prepare().and_then(|mut w| w.verify().map(|()| w)) {
            Ok(workload) => workload,
            Err(error) => return self.record_error(id, error),
        };
        // One timed call sizes the window: long calls (a 4096³ f64 GEMM takes seconds)
        // get room for every requested sample instead of Criterion's "unable to complete"
        // warning and a silently shorter run. The counted child runs one iteration only,
        // and `--test` runs the routine once (Criterion's test mode) with no window to size:
        // there the call would only repeat the work (a cold compile, a 2 GiB STREAM pass).
        let one_call = match self.role {
            Role::Counted => Duration::ZERO,
            _ if self.args.test => Duration::ZERO,
            _ => match workload.run(1) {
                Ok(duration) => duration,
                Err(error) => return self.record_error(id, error),
            },
        };
        let sampling = self.plan.sampling.apply(sampling);
        let measurement = sampling
            .measurement
            .max(one_call.mul_f64(sampling.sample_size as f64 * 1.2));
        // A call that fails partway reports the host time it took, never a placeholder: a
        // 1 ns sample would read as a huge improvement. The sidecar marks the id failed, and
        // `record` keeps no samples of a failed benchmark.
        let failure: RefCell<Option<(BackendError, Duration)>> = RefCell::new(None);
        let device = telemetry_target(id, workload.as_ref());
        // No sampler thread beside a counted routine: Valgrind runs one thread at a time.
        let sampler = (self.role != Role::Counted)
            .then(|| Sampler::start_from_env(device))
            .flatten();
        // (iterations, total ns) of every call Criterion makes; the last `sample_size` are
        // the timed samples (the first are warm-up), sent to a live dashboard.
        let calls: RefCell<Vec<(f64, f64)>> = RefCell::new(Vec::new());
        let live_throughput_copy = throughput.clone();
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
                    let took = workload.run(iters).unwrap_or_else(|error| {
                        let took = started.elapsed().max(Duration::from_nanos(1));
                        *failure.borrow_mut() = Some((error, took));
                        took
                    });
                    calls
                        .borrow_mut()
                        .push((iters as f64, took.as_nanos() as f64));
                    took
                })
            });
            group.finish();
        }
        match failure.into_inner() {
            // The samples Criterion kept for this id are meaningless: the record says so.
            Some((error, _)) => self.record_error(id, error),
            None => {
                let mut notes = workload.notes();
                if let Some(why) = failed_check_after_timing(&notes) {
                    let detail = format!("the correctness check after timing failed: {why}");
                    return self.record_error(id, BackendError::mismatch(id, detail));
                }
                if let Some(summary) = sampler.map(Sampler::finish)
                    && let Ok(value) = serde_json::to_value(summary)
                {
                    notes.insert(TELEMETRY_NOTE.into(), value);
                }
                let calls = calls.into_inner();
                let timed = &calls[calls.len().saturating_sub(sampling.sample_size)..];
                let samples = crate::criterion_output::SampleFile {
                    sampling_mode: None,
                    iters: timed.iter().map(|c| c.0).collect(),
                    times: timed.iter().map(|c| c.1).collect(),
                };
                if device != Target::Cpu {
                    add_cycles(&mut notes, &samples.per_iteration_ns());
                    self.gpu_ran = true;
                }
                self.landed(
                    id,
                    "measured",
                    None,
                    Some(&live_throughput_copy),
                    Some(samples),
                );
                self.report.record(id, BenchmarkOutcome::Measured { notes });
            }
        }
    }

    /// Counting mode: counts every selected id by running this executable under the
    /// counter, and records each count, `not countable` reason or failure.
    fn count_selected(&mut self) {
        let ids = std::mem::take(&mut self.to_count);
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(error) => {
                for id in &ids {
                    self.record_failure(id, format!("cannot find this bench executable: {error}"));
                }
                return;
            }
        };
        let countable = ids.iter().filter(|id| counting::countable(id)).count();
        eprintln!(
            "stackbench {}: counting {countable} of {} ids under Valgrind (single-threaded \
             variant; GPU and Python-worker ids are not countable)",
            self.report.target,
            ids.len()
        );
        for (id, outcome) in ids.iter().zip(counting::count_ids(&exe, &ids)) {
            match outcome.and_then(|c| serde_json::to_value(c).map_err(|e| e.to_string())) {
                Ok(counted) => {
                    self.report.counted.insert(id.full(), counted);
                }
                Err(error) => self.record_failure(id, error),
            }
        }
    }

    /// Records `id` as failed with `error` (already printed where it arose).
    fn record_failure(&mut self, id: &BenchId, error: String) {
        self.landed(id, "failed", Some(error.clone()), None, None);
        self.report.record(id, BenchmarkOutcome::Failed { error });
    }

    fn record_error(&mut self, id: &BenchId, error: BackendError) {
        let kind = if error.is_skip() { "skipped" } else { "failed" };
        self.landed(id, kind, Some(error.to_string()), None, None);
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

    /// `STACKBENCH_PROFILE`: re-runs each measured id the plan wants under the profiler, in
    /// Criterion's profile mode, and keeps each profile's record in the target report. The
    /// measurement already happened: a profile that fails is recorded and printed, never
    /// counted as a failed benchmark.
    fn profile_measured(&mut self) {
        let Some(plan) = self.profile.take() else {
            return;
        };
        let ids: Vec<String> = self
            .report
            .benchmarks
            .iter()
            .filter(|(id, e)| {
                matches!(e.outcome, BenchmarkOutcome::Measured { .. }) && plan.wants(id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        let target = self.report.target.clone();
        if ids.is_empty() {
            eprintln!(
                "stackbench {target}: {}={} profiles nothing: no measured benchmark of this \
                 target matches",
                profile::PROFILE_ENV,
                plan.tool
            );
            return;
        }
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(error) => {
                eprintln!(
                    "stackbench {target}: cannot profile: no path to this executable: {error}"
                );
                return;
            }
        };
        let dir = sidecar::criterion_home()
            .join(sidecar::SIDECAR_DIR)
            .join(profile::PROFILES_DIR);
        eprintln!(
            "stackbench {target}: profiling {} benchmark(s) under {} ({} s each)",
            ids.len(),
            plan.tool,
            plan.seconds
        );
        for (id, stem) in ids.iter().zip(profile::file_stems(&ids)) {
            let record = profile::profile(&profile::ProfileJob {
                tool: plan.tool,
                bench_exe: &exe,
                id,
                seconds: plan.seconds,
                dir: &dir,
                stem: &stem,
                cwd: None,
                env: &[],
                search_path: None,
                side: None,
            });
            match serde_json::to_value(&record) {
                Ok(value) => {
                    self.report.profiles.insert(id.clone(), value);
                }
                Err(error) => eprintln!("stackbench {target}: profile of {id} not kept: {error}"),
            }
        }
    }

    /// Writes the target's record and Criterion's summaries; exits non-zero if any
    /// benchmark failed, after every other one has run.
    pub fn finish(mut self) -> ExitCode {
        self.criterion.final_summary();
        if let Some(guard) = self.clocks.take() {
            let min_busy =
                min_busy_sm_mhz(
                    self.report
                        .benchmarks
                        .values()
                        .filter_map(|e| match &e.outcome {
                            BenchmarkOutcome::Measured { notes } => Some(notes),
                            _ => None,
                        }),
                );
            self.report.gpu_clocks = Some(guard.finish(min_busy, self.gpu_ran));
        }
        if self.args.list {
            return ExitCode::SUCCESS;
        }
        if self.role == Role::CountingDriver {
            self.count_selected();
        }
        if !self.matched_any {
            // Said, not failed: one target selecting nothing is normal when `cargo bench`
            // runs every target with a filter meant for one of them (cargo would stop at
            // the first target that exits non-zero). Whether a whole run selected nothing is
            // the runner's question (`run_benchmarks.sh`, `stackbench validate`): exit 2 there.
            let why = empty_match(&self.report.target, &self.plan, &self.args);
            eprintln!("stackbench {}: {why}", self.report.target);
        }
        self.profile_measured();
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

/// Why `target` ran nothing, naming the suite and the filter that selected nothing.
pub fn empty_match(target: &str, plan: &ResolvedSuite, args: &CriterionArgs) -> String {
    let suite = &plan.name;
    match (&args.filter, args.exact) {
        (Some(id), true) => format!(
            "--exact `{id}` matches no benchmark of suite '{suite}' in this target; it may \
             exist only in another suite (STACKBENCH_SUITE=full runs every id)"
        ),
        (Some(filter), false) => {
            format!("the filter '{filter}' matches no benchmark of suite '{suite}' in this target")
        }
        (None, _) if !plan.runs_target(target) => {
            format!("suite '{suite}' does not run this target")
        }
        (None, _) => format!("suite '{suite}' selects no benchmark of this target"),
    }
}

/// Criterion's throughput as the run record stores it.
fn live_throughput(t: &Throughput) -> crate::criterion_output::Throughput {
    use crate::criterion_output::Throughput as T;
    match *t {
        Throughput::Bytes(b) => T::Bytes(b),
        Throughput::BytesDecimal(b) => T::BytesDecimal(b),
        Throughput::Elements(e) => T::Elements(e),
        Throughput::Bits(b) => T::Bits(b),
        Throughput::ElementsAndBytes { elements, bytes } => T::ElementsAndBytes { elements, bytes },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn a_check_after_timing_that_did_not_pass_fails_the_benchmark() {
        let notes = |v: serde_json::Value| BTreeMap::from([(CHECK_AFTER_TIMING_NOTE.into(), v)]);
        assert_eq!(failed_check_after_timing(&notes(json!("passed"))), None);
        assert_eq!(failed_check_after_timing(&BTreeMap::new()), None);
        assert_eq!(
            failed_check_after_timing(&notes(json!("a[17] = 3 but expected 5"))).as_deref(),
            Some("a[17] = 3 but expected 5")
        );
        assert!(failed_check_after_timing(&notes(json!(false))).is_some());
    }

    #[test]
    fn gpu_time_gets_cycles_from_the_clock_it_ran_at_and_none_without_one() {
        let notes =
            |v: serde_json::Value| -> std::collections::BTreeMap<String, serde_json::Value> {
                serde_json::from_value(v).unwrap()
            };
        // Median 2000 ns per iteration at a 1500 MHz busy clock: 3000 cycles.
        let mut timed = notes(serde_json::json!({"sm_clock_busy_median_mhz": 1500}));
        add_cycles(&mut timed, &[1000.0, 2000.0, 9000.0]);
        assert_eq!(timed[clocks::CYCLES_NOTE], 3000.0);
        // The sampler's mean clock where the timer read none (ROCm).
        let mut sampled = notes(serde_json::json!({"telemetry": {"source": "amdgpu",
            "clock_mhz": {"min": 1000.0, "mean": 2000.0, "max": 2100.0, "samples": 5}}}));
        add_cycles(&mut sampled, &[500.0]);
        assert_eq!(sampled[clocks::CYCLES_NOTE], 1000.0);
        assert!(
            sampled["sm_cycles_clock"]
                .as_str()
                .unwrap()
                .contains("telemetry")
        );
        // No clock read: no cycles, never a guess.
        let mut unknown = notes(serde_json::json!({"sm_clock": "not read (NVML unavailable)"}));
        add_cycles(&mut unknown, &[500.0]);
        assert!(!unknown.contains_key(clocks::CYCLES_NOTE));
    }

    #[test]
    fn the_lowest_busy_clock_comes_from_timer_notes_or_telemetry() {
        let timer: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({"sm_clock_busy_min_mhz": 1650})).unwrap();
        let sampled: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({"telemetry": {
                "source": "amdgpu", "clock_mhz": {"min": 1499.6, "mean": 1900.0, "max": 2100.0, "samples": 9}}}))
            .unwrap();
        let none = std::collections::BTreeMap::new();
        assert_eq!(min_busy_sm_mhz([&timer, &none]), Some(1650));
        assert_eq!(min_busy_sm_mhz([&timer, &sampled]), Some(1500));
        assert_eq!(min_busy_sm_mhz([&none]), None);
    }

    #[test]
    fn an_empty_match_names_the_suite_and_the_filter() {
        let config = Config::parse(
            "[suites.none]\ntargets = [\"gemm\"]\ninclude = ['^no/such$']\n",
            std::path::Path::new("stackbench.toml"),
        )
        .unwrap();
        let none = config.suite("none").unwrap();
        let args = |a: &[&str]| CriterionArgs::parse(a.iter().map(|s| s.to_string()));
        assert_eq!(
            empty_match("gemm", &none, &args(&[])),
            "suite 'none' selects no benchmark of this target"
        );
        assert_eq!(
            empty_match("attention", &none, &args(&[])),
            "suite 'none' does not run this target"
        );
        let quick = config.suite("quick").unwrap();
        assert_eq!(
            empty_match("gemm", &quick, &args(&["--bench", "^no/such/benchmark$"])),
            "the filter '^no/such/benchmark$' matches no benchmark of suite 'quick' in this target"
        );
    }
}
