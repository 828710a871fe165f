//! `analyze-trends export`: one row per benchmark per stored run, as CSV or JSON.

use crate::analysis::Outcome;
use crate::results::{ExportFormat, export_runs};
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(long, value_enum, default_value_t = ExportFormat::Csv)]
    pub format: ExportFormat,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
}

pub fn export(args: ExportArgs) -> anyhow::Result<Outcome> {
    let store = crate::cli::store::open_store(&args.results);
    if !store.dir.is_dir() {
        bail!(
            "no runs in {} (record one with `analyze-trends record`)",
            store.runs_dir().display()
        );
    }
    let loaded = store.load_all()?;
    for p in &loaded.problems {
        eprintln!("warning: {p}");
    }
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    export_runs(&loaded.runs, args.format, &mut lock).context("cannot write the export")?;
    Ok(Outcome::Clean)
}
