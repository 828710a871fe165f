//! The Python compilers of the compile family (`compile/triton/...`,
//! `compile/torch_compile/...`): one worker, `scripts/components/compile.py`, started once
//! per compiler with the cases `workload::compile` defines, through the component runner
//! (process group, timeouts, skip versus failure, stderr tails).
//!
//! The worker proves each sample (a fresh cache folder that fills, Inductor's miss and hit
//! counters) and counts the samples it proved; [`CountedCompile`] counts, on this side, the
//! compiles the harness asked for, and a benchmark whose two counts differ fails: the
//! runner does not take the worker's word that every timed call compiled.

use super::config::RunnerConfig;
use super::interpreter::Interpreter;
use super::session::ComponentSession;
use super::suite::{BenchSink, whole_id};
use crate::backend::{BackendError, BackendKind, SamplingProfile, TimedWorkload};
use crate::workload::BenchId;
use crate::workload::compile::{
    ColdCompiles, PROVEN_NOTE, PYTHON_COMPILERS, PythonCase, REQUESTED_NOTE, python_cases,
};
use crate::workload::family::COMPILE;
use criterion::Throughput;
use serde_json::Value;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::time::Duration;

/// The worker script every Python compiler runs.
pub const SCRIPT: &str = "compile.py";
/// Which compiler the worker drives (the ids' second part).
pub const COMPILER_ENV: &str = "STACKBENCH_COMPILE_COMPILER";
/// The cases the worker offers, as JSON.
pub const CASES_ENV: &str = "STACKBENCH_COMPILE_CASES";

/// Criterion sampling of a compile benchmark: each call is a whole compile (a fraction of a
/// second to seconds), so ten samples of one call each, and a warm-up of one call (the
/// harness stretches the measurement window to fit the samples); `[components.compile]`
/// in `stackbench.toml` and the `STACKBENCH_COMPONENT_*` variables override it.
pub fn sampling(config: &RunnerConfig) -> SamplingProfile {
    SamplingProfile {
        sample_size: config.sample_size.unwrap_or(10),
        warm_up: config.warm_up.unwrap_or(Duration::from_millis(1)),
        measurement: config.measurement.unwrap_or(Duration::from_secs(1)),
    }
}

/// The worker settings of one compiler: the compile family, its script's cases.
pub fn worker_config(base: &RunnerConfig, compiler: &str, cases: &[PythonCase]) -> RunnerConfig {
    let mut config = base.clone();
    config.family = COMPILE.name;
    let cases = serde_json::to_string(cases).unwrap_or_else(|_| "[]".into());
    config.env.extend([
        (COMPILER_ENV.to_owned(), compiler.to_owned()),
        (CASES_ENV.to_owned(), cases),
    ]);
    config
}

/// Runs every Python compiler's cases of the sink's suite.
pub fn run_python_compilers(
    sink: &mut impl BenchSink,
    interpreter: &Result<Interpreter, String>,
    base: &RunnerConfig,
) {
    for compiler in PYTHON_COMPILERS {
        let cases = python_cases(compiler, sink.suite());
        run_compiler(sink, interpreter, base, compiler, &cases);
    }
}

fn case_id(compiler: &str, case: &PythonCase) -> BenchId {
    BenchId::new(
        COMPILE.name,
        compiler,
        case.benchmark.clone(),
        case.parameters.clone(),
    )
}

/// One compiler: each case is handed to the sink, and the worker starts when the first
/// case the sink runs is prepared (a filter that selects none of them, or `--list`, starts
/// no Python). The worker must offer exactly the cases asked for; a worker that cannot
/// start, is unavailable or died is a skip or failure of each case, with its reason.
pub fn run_compiler(
    sink: &mut impl BenchSink,
    interpreter: &Result<Interpreter, String>,
    base: &RunnerConfig,
    compiler: &str,
    cases: &[PythonCase],
) {
    let wanted: Vec<BenchId> = cases.iter().map(|c| case_id(compiler, c)).collect();
    let interpreter = match interpreter {
        Ok(interpreter) => interpreter,
        Err(error) => {
            for id in &wanted {
                sink.skip(id, format!("no usable Python interpreter: {error}"));
            }
            return;
        }
    };
    let config = worker_config(base, compiler, cases);
    let sampling = sampling(&config);
    let started: OnceCell<Result<ComponentSession, BackendError>> = OnceCell::new();
    let session = || {
        started
            .get_or_init(|| start_worker(interpreter, &config, compiler, &wanted))
            .as_ref()
            .map_err(clone_error)
    };
    for id in &wanted {
        sink.bench(id, Throughput::Elements(1), sampling, || {
            let session = session()?;
            if let Some(reason) = session.unavailable_reason() {
                return Err(BackendError::unsupported(
                    BackendKind::Cpu,
                    id.full(),
                    reason,
                ));
            }
            if let Some(reason) = session.dead_reason() {
                let reason =
                    format!("not run: the {compiler} compile worker died earlier: {reason}");
                return Err(BackendError::unsupported(
                    BackendKind::Cpu,
                    id.full(),
                    reason,
                ));
            }
            let offered = session.offered();
            let Some(benchmark) = offered.iter().find(|o| &o.id == id) else {
                return Err(BackendError::mismatch(id, "the worker does not offer it"));
            };
            let inner = session.workload(benchmark)?;
            Ok(Box::new(CountedCompile::new(id.clone(), inner)) as Box<dyn TimedWorkload + '_>)
        });
    }
    if let Some(Ok(session)) = started.into_inner()
        && let Err(error) = session.shutdown()
    {
        eprintln!("stackbench compile/{compiler}: shutting the worker down: {error}");
    }
}

/// Starts the worker and checks that it offers exactly `wanted`.
fn start_worker(
    interpreter: &Interpreter,
    config: &RunnerConfig,
    compiler: &str,
    wanted: &[BenchId],
) -> Result<ComponentSession, BackendError> {
    let script = config.scripts_dir.join(SCRIPT);
    let whole = whole_id(COMPILE.name, compiler);
    let session = ComponentSession::start_script(interpreter, compiler, &script, config).map_err(
        |error| {
            if error.is_skip() {
                BackendError::unsupported(BackendKind::Cpu, whole.full(), error.to_string())
            } else {
                BackendError::Device {
                    backend: BackendKind::Cpu,
                    context: format!("{whole} describe"),
                    message: error.to_string(),
                }
            }
        },
    )?;
    let offered: Vec<BenchId> = session.offered().iter().map(|o| o.id.clone()).collect();
    if offered != wanted {
        let names = |ids: &[BenchId]| ids.iter().map(BenchId::full).collect::<Vec<_>>().join(", ");
        return Err(BackendError::Device {
            backend: BackendKind::Cpu,
            context: format!("{whole} describe"),
            message: format!(
                "the worker {SCRIPT} offers [{}] where it was asked for [{}]",
                names(&offered),
                names(wanted)
            ),
        });
    }
    Ok(session)
}

/// The one start error, for every case it stops.
fn clone_error(error: &BackendError) -> BackendError {
    match error {
        BackendError::Unsupported {
            backend,
            what,
            reason,
        } => BackendError::unsupported(*backend, what.clone(), reason.clone()),
        BackendError::Mismatch { benchmark, detail } => BackendError::Mismatch {
            benchmark: benchmark.clone(),
            detail: detail.clone(),
        },
        BackendError::Device {
            backend,
            context,
            message,
        } => BackendError::Device {
            backend: *backend,
            context: context.clone(),
            message: message.clone(),
        },
    }
}

/// A worker's compile benchmark with the compiles counted on this side: verify is one,
/// `run(iters)` is `iters`; after each run the worker's `compiles_proven` (since setup)
/// must equal that count.
pub struct CountedCompile<'w> {
    id: BenchId,
    inner: Box<dyn TimedWorkload + 'w>,
    counts: ColdCompiles,
}

