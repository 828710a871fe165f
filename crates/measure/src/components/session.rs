//! One component's worker for the length of its benchmarks: what it offers (from
//! `describe`), and [`ComponentWorkload`], the adapter that lets the harness set up,
//! verify and time a Python benchmark exactly like a native one.
//!
//! The workloads of a component share its worker through a `RefCell`: benchmarks run one
//! after another, and starting a fresh interpreter (re-importing torch) per benchmark would
//! cost seconds each. When the worker dies, the session remembers why, so the component's
//! remaining benchmarks are skipped with that reason instead of each timing out again.

use super::config::RunnerConfig;
use super::interpreter::Interpreter;
use super::protocol::{BenchmarkSpec, Description, FailureKind, Op, RunResult, ThroughputSpec};
use super::worker::{Worker, WorkerError};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::BenchId;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The metric in which a worker may state its timer's resolution; without it, 1 ns (the
/// unit of `perf_counter_ns` and of the protocol's `elapsed_ns`).
pub const TIMER_RESOLUTION_METRIC: &str = "timer_resolution_ns";

fn timer_resolution_ns(metrics: &BTreeMap<String, Value>) -> u64 {
    metrics
        .get(TIMER_RESOLUTION_METRIC)
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1)
}

/// A worker's reading of `iters` calls as a duration. One below the timer's resolution (a
/// 0 ns total from a coarse clock) measured nothing: it is a failed measurement, never a
/// number (rounding it up to 1 ns would read as an enormous speed-up).
fn reading(elapsed_ns: u64, iters: u64, resolution_ns: u64) -> Result<Duration, String> {
    if elapsed_ns < resolution_ns {
        return Err(format!(
            "{iters} iterations took {elapsed_ns} ns, below the timer's resolution of \
             {resolution_ns} ns: nothing was measured"
        ));
    }
    Ok(Duration::from_nanos(elapsed_ns))
}

/// Bound on the courtesy `teardown` sent when a workload is dropped.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a component could not be started or described.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Worker(#[from] WorkerError),
    #[error("the {component} worker's description is not valid: {detail}")]
    Description { component: String, detail: String },
    /// `describe` raised in the worker (a package that is installed but fails to import):
    /// the message, and the traceback the worker logged before answering.
    #[error("{component}: 'describe' failed: {message}{}", describe_tail(.stderr_tail))]
    DescribeFailed {
        component: String,
        message: String,
        stderr_tail: String,
    },
}

impl SessionError {
    /// True only for "this machine cannot run this component": the worker script is not
    /// there, or the worker itself answered `describe` with a skip. A worker that crashed,
    /// hung, raised or described itself wrongly is a failure.
    pub fn is_skip(&self) -> bool {
        matches!(
            self,
            SessionError::Worker(WorkerError::MissingScript { .. })
                | SessionError::Worker(WorkerError::Failed {
                    kind: FailureKind::Skip,
                    ..
                })
        )
    }
}

fn describe_tail(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; last lines of its stderr:\n{tail}")
    }
}

/// A benchmark a component offers, with its id and, when it cannot run here, why.
#[derive(Clone, Debug)]
pub struct OfferedBenchmark {
    pub id: BenchId,
    pub spec: BenchmarkSpec,
}

impl OfferedBenchmark {
    /// Work per call for Criterion; a benchmark without a natural unit counts calls.
    pub fn throughput(&self) -> criterion::Throughput {
        match self.spec.throughput {
            Some(ThroughputSpec::Elements(n)) => criterion::Throughput::Elements(n),
            Some(ThroughputSpec::Bytes(n)) => criterion::Throughput::Bytes(n),
            None => criterion::Throughput::Elements(1),
        }
    }

    /// Why it cannot run here, if it cannot.
    pub fn skip_reason(&self) -> Option<&str> {
        self.spec.skip.as_deref()
    }
}

/// A described, running worker for one component.
pub struct ComponentSession {
    component: String,
    worker: RefCell<Worker>,
    description: Description,
    config: RunnerConfig,
    facts: BTreeMap<String, Value>,
}

impl ComponentSession {
    /// Starts `scripts/components/<component>.py` and asks what it offers.
    pub fn start(
        interpreter: &Interpreter,
        component: &str,
        config: &RunnerConfig,
    ) -> Result<ComponentSession, SessionError> {
        let script = config.script_for(component);
        ComponentSession::start_script(interpreter, component, &script, config)
    }

