//! `cargo bench --bench alloc`: the cost of allocation and free through each stack's
//! allocator, on patterns that fragment. Ids `alloc/<allocator>/<pattern>/<size>`:
//! `cpu` (the process's malloc), `cuda` (`cuMemAlloc`), `cuda_async` (the stream-ordered
//! pool), `rocm` (`hipMalloc`), `torch_cuda`/`torch_rocm` (torch's caching allocator) and
//! `torch_cpu` (torch's CPU allocator). One iteration is one round of the pattern; the
//! throughput is its allocator calls, so Criterion's elements/s is calls per second. Peaks
//! and fragmentation go to each benchmark's notes; see `crates/model/src/workload/alloc.rs` and
//! BENCHMARKS.md, "Allocation". The native allocators are the family
//! `stackbench_measure::family::alloc`; torch's are added here.

use stackbench_measure::backend::cpu::alloc::{
    Observer, install_observer, serve_observation_request,
};
use stackbench_measure::components::RunnerConfig;
use stackbench_measure::components::suite::configured_interpreter;
use stackbench_measure::harness::Harness;
use stackbench_measure::workload::alloc::{self, AllocPattern};
use std::process::ExitCode;

fn main() -> ExitCode {
    // This executable is also the fresh process the host heap is observed in: serve that
    // before anything else allocates (see backend::cpu::alloc).
    if let Some(code) = serve_observation_request() {
        return code;
    }
    match Observer::this_executable() {
        Ok(observer) => install_observer(observer),
        Err(error) => eprintln!("stackbench alloc: {error}; heap figures will be absent"),
    }
    let mut harness = Harness::start(alloc::FAMILY);
    let suite = harness.suite();
    harness.run_family(&stackbench_measure::family::alloc::Alloc);
    // torch's allocators through the Python worker, in the user's Python; importing torch
    // costs seconds, so not when the filter keeps none of its ids.
    if !torch_selected(&harness, suite) {
        return harness.finish();
    }
    let settings = harness
        .config()
        .component(stackbench_measure::components::alloc::WORKER);
    let config = match RunnerConfig::from_env_over(RunnerConfig::default().with_settings(&settings))
    {
        Ok(config) => config,
        Err(error) => {
            eprintln!("stackbench alloc: {error}");
            return ExitCode::from(2);
        }
    };
    let scratch = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("stackbench alloc: no scratch directory for the torch programs: {error}");
            return ExitCode::from(2);
        }
    };
    let interpreter = configured_interpreter(settings.python.as_deref()).map_err(|e| e.to_string());
    stackbench_measure::components::alloc::run_torch(
        &mut harness,
        interpreter,
        &config,
        scratch.path(),
    );
    harness.finish()
}

/// Whether any torch id (on any device, or the whole-worker skip) passes the suite and filter.
fn torch_selected(harness: &Harness, suite: stackbench_measure::workload::Suite) -> bool {
    use stackbench_measure::components::alloc::{TORCH, torch_id};
    use stackbench_measure::workload::ids::{BenchId, format_bytes_id};
    let whole = BenchId::new(alloc::FAMILY, TORCH, "all", "all");
    harness.would_select(&whole)
        || ["cpu", "cuda", "rocm"].iter().any(|device| {
            alloc::sizes(suite).iter().any(|&size| {
                AllocPattern::ALL.iter().any(|p| {
                    harness.would_select(&torch_id(device, p.id(), &format_bytes_id(size)))
                })
            })
        })
}
