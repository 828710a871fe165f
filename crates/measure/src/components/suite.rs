//! The loop `cargo bench --bench components` runs: find the interpreter, then for each
//! component start its worker, record what it cannot run and why, time what it can, and
//! shut it down before the next one (two torch processes at once would share 2 cores).
//!
//! Nothing here stops the suite: a missing interpreter skips every component with one
//! reason; a worker that crashes, hangs or raises while describing itself (a broken
//! install) fails the whole component with its stderr tail; a worker that crashes or hangs
//! later fails the benchmark it was on, skips the rest of its component with the reason
//! and the stderr tail, and the next component starts.
//!
//! The loop talks to a [`BenchSink`] rather than to the harness directly, so the tests
//! drive the very same loop against fake and real workers without Criterion's sampling.

use super::FAMILY;
use super::config::{ComponentRun, RunnerConfig};
use super::interpreter::{EnvLookup, Interpreter, InterpreterError, PYTHON_ENV, ProcessEnv};
use super::session::{ComponentSession, OfferedBenchmark};
use crate::backend::{BackendError, BackendKind, SamplingProfile, TimedWorkload};
use crate::harness::Harness;
use crate::workload::{BenchId, Suite};
use criterion::Throughput;

/// Where the suite's outcomes go: the harness in `cargo bench`, a recorder in tests.
pub trait BenchSink {
    fn suite(&self) -> Suite;
    fn skip(&mut self, id: &BenchId, reason: String);
    fn bench<'w, F>(
        &mut self,
        id: &BenchId,
        throughput: Throughput,
        sampling: SamplingProfile,
        prepare: F,
    ) where
        F: FnOnce() -> Result<Box<dyn TimedWorkload + 'w>, BackendError>;

    /// Records `id` as failed before anything could be prepared (a worker that crashed or
    /// raised while describing itself): through `bench`, so the sink records it exactly
    /// as it records a benchmark whose preparation failed.
    fn fail(&mut self, id: &BenchId, error: BackendError) {
        let sampling = SamplingProfile::gpu(self.suite());
        self.bench(id, Throughput::Elements(1), sampling, move || Err(error));
    }
}

impl BenchSink for Harness {
    fn suite(&self) -> Suite {
        Harness::suite(self)
    }

    fn skip(&mut self, id: &BenchId, reason: String) {
        Harness::skip(self, id, reason);
    }

    fn bench<'w, F>(
        &mut self,
        id: &BenchId,
        throughput: Throughput,
        sampling: SamplingProfile,
        prepare: F,
    ) where
        F: FnOnce() -> Result<Box<dyn TimedWorkload + 'w>, BackendError>,
    {
        Harness::bench(self, id, throughput, sampling, prepare);
    }
}

/// The id recorded when a whole component could not be asked what it offers.
pub fn whole_component_id(component: &str) -> BenchId {
    whole_id(FAMILY, component)
}

/// The id recorded for everything a worker of `family` would have offered.
pub fn whole_id(family: &str, worker: &str) -> BenchId {
    BenchId::new(family, worker, "all", "all")
}

/// Runs every component in `components` with the interpreter the environment names.
pub fn run_suite(sink: &mut impl BenchSink, config: &RunnerConfig, components: &[&str]) {
    run_suite_with(sink, Interpreter::discover(), config, components);
}

/// Runs each component with its own settings from `stackbench.toml` (see
/// [`RunnerConfig::per_component`]); a component the file gives its own Python runs there,
/// unless `STACKBENCH_PYTHON` names one for the whole run.
pub fn run_configured_suite(sink: &mut impl BenchSink, runs: &[ComponentRun]) {
    let mut interpreters: Vec<(Option<std::path::PathBuf>, Result<Interpreter, String>)> =
        Vec::new();
    for ComponentRun {
        component,
        config,
        python,
    } in runs
    {
        let known = interpreters.iter().position(|(p, _)| p == python);
        let index = known.unwrap_or_else(|| {
            let found = configured_interpreter(python.as_deref());
            if let Ok(interpreter) = &found {
                eprintln!(
                    "stackbench components: Python {} at {} (from {})",
                    interpreter.version,
                    interpreter.path.display(),
                    interpreter.source
                );
            }
            interpreters.push((python.clone(), found.map_err(|e| e.to_string())));
            interpreters.len() - 1
        });
        match &interpreters[index].1 {
            Ok(interpreter) => run_component(sink, interpreter, component, config),
            Err(error) => sink.skip(
                &whole_component_id(component),
                format!("no usable Python interpreter: {error}"),
            ),
        }
    }
}

