//! `analyze-trends import`: run files from other machines or CI artifacts into the store.

use crate::analysis::Outcome;
use crate::results::RunStore;
use anyhow::bail;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Run files, directories of them, or results directories (their `runs/`)
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
}

pub fn import(args: ImportArgs) -> anyhow::Result<Outcome> {
    let store = RunStore::new(&args.results);
    let report = store.import(&args.paths)?;
    let mut by_hardware: std::collections::BTreeMap<&str, usize> = Default::default();
    for (_, fingerprint) in &report.imported {
        *by_hardware
            .entry(fingerprint.as_deref().unwrap_or("unknown hardware"))
            .or_default() += 1;
    }
    println!(
        "imported {} runs into {} ({} already there)",
        report.imported.len(),
        store.db_path().display(),
        report.already_present.len()
    );
    for (fingerprint, count) in by_hardware {
        println!("  {count} on {fingerprint}");
    }
    for problem in &report.problems {
        eprintln!("error: {}: {}", problem.file.display(), problem.error);
    }
    if !report.problems.is_empty() {
        bail!(
            "{} of the files could not be imported (named above); the others were",
            report.problems.len()
        );
    }
    Ok(Outcome::Clean)
}
