//! `cargo bench --bench compile`: cold-cache compile time (issue 20). Ids
//! `compile/nvrtc/<kernel>/<sm_XX>` and `compile/hiprtc/<kernel>/<gfxNNN>` (stackbench's own
//! kernel source through NVRTC and hipRTC, in this process), `compile/triton/<kernel>/<shape>_<target>`
//! and `compile/torch_compile/<model>/<cold|warm>` (in a Python worker, the user's Python:
//! `STACKBENCH_PYTHON`, else the active env). Every sample is a compile shown to have
//! happened; see `crates/model/src/workload/compile.rs` and BENCHMARKS.md, "Compile time".

use criterion::Throughput;
use stackbench_measure::backend::cuda::compile::NvrtcCompile;
use stackbench_measure::backend::rocm::compile::HiprtcCompile;
use stackbench_measure::backend::{BackendError, TimedWorkload};
use stackbench_measure::components::RunnerConfig;
use stackbench_measure::components::compile::{run_python_compilers, sampling};
use stackbench_measure::components::suite::configured_interpreter;
use stackbench_measure::harness::Harness;
use stackbench_measure::workload::compile::{self, hiprtc_archs, nvrtc_cases};
use stackbench_measure::workload::family::COMPILE;
use std::process::ExitCode;

fn boxed<'w>(
    workload: Result<impl TimedWorkload + 'w, BackendError>,
) -> Result<Box<dyn TimedWorkload + 'w>, BackendError> {
    workload.map(|w| Box::new(w) as Box<dyn TimedWorkload + 'w>)
}

fn main() -> ExitCode {
    let mut harness = Harness::start(COMPILE.name);
    let suite = harness.suite();
    // `[components.compile]` in stackbench.toml: the Python compilers' interpreter and
    // timeouts, and the sampling of every compile id.
    let settings = harness.config().component(COMPILE.name);
    let config = match RunnerConfig::from_env_over(RunnerConfig::default().with_settings(&settings))
    {
        Ok(config) => config,
        Err(error) => {
            eprintln!("stackbench compile: {error}");
            return ExitCode::from(2);
        }
    };
    let sampling = sampling(&config);
    // One compile per call: a rate of compiles per second.
    let one = || Throughput::Elements(1);
    for (output, arch) in nvrtc_cases(suite) {
        let id = compile::nvrtc_id(output, arch);
        harness.bench(&id, one(), sampling, || {
            boxed(NvrtcCompile::prepare(&id, output, arch))
        });
    }
    for arch in hiprtc_archs(suite) {
        let id = compile::hiprtc_id(arch);
        harness.bench(&id, one(), sampling, || {
            boxed(HiprtcCompile::prepare(&id, arch))
        });
    }
    let interpreter = configured_interpreter(settings.python.as_deref()).map_err(|e| e.to_string());
    if let Ok(found) = &interpreter {
        eprintln!(
            "stackbench compile: Python {} at {} (from {})",
            found.version,
            found.path.display(),
            found.source
        );
    }
    run_python_compilers(&mut harness, &interpreter, &config);
    harness.finish()
}
