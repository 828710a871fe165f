//! The loop `cargo bench --bench components` runs: find the interpreter, then for each
//! component start its worker, record what it cannot run and why, time what it can, and
//! shut it down before the next one (two torch processes at once would share 2 cores).
//!
//! Nothing here stops the suite: a missing interpreter skips every component with one
//! reason; a worker that crashes or hangs fails the benchmark it was on, skips the rest of
//! its component with the reason and the stderr tail, and the next component starts.

use super::config::RunnerConfig;
use super::interpreter::Interpreter;
use super::session::{ComponentSession, OfferedBenchmark};
use super::FAMILY;
use crate::harness::Harness;
use crate::workload::BenchId;

/// The id recorded when a whole component could not be asked what it offers.
pub fn whole_component_id(component: &str) -> BenchId {
    BenchId::new(FAMILY, component, "all", "all")
}

/// Runs every component in `components` through `harness`.
pub fn run_suite(harness: &mut Harness, config: &RunnerConfig, components: &[&str]) {
    let interpreter = match Interpreter::discover() {
        Ok(interpreter) => interpreter,
        Err(error) => {
            let reason = format!("no usable Python interpreter: {error}");
            for component in components {
                harness.skip(&whole_component_id(component), reason.clone());
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
        run_component(harness, &interpreter, component, config);
    }
}

/// One component: describe, skip or time each benchmark it offers, shut down.
pub fn run_component(
    harness: &mut Harness,
    interpreter: &Interpreter,
    component: &str,
    config: &RunnerConfig,
) {
    let session = match ComponentSession::start(interpreter, component, config) {
        Ok(session) => session,
        Err(error) => {
            harness.skip(&whole_component_id(component), error.to_string());
            return;
        }
    };
    let offered = session.offered();
    if let Some(reason) = session.unavailable_reason() {
        skip_all(harness, component, &offered, &reason);
    } else {
        bench_offered(harness, &session, &offered, config);
    }
    if let Err(error) = session.shutdown() {
        eprintln!("stackbench components/{component}: shutting the worker down: {error}");
    }
}

fn skip_all(harness: &mut Harness, component: &str, offered: &[OfferedBenchmark], reason: &str) {
    if offered.is_empty() {
        harness.skip(&whole_component_id(component), reason);
    }
    for benchmark in offered {
        harness.skip(&benchmark.id, reason);
    }
}

fn bench_offered(
    harness: &mut Harness,
    session: &ComponentSession,
    offered: &[OfferedBenchmark],
    config: &RunnerConfig,
) {
    let sampling = config.sampling(harness.suite());
    for benchmark in offered {
        if let Some(reason) = benchmark.skip_reason() {
            harness.skip(&benchmark.id, reason);
            continue;
        }
        if let Some(reason) = session.dead_reason() {
            harness.skip(
                &benchmark.id,
                format!("not run: the {} worker died earlier: {reason}", session.component()),
            );
            continue;
        }
        harness.bench(&benchmark.id, benchmark.throughput(), sampling, || {
            session.workload(benchmark)
        });
    }
}
