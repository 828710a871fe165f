//! torch's allocators in the alloc family: `scripts/components/alloc.py` runs the same
//! pattern programs as the native allocators, and its benchmarks become
//! `alloc/torch_<device>/<pattern>/<size>`: `torch_cuda` and `torch_rocm` are torch's
//! caching allocator, `torch_cpu` its CPU allocator (no caching), named by the device the
//! worker found so that a CPU-only run never stands in for the caching allocator.
//!
//! The programs travel as a JSON file ([`PROGRAMS_ENV`]) written from
//! [`crate::workload::alloc`], so the worker never re-derives a pattern and cannot drift
//! from the Rust definition.

use super::config::RunnerConfig;
use super::interpreter::Interpreter;
use super::session::{ComponentSession, OfferedBenchmark};
use super::suite::{BenchSink, whole_id};
use crate::backend::{BackendError, BackendKind};
use crate::workload::alloc::{self, AllocPattern, Op};
use crate::workload::ids::format_bytes_id;
use crate::workload::{BenchId, Suite};
use serde_json::{Value, json};
use std::path::Path;

/// The worker script (`scripts/components/alloc.py`).
pub const WORKER: &str = "alloc";
/// The file of programs the worker runs.
pub const PROGRAMS_ENV: &str = "STACKBENCH_ALLOC_PROGRAMS";
/// The id's second part before the worker says which device torch has.
pub const TORCH: &str = "torch";

/// Every program of the suite as the worker reads it: ops as `[slot, bytes]`, 0 bytes to free.
pub fn programs_document(suite: Suite) -> Value {
    let mut programs = Vec::new();
    for &size in alloc::sizes(suite) {
        for pattern in AllocPattern::ALL {
            let program = pattern.program(size);
            let ops: Vec<Value> = program
                .ops
                .iter()
                .map(|op| match *op {
                    Op::Alloc { slot, bytes } => json!([slot, bytes]),
                    Op::Free { slot } => json!([slot, 0]),
                })
                .collect();
            programs.push(json!({
                "pattern": pattern.id(),
                "size": format_bytes_id(size),
                "slots": program.slots,
                "probe_after": program.probe_after,
                "calls": program.calls(),
                "ops": ops,
            }));
        }
    }
    json!({ "programs": programs })
}

/// The id of one benchmark the worker offers, on the device it described.
pub fn torch_id(device: &str, pattern: &str, size: &str) -> BenchId {
    BenchId::new(alloc::FAMILY, &format!("{TORCH}_{device}"), pattern, size)
}

/// Runs torch's allocators: skipped with the reason when there is no Python or no torch,
/// failed with the worker's error when it breaks.
pub fn run_torch(
    sink: &mut impl BenchSink,
    interpreter: Result<Interpreter, String>,
    config: &RunnerConfig,
    scratch: &Path,
) {
    let whole = whole_id(alloc::FAMILY, TORCH);
    let interpreter = match interpreter {
        Ok(interpreter) => interpreter,
        Err(error) => {
            return sink.skip(&whole, format!("no usable Python interpreter: {error}"));
        }
    };
    let programs_path = scratch.join("alloc_programs.json");
    let document = programs_document(sink.suite()).to_string();
    if let Err(error) = std::fs::write(&programs_path, document) {
        let failure = host_failure(&whole, format!("{}: {error}", programs_path.display()));
        return sink.fail(&whole, failure);
    }
    let mut config = config.clone();
    config.family = alloc::FAMILY;
    config
        .env
        .push((PROGRAMS_ENV.into(), programs_path.display().to_string()));
    let script = config.script_for(WORKER);
    let session = match ComponentSession::start_script(&interpreter, WORKER, &script, &config) {
        Ok(session) => session,
        Err(error) if error.is_skip() => return sink.skip(&whole, error.to_string()),
        Err(error) => return sink.fail(&whole, host_failure(&whole, error.to_string())),
    };
    if let Some(reason) = session.unavailable_reason() {
        sink.skip(&whole, reason);
    } else {
        bench_offered(sink, &session, &config);
    }
    if let Err(error) = session.shutdown() {
        eprintln!("stackbench alloc: shutting the torch worker down: {error}");
    }
}

fn host_failure(id: &BenchId, message: String) -> BackendError {
    BackendError::Device {
        backend: BackendKind::Cpu,
        context: format!("{id} describe"),
        message,
    }
}

fn bench_offered(sink: &mut impl BenchSink, session: &ComponentSession, config: &RunnerConfig) {
    let device = session.description().device.clone();
    let sampling = config.sampling(sink.suite());
    for spec in session.description().benchmarks.clone() {
        let id = torch_id(&device, &spec.benchmark, &spec.parameters);
        if let Some(reason) = &spec.skip {
            sink.skip(&id, reason.clone());
            continue;
        }
        if let Some(reason) = session.dead_reason() {
            sink.skip(
                &id,
                format!("not run: the torch worker died earlier: {reason}"),
            );
            continue;
        }
        let offered = OfferedBenchmark { id, spec };
        sink.bench(&offered.id.clone(), offered.throughput(), sampling, || {
            session.workload(&offered)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_document_carries_every_pattern_and_size_of_the_suite() {
        let document = programs_document(Suite::Quick);
        let programs = document["programs"].as_array().unwrap();
        assert_eq!(
            programs.len(),
            alloc::QUICK_SIZES.len() * AllocPattern::ALL.len()
        );
        let first = &programs[0];
        assert_eq!(first["pattern"], "steady");
        assert_eq!(first["size"], "4KiB");
        let ops = first["ops"].as_array().unwrap();
        assert_eq!(ops[0], json!([0, 4096]));
        assert_eq!(ops[1], json!([0, 0]));
        assert_eq!(first["calls"].as_u64().unwrap(), ops.len() as u64);
    }

    #[test]
    fn torch_ids_name_the_device_torch_found() {
        assert_eq!(
            torch_id("cuda", "steady", "1MiB").full(),
            "alloc/torch_cuda/steady/1MiB"
        );
        assert_eq!(whole_id(alloc::FAMILY, TORCH).full(), "alloc/torch/all/all");
    }
}
