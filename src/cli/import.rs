//! `analyze-trends import`: run files from other machines or CI artifacts into the store.

use super::store_flush::{Destination, deliver_spool_first, spool_run};
use crate::analysis::Outcome;
use crate::results::server_client::{ServerClient, Stored};
use crate::results::spool::{DeliveryError, classify_upload, store_unreachable};
use crate::results::{ImportProblem, ImportReport, import_files, importable, load_run};
use anyhow::bail;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Run files, directories of them, or results directories (their `runs/`)
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
}

pub fn import(args: ImportArgs, store: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let mut destination = Destination::choose(&args.results, store)?;
    let waiting = deliver_spool_first(&args.results, &mut destination)?;
    let (report, into, spooled) = match &mut destination {
        Destination::Server(client) => {
            let (report, spooled) = upload_files(client, &args.results, &args.paths, waiting)?;
            (report, client.url().to_string(), spooled)
        }
        Destination::Local(store) => match store.import(&args.paths) {
            Ok(report) => (report, store.store_url().to_string(), 0),
            Err(e) if store_unreachable(&e) => {
                let why = DeliveryError::Unreachable(e.to_string());
                let (report, spooled) = spool_files(&args.results, &args.paths, &why)?;
                (report, store.store_url().to_string(), spooled)
            }
            Err(e) => return Err(e.into()),
        },
    };
    let outcome = summarize(&args, &report, &into, spooled)?;
    // Runs kept in the spool are not stored yet: a failure found, not bad input.
    Ok(if spooled > 0 {
        Outcome::RegressionFound
    } else {
        outcome
    })
}

/// Prints what went in, and turns the report into the outcome (problems: bad input).
fn summarize(
    args: &ImportArgs,
    report: &ImportReport,
    into: &str,
    spooled: usize,
) -> anyhow::Result<Outcome> {
    if report.imported.is_empty()
        && report.already_present.is_empty()
        && report.problems.is_empty()
        && spooled == 0
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
        into,
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
        super::errors::report(
            "analyze-trends import",
            format_args!("{}: {}", problem.file.display(), problem.error),
        );
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

/// A run file that can be imported: its run and its bytes, exactly as read.
fn read_importable(file: &Path) -> Result<(crate::results::RunRecord, Vec<u8>), ImportProblem> {
    let problem = |error: String| ImportProblem {
        file: file.to_path_buf(),
        error,
    };
    let run = load_run(file)
        .and_then(|run| importable(file, run))
        .map_err(|e| problem(e.to_string()))?;
    let bytes = std::fs::read(file).map_err(|e| problem(format!("cannot read it: {e}")))?;
    Ok((run, bytes))
}

/// Uploads each run file to the server, in the report `import` prints. Once the server is
/// unreachable (after its retries), this run and every later one go to the spool instead
/// of each waiting through the retries again. Returns the report and how many runs were
/// spooled.
fn upload_files(
    client: &ServerClient,
    results: &Path,
    paths: &[PathBuf],
    waiting: Option<DeliveryError>,
) -> anyhow::Result<(ImportReport, usize)> {
    let mut report = ImportReport::default();
    let mut down = match waiting {
        Some(why @ DeliveryError::Unreachable(_)) => Some(why),
        Some(why) => bail!("the spooled runs could not be delivered: {why}"),
        None => None,
    };
    let mut spooled = 0;
    for file in import_files(paths, &mut report.problems) {
        let (run, bytes) = match read_importable(&file) {
            Ok(read) => read,
            Err(problem) => {
                report.problems.push(problem);
                continue;
            }
        };
        if down.is_none() {
            match client.upload_run(&run.run_id, &bytes) {
                Ok(uploaded) if uploaded.stored == Stored::AlreadyPresent => {
                    report.already_present.push(run.run_id);
                    continue;
                }
                Ok(_) => {
                    report.evidence.add_run(&run);
                    report
                        .failed
                        .extend(run.failed.iter().map(|f| (file.clone(), f.clone())));
                    report.imported.push((run.run_id, run.fingerprint));
                    continue;
                }
                Err(e) => match classify_upload(e) {
                    why @ DeliveryError::Unreachable(_) => down = Some(why),
                    other => {
                        report.problems.push(ImportProblem {
                            file,
                            error: other.to_string(),
                        });
                        continue;
                    }
                },
            }
        }
        if let Some(why) = &down {
            spool_run(results, &run.run_id, &bytes, why)?;
            spooled += 1;
        }
    }
    Ok((report, spooled))
}

/// Every importable file of `paths` into the spool: the store could not be opened.
fn spool_files(
    results: &Path,
    paths: &[PathBuf],
    why: &DeliveryError,
) -> anyhow::Result<(ImportReport, usize)> {
    let mut report = ImportReport::default();
    let mut spooled = 0;
    for file in import_files(paths, &mut report.problems) {
        match read_importable(&file) {
            Ok((run, bytes)) => {
                spool_run(results, &run.run_id, &bytes, why)?;
                spooled += 1;
            }
            Err(problem) => report.problems.push(problem),
        }
    }
    Ok((report, spooled))
}
