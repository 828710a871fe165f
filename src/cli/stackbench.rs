//! `stackbench`: the machine-facing companion of the bench targets.

use crate::report::system::INFO_FORMATS;
use crate::report::writer::Format;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "stackbench",
    version,
    about = "Benchmark harness for ML/GPU stacks",
    after_help = "Examples:\n  stackbench info            # the system probe as a table\n  stackbench info --format json   # the same, as the JSON the analyzer reads\n  stackbench validate        # first thing on a new machine: does it perform as it should?\n\nBenchmarks run through cargo: ./run_benchmarks.sh, or cargo bench --bench gemm"
)]
pub struct StackbenchArgs {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the system probe: CPU, memory, GPUs, backends, peaks.
    Info {
        /// What to print the probe as: `table`, or `json` (schema stackbench.system.v1, what
        /// the analyzer reads)
        #[arg(long, value_parser = Format::parser(INFO_FORMATS), default_value_t = Format::Table)]
        format: Format,
        /// The same as `--format json` (kept for scripts written before `--format`)
        #[arg(long, hide = true, conflicts_with = "format")]
        json: bool,
        /// Skip the short measurements of the CPU's FMA peak and the Vulkan device's peaks.
        #[arg(long)]
        no_measure: bool,
    },
    /// The terminal dashboard: a run's charts page by page, or a suite as it runs.
    Dashboard(super::dashboard::DashboardArgs),
    /// The dashboard's charts as text (for logs, CI and reports).
    Show(super::dashboard::ShowArgs),
    /// Run a suite and judge each result against its threshold: does this machine perform
    /// as it should? Exit 0 passed (warnings allowed), 1 a check failed, 2 bad input.
    Validate(super::validate::ValidateArgs),
    /// Show what a suite (built-in or from stackbench.toml) runs.
    Suite(super::validate::SuiteArgs),
    /// A model sweep: models x batch x seq x precision x backend on this machine, recorded
    /// as a run, with the compatibility map of every cell. Exit 0 every cell measured or
    /// skipped with a reason, 1 a cell failed, 2 bad input or nothing measured at all (no
    /// run kept), 130 interrupted (run kept, partial).
    Sweep(super::sweep::SweepArgs),
    /// The best hardware, backend, precision and batch per model from the stored sweeps,
    /// for stated SLOs, ranked by throughput, perf per dollar or per watt. Exit 0 with a
    /// recommendation, 2 bad input (a bad SLO, an unknown model, no sweep in the store).
    Recommend(super::recommend::RecommendArgs),
    /// The stored sweeps as a report directory: Markdown, HTML, JSON and PDF with the
    /// hardware comparison, throughput by batch, memory by sequence length, the
    /// recommendation matrix and the compatibility maps. Exit 0 written, 2 bad input (no
    /// sweep in the store, a bad SLO, an unknown model, no Chromium for pdf).
    SweepReport(super::sweep_report::SweepReportArgs),
    /// Print one setting of stackbench.toml as the tools resolve it (for scripts).
    Config(super::config_get::ConfigArgs),
    /// Install the bench executables and Python workers into this version's installation
    /// cache, so that an installed stackbench runs validate, sweep and the suites from any
    /// directory, with or without its checkout. Exit 0 installed, 2 bad input or a failed
    /// build (the cache is then left as it was).
    Setup(SetupArgs),
    /// The web dashboard and upload API over a results store (localhost, read-only unless
    /// given a write token).
    Serve(super::serve::ServeArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  stackbench setup                          # from the checkout this stackbench was built from\n  stackbench setup --from ~/src/stackbench  # from another checkout (cargo bench --no-run there)\n  stackbench setup --bundle bundle.tar.xz   # from a release bundle (ci/gpu_bundle.sh): no Rust needed\n\nThe cache is $STACKBENCH_CACHE_DIR, else $XDG_CACHE_HOME/stackbench/<version>, else\n~/.cache/stackbench/<version>; `stackbench info` says where each part comes from."
)]
pub struct SetupArgs {
    /// A stackbench checkout to build the bench executables in [default: the one this
    /// stackbench was built from, or $STACKBENCH_CHECKOUT]
    #[arg(long, value_name = "CHECKOUT", conflicts_with = "bundle")]
    pub from: Option<std::path::PathBuf>,
    /// A release bundle from ci/gpu_bundle.sh (bundle.tar.xz, or its unpacked directory)
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<std::path::PathBuf>,
}

/// `stackbench setup`: fills the installation cache; exit 0, or 2 naming what failed.
pub fn setup_main(args: SetupArgs) -> std::process::ExitCode {
    use crate::validate::parts::{SetupFrom, cache_dir, checkout, setup};
    let from = match (args.bundle, args.from) {
        (Some(bundle), _) => Ok(SetupFrom::Bundle(bundle)),
        (None, Some(dir)) => Ok(SetupFrom::Checkout(dir)),
        (None, None) => checkout().map(SetupFrom::Checkout).ok_or_else(|| {
            "no checkout to build in: the one this stackbench was built from is gone; give \
             --from CHECKOUT or --bundle FILE"
                .to_string()
        }),
    };
    let done = from.and_then(|from| {
        let cache = cache_dir().map_err(|e| e.to_string())?;
        let manifest = setup(&from, &cache).map_err(|e| e.to_string())?;
        Ok((cache, manifest))
    });
    match done {
        Ok((cache, manifest)) => {
            println!("installed into {}", cache.display());
            print!("{manifest}");
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            super::errors::report("stackbench setup", error);
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_info() {
        let args = StackbenchArgs::try_parse_from(["stackbench", "info", "--json"]).unwrap();
        assert!(matches!(
            args.command,
            Command::Info {
                json: true,
                no_measure: false,
                ..
            }
        ));
        assert!(StackbenchArgs::try_parse_from(["stackbench", "nope"]).is_err());
    }
}
