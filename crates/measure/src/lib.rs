//! stackbench's measuring floors: everything a `cargo bench` target needs to turn a
//! workload into Criterion's files and the harness outcomes beside them, and nothing that
//! judges, stores or shows a number.
//!
//! [`system`] reads the machine (CPU, GPUs, drivers, peaks, clocks, telemetry);
//! [`backend`] runs workloads on the CPU, CUDA, ROCm and Vulkan; [`probe`] puts the two
//! together into the record of the machine a run was made on; [`family`] says, for each native
//! family, its ids, axes and throughput and how each backend opens it; [`harness`] is the
//! loop every bench target runs (verify, then time); [`components`] drives the Python workers;
//! [`criterion_output`] and [`sidecar`] are the files a run leaves; [`config`] is
//! `stackbench.toml`. The model floor's modules are re-exported so one path names each
//! thing from here up.

pub use stackbench_model::{files, stats, time, units, workload};

pub mod backend;
pub mod components;
pub mod config;
pub mod criterion_output;
pub mod family;
pub mod harness;
pub mod probe;
pub mod sidecar;
pub mod system;

/// A native family's bench target, whole: `fn main() -> ExitCode { stackbench_measure::run(&Gemm) }`.
/// Runs `family` on every backend here and writes the target's record; the exit code is the
/// harness's (non-zero when a benchmark failed, 2 for bad input).
pub fn run(family: &dyn family::BenchFamily) -> std::process::ExitCode {
    let mut harness = harness::Harness::start(family.family().name);
    harness.run_family(family);
    harness.finish()
}