    /// Starts an explicit worker script (tests drive fake workers this way).
    pub fn start_script(
        interpreter: &Interpreter,
        component: &str,
        script: &Path,
        config: &RunnerConfig,
    ) -> Result<ComponentSession, SessionError> {
        let mut worker = Worker::spawn_script(&interpreter.path, component, script, config)?;
        let raw = match worker.call(Op::Describe, config.setup_timeout) {
            Ok(raw) => raw,
            Err(WorkerError::Failed {
                kind: FailureKind::Error,
                message,
                ..
            }) => {
                return Err(SessionError::DescribeFailed {
                    component: component.into(),
                    message,
                    stderr_tail: worker.kill_with_stderr_tail(),
                });
            }
            Err(error) => return Err(error.into()),
        };
        let description: Description =
            serde_json::from_value(raw).map_err(|error| SessionError::Description {
                component: component.into(),
                detail: error.to_string(),
            })?;
        validate(component, &description)?;
        let mut facts = description.facts.clone();
        facts.insert("component".into(), Value::from(component));
        facts.insert("device".into(), Value::from(description.device.clone()));
        facts.insert(
            "python".into(),
            Value::from(interpreter.path.display().to_string()),
        );
        facts.insert(
            "python_version".into(),
            Value::from(interpreter.version.clone()),
        );
        Ok(ComponentSession {
            component: component.into(),
            worker: RefCell::new(worker),
            description,
            config: config.clone(),
            facts,
        })
    }

    pub fn component(&self) -> &str {
        &self.component
    }

    pub fn description(&self) -> &Description {
        &self.description
    }

    /// The reason the whole component cannot run here, if it cannot.
    pub fn unavailable_reason(&self) -> Option<String> {
        if self.description.available {
            return None;
        }
        Some(
            self.description
                .reason
                .clone()
                .unwrap_or_else(|| format!("{} reported itself unavailable", self.component)),
        )
    }

    /// Every benchmark the worker offers, in its order.
    pub fn offered(&self) -> Vec<OfferedBenchmark> {
        self.description
            .benchmarks
            .iter()
            .map(|spec| OfferedBenchmark {
                id: BenchId::new(
                    self.config.family,
                    &self.component,
                    spec.benchmark.clone(),
                    spec.parameters.clone(),
                ),
                spec: spec.clone(),
            })
            .collect()
    }

    /// Why the worker is gone, once it is.
    pub fn dead_reason(&self) -> Option<String> {
        self.worker
            .try_borrow()
            .ok()
            .and_then(|w| w.dead_reason().map(str::to_owned))
    }

    /// The device kind the component's benchmarks run on, for error values.
    pub fn backend(&self) -> BackendKind {
        match self.description.device.as_str() {
            "cuda" => BackendKind::Cuda,
            "rocm" => BackendKind::Rocm,
            _ => BackendKind::Cpu,
        }
    }

    /// Sets up one benchmark in the worker (build the model and inputs) and returns the
    /// workload the harness verifies and times.
    pub fn workload<'s>(
        &'s self,
        offered: &OfferedBenchmark,
    ) -> Result<Box<dyn TimedWorkload + 's>, BackendError> {
        let op = Op::Setup {
            benchmark: offered.spec.benchmark.clone(),
            parameters: offered.spec.parameters.clone(),
        };
        let facts = self.call(&offered.id, op, self.config.setup_timeout)?;
        let setup_facts = match facts {
            Value::Object(map) => map.into_iter().collect(),
            Value::Null => BTreeMap::new(),
            other => BTreeMap::from([("setup".to_owned(), other)]),
        };
        Ok(Box::new(ComponentWorkload {
            session: self,
            id: offered.id.clone(),
            setup_facts,
            metrics: BTreeMap::new(),
        }))
    }

    fn call(&self, id: &BenchId, op: Op, timeout: Duration) -> Result<Value, BackendError> {
        let op_name = op.name();
        let mut worker = self
            .worker
            .try_borrow_mut()
            .map_err(|_| BackendError::Device {
                backend: self.backend(),
                context: format!("{id} {op_name}"),
                message: "the worker is busy with another call".into(),
            })?;
        worker
            .call(op, timeout)
            .map_err(|error| self.backend_error(id, op_name, error))
    }

    fn backend_error(&self, id: &BenchId, op: &str, error: WorkerError) -> BackendError {
        match error {
            WorkerError::Failed {
                kind: FailureKind::Skip,
                message,
                ..
            } => BackendError::unsupported(self.backend(), id.full(), message),
            WorkerError::Failed {
                kind: FailureKind::Mismatch,
                message,
                ..
            } => BackendError::Mismatch {
                benchmark: id.full(),
                detail: message,
            },
            other => BackendError::Device {
                backend: self.backend(),
                context: format!("{id} {op}"),
                message: other.to_string(),
            },
        }
    }

    /// Asks the worker to exit and makes sure its process group is gone.
    pub fn shutdown(self) -> Result<(), WorkerError> {
        let timeout = self.config.call_timeout.min(Duration::from_secs(30));
        self.worker.into_inner().shutdown(timeout)
    }
}

