//! `analyze-trends hardware`: the cross-hardware report over every run in a results
//! directory (runs from many machines, merged there by `analyze-trends import`).

use crate::analysis::hardware::analyze_hardware;
use crate::analysis::prices::{NoPrices, PriceList, Prices};
use crate::report::hardware::HARDWARE_FORMATS;
use crate::report::writer::{Format, ReportWriter};
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  analyze-trends hardware                               # every machine in benchmark_results/
  analyze-trends hardware --results fleet --format markdown > hardware.md
  analyze-trends hardware --prices stackbench.toml --format html > hardware.html

Prices come from the [prices] table of the file, read as a whole stackbench.toml (the
format is documented in stackbench.example.toml and crates/measure/src/config/prices.rs):
  [prices]
  basis = \"hour\"          # or \"unit\": one basis for every price
  currency = \"USD\"
  [prices.devices]
  \"H100 80GB HBM3\" = 2.49   # exact device name, else the longest key the name contains")]
pub struct HardwareArgs {
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
    /// What to print the report as (`md` for short)
    #[arg(long, value_parser = Format::parser(HARDWARE_FORMATS), default_value_t = Format::Table)]
    pub format: Format,
    /// A stackbench.toml with a [prices] table; a missing file means no prices (perf/$ is n/a)
    #[arg(long, default_value = "stackbench.toml")]
    pub prices: PathBuf,
}

/// Prints the report; bad input (no runs, a bad prices table) is an error (exit 2).
pub fn hardware(args: HardwareArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<()> {
    let store = chosen.open(&args.results);
    if store.is_absent() {
        bail!(
            "results directory {} does not exist (record or import runs first)",
            args.results.display()
        );
    }
    let loaded = store.load_all()?;
    for problem in &loaded.problems {
        eprintln!("warning: {problem}");
    }
    if loaded.runs.is_empty() {
        bail!("no readable runs in {}", args.results.display());
    }
    let prices = Prices::load(&args.prices)?;
    let list: &dyn PriceList = match &prices {
        Some(prices) => prices,
        None => &NoPrices,
    };
    let report = analyze_hardware(&loaded.runs, list);
    report
        .write(args.format, &mut std::io::stdout().lock())
        .context("cannot write to stdout")?;
    Ok(())
}
