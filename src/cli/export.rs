//! `analyze-trends export`: one row per benchmark per stored run, as CSV or JSON.

use crate::analysis::Outcome;
use crate::report::ReportWriter;
use crate::report::rows::Rows;
use crate::report::writer::Format;
use crate::results::{ExportRow, export_rows};
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;

/// The formats `analyze-trends export` writes: rows for spreadsheets and notebooks.
pub const EXPORT_FORMATS: &[Format] = &[Format::Csv, Format::Json];

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// What to print the rows as
    #[arg(long, value_parser = Format::parser(EXPORT_FORMATS), default_value_t = Format::Csv)]
    pub format: Format,
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
}

/// The export of `rows` as a report.
pub fn export_report<'a>(rows: &'a [ExportRow<'a>]) -> Rows<'a, ExportRow<'a>> {
    Rows {
        command: "analyze-trends export",
        formats: EXPORT_FORMATS,
        rows,
    }
}

pub fn export(args: ExportArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let store = chosen.open(&args.results);
    if store.is_absent() {
        bail!(
            "no runs in {} (record one with `analyze-trends record`)",
            store.runs_dir().display()
        );
    }
    let loaded = store.load_all()?;
    for p in &loaded.problems {
        eprintln!("warning: {p}");
    }
    let rows = export_rows(&loaded.runs);
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    export_report(&rows)
        .write(args.format, &mut lock)
        .context("cannot write the export")?;
    Ok(Outcome::Clean)
}