/// Ids are split on `/`, so a worker's names must not contain one.
fn validate(component: &str, description: &Description) -> Result<(), SessionError> {
    for spec in &description.benchmarks {
        for part in [&spec.benchmark, &spec.parameters] {
            if part.is_empty() || part.contains('/') {
                return Err(SessionError::Description {
                    component: component.into(),
                    detail: format!(
                        "benchmark '{}' with parameters '{}': names must be non-empty and free of '/'",
                        spec.benchmark, spec.parameters
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A benchmark set up in a worker: verified and timed through the protocol.
pub struct ComponentWorkload<'s> {
    session: &'s ComponentSession,
    id: BenchId,
    setup_facts: BTreeMap<String, Value>,
    metrics: BTreeMap<String, Value>,
}

impl TimedWorkload for ComponentWorkload<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        // Verification can run a reference implementation (a no-cache decode, a float64
        // GEMM): it gets the setup bound, not the per-run one.
        self.session
            .call(&self.id, Op::Verify, self.session.config.setup_timeout)
            .map(|_| ())
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        let raw = self.session.call(
            &self.id,
            Op::Run { iters },
            self.session.config.call_timeout,
        )?;
        let result: RunResult =
            serde_json::from_value(raw).map_err(|error| self.protocol_error(error.to_string()))?;
        if result.iters.is_some_and(|done| done != iters) {
            return Err(self.protocol_error(format!(
                "asked for {iters} iterations, the worker ran {:?}",
                result.iters
            )));
        }
        let resolution_ns = timer_resolution_ns(&result.metrics);
        self.metrics = result.metrics;
        reading(result.elapsed_ns, iters, resolution_ns)
            .map_err(|detail| self.protocol_error(detail))
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.session.facts.clone();
        notes.extend(self.setup_facts.clone());
        notes.extend(self.metrics.clone());
        notes
    }
}

impl ComponentWorkload<'_> {
    fn protocol_error(&self, detail: String) -> BackendError {
        BackendError::Device {
            backend: self.session.backend(),
            context: format!("{} run", self.id),
            message: format!("the worker's run result is not valid: {detail}"),
        }
    }
}

impl Drop for ComponentWorkload<'_> {
    fn drop(&mut self) {
        // Frees the model and inputs before the next benchmark; a worker that is already
        // gone or busy is left alone (the session reports it), and nothing here panics.
        if self.session.dead_reason().is_some() {
            return;
        }
        if let Ok(mut worker) = self.session.worker.try_borrow_mut() {
            let _ = worker.call(Op::Teardown, TEARDOWN_TIMEOUT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_below_the_timers_resolution_is_a_failure_not_a_number() {
        assert_eq!(reading(1500, 3, 1), Ok(Duration::from_nanos(1500)));
        let zero = reading(0, 10, 1).unwrap_err();
        assert!(
            zero.contains("0 ns") && zero.contains("resolution"),
            "{zero}"
        );
        assert!(reading(400, 1, 500).is_err());
        let stated = BTreeMap::from([(TIMER_RESOLUTION_METRIC.to_string(), Value::from(500))]);
        assert_eq!(timer_resolution_ns(&stated), 500);
        assert_eq!(timer_resolution_ns(&BTreeMap::new()), 1);
    }
}
