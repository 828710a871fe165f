//! `cargo bench --bench components`: the installed Python components (PyTorch, attention,
//! Triton, vLLM, DeepSpeed, ONNX Runtime, OpenVINO, MIGraphX, a tiny GPT), each driven
//! through its worker in the user's Python (`STACKBENCH_PYTHON`, else the active env).
//! Ids `components/<component>/<benchmark>/<parameters>`; see BENCHMARKS.md, "Components".

use stackbench_measure::components::{self, RunnerConfig};
use stackbench_measure::harness::Harness;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut harness = Harness::start(components::FAMILY);
    // Each component with its `[components.NAME]` settings from stackbench.toml; the
    // environment's STACKBENCH_COMPONENT_* variables still win.
    let runs = match RunnerConfig::per_component(harness.config()) {
        Ok(mut runs) => {
            runs.retain(|run| harness.plan().runs_component(run.component));
            runs
        }
        Err(error) => {
            eprintln!("stackbench components: {error}");
            return ExitCode::from(2);
        }
    };
    components::suite::run_configured_suite(&mut harness, &runs);
    harness.finish()
}
