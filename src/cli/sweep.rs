//! `stackbench sweep`: a model sweep from `[sweeps.NAME]` or flags. It checks the axes,
//! writes the plan file, runs `cargo bench --bench models` the way `stackbench validate`
//! runs a suite (a fresh Criterion directory, the plan in the environment), records the run
//! in the store so `compare`, `gate`, `history`, `show` and the report read it like any
//! other, and prints the compatibility map. With `--rate`, decoder models also get `serve`
//! cells: requests arriving at each rate (Poisson) into a loop of at most B at once,
//! reporting goodput (requests/s meeting every per-request SLO). Exit codes: 0 every cell measured or skipped
//! with a reason, 1 a cell failed, 2 bad input, 130 interrupted (the finished cells are
//! recorded, the run marked partial).

use crate::analysis::compatibility::{CompatibilityMap, device_columns, device_columns_text};
use crate::config::Config;
use crate::workload::family::MODELS;
use crate::workload::models::plan::{PLAN_ENV, RawAxes, SweepAxes, SweepPlan};
use crate::workload::models::{self, SweepBackend};
use anyhow::Context;
use clap::Args;
use std::path::Path;
use std::process::ExitCode;

#[derive(Args, Debug, Clone, Default)]
#[command(after_help = "Examples:
  stackbench sweep                                   # every ci- model once on torch, this machine's device
  stackbench sweep --sweep nightly                   # the axes of [sweeps.nightly] in stackbench.toml
  stackbench sweep --models gpt2-small,tinyllama-1.1b --batch 1,8 --seq 128,512 \\
                   --precision fp32,bf16 --backend torch,onnxruntime
  stackbench sweep --models ./my-model --device cuda # a directory holding a config.json, used as is
  stackbench sweep --models gpt2-small --batch 4 --rate 2,8 --backend torch,vllm \\
                   --serve-slo ttft<=500ms,tpot<=50ms  # serve cells: goodput at 2 and 8 requests/s
  stackbench sweep --list-models                     # the catalogue with counts and size classes")]
pub struct SweepArgs {
    /// A sweep defined as [sweeps.NAME] in the config; flags below replace its axes
    #[arg(long, value_name = "NAME")]
    pub sweep: Option<String>,
    /// Models: catalogue names or directories with a config.json (default: every ci- model)
    #[arg(long, value_delimiter = ',')]
    pub models: Option<Vec<String>>,
    /// Batch sizes (default 1)
    #[arg(long, value_delimiter = ',')]
    pub batch: Option<Vec<String>>,
    /// Prompt lengths in tokens (default 128; vision and speech ignore it)
    #[arg(long, value_delimiter = ',')]
    pub seq: Option<Vec<String>>,
    /// Precisions: fp32, bf16, fp16, int8 (default fp32)
    #[arg(long, value_delimiter = ',')]
    pub precision: Option<Vec<String>>,
    /// Backends: torch, onnxruntime, openvino, vllm (default torch)
    #[arg(long, value_delimiter = ',')]
    pub backend: Option<Vec<String>>,
    /// cpu, cuda, rocm, mps or qnn (default: the best this machine has)
    #[arg(long)]
    pub device: Option<String>,
    /// New tokens of each decode cell (default 16)
    #[arg(long)]
    pub new_tokens: Option<u64>,
    /// Requests/s offered to serve cells (Poisson arrivals, at most --batch requests at
    /// once); each rate adds a `serve` cell per decoder model, batch and seq (default: none)
    #[arg(
        long = "rate",
        value_delimiter = ',',
        allow_hyphen_values = true,
        value_name = "RPS"
    )]
    pub rates: Option<Vec<String>>,
    /// Per-request SLOs goodput counts (default ttft<=2s,tpot<=200ms: MLPerf's Llama-2-70B
    /// server bounds); forms ttft<=500ms, tpot<=50ms, e2e<=10s
    #[arg(long = "serve-slo", value_delimiter = ',', value_name = "SLO")]
    pub serve_slos: Option<Vec<String>>,
    /// Requests of one serve cell's load run (default 32)
    #[arg(long, value_name = "N")]
    pub serve_requests: Option<u32>,
    /// Seconds one timed call of a cell may take before its worker is killed
    #[arg(long, value_name = "SECONDS")]
    pub cell_timeout: Option<f64>,
    /// Cap, in GiB, on the memory a cell may use (default: what the device has free)
    #[arg(long, value_name = "GIB")]
    pub memory_limit: Option<f64>,
    #[command(flatten)]
    pub location: crate::cli::store::RunsLocation,
    /// A label stored with the run (default: sweep/<NAME>)
    #[arg(long)]
    pub label: Option<String>,
    /// Print the plan file the worker would read, and run nothing
    #[arg(long)]
    pub print_plan: bool,
    /// Print the model catalogue and run nothing
    #[arg(long)]
    pub list_models: bool,
    /// Do not keep the run in the store
    #[arg(long)]
    pub no_save: bool,
}

