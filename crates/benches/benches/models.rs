//! `cargo bench --bench models`: model sweeps (issue 19). Each backend of the plan
//! (`STACKBENCH_MODELS_PLAN`, written by `stackbench sweep`; without it the suite's default)
//! runs in its own worker, `scripts/components/models.py`, in the user's Python. Ids
//! `models/<backend>/<model>-<precision>-<phase>/b<B>_s<S>`, and with rates
//! `<model>-<precision>-serve/b<B>_s<S>_r<R>` (goodput under load); see
//! `crates/model/src/workload/models.rs`.

use stackbench_measure::components::RunnerConfig;
use stackbench_measure::components::suite::configured_interpreter;
use stackbench_measure::components::sweep::{self, Sweep};
use stackbench_measure::harness::Harness;
use stackbench_measure::system::device_memory::absent_reason;
use stackbench_measure::workload::family::MODELS;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut harness = Harness::start(MODELS.name);
    // Ctrl-C ends the sweep after the cell in flight, keeping every finished cell.
    stackbench_measure::system::interrupt::install();
    let settings = harness.config().component(MODELS.name);
    let config = match RunnerConfig::from_env_over(RunnerConfig::default().with_settings(&settings))
    {
        Ok(config) => config,
        Err(error) => return usage(&error.to_string()),
    };
    let scratch = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => return usage(&format!("no scratch directory for the plan: {error}")),
    };
    let (plan, plan_path) = match sweep::plan_from_env(harness.suite(), scratch.path()) {
        Ok(found) => found,
        Err(error) => return usage(&error.to_string()),
    };
    let sweep = Sweep {
        plan: &plan,
        plan_path: &plan_path,
        config,
        budget: sweep::budget_from_env(plan.device),
        absent: absent_reason(plan.device, Path::new("/")),
        peaks: sweep::probe_peaks(),
    };
    let interpreter = configured_interpreter(settings.python.as_deref());
    if let Ok(found) = &interpreter {
        let (version, path) = (&found.version, found.path.display());
        eprintln!(
            "stackbench models: Python {version} at {path} (from {})",
            found.source
        );
    }
    let interpreter = interpreter.map_err(|e| e.to_string());
    sweep::run_sweep(&mut harness, &interpreter, &sweep);
    harness.finish()
}

fn usage(message: &str) -> ExitCode {
    eprintln!("stackbench models: {message}");
    ExitCode::from(2)
}