/// The interpreter of a component (or the model sweep) whose `stackbench.toml` settings
/// may name one: `STACKBENCH_PYTHON` first, then the file's `python`, then discovery.
pub fn configured_interpreter(
    python: Option<&std::path::Path>,
) -> Result<Interpreter, InterpreterError> {
    match python {
        Some(path) => Interpreter::discover_in(&FileChosenPython(path.as_os_str().to_owned())),
        None => Interpreter::discover(),
    }
}

/// The process environment, with `stackbench.toml`'s interpreter standing in for
/// `STACKBENCH_PYTHON` when the environment does not set it.
struct FileChosenPython(std::ffi::OsString);

impl EnvLookup for FileChosenPython {
    fn var(&self, name: &str) -> Option<std::ffi::OsString> {
        ProcessEnv
            .var(name)
            .or_else(|| (name == PYTHON_ENV).then(|| self.0.clone()))
    }
}

/// Runs every component with an already discovered interpreter (or the reason there is
/// none, which then skips every component).
pub fn run_suite_with(
    sink: &mut impl BenchSink,
    interpreter: Result<Interpreter, InterpreterError>,
    config: &RunnerConfig,
    components: &[&str],
) {
    let interpreter = match interpreter {
        Ok(interpreter) => interpreter,
        Err(error) => {
            let reason = format!("no usable Python interpreter: {error}");
            for component in components {
                sink.skip(&whole_component_id(component), reason.clone());
            }
            return;
        }
    };
    eprintln!(
        "stackbench components: Python {} at {} (from {})",
        interpreter.version,
        interpreter.path.display(),
        interpreter.source
    );
    for component in components {
        run_component(sink, &interpreter, component, config);
    }
}

/// One component: describe, skip or time each benchmark it offers, shut down.
pub fn run_component(
    sink: &mut impl BenchSink,
    interpreter: &Interpreter,
    component: &str,
    config: &RunnerConfig,
) {
    let session = match ComponentSession::start(interpreter, component, config) {
        Ok(session) => session,
        Err(error) if error.is_skip() => {
            sink.skip(&whole_component_id(component), error.to_string());
            return;
        }
        Err(error) => {
            let id = whole_component_id(component);
            // The worker never said which device it drives; what failed ran on the host.
            let failure = BackendError::Device {
                backend: BackendKind::Cpu,
                context: format!("{id} describe"),
                message: error.to_string(),
            };
            sink.fail(&id, failure);
            return;
        }
    };
    let offered = session.offered();
    if let Some(reason) = session.unavailable_reason() {
        skip_all(sink, component, &offered, &reason);
    } else {
        bench_offered(sink, &session, &offered, config);
    }
    if let Err(error) = session.shutdown() {
        eprintln!("stackbench components/{component}: shutting the worker down: {error}");
    }
}

fn skip_all(
    sink: &mut impl BenchSink,
    component: &str,
    offered: &[OfferedBenchmark],
    reason: &str,
) {
    if offered.is_empty() {
        sink.skip(&whole_component_id(component), reason.to_owned());
    }
    for benchmark in offered {
        sink.skip(&benchmark.id, reason.to_owned());
    }
}

fn bench_offered(
    sink: &mut impl BenchSink,
    session: &ComponentSession,
    offered: &[OfferedBenchmark],
    config: &RunnerConfig,
) {
    let sampling = config.sampling(sink.suite());
    for benchmark in offered {
        if let Some(reason) = benchmark.skip_reason() {
            sink.skip(&benchmark.id, reason.to_owned());
            continue;
        }
        if let Some(reason) = session.dead_reason() {
            sink.skip(
                &benchmark.id,
                format!(
                    "not run: the {} worker died earlier: {reason}",
                    session.component()
                ),
            );
            continue;
        }
        sink.bench(&benchmark.id, benchmark.throughput(), sampling, || {
            session.workload(benchmark)
        });
    }
}