/// Runs `stackbench sweep` and maps its outcome to the exit code.
pub fn main(args: SweepArgs) -> ExitCode {
    match execute(&args) {
        Ok(code) => code,
        Err(error) => {
            super::errors::report("stackbench sweep", format_args!("{error:#}"));
            ExitCode::from(2)
        }
    }
}

/// The axes of `args` over its `[sweeps.NAME]`, checked.
pub fn axes(args: &SweepArgs, config: &Config) -> anyhow::Result<SweepAxes> {
    let base = match &args.sweep {
        Some(name) => config.sweep(name)?.raw_axes(),
        None => RawAxes::default(),
    };
    let raw = base.overridden_by(RawAxes {
        models: args.models.clone(),
        batch: args.batch.clone(),
        seq: args.seq.clone(),
        precision: args.precision.clone(),
        backend: args.backend.clone(),
        device: args.device.clone(),
        new_tokens: args.new_tokens,
        rates: args.rates.clone(),
        serve_slos: args.serve_slos.clone(),
        serve_requests: args.serve_requests,
    });
    let detected = crate::system::device_memory::detect_sweep_device(Path::new("/"));
    Ok(SweepAxes::resolve(&raw, detected)?)
}

fn execute(args: &SweepArgs) -> anyhow::Result<ExitCode> {
    if args.list_models {
        print!("{}", catalogue_text());
        return Ok(ExitCode::SUCCESS);
    }
    let config = args.location.config()?;
    let axes = axes(args, &config)?;
    let plan = SweepPlan::from_axes(&axes);
    if args.print_plan {
        println!("{}", serde_json::to_string_pretty(&plan)?);
        return Ok(ExitCode::SUCCESS);
    }
    let settings = args.sweep.as_deref().and_then(|n| config.sweeps.get(n));
    let env = sweep_env(args, settings)?;
    let (_, store) = args.location.open(&config)?;
    crate::system::interrupt::install();
    let scratch = tempfile::Builder::new()
        .prefix("stackbench-sweep-")
        .tempdir()
        .context("creating a directory for the plan and Criterion's output")?;
    let plan_path = scratch.path().join("plan.json");
    plan.write(&plan_path)?;
    let mut run = measure(&config, &plan_path, env, &scratch.path().join("criterion"))?;
    let interrupted = crate::system::interrupt::interrupted();
    let name = args.sweep.as_deref().unwrap_or("flags");
    run.label = Some(
        args.label
            .clone()
            .unwrap_or_else(|| format!("sweep/{name}")),
    );
    let map = CompatibilityMap::from_run(&run, MODELS.name, &planned_ids(&plan), plan.device.id());
    let devices = device_columns(plan.device, |d| {
        crate::system::device_memory::absent_reason(d, Path::new("/"))
    });
    run.notes.extend(
        devices
            .iter()
            .map(|c| format!("device column {}", c.describe())),
    );
    if interrupted {
        let (measured, ..) = map.counts();
        run.notes.push(format!(
            "partial: the sweep was interrupted (Ctrl-C) after {measured} of {} cells; the \
             rest are recorded as skipped or missing",
            map.cells.len()
        ));
        if let Some(label) = &mut run.label {
            label.push_str(" (partial)");
        }
    }
    let (_, failed, _, missing) = map.counts();
    // The evidence rule every verdict uses: a sweep whose every cell was skipped measured
    // nothing, and says so (exit 2) instead of passing; like `record`, it keeps no run.
    let evidence = crate::results::Evidence::of_run(&run);
    if !interrupted
        && missing == 0
        && let Err(nothing) = evidence.require_some(|| {
            format!(
                "the sweep's {} cells (every one skipped: see the map above)",
                map.cells.len()
            )
        })
    {
        print!("{}{}", map.to_text(), device_columns_text(&devices));
        anyhow::bail!("{nothing}; no run recorded");
    }
    if !args.no_save {
        let path = store.save(&run).context("keeping the sweep's run")?;
        eprintln!("==> sweep: run kept as {}", path.display());
    }
    print!("{}{}", map.to_text(), device_columns_text(&devices));
    Ok(if interrupted {
        ExitCode::from(130)
    } else if failed + missing > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The environment the bench target gets beside the plan: the per-cell timeout and the
/// memory cap, from the flags over `[sweeps.NAME]`.
fn sweep_env(
    args: &SweepArgs,
    settings: Option<&crate::config::SweepConfig>,
) -> anyhow::Result<Vec<(String, std::ffi::OsString)>> {
    let mut env = Vec::new();
    // Each limit: its value (the flag over the config), its flag, unit and variable.
    let limits = [
        (
            args.cell_timeout.or(settings.and_then(|s| s.timeout_s)),
            "--cell-timeout",
            "seconds",
            crate::components::config::TIMEOUT_ENV,
        ),
        (
            args.memory_limit
                .or(settings.and_then(|s| s.memory_limit_gib)),
            "--memory-limit",
            "GiB",
            crate::components::sweep::MEMORY_LIMIT_ENV,
        ),
    ];
    for (value, flag, unit, variable) in limits {
        if let Some(value) = value {
            anyhow::ensure!(
                value.is_finite() && value > 0.0,
                "{flag} {value}: not a positive number of {unit}"
            );
            env.push((variable.into(), value.to_string().into()));
        }
    }
    Ok(env)
}

/// Every id the plan asks for, in plan order, backend by backend.
fn planned_ids(plan: &SweepPlan) -> Vec<String> {
    plan.backends
        .iter()
        .flat_map(|&b: &SweepBackend| {
            plan.cells
                .iter()
                .map(move |c| crate::components::sweep::cell_id(b, c).full())
        })
        .collect()
}

/// Runs the `models` target with the plan into `criterion_dir`.
fn measure(
    config: &Config,
    plan_path: &Path,
    mut env: Vec<(String, std::ffi::OsString)>,
    criterion_dir: &Path,
) -> anyhow::Result<crate::results::RunRecord> {
    use crate::validate::runner;
    env.push((PLAN_ENV.into(), plan_path.into()));
    let suite = config.suite("sweep")?;
    let config_path = config
        .source
        .as_deref()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    std::fs::create_dir_all(criterion_dir)
        .with_context(|| format!("creating {}", criterion_dir.display()))?;
    let source = crate::validate::parts::locate()?;
    Ok(runner::run_suite(&runner::SuiteRun {
        suite: &suite,
        config: config_path.as_deref(),
        package_dir: &source.working_dir(),
        prebuilt: source.prebuilt().as_deref(),
        criterion_dir,
        filter: None,
        env,
        forward_interrupt: true,
    })?)
}

/// The catalogue as a table: name, architecture, task, parameters, size class, source.
pub fn catalogue_text() -> String {
    let mut out = format!(
        "{:<16} {:<8} {:<16} {:>15}  {:<6} description\n",
        "model", "arch", "task", "parameters", "class"
    );
    for spec in models::CATALOGUE {
        out.push_str(&format!(
            "{:<16} {:<8} {:<16} {:>15}  {:<6} {}\n",
            spec.name,
            spec.arch().id(),
            spec.task().id(),
            spec.params(),
            spec.size_class().id(),
            spec.description
        ));
    }
    out
}