impl<'w> CountedCompile<'w> {
    pub fn new(id: BenchId, inner: Box<dyn TimedWorkload + 'w>) -> CountedCompile<'w> {
        CountedCompile {
            id,
            inner,
            counts: ColdCompiles::default(),
        }
    }

    pub fn counts(&self) -> ColdCompiles {
        self.counts
    }

    /// The worker's count, checked against ours.
    fn reconcile(&mut self) -> Result<(), BackendError> {
        let proven = self.inner.notes().get(PROVEN_NOTE).and_then(Value::as_u64);
        let Some(proven) = proven else {
            return Err(BackendError::mismatch(
                &self.id,
                format!(
                    "the worker reported no '{PROVEN_NOTE}': no sample is shown to have compiled"
                ),
            ));
        };
        self.counts.proven = proven;
        self.counts
            .check()
            .map_err(|why| BackendError::mismatch(&self.id, why))
    }
}

impl TimedWorkload for CountedCompile<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.counts.requested += 1;
        self.inner.verify()
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.counts.requested += iters;
        let took = self.inner.run(iters)?;
        self.reconcile()?;
        Ok(took)
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.inner.notes();
        let check = match self.counts.check() {
            Ok(()) => "passed".to_owned(),
            Err(why) => why,
        };
        notes.insert(REQUESTED_NOTE.into(), self.counts.requested.into());
        notes.insert(PROVEN_NOTE.into(), self.counts.proven.into());
        notes.insert("check_after_timing".into(), check.into());
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Suite;

    /// A fake worker workload whose proven count is whatever the test says.
    struct Fake {
        proven: u64,
        lie: u64,
    }

    impl TimedWorkload for Fake {
        fn verify(&mut self) -> Result<(), BackendError> {
            self.proven += 1;
            Ok(())
        }
        fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
            self.proven += iters;
            Ok(Duration::from_millis(iters))
        }
        fn notes(&self) -> BTreeMap<String, Value> {
            BTreeMap::from([(PROVEN_NOTE.to_owned(), (self.proven - self.lie).into())])
        }
    }

    #[test]
    fn a_worker_that_proves_fewer_compiles_than_were_timed_fails() {
        let id = BenchId::new("compile", "triton", "softmax", "4096x1024_sm90");
        let mut honest = CountedCompile::new(id.clone(), Box::new(Fake { proven: 0, lie: 0 }));
        honest.verify().unwrap();
        honest.run(3).unwrap();
        assert_eq!(
            honest.counts(),
            ColdCompiles {
                requested: 4,
                proven: 4
            }
        );
        assert_eq!(honest.notes()["check_after_timing"], "passed");
        let mut short = CountedCompile::new(id, Box::new(Fake { proven: 0, lie: 1 }));
        short.verify().unwrap();
        let error = short.run(3).unwrap_err();
        assert!(
            !error.is_skip() && error.to_string().contains("4 compiles"),
            "{error}"
        );
    }

    #[test]
    fn the_worker_gets_the_compile_family_and_its_cases() {
        let cases = python_cases("triton", Suite::Quick);
        let config = worker_config(&RunnerConfig::default(), "triton", &cases);
        assert_eq!(config.family, "compile");
        let env: BTreeMap<_, _> = config.env.iter().cloned().collect();
        assert_eq!(env[COMPILER_ENV], "triton");
        let back: Vec<PythonCase> = serde_json::from_str(&env[CASES_ENV]).unwrap();
        assert_eq!(back, cases);
    }
}
