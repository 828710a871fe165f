//! What the store subcommands (`runs`, `history`, `comparisons`, `prune`, `ack`) share: the
//! list arguments, opening an existing results directory, and printing rows.

use crate::report::rows::{RowFormat, write_rows};
use crate::results::RunStore;
use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    #[arg(long, value_enum, default_value_t = RowFormat::Table)]
    pub format: RowFormat,
}

/// The store of an existing results directory: a query never creates one.
pub(super) fn existing_store(results: &std::path::Path) -> anyhow::Result<RunStore> {
    if !results.is_dir() {
        bail!(
            "results directory {} does not exist (record a run with `analyze-trends record` or import some with `analyze-trends import`)",
            results.display()
        );
    }
    Ok(RunStore::new(results))
}

pub(super) fn emit<T: Serialize>(rows: &[T], format: RowFormat) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    write_rows(rows, format, &mut stdout.lock()).context("cannot write to stdout")
}
