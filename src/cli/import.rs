//! `analyze-trends import`: run files from other machines or CI artifacts into the store.

use crate::analysis::Outcome;
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
    let store = crate::cli::store::open_store(&args.results);
    let report = store.import(&args.paths)?;
    if report.imported.is_empty() && report.already_present.is_empty() && report.problems.is_empty()
    {
        let named: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
        bail!("no run files in {}: nothing to import", named.join(", "));
    }
    let mut by_hardware: std::collections::BTreeMap<&str, usize> = Default::default();
    for (_, fingerprint) in &report.imported {
        *by_hardware
            .entry(fingerprint.as_deref().unwrap_or("unknown hardware"))
            .or_default() += 1;
    }
    println!(
        "imported {} runs into {} ({} already there); evidence: {}",
        report.imported.len(),
        store.store_url(),
        report.already_present.len(),
        report.evidence.describe_measured()
    );
    for (fingerprint, count) in by_hardware {
        println!("  {count} on {fingerprint}");
    }
    for (file, failure) in &report.failed {
        eprintln!(
            "FAILED {}: {}: {}",
            file.display(),
            failure.id,
            failure.error
        );
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
    // Samples no statistic can use are a failure this command found (exit 1), named above.
    Ok(if !report.evidence.unusable_list().is_empty() {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
}
